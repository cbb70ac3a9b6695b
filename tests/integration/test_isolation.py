"""Isolation of a busybox sandbox: own pid namespace with space-agent as PID 1, no host
processes or files, unprivileged on the host, blocked syscalls, no capabilities, no
network beyond lo."""

import os
import socket
import threading
import unittest

from spaced_harness import SpacedTestCase, cgroup_pids, proc_status


# CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID NET_BIND_SERVICE SETFCAP (ns_child.c)
KEPT_CAPS = sum(1 << c for c in (0, 1, 3, 4, 5, 6, 7, 10, 31))


class Isolation(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(metadata={"t": "isolation"})
        except Exception:
            cls.spaced.cleanup()
            raise

    def sh(self, script, **kw):
        return self.spaced.sh(self.sid, script, **kw)

    def test_pid1_is_agent(self):
        r = self.sh("cat /proc/1/cmdline | tr '\\0' ' '")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertTrue(r["stdout"].startswith("space-agent"), r)
        r = self.sh("echo $$")
        self.assertLess(int(r["stdout"]), 100, "the command's pid is not from a fresh pid namespace")

    def test_no_host_processes(self):
        r = self.sh("ps -o pid,comm")
        lines = r["stdout"].strip().splitlines()[1:]
        self.assertLessEqual(len(lines), 5, "too many processes visible: %r" % r["stdout"])
        comms = [line.split(None, 1)[1] for line in lines]
        for host_only in ("spaced", "systemd", "init", "sshd", "python3", "kthreadd"):
            self.assertNotIn(host_only, comms, r["stdout"])
        # Host pids are not reachable: our own (python) pid does not exist there, or is not us.
        r = self.sh("cat /proc/%d/cmdline 2>/dev/null | tr '\\0' ' '" % os.getpid())
        self.assertNotIn("python", r["stdout"])
        # kill -0 of a typical host pid range fails
        r = self.sh("n=0; for p in $(seq 2 400); do [ -d /proc/$p ] && n=$((n+1)); done; echo $n")
        self.assertLessEqual(int(r["stdout"]), 5)

    def test_host_files_invisible(self):
        marker = os.path.join(self.spaced.tmp, "host-marker-%d" % os.getpid())
        with open(marker, "w") as f:
            f.write("secret")
        self.addCleanup(os.unlink, marker)
        for path in (marker, self.spaced.state_dir, os.path.join(self.spaced.state_dir, "admin.key"),
                     os.path.join(self.spaced.state_dir, "state.db")):
            r = self.sh("test -e '%s' && echo visible || echo absent" % path)
            self.assertEqual(r["stdout"], "absent\n", "host path %s is visible inside" % path)
        r = self.sh("grep -r secret /tmp /root 2>/dev/null | head -1")
        self.assertEqual(r["stdout"], "")
        # /etc/hostname differs (or is absent); the UTS hostname is not the host's
        try:
            with open("/etc/hostname") as f:
                host_hostname_file = f.read()
        except OSError:
            host_hostname_file = None
        r = self.sh("cat /etc/hostname 2>/dev/null")
        self.assertNotEqual(r["stdout"], host_hostname_file)
        r = self.sh("hostname")
        self.assertNotEqual(r["stdout"].strip(), socket.gethostname(), "sandbox sees the host's hostname")
        # The host's root filesystem is not mounted anywhere inside
        r = self.sh("cat /proc/self/mountinfo")
        self.assertNotIn(self.spaced.tmp, r["stdout"])
        # Whatever /etc/passwd the sandbox has, it is not the host's
        with open("/etc/passwd") as f:
            host_passwd = f.read()
        r = self.sh("cat /etc/passwd 2>/dev/null")
        self.assertNotEqual(r["stdout"], host_passwd)

    def test_not_root_on_host(self):
        self.sh("sleep 30 </dev/null >/dev/null 2>&1 &")
        pids = cgroup_pids(self.sid)
        self.assertGreaterEqual(len(pids), 2, "expected the agent and the sleep in the cgroup: %r" % pids)
        for pid in pids:
            try:
                st = proc_status(pid)
            except OSError:
                continue
            uids = [int(x) for x in st["Uid"].split()]
            gids = [int(x) for x in st["Gid"].split()]
            self.assertTrue(all(u >= 100000 for u in uids), "pid %d runs as host uid %r" % (pid, uids))
            self.assertTrue(all(g >= 100000 for g in gids), "pid %d runs as host gid %r" % (pid, gids))
            # Whatever it holds is held in the sandbox's own user namespace, and no more than
            # the kept set.
            self.assertEqual(int(st["CapEff"], 16) & ~KEPT_CAPS, 0, "pid %d has capabilities %s" % (pid, st["CapEff"]))
            self.assertNotEqual(os.stat("/proc/%d/ns/user" % pid).st_ino, os.stat("/proc/self/ns/user").st_ino,
                                "pid %d is in the host's user namespace" % pid)
            self.assertEqual(st.get("NoNewPrivs"), "1", "pid %d lacks no_new_privs" % pid)
            self.assertEqual(st.get("Seccomp"), "2", "pid %d is not under a seccomp filter" % pid)
        # The brief asks for >= 1000000 (a high, unshared uid range); report the actual value too.
        uid = int(proc_status(pids[0])["Uid"].split()[0])
        self.assertGreaterEqual(uid, 1000000, "sandbox uid on the host is %d" % uid)
        # Inside it looks like root, mapped
        r = self.sh("id -u; cat /proc/self/uid_map")
        lines = r["stdout"].split("\n")
        self.assertEqual(lines[0], "0")
        inside, outside, count = (int(x) for x in lines[1].split())
        self.assertEqual(inside, 0)
        self.assertGreaterEqual(outside, 100000)
        self.assertLessEqual(count, 65536)
        self.sh("kill $(pidof sleep) 2>/dev/null; true")

    def test_root_keeps_only_the_kept_capabilities(self):
        r = self.sh("grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
        caps = dict((k, int(v, 16)) for k, v in (line.split(":\t") for line in r["stdout"].splitlines()))
        self.assertEqual(set(caps), {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}, r)
        self.assertEqual(caps["CapBnd"], KEPT_CAPS, r)
        self.assertEqual(caps["CapPrm"], KEPT_CAPS, r)
        self.assertEqual(caps["CapEff"], KEPT_CAPS, r)
        self.assertEqual(caps["CapInh"], 0, r)
        self.assertEqual(caps["CapAmb"], 0, r)
        # They work inside (chown of a file to another user), and mean nothing outside:
        # the host ids stay unprivileged (test_not_root_on_host).
        r = self.sh("touch /tmp/owned && chown 1000:1000 /tmp/owned && stat -c %u:%g /tmp/owned")
        self.assertEqual(r["stdout"].strip(), "1000:1000", r)
        # Mounting stays refused: CAP_SYS_ADMIN is gone and seccomp blocks mount(2).
        self.assertBlocked("mkdir -p /tmp/m && mount -t tmpfs none /tmp/m")
        r = self.sh("grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status")
        self.assertIn("NoNewPrivs:\t1", r["stdout"])
        self.assertIn("Seccomp:\t2", r["stdout"])

    def assertBlocked(self, script, *needles, check_rc=True):
        r = self.sh(script)
        if check_rc:
            self.assertNotEqual(r["exit_code"], 0, "%r succeeded: %r" % (script, r))
        text = r["stdout"] + r["stderr"]
        if needles:
            self.assertTrue(any(n.lower() in text.lower() for n in needles),
                            "%r: expected one of %r in %r" % (script, needles, text))
        return r

    def test_blocked_syscalls(self):
        self.assertBlocked("mount -t tmpfs x /mnt", "permission denied", "not permitted")
        r = self.sh("grep -c ' /mnt ' /proc/self/mountinfo")
        self.assertEqual(r["stdout"].strip(), "0", "tmpfs got mounted on /mnt")
        self.assertBlocked("unshare -U true", "Operation not permitted")
        self.assertBlocked("unshare -m true", "Operation not permitted")
        self.assertBlocked("unshare -n true", "Operation not permitted")
        # busybox date prints the error but exits 0: check the message only
        self.assertBlocked("date -s '2001-01-01 00:00:00' >/dev/null", "not permitted", check_rc=False)
        self.assertBlocked("echo > /tmp/fstab; swapoff /tmp/fstab", "not permitted", "invalid argument")
        self.assertBlocked("hostname evil", "not permitted")
        self.assertBlocked("chroot / true", "not permitted")
        self.assertBlocked("reboot -f", "not permitted")
        self.assertBlocked("mknod /tmp/sda b 8 0", "not permitted")
        self.assertBlocked("insmod /tmp/x.ko 2>&1 || exit 1", "not permitted", "no such file", "can't")
        self.assertBlocked("nsenter -t 1 -m true", "not permitted")
        self.assertBlocked("umount /proc", "not permitted", "permission denied")
        # The sandbox is still healthy after all of that, and the clock did not move.
        r = self.sh("date +%Y")
        self.assertGreater(int(r["stdout"]), 2001)
        r = self.sh("hostname")
        self.assertNotEqual(r["stdout"].strip(), "evil")

    def test_no_network_beyond_lo(self):
        r = self.sh("ip -o link")
        links = [line.split(":")[1].strip() for line in r["stdout"].strip().splitlines()]
        self.assertEqual(links, ["lo"], r["stdout"])
        r = self.sh("ip -o -4 addr")
        addrs = [line.split()[3] for line in r["stdout"].strip().splitlines()]
        self.assertEqual(addrs, ["127.0.0.1/8"], r["stdout"])
        r = self.sh("ip route")
        self.assertNotIn("default", r["stdout"])
        r = self.sh("cat /proc/net/dev")
        devs = [line.split(":")[0].strip() for line in r["stdout"].splitlines()[2:]]
        self.assertEqual(devs, ["lo"])

    def test_cannot_reach_host_loopback(self):
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(5)
        srv.settimeout(0.2)
        port = srv.getsockname()[1]
        accepted = []
        stop = threading.Event()

        def accept_loop():
            while not stop.is_set():
                try:
                    c, _ = srv.accept()
                    accepted.append(c)
                    c.sendall(b"HTTP/1.0 200 OK\r\n\r\nreached\n")
                    c.close()
                except socket.timeout:
                    continue
                except OSError:
                    break

        t = threading.Thread(target=accept_loop, daemon=True)
        t.start()
        try:
            r = self.sh("wget -q -T 3 -O - http://127.0.0.1:%d/ 2>&1; echo rc=$?" % port, timeout_s=30)
            self.assertNotIn("reached", r["stdout"])
            self.assertNotIn("rc=0", r["stdout"])
            r = self.sh("echo hi | nc -w 2 127.0.0.1 %d; echo rc=$?" % port, timeout_s=30)
            self.assertNotIn("reached", r["stdout"])
            # spaced's own port is not reachable either
            r = self.sh("wget -q -T 3 -O - http://127.0.0.1:%d/v1/health 2>&1; echo rc=$?" % self.spaced.port, timeout_s=30)
            self.assertNotIn("ok", r["stdout"].replace("rc=", ""))
            # Nor any other address
            r = self.sh("wget -q -T 3 -O - http://10.0.2.2:%d/ 2>&1; echo rc=$?" % port, timeout_s=30)
            self.assertNotIn("rc=0", r["stdout"])
            self.assertEqual(accepted, [], "a connection from inside the sandbox reached the host")
        finally:
            stop.set()
            t.join(5)
            srv.close()

    def test_sandboxes_do_not_see_each_other(self):
        other = self.new_sandbox(metadata={"t": "isolation-2"})
        self.spaced.sh(other, "echo other-secret > /root/mine; sleep 40 </dev/null >/dev/null 2>&1 &")
        r = self.sh("test -e /root/mine && echo seen || echo unseen; ps -o comm | grep -c sleep")
        lines = r["stdout"].split()
        self.assertEqual(lines[0], "unseen")
        self.assertEqual(lines[1], "0", "sandbox sees the other sandbox's processes")
        # The rootfs of one is not the other's: writing in one leaves the other alone
        self.sh("echo mine > /root/mine")
        self.assertEqual(self.spaced.sh(other, "cat /root/mine")["stdout"], "other-secret\n")
        # ...and the template is untouched
        third = self.new_sandbox()
        self.assertEqual(self.spaced.sh(third, "test -e /root/mine && echo seen || echo unseen")["stdout"], "unseen\n")

    def test_devices_minimal(self):
        r = self.sh("ls /dev")
        names = set(r["stdout"].split())
        for dev in ("null", "zero", "urandom"):
            self.assertIn(dev, names)
        for forbidden in ("sda", "vda", "loop0", "mem", "kmem", "kvm", "port"):
            self.assertNotIn(forbidden, names, "host device /dev/%s exposed" % forbidden)
        self.assertEqual(self.sh("head -c 3 /dev/zero | wc -c")["stdout"].strip(), "3")
        r = self.sh("echo x > /dev/null && echo ok")
        self.assertEqual(r["stdout"], "ok\n")

    def test_proc_sys_not_writable(self):
        r = self.sh("echo 1 > /proc/sys/kernel/sysrq 2>&1; echo rc=$?")
        self.assertNotIn("rc=0", r["stdout"])
        r = self.sh("echo c > /proc/sysrq-trigger 2>&1; echo rc=$?")
        self.assertNotIn("rc=0", r["stdout"])
        # The sandbox survives and the host is fine
        self.assertEqual(self.sh("echo alive")["stdout"], "alive\n")


if __name__ == "__main__":
    unittest.main()
