"""Sandbox lifecycle: create, get, list, stop/start (files kept), pause/resume (CPU really
stops), destroy (nothing leaks), timeouts (pause/stop/destroy), wrong-state actions."""

import time
import unittest

from spaced_harness import SpacedTestCase, cgroup_dirs, cgroup_pids, cpu_usage_ns, wait_for


class SandboxLifecycle(SpacedTestCase):

    def test_create_get_list(self):
        sp = self.spaced
        sid = self.new_sandbox(resources={"cpus": 0.5, "memory_mb": 128, "pids": 64},
                               env={"FOO": "bar"}, metadata={"owner": "lifecycle", "k.v-1_x": "y"})
        sb = sp.get(sid)
        self.assertEqual(sb["id"], sid)
        self.assertEqual(sb["state"], "running")
        self.assertIsNone(sb["state_reason"])
        self.assertEqual(sb["template"], "busybox")
        self.assertEqual(sb["resources"], {"cpus": 0.5, "memory_mb": 128, "pids": 64, "disk_mb": 10240})
        self.assertEqual(sb["env"], {"FOO": "bar"})
        self.assertEqual(sb["metadata"], {"owner": "lifecycle", "k.v-1_x": "y"})
        self.assertEqual(sb["timeout_s"], 0)
        self.assertIsNone(sb["expires_at"])
        # The environment binding is copied from the template.
        _, t = sp.api("GET", "/v1/templates/busybox", expect=200)
        self.assertEqual(sb["environment"], t["environment"])
        # Defaults
        sid2 = self.new_sandbox()
        sb2 = sp.get(sid2)
        self.assertEqual(sb2["resources"], {"cpus": 1.0, "memory_mb": 512, "pids": 256, "disk_mb": 10240})
        self.assertEqual(sb2["on_timeout"], "stop")
        self.assertEqual(sb2["env"], {})
        self.assertEqual(sb2["metadata"], {})
        # The limits are applied to the cgroups (v1 here; v2 files on pure v2 hosts).
        dirs = cgroup_dirs(sid)
        self.assertTrue(dirs, "no cgroup for a running sandbox")
        found = {}
        for d in dirs:
            for f in ("memory.limit_in_bytes", "memory.max", "pids.max", "cpu.cfs_quota_us", "cpu.max"):
                try:
                    with open(d + "/" + f) as fh:
                        found[f] = fh.read().strip()
                except OSError:
                    pass
        mem = found.get("memory.limit_in_bytes") or found.get("memory.max")
        self.assertEqual(mem, str(128 * 1024 * 1024), found)
        self.assertEqual(found.get("pids.max"), "64", found)
        cpu = found.get("cpu.cfs_quota_us") or (found.get("cpu.max") or "").split()[0]
        self.assertEqual(cpu, "50000", found)

        # List, with filters
        ids = sp.list_ids()
        self.assertIn(sid, ids)
        self.assertIn(sid2, ids)
        _, data = sp.api("GET", "/v1/sandboxes?metadata.owner=lifecycle", expect=200)
        self.assertEqual([s["id"] for s in data["sandboxes"]], [sid])
        _, data = sp.api("GET", "/v1/sandboxes?metadata.owner=nobody", expect=200)
        self.assertEqual(data["sandboxes"], [])
        _, data = sp.api("GET", "/v1/sandboxes?state=stopped", expect=200)
        self.assertNotIn(sid, [s["id"] for s in data["sandboxes"]])
        _, data = sp.api("GET", "/v1/sandboxes?state=running", expect=200)
        self.assertIn(sid, [s["id"] for s in data["sandboxes"]])

    def test_stop_start_keeps_files(self):
        sp = self.spaced
        sid = self.new_sandbox()
        r = sp.sh(sid, "echo persisted-$((6*7)) > /root/keep.txt && mkdir -p /data && echo two > /data/f && sync")
        self.assertEqual(r["exit_code"], 0, r)
        _, data = sp.action(sid, "stop")
        self.assertEqual(data["operation"]["state"], "succeeded", data)
        self.assertEqual(data["sandbox"]["state"], "stopped")
        self.assertEqual(sp.state(sid), "stopped")
        # No processes while stopped
        self.assertEqual(cgroup_pids(sid), [], "processes left in a stopped sandbox")
        # exec on a stopped sandbox: 409
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]}), 409, "invalid_state")
        # stop again: 409; pause a stopped one: 409; resume: 409
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/stop" % sid), 409, "invalid_state")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/pause" % sid), 409, "invalid_state")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/resume" % sid), 409, "invalid_state")
        _, data = sp.action(sid, "start")
        self.assertEqual(data["sandbox"]["state"], "running", data)
        r = sp.sh(sid, "cat /root/keep.txt /data/f")
        self.assertEqual(r["stdout"], "persisted-42\ntwo\n", r)
        # A new init: the agent is PID 1 again
        r = sp.sh(sid, "cat /proc/1/cmdline | tr '\\0' ' '")
        self.assertIn("space-agent", r["stdout"])

    def test_pause_stops_cpu(self):
        sp = self.spaced
        sid = self.new_sandbox()
        # (busybox here has no nohup applet; a background job with its fds redirected
        # outlives the exec: the agent replies when the main process exits.)
        r = sp.sh(sid, 'sh -c "while :; do :; done" </dev/null >/dev/null 2>&1 &', timeout_s=10)
        self.assertEqual(r["exit_code"], 0, r)
        self.assertFalse(r["timed_out"], "exec did not return although the busy loop is in the background: %r" % r)

        def grows(window=1.0):
            a = cpu_usage_ns(sid)
            time.sleep(window)
            return cpu_usage_ns(sid) - a

        wait_for(lambda: grows(0.5) > 50_000_000, timeout=20, what="the busy loop to use CPU")

        _, data = sp.action(sid, "pause")
        self.assertEqual(data["sandbox"]["state"], "paused", data)
        self.assertEqual(sp.state(sid), "paused")
        time.sleep(0.3)
        used = grows(1.5)
        self.assertLess(used, 20_000_000, "a paused sandbox used %d ns of CPU in 1.5 s" % used)

        # exec while paused -> 409; pause again -> 409; start -> 409
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]}), 409, "invalid_state")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/pause" % sid), 409, "invalid_state")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/start" % sid), 409, "invalid_state")

        _, data = sp.action(sid, "resume")
        self.assertEqual(data["sandbox"]["state"], "running", data)
        wait_for(lambda: grows(0.5) > 50_000_000, timeout=20, what="CPU use to resume after resume")
        r = sp.sh(sid, "echo alive")
        self.assertEqual(r["stdout"], "alive\n")

    def test_stop_a_paused_sandbox(self):
        sp = self.spaced
        sid = self.new_sandbox()
        sp.sh(sid, "echo x > /root/p")
        sp.action(sid, "pause")
        _, data = sp.action(sid, "stop")
        self.assertEqual(data["sandbox"]["state"], "stopped", data)
        self.assertEqual(cgroup_pids(sid), [], "processes left after stopping a paused sandbox")
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "cat /root/p")["stdout"], "x\n")

    def test_destroy_leaks_nothing(self):
        sp = self.spaced
        for setup in ("running", "paused", "stopped"):
            with self.subTest(state=setup):
                sid = sp.create()
                sp.sh(sid, 'sleep 1000 </dev/null >/dev/null 2>&1 & echo data > /root/f')
                if setup == "paused":
                    sp.action(sid, "pause")
                elif setup == "stopped":
                    sp.action(sid, "stop")
                self.assertTrue(sp.leaks(sid) or setup == "stopped", "a live sandbox shows no host resources?")
                _, data = sp.destroy(sid)
                self.assertEqual(data["operation"]["state"], "succeeded", data)
                self.assertEqual(data["operation"]["kind"], "sandbox.destroy")
                self.assertEqual(data["sandbox"]["state"], "destroyed")
                self.assertEqual(sp.leaks(sid), [], "leaked after destroy")
                # Gone from the default list, visible with state=destroyed
                self.assertNotIn(sid, sp.list_ids())
                self.assertIn(sid, sp.list_ids(state="destroyed"))
                # Further actions are refused
                self.assertEqual(sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})[0], 409)
                self.assertEqual(sp.request("POST", "/v1/sandboxes/%s/start" % sid)[0], 409)

    def test_destroy_without_wait(self):
        sp = self.spaced
        sid = sp.create()
        status, data = sp.request("DELETE", "/v1/sandboxes/" + sid)
        self.assertEqual(status, 202, data)
        self.assertIn(data["sandbox"]["state"], ("destroying", "running", "destroyed"))
        op = data["operation"]["id"]
        wait_for(lambda: sp.request("GET", "/v1/operations/" + op)[1]["state"] == "succeeded", timeout=30,
                 what="destroy operation")
        self.assertEqual(sp.state(sid), "destroyed")
        self.assertEqual(sp.leaks(sid), [])

    def test_wait_timeout_returns_202(self):
        """?wait=true&timeout_s=N with an operation that ends in time gives 200; a create
        without wait gives 202 at once and a sandbox in creating/running."""
        sp = self.spaced
        status, data = sp.request("POST", "/v1/sandboxes", {})
        self.assertEqual(status, 202, data)
        sid = data["sandbox"]["id"]
        sp.known_ids.add(sid)
        self.addCleanup(self._destroy_quietly, sid)
        self.assertIn(data["sandbox"]["state"], ("creating", "running"))
        sp.wait_state(sid, "running", timeout=30)

    def _timeout_case(self, on_timeout, final):
        sp = self.spaced
        sid = self.new_sandbox(timeout_s=2, on_timeout=on_timeout)
        sb = sp.get(sid)
        self.assertEqual(sb["timeout_s"], 2)
        self.assertEqual(sb["on_timeout"], on_timeout)
        self.assertIsNotNone(sb["expires_at"], sb)
        sp.wait_state(sid, final, timeout=20)
        return sid

    def test_timeout_stop(self):
        sid = self._timeout_case("stop", "stopped")
        # It can be started again and does not immediately expire again (expires_at cleared or renewed)
        self.spaced.action(sid, "start")
        self.assertEqual(self.spaced.sh(sid, "echo ok")["stdout"], "ok\n")

    def test_timeout_pause(self):
        sid = self._timeout_case("pause", "paused")
        self.spaced.action(sid, "resume")
        self.assertEqual(self.spaced.sh(sid, "echo ok")["stdout"], "ok\n")

    def test_timeout_destroy(self):
        sid = self._timeout_case("destroy", "destroyed")
        wait_for(lambda: self.spaced.leaks(sid) == [], timeout=20, what="destroyed sandbox to leave nothing")

    def test_sandbox_ids_unique(self):
        sp = self.spaced
        ids = set()
        for _ in range(4):
            status, data = sp.request("POST", "/v1/sandboxes", {"metadata": {"batch": "u"}})
            self.assertEqual(status, 202, data)
            ids.add(data["sandbox"]["id"])
            sp.known_ids.add(data["sandbox"]["id"])
            self.addCleanup(self._destroy_quietly, data["sandbox"]["id"])
        self.assertEqual(len(ids), 4)
        for sid in ids:
            sp.wait_state(sid, "running", timeout=60)
        # All answer exec independently
        for sid in ids:
            self.assertEqual(sp.sh(sid, "echo $((1+1))")["stdout"], "2\n")


if __name__ == "__main__":
    unittest.main()
