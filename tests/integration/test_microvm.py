"""The microvm runtime (docs/runtimes.md): a sandbox created with `runtime: microvm` is a QEMU
microvm (TCG here: no usable KVM) booting Debian's kernel on a reflink copy of its
template's ext4 image, with space-agent behind the guest's init, reached over one
virtio-serial port (space-vmlink). exec, files, stop/start (a reboot), a kill -9 of spaced
and destroy work on it; a hostile guest (one that corrupts or floods its channel, stops
answering, or whose init exits) leaves the host side standing, the sandbox failed with a
reason, and nothing of it behind. Needs qemu-system-x86 and a Debian kernel
(scripts/install-deps); without them these tests fail (they are not skipped).

TCG boots take seconds: each test boots as few VMs as it can (ExecOnMicrovm and
FilesOnMicrovm share one sandbox per class, as on the other runtimes)."""

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import test_exec
import test_files
from spaced_harness import Spaced, SpacedTestCase, cgroup_pids, log, wait_for


def vm_processes(sandbox_id):
    """Host processes (QEMU, space-vmlink) whose command line names the sandbox."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ("qemu-system" in cmd or "space-vmlink" in cmd) and sandbox_id in cmd:
            found.append(int(pid))
    return found


def qemu_pid(sandbox_id):
    for pid in vm_processes(sandbox_id):
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if f.read().startswith(b"/usr/bin/qemu-system"):
                return pid
    return None


def assert_vm_gone(case, sp, sid):
    wait_for(lambda: not vm_processes(sid), timeout=30, what="the VM processes of %s to end" % sid)
    # the agent socket and the rest of the run dir go with the VM
    wait_for(lambda: not os.path.lexists(sp.run_dir(sid)), timeout=30, what="the run dir of %s to go" % sid)
    case.assertEqual(cgroup_pids(sid), [])


class Microvm(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        assert shutil.which("qemu-system-x86_64"), "QEMU is not installed (scripts/install-deps installs it)"
        super().setUpClass()

    def microvm_sandbox(self, **body):
        sid = self.new_sandbox(runtime="microvm", **body)
        self.assertEqual(self.spaced.get(sid)["runtime"], "microvm")
        return sid

    def test_capabilities_list_microvm_with_its_versions(self):
        _, caps = self.spaced.api("GET", "/v1/capabilities", expect=200)
        by_name = {d["name"]: d for d in caps["drivers"]}
        self.assertIn("microvm", by_name)
        vm = by_name["microvm"]
        self.assertIs(vm["default"], False)
        qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout.split()[3]
        with open(os.path.join(self.spaced.state_dir, "microvm", "kernel.version")) as f:
            kernel = f.read().strip()
        self.assertEqual(vm["version"], "qemu %s linux %s tcg" % (qemu, kernel))
        self.assertIs(vm["capabilities"]["memory_snapshot"], False)
        self.assertIs(vm["capabilities"]["fd_passing"], False)

    def test_unknown_runtime_is_a_400_naming_microvm(self):
        before = self.spaced.list_ids()
        status, body = self.spaced.request("POST", "/v1/sandboxes?wait=true", {"template": "busybox", "runtime": "kvm"})
        self.assertError((status, body), 400, "invalid_request")
        self.assertIn("microvm", body["error"]["message"])
        self.assertEqual(self.spaced.list_ids(), before)

    def test_exec_files_reboot_and_destroy(self):
        sp = self.spaced
        sid = self.microvm_sandbox(metadata={"t": "microvm-life"})
        # the sandbox records the VMM and kernel it was made with
        _, caps = sp.api("GET", "/v1/capabilities", expect=200)
        version = {d["name"]: d["version"] for d in caps["drivers"]}["microvm"]
        self.assertEqual(sp.get(sid)["environment"]["runtime_version"], version)
        # its own kernel, its disk as /
        r = sp.sh(sid, "uname -r; cat /proc/1/cmdline | tr '\\0' ' '; echo; grep ' / ' /proc/mounts; cat /proc/sys/kernel/random/boot_id")
        kernel, init, root, boot_id = r["stdout"].splitlines()
        with open(os.path.join(sp.state_dir, "microvm", "kernel.version")) as f:
            self.assertEqual(kernel, f.read().strip())
        self.assertTrue(init.startswith("/dev/.space/space-vmlink guest /dev/vport"), init)
        self.assertTrue(root.startswith("/dev/vda / ext4 "), root)
        r = sp.sh(sid, "echo out; echo err >&2; exit 3")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (3, "out\n", "err\n"))
        sp.put_file(sid, "/root/in.txt", b"from outside\n")
        r = sp.sh(sid, "cat /root/in.txt; echo inside > /root/out.txt; sync")
        self.assertEqual(r["stdout"], "from outside\n")
        # the disk is a reflink copy of the template's image: its extents are shared
        disk = os.path.join(sp.subvolume(sid), "disk.img")
        images = glob.glob(os.path.join(sp.state_dir, "pool", "disk-images", "*.ext4"))
        self.assertEqual(len(images), 1, images)
        frag = subprocess.run(["filefrag", "-v", disk], capture_output=True, text=True).stdout
        self.assertIn("shared", frag)
        # stop ends the VM; start boots it again on the same disk
        sp.action(sid, "stop")
        self.assertEqual(sp.state(sid), "stopped")
        assert_vm_gone(self, sp, sid)
        sp.action(sid, "start")
        r = sp.sh(sid, "cat /root/out.txt; cat /proc/sys/kernel/random/boot_id")
        out, boot_again = r["stdout"].splitlines()
        self.assertEqual(out, "inside")
        self.assertNotEqual(boot_again, boot_id)
        # pause freezes the VM; resume thaws it
        sp.action(sid, "pause")
        self.assertEqual(sp.state(sid), "paused")
        sp.action(sid, "resume")
        self.assertEqual(sp.sh(sid, "echo awake")["stdout"], "awake\n")
        sp.destroy(sid)
        assert_vm_gone(self, sp, sid)
        wait_for(lambda: not sp.leaks(sid), timeout=20, what="no leaks of %s" % sid)

    def test_snapshot_then_a_sandbox_from_it(self):
        sp = self.spaced
        sid = self.microvm_sandbox(metadata={"t": "microvm-snap"})
        sp.sh(sid, "echo unsynced > /root/state.txt")  # still in the guest's page cache
        _, d = sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {}, expect=200)
        snap_id = d["snapshot"]["id"]
        self.assertTrue(os.path.exists(os.path.join(sp.state_dir, "pool", "snapshots", snap_id, "disk.img")))
        sp.destroy(sid)
        # a sandbox from it runs on the runtime that wrote it, on a reflink of its disk
        child = self.new_sandbox(snapshot_id=snap_id)
        self.assertEqual(sp.get(child)["runtime"], "microvm")
        self.assertEqual(sp.sh(child, "cat /root/state.txt")["stdout"], "unsynced\n")
        sp.destroy(child)
        sp.api("DELETE", "/v1/snapshots/" + snap_id, expect=204)

    def test_kill9_of_spaced_keeps_the_vm_and_a_vmm_killed_meanwhile_fails_it(self):
        sp = self.spaced
        kept = self.microvm_sandbox(metadata={"t": "microvm-kept"})
        lost = self.microvm_sandbox(metadata={"t": "microvm-lost"})
        sp.sh(kept, "echo before > /root/r; sync")
        sp.kill9()
        # the VMs live on without spaced; one of them dies meanwhile
        self.assertTrue(vm_processes(kept))
        os.kill(qemu_pid(lost), signal.SIGKILL)
        sp.start()
        sp.wait_state(kept, "running", timeout=60)
        self.assertEqual(sp.sh(kept, "cat /root/r")["stdout"], "before\n")
        sp.wait_state(lost, "failed", timeout=60)
        self.assertIn("killed by signal 9", sp.get(lost)["state_reason"])
        assert_vm_gone(self, sp, lost)
        self.assertFalse(os.path.lexists(sp.subvolume(lost)))
        sp.destroy(kept)
        assert_vm_gone(self, sp, kept)

    def test_init_exits_the_sandbox_fails_with_a_reason(self):
        sp = self.spaced
        sid = self.microvm_sandbox(metadata={"t": "microvm-init-exits"})
        # the agent (the guest's only service) killed from inside: the guest's init powers off
        sp.api("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "kill -9 $(pidof space-agent) 2>/dev/null; sleep 5"})
        sp.wait_state(sid, "failed", timeout=60)
        self.assertIn("virtual machine ended", sp.get(sid)["state_reason"])
        assert_vm_gone(self, sp, sid)
        self.assertFalse(os.path.lexists(sp.subvolume(sid)))

    def test_guest_that_stops_answering_fails(self):
        sp = self.spaced
        sid = self.microvm_sandbox(metadata={"t": "microvm-hung"})
        pid = qemu_pid(sid)
        os.kill(pid, signal.SIGSTOP)  # a guest that hangs: its vCPUs and devices stop
        try:
            sp.wait_state(sid, "failed", timeout=90)
        finally:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.assertIn("stopped answering", sp.get(sid)["state_reason"])
        assert_vm_gone(self, sp, sid)


class HostileGuest(unittest.TestCase):
    """A guest init that attacks its channel: the initramfs's space-vmlink replaced (a later
    cpio archive overrides an earlier one) by a script that writes garbage, floods frames
    for streams that do not exist, or says nothing. The supervisor gives up on it with a
    reason; spaced survives and cleans up."""

    HOSTILE = {
        "corrupt": "head -c 65536 /dev/urandom > \"$2\"; sleep 100000",
        # valid DATA frames of stream 7 (never opened), forever
        "flood": "while :; do printf '\\007\\000\\000\\000\\003\\000\\000\\000\\004\\000\\000\\000abcd'; done > \"$2\"",
        "silent": "sleep 100000",
    }

    @classmethod
    def setUpClass(cls):
        assert shutil.which("qemu-system-x86_64"), "QEMU is not installed (scripts/install-deps installs it)"
        cls.spaced = Spaced()
        cls.spaced.env = {"SPACE_VMLINK_BOOT_TIMEOUT_S": "25", "SPACE_VMLINK_ANSWER_TIMEOUT_S": "10"}
        cls.spaced.start()
        cls.initramfs = os.path.join(cls.spaced.state_dir, "microvm", "initramfs.cpio")
        with open(cls.initramfs, "rb") as f:
            cls.honest = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.spaced.cleanup()

    def boot_hostile(self, kind):
        """Creates a microvm sandbox whose guest init is the hostile script; its id and the create's answer."""
        tree = tempfile.mkdtemp()
        try:
            os.makedirs(os.path.join(tree, "bin"))
            with open(os.path.join(tree, "bin", "space-vmlink"), "w") as f:
                f.write("#!/bin/sh\n%s\n" % self.HOSTILE[kind])
            os.chmod(os.path.join(tree, "bin", "space-vmlink"), 0o755)
            overlay = subprocess.run("cd %s && find . | cpio -o -H newc --quiet --owner=0:0" % tree, shell=True,
                                     capture_output=True, check=True).stdout
        finally:
            shutil.rmtree(tree)
        with open(self.initramfs, "wb") as f:
            f.write(self.honest + overlay)
        try:
            status, body = self.spaced.request("POST", "/v1/sandboxes?wait=true&timeout_s=120",
                                               {"template": "busybox", "runtime": "microvm", "metadata": {"t": kind}},
                                               timeout=130)
        finally:
            with open(self.initramfs, "wb") as f:
                f.write(self.honest)
        sid = body.get("operation", {}).get("target") or body.get("sandbox", {}).get("id")
        self.assertTrue(sid, body)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/sandboxes/%s?wait=true" % sid)
        return sid, status, body

    def assert_failed_and_clean(self, sid, status, body, reason):
        self.assertNotEqual(status, 200, body)
        sb = self.spaced.get(sid)
        self.assertEqual(sb["state"], "failed", sb)
        self.assertIn(reason, body["error"]["message"])
        self.assertIn(reason, sb["state_reason"])
        assert_vm_gone(self, self.spaced, sid)
        self.assertFalse(os.path.lexists(self.spaced.subvolume(sid)))  # its disk copy
        # spaced itself is unharmed
        self.assertTrue(self.spaced.alive())
        self.spaced.api("GET", "/v1/health", expect=200)

    def test_corrupt_channel(self):
        sid, status, body = self.boot_hostile("corrupt")
        self.assert_failed_and_clean(sid, status, body, "corrupted its agent channel")

    def test_flooded_channel(self):
        sid, status, body = self.boot_hostile("flood")
        self.assert_failed_and_clean(sid, status, body, "stopped answering")

    def test_silent_guest(self):
        sid, status, body = self.boot_hostile("silent")
        self.assert_failed_and_clean(sid, status, body, "stopped answering")

    def test_honest_guest_after_the_hostile_ones(self):
        sid = self.spaced.create(runtime="microvm", metadata={"t": "honest"})
        self.addCleanup(self.spaced.request, "DELETE", "/v1/sandboxes/%s?wait=true" % sid)
        self.assertEqual(self.spaced.sh(sid, "echo fine")["stdout"], "fine\n")


class ExecOnMicrovm(test_exec.Exec):
    """test_exec.py's exec tests on a microvm sandbox."""
    runtime = {"runtime": "microvm"}


class FilesOnMicrovm(test_files.Files):
    """test_files.py's file tests on a microvm sandbox."""
    runtime = {"runtime": "microvm"}


if __name__ == "__main__":
    unittest.main()
