"""The seccomp allow-list, black box against the real spaced.

Refusals: a static probe (seccomp_probe.c, built here with musl-gcc or gcc -static) is copied
into a sandbox through the files API and makes each dangerous call; every one must be
refused with the answer the policy gives (docs/security.md), and the 32-bit ABIs must be
unreachable. Workloads: a template built FROM debian with `apt-get install` (so apt and dpkg
run under the filter in a build sandbox) must then run python3, node, gcc, git and a pip
install of a local package."""

import os
import subprocess
import unittest

from spaced_harness import ProbeSandboxTestCase, SpacedTestCase, log, probe_output, tar_of, wait_for

EPERM, ENOSYS, EPROTONOSUPPORT, EAFNOSUPPORT = 1, 38, 93, 97
SIGSYS = 31

# What each probe must answer inside a sandbox.
REFUSED = {
    "io_uring_setup": EPERM, "io_uring_enter": EPERM, "io_uring_register": EPERM,
    "bpf": EPERM, "userfaultfd": EPERM, "keyctl": EPERM, "add_key": EPERM, "request_key": EPERM,
    "perf_event_open": EPERM, "kexec_load": EPERM, "kexec_file_load": EPERM,
    "open_by_handle_at": EPERM, "name_to_handle_at": EPERM,
    "mount": EPERM, "umount2": EPERM, "fsopen": EPERM, "fsmount": EPERM, "fsconfig": EPERM,
    "fspick": EPERM, "move_mount": EPERM, "open_tree": EPERM, "mount_setattr": EPERM,
    "pivot_root": EPERM, "setns": EPERM,
    "unshare_newuser": EPERM, "unshare_newns": EPERM, "unshare_newnet": EPERM,
    "clone_newuser": EPERM, "clone_newpid": EPERM, "clone3": ENOSYS,
    "personality_read_implies_exec": ENOSYS, "personality_mmap_page_zero": ENOSYS,
    "socket_vsock": EAFNOSUPPORT, "socket_packet": EAFNOSUPPORT, "socket_alg": EAFNOSUPPORT,
    "socket_key": EAFNOSUPPORT, "socket_bluetooth": EAFNOSUPPORT, "socket_vsock_high_bits": EAFNOSUPPORT,
    "socket_netlink_audit": EPROTONOSUPPORT, "socket_netlink_uevent": EPROTONOSUPPORT,
    "socketpair_vsock": EAFNOSUPPORT, "socketpair_inet": EAFNOSUPPORT,
    "listmount": ENOSYS, "lsm_list_modules": ENOSYS,
}
WORKING = {"socket_unix": "ok", "socket_inet": "ok", "socket_inet6": "ok", "socket_netlink_route": "ok",
           "socketpair_unix": "errno 14", "unshare_files": "ok", "personality_query": "ok"}
# Safe to run as root on the host, to show what the kernel itself would answer.
HOST_BASELINE = ["io_uring_setup", "socket_vsock", "socket_alg", "listmount", "lsm_list_modules", "abi_i386", "abi_x32"]


class SeccompRefusals(ProbeSandboxTestCase):
    probe_name = "seccomp_probe"

    def run_probe(self, *names):
        r = self.spaced.exec(self.sid, cmd=[self.probe_path] + list(names))
        self.assertEqual(r["exit_code"], 0, repr(r))
        return probe_output(r["stdout"])

    def test_dangerous_calls_refused(self):
        got = self.run_probe("all")
        host = probe_output(subprocess.run([self.probe] + HOST_BASELINE, capture_output=True, text=True).stdout)
        log("host answers (no filter, root): %r" % host)
        wrong = {n: got.get(n) for n, e in REFUSED.items() if got.get(n) != "errno %d" % e}
        self.assertEqual(wrong, {}, "calls not refused as the policy says (want %r)" % {n: REFUSED[n] for n in wrong})

    def test_ordinary_calls_still_work(self):
        got = self.run_probe(*WORKING)
        self.assertEqual({n: got.get(n) for n in WORKING}, WORKING)

    def test_32bit_abis_unreachable(self):
        got = self.run_probe("abi_i386", "abi_x32")
        host = probe_output(subprocess.run([self.probe, "abi_i386", "abi_x32"], capture_output=True, text=True).stdout)
        for abi in ("abi_i386", "abi_x32"):
            self.assertNotEqual(got[abi], "ok", "%s reached the kernel from a sandbox" % abi)
            if host[abi] in ("ok", "failed"):
                # The kernel answers this ABI (a real call or ENOSYS): the filter must kill first.
                self.assertEqual(got[abi], "signal %d" % SIGSYS, "%s: host %s, sandbox %s" % (abi, host[abi], got[abi]))
            else:
                log("the kernel itself faults on %s (%s): nothing for the filter to stop" % (abi, host[abi]))
                self.assertTrue(got[abi].startswith("signal"), got[abi])

    def test_vsock_cannot_be_bound(self):
        # The attack of the review: bind a host vsock port from inside. No socket, no bind.
        got = self.run_probe("socket_vsock", "socket_vsock_high_bits", "socketpair_vsock")
        self.assertEqual(set(got.values()), {"errno %d" % EAFNOSUPPORT}, repr(got))


WORKLOAD_SPACEFILE = b"""FROM debian
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
RUN apt-get update -qq \\
 && apt-get install -y -qq --no-install-recommends python3 python3-pip python3-setuptools nodejs gcc libc6-dev git \\
 && apt-get clean && rm -rf /var/lib/apt/lists/*
"""



@unittest.skipIf(os.environ.get("SPACE_SKIP_NETWORK_TESTS"), "network tests disabled (needs the Debian mirror)")
class SeccompWorkloads(SpacedTestCase):
    """Built once for the class: apt-get update and install in a build sandbox under the filter."""

    spaced_kwargs = {"extra_args": ["--pool-size", "8G"]}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            status, d = cls.spaced.request("POST", "/v1/templates?name=workloads:1&wait=true&timeout_s=600",
                                           raw=tar_of({"Spacefile": WORKLOAD_SPACEFILE}),
                                           headers={"Content-Type": "application/x-tar"}, timeout=620)
            assert "operation" in d, (status, d)
            op = wait_for(lambda: (lambda o: o if o["state"] in ("succeeded", "failed") else None)(
                cls.spaced.api("GET", "/v1/operations/" + d["operation"]["id"], expect=200)[1]),
                timeout=600, interval=2, what="the workloads template build")
            d["operation"] = op
            status, body = cls.spaced.request("GET", "/v1/templates/builds/%s/log" % d["operation"]["id"])
            cls.build_log = body.decode(errors="replace") if isinstance(body, bytes) else repr(body)
            assert d["operation"]["state"] == "succeeded", cls.build_log[-3000:]
            cls.sid = cls.spaced.create(template="workloads:1")
        except Exception:
            cls.spaced.cleanup()
            raise

    def sh(self, script, timeout_s=120):
        r = self.spaced.exec(self.sid, shell=script, timeout_s=timeout_s)
        self.assertEqual(r["exit_code"], 0, "%s\nstdout: %s\nstderr: %s" % (script, r["stdout"], r["stderr"]))
        return r["stdout"]

    def test_apt_get_install_ran_in_the_build(self):
        self.assertIn("Setting up gcc", self.build_log)
        self.assertIn("ii  git", self.sh("dpkg -l git"))

    def test_python(self):
        out = self.sh("python3 - <<'EOF'\n"
                      "import asyncio, hashlib, multiprocessing, socket, subprocess, threading, sqlite3\n"
                      "with multiprocessing.Pool(2) as p: print(sum(p.map(abs, [-1, -2])))\n"
                      "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
                      "print(subprocess.run(['echo', 'sub'], capture_output=True, text=True).stdout.strip())\n"
                      "a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode())\n"
                      "s = socket.create_server(('127.0.0.1', 0)); c = socket.create_connection(s.getsockname())\n"
                      "print('tcp', c.fileno() > 0)\n"
                      "print(asyncio.run(asyncio.sleep(0, 'async')))\n"
                      "print(sqlite3.connect(':memory:').execute('select 40+2').fetchone()[0])\n"
                      "print(hashlib.sha256(b'').hexdigest()[:8])\n"
                      "EOF")
        self.assertEqual(out, "3\nthread\nsub\npair\ntcp True\nasync\n42\ne3b0c442\n")

    def test_node(self):
        out = self.sh("node -e \"\n"
                      "const http = require('http'), cp = require('child_process'), fs = require('fs');\n"
                      "fs.writeFileSync('/tmp/n.txt', 'file'); console.log(fs.readFileSync('/tmp/n.txt', 'utf8'));\n"
                      "console.log(cp.execSync('echo child').toString().trim());\n"
                      "const srv = http.createServer((q, r) => r.end('http')).listen(0, '127.0.0.1', () => {\n"
                      "  http.get({port: srv.address().port, host: '127.0.0.1'}, r => {\n"
                      "    let b = ''; r.on('data', d => b += d); r.on('end', () => { console.log(b); srv.close(); });\n"
                      "  });\n"
                      "});\n\"")
        self.assertEqual(out, "file\nchild\nhttp\n")

    def test_gcc_compile_and_run(self):
        out = self.sh("cd /tmp && cat > t.c <<'EOF'\n"
                      "#include <pthread.h>\n#include <stdio.h>\n"
                      "static void *run(void *a) { return a; }\n"
                      "int main(void) { pthread_t t; void *r; pthread_create(&t, 0, run, \"threads\");\n"
                      "  pthread_join(t, &r); printf(\"compiled %s\\n\", (char *)r); return 0; }\n"
                      "EOF\n"
                      "gcc -O2 -pthread -o t t.c && ./t")
        self.assertEqual(out, "compiled threads\n")

    def test_git_init_commit(self):
        out = self.sh("cd /tmp && rm -rf repo && git init -q repo && cd repo && echo hi > f && git add f && "
                      "git -c user.name=t -c user.email=t@example.invalid commit -qm first && "
                      "git log --format=%s && git status --porcelain | wc -l")
        self.assertEqual(out, "first\n0\n")

    def test_pip_install_local_package(self):
        out = self.sh("rm -rf /tmp/pkg && mkdir -p /tmp/pkg/hello && cd /tmp/pkg && "
                      "printf 'def greet():\\n    return \"hello pip\"\\n' > hello/__init__.py && "
                      "printf 'from setuptools import setup\\nsetup(name=\"hello\", version=\"1.0\", packages=[\"hello\"])\\n'"
                      " > setup.py && "
                      "pip install -q --no-index --no-build-isolation --break-system-packages /tmp/pkg && "
                      "cd / && python3 -c 'import hello; print(hello.greet())'", timeout_s=300)
        self.assertEqual(out.strip().splitlines()[-1], "hello pip")


if __name__ == "__main__":
    unittest.main()
