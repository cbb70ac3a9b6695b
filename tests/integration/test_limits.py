"""Resource limits: a memory hog is OOM-killed inside its sandbox, a fork bomb is contained
by the pids limit, the CPU quota holds; the host and other sandboxes are fine afterwards."""

import time
import unittest

from spaced_harness import SpacedTestCase, cgroup_dirs, cgroup_pids, cpu_usage_ns, wait_for

# Allocates ~200 MB: tr turns the zeros into 'a' (shells drop NUL bytes), and the shell
# keeps the whole output of $(cat) in memory.
MEMORY_HOG = "head -c 200000000 /dev/zero | tr '\\0' a | sh -c 'x=$(cat); echo done ${#x}'"


class Limits(SpacedTestCase):

    def test_memory_hog_is_oom_killed(self):
        sp = self.spaced
        bystander = self.new_sandbox(metadata={"t": "bystander"})
        sp.sh(bystander, "echo safe > /root/f")
        sid = self.new_sandbox(resources={"memory_mb": 64}, metadata={"t": "memhog"})
        r = sp.sh(sid, MEMORY_HOG, timeout_s=120)
        self.assertFalse(r["timed_out"], r)
        self.assertNotIn("done 200000000", r["stdout"], "the hog got its 200 MB in a 64 MB sandbox")
        killed = r["oom_killed"] or r["signal"] == 9 or r["exit_code"] == 137
        self.assertTrue(killed, "memory hog not reported as killed: %r" % r)
        self.assertTrue(r["oom_killed"], "oom_killed should be true: %r" % r)
        # The sandbox survives (its agent was not the victim) and answers exec
        r = sp.sh(sid, "echo alive")
        self.assertEqual(r["stdout"], "alive\n", r)
        self.assertFalse(r["oom_killed"], "oom_killed must be reported once, not for later execs: %r" % r)
        self.assertEqual(sp.state(sid), "running")
        # The bystander and the host are fine
        self.assertEqual(sp.sh(bystander, "cat /root/f")["stdout"], "safe\n")
        self.assertEqual(sp.request("GET", "/v1/health", key=None)[0], 200)
        # The limit really is 64 MiB (and a modest allocation still works)
        r = sp.sh(sid, "head -c 20000000 /dev/zero | tr '\\0' a | sh -c 'x=$(cat); echo ${#x}'", timeout_s=60)
        self.assertEqual(r["stdout"], "20000000\n", r)
        self.assertFalse(r["oom_killed"])

    def test_agent_survives_oom(self):
        """Even when the hog is the sandbox's biggest process repeatedly, PID 1 stays."""
        sp = self.spaced
        sid = self.new_sandbox(resources={"memory_mb": 32}, metadata={"t": "memhog2"})
        for _ in range(3):
            r = sp.sh(sid, MEMORY_HOG, timeout_s=120)
            self.assertTrue(r["oom_killed"] or r["exit_code"] == 137, r)
        r = sp.sh(sid, "cat /proc/1/cmdline | tr '\\0' ' '")
        self.assertTrue(r["stdout"].startswith("space-agent"), r)

    def test_fork_bomb_is_contained(self):
        sp = self.spaced
        bystander = self.new_sandbox(metadata={"t": "bystander-fork"})
        sid = self.new_sandbox(resources={"pids": 32}, metadata={"t": "forkbomb"})
        r = sp.sh(sid, "f() { f | f & }; f; sleep 2", timeout_s=30)
        forks_failed = "can't fork" in r["stderr"] or "Resource temporarily unavailable" in r["stderr"]
        self.assertTrue(r["pids_limit_hit"] or forks_failed, "fork bomb not reported: %r" % {k: r[k] for k in r if k != "stderr"})
        self.assertTrue(r["pids_limit_hit"], "pids_limit_hit should be true")
        # Never more than the limit in the cgroup
        self.assertLessEqual(len(cgroup_pids(sid)), 32)
        for d in cgroup_dirs(sid):
            try:
                with open(d + "/pids.max") as f:
                    self.assertEqual(f.read().strip(), "32")
            except FileNotFoundError:
                pass
        # Clean the bomb out (a stop/start would do too); the sandbox must still answer
        # exec — retry while the bomb holds every pid.
        def answers():
            st, body = sp.request("POST", "/v1/sandboxes/%s/exec" % sid,
                                  {"shell": "kill -9 -1 2>/dev/null; echo ok", "timeout_s": 10})
            return st == 200 and "ok" in body["stdout"] and body
        wait_for(answers, timeout=60, interval=0.5, what="the fork-bombed sandbox to answer exec")
        r = wait_for(lambda: (lambda x: x["exit_code"] == 0 and x)(sp.sh(sid, "echo fine")), timeout=30,
                     what="a clean exec after the bomb")
        self.assertEqual(r["stdout"], "fine\n")
        self.assertEqual(sp.state(sid), "running")
        self.assertEqual(sp.sh(bystander, "echo bystander-ok")["stdout"], "bystander-ok\n")
        # Destroying a bombed sandbox leaves nothing
        sp.destroy(sid)
        self.assertEqual(sp.leaks(sid), [])

    def test_fork_bomb_then_destroy(self):
        sp = self.spaced
        sid = sp.create(resources={"pids": 32}, metadata={"t": "forkbomb2"})
        sp.sh(sid, "f() { f | f & }; f", timeout_s=30)
        time.sleep(1)
        _, data = sp.destroy(sid)
        self.assertEqual(data["sandbox"]["state"], "destroyed")
        wait_for(lambda: sp.leaks(sid) == [], timeout=20, what="no leak after destroying a fork bomb: %r" % sp.leaks(sid))

    def test_cpu_quota(self):
        sp = self.spaced
        sid = self.new_sandbox(resources={"cpus": 0.25}, metadata={"t": "cpu"})
        # Two busy loops would use 2 CPUs unthrottled.
        sp.sh(sid, 'for i in 1 2; do sh -c "while :; do :; done" </dev/null >/dev/null 2>&1 & done')
        time.sleep(0.5)
        a = cpu_usage_ns(sid)
        t0 = time.monotonic()
        time.sleep(3)
        used = cpu_usage_ns(sid) - a
        wall = time.monotonic() - t0
        share = used / (wall * 1e9)
        # 0.25 CPU allowed; generous margin for accounting jitter.
        self.assertLess(share, 0.5, "sandbox with cpus=0.25 used %.2f CPUs" % share)
        self.assertGreater(share, 0.02, "busy loops did not run at all (%.3f CPUs)" % share)
        sp.sh(sid, "kill -9 -1 2>/dev/null; true")

    def test_limits_do_not_leak_between_sandboxes(self):
        sp = self.spaced
        small = self.new_sandbox(resources={"memory_mb": 32, "pids": 16})
        big = self.new_sandbox(resources={"memory_mb": 256, "pids": 128})
        r = sp.sh(big, "head -c 100000000 /dev/zero | tr '\\0' a | sh -c 'x=$(cat); echo ${#x}'", timeout_s=120)
        self.assertEqual(r["stdout"], "100000000\n", "256 MB sandbox could not hold 100 MB: %r" % {k: r[k] for k in r if k != "stdout"})
        r = sp.sh(small, "head -c 100000000 /dev/zero | tr '\\0' a | sh -c 'x=$(cat); echo ${#x}'", timeout_s=120)
        self.assertNotEqual(r["stdout"], "100000000\n")
        self.assertTrue(r["oom_killed"], r)


if __name__ == "__main__":
    unittest.main()
