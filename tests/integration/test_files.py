"""Files in a sandbox (data plane): streamed download and upload with checksums, modes and
owners, stat, list, mkdir -p, move, remove, watch; and what must be refused: path escapes
(a symlink to /, /../../, absolute symlinks through symlinked dirs, /proc magic links),
non-regular files, bad input, wrong state, missing or foreign tokens."""

import hashlib
import json
import os
import socket
import threading
import time
import unittest
import urllib.parse

from spaced_harness import FreshSpacedTestCase, SpacedTestCase, cgroup_dirs, wait_for

MIB = 1024 * 1024


def q(**params):
    return urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})


def sandbox_memory_bytes(sandbox_id):
    """The sandbox's memory cgroup usage (v1 memory.usage_in_bytes or v2 memory.current), or None."""
    for d in cgroup_dirs(sandbox_id):
        for name in ("memory.usage_in_bytes", "memory.current"):
            try:
                with open(os.path.join(d, name)) as f:
                    return int(f.read())
            except OSError:
                continue
    return None


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Files(SpacedTestCase):
    runtime = {}  # {"runtime": "gvisor"} in test_gvisor.py's FilesOnGvisor

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(**cls.runtime)
            cls.token = cls.attach(cls.sid)
        except Exception:
            cls.spaced.cleanup()
            raise

    @classmethod
    def attach(cls, sid):
        """An attach token for sid (POST /v1/sandboxes/{id}/sessions with the control key)."""
        status, data = cls.spaced.request("POST", "/v1/sandboxes/%s/sessions" % sid, {})
        if status == 404 and isinstance(data, dict) and "no route" in data["error"]["message"]:
            return cls.spaced.key  # sessions not built yet: data routes take the control key
        assert status in (200, 201), (status, data)
        return data["attach_token"]

    # ---- helpers

    def files(self, method, leaf, params, body=None, raw=None, token=None, sid=None, headers=None):
        path = "/v1/sandboxes/%s/files%s?%s" % (sid or self.sid, leaf, params)
        return self.spaced.request(method, path, body=body, raw=raw, key=token or self.token, headers=headers)

    def put(self, path, data, expect=201, **params):
        status, body = self.files("PUT", "", q(path=path, **params), raw=data,
                                  headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(status, expect, body)
        return body

    def get_bytes(self, path, **params):
        conn = self.spaced.connection(timeout=60)
        conn.request("GET", "/v1/sandboxes/%s/files?%s" % (self.sid, q(path=path, **params)),
                     headers={"Authorization": "Bearer " + self.token})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data, dict(resp.getheaders())

    def stat(self, path, expect=200, **params):
        status, body = self.files("GET", "/stat", q(path=path, **params))
        self.assertEqual(status, expect, body)
        return body

    def sh(self, script):
        r = self.spaced.exec(self.sid, shell=script)
        self.assertEqual(r["exit_code"], 0, r)
        return r["stdout"]

    # ---- transfers

    def test_small_round_trip_and_stat(self):
        e = self.put("/root/hello.txt", b"hello files\n")
        self.assertEqual(e["path"], "/root/hello.txt")
        self.assertEqual(e["name"], "hello.txt")
        self.assertEqual(e["type"], "file")
        self.assertEqual(e["size"], 12)
        self.assertEqual(e["mode"], "0644")
        self.assertEqual((e["uid"], e["gid"], e["owner"], e["group"]), (0, 0, "root", "root"))
        self.assertRegex(e["modified_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(self.sh("cat /root/hello.txt"), "hello files\n")
        status, data, headers = self.get_bytes("/root/hello.txt")
        self.assertEqual((status, data), (200, b"hello files\n"))
        self.assertEqual(headers.get("Content-Type"), "application/octet-stream")
        self.assertEqual(headers.get("Content-Length"), "12")
        self.assertEqual(headers.get("X-Space-File-Mode"), "0644")
        self.assertEqual(self.stat("/root/hello.txt"), e)
        # Replacing keeps one file, with the new content; an empty body makes an empty file.
        self.put("/root/hello.txt", b"second")
        self.assertEqual(self.get_bytes("/root/hello.txt")[1], b"second")
        self.assertEqual(self.put("/root/empty", b"")["size"], 0)
        self.assertEqual(self.get_bytes("/root/empty")[:2], (200, b""))

    def test_large_round_trip_streamed(self):
        size = 160 * MIB
        block = hashlib.sha256(b"seed").digest() * 2048  # 64 KiB, varied
        digest = hashlib.sha256()
        pid = self.spaced.proc.pid
        peak = [rss_kib(pid)]
        base = peak[0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kib(pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            conn = self.spaced.connection(timeout=300)
            conn.putrequest("PUT", "/v1/sandboxes/%s/files?%s" % (self.sid, q(path="/big/file.bin", parents="true")))
            conn.putheader("Authorization", "Bearer " + self.token)
            conn.putheader("Content-Length", str(size))
            conn.endheaders()
            sent = 0
            n = 0
            while sent < size:
                chunk = block[n % 7:] + block[:n % 7]  # each chunk differs a little
                chunk = chunk[:min(len(chunk), size - sent)]
                conn.send(chunk)
                digest.update(chunk)
                sent += len(chunk)
                n += 1
            resp = conn.getresponse()
            body = json.loads(resp.read())
            conn.close()
            self.assertEqual(resp.status, 201, body)
            self.assertEqual(body["size"], size)
            self.assertEqual(self.sh("sha256sum /big/file.bin").split()[0], digest.hexdigest())

            conn = self.spaced.connection(timeout=300)
            conn.request("GET", "/v1/sandboxes/%s/files?%s" % (self.sid, q(path="/big/file.bin")),
                         headers={"Authorization": "Bearer " + self.token})
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertEqual(resp.getheader("Content-Length"), str(size))
            down = hashlib.sha256()
            got = 0
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                down.update(chunk)
                got += len(chunk)
            conn.close()
        finally:
            stop.set()
            sampler.join()
        self.assertEqual(got, size)
        self.assertEqual(down.hexdigest(), digest.hexdigest())
        grew = (peak[0] - base) * 1024
        self.assertLess(grew, 48 * MIB, "spaced RSS grew by %d MiB moving a %d MiB file" % (grew // MIB, size // MIB))
        self.sh("rm -f /big/file.bin")

    def test_concurrent_uploads_replace_atomically(self):
        self.sh("rm -rf /race && mkdir /race")
        bodies = [bytes([65 + i]) * (2 * MIB + i) for i in range(4)]
        results = []

        def upload(body):
            results.append(self.files("PUT", "", q(path="/race/f"), raw=body)[0])

        threads = [threading.Thread(target=upload, args=(b,)) for b in bodies]
        for t in threads:
            t.start()
        reads = []
        while any(t.is_alive() for t in threads):
            status, data, _ = self.get_bytes("/race/f")
            if status == 200:
                reads.append(data)
        for t in threads:
            t.join()
        self.assertEqual(results, [201] * 4)
        final = self.get_bytes("/race/f")[1]
        self.assertIn(final, bodies, "the file is one whole upload")
        for data in reads:
            self.assertIn(data, bodies, "a reader sees a whole file, never a part")
        self.assertEqual(self.sh("ls -A /race"), "f\n", "no temporary names left")

    def test_upload_to_memory_counts_against_the_sandbox(self):
        """/tmp is the sandbox's tmpfs: its pages must be charged to the sandbox, so an upload there
        cannot exceed the sandbox's memory limit (the agent writes them, not spaced)."""
        sid = self.new_sandbox(resources={"memory_mb": 64})
        token = self.attach(sid)
        data = os.urandom(MIB) * 24
        before = sandbox_memory_bytes(sid)
        status, body = self.files("PUT", "", q(path="/tmp/ok.bin"), raw=data, token=token, sid=sid)
        self.assertEqual(status, 201, body)
        after = sandbox_memory_bytes(sid)
        if before is not None:
            self.assertGreater(after - before, 20 * MIB, "the tmpfs pages are charged to the sandbox's cgroup")
        r = self.spaced.exec(sid, shell="sha256sum /tmp/ok.bin")
        self.assertEqual(r["stdout"].split()[0], hashlib.sha256(data).hexdigest())
        status, body = self.files("PUT", "", q(path="/tmp/too-big.bin"), raw=b"z" * (160 * MIB), token=token, sid=sid)
        self.assertError((status, body), 413, "payload_too_large")
        # The same without a Content-Length (chunked): stopped when it outgrows the limit.
        conn = self.spaced.connection(timeout=60)
        conn.request("PUT", "/v1/sandboxes/%s/files?%s" % (sid, q(path="/tmp/too-big.bin")),
                     body=(b"z" * MIB for _ in range(160)), encode_chunked=True,
                     headers={"Authorization": "Bearer " + token})
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        self.assertError((resp.status, body), 413, "payload_too_large")
        r = self.spaced.exec(sid, shell="ls -A /tmp; echo alive")
        self.assertEqual(r["stdout"], "ok.bin\nalive\n", r)
        # Dropped half way through the pipe: nothing left either.
        s = socket.create_connection(("127.0.0.1", self.spaced.port))
        s.sendall(("PUT /v1/sandboxes/%s/files?%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (sid, q(path="/tmp/partial"), token, 8 * MIB)).encode())
        s.sendall(b"x" * MIB)
        time.sleep(0.3)
        s.close()
        time.sleep(0.5)
        self.assertEqual(self.spaced.exec(sid, shell="ls -A /tmp")["stdout"], "ok.bin\n")

    def test_download_of_files_that_stat_empty(self):
        """procfs and sysfs files stat as 0 bytes: the download reads them to their end."""
        status, data, headers = self.get_bytes("/proc/self/status")
        self.assertEqual(status, 200)
        self.assertTrue(data.startswith(b"Name:\t"), data[:100])
        self.assertEqual(headers.get("Content-Length"), str(len(data)))
        status, data, _ = self.get_bytes("/proc/mounts")
        self.assertEqual(status, 200)
        self.assertIn(b" / ", data)
        self.assertEqual(self.put("/root/really-empty", b"")["size"], 0)
        self.assertEqual(self.get_bytes("/root/really-empty")[:2], (200, b""))

    def test_download_ranges(self):
        data = bytes(range(256)) * 40  # 10240 bytes
        self.put("/root/ranged", data)

        def get(range_header):
            conn = self.spaced.connection(timeout=30)
            conn.request("GET", "/v1/sandboxes/%s/files?%s" % (self.sid, q(path="/root/ranged")),
                         headers={"Authorization": "Bearer " + self.token, "Range": range_header})
            resp = conn.getresponse()
            body = resp.read()
            conn.close()
            return resp.status, body, resp.getheader("Content-Range")

        self.assertEqual(get("bytes=0-9"), (206, data[:10], "bytes 0-9/10240"))
        self.assertEqual(get("bytes=10000-"), (206, data[10000:], "bytes 10000-10239/10240"))
        self.assertEqual(get("bytes=-16"), (206, data[-16:], "bytes 10224-10239/10240"))
        self.assertEqual(get("bytes=10200-99999"), (206, data[10200:], "bytes 10200-10239/10240"))
        status, body, content_range = get("bytes=10240-")
        self.assertEqual((status, content_range), (416, "bytes */10240"))
        self.assertEqual(json.loads(body)["error"]["code"], "range_not_satisfiable")
        self.assertEqual(get("bytes=0-1,4-5")[:2], (200, data), "several ranges: the whole file")
        self.assertEqual(get("rubbish")[:2], (200, data))
        self.assertEqual(self.get_bytes("/root/ranged")[2].get("Accept-Ranges"), "bytes")

    def test_dropped_upload_leaves_nothing(self):
        self.sh("mkdir -p /drop")
        s = socket.create_connection(("127.0.0.1", self.spaced.port))
        s.sendall(("PUT /v1/sandboxes/%s/files?%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (self.sid, q(path="/drop/partial"), self.token, 50 * MIB)).encode())
        s.sendall(b"x" * (2 * MIB))
        time.sleep(0.3)
        s.close()
        time.sleep(0.5)
        self.assertEqual(self.sh("ls -A /drop"), "")
        self.stat("/drop/partial", expect=404)

    def test_modes_and_owners(self):
        self.assertEqual(self.put("/root/m600", b"x", mode="0600")["mode"], "0600")
        self.assertEqual(self.sh("stat -c %a /root/m600").strip(), "600")
        self.assertEqual(self.put("/root/m4755", b"x", mode="4755")["mode"], "4755")
        e = self.put("/home/owned-by-name", b"x", parents="true", owner="user")
        self.assertEqual((e["uid"], e["gid"], e["owner"], e["group"]), (1000, 1000, "user", "user"))
        e = self.put("/home/owned-by-number", b"x", uid="65534", gid="65534")
        self.assertEqual((e["uid"], e["gid"], e["owner"]), (65534, 65534, "nobody"))
        self.assertEqual(self.sh("stat -c %u:%g /home/owned-by-number").strip(), "65534:65534")
        status, body = self.files("PUT", "", q(path="/root/x", owner="nosuchuser"), raw=b"x")
        self.assertError((status, body), 400, "invalid_request")
        # A refused upload with parents=true makes no directories either.
        self.sh("rm -rf /par && mkdir /par && chmod 777 /par")
        status, body = self.files("PUT", "", q(path="/par/a/b/f", parents="true", owner="root", user="user"), raw=b"x")
        self.assertError((status, body), 403, "permission_denied")
        self.assertEqual(self.sh("ls -A /par"), "")
        e = self.put("/par/a/b/f", b"x", parents="true", user="user")
        self.assertEqual(self.sh("stat -c %U /par/a /par/a/b /par/a/b/f"), "user\nuser\nuser\n")
        for bad in ("999", "abc", "77777", ""):
            status, body = self.files("PUT", "", q(path="/root/x", mode=bad), raw=b"x")
            self.assertError((status, body), 400, "invalid_request")
        self.stat("/root/x", expect=404)

    def test_user_option(self):
        self.sh("mkdir -p /home/user && chown 1000:1000 /home/user && echo s > /root/secret && chmod 600 /root/secret"
                " && chmod 700 /root")
        e = self.put("/home/user/mine", b"mine", user="user")
        self.assertEqual((e["uid"], e["owner"]), (1000, "user"))
        status, body = self.files("GET", "", q(path="/root/secret", user="user"))
        self.assertError((status, body), 403, "permission_denied")
        status, body = self.files("PUT", "", q(path="/root/not-mine", user="user"), raw=b"x")
        self.assertError((status, body), 403, "permission_denied")
        self.assertEqual(self.get_bytes("/root/secret")[1], b"s\n")  # root may
        status, body = self.files("GET", "/stat", q(path="/", user="nosuchuser"))
        self.assertError((status, body), 400, "invalid_request")

    # ---- stat, list, mkdir, move, remove

    def test_list_depth(self):
        self.sh("rm -rf /tree && mkdir -p /tree/a/b/c && echo 1 > /tree/f1 && echo 22 > /tree/a/f2 "
                "&& echo 333 > /tree/a/b/f3 && ln -s /etc /tree/link")
        status, body = self.files("GET", "/list", q(path="/tree"))
        self.assertEqual(status, 200, body)
        self.assertFalse(body["truncated"])
        by_path = {e["path"]: e for e in body["entries"]}
        self.assertEqual(sorted(by_path), ["/tree/a", "/tree/f1", "/tree/link"])
        self.assertEqual(by_path["/tree/a"]["type"], "directory")
        self.assertEqual(by_path["/tree/f1"]["size"], 2)
        self.assertEqual(by_path["/tree/link"]["type"], "symlink")
        self.assertEqual(by_path["/tree/link"]["symlink_target"], "/etc")
        status, body = self.files("GET", "/list", q(path="/tree", depth=3))
        paths = sorted(e["path"] for e in body["entries"])
        self.assertEqual(paths, ["/tree/a", "/tree/a/b", "/tree/a/b/c", "/tree/a/b/f3", "/tree/a/f2", "/tree/f1",
                                 "/tree/link"], "a symlinked directory is listed, not entered")
        self.assertEqual(self.files("GET", "/list", q(path="/tree/link"))[0], 200)  # the path itself may be a link
        self.assertError(self.files("GET", "/list", q(path="/tree/f1")), 400, "invalid_request")
        self.assertError(self.files("GET", "/list", q(path="/nope")), 404, "not_found")
        for bad in ("0", "65", "x"):
            self.assertError(self.files("GET", "/list", q(path="/tree", depth=bad)), 400, "invalid_request")

    def test_stat_kinds(self):
        self.assertEqual(self.stat("/")["type"], "directory")
        self.assertEqual(self.stat("/")["name"], "/")
        self.assertEqual(self.stat("/dev/null")["type"], "other")
        self.assertEqual(self.stat("/etc")["type"], "directory")
        self.stat("/no/such/thing", expect=404)

    def test_mkdir(self):
        self.sh("rm -rf /mk")
        status, body = self.files("POST", "/mkdir", "", body={"path": "/mk/a/b"})
        self.assertError((status, body), 404, "not_found")
        status, body = self.files("POST", "/mkdir", "", body={"path": "/mk/a/b", "parents": True, "mode": "0750"})
        self.assertEqual(status, 201, body)
        self.assertEqual((body["type"], body["mode"], body["path"]), ("directory", "0750", "/mk/a/b"))
        status, body = self.files("POST", "/mkdir", "", body={"path": "/mk/a/b"})
        self.assertError((status, body), 409, "already_exists")
        status, body = self.files("POST", "/mkdir", "", body={"path": "/mk/a/b", "parents": True})
        self.assertEqual(status, 201, "mkdir -p of an existing directory is fine")
        status, body = self.files("POST", "/mkdir", "", body={"path": "/mk/owned", "owner": "user"})
        self.assertEqual((status, body["owner"]), (201, "user"), body)
        # As user, giving the directory to root is refused, and leaves nothing behind.
        self.sh("mkdir -p /mk/open && chmod 777 /mk/open")
        status, body = self.files("POST", "/mkdir", "", body={"path": "/mk/open/d", "owner": "root", "user": "user"})
        self.assertError((status, body), 403, "permission_denied")
        self.stat("/mk/open/d", expect=404)
        self.sh("echo x > /mk/file")
        self.assertError(self.files("POST", "/mkdir", "", body={"path": "/mk/file/sub", "parents": True}), 400,
                         "invalid_request")
        self.assertError(self.files("POST", "/mkdir", "", raw=b"{not json",
                                    headers={"Content-Type": "application/json"}), 400, "invalid_json")
        for bad in ({"path": "/mk/x", "bogus": 1}, {"path": "relative"}, {"path": 5}, {},
                    {"path": "/mk/x", "mode": 493}, {"path": "/mk/x", "mode": "8"}, {"path": "/mk/x", "parents": "yes"}):
            self.assertError(self.files("POST", "/mkdir", "", body=bad), 400)
        self.stat("/mk/x", expect=404)

    def test_move(self):
        self.sh("rm -rf /mv && mkdir -p /mv/dir && echo data > /mv/src")
        status, body = self.files("POST", "/move", "", body={"source": "/mv/src", "destination": "/mv/dir/dst"})
        self.assertEqual(status, 200, body)
        self.assertEqual((body["path"], body["size"]), ("/mv/dir/dst", 5))
        self.stat("/mv/src", expect=404)
        self.assertError(self.files("POST", "/move", "", body={"source": "/mv/src", "destination": "/mv/x"}), 404)
        self.assertError(self.files("POST", "/move", "", body={"source": "/mv/dir/dst", "destination": "/mv/no/x"}), 404)
        self.assertError(self.files("POST", "/move", "", body={"source": "/mv/dir/dst"}), 400, "invalid_request")
        self.assertError(self.files("POST", "/move", "", body={"source": "/mv/dir", "destination": "/mv/dir/in"}), 400)

    def test_remove(self):
        self.sh("rm -rf /rm && mkdir -p /rm/full/deep && echo x > /rm/full/deep/f && echo y > /rm/file && mkdir /rm/empty")
        self.assertEqual(self.files("DELETE", "", q(path="/rm/file"))[0], 204)
        self.assertEqual(self.files("DELETE", "", q(path="/rm/empty"))[0], 204)
        self.assertError(self.files("DELETE", "", q(path="/rm/full")), 409, "conflict")
        self.assertEqual(self.sh("ls /rm/full/deep"), "f\n", "a refused remove changes nothing")
        self.assertEqual(self.files("DELETE", "", q(path="/rm/full", recursive="true"))[0], 204)
        self.assertEqual(self.sh("ls -A /rm"), "")
        self.assertError(self.files("DELETE", "", q(path="/rm/file")), 404, "not_found")
        self.assertError(self.files("DELETE", "", q(path="/")), 409, "conflict")
        for mount_point in ("/proc", "/tmp", "/dev"):
            self.assertError(self.files("DELETE", "", q(path=mount_point, recursive="true")), 409, "conflict")
        self.assertEqual(self.sh("ls /proc/1/status"), "/proc/1/status\n")

    # ---- what must be refused

    def test_escapes_stay_inside(self):
        marker = "/tmp/space-files-host-%d" % os.getpid()
        with open(marker, "w") as f:
            f.write("HOST SECRET\n")
        self.addCleanup(lambda: os.path.exists(marker) and os.unlink(marker))
        with open("/etc/passwd", "rb") as f:
            host_passwd = f.read()
        sandbox_passwd = self.sh("cat /etc/passwd").encode()
        self.assertNotEqual(host_passwd, sandbox_passwd)
        self.sh("rm -rf /esc && mkdir /esc && ln -s / /esc/root && ln -s /etc /esc/etc && ln -s %s /esc/marker"
                " && ln -s ../../../../../../ /esc/up" % marker)
        for p in ("/../../etc/passwd", "/esc/root/etc/passwd", "/esc/root/../../../etc/passwd", "/esc/etc/passwd",
                  "/esc/up/etc/passwd", "/esc/root/esc/root/etc/passwd", "/./etc//passwd"):
            status, data, _ = self.get_bytes(p)
            self.assertEqual((status, data), (200, sandbox_passwd), p)
        for p in (marker, "/esc/marker", "/esc/root" + marker, "/../.." + marker):
            status, data, _ = self.get_bytes(p)
            self.assertEqual(status, 404, (p, data))
            self.assertNotIn(b"HOST SECRET", data)
        # /proc magic links lead to the agent's own view of things: refused.
        for p in ("/proc/self/root/etc/passwd", "/proc/1/root/etc/passwd", "/proc/self/cwd/etc/passwd"):
            status, data, _ = self.get_bytes(p)
            self.assertNotEqual(status, 200, p)
            self.assertEqual(status // 100, 4, (p, status, data))
        # Writes through links land inside, and a link at the last component is replaced, not followed.
        self.put("/esc/root" + marker, b"inside")
        self.put("/esc/marker", b"replaced the link")
        self.put("/../../tmp/written-up", b"up")
        with open(marker) as f:
            self.assertEqual(f.read(), "HOST SECRET\n")
        self.assertFalse(os.path.exists("/tmp/written-up"))
        self.assertEqual(self.sh("cat %s; cat /esc/marker; cat /tmp/written-up" % marker), "insidereplaced the linkup")
        self.assertEqual(self.stat("/esc/marker")["type"], "file")
        # mkdir and move through a symlinked dir stay inside too.
        self.assertEqual(self.files("POST", "/mkdir", "", body={"path": "/esc/root/tmp/made-here", "parents": True})[0],
                         201)
        self.assertFalse(os.path.exists("/tmp/made-here"))
        self.sh("test -d /tmp/made-here")

    def test_non_regular_files_refused(self):
        self.sh("rm -f /fifo && mkfifo /fifo")
        for p in ("/dev/zero", "/dev/null", "/fifo", "/", "/etc", "/proc/self/status"):
            start = time.monotonic()
            status, data, _ = self.get_bytes(p)
            self.assertLess(time.monotonic() - start, 5, p)
            if p == "/proc/self/status":
                continue  # procfs files are regular with size 0: an empty answer is fine
            self.assertEqual(status, 400, (p, data))
            self.assertEqual(json.loads(data)["error"]["code"], "invalid_request")
        self.assertError(self.files("PUT", "", q(path="/etc"), raw=b"x"), 400, "invalid_request")
        self.assertError(self.files("PUT", "", q(path="/"), raw=b"x"), 400, "invalid_request")

    def test_bad_paths(self):
        for path in ("relative/path", "", "etc/passwd"):
            self.assertError(self.files("GET", "/stat", q(path=path)), 400, "invalid_request")
        self.assertError(self.files("GET", "/stat", ""), 400, "invalid_request")
        self.assertError(self.files("GET", "/stat", "path=/etc%00/passwd"), 400, "invalid_request")
        self.assertError(self.files("GET", "", "path=/etc/passwd%00.txt"), 400, "invalid_request")
        self.assertError(self.files("GET", "/stat", q(path="/" + "a" * 5000)), 400, "invalid_request")
        self.assertError(self.files("GET", "/stat", q(path="/" + "a" * 300)), 400, "invalid_request")  # NAME_MAX
        self.assertError(self.files("GET", "/stat", "path=/a&path=/b"), 400, "invalid_request")
        self.assertError(self.files("PUT", "", "path=/root/nul%00name", raw=b"x"), 400, "invalid_request")
        self.assertError(self.files("POST", "/mkdir", "", raw=b'{"path": "/x\\u0000y"}',
                                    headers={"Content-Type": "application/json"}), 400)
        self.assertEqual(self.sh("ls /root | grep -c nul || true").strip(), "0")
        # Hostile but legal names work and come back intact.
        name = "/root/we\u00efrd name; $(x) \n`y`"
        self.put(name, b"ok")
        self.assertEqual(self.stat(name)["path"], name)

    def test_auth_and_state(self):
        self.assertError(self.files("GET", "/stat", q(path="/"), token="space_" + "0" * 40), 401, "unauthorized")
        status, body = self.spaced.request("GET", "/v1/sandboxes/%s/files/stat?path=/" % self.sid, key=None)
        self.assertEqual(status, 401, body)
        if self.token == self.spaced.key:
            self.skipTest("attach sessions are not in this build: tokens cannot be told apart yet")
        other = self.new_sandbox()
        other_token = self.attach(other)
        status, body = self.files("GET", "/stat", q(path="/"), token=other_token)
        self.assertEqual(status, 403, body)
        status, body = self.files("GET", "/stat", q(path="/"), token=self.spaced.key)
        self.assertIn(status, (401, 403), "a control key is not an attach token: %r" % (body,))
        status, body = self.files("GET", "/stat", q(path="/"), sid="sb-0000000000000000", token=other_token)
        self.assertIn(status, (403, 404), body)
        # Only a running sandbox serves files: paused, stopped -> 409.
        self.spaced.action(other, "pause")
        self.spaced.wait_state(other, ("paused",))
        self.assertError(self.files("GET", "/stat", q(path="/"), sid=other, token=other_token), 409, "invalid_state")
        self.assertError(self.files("GET", "/watch", q(path="/"), sid=other, token=other_token), 409, "invalid_state")
        self.spaced.action(other, "resume")
        self.spaced.wait_state(other, ("running",))
        self.spaced.action(other, "stop")
        self.spaced.wait_state(other, ("stopped",))
        status, body = self.files("GET", "/stat", q(path="/"), sid=other, token=other_token)
        if status != 401:  # a token may die with its sandbox's processes
            self.assertError((status, body), 409)
        self.assertError(self.files("PUT", "", q(path="/x"), raw=b"x" * 1000, sid=other, token=other_token),
                         409 if status != 401 else 401)

    def test_unknown_sandbox(self):
        status, body = self.spaced.request("POST", "/v1/sandboxes/sb-0000000000000000/sessions", {})
        if status == 404 and "no route" in body["error"]["message"]:
            self.assertError(self.files("GET", "/stat", q(path="/"), sid="sb-0000000000000000"), 404, "not_found")
        else:
            self.assertError((status, body), 404, "not_found")

    # ---- space cp

    def active_sessions(self):
        status, body = self.spaced.api("GET", "/v1/sandboxes/%s/sessions" % self.sid, expect=200)
        return sum(1 for s in body["sessions"] if s["state"] == "active")

    def test_cli_cp(self):
        tmp = self.spaced.tmp
        active = self.active_sessions()
        local = os.path.join(tmp, "cp-src.bin")
        data = os.urandom(3 * MIB + 17)
        with open(local, "wb") as f:
            f.write(data)
        os.chmod(local, 0o751)
        r = self.spaced.cli("cp", local, "%s:/cp/" % self.sid, "-p")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.sh("stat -c %a:%s /cp/cp-src.bin").strip(), "751:%d" % len(data))
        r = self.spaced.cli("cp", "%s:/cp/cp-src.bin" % self.sid, tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(tmp, "cp-src.bin"), "rb") as f:
            self.assertEqual(f.read(), data)
        # A new file of the caller's (0666 less the umask); -p keeps the sandbox's rwx bits.
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(os.stat(os.path.join(tmp, "cp-src.bin")).st_mode & 0o7777, 0o666 & ~umask)
        r = self.spaced.cli("cp", "-p", "%s:/cp/cp-src.bin" % self.sid, os.path.join(tmp, "cp-kept.bin"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.stat(os.path.join(tmp, "cp-kept.bin")).st_mode & 0o7777, 0o751)
        # stdin and stdout
        r = self.spaced.cli("cp", "--mode", "0600", "--owner", "user", "-", "%s:/cp/from-stdin" % self.sid,
                            input=b"piped\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.sh("stat -c %a:%U /cp/from-stdin").strip(), "600:user")
        r = self.spaced.cli("cp", "%s:/cp/from-stdin" % self.sid, "-")
        self.assertEqual((r.returncode, r.stdout), (0, b"piped\n"), r.stderr)
        # Failures: a clear message, a non-zero exit, nothing left behind.
        out = os.path.join(tmp, "never")
        r = self.spaced.cli("cp", "%s:/no/such/file" % self.sid, out)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"not_found", r.stderr)
        self.assertEqual([n for n in os.listdir(tmp) if n.startswith("never")], [])
        r = self.spaced.cli("cp", "%s:/dev/zero" % self.sid, out)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"invalid_request", r.stderr)
        self.assertEqual(self.active_sessions(), active, "space cp revokes the sessions it opens")
        r = self.spaced.cli("cp", local, "also-local")
        self.assertEqual(r.returncode, 2)
        r = self.spaced.cli("cp", local, "sb-0000000000000000:/x")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"not_found", r.stderr)

    # ---- watch

    def test_watch_keepalive_and_end(self):
        self.sh("rm -rf /wk && mkdir /wk")
        conn = self.spaced.connection(timeout=10)
        conn.request("GET", "/v1/sandboxes/%s/files/watch?%s" % (self.sid, q(path="/wk", keepalive_s=1)),
                     headers={"Authorization": "Bearer " + self.token})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        start = time.monotonic()
        lines = []
        while ": keepalive" not in lines and time.monotonic() - start < 5:
            lines.append(resp.fp.readline().decode().rstrip("\r\n"))
        self.assertIn(": keepalive", lines)
        # Removing the watched directory reports it and ends the stream.
        self.sh("rmdir /wk")
        rest = []
        while True:  # raw lines of the chunked body, up to its last chunk
            line = resp.fp.readline()
            if not line or line == b"0\r\n":
                break
            rest.append(line.decode())
        self.assertTrue(line, "the stream must end with a last chunk, not a cut connection")
        self.assertIn("event: remove\n", rest)
        self.assertTrue(any('"path":"/wk"' in r for r in rest), rest)
        conn.close()

    def test_watch_events(self):
        self.sh("rm -rf /w && mkdir -p /w/sub")
        conn = self.spaced.connection(timeout=30)
        conn.request("GET", "/v1/sandboxes/%s/files/watch?%s" % (self.sid, q(path="/w", recursive="true")),
                     headers={"Authorization": "Bearer " + self.token})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
        events = []
        done = threading.Event()

        def reader():
            ev = None
            try:
                while not done.is_set():
                    line = resp.fp.readline()
                    if not line:
                        return
                    line = line.decode().rstrip("\n")
                    if line.startswith("event: "):
                        ev = line[7:]
                    elif line.startswith("data: ") and ev:
                        events.append((ev, json.loads(line[6:])))
                        ev = None
            except (OSError, ValueError):
                return

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        time.sleep(0.3)
        self.sh("echo a > /w/new; echo b >> /w/new; chmod 600 /w/new; mv /w/new /w/renamed; rm /w/renamed;"
                " mkdir /w/sub/d2; sleep 0.2; echo c > /w/sub/d2/deep")
        self.put("/w/uploaded", b"u")

        def seen(kind, path):
            return any(k == kind and d["path"] == path for k, d in events)

        wait_for(lambda: seen("create", "/w/uploaded"), timeout=10, what="events %r" % (events,))
        for kind, path in (("create", "/w/new"), ("write", "/w/new"), ("chmod", "/w/new"), ("rename", "/w/new"),
                           ("create", "/w/renamed"), ("remove", "/w/renamed"), ("create", "/w/sub/d2"),
                           ("create", "/w/sub/d2/deep")):
            self.assertTrue(seen(kind, path), "no %s %s in %r" % (kind, path, events))
        d = next(d for k, d in events if k == "create" and d["path"] == "/w/sub/d2")
        self.assertEqual((d["name"], d["type"]), ("d2", "directory"))
        # A watched subdirectory renamed: events below it carry the new path.
        self.sh("mv /w/sub /w/moved; sleep 0.2; echo z > /w/moved/d2/after")
        wait_for(lambda: seen("create", "/w/moved/d2/after"), timeout=10, what="events %r" % (events,))
        self.assertFalse(seen("create", "/w/sub/d2/after"), events)
        # An upload over a file is a write of it (as an in-place write), and the name the
        # upload is filled under never shows.
        self.put("/w/uploaded", b"again")
        wait_for(lambda: seen("write", "/w/uploaded"), timeout=10, what="events %r" % (events,))
        self.assertEqual([k for k, d in events if d["path"] == "/w/uploaded"].count("create"), 1, events)
        self.assertFalse([d for k, d in events if ".space-upload-" in d["path"]], events)
        done.set()
        conn.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader; close() alone would not
        conn.close()
        t.join(5)
        self.assertFalse(t.is_alive())
        self.assertError(self.files("GET", "/watch", q(path="/w/moved/d2/deep")), 400, "invalid_request")
        self.assertError(self.files("GET", "/watch", q(path="/w", keepalive_s=0)), 400, "invalid_request")
        self.assertError(self.files("GET", "/watch", q(path="/nope")), 404, "not_found")


class FilesAcrossRestarts(FreshSpacedTestCase):
    """spaced stopping or dying in the middle of file traffic: streams end, nothing is left
    half-written, and files work again after the restart."""

    def token(self, sid):
        status, data = self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % sid, {})
        self.assertEqual(status, 201, data)
        return data["attach_token"]

    def start_upload(self, sid, token, path, total, sent):
        s = socket.create_connection(("127.0.0.1", self.spaced.port))
        s.sendall(("PUT /v1/sandboxes/%s/files?%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (sid, q(path=path), token, total)).encode())
        s.sendall(b"x" * sent)
        return s

    def test_stop_ends_watch_streams(self):
        sid = self.new_sandbox()
        token = self.token(sid)
        conn = self.spaced.connection(timeout=30)
        conn.request("GET", "/v1/sandboxes/%s/files/watch?%s" % (sid, q(path="/")),
                     headers={"Authorization": "Bearer " + token})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        start = time.monotonic()
        self.assertEqual(self.spaced.stop(timeout=20), 0)
        self.assertLess(time.monotonic() - start, 10, "an open watch must not hold up a stop")
        while resp.fp.readline():
            pass  # the stream ends
        conn.close()

    def test_kill9_mid_upload_leaves_nothing(self):
        sid = self.new_sandbox()
        token = self.token(sid)
        self.spaced.exec(sid, shell="mkdir -p /up")
        disk = self.start_upload(sid, token, "/up/disk.bin", 64 * MIB, 8 * MIB)
        memory = self.start_upload(sid, token, "/tmp/mem.bin", 64 * MIB, 8 * MIB)
        time.sleep(0.3)
        self.spaced.kill9()
        disk.close()
        memory.close()
        self.spaced.start()
        self.spaced.wait_state(sid, ("running",))
        r = self.spaced.exec(sid, shell="ls -A /up /tmp")
        self.assertEqual(r["stdout"], "/tmp:\n\n/up:\n", r)
        token = self.token(sid)
        status, body = self.spaced.request("PUT", "/v1/sandboxes/%s/files?%s" % (sid, q(path="/up/after")),
                                           raw=b"fine", key=token)
        self.assertEqual(status, 201, body)


if __name__ == "__main__":
    unittest.main()
