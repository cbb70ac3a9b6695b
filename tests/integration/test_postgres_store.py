"""spaced on PostgreSQL (--database): the real daemon against a real throwaway cluster
(pg_cluster.py, its own socket directory, no TCP). The lifecycle and policy documents work
and are written to PostgreSQL (not to the state directory's SQLite file); a restart and a
kill -9 then restart answer the same; a second spaced on the same database starts and shares
it (another node of the fleet)."""

import os
import re
import shutil
import sqlite3
import subprocess
import time
import unittest

from pg_cluster import PgCluster
from spaced_harness import SPACED, SPACE_AGENT, Spaced, SpacedTestCase, free_port, require_root

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class PostgresStore(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.pg = PgCluster().start()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def setUp(self):
        self.db = "space_%d" % int(time.monotonic() * 1000)
        self.spaced = Spaced(database=self.pg.create_database(self.db))
        self.addCleanup(self.spaced.cleanup)
        self.spaced.start()

    def rows(self, sql):
        return self.pg.psql(sql, database=self.db)

    def snapshot(self, sid, label):
        _, data = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid,
                                  {"label": label}, expect=200)
        return data["snapshot"]

    def view(self, sids):
        """What the API says of the sandboxes, their snapshots and the keys, without times
        that move on their own."""
        sp = self.spaced
        out = {}
        for sid in sids:
            sb = sp.get(sid)
            snaps = sp.api("GET", "/v1/sandboxes/%s/snapshots" % sid, expect=200)[1]["snapshots"]
            out[sid] = (sb["state"], sb.get("metadata"), sb.get("template"),
                        [(s["id"], s.get("label"), s.get("state")) for s in snaps])
        keys = sp.api("GET", "/v1/keys", expect=200)[1]
        out["keys"] = sorted(k["id"] for k in keys.get("keys", keys.get("data", [])))
        return out

    def test_lifecycle_is_stored_in_postgres(self):
        sp = self.spaced
        # The schema is at the last migration of src/state_store/pg_migrations.c (each one
        # opens with its number: "/* N: ... */").
        with open(os.path.join(REPO_ROOT, "src", "state_store", "pg_migrations.c")) as f:
            last = max(int(n) for n in re.findall(r"^\s*/\* ([0-9]+):", f.read(), re.M))
        self.assertGreaterEqual(last, 16)
        self.assertEqual(self.rows("SELECT version FROM space_schema"), str(last))
        sid = sp.create(metadata={"store": "postgres"})
        r = sp.sh(sid, "echo hello > /root/f; cat /root/f")
        self.assertEqual(r["stdout"], "hello\n", r)
        self.assertEqual(self.rows("SELECT state || ' ' || metadata FROM sandboxes WHERE id = '%s'" % sid),
                         'running {"store":"postgres"}')
        snap = self.snapshot(sid, "first")
        snap_id = snap["id"]
        self.assertTrue(snap_id, snap)
        self.assertEqual(self.rows("SELECT label FROM snapshots WHERE id = '%s'" % snap_id), "first")
        self.assertEqual(self.rows("SELECT string_agg(kind || ':' || state, ',' ORDER BY created_at, id) FROM operations"
                                   " WHERE target = '%s'" % sid), "sandbox.create:succeeded,sandbox.snapshot:succeeded")
        self.assertNotEqual(self.rows("SELECT count(*) FROM audit_log WHERE target = '%s'" % sid), "0")
        # A policy document: a row, its update a new version of the same row.
        doc = {"name": "pg", "rules": [{"id": "r1", "effect": "deny", "match": {"executable": "nothing-runs-this"}}]}
        _, pol = sp.api("POST", "/v1/policies", doc, expect=201)
        self.assertEqual(self.rows("SELECT name || ' ' || version FROM policies WHERE id = '%s'" % pol["id"]), "pg 1")
        sp.api("PUT", "/v1/policies/%s?if_version=1" % pol["id"], doc, expect=200)
        self.assertEqual(self.rows("SELECT version FROM policies WHERE id = '%s'" % pol["id"]), "2")
        sp.api("DELETE", "/v1/policies/" + pol["id"], expect=204)
        self.assertEqual(self.rows("SELECT count(*) FROM policies"), "0")
        # Not in the state directory's SQLite file: it holds no table.
        db = os.path.join(sp.state_dir, "state.db")
        self.assertTrue(not os.path.exists(db) or os.path.getsize(db) == 0, "state.db was written")
        sp.destroy(sid)
        self.assertEqual(self.rows("SELECT state FROM sandboxes WHERE id = '%s'" % sid), "destroyed")
        self.assertEqual(sp.leaks(sid), [])

    def _restart_answers_the_same(self, hard):
        sp = self.spaced
        running = sp.create(metadata={"t": "running"})
        stopped = sp.create(metadata={"t": "stopped"})
        sp.sh(running, "echo kept > /root/f")
        self.snapshot(running, "before")
        sp.action(stopped, "stop")
        before = self.view([running, stopped])
        if hard:
            sp.kill9()
        else:
            self.assertEqual(sp.stop(), 0)
        sp.start()
        self.assertEqual(self.view([running, stopped]), before)
        self.assertEqual(sp.sh(running, "cat /root/f")["stdout"], "kept\n")
        # And it goes on working: a new sandbox, a destroy.
        new = sp.create()
        self.assertEqual(sp.sh(new, "echo new")["stdout"], "new\n")
        sp.destroy(running)
        self.assertEqual(sp.leaks(running), [])

    def test_restart_keeps_everything(self):
        self._restart_answers_the_same(hard=False)

    def test_kill9_then_restart_answers_the_same(self):
        self._restart_answers_the_same(hard=True)

    def test_second_spaced_on_the_same_database_shares_it(self):
        # No lock keeps a second spaced off the database any more: it is another node of the
        # fleet (docs/fleet.md, test_fleet_claims.py), with the same keys and the same rows.
        sid = self.spaced.create(metadata={"shared": "yes"})
        other = Spaced(database=self.spaced.database)
        try:
            os.makedirs(other.state_dir, mode=0o700)
            shutil.copy(os.path.join(self.spaced.state_dir, "admin.key"), os.path.join(other.state_dir, "admin.key"))
            other.start()
            self.assertEqual(other.get(sid)["metadata"], {"shared": "yes"})
            self.assertEqual(other.get(sid)["node"], self.spaced.instance())
            self.assertNotIn("postgresql://", open(other.err_path).read(), "the URL (which may hold a password) was logged")
            self.assertEqual(other.stop(), 0)
        finally:
            other.cleanup()
        # The first one is unaffected: its sandbox runs on.
        self.assertEqual(self.spaced.sh(sid, "echo still")["stdout"], "still\n")
        self.spaced.destroy(sid)

    @staticmethod
    def sqlite_rows(path):
        with sqlite3.connect(path) as c:
            return [c.execute("SELECT * FROM %s ORDER BY 1" % t).fetchall()
                    for t in ("sandboxes", "snapshots", "operations", "api_keys")]

    def test_migrate_from_sqlite_keeps_everything(self):
        # A spaced on SQLite with a running and a stopped sandbox, a snapshot and a key...
        lite = Spaced()
        self.addCleanup(lite.cleanup)
        lite.start()
        running = lite.create(metadata={"t": "running"})
        stopped = lite.create(metadata={"t": "stopped"})
        lite.sh(running, "echo kept > /root/f")
        _, snap = lite.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % running, {"label": "lite"},
                           expect=200)
        lite.action(stopped, "stop")
        _, key = lite.api("POST", "/v1/keys", {"name": "dev", "role": "developer"}, expect=201)
        before = {sid: lite.get(sid) for sid in (running, stopped)}
        self.assertEqual(lite.stop(), 0)
        db = os.path.join(lite.state_dir, "state.db")
        lite_rows = self.sqlite_rows(db)
        url = self.pg.create_database(self.db + "_m")
        migrate = [a for a in lite.args()] + ["--database", url, "--migrate-from", "sqlite:" + db]
        r = subprocess.run(migrate, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("migrated", r.stdout)
        self.assertNotIn("postgresql://", r.stdout + r.stderr, "the URL (which may hold a password) was logged")
        self.assertEqual(self.sqlite_rows(db), lite_rows, "the SQLite store's rows changed")
        # ...is the same on PostgreSQL, from the same state directory: the running sandbox was
        # reattached, the snapshot and the keys are there.
        lite.database = url
        lite.start()
        for sid in (running, stopped):
            after = lite.get(sid)
            self.assertEqual((after["state"], after["metadata"]), (before[sid]["state"], before[sid]["metadata"]))
        self.assertEqual(lite.sh(running, "cat /root/f")["stdout"], "kept\n")
        snaps = lite.api("GET", "/v1/sandboxes/%s/snapshots" % running, expect=200)[1]["snapshots"]
        self.assertEqual([s["id"] for s in snaps], [snap["snapshot"]["id"]])
        self.assertEqual(lite.request("GET", "/v1/sandboxes", key=key["secret"])[0], 200)
        self.assertEqual(self.pg.psql("SELECT count(*) FROM sandboxes", database=self.db + "_m"), "2")
        # A second migration into a database that holds rows is refused, changing nothing.
        lite.stop()
        r = subprocess.run(migrate, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already holds", r.stdout + r.stderr)
        self.assertEqual(self.pg.psql("SELECT count(*) FROM sandboxes", database=self.db + "_m"), "2")
        lite.start()
        lite.destroy(running)
        lite.destroy(stopped)
        self.assertEqual(lite.leaks(running), [])

    def test_unreachable_database_fails_start_clearly(self):
        tmp = Spaced(database="postgresql://space@/nope?host=/nonexistent-space-dir&port=1")
        try:
            r = subprocess.run(tmp.args(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("cannot open the PostgreSQL database", r.stdout + r.stderr)
        finally:
            tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
