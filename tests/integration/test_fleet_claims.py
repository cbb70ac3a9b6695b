"""Two spaced on one PostgreSQL database (docs/fleet.md): the real daemons, each with its
own state directory, pool and port, against a throwaway cluster (pg_cluster.py). Each is a
node: both register and heartbeat; an operation submitted to either runs exactly once, on
the node that claimed it (a sandbox's operations on the node it lives on, wherever they
were submitted); a node killed -9 while it holds a claim is taken over by the other once
its lease lapses, which finishes the operation; nothing runs twice and the killed node,
started again, leaves the other's sandbox alone."""

import os
import shutil
import time
import unittest

from pg_cluster import PgCluster
from spaced_harness import Spaced, SpacedTestCase, require_root, wait_for

LEASE_S = 3


class FleetClaims(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.pg = PgCluster().start()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def setUp(self):
        self.db = "fleet_%d" % int(time.monotonic() * 1000)
        url = self.pg.create_database(self.db)
        args = ["--claim-lease", str(LEASE_S), "--node-lost-after", str(LEASE_S * 3)]
        self.a = Spaced(database=url, extra_args=args)
        self.b = Spaced(database=url, extra_args=args)
        self.owned = {}  # sandbox id -> the Spaced it lives on, destroyed there at the end
        self.addCleanup(self.b.cleanup)
        self.addCleanup(self.a.cleanup)
        self.addCleanup(self.destroy_all)
        self.a.start()
        # One database, one set of keys: the second node is given the admin key the first
        # one made (an operator copies it, or makes keys with it; docs/fleet.md).
        os.makedirs(self.b.state_dir, mode=0o700)
        shutil.copy(os.path.join(self.a.state_dir, "admin.key"), os.path.join(self.b.state_dir, "admin.key"))
        self.b.start()

    def destroy_all(self):
        for sid, sp in self.owned.items():
            if sp.alive():
                sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid, timeout=70)

    def rows(self, sql):
        return self.pg.psql(sql, database=self.db)

    def submit_create(self, sp):
        status, d = sp.request("POST", "/v1/sandboxes", {})
        self.assertEqual(status, 202, d)
        return d["sandbox"]["id"], d["operation"]["id"]

    def operation(self, sp, op_id):
        return sp.api("GET", "/v1/operations/" + op_id, expect=200)[1]

    def finished(self, sp, op_id, timeout=120):
        got = {}

        def done():
            got["op"] = self.operation(sp, op_id)
            return got["op"]["state"] in ("succeeded", "failed")

        wait_for(done, timeout=timeout, what="operation %s to end" % op_id)
        return got["op"]

    def test_both_nodes_register_heartbeat_and_are_listed(self):
        ids = {self.a.instance(), self.b.instance()}
        self.assertEqual(len(ids), 2, ids)

        def both_ready():
            return self.rows("SELECT string_agg(id || ':' || state, ',' ORDER BY id) FROM nodes") == \
                ",".join("%s:ready" % i for i in sorted(ids))

        wait_for(both_ready, timeout=20, what="both nodes ready")
        beat = int(self.rows("SELECT heartbeat_at FROM nodes WHERE id = '%s'" % self.a.instance()))
        wait_for(lambda: int(self.rows("SELECT heartbeat_at FROM nodes WHERE id = '%s'" % self.a.instance())) > beat,
                 timeout=20, what="a heartbeat")
        # GET /v1/nodes (the platform's): both, ready, each naming itself "this".
        _, d = self.a.api("GET", "/v1/nodes", expect=200)
        self.assertEqual([(n["id"], n["state"], n["this"]) for n in d["nodes"]],
                         sorted((i, "ready", i == self.a.instance()) for i in ids))
        self.assertIn(self.b.url, [n["address"] for n in d["nodes"]])
        _, k = self.a.api("POST", "/v1/keys", {"name": "dev", "role": "developer"}, expect=201)
        status, err = self.b.request("GET", "/v1/nodes", key=k["secret"])
        self.assertEqual(status, 403, err)
        r = self.b.cli("node", "ls")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        self.assertIn("HEARTBEAT", out)
        for i in ids:
            self.assertIn(i, out)
        # A node that stops heartbeating is marked lost after --node-lost-after.
        self.a.kill9()
        wait_for(lambda: self.rows("SELECT state FROM nodes WHERE id = '%s'" % self.a.instance()) == "lost",
                 timeout=LEASE_S * 3 + 20, what="a marked lost")
        _, d = self.b.api("GET", "/v1/nodes", expect=200)
        self.assertEqual({n["id"]: n["state"] for n in d["nodes"]}, {self.a.instance(): "lost", self.b.instance(): "ready"})
        # Back: ready again.
        self.a.start()
        wait_for(lambda: self.rows("SELECT state FROM nodes WHERE id = '%s'" % self.a.instance()) == "ready",
                 timeout=20, what="a ready again")

    def test_operations_on_either_node_run_once_where_claimed(self):
        a, b = self.a, self.b
        submitted = [(a,) + self.submit_create(a) for _ in range(2)] + [(b,) + self.submit_create(b) for _ in range(2)]
        for sp, sid, op_id in submitted:
            self.owned[sid] = sp
            op = self.finished(sp, op_id)
            self.assertEqual(op["state"], "succeeded", op)
            self.assertEqual(op["claims"], 1, op)  # claimed once: run once
            self.assertEqual(op["node"], sp.instance(), op)
            sb = sp.get(sid)
            self.assertEqual((sb["state"], sb["node"]), ("running", sp.instance()))
            other = b if sp is a else a
            # Its filesystem is in the pool of the node that ran the create, only there.
            self.assertTrue(os.path.isdir(sp.subvolume(sid)), sid)
            self.assertFalse(os.path.lexists(other.subvolume(sid)), sid)
            self.assertEqual(sp.sh(sid, "echo on-%s" % sid)["stdout"], "on-%s\n" % sid)
        # The other node sees the same rows and leaves them alone.
        self.assertEqual(self.rows("SELECT count(*) FROM operations WHERE kind = 'sandbox.create' AND state = 'succeeded'"
                                   " AND claims = 1"), "4")
        # A stop submitted to b of a sandbox that lives on a runs on a: b's request waits for it.
        _, sid, _ = submitted[0]
        status, d = b.request("POST", "/v1/sandboxes/%s/stop?wait=true&timeout_s=60" % sid)
        self.assertEqual(status, 200, d)
        self.assertEqual(d["sandbox"]["state"], "stopped", d)
        stop = self.rows("SELECT claim_owner || ' ' || claims || ' ' || state FROM operations"
                         " WHERE target = '%s' AND kind = 'sandbox.stop'" % sid)
        self.assertEqual(stop, "%s 1 succeeded" % a.instance())
        self.assertEqual(a.action(sid, "start")[1]["sandbox"]["state"], "running")
        self.assertEqual(a.sh(sid, "echo back")["stdout"], "back\n")

    def test_control_process_runs_no_sandbox_its_creates_run_on_a_node(self):
        c = Spaced(database=self.a.database, extra_args=["--role", "control", "--claim-lease", str(LEASE_S)])
        self.addCleanup(c.cleanup)
        os.makedirs(c.state_dir, mode=0o700)
        shutil.copy(os.path.join(self.a.state_dir, "admin.key"), os.path.join(c.state_dir, "admin.key"))
        c.start()
        # Not a node: it is not listed, claims nothing, and what it accepts a node runs.
        _, d = c.api("GET", "/v1/nodes", expect=200)
        self.assertEqual(sorted(n["id"] for n in d["nodes"]), sorted([self.a.instance(), self.b.instance()]))
        sid, op_id = self.submit_create(c)
        op = self.finished(c, op_id)
        self.assertEqual(op["state"], "succeeded", op)
        self.assertEqual(op["claims"], 1, op)
        self.assertIn(op["node"], (self.a.instance(), self.b.instance()))
        node = self.a if op["node"] == self.a.instance() else self.b
        self.owned[sid] = node
        self.assertEqual(c.get(sid)["node"], node.instance())
        self.assertFalse(os.path.lexists(c.subvolume(sid)))
        self.assertEqual(node.sh(sid, "echo placed")["stdout"], "placed\n")
        # A stop through the control process runs on the sandbox's node.
        status, d = c.request("POST", "/v1/sandboxes/%s/stop?wait=true&timeout_s=60" % sid)
        self.assertEqual((status, d["sandbox"]["state"]), (200, "stopped"), d)
        self.assertEqual(self.rows("SELECT claim_owner FROM operations WHERE target = '%s' AND kind = 'sandbox.stop'"
                                   % sid), node.instance())
        self.assertEqual(c.stop(), 0)

    def test_kill9_holding_a_claim_the_other_node_finishes_it(self):
        a, b = self.a, self.b
        a.stop()
        a.env = {"SPACED_FAULT_KILL": "operation.before_handler:sandbox.create"}
        a.start()
        try:
            sid, op_id = self.submit_create(a)
        except (ConnectionError, OSError):
            # a's worker may reach the fault point before the 202 is written: the row says.
            sid, op_id = self.rows("SELECT target || ' ' || id FROM operations WHERE kind = 'sandbox.create'"
                                   " ORDER BY created_at DESC LIMIT 1").split()
        wait_for(lambda: not a.alive(), timeout=60, what="a to die holding the create's claim")
        self.assertEqual(a.proc.returncode, -9, "a ended otherwise than at the fault point")
        a.env = None
        held = self.rows("SELECT claim_owner || ' ' || claims || ' ' || state FROM operations WHERE id = '%s'" % op_id)
        self.assertEqual(held, "%s 1 running" % a.instance())
        # b takes it over once a's lease lapses, and finishes it.
        op = self.finished(b, op_id)
        self.assertEqual(op["state"], "succeeded", op)
        self.assertEqual((op["node"], op["claims"]), (b.instance(), 2), op)
        self.owned[sid] = b
        sb = b.get(sid)
        self.assertEqual((sb["state"], sb["node"]), ("running", b.instance()))
        self.assertEqual(b.sh(sid, "echo taken-over")["stdout"], "taken-over\n")
        self.assertTrue(os.path.isdir(b.subvolume(sid)))
        self.assertFalse(os.path.lexists(a.subvolume(sid)))
        self.assertIn("operation.taken_over", open(b.err_path).read())
        # a comes back: it does not settle, probe or sweep b's sandbox, nor run anything again.
        a.start()
        wait_for(lambda: self.rows("SELECT state FROM nodes WHERE id = '%s'" % a.instance()) == "ready", timeout=20,
                 what="a ready again")
        time.sleep(LEASE_S)  # a few of a's controller passes
        self.assertEqual(b.get(sid)["state"], "running")
        self.assertEqual(b.sh(sid, "echo still")["stdout"], "still\n")
        self.assertEqual(self.rows("SELECT claims || ' ' || state FROM operations WHERE id = '%s'" % op_id),
                         "2 succeeded")
        self.assertFalse(os.path.lexists(a.subvolume(sid)))
        # And a still takes work of its own.
        mine, mine_op = self.submit_create(a)
        self.owned[mine] = a
        self.assertEqual(self.finished(a, mine_op)["node"], a.instance())


if __name__ == "__main__":
    unittest.main()
