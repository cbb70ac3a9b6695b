"""Warm pools (--warm-pool): sandboxes made ahead, per template, so that a create is a claim.
A claimed sandbox is the request's (its own id, env, metadata, timeout, clean /tmp, hostname),
the pool refills, a create it does not match is made cold, a kill -9 leaves no warm sandbox
behind after the restart, a clean stop removes them, and a bad spec stops spaced at start."""

import os
import subprocess
import time
import unittest

from spaced_harness import SPACED, Spaced, SpacedTestCase, require_root, wait_for
from test_metrics import parse, value


def figures(sp, name, template="busybox"):
    st, body = sp.request("GET", "/metrics")
    assert st == 200, body
    return value(parse(body.decode() if isinstance(body, bytes) else body), name, template=template)


def ready(sp, template="busybox"):
    return figures(sp, "space_warm_pool_ready", template)


def on_disk(sp):
    """Ids with a subvolume in the pool (warm or not)."""
    d = os.path.join(sp.state_dir, "pool", "sandboxes")
    return set(n for n in os.listdir(d) if n.startswith("sb-")) if os.path.isdir(d) else set()


class WarmPool(SpacedTestCase):
    spaced_kwargs = {"extra_args": ["--warm-pool", "busybox=2"]}

    def setUp(self):
        wait_for(lambda: ready(self.spaced) == 2, timeout=60, what="the warm pool to fill")

    def test_claim_is_the_requests_sandbox(self):
        sp = self.spaced
        warm = on_disk(sp) - set(sp.list_ids())
        self.assertEqual(len(warm), 2, warm)
        claims = figures(sp, "space_warm_pool_claims_total")
        # Without ?wait: a claim answers with the sandbox already running and its create done.
        st, d = sp.api("POST", "/v1/sandboxes", {"template": "busybox", "env": {"GREETING": "hi"},
                                                 "metadata": {"owner": "t"}, "timeout_s": 600}, expect=(200, 201, 202))
        sid = d["sandbox"]["id"]
        sp.known_ids.add(sid)
        self.assertIn(sid, warm, "the create was not answered from the pool")
        self.assertEqual(d["sandbox"]["state"], "running")
        self.assertEqual(d["operation"]["state"], "succeeded")
        self.assertEqual(figures(sp, "space_warm_pool_claims_total"), claims + 1)
        got = sp.get(sid)
        self.assertEqual(got["metadata"], {"owner": "t"})
        self.assertIsNotNone(got["expires_at"], "the claim's timeout is armed")
        r = sp.sh(sid, 'echo "$GREETING"; hostname; ls -A /tmp | wc -l')
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].split(), ["hi", sid, "0"])
        _, op = sp.api("GET", "/v1/operations/" + d["operation"]["id"], expect=200)
        self.assertEqual(op["state"], "succeeded")
        # Two claims are two sandboxes: what one writes the other does not see.
        other = sp.create(template="busybox")
        self.assertNotEqual(other, sid)
        sp.sh(sid, "echo mine > /root/f")
        self.assertNotEqual(sp.sh(other, "cat /root/f")["exit_code"], 0)
        # The pool refills.
        wait_for(lambda: ready(sp) == 2, timeout=60, what="the warm pool to refill")
        for s in (sid, other):
            sp.destroy(s)
            self.assertEqual(sp.leaks(s), [])

    def test_a_create_it_does_not_match_is_made_cold(self):
        sp = self.spaced
        warm = on_disk(sp) - set(sp.list_ids())
        misses = figures(sp, "space_warm_pool_misses_total")
        sid = sp.create(template="busybox", resources={"memory_mb": 256})
        self.assertNotIn(sid, warm)
        self.assertEqual(figures(sp, "space_warm_pool_misses_total"), misses + 1)
        self.assertEqual(ready(sp), 2)
        r = sp.sh(sid, "cat /sys/fs/cgroup/memory.max 2>/dev/null || grep MemTotal /proc/meminfo")
        self.assertEqual(r["exit_code"], 0, r)
        sp.destroy(sid)

    def test_claimed_sandbox_times_out(self):
        sp = self.spaced
        warm = on_disk(sp) - set(sp.list_ids())
        sid = sp.create(template="busybox", timeout_s=2)
        self.assertIn(sid, warm)
        sp.wait_state(sid, "stopped", timeout=30)
        sp.destroy(sid)

    def test_warm_sandboxes_are_not_listed(self):
        sp = self.spaced
        warm = on_disk(sp) - set(sp.list_ids())
        self.assertEqual(len(warm), 2)
        for w in warm:
            self.assertEqual(sp.request("GET", "/v1/sandboxes/" + w)[0], 404)
            self.assertEqual(sp.request("DELETE", "/v1/sandboxes/" + w)[0], 404)


class WarmPoolRestarts(unittest.TestCase):
    def setUp(self):
        require_root()
        self.sp = Spaced(extra_args=["--warm-pool", "busybox=2"])
        self.addCleanup(self.sp.cleanup)
        self.sp.start()
        wait_for(lambda: ready(self.sp) == 2, timeout=60, what="the warm pool to fill")

    def test_kill9_leaves_no_warm_sandbox(self):
        sp = self.sp
        claimed = sp.create(template="busybox")
        wait_for(lambda: ready(sp) == 2, timeout=60, what="the warm pool to refill")
        before = on_disk(sp) - {claimed}
        self.assertEqual(len(before), 2)
        sp.kill9()
        sp.start()
        # The claimed one lives on; the warm ones of the killed spaced are gone with all they held.
        self.assertEqual(sp.state(claimed), "running")
        self.assertEqual(sp.sh(claimed, "echo ok")["stdout"], "ok\n")
        for w in before:
            self.assertEqual(sp.leaks(w), [], w)
        wait_for(lambda: ready(sp) == 2, timeout=60, what="the warm pool to fill again")
        self.assertEqual(len(on_disk(sp) - {claimed}), 2)
        sp.destroy(claimed)

    def test_clean_stop_removes_warm_sandboxes(self):
        sp = self.sp
        warm = on_disk(sp)
        self.assertEqual(len(warm), 2)
        sp.stop()
        for w in warm:
            self.assertEqual(sp.leaks(w), [], w)

    def test_pool_grows_with_the_create_rate(self):
        sp = self.sp
        sp.stop()
        sp.extra_args = ["--warm-pool", "busybox=1:4"]
        sp.start()
        wait_for(lambda: ready(sp) >= 1, timeout=60, what="the warm pool to fill")
        made = [sp.create(template="busybox") for _ in range(14)]
        # 14 creates in the last minute: the next 10 s at that rate want 3 ready.
        wait_for(lambda: figures(sp, "space_warm_pool_target") >= 3, timeout=30, what="the target to grow")
        wait_for(lambda: ready(sp) >= 3, timeout=60, what="the pool to grow")
        self.assertLessEqual(ready(sp), 4)
        for s in made:
            sp.destroy(s)


class WarmPoolSpec(unittest.TestCase):
    def test_bad_specs_stop_spaced_at_start(self):
        require_root()
        for spec in ("busybox", "busybox=0", "busybox=5:2", "busybox=65", "=2", "bad name=1", "busybox=1,busybox=2",
                     "busybox=1x", "busybox=-1"):
            p = subprocess.run([SPACED, "--state-dir", "/nonexistent/never-made", "--warm-pool", spec],
                               capture_output=True, timeout=30)
            self.assertNotEqual(p.returncode, 0, spec)
            self.assertIn(b"--warm-pool", p.stderr, (spec, p.stderr))
            self.assertFalse(os.path.exists("/nonexistent/never-made"))


if __name__ == "__main__":
    unittest.main()
