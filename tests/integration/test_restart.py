"""spaced restarts: sandboxes survive SIGTERM and SIGKILL of the daemon; restart
reconciles sandboxes whose processes died, removes orphans, finishes interrupted
operations; a crash during create leaves no half-made sandbox."""

import os
import signal
import subprocess
import threading
import time
import unittest

from spaced_harness import (FreshSpacedTestCase, Spaced, cgroup_dirs, cgroup_pids, kill_cgroup_processes,
                            mountinfo_lines, read_cmdline, remove_cgroup_dirs, require_root, wait_for)

FINAL_SANDBOX_STATES = ("running", "failed", "stopped", "destroyed")


class Restart(FreshSpacedTestCase):

    def _survives(self, hard):
        sp = self.spaced
        sid = sp.create(metadata={"t": "survive"})
        paused = sp.create(metadata={"t": "survive-paused"})
        stopped = sp.create(metadata={"t": "survive-stopped"})
        sp.sh(sid, "echo before-restart > /root/f; sleep 300 </dev/null >/dev/null 2>&1 &")
        sp.sh(paused, "echo p > /root/f")
        sp.action(paused, "pause")
        sp.action(stopped, "stop")
        pids_before = set(cgroup_pids(sid))
        self.assertTrue(pids_before)
        if hard:
            sp.kill9()
        else:
            self.assertEqual(sp.stop(), 0, "spaced exit code after SIGTERM")
        # The sandbox keeps running while spaced is down
        time.sleep(1)
        self.assertEqual(set(cgroup_pids(sid)) & pids_before, pids_before, "sandbox processes died with spaced")
        for p in pids_before:
            self.assertTrue(os.path.exists("/proc/%d" % p))
        sp.start()
        self.assertEqual(sp.state(sid), "running")
        r = sp.sh(sid, "cat /root/f; ps -o comm | grep -c sleep")
        self.assertEqual(r["stdout"], "before-restart\n1\n", r)
        self.assertEqual(sp.state(paused), "paused")
        sp.action(paused, "resume")
        self.assertEqual(sp.sh(paused, "cat /root/f")["stdout"], "p\n")
        self.assertEqual(sp.state(stopped), "stopped")
        sp.action(stopped, "start")
        self.assertEqual(sp.sh(stopped, "echo up")["stdout"], "up\n")
        # And once more after the restart: a new sandbox works, old one can be destroyed cleanly
        new = sp.create()
        self.assertEqual(sp.sh(new, "echo new")["stdout"], "new\n")
        sp.destroy(sid)
        self.assertEqual(sp.leaks(sid), [])

    def test_sandboxes_survive_sigterm(self):
        self._survives(hard=False)

    def test_sandboxes_survive_sigkill(self):
        self._survives(hard=True)

    def _killed_while_down(self, pause):
        sp = self.spaced
        sid = sp.create(metadata={"t": "killed-while-down"})
        sp.sh(sid, "echo keep > /root/f")
        if pause:
            sp.action(sid, "pause")
        sp.kill9()
        kill_cgroup_processes(sid)
        self.assertEqual(cgroup_pids(sid), [])
        sp.start()
        sb = sp.get(sid)
        self.assertEqual(sb["state"], "stopped", "sandbox whose processes died while spaced was down: %r" % sb)
        # It can be started again and has its files
        _, data = sp.action(sid, "start")
        self.assertEqual(data["sandbox"]["state"], "running")
        self.assertEqual(sp.sh(sid, "cat /root/f")["stdout"], "keep\n")

    def test_processes_killed_while_down_reported_stopped(self):
        self._killed_while_down(pause=False)

    def test_paused_processes_killed_while_down_reported_stopped(self):
        self._killed_while_down(pause=True)

    def test_stopped_sandboxes_leave_no_zombies(self):
        """Every sandbox init is a child of spaced: it must be reaped when it ends."""
        sp = self.spaced
        a = sp.create()
        b = sp.create()
        sp.action(a, "stop")
        sp.destroy(b)
        wait_for(lambda: sp.zombie_children() == [], timeout=10,
                 what="spaced to reap its dead sandbox children (zombies: %r)" % (
                     [(p, read_cmdline(p)) for p in sp.zombie_children()],))

    def test_processes_killed_while_running_detected(self):
        """The controller notices a sandbox whose init died under a running spaced."""
        sp = self.spaced
        sid = sp.create(metadata={"t": "killed-under-spaced"})
        kill_cgroup_processes(sid)
        sp.wait_state(sid, ("stopped", "failed"), timeout=40)
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "echo back")["stdout"], "back\n")

    def test_orphans_removed_at_restart(self):
        sp = self.spaced
        keep = sp.create(metadata={"t": "keep"})
        sp.stop()
        template = os.path.join(sp.state_dir, "pool", "templates", "busybox")
        self.assertTrue(os.path.isdir(template), "template subvolume not at %s" % template)
        orphans = ["sb-orphan000000000", "sb-00000000deadbeef"]
        for oid in orphans:
            sp.known_ids.add(oid)
            path = sp.subvolume(oid)
            r = subprocess.run(["btrfs", "subvolume", "snapshot", template, path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            # Where this spaced keeps its sandboxes' cgroups (space/<instance>/ per hierarchy).
            inst_dirs = sp.instance_cgroup_dirs()
            self.assertTrue(inst_dirs, "no cgroup directory for instance %r" % sp.instance())
            for base in inst_dirs:
                os.makedirs(os.path.join(base, oid), exist_ok=True)
            os.makedirs(sp.run_dir(oid), exist_ok=True)
        # An orphan with a process in its cgroups: the process must be killed
        proc = subprocess.Popen(["sleep", "300"])
        self.addCleanup(lambda: (proc.kill(), proc.wait()))
        for d in cgroup_dirs(orphans[1]):
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(proc.pid))
        sp.start()
        for oid in orphans:
            wait_for(lambda: sp.leaks(oid) == [], timeout=20, what="orphan %s removed: %r" % (oid, sp.leaks(oid)))
        wait_for(lambda: proc.poll() is not None, timeout=20, what="orphan's process killed")
        # The real sandbox is untouched
        self.assertEqual(sp.state(keep), "running")
        self.assertEqual(sp.sh(keep, "echo kept")["stdout"], "kept\n")
        self.assertNotIn("sb-00000000deadbeef", sp.list_ids())

    def test_kill9_during_create(self):
        sp = self.spaced
        created = []
        for i in range(6):
            status, data = sp.request("POST", "/v1/sandboxes", {"metadata": {"round": str(i)}})
            self.assertEqual(status, 202, data)
            created.append(data["sandbox"]["id"])
            sp.known_ids.add(data["sandbox"]["id"])
            # Vary the moment of the crash a little.
            time.sleep(0.003 * i)
            sp.kill9()
            # Nothing of the dead spaced may keep its lock (or the restart is refused).
            wait_for(lambda: not sp.lock_holders(), timeout=10,
                     what="spaced.lock to be released after kill -9 (held by %r: %r)" % (
                         sp.lock_holders(), [read_cmdline(p)[:100] for p in sp.lock_holders()]))
            self.assertEqual(sp.stray_processes(), [], "processes of the killed spaced left behind")
            sp.start()
        self.check_consistent(created)
        # Every sandbox that says running really runs; failed/stopped ones can be destroyed.
        for sid, state in sp.list_ids().items():
            if state == "running":
                self.assertEqual(sp.sh(sid, "echo ok")["stdout"], "ok\n")
        for sid in created:
            sp.destroy(sid)
            self.assertEqual(sp.leaks(sid), [], "leaks after destroying %s" % sid)

    def test_kill9_during_destroy_and_stop(self):
        sp = self.spaced
        a = sp.create()
        b = sp.create()
        st, data = sp.request("DELETE", "/v1/sandboxes/" + a)
        self.assertEqual(st, 202)
        st, data = sp.request("POST", "/v1/sandboxes/%s/stop" % b)
        self.assertEqual(st, 202)
        sp.kill9()
        sp.start()
        self.check_consistent([a, b])
        wait_for(lambda: sp.state(a) == "destroyed", timeout=30, what="interrupted destroy to complete")
        wait_for(lambda: sp.leaks(a) == [], timeout=20, what="no leaks for %s" % a)
        wait_for(lambda: sp.state(b) == "stopped", timeout=30, what="interrupted stop to complete")

    def check_consistent(self, ids):
        sp = self.spaced

        def settled():
            states = {sid: sp.state(sid) for sid in ids}
            if not all(s in FINAL_SANDBOX_STATES for s in states.values()):
                return False
            _, ops = sp.api("GET", "/v1/operations", expect=200)
            if any(o["state"] in ("pending", "running") for o in ops["operations"]):
                return False
            return states

        states = wait_for(settled, timeout=60, interval=0.5, what="every sandbox and operation to settle")
        _, ops = sp.api("GET", "/v1/operations", expect=200)
        for o in ops["operations"]:
            self.assertIn(o["state"], ("succeeded", "failed"), o)
            self.assertIsNotNone(o["finished_at"], o)
            if o["state"] == "failed":
                self.assertIsNotNone(o["error"], o)
        # No subvolume without a (non-destroyed) row; no row claiming a rootfs it lacks.
        rows = sp.list_ids()
        rows.update(sp.list_ids(state="failed"))
        on_disk = set(os.listdir(os.path.join(sp.state_dir, "pool", "sandboxes")))
        self.assertEqual(on_disk - set(rows), set(), "subvolumes without a live row (states %r)" % states)
        for sid, state in rows.items():
            if state in ("running", "stopped", "paused"):
                self.assertIn(sid, on_disk, "%s is %s but has no rootfs" % (sid, state))
        # No cgroup for a sandbox that is not running/paused
        for sid, state in states.items():
            if state not in ("running", "paused"):
                self.assertEqual(cgroup_pids(sid), [], "%s is %s but has processes" % (sid, state))
        return states

    def test_sigterm_during_exec(self):
        """spaced stops promptly on SIGTERM even while a long exec is running."""
        sp = self.spaced
        sid = sp.create()
        result = {}

        def long_exec():
            try:
                result["r"] = sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "sleep 60", "timeout_s": 120},
                                         timeout=90)
            except Exception as e:  # noqa: BLE001 - connection closed by the exiting daemon is fine
                result["e"] = e

        t = threading.Thread(target=long_exec)
        t.start()
        time.sleep(1)
        t0 = time.monotonic()
        sp.stop(timeout=30)
        self.assertLess(time.monotonic() - t0, 30)
        t.join(90)
        sp.start()
        self.assertEqual(sp.state(sid), "running")
        self.assertEqual(sp.sh(sid, "echo ok")["stdout"], "ok\n")

    def test_second_spaced_on_same_state_dir_refused(self):
        sp = self.spaced
        args = sp.args()
        args[args.index("--listen") + 1] = "127.0.0.1:%d" % (sp.port + 1 if sp.port < 65535 else sp.port - 1)
        other = subprocess.run(args, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("another spaced", other.stderr)
        self.assertEqual(sp.request("GET", "/v1/health", key=None)[0], 200)

    def test_admin_key_stable_across_restarts(self):
        sp = self.spaced
        key = sp.key
        st, k = sp.api("POST", "/v1/keys", {"name": "persist"}, expect=201)
        sp.restart(hard=True)
        self.assertEqual(sp.key, key, "admin key changed across restart")
        self.assertEqual(sp.request("GET", "/v1/sandboxes", key=k["secret"])[0], 200)
        self.assertEqual(sp.request("GET", "/v1/sandboxes", key=key)[0], 200)


class TwoDaemons(unittest.TestCase):
    """Two spaced on different state directories (as on a shared CI host) must leave each
    other's sandboxes alone: each one's orphan sweep may only consider its own sandboxes."""

    def setUp(self):
        require_root()
        self.a = Spaced()
        self.addCleanup(self.a.cleanup)
        self.b = Spaced()
        self.addCleanup(self.b.cleanup)
        self.a.start()

    def test_other_daemon_start_does_not_kill_my_sandboxes(self):
        sid = self.a.create(metadata={"t": "two-daemons"})
        self.assertEqual(self.a.sh(sid, "echo before")["stdout"], "before\n")
        pids = cgroup_pids(sid)
        self.assertTrue(pids)
        self.b.start()
        time.sleep(0.5)
        swept = [line for line in self.b.logs(tail=10000).splitlines() if sid in line]
        alive = [p for p in pids if os.path.exists("/proc/%d" % p)]
        status, r = self.a.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "echo after"})
        self.assertEqual(alive, pids, "starting another spaced killed this one's sandbox; its log: %r" % swept)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["stdout"], "after\n")
        self.assertTrue(cgroup_dirs(sid), "another spaced removed this sandbox's cgroups")

    def test_other_daemon_restart_does_not_kill_my_sandboxes(self):
        self.b.start()
        sid = self.a.create(metadata={"t": "two-daemons-restart"})
        self.b.restart(hard=True)
        time.sleep(0.5)
        status, r = self.a.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "echo after"})
        self.assertEqual(status, 200, r)


if __name__ == "__main__":
    unittest.main()
