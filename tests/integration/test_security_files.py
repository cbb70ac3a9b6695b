"""Attacks through files that cross the sandbox boundary, against a real spaced: a sandbox
that hands `space cp` a setuid-root file, a signed E2B upload URL used to write paths it
was not signed for, and a state directory left readable by others. Each test performs the
attack and fails if it works."""

import base64
import hashlib
import http.client
import json
import os
import stat
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from spaced_harness import FreshSpacedTestCase, SpacedTestCase, Spaced, free_port, require_root


class CpSetuid(SpacedTestCase):
    """`space cp` out of a sandbox never makes a setuid/setgid/sticky file on the host."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.spaced.create()
        r = cls.spaced.sh(cls.sid, "cp /bin/busybox /tmp/suid && chmod 6755 /tmp/suid && chmod 1777 /tmp && "
                                   "stat -c %a /tmp/suid")
        assert r["exit_code"] == 0 and r["stdout"].strip() == "6755", r

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spit-cp-", dir="/tmp")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])

    def cp_out(self, *flags):
        dst = os.path.join(self.dir, "got-%d" % len(os.listdir(self.dir)))
        r = self.spaced.cli("cp", *flags, "%s:/tmp/suid" % self.sid, dst)
        self.assertEqual(r.returncode, 0, r.stderr)
        return os.stat(dst)

    def test_sandbox_offers_the_setuid_mode(self):
        """The attack is real: spaced relays the sandbox's mode, setuid bits included."""
        _, s = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % self.sid, {}, expect=201)
        conn = self.spaced.connection(timeout=30)
        conn.request("GET", "/v1/sandboxes/%s/files?path=/tmp/suid" % self.sid,
                     headers={"Authorization": "Bearer " + s["attach_token"]})
        resp = conn.getresponse()
        resp.read()
        conn.close()
        self.assertEqual(resp.status, 200)
        self.assertEqual(int(resp.getheader("X-Space-File-Mode"), 8), 0o6755)

    def test_without_p_a_plain_new_file(self):
        old = os.umask(0o022)
        try:
            st = self.cp_out()
        finally:
            os.umask(old)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o644, oct(st.st_mode))
        self.assertEqual((st.st_uid, st.st_gid), (os.geteuid(), os.getegid()))

    def test_with_p_permission_bits_only(self):
        for flag in ("-p", "--preserve"):
            st = self.cp_out(flag)
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o755, "%s: %s" % (flag, oct(st.st_mode)))
            self.assertFalse(st.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX))
            self.assertEqual((st.st_uid, st.st_gid), (os.geteuid(), os.getegid()))

    def test_preserve_is_for_downloads(self):
        src = os.path.join(self.dir, "up")
        with open(src, "w") as f:
            f.write("x")
        r = self.spaced.cli("cp", "--preserve", src, "%s:/tmp/up" % self.sid)
        self.assertEqual(r.returncode, 2, r.stderr)


def file_signature(path, op, user, token, expiration=None):
    raw = "%s:%s:%s:%s" % (path, op, user, token) + (":%s" % expiration if expiration else "")
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")


def multipart(parts, boundary="spitboundary"):
    body = b""
    for name, data in parts:
        body += ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                 "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name)).encode() + data + b"\r\n"
    body += ("--%s--\r\n" % boundary).encode()
    return body, "multipart/form-data; boundary=" + boundary


class SignedUpload(SpacedTestCase):
    """A signed E2B upload URL writes its signed path and nothing else."""

    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()
        made = cls.spaced.cli("--json", "key", "create", "--e2b", "security-files")
        assert made.returncode == 0, made.stderr
        key = json.loads(made.stdout)["secret"]
        status, data = cls.e2b("POST", "/sandboxes", json.dumps({"templateID": "base"}).encode(),
                               {"X-API-KEY": key, "Content-Type": "application/json"})
        assert status == 201, (status, data)
        sb = json.loads(data)
        cls.sid, cls.token = sb["sandboxID"], sb["envdAccessToken"]
        cls.spaced.known_ids.add(cls.sid)

    @classmethod
    def e2b(cls, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", cls.e2b_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def exists(self, *paths):
        r = self.spaced.sh(self.sid, " ".join("if [ -e %s ]; then echo %s; fi;" % (p, p) for p in paths))
        return r["stdout"].split()

    def signed_post(self, path, body, ctype, headers=None, user=""):
        q = {"signature": file_signature(path, "write", user, self.token)}
        if path:
            q["path"] = path
        if user:
            q["username"] = user
        h = {"Content-Type": ctype}
        h.update(headers or {})
        return self.e2b("POST", "/files?" + urllib.parse.urlencode(q), body, h)

    def test_one_signed_part_is_written(self):
        body, ct = multipart([("a.txt", b"signed")])
        status, data = self.signed_post("/tmp/ok-one", body, ct)
        self.assertEqual(status, 200, data)
        self.assertEqual(self.exists("/tmp/ok-one"), ["/tmp/ok-one"])

    def test_second_part_is_refused_and_nothing_written(self):
        body, ct = multipart([("a.txt", b"first"), ("/tmp/evil-two", b"evil"), ("/home/user/.bashrc", b"evil")])
        status, data = self.signed_post("/tmp/first-two", body, ct)
        self.assertEqual(status, 403, data)
        self.assertEqual(json.loads(data)["code"], 403)
        self.assertEqual(self.exists("/tmp/first-two", "/tmp/evil-two", "/tmp/a.txt"), [])

    def test_signature_without_path_writes_nothing(self):
        body, ct = multipart([("/tmp/evil-nopath", b"evil")])
        status, data = self.signed_post("", body, ct)
        self.assertEqual(status, 403, data)
        self.assertEqual(self.exists("/tmp/evil-nopath"), [])

    def test_unsigned_user_header_is_ignored(self):
        """The signature covers the username; an Authorization header cannot make it root."""
        status, data = self.signed_post("/tmp/whose", b"x", "application/octet-stream",
                                        headers={"Authorization": "Basic " + base64.b64encode(b"root:").decode()})
        self.assertEqual(status, 200, data)
        r = self.spaced.sh(self.sid, "stat -c %U /tmp/whose")
        self.assertEqual(r["stdout"].strip(), "user")

    def test_token_upload_still_writes_many(self):
        """With the access token (not a signed URL) multi-file writes work as before."""
        body, ct = multipart([("/tmp/many-1", b"1"), ("/tmp/many-2", b"2")])
        status, data = self.e2b("POST", "/files", body, {"Content-Type": ct, "X-Access-Token": self.token,
                                                         "E2b-Sandbox-Id": self.sid})
        self.assertEqual(status, 200, data)
        self.assertEqual(self.exists("/tmp/many-1", "/tmp/many-2"), ["/tmp/many-1", "/tmp/many-2"])


class StateDir(unittest.TestCase):
    """spaced makes its state directory private at every start, and refuses one it cannot."""

    @classmethod
    def setUpClass(cls):
        require_root()

    def new_spaced(self, **kw):
        sp = Spaced(**kw)
        self.addCleanup(sp.cleanup)
        return sp

    def refused(self, sp, *words):
        r = subprocess.run(sp.args(), capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertNotEqual(r.returncode, 0, "spaced started on an insecure state directory")
        for w in words:
            self.assertIn(w, r.stderr.decode(), r.stderr)
        return r

    def test_modes_are_fixed_at_start(self):
        sp = self.new_spaced(extra_args=["--e2b-listen", "127.0.0.1:%d" % free_port()])
        sd = sp.state_dir
        os.makedirs(os.path.join(sd, "logs"))
        os.makedirs(os.path.join(sd, "logs", "sub"))
        os.makedirs(os.path.join(sd, "command-logs"))
        for rel, mode in (("state.db", 0o644), ("logs/old.log", 0o644), ("logs/sub/deep.log", 0o604)):
            with open(os.path.join(sd, rel), "w"):
                pass
            os.chmod(os.path.join(sd, rel), mode)
        for d in (sd, os.path.join(sd, "logs"), os.path.join(sd, "command-logs"), os.path.join(sd, "logs", "sub")):
            os.chmod(d, 0o755)
        sp.start()
        self.assertEqual(stat.S_IMODE(os.stat(sd).st_mode), 0o700)
        for name in ("state.db", "state.db-wal", "state.db-shm", "admin.key", "instance", "e2b-token.key", "spaced.lock",
                     "logs/old.log", "logs/sub/deep.log"):
            p = os.path.join(sd, name)
            self.assertTrue(os.path.exists(p), name)
            self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o600, "%s is %o" % (name, os.stat(p).st_mode))
        for name in ("logs", "run", "command-logs", "logs/sub"):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(sd, name)).st_mode), 0o700, name)
        # Nothing at the top of the state directory is open to others.
        for e in os.scandir(sd):
            st = os.lstat(e.path)
            if e.name != "pool":
                self.assertEqual(st.st_mode & 0o077, 0, "%s is %o" % (e.name, st.st_mode))
        # And at the next start too, after someone opened them up again.
        os.chmod(os.path.join(sd, "state.db"), 0o644)
        sp.stop()
        os.chmod(sd, 0o755)
        sp.start()
        self.assertEqual(stat.S_IMODE(os.stat(sd).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(sd, "state.db")).st_mode), 0o600)

    def test_foreign_owner_is_refused(self):
        sp = self.new_spaced()
        os.makedirs(sp.state_dir, mode=0o700)
        os.chown(sp.state_dir, 4321, 4321)
        self.refused(sp, "belongs to uid 4321")
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "state.db")))

    def test_writable_by_others_is_refused(self):
        sp = self.new_spaced()
        os.makedirs(sp.state_dir)
        os.chmod(sp.state_dir, 0o777)
        self.refused(sp, "writable by others")

    def test_swappable_path_component_is_refused(self):
        """A directory on the way that others can write lets them swap in a symlink."""
        sp = self.new_spaced()
        open_dir = os.path.join(sp.tmp, "open")
        os.makedirs(os.path.join(sp.tmp, "real"))
        os.makedirs(open_dir)
        os.chmod(open_dir, 0o777)
        os.symlink(os.path.join(sp.tmp, "real"), os.path.join(open_dir, "link"))
        sp.state_dir = os.path.join(open_dir, "link", "s")
        self.refused(sp, "writable by others")
        self.assertFalse(os.path.exists(os.path.join(sp.tmp, "real", "s", "state.db")))

    def test_symlinked_database_is_refused(self):
        sp = self.new_spaced()
        os.makedirs(sp.state_dir, mode=0o700)
        os.symlink("/etc/hostname", os.path.join(sp.state_dir, "state.db"))
        self.refused(sp, "symlink")


if __name__ == "__main__":
    unittest.main()
