"""Rolling snapshots and PATCH: a sandbox with a policy is snapshotted on schedule while it
runs and changes, unchanged or paused sandboxes are skipped, the newest max_count are kept,
policies are validated, set at create, changed with PATCH, and default from the server.
The policy's smallest interval is 60 s, so this file takes a few minutes."""

import os
import time
import unittest

from spaced_harness import SpacedTestCase, wait_for


def rolling_of(sp, sid):
    _, data = sp.api("GET", "/v1/sandboxes/%s/snapshots" % sid, expect=200)
    return [s for s in data["snapshots"] if s["label"] == "rolling"]


class RollingSnapshots(SpacedTestCase):

    def test_policy_validation_changes_nothing(self):
        sp = self.spaced
        before = sp.list_ids()
        for bad in ({"interval_s": 59}, {"interval_s": 60, "retain_s": 604801}, {"retain_s": 3600},
                    {"interval_s": 60, "max_count": 0}, {"interval_s": 60, "extra": 1}, {"interval_s": "60"}, [60],
                    {"interval_s": None}, {"interval_s": None, "retain_s": 3600}):
            self.assertError(sp.request("POST", "/v1/sandboxes", {"rolling_snapshots": bad}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes", {"rolling_snapshots": {"interval_s": 60, "memory": True}}),
                         422, "unsupported")
        self.assertEqual(sp.list_ids(), before)
        sid = self.new_sandbox()
        self.assertIsNone(sp.get(sid)["rolling_snapshots"])
        self.assertError(sp.request("PATCH", "/v1/sandboxes/" + sid, {"rolling_snapshots": {"interval_s": 1}}),
                         400, "invalid_request")
        self.assertError(sp.request("PATCH", "/v1/sandboxes/" + sid, {"rolling_snapshots": {"interval_s": None}}),
                         400, "invalid_request")
        self.assertError(sp.request("PATCH", "/v1/sandboxes/" + sid, {"state": "running"}), 400, "invalid_request")
        self.assertError(sp.request("PATCH", "/v1/sandboxes/sb-doesnotexist00", {"timeout_s": 5}), 404, "not_found")
        self.assertIsNone(sp.get(sid)["rolling_snapshots"])

    def test_patch_settings(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"a": "1"})
        _, sb = sp.api("PATCH", "/v1/sandboxes/" + sid,
                       {"metadata": {"b": "2"}, "on_timeout": "pause",
                        "rolling_snapshots": {"interval_s": 3600, "max_count": 5}}, expect=200)
        self.assertEqual(sb["metadata"], {"b": "2"})
        self.assertEqual(sb["on_timeout"], "pause")
        self.assertEqual(sb["rolling_snapshots"], {"interval_s": 3600, "retain_s": 604800, "max_count": 5, "memory": False})
        self.assertEqual(sp.get(sid)["rolling_snapshots"]["max_count"], 5)
        _, sb = sp.api("PATCH", "/v1/sandboxes/" + sid, {"rolling_snapshots": None}, expect=200)
        self.assertIsNone(sb["rolling_snapshots"])
        # A timeout set later counts from now.
        _, sb = sp.api("PATCH", "/v1/sandboxes/" + sid, {"timeout_s": 2, "on_timeout": "stop"}, expect=200)
        self.assertIsNotNone(sb["expires_at"])
        sp.wait_state(sid, "stopped", timeout=20)

    def test_schedule_skip_unchanged_and_retention(self):
        sp = self.spaced
        sid = self.new_sandbox(rolling_snapshots={"interval_s": 60, "max_count": 2})
        paused = self.new_sandbox(rolling_snapshots={"interval_s": 60})
        sp.action(paused, "pause")
        sp.sh(sid, "echo 1 > /root/f")
        # The first one comes at the next controller pass (every 10 s).
        first = wait_for(lambda: [s for s in rolling_of(sp, sid) if s["state"] == "ready"], timeout=30,
                         what="first rolling snapshot")
        self.assertEqual(len(first), 1)
        # Nothing changes: when the interval has passed, no new snapshot is taken.
        time.sleep(75)
        self.assertEqual([s["id"] for s in rolling_of(sp, sid)], [first[0]["id"]], "unchanged sandbox was snapshotted")
        self.assertEqual(rolling_of(sp, paused), [], "a paused sandbox was snapshotted")
        # A change: the next pass takes one, whose parent is the first.
        sp.sh(sid, "echo 2 > /root/f")
        ready = lambda: [s for s in rolling_of(sp, sid) if s["state"] == "ready"]  # noqa: E731
        second = wait_for(lambda: len(ready()) >= 2 and ready(), timeout=30, what="second rolling snapshot to be ready")
        self.assertEqual(second[1]["parent_snapshot_id"], first[0]["id"])
        # Retention keeps the newest two: after a third, the first is gone (and its subvolume).
        time.sleep(50)
        sp.sh(sid, "echo 3 > /root/f")
        wait_for(lambda: len(ready()) == 2 and len(rolling_of(sp, sid)) == 2 and ready()[0]["id"] != first[0]["id"],
                 timeout=60, what="retention to drop the oldest rolling snapshot")
        self.assertEqual(sp.request("GET", "/v1/snapshots/" + first[0]["id"])[0], 404)
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "pool", "snapshots", first[0]["id"])))
        # The kept snapshots hold what the sandbox had when they were taken.
        newest = rolling_of(sp, sid)[-1]
        _, r = sp.api("POST", "/v1/sandboxes/%s/restore?wait=true" % sid, {"snapshot_id": newest["id"]}, expect=200)
        self.assertEqual(sp.sh(sid, "cat /root/f")["stdout"], "3\n")


class ServerDefaultPolicy(SpacedTestCase):
    spaced_kwargs = {"extra_args": ("--rolling-interval", "3600", "--rolling-max-count", "7")}

    def test_default_applies_unless_the_request_says_otherwise(self):
        sp = self.spaced
        sid = self.new_sandbox()
        self.assertEqual(sp.get(sid)["rolling_snapshots"],
                         {"interval_s": 3600, "retain_s": 604800, "max_count": 7, "memory": False})
        none = self.new_sandbox(rolling_snapshots=None)
        self.assertIsNone(sp.get(none)["rolling_snapshots"])


if __name__ == "__main__":
    unittest.main()
