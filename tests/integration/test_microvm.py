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
import test_memory_state
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
        self.assertIs(vm["capabilities"]["memory_snapshot"], True)
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


# A process whose state lives in guest memory: the secret is read once and its file removed,
# the counter is a shell variable; both are written out (whole, by a rename) every 0.1 s.
COUNTER = ("echo s3cr3t-$$ > /root/secret; "
           "(v=$(cat /root/secret); rm /root/secret; i=0; "
           "while true; do i=$((i+1)); echo \"$v $i\" > /root/count.tmp; mv /root/count.tmp /root/count; sleep 0.1; done)"
           " >/dev/null 2>&1 </dev/null & echo started")


class MicrovmMemory(SpacedTestCase):
    """Memory state of microvm sandboxes (docs/memory-state.md): QEMU stops the VM, the
    subvolume holding its disk is snapshotted at that moment, QEMU writes its memory and
    devices to pool/memory/<id>/memory.img; restore, fork and wake start a VM that loads it
    and goes on (a shell loop counts on, a value only in memory survives), behind a new
    supervisor the restored guest end reconnects to."""

    @classmethod
    def setUpClass(cls):
        assert shutil.which("qemu-system-x86_64"), "QEMU is not installed (scripts/install-deps installs it)"
        cls.spaced_kwargs = {"extra_args": ["--memory-import", "on"]}  # the export/import case brings an image
        super().setUpClass()

    def counting_sandbox(self, tag):
        sid = self.new_sandbox(runtime="microvm", metadata={"t": tag})
        self.assertEqual(self.spaced.sh(sid, COUNTER)["stdout"], "started\n")
        wait_for(lambda: self.count(sid)[1] >= 3, timeout=60, what="the counter of %s to run" % sid)
        return sid

    def count(self, sid):
        """(secret, counter) as the loop inside last wrote them."""
        out = self.spaced.sh(sid, "cat /root/count")["stdout"].split()
        return out[0], int(out[1])

    def image_dir(self, image_id):
        return os.path.join(self.spaced.state_dir, "pool", "memory", image_id)

    def delete_snapshot_quietly(self, snap_id):
        if self.spaced.alive():
            self.spaced.request("DELETE", "/v1/snapshots/" + snap_id)

    def memory_snapshot(self, sid):
        _, d = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=300" % sid, {"memory": True},
                               expect=200, timeout=310)
        snap = d["snapshot"]
        self.assertEqual((snap["state"], snap["kind"]), ("ready", "memory"))
        self.addCleanup(self.delete_snapshot_quietly, snap["id"])
        return snap

    def test_snapshot_restore_and_fork_go_on_from_the_snapshot(self):
        sp = self.spaced
        sid = self.counting_sandbox("vm-memory")
        secret, before = self.count(sid)
        self.assertTrue(secret.startswith("s3cr3t-"), secret)
        snap = self.memory_snapshot(sid)
        _, after = self.count(sid)
        # one consistent pair: the disk (in the snapshot's subvolume) and the VM's memory
        self.assertTrue(os.path.isfile(os.path.join(sp.state_dir, "pool", "snapshots", snap["id"], "disk.img")))
        image = self.image_dir(snap["id"])
        self.assertGreater(os.path.getsize(os.path.join(image, "memory.img")), 0)
        with open(os.path.join(image, "machine")) as f:
            self.assertEqual(f.read(), "memory_mb=%d cpus=1\n" % sp.get(sid)["resources"]["memory_mb"])
        # the VM went on running after the snapshot
        wait_for(lambda: self.count(sid)[1] >= after + 10, timeout=60, what="the loop to go on")
        sp.sh(sid, "sync")  # the disk, reactivated after the save, takes writes
        before_restore = self.count(sid)[1]
        old_qemu = qemu_pid(sid)
        sp.api("POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=300" % sid, {"snapshot_id": snap["id"]}, expect=200,
               timeout=310)
        self.assertEqual(sp.state(sid), "running")
        self.assertNotEqual(qemu_pid(sid), old_qemu)  # a new VM, loaded from the image
        got_secret, n = self.count(sid)
        self.assertEqual(got_secret, secret)  # only in the loop's memory
        self.assertEqual(sp.sh(sid, "test -e /root/secret; echo $?")["stdout"], "1\n")
        self.assertGreaterEqual(n, before)
        self.assertLess(n, before_restore, "the counter did not go back to the snapshot's")
        wait_for(lambda: self.count(sid)[1] > n + 5, timeout=60, what="the restored loop to go on counting")
        # not a reboot: the guest's boot id and uptime went on
        self.assertEqual(sp.sh(sid, "test -e /root/count && echo same-disk")["stdout"], "same-disk\n")
        # fork of 2 from the image: each its own VM on its own reflink of the snapshot's disk
        _, d = sp.api("POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=300" % sid, {"snapshot_id": snap["id"], "count": 2},
                      expect=200, timeout=310)
        kids = d["operation"]["result"]["sandbox_ids"]
        self.assertEqual(len(kids), 2)
        for kid in kids:
            self.addCleanup(self._destroy_quietly, kid)
            self.assertEqual(sp.get(kid)["runtime"], "microvm")
        sp.sh(kids[0], "echo first > /root/mark")
        for kid in kids:
            got_secret, n = self.count(kid)
            self.assertEqual(got_secret, secret)
            self.assertGreaterEqual(n, before)
            wait_for(lambda: self.count(kid)[1] > n + 5, timeout=60, what="the loop of %s to go on" % kid)
        self.assertEqual(sp.sh(kids[1], "cat /root/mark 2>/dev/null; echo .")["stdout"], ".\n")
        self.assertEqual(sp.sh(sid, "cat /root/mark 2>/dev/null; echo .")["stdout"], ".\n")
        for kid in kids:
            sp.destroy(kid)
            assert_vm_gone(self, sp, kid)

    def test_hibernate_releases_the_vm_and_resume_brings_it_back(self):
        sp = self.spaced
        sid = self.counting_sandbox("vm-hibernate")
        # pause stops the vCPUs; a memory snapshot of the paused VM leaves it paused; resume
        # sends it on
        sp.action(sid, "pause")
        snap = self.memory_snapshot(sid)
        self.assertEqual(sp.state(sid), "paused")
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(snap["id"]), "memory.img")))
        sp.action(sid, "resume")
        n = self.count(sid)[1]
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=60, what="the loop to go on after the pause")
        _, d = sp.api("POST", "/v1/sandboxes/%s/pause?wait=true&timeout_s=300" % sid, {"memory_to_disk": True}, expect=200,
                      timeout=310)
        self.assertEqual(d["sandbox"]["state"], "paused")
        self.assertIn("hibernated", d["sandbox"]["state_reason"])
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(sid), "memory.img")))
        # its RAM is released: no VMM, no supervisor
        assert_vm_gone(self, sp, sid)
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "true"}), 409, "invalid_state")
        sp.action(sid, "resume")
        self.assertFalse(os.path.exists(self.image_dir(sid)), "the spent image was kept")
        got_secret, n = self.count(sid)
        self.assertTrue(got_secret.startswith("s3cr3t-"), got_secret)
        self.assertEqual(sp.sh(sid, "test -e /root/secret; echo $?")["stdout"], "1\n")
        wait_for(lambda: self.count(sid)[1] > n + 5, timeout=60, what="the woken loop to go on")

    def test_kill9_between_checkpoint_and_row_leaves_a_whole_pair(self):
        sp = self.spaced
        sid = self.counting_sandbox("vm-memory-crash")
        sp.stop()
        sp.env = {"SPACED_FAULT_KILL": "snapshot.memory:checkpointed"}
        sp.start()
        try:
            status, d = sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"memory": True})
            self.assertEqual(status, 202, d)
            snap_id = d["snapshot"]["id"]
            wait_for(lambda: not sp.alive(), timeout=300, what="spaced to die at the fault point")
            self.assertEqual(sp.proc.returncode, -9, "spaced ended otherwise than at the fault point")
            # killed with the image still partial: no row says ready without it
            self.assertFalse(os.path.exists(self.image_dir(snap_id)))
            self.assertTrue(os.path.exists(self.image_dir(snap_id) + ".partial"))
        finally:
            sp.kill9()
            sp.env = None
        sp.start()
        self.addCleanup(self.delete_snapshot_quietly, snap_id)
        snap = wait_for(lambda: (lambda s: s if s["state"] == "ready" else None)(
            sp.api("GET", "/v1/snapshots/" + snap_id, expect=200)[1]), timeout=300, what="the redone snapshot")
        self.assertEqual(snap["kind"], "memory")
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(snap_id), "memory.img")))
        self.assertFalse(os.path.exists(self.image_dir(snap_id) + ".partial"))
        # the VM runs on, its agent answering
        n = self.count(sid)[1]
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=60, what="the loop to go on after the crash")
        # and the pair restores
        sp.api("POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=300" % sid, {"snapshot_id": snap_id}, expect=200,
               timeout=310)
        self.assertTrue(self.count(sid)[0].startswith("s3cr3t-"))


    def test_export_and_import_carry_the_memory(self):
        # As for gvisor (test_memory_state.py): the image moves as a tar beside the send
        # stream; here it is memory.img and machine, and a sandbox from the import goes on.
        sp = self.spaced
        helpers = test_memory_state.MemoryState
        sid = self.counting_sandbox("vm-transfer")
        snap = self.memory_snapshot(sid)["id"]
        secret = self.count(sid)[0]
        st, fs = helpers.download(self, "/v1/snapshots/%s/export?full=true" % snap)
        self.assertEqual(st, 200)
        st, image = helpers.download(self, "/v1/snapshots/%s/memory" % snap)
        self.assertEqual(st, 200)
        sp.api("DELETE", "/v1/snapshots/" + snap, expect=204)
        for bad, why in ((helpers.tar({"memory.img": b"x"}), "no machine"),
                         (helpers.tar({"machine": b"memory_mb=256 cpus=1\n"}), "no memory.img"),
                         (helpers.tar({"memory.img": b"x", "machine": b"m", "checkpoint.img": b"c"}), "two kinds"),
                         (helpers.tar({"memory.img": ("link", "/etc/passwd"), "machine": b"m"}), "a symlink")):
            st, body = helpers.import_memory(self, snap, bad)
            self.assertEqual(st, 400, (why, body))
            self.assertEqual(helpers.staged_images(self), [], why)
        st, body = helpers.import_memory(self, snap, image)
        self.assertEqual(st, 201, body)
        st, got = sp.request("POST", "/v1/snapshots/import", raw=fs, headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(st, 201, got)
        self.addCleanup(self.delete_snapshot_quietly, snap)
        self.assertEqual((got["id"], got["kind"]), (snap, "memory"))
        moved = self.new_sandbox(snapshot_id=snap)
        self.assertEqual(sp.get(moved)["runtime"], "microvm")
        got_secret, n = self.count(moved)
        self.assertEqual(got_secret, secret)
        wait_for(lambda: self.count(moved)[1] > n + 3, timeout=60, what="the moved loop to go on")

    def test_kill9_mid_hibernate_and_mid_wake_keep_the_memory(self):
        # Killed at the steps of a hibernation (the VM stopped before its save, saved before
        # the image's rename, renamed before the record, recorded before the VM ends) and of
        # a wake (the new VM running, its row still paused): each time the restart ends with
        # the sandbox hibernated and its image whole, or running on from its memory.
        sp = self.spaced
        sid = self.counting_sandbox("vm-hibernate-crash")
        secret = self.count(sid)[0]
        for point in ("checkpoint:frozen", "checkpoint:saved", "hibernate:committed", "hibernate:recorded",
                      "wake:launched"):
            sp.stop()
            sp.env = {"SPACED_FAULT_KILL": point}
            sp.start()
            try:
                if point.startswith("wake"):
                    status, d = sp.request("POST", "/v1/sandboxes/%s/resume" % sid, {})
                else:
                    status, d = sp.request("POST", "/v1/sandboxes/%s/pause" % sid, {"memory_to_disk": True})
                self.assertEqual(status, 202, d)
                wait_for(lambda: not sp.alive(), timeout=300, what="spaced to die at " + point)
                self.assertEqual(sp.proc.returncode, -9, point)
            finally:
                sp.kill9()
                sp.env = None
            sp.start()
            if point.startswith("wake"):
                sp.wait_state(sid, "running", timeout=300)
                wait_for(lambda: not os.path.exists(self.image_dir(sid)), timeout=60, what="the spent image to go")
            else:
                sp.wait_state(sid, "paused", timeout=300)
                wait_for(lambda: "hibernated" in sp.get(sid)["state_reason"], timeout=300, what="the redone hibernation")
                assert_vm_gone(self, sp, sid)
                self.assertTrue(os.path.isfile(os.path.join(self.image_dir(sid), "memory.img")), point)
                self.assertFalse(os.path.exists(self.image_dir(sid) + ".partial"), point)
                if point == "hibernate:recorded":
                    continue  # woken by the next step, itself killed mid-wake
                sp.action(sid, "resume")
            got_secret, n = self.count(sid)
            self.assertEqual(got_secret, secret, point)
            wait_for(lambda: self.count(sid)[1] > n + 3, timeout=60, what="the loop to go on after " + point)


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
