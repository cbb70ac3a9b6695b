"""What a sandbox learns about the host through /proc, black box against the real spaced:
the agent's host path (/proc/1/exe), the host's devices, disks, interrupts, locks, memory
zones and kernel command line, and the host's boot_id. Each test reads from inside and
asserts that the host's value is not there (and that the host has one to leak)."""

import hashlib
import json
import os
import re
import subprocess
import unittest

from spaced_harness import SPACE_AGENT, ProbeSandboxTestCase, SpacedTestCase, log, probe_output

EPERM = 1
# What fsinfo_probe asks; the first four name the pool on any btrfs the host has.
FSINFO_REQUESTS = ["fs_info", "dev_info", "get_subvol_info", "getfsuuid", "getfssysfspath", "getfslabel",
                   "get_dev_stats", "ino_lookup", "space_info", "get_features", "subvol_create"]

# Empty inside (masked with /dev/null), or unreadable (host root's only), whatever the host has.
MASKED_FILES = ["locks", "diskstats", "zoneinfo", "interrupts", "partitions", "cmdline", "buddyinfo",
                "pagetypeinfo", "softirqs", "swaps", "devices", "modules", "keys", "key-users", "timer_list",
                "sched_debug", "schedstat", "vmallocinfo", "slabinfo", "iomem", "ioports", "kallsyms",
                "consoles", "config.gz", "kcore", "kmsg", "sysrq-trigger"]
MASKED_DIRS = ["acpi", "asound", "bus", "fs", "irq", "scsi"]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def host_read(name):
    try:
        with open("/proc/" + name, "rb") as f:
            return f.read(65536)
    except OSError:
        return None


class ProcView(SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create()
        except Exception:
            cls.spaced.cleanup()
            raise

    def sh(self, script, sid=None):
        r = self.spaced.sh(sid or self.sid, script)
        self.assertEqual(r["exit_code"], 0, repr(r))
        return r["stdout"]

    def test_agent_exe_is_not_the_host_path(self):
        exe = self.sh("readlink /proc/1/exe").strip()
        host_path = os.path.realpath(SPACE_AGENT)
        self.assertNotIn(host_path, exe)
        self.assertNotIn(os.path.dirname(host_path), exe)
        self.assertTrue(exe.startswith("/memfd:space-agent"), exe)
        # The same bytes as the host's agent, run from a copy that nothing inside can change.
        with open(SPACE_AGENT, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        got = self.sh("sha256sum /proc/1/exe").split()[0]
        self.assertEqual(got, want)

    def test_agent_image_cannot_be_overwritten(self):
        with open(SPACE_AGENT, "rb") as f:
            before = hashlib.sha256(f.read()).hexdigest()
        r = self.spaced.sh(self.sid, "echo pwned > /proc/1/exe; echo pwned >> /proc/1/exe; "
                                     "truncate -s 0 /proc/1/exe; sha256sum /proc/1/exe")
        self.assertEqual(r["stdout"].split()[0], before, repr(r))
        with open(SPACE_AGENT, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), before)
        # A new sandbox still starts from the intact image.
        sid = self.new_sandbox()
        self.assertEqual(self.sh("echo alive", sid=sid), "alive\n")

    def test_host_proc_files_masked(self):
        leaking = [n for n in ("locks", "diskstats", "zoneinfo", "interrupts", "partitions", "cmdline")
                   if host_read(n)]
        self.assertTrue(leaking, "the host shows none of these: the test would prove nothing")
        script = "; ".join("printf '%s=' ; wc -c < /proc/%s 2>/dev/null || echo absent" % (n, n) for n in MASKED_FILES)
        sizes = dict(line.split("=", 1) for line in self.sh(script).strip().splitlines())
        shown = {n: s for n, s in sizes.items() if s.strip() not in ("0", "absent")}
        self.assertEqual(shown, {}, "host /proc files readable inside")
        # The host's values are nowhere in the sandbox's copies.
        for n in leaking:
            self.assertEqual(self.sh("cat /proc/%s" % n), "", n)

    def test_host_proc_dirs_masked(self):
        out = self.sh("for d in %s; do [ -d /proc/$d ] && ls -A /proc/$d; done; true" % " ".join(MASKED_DIRS))
        self.assertEqual(out, "")
        r = self.spaced.sh(self.sid, "touch /proc/fs/x")
        self.assertNotEqual(r["exit_code"], 0)

    def test_masks_cannot_be_removed(self):
        r = self.spaced.sh(self.sid, "umount /proc/cmdline; umount -l /proc/locks; cat /proc/cmdline /proc/locks | wc -c")
        self.assertEqual(r["stdout"].strip(), "0", repr(r))

    def test_boot_id_is_the_sandboxes_own(self):
        with open("/proc/sys/kernel/random/boot_id") as f:
            host = f.read().strip()
        mine = self.sh("cat /proc/sys/kernel/random/boot_id").strip()
        self.assertRegex(mine, UUID)
        self.assertNotEqual(mine, host)
        other = self.sh("cat /proc/sys/kernel/random/boot_id", sid=self.new_sandbox()).strip()
        self.assertNotEqual(other, mine)
        self.assertNotEqual(other, host)
        r = self.spaced.sh(self.sid, "echo 00000000-0000-4000-8000-000000000000 > /proc/sys/kernel/random/boot_id; "
                                     "cat /proc/sys/kernel/random/boot_id")
        self.assertEqual(r["stdout"].strip(), mine)
        # Nothing of how it was made is left in /dev.
        self.assertNotIn("boot_id", self.sh("ls -A /dev"))

    def test_what_tools_read_is_still_there(self):
        out = self.sh("head -1 /proc/meminfo; grep -c ^processor /proc/cpuinfo; cat /proc/uptime /proc/loadavg | wc -l; "
                      "head -1 /proc/stat | cut -c1-3; ps -o pid,comm | head -2 | tail -1")
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("MemTotal:"), out)
        self.assertGreater(int(lines[1]), 0)
        self.assertEqual(lines[2:4], ["2", "cpu"])
        self.assertIn("1", lines[4])


def host_cpus():
    with open("/proc/cpuinfo") as f:
        return sum(1 for line in f if line.startswith("processor"))


class ProcFigures(SpacedTestCase):
    """/proc/meminfo, stat, loadavg, uptime and cpuinfo show the sandbox's own limits and
    processes (docs/isolation.md), not the host's totals."""
    MEMORY_MB = 256

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(resources={"memory_mb": cls.MEMORY_MB, "cpus": 1})
        except Exception:
            cls.spaced.cleanup()
            raise

    def sh(self, script, sid=None):
        r = self.spaced.sh(sid or self.sid, script)
        self.assertEqual(r["exit_code"], 0, repr(r))
        return r["stdout"]

    def meminfo(self, sid=None):
        out = {}
        for line in self.sh("cat /proc/meminfo", sid=sid).splitlines():
            k, v = line.split(":", 1)
            out[k] = int(v.split()[0])
        return out

    def test_meminfo_shows_the_memory_limit(self):
        with open("/proc/meminfo") as f:
            host_total = int(f.readline().split()[1])
        self.assertGreater(host_total, self.MEMORY_MB * 1024)
        m = self.meminfo()
        self.assertEqual(m["MemTotal"], self.MEMORY_MB * 1024)
        self.assertLessEqual(m["MemAvailable"], m["MemTotal"])
        self.assertGreater(m["MemAvailable"], 0)
        # Memory the sandbox holds shows: 64 MiB on its /tmp (a tmpfs, charged to its cgroup).
        self.sh("dd if=/dev/zero of=/tmp/blob bs=1M count=64 2>/dev/null")
        after = self.meminfo()
        try:
            self.assertGreaterEqual(after["Shmem"], 64 * 1024)
            self.assertLessEqual(after["MemFree"], m["MemFree"] - 60 * 1024)
        finally:
            self.sh("rm -f /tmp/blob")

    def test_cpu_count_is_the_limit(self):
        self.assertEqual(self.sh("grep -c ^processor /proc/cpuinfo").strip(), "1")
        stat = self.sh("cat /proc/stat")
        cpu_lines = [l for l in stat.splitlines() if re.match(r"^cpu\d", l)]
        self.assertEqual(len(cpu_lines), 1, stat)
        if host_cpus() > 1:  # with one host CPU the host's figure is 1 too: the count above still holds
            self.assertNotEqual(len(cpu_lines), host_cpus())

    def test_boot_time_and_uptime_are_the_sandboxes(self):
        with open("/proc/stat") as f:
            host_btime = int([l for l in f if l.startswith("btime")][0].split()[1])
        with open("/proc/uptime") as f:
            host_up = float(f.read().split()[0])
        sid = self.new_sandbox()
        out = self.sh("grep ^btime /proc/stat; cat /proc/uptime; cat /proc/loadavg", sid=sid).splitlines()
        btime = int(out[0].split()[1])
        up = float(out[1].split()[0])
        self.assertNotEqual(btime, host_btime)
        self.assertGreater(btime, host_btime)
        self.assertLess(up, 300)
        self.assertLess(up, host_up)
        fields = out[2].split()
        self.assertEqual(len(fields), 5, out[2])
        self.assertRegex(fields[3], r"^\d+/\d+$")

    def test_every_reader_sees_the_same_text(self):
        # busybox cat reads with sendfile(2), dd with read(2), head through stdio.
        for name in ("meminfo", "stat", "loadavg", "uptime"):
            out = self.sh("cat /proc/%s | wc -l; dd if=/proc/%s bs=7 2>/dev/null | wc -l; "
                          "stat -c %%s /proc/%s; cat /proc/%s | wc -c" % (name, name, name, name)).split()
            self.assertEqual(out[0], out[1], (name, out))
            self.assertGreater(int(out[0]), 0, name)
            self.assertEqual(out[2], out[3], (name, out))

    def test_views_cannot_be_written_or_removed(self):
        r = self.spaced.sh(self.sid, "echo 'MemTotal: 1 kB' > /proc/meminfo; echo rc=$?; "
                                     "umount /proc/meminfo; umount -l /proc/stat; head -1 /proc/meminfo")
        self.assertIn("rc=1", r["stdout"], repr(r))
        self.assertIn("MemTotal:           %d kB" % (self.MEMORY_MB * 1024), r["stdout"], repr(r))

    def test_file_api_on_a_view_neither_hangs_nor_leaks(self):
        # The agent's own file operations must not wait on the view server (it is a process
        # of its own), and spaced, outside the sandbox's user namespace, is refused by the
        # kernel at once rather than waiting on a FUSE server the sandbox runs.
        import urllib.parse
        with open("/proc/meminfo") as f:
            host_total = f.readline().split()[1]
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, {})
        self.assertIn(status, (200, 201), body)
        q = urllib.parse.urlencode({"path": "/proc/meminfo"})
        status, data = self.spaced.request("GET", "/v1/sandboxes/%s/files?%s" % (self.sid, q),
                                           key=body["attach_token"], timeout=30)
        text = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.assertIn(status, (200, 400), text)
        if status == 200:
            self.assertIn(b"MemTotal:           %d kB" % (self.MEMORY_MB * 1024), text)
        self.assertNotIn(host_total.encode(), text)
        # The sandbox still answers afterwards.
        self.assertEqual(self.sh("head -1 /proc/meminfo").split()[1], str(self.MEMORY_MB * 1024))

    def test_open_handles_are_bounded_and_come_back(self):
        sid = self.new_sandbox(resources={"memory_mb": self.MEMORY_MB, "cpus": 1})
        r = self.spaced.sh(sid, "i=0; while [ $i -lt 80 ]; do sleep 60 < /proc/meminfo & i=$((i+1)); done; "
                                "sleep 1; head -1 /proc/meminfo; echo rc=$?; kill $(jobs -p) 2>/dev/null; "
                                "wait 2>/dev/null; head -1 /proc/meminfo")
        lines = r["stdout"].splitlines()
        self.assertIn("rc=1", lines, repr(r))
        self.assertTrue(lines[-1].startswith("MemTotal:"), repr(r))

    def test_a_killed_view_server_shows_nothing_of_the_host(self):
        sid = self.new_sandbox(resources={"memory_mb": self.MEMORY_MB, "cpus": 1})
        r = self.spaced.sh(sid, "kill -9 $(pidof space-agent | tr ' ' '\\n' | grep -vx 1); sleep 0.5; "
                                "cat /proc/meminfo; echo rc=$?")
        self.assertNotIn("MemTotal", r["stdout"], repr(r))
        self.assertIn("rc=1", r["stdout"], repr(r))
        # The sandbox itself goes on working.
        self.assertEqual(self.sh("echo alive", sid=sid), "alive\n")


class ProcFiguresOff(SpacedTestCase):
    """--proc-views off: no views are mounted, /proc shows what the kernel says."""
    spaced_kwargs = {"extra_args": ["--proc-views", "off"]}

    def test_no_views_with_the_switch_off(self):
        sid = self.spaced.create(resources={"memory_mb": 256, "cpus": 1})
        r = self.spaced.sh(sid, "grep -c space-proc /proc/self/mountinfo; head -1 /proc/meminfo")
        lines = r["stdout"].splitlines()
        self.assertEqual(lines[0], "0", r)
        with open("/proc/meminfo") as f:
            self.assertEqual(lines[1].split()[1], f.readline().split()[1])


def field(line, name):
    m = re.search(r"\b%s=(\S+)" % name, line)
    return m.group(1) if m else None


class PoolIdentity(ProbeSandboxTestCase):
    """The btrfs pool's identity (fsid, devices: the host's loop device, subvolume UUIDs)
    through ioctls on the sandbox's own root: the probe gets them on the host, and must get
    EPERM and none of them inside, with and without high bits in the request."""

    probe_name = "fsinfo_probe"

    def host_secrets(self):
        """What the pool tells host root through the same requests on the sandbox's subvolume
        (the subvolume the sandbox sees as /): each as hex and in the forms tools print."""
        out = subprocess.run([self.probe, self.spaced.subvolume(self.sid)], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        host = probe_output(out.stdout)
        log("host answers: %r" % host)
        # FS_IOC_GETFSUUID answers only where the file system set a UUID for it (btrfs does not,
        # as of 6.18: ENOTTY); it is refused inside all the same.
        for name in ("fs_info", "dev_info", "get_subvol_info"):
            self.assertTrue(host.get(name, "").startswith("ok"), "the host gets no %s: the test would prove "
                                                                 "nothing (%r)" % (name, host.get(name)))
        fsid, dev_uuid = field(host["fs_info"], "fsid"), field(host["dev_info"], "uuid")
        device = field(host["dev_info"], "path")  # /dev/loopN
        subvol_raw = field(host["get_subvol_info"], "raw")
        # btrfs_ioctl_get_subvol_info_args: uuid at 296, parent_uuid (the template snapshot's) at 312
        subvol_uuids = [subvol_raw[2 * o:2 * o + 32] for o in (296, 312)]
        secrets = [fsid, dev_uuid, field(host.get("getfsuuid", ""), "uuid"), device, os.path.basename(device),
                   field(host["dev_info"], "pathhex")] + [u for u in subvol_uuids if u.strip("0")]
        dashed = ["%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:]) for h in secrets
                  if h and re.fullmatch(r"[0-9a-f]{32}", h)]
        return [s for s in secrets + dashed if s]

    def run_inside(self, *args):
        r = self.spaced.exec(self.sid, cmd=[self.probe_path, "/", "create"] + list(args))
        self.assertEqual(r["exit_code"], 0, repr(r))
        return r["stdout"]

    def check_refused(self, out):
        got = probe_output(out)
        wrong = {n: got.get(n) for n in FSINFO_REQUESTS if got.get(n) != "errno %d" % EPERM}
        self.assertEqual(wrong, {}, "pool ioctls not refused with EPERM inside")
        for secret in self.host_secrets():
            self.assertNotIn(secret, out, "the sandbox learnt %s" % secret)

    def test_pool_ioctls_refused(self):
        self.check_refused(self.run_inside())

    def test_pool_ioctls_refused_with_high_bits(self):
        self.check_refused(self.run_inside("high"))

    def test_reflink_copy_still_works(self):
        # FICLONE, coreutils 9's default for cp: must still make a shared-extent copy.
        out = self.sh_ok("head -c 1048576 /dev/urandom > /root/a && cp --reflink=always /root/a /root/b "
                         "&& cmp /root/a /root/b && echo same; rm -f /root/a /root/b")
        self.assertEqual(out, "same\n")

    def sh_ok(self, script):
        r = self.spaced.sh(self.sid, script)
        self.assertEqual(r["exit_code"], 0, repr(r))
        return r["stdout"]


if __name__ == "__main__":
    unittest.main()
