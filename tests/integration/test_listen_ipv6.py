"""IPv6 listen addresses: spaced on [::1] (the API and the E2B front door) answers there,
names itself with brackets (its start-up line, an attach session's data_url), and the CLI
reaches it with an http://[::1]:PORT URL. All of it inside a network namespace the test
makes (its own loopback), so no traffic leaves 127.0.0.0/8 of the host or that namespace."""

import json
import os
import subprocess
import time
import unittest
import uuid

from spaced_harness import SPACE_CLI, Spaced, free_port, require_root


class NetnsSpaced(Spaced):
    """A spaced whose network namespace is ns, listening on [::1]; requests go through curl
    run in that namespace (nsenter --net only: cgroups and mounts stay the host's)."""

    def __init__(self, ns, **kw):
        super().__init__(**kw)
        self.ns = ns
        self.url = "http://[::1]:%d" % self.port

    def netns(self, argv, **kw):
        return subprocess.run(["nsenter", "--net=/run/netns/" + self.ns] + argv, capture_output=True, **kw)

    def args(self):
        a = super().args()
        i = a.index("--listen")
        a[i + 1] = "[::1]:%d" % self.port
        return ["nsenter", "--net=/run/netns/" + self.ns] + a

    def request(self, method, path, body=None, key="admin", headers=None, raw=None, timeout=120):
        argv = ["curl", "-g", "-s", "-S", "-X", method, "-o", "-", "-w", "\n%{http_code}", "--max-time", str(timeout)]
        if key == "admin":
            key = self.key
        if key is not None:
            argv += ["-H", "Authorization: Bearer " + key]
        for k, v in (headers or {}).items():
            argv += ["-H", "%s: %s" % (k, v)]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        p = self.netns(argv + [self.url + path], timeout=timeout + 10)
        if p.returncode != 0:
            raise ConnectionError(p.stderr.decode())
        payload, _, code = p.stdout.rpartition(b"\n")
        self.last_headers = {}
        if not payload:
            return int(code), None
        try:
            return int(code), json.loads(payload)
        except ValueError:
            return int(code), payload


class ListenIPv6(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        cls.ns = "spit-v6-" + uuid.uuid4().hex[:8]
        subprocess.run(["ip", "netns", "add", cls.ns], check=True)
        subprocess.run(["ip", "-n", cls.ns, "link", "set", "lo", "up"], check=True)
        cls.e2b_port = free_port()
        cls.spaced = NetnsSpaced(cls.ns, extra_args=["--e2b-listen", "[::1]:%d" % cls.e2b_port])
        try:
            for _ in range(50):  # ::1 is usable once the loopback's address is no longer tentative
                if cls.spaced.netns(["ip", "-6", "addr", "show", "lo"]).stdout.find(b"::1/128") >= 0:
                    break
                time.sleep(0.1)
            cls.spaced.start()
        except Exception:
            cls.spaced.cleanup()
            subprocess.run(["ip", "netns", "del", cls.ns])
            raise

    @classmethod
    def tearDownClass(cls):
        cls.spaced.cleanup()
        subprocess.run(["ip", "netns", "del", cls.ns])

    def test_api_on_ipv6(self):
        sp = self.spaced
        self.assertIn("listening on http://[::1]:%d" % sp.port, open(sp.out_path).read())
        sid = sp.create()
        st, out = sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["echo", "v6"]})
        self.assertEqual((st, out["stdout"]), (200, "v6\n"), out)
        st, sess = sp.request("POST", "/v1/sandboxes/%s/sessions" % sid, {})
        self.assertEqual(st, 201, sess)
        self.assertEqual(sess["data_url"], "http://[::1]:%d/v1/sandboxes/%s" % (sp.port, sid))
        st, _ = sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid)
        self.assertEqual(st, 200)

    def test_not_on_ipv4(self):
        # [::1] is IPv6 only: nothing answers on 127.0.0.1 at that port in the namespace.
        p = self.spaced.netns(["curl", "-s", "-o", "/dev/null", "--max-time", "5",
                               "http://127.0.0.1:%d/v1/health" % self.spaced.port])
        self.assertEqual(p.returncode, 7, p.stderr)  # curl: could not connect

    def test_e2b_front_door_on_ipv6(self):
        p = self.spaced.netns(["curl", "-g", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30",
                               "http://[::1]:%d/sandboxes" % self.e2b_port])
        self.assertEqual(p.stdout, b"401", p.stderr)  # there, and asking for a key

    def test_cli_with_an_ipv6_url(self):
        sp = self.spaced
        env = dict(os.environ, SPACE_URL=sp.url, SPACE_API_KEY=sp.key,
                   SPACE_STATE_DIR=os.path.join(sp.tmp, "nonexistent"))
        p = sp.netns([SPACE_CLI, "--json", "sandbox", "ls"], env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("sandboxes", json.loads(p.stdout))


if __name__ == "__main__":
    unittest.main()
