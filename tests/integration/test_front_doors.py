"""The two front doors (the v1 API and the E2B control API) share one create-request model
and one command follower: the same create gets the same outcome through either door, a
pinned template digest survives both, nothing a client sends is truncated on the way, and
a stream whose client went away is noticed within about a second by both doors (the v1 SSE
stream used to notice only at its next keepalive, up to 300 s later)."""

import http.client
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spaced_harness import SpacedTestCase, free_port, wait_for  # noqa: E402
from test_data_plane import DataPlaneClient  # noqa: E402

TCP_TIME_WAIT, TCP_CLOSE, TCP_LAST_ACK = "06", "07", "09"


def server_sockets_held(port, peer_ports):
    """The server-side sockets of connections on port from the given client ports that spaced
    still holds open (any state but TIME_WAIT/CLOSE/LAST_ACK: once spaced closes its side the
    entry leaves or goes to LAST_ACK). A departed client's socket sits in CLOSE_WAIT until
    spaced notices and closes it."""
    held = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, remote, state = parts[1], parts[2], parts[3]
                    if (int(local.rsplit(":", 1)[1], 16) == port and int(remote.rsplit(":", 1)[1], 16) in peer_ports
                            and state not in (TCP_TIME_WAIT, TCP_CLOSE, TCP_LAST_ACK)):
                        held.append((remote, state))
        except FileNotFoundError:
            pass
    return held


class FrontDoors(DataPlaneClient, SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port,
                                            "--e2b-templates", "base=busybox"]}
        super().setUpClass()
        made = cls.spaced.cli("--json", "key", "create", "--e2b", "front-doors")
        assert made.returncode == 0, made.stderr
        cls.e2b_key = json.loads(made.stdout)["secret"]

    def e2b(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=180)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={"X-API-KEY": self.e2b_key, "Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = resp.read()
            return resp.status, (json.loads(payload) if payload else None)
        finally:
            conn.close()

    def e2b_create(self, body, expect=201):
        status, data = self.e2b("POST", "/sandboxes", body)
        self.assertEqual(status, expect, data)
        if status == 201:
            self.spaced.known_ids.add(data["sandboxID"])
            self.addCleanup(self._destroy_quietly, data["sandboxID"])
        return data

    def busybox_digest(self):
        _, t = self.spaced.api("GET", "/v1/templates/busybox", expect=200)
        digest = t["environment"].get("digest")
        self.assertRegex(digest or "", r"^sha256:[0-9a-f]{64}$", t)
        return digest

    def test_pinned_digest_both_doors(self):
        digest = self.busybox_digest()
        # v1: the pin is kept through the create and the sandbox is bound to that version.
        sid = self.new_sandbox(template="busybox@" + digest)
        sb = self.spaced.get(sid)
        self.assertEqual(sb["template"], "busybox")
        self.assertEqual(sb["environment"].get("digest"), digest)
        # E2B: the same reference through the other door gives the same binding.
        made = self.e2b_create({"templateID": "busybox@" + digest})
        sb2 = self.spaced.get(made["sandboxID"])
        self.assertEqual(sb2["template"], "busybox")
        self.assertEqual(sb2["environment"].get("digest"), digest)
        # A digest the template does not have: not found on both doors, nothing created.
        before = set(self.spaced.list_ids())
        wrong = "busybox@sha256:" + "0" * 64
        self.assertError(self.spaced.request("POST", "/v1/sandboxes", {"template": wrong}), 404, "not_found")
        status, data = self.e2b("POST", "/sandboxes", {"templateID": wrong})
        self.assertEqual(status, 404, data)
        self.assertEqual(set(self.spaced.list_ids()), before)

    def test_invalid_create_changes_nothing(self):
        """Failures after the rolling policy was parsed (run under ASan: nothing leaks)."""
        before = set(self.spaced.list_ids())
        rolling = {"interval_s": 3600}
        for body, status in (({"template": "no such!", "rolling_snapshots": rolling}, 400),
                             ({"template": "busybox", "on_timeout": "explode", "rolling_snapshots": rolling}, 400),
                             ({"template": "busybox", "snapshot_id": "snap-x", "rolling_snapshots": rolling}, 400),
                             ({"template": "busybox@sha256:" + "1" * 64, "rolling_snapshots": rolling}, 404),
                             ({"template": "nosuch", "rolling_snapshots": rolling}, 404)):
            self.assertError(self.spaced.request("POST", "/v1/sandboxes", body), status)
        self.assertEqual(set(self.spaced.list_ids()), before)

    def test_large_env_and_metadata_kept_whole(self):
        """Near the limits (256 env values of up to 32 KiB, 64 metadata entries of 256 bytes):
        everything arrives, through both doors, not cut at some internal buffer size."""
        env = {"V%03d" % i: ("%03d" % i) * 100 for i in range(200)}
        env["BIG"] = "x" * 32768
        metadata = {"k%02d" % i: chr(ord("a") + i % 26) * 256 for i in range(64)}
        sid = self.new_sandbox(env=env, metadata=metadata)
        sb = self.spaced.get(sid)
        self.assertEqual(sb["metadata"], metadata)
        for k, v in env.items():
            self.assertEqual(sb["env"].get(k), v, k)
        out = self.spaced.sh(sid, 'printf %s "$BIG" | wc -c; printf %s "$V199"')["stdout"]
        self.assertEqual(out.split(), ["32768", "199" * 100])
        made = self.e2b_create({"templateID": "base", "envVars": env, "metadata": metadata})
        sb2 = self.spaced.get(made["sandboxID"])
        self.assertEqual(sb2["metadata"], metadata)
        self.assertEqual(sb2["env"].get("BIG"), env["BIG"])

    def test_sse_client_gone_noticed(self):
        """A v1 SSE client that goes away: spaced closes its side within a couple of seconds,
        even with a 300 s keepalive (observed as the server's sockets left in CLOSE_WAIT)."""
        sid = self.new_sandbox()
        token = self.token(sid)
        c = self.start(sid, token, cmd=["sh", "-c", "echo hi; sleep 120"])
        streams = [self.stream(sid, token, c["command_id"], query="keepalive_s=300") for _ in range(3)]
        for es in streams:
            ev = es.next()
            self.assertEqual(ev.get("event"), "stdout", ev)
        peers = {es.conn.sock.getsockname()[1] for es in streams}
        self.assertEqual(len(server_sockets_held(self.spaced.port, peers)), 3)
        for es in streams:
            es.resp.close()
            es.conn.close()
        t0 = time.monotonic()
        # spaced notices the departures and closes its side within about a second.
        wait_for(lambda: not server_sockets_held(self.spaced.port, peers), timeout=5, interval=0.1,
                 what="spaced to close the streams of departed clients")
        self.assertLess(time.monotonic() - t0, 4)
        # The command goes on and a new stream follows it.
        es = self.stream(sid, token, c["command_id"])
        self.assertEqual(es.next().get("event"), "stdout")
        es.close()
        self.dp("POST", sid, "commands/%s/signal" % c["command_id"], {"signal": "KILL"}, token=token, expect=(200, 202, 204))


if __name__ == "__main__":
    unittest.main()
