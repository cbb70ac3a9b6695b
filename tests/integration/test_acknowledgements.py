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


if __name__ == "__main__":
    unittest.main()
