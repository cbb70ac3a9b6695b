"""What a sandbox learns about the host through /proc, black box against the real spaced:
the agent's host path (/proc/1/exe), the host's devices, disks, interrupts, locks, memory
zones and kernel command line, and the host's boot_id. Each test reads from inside and
asserts that the host's value is not there (and that the host has one to leak)."""

import hashlib
import os
import re
import unittest

from spaced_harness import SPACE_AGENT, SpacedTestCase

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


if __name__ == "__main__":
    unittest.main()
