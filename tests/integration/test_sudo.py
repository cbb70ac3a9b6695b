"""SUDO on (docs/isolation.md): in a sandbox of a template built with `SUDO on`, a setuid-root
binary makes its user root inside the sandbox, and that root is the sandbox's root only: no
mounts, no namespaces, no host pids or files, an unprivileged host uid, the seccomp filter
still there. In a template without it (the default) a setuid binary gains nothing.

The setuid binary is setuid_probe.c (static, built here), a mini sudo: the sandbox's root
installs it setuid root in /bin, and a plain copy drops to uid 65534 and execs it."""

import os

from spaced_harness import SpacedTestCase, build_static_probe, cgroup_pids, proc_status, tar_of, wait_for
import shutil
import tempfile

NOBODY = 65534


class Sudo(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="setuid-probe-")
        try:
            cls.probe = build_static_probe("setuid_probe", cls.tmp)
            status, body = cls.spaced.request("POST", "/v1/templates?name=sudo-busybox&wait=true&timeout_s=300",
                                              raw=tar_of({"Spacefile": b"FROM busybox\nSUDO on\n"}),
                                              headers={"Content-Type": "application/x-tar"}, timeout=320)
            assert status == 200, (status, body)
            cls.sudo_sid = cls.spaced.create(template="sudo-busybox")
            cls.plain_sid = cls.spaced.create()
            for sid in (cls.sudo_sid, cls.plain_sid):
                cls.install_probe(sid)
        except Exception:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            cls.spaced.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def install_probe(cls, sid):
        with open(cls.probe, "rb") as f:
            data = f.read()
        cls.spaced.put_file(sid, "/bin/drop_to", data, mode="0755")
        cls.spaced.put_file(sid, "/bin/suid_probe", data, mode="0755")
        r = cls.spaced.sh(sid, "chown 0:0 /bin/suid_probe && chmod 4755 /bin/suid_probe && ls -l /bin/suid_probe")
        assert r["exit_code"] == 0 and r["stdout"].startswith("-rwsr-xr-x"), r

    def as_nobody(self, sid, *args):
        """The setuid probe run by uid 65534 (what `sudo` is to the sandbox's user)."""
        return self.spaced.exec(sid, cmd=["/bin/drop_to", "as", str(NOBODY), "/bin/suid_probe"] + list(args))

    def sudo_sh(self, script):
        return self.as_nobody(self.sudo_sid, "root", script)

    # ---- the default: setuid gains nothing

    def test_plain_template_setuid_gains_nothing(self):
        r = self.as_nobody(self.plain_sid, "ids")
        self.assertEqual(r["stdout"], "uid %d euid %d\n" % (NOBODY, NOBODY), r)
        r = self.as_nobody(self.plain_sid, "root", "id -u")
        self.assertEqual(r["exit_code"], 1, r)
        self.assertEqual(r["stdout"], "setresuid errno 1\n", r)
        r = self.spaced.sh(self.plain_sid, "grep -E '^NoNewPrivs:' /proc/self/status; grep ' / ' /proc/self/mountinfo")
        self.assertIn("NoNewPrivs:\t1", r["stdout"])
        self.assertIn("nosuid", r["stdout"].splitlines()[1])

    # ---- SUDO on: root inside, nothing more

    def test_setuid_makes_the_user_root_inside(self):
        r = self.as_nobody(self.sudo_sid, "ids")
        self.assertEqual(r["stdout"], "uid %d euid 0\n" % NOBODY, r)
        r = self.sudo_sh("id -u; grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status")
        self.assertEqual(r["exit_code"], 0, r)
        lines = r["stdout"].splitlines()
        self.assertEqual(lines[0], "0", r)
        self.assertIn("NoNewPrivs:\t0", lines)
        self.assertIn("Seccomp:\t2", lines, "the filter must hold without no_new_privs")
        # The capabilities root gets are the sandbox's kept set, no more.
        cap_eff = int([x for x in lines if x.startswith("CapEff")][0].split()[1], 16)
        self.assertEqual(cap_eff, sum(1 << c for c in (0, 1, 3, 4, 5, 6, 7, 10, 31)), r)

    def test_template_records_sudo(self):
        _, t = self.spaced.api("GET", "/v1/templates/sudo-busybox", expect=200)
        cfg = t.get("template", t)["environment"]["config"]
        self.assertIs(cfg.get("sudo"), True, t)
        _, t = self.spaced.api("GET", "/v1/templates/busybox", expect=200)
        self.assertNotIn("sudo", t.get("template", t)["environment"].get("config", {}), t)

    def test_sudo_root_cannot_mount_or_make_namespaces(self):
        for script in ("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m", "mount -o remount,rw /proc/sys",
                       "unshare -U true", "unshare -m true", "nsenter -t 1 -m true", "chroot / true",
                       "mknod /tmp/sda b 8 0", "umount /proc"):
            r = self.sudo_sh(script)
            self.assertNotEqual(r["exit_code"], 0, "%r succeeded as sudo root: %r" % (script, r))
        r = self.sudo_sh("grep -c ' /tmp/m ' /proc/self/mountinfo")
        self.assertEqual(r["stdout"].strip(), "0", r)

    def test_sudo_root_sees_no_host_pids_or_files(self):
        r = self.sudo_sh("n=0; for p in $(seq 2 400); do [ -d /proc/$p ] && n=$((n+1)); done; echo $n")
        self.assertLessEqual(int(r["stdout"]), 5, r)
        r = self.sudo_sh("cat /proc/%d/cmdline 2>/dev/null | tr '\\0' ' '" % os.getpid())
        self.assertNotIn("python", r["stdout"])
        marker = os.path.join(self.spaced.tmp, "host-marker-%d" % os.getpid())
        with open(marker, "w") as f:
            f.write("secret")
        self.addCleanup(os.unlink, marker)
        for path in (marker, self.spaced.state_dir, os.path.join(self.spaced.state_dir, "admin.key")):
            r = self.sudo_sh("test -e '%s' && echo visible || echo absent" % path)
            self.assertEqual(r["stdout"], "absent\n", "host path %s is visible to sudo root" % path)
        # The host's files cannot be written: /proc/sys is read-only, and the sandbox's /
        # is its own subvolume (what root writes there lands in it, not on the host).
        r = self.sudo_sh("echo 1 > /proc/sys/kernel/sysrq")
        self.assertNotEqual(r["exit_code"], 0, r)
        r = self.sudo_sh("echo pwned > /etc/sudo-root-was-here && echo written")
        self.assertEqual(r["stdout"], "written\n", r)
        self.assertFalse(os.path.exists("/etc/sudo-root-was-here"))
        rootfs = self.spaced.subvolume(self.sudo_sid)
        st = os.stat(os.path.join(rootfs, "etc", "sudo-root-was-here"))
        self.assertEqual(st.st_mode & 0o6000, 0)

    def test_sudo_root_is_unprivileged_on_the_host(self):
        self.sudo_sh("sleep 30 </dev/null >/dev/null 2>&1 &")
        self.addCleanup(self.spaced.sh, self.sudo_sid, "kill $(pidof sleep) 2>/dev/null; true")

        def sleeper():
            for pid in cgroup_pids(self.sudo_sid):
                try:
                    with open("/proc/%d/comm" % pid) as f:
                        if f.read().strip() == "sleep":
                            return pid
                except OSError:
                    pass
            return None
        pid = wait_for(sleeper, what="the sudo root's sleep")
        st = proc_status(pid)
        uids = [int(x) for x in st["Uid"].split()]
        self.assertTrue(all(u >= 1000000 for u in uids), "sudo root runs as host uid %r" % uids)
        self.assertEqual(st["Seccomp"], "2", st)
        self.assertNotEqual(os.stat("/proc/%d/ns/user" % pid).st_ino, os.stat("/proc/self/ns/user").st_ino)

    def test_spacefile_sudo_takes_on_or_off(self):
        status, body = self.spaced.request("POST", "/v1/templates?name=bad-sudo&wait=true&timeout_s=60",
                                           raw=tar_of({"Spacefile": b"FROM busybox\nSUDO maybe\n"}),
                                           headers={"Content-Type": "application/x-tar"})
        self.assertEqual(status, 400, body)
        self.assertIn("SUDO takes on or off", body["error"]["message"])


if __name__ == "__main__":
    import unittest
    unittest.main()
