"""The controller while spaced runs: a sandbox left in a transient state with no operation
driving it (as a store failure half way would leave it) is finished after its deadline;
a sandbox whose init dies is noticed and stopped; snapshots half taken when spaced died are
dropped at start. Rows are altered behind spaced's back through its SQLite file (WAL mode
allows a second writer), the way a fault would leave them."""

import os
import signal
import sqlite3
import subprocess
import time
import unittest

from spaced_harness import FreshSpacedTestCase, SpacedTestCase, cgroup_pids, wait_for


class Controller(SpacedTestCase):

    def db(self):
        conn = sqlite3.connect(os.path.join(self.spaced.state_dir, "state.db"), timeout=10)
        conn.execute("PRAGMA busy_timeout = 10000")
        return conn

    def test_overdue_transient_state_is_finished(self):
        sp = self.spaced
        sid = self.new_sandbox()
        sp.sh(sid, "echo kept > /root/f")
        long_ago = int(time.time() * 1000) - 10 * 60 * 1000
        with self.db() as conn:
            conn.execute("UPDATE sandboxes SET state='stopping', updated_at=? WHERE id=?", (long_ago, sid))
        # No operation drives it: the controller stops it (its processes go) within a pass.
        wait_for(lambda: sp.state(sid) == "stopped", timeout=40, what="the overdue stopping sandbox to be stopped")
        wait_for(lambda: not cgroup_pids(sid), timeout=20, what="its processes to be gone")
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "cat /root/f")["stdout"], "kept\n")

    def test_overdue_creating_fails_with_reason_and_leaves_nothing(self):
        sp = self.spaced
        sid = self.new_sandbox()
        long_ago = int(time.time() * 1000) - 10 * 60 * 1000
        with self.db() as conn:
            conn.execute("UPDATE sandboxes SET state='creating', updated_at=? WHERE id=?", (long_ago, sid))
        wait_for(lambda: sp.state(sid) == "failed", timeout=40, what="the overdue creating sandbox to fail")
        self.assertTrue(sp.get(sid)["state_reason"])
        wait_for(lambda: not os.path.exists(sp.subvolume(sid)), timeout=20, what="its rootfs to be removed")
        self.assertFalse(cgroup_pids(sid))

    def test_dead_init_is_noticed(self):
        sp = self.spaced
        sid = self.new_sandbox()
        pids = cgroup_pids(sid)
        self.assertTrue(pids)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: sp.state(sid) == "stopped", timeout=40, what="the dead sandbox to be reported stopped")
        self.assertTrue(sp.get(sid)["state_reason"])
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "echo back")["stdout"], "back\n")

    def test_half_taken_snapshot_is_dropped_at_start(self):
        sp = self.spaced
        sid = self.new_sandbox()
        sp.stop()
        snap = "snap-00000000deadbeef"
        with self.db() as conn:
            conn.execute("INSERT INTO snapshots(id, sandbox_id, state, label, kind, created_at) "
                         "VALUES (?, ?, 'creating', '', 'filesystem', ?)", (snap, sid, int(time.time() * 1000)))
        subprocess.run(["btrfs", "subvolume", "snapshot", "-r", sp.subvolume(sid),
                        os.path.join(sp.state_dir, "pool", "snapshots", snap)], check=True, stdout=subprocess.DEVNULL)
        sp.start()
        self.assertEqual(sp.request("GET", "/v1/snapshots/" + snap)[0], 404)
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "pool", "snapshots", snap)))
        self.assertEqual(sp.state(sid), "running")



class DestroyedRowRetention(FreshSpacedTestCase):
    """Rows of destroyed sandboxes are purged after --destroyed-retention (with their
    commands, sessions and operations), unless a snapshot still names the sandbox."""

    spaced_kwargs = {"extra_args": ["--destroyed-retention", "2"]}

    def test_old_destroyed_rows_are_purged(self):
        sp = self.spaced
        gone = sp.create(metadata={"t": "purged"})
        kept = sp.create(metadata={"t": "snapshotted"})
        snap = sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % kept, {"label": "keep"}, expect=200)[1]
        snap_id = snap["operation"]["result"]["snapshot_id"]
        _, d = sp.action(gone, "destroy")
        destroy_op = d["operation"]["id"]
        sp.action(kept, "destroy")
        self.assertEqual(sp.state(gone), "destroyed")
        time.sleep(2.5)
        sp.restart()  # the sweep runs at start and every ten minutes
        wait_for(lambda: sp.request("GET", "/v1/sandboxes/" + gone)[0] == 404, timeout=20, what="the old row to go")
        self.assertEqual(sp.request("GET", "/v1/operations/" + destroy_op)[0], 404)
        ids = [s["id"] for s in sp.api("GET", "/v1/sandboxes?state=destroyed", expect=200)[1]["sandboxes"]]
        self.assertNotIn(gone, ids)
        self.assertIn(kept, ids)  # its snapshot names it
        self.assertEqual(sp.api("GET", "/v1/snapshots/" + snap_id, expect=200)[1]["sandbox_id"], kept)


if __name__ == "__main__":
    unittest.main()
