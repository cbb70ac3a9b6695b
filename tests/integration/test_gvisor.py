"""The gvisor runtime (docs/isolation.md): a sandbox created with `runtime: gvisor` runs its
agent under runsc, and exec, files, btrfs snapshots of what it writes, pause/resume,
stop/start, a restart of spaced and destroy work on it as on a namespace sandbox; destroy
leaves no runsc container or process behind. Needs runsc from bookworm-backports
(scripts/install-deps); without it these tests fail (they are not skipped)."""

import json
import os
import shutil
import subprocess
import unittest

import test_exec
import test_files
from spaced_harness import SpacedTestCase, wait_for


def runsc_containers(state_dir):
    """The ids runsc's own records (spaced's --root) list."""
    root = os.path.join(state_dir, "runsc")
    out = subprocess.run(["runsc", "--root", root, "list", "--format=json"], capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return []
    return [c["id"] for c in (json.loads(out.stdout) or [])]


def runsc_processes(sandbox_id):
    """Host processes of runsc (sandbox, gofer) that name the sandbox."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "runsc" in cmd and sandbox_id in cmd:
            found.append(int(pid))
    return found


class Gvisor(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        assert shutil.which("runsc"), "runsc is not installed (scripts/install-deps installs it)"
        super().setUpClass()

    def gvisor_sandbox(self, **body):
        sid = self.new_sandbox(runtime="gvisor", **body)
        self.assertEqual(self.spaced.get(sid)["runtime"], "gvisor")
        return sid

    def test_capabilities_list_gvisor_with_its_version(self):
        _, caps = self.spaced.api("GET", "/v1/capabilities", expect=200)
        by_name = {d["name"]: d for d in caps["drivers"]}
        self.assertIn("gvisor", by_name)
        self.assertIs(by_name["gvisor"]["default"], False)
        version = subprocess.run(["runsc", "--version"], capture_output=True, text=True).stdout.split()[2]
        self.assertEqual(by_name["gvisor"]["version"], version)
        self.assertEqual(caps["runtime"], "namespaces")

    def test_unknown_runtime_is_a_400(self):
        before = self.spaced.list_ids()
        self.assertError(self.spaced.request("POST", "/v1/sandboxes?wait=true", {"runtime": "kvm"}), 400, "invalid_request")
        self.assertEqual(self.spaced.list_ids(), before)

    def test_exec_files_and_kernel(self):
        sp = self.spaced
        sid = self.gvisor_sandbox(metadata={"t": "gvisor-exec"})
        r = sp.sh(sid, "echo hello; echo err >&2; exit 3")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (3, "hello\n", "err\n"))
        # The kernel the sandbox sees is gVisor's, not the host's.
        r = sp.sh(sid, "dmesg 2>/dev/null | head -n 3; uname -r")
        self.assertNotEqual(r["stdout"].strip().splitlines()[-1], os.uname().release)
        sp.put_file(sid, "/root/in.txt", b"from outside\n")
        r = sp.sh(sid, "cat /root/in.txt; echo inside > /root/out.txt")
        self.assertEqual(r["stdout"], "from outside\n")
        # Writes reach the subvolume directly (no in-memory overlay).
        with open(os.path.join(sp.subvolume(sid), "root", "out.txt")) as f:
            self.assertEqual(f.read(), "inside\n")

    def test_snapshot_sees_a_file_written_inside_and_restore(self):
        sp = self.spaced
        sid = self.gvisor_sandbox(metadata={"t": "gvisor-snap"})
        sp.sh(sid, "echo one > /root/state.txt")
        _, snap = sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {}, expect=200)
        snap_id = snap["snapshot"]["id"] if "snapshot" in snap else snap["operation"]["result"]["snapshot_id"]
        sp.sh(sid, "echo two > /root/state.txt")
        sp.api("POST", "/v1/sandboxes/%s/restore?wait=true" % sid, {"snapshot_id": snap_id}, expect=200)
        sp.wait_state(sid, "running", timeout=60)
        self.assertEqual(sp.sh(sid, "cat /root/state.txt")["stdout"], "one\n")

    def test_pause_resume_stop_start(self):
        sp = self.spaced
        sid = self.gvisor_sandbox(metadata={"t": "gvisor-pause"})
        sp.sh(sid, "echo kept > /root/k")
        sp.action(sid, "pause")
        self.assertEqual(sp.state(sid), "paused")
        sp.action(sid, "resume")
        self.assertEqual(sp.sh(sid, "cat /root/k")["stdout"], "kept\n")
        sp.action(sid, "stop")
        self.assertEqual(sp.state(sid), "stopped")
        self.assertEqual(runsc_processes(sid), [])
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "cat /root/k")["stdout"], "kept\n")

    def test_restart_of_spaced_keeps_the_sandbox(self):
        sp = self.spaced
        sid = self.gvisor_sandbox(metadata={"t": "gvisor-restart"})
        sp.sh(sid, "echo before > /root/r")
        sp.restart()
        sp.wait_state(sid, "running", timeout=60)
        self.assertEqual(sp.sh(sid, "cat /root/r")["stdout"], "before\n")

    def test_destroy_leaves_nothing(self):
        sp = self.spaced
        sid = sp.create(runtime="gvisor", metadata={"t": "gvisor-destroy"})
        self.assertIn(sid, runsc_containers(sp.state_dir))
        self.assertTrue(runsc_processes(sid))
        sp.destroy(sid)
        wait_for(lambda: not runsc_processes(sid), timeout=20, what="runsc processes of %s to end" % sid)
        self.assertNotIn(sid, runsc_containers(sp.state_dir))
        wait_for(lambda: not sp.leaks(sid), timeout=20, what="no leaks of %s" % sid)


class ExecOnGvisor(test_exec.Exec):
    """test_exec.py's exec tests on a gvisor sandbox."""
    runtime = {"runtime": "gvisor"}

    def test_timeout(self):
        # test_exec's timeout test without its last part: on gvisor the output written just
        # before the timeout's kill is lost (a known gap of issue 12, docs/isolation.md).
        # The kill itself, of the whole process group, holds.
        r = self.ex(cmd=["sleep", "30"], timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertEqual((r["signal"], r["exit_code"]), (9, 137), r)
        r = self.ex(shell="sleep 31 & sleep 32; echo never", timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertNotIn("never", r["stdout"])
        ps = self.ex(cmd=["ps"])["stdout"]
        self.assertNotIn("sleep 31", ps)
        self.assertNotIn("sleep 32", ps)


class FilesOnGvisor(test_files.Files):
    """test_files.py's file tests on a gvisor sandbox, but for the watch: on gvisor inotify on
    the gofer-backed root does not report every event (a known gap of issue 12,
    docs/isolation.md), so test_watch_events is not run here (it runs on namespaces)."""
    runtime = {"runtime": "gvisor"}
    test_watch_events = None


if __name__ == "__main__":
    unittest.main()
