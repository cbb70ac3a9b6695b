"""Exact acknowledgements: spaced killed (SIGKILL, through the SPACED_FAULT_KILL fault point)
right after an operation's handler has done its work and before the worker writes the
operation's end. The change and the operation's end are one transaction, so after the restart
every such operation reads succeeded, the sandbox is where the operation left it, and what
goes with the change (the timeout's deadline) is armed — none is re-run into a false
invalid_state failure."""

import time
import unittest

from spaced_harness import SpacedTestCase, wait_for


class AcknowledgementWindow(SpacedTestCase):

    def killed_after_handler(self, kind, method, path, body=None):
        """Runs one operation with spaced set to die right after its handler; restarts it
        clean and returns the operation's row as the new spaced tells it."""
        sp = self.spaced
        sp.stop()
        sp.env = {"SPACED_FAULT_KILL": "operation.after_handler:" + kind}
        sp.start()
        try:
            status, d = sp.request(method, path, body)
            self.assertEqual(status, 202, "%s %s: %r" % (method, path, d))
            op = d["operation"]["id"]
            wait_for(lambda: not sp.alive(), timeout=60, what="spaced to die at the fault point of " + kind)
            self.assertEqual(sp.proc.returncode, -9, "spaced ended otherwise than at the fault point")
        finally:
            sp.kill9()
            sp.env = None
        sp.start()
        return wait_for(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
            sp.api("GET", "/v1/operations/" + op, expect=200)[1]), timeout=60, what="operation %s to end" % op)

    def assert_succeeded(self, row):
        self.assertEqual(row["state"], "succeeded", repr(row))
        self.assertFalse(row.get("error"), repr(row))

    def assert_armed(self, sid):
        sb = self.spaced.get(sid)
        self.assertTrue(sb.get("expires_at"), "the timeout was not armed: %r" % sb)

    def test_every_lifecycle_kind(self):
        sp = self.spaced
        row = self.killed_after_handler("sandbox.create", "POST", "/v1/sandboxes", {"timeout_s": 3600})
        self.assert_succeeded(row)
        sid = row["target"]
        self.addCleanup(self._destroy_quietly, sid)
        self.assertEqual(sp.state(sid), "running")
        self.assert_armed(sid)
        self.assertEqual(sp.sh(sid, "echo ok")["stdout"], "ok\n")

        row = self.killed_after_handler("sandbox.pause", "POST", "/v1/sandboxes/%s/pause" % sid)
        self.assert_succeeded(row)
        self.assertEqual(sp.state(sid), "paused")
        row = self.killed_after_handler("sandbox.resume", "POST", "/v1/sandboxes/%s/resume" % sid)
        self.assert_succeeded(row)
        self.assertEqual(sp.state(sid), "running")
        self.assert_armed(sid)

        row = self.killed_after_handler("sandbox.stop", "POST", "/v1/sandboxes/%s/stop" % sid)
        self.assert_succeeded(row)
        self.assertEqual(sp.state(sid), "stopped")
        self.assertFalse(sp.get(sid).get("expires_at"), "a stopped sandbox keeps a deadline")
        row = self.killed_after_handler("sandbox.start", "POST", "/v1/sandboxes/%s/start" % sid)
        self.assert_succeeded(row)
        self.assertEqual(sp.state(sid), "running")
        self.assert_armed(sid)

        sp.sh(sid, "echo one > /one")
        row = self.killed_after_handler("sandbox.snapshot", "POST", "/v1/sandboxes/%s/snapshots" % sid, {"label": "ack"})
        self.assert_succeeded(row)
        snap = row["result"]["snapshot_id"] if isinstance(row.get("result"), dict) else None
        self.assertTrue(snap, repr(row))
        sp.sh(sid, "rm /one")
        row = self.killed_after_handler("sandbox.restore", "POST", "/v1/sandboxes/%s/restore" % sid,
                                        {"snapshot_id": snap})
        self.assert_succeeded(row)
        self.assertEqual(sp.state(sid), "running")
        self.assert_armed(sid)
        self.assertEqual(sp.sh(sid, "cat /one")["stdout"], "one\n")

        row = self.killed_after_handler("sandbox.fork", "POST", "/v1/sandboxes/%s/fork" % sid, {"count": 1})
        self.assert_succeeded(row)

        row = self.killed_after_handler("sandbox.destroy", "DELETE", "/v1/sandboxes/%s" % sid)
        self.assert_succeeded(row)
        self.assertEqual(sp.state(sid), "destroyed")



def op_of(resp):
    status, d = resp
    assert status == 202, "expected 202: %s %r" % (status, d)
    return d["operation"]["id"]


class SnapshotAndForkRaces(SpacedTestCase):
    """What an accepted operation needs is not taken away under it. One worker, and a slow
    fork queued first, so the operations under test are surely still pending when the
    racing request arrives (where an older spaced deleted the snapshot, or destroyed the
    parent, and the acknowledged operation then failed)."""

    spaced_kwargs = {"workers": 1}

    def wait_op(self, op):
        return wait_for(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
            self.spaced.api("GET", "/v1/operations/" + op, expect=200)[1]), timeout=120, what="operation " + op)

    def blocker(self):
        """A fork of four of another sandbox: the one worker is busy with it for a while."""
        sp = self.spaced
        if not hasattr(self, "_busy"):
            self._busy = self.new_sandbox(metadata={"t": "busy"})
        d = sp.api("POST", "/v1/sandboxes/%s/fork" % self._busy, {"count": 4}, expect=202)[1]
        for c in d.get("sandbox_ids", []):
            self.addCleanup(self._destroy_quietly, c)
        return d["operation"]["id"]

    def snapshot(self, sid):
        d = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {"label": "race"}, expect=200)[1]
        return d["operation"]["result"]["snapshot_id"]

    def test_delete_refused_while_an_accepted_operation_needs_the_snapshot(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "race-src"})
        sp.sh(sid, "echo kept > /kept")
        snap = self.snapshot(sid)
        ops = []
        for body_path, body in (("/v1/sandboxes", {"snapshot_id": snap}),
                                ("/v1/sandboxes/%s/fork" % sid, {"snapshot_id": snap, "count": 1}),
                                ("/v1/sandboxes/%s/restore" % sid, {"snapshot_id": snap})):
            self.blocker()
            op = op_of(sp.request("POST", body_path, body))
            st, d = sp.request("DELETE", "/v1/snapshots/" + snap)
            self.assertEqual(st, 409, "deleted under accepted %s: %r" % (body_path, d))
            self.assertEqual(d["error"]["code"], "invalid_state", d)
            self.assertIn(op, d["error"]["message"], d)
            row = self.wait_op(op)
            self.assertEqual(row["state"], "succeeded", repr(row))
            ops.append(row)
        created = ops[0]["target"]
        self.addCleanup(self._destroy_quietly, created)
        self.assertEqual(sp.sh(created, "cat /kept")["stdout"], "kept\n")
        for c in ops[1]["result"]["sandbox_ids"]:
            self.addCleanup(self._destroy_quietly, c)
            self.assertEqual(sp.state(c), "running")
        # Nothing needs it any more: now it goes, and a create from it is refused, not failed.
        self.assertEqual(sp.request("DELETE", "/v1/snapshots/" + snap)[0], 204)
        st, d = sp.request("POST", "/v1/sandboxes", {"snapshot_id": snap})
        self.assertEqual(st, 404, d)

    def test_parent_destroyed_after_its_fork_was_accepted(self):
        """The destroy is refused (409, nothing changes) while an accepted fork or snapshot
        of the sandbox has not captured it; once they have, it goes."""
        sp = self.spaced
        parent = sp.create(metadata={"t": "race-parent"})
        for kind, path, body in (("fork", "/v1/sandboxes/%s/fork" % parent, {"count": 1}),
                                 ("snapshot", "/v1/sandboxes/%s/snapshots" % parent, {"label": "last"})):
            self.blocker()
            op = op_of(sp.request("POST", path, body))
            st, d = sp.request("DELETE", "/v1/sandboxes/" + parent)
            self.assertEqual(st, 409, "destroy accepted under a pending %s: %r" % (kind, d))
            self.assertEqual(d["error"]["code"], "invalid_state", d)
            self.assertEqual(sp.state(parent), "running")
            row = self.wait_op(op)
            self.assertEqual(row["state"], "succeeded", "the acknowledged %s failed: %r" % (kind, row))
            for c in (row["result"] or {}).get("sandbox_ids", []):
                self.addCleanup(self._destroy_quietly, c)
                self.assertEqual(sp.state(c), "running")
        sp.destroy(parent)
        self.assertEqual(sp.state(parent), "destroyed")


if __name__ == "__main__":
    unittest.main()
