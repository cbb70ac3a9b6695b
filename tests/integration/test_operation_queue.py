"""The operation queue: one operation at a time per target, in the order accepted, and
nothing else waits. Targets used to be hashed onto 64 lock stripes, so an operation on a
target that merely hashed like a busy one (here: a quick template build behind a slow one)
waited for it although the two have nothing in common."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spaced_harness import SpacedTestCase, tar_of  # noqa: E402

SLOW_S = 8


def stripe_of(target, stripes=64):
    """The FNV-1a hash the queue used to put targets on stripes."""
    h = 2166136261
    for b in target.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h % stripes



class OperationQueue(SpacedTestCase):
    spaced_kwargs = {"extra_args": ["--pool-size", "4G"]}

    def submit_build(self, name, spacefile):
        status, data = self.spaced.request("POST", "/v1/templates?name=%s" % name, raw=tar_of({"Spacefile": spacefile}),
                                           headers={"Content-Type": "application/x-tar"})
        self.assertEqual(status, 202, data)
        return data["operation"]

    def wait_op(self, op_id, timeout_s=120):
        end = time.monotonic() + timeout_s
        while True:
            _, op = self.spaced.api("GET", "/v1/operations/" + op_id, expect=200)
            if op["state"] in ("succeeded", "failed") or time.monotonic() > end:
                return op
            time.sleep(0.1)

    def test_unrelated_targets_do_not_wait_for_each_other(self):
        slow = self.submit_build("slowq", b"FROM busybox\nRUN sleep %d\n" % SLOW_S)
        # A name whose operation target falls on the slow build's old stripe.
        target = slow["target"]
        quick_name = next(n for n in ("quick%d" % i for i in range(10000))
                          if stripe_of(target.replace("slowq", n, 1)) == stripe_of(target))
        t0 = time.monotonic()
        quick = self.submit_build(quick_name, b"FROM busybox\nRUN echo quick > /q\n")
        self.assertEqual(stripe_of(quick["target"]), stripe_of(target))
        done = self.wait_op(quick["id"])
        quick_s = time.monotonic() - t0
        self.assertEqual(done["state"], "succeeded", done)
        self.assertEqual(self.wait_op(slow["id"])["state"], "succeeded")
        self.assertLess(quick_s, SLOW_S - 2, "the quick build waited for the slow one (%.1f s)" % quick_s)


if __name__ == "__main__":
    unittest.main()
