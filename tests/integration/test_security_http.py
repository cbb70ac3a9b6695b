"""Attacks on spaced's HTTP listeners (API, data plane, E2B front door) by clients that
hold no key: slowloris floods of half-open connections, headers that never end, and error
answers that must keep the API's JSON shape. Each test performs the attack against a real
spaced and fails if it works. Traffic stays on 127.0.0.0/8: Linux routes all of 127/8 to
lo, so binding 127.0.0.2 as the source gives the attacker an address of its own."""

import base64
import http.client
import json
import os
import resource
import socket
import time
import unittest

from spaced_harness import SpacedTestCase, free_port, log, wait_for

ATTACKER = "127.0.0.2"
HALF_HEADER = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class HalfOpen:
    """n connections from src that send half a header and then nothing."""

    def __init__(self, port, n, src=ATTACKER):
        self.socks = []
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((src, 0))
                s.settimeout(5)
                s.connect(("127.0.0.1", port))
                s.sendall(HALF_HEADER)
            except OSError:
                s.close()
                continue
            self.socks.append(s)

    def alive(self):
        """How many spaced still holds open (closed ones read EOF or a reset)."""
        n = 0
        for s in self.socks:
            s.setblocking(False)
            try:
                n += s.recv(1, socket.MSG_PEEK) != b""
            except BlockingIOError:
                n += 1
            except OSError:
                pass
        return n

    def close(self):
        for s in self.socks:
            s.close()
        self.socks = []


def timed_request(port, method, path, headers, body=None, timeout=10):
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data, time.monotonic() - t0
    finally:
        conn.close()


def raw_exchange(port, payload, timeout=10):
    """Sends payload on a fresh socket and reads until spaced closes or timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        return out


class FloodCase(SpacedTestCase):
    """A spaced with the E2B front door and one running sandbox with an attach session."""

    extra = []

    @classmethod
    def setUpClass(cls):
        raise_fd_limit()
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port] + cls.extra}
        super().setUpClass()
        made = cls.spaced.cli("--json", "key", "create", "--e2b", "security-http")
        assert made.returncode == 0, made.stderr
        cls.e2b_key = json.loads(made.stdout)["secret"]
        cls.sid = cls.spaced.create()
        _, s = cls.spaced.api("POST", "/v1/sandboxes/%s/sessions" % cls.sid, {}, expect=201)
        cls.token = s["attach_token"]

    def authenticated_requests_answered(self, limit_s=3.0):
        """An API call, a data-plane call and an E2B call from 127.0.0.1 answered quickly."""
        calls = [
            (self.spaced.port, "GET", "/v1/sandboxes", {"Authorization": "Bearer " + self.spaced.key}),
            (self.spaced.port, "GET", "/v1/sandboxes/%s/commands" % self.sid, {"Authorization": "Bearer " + self.token}),
            (self.e2b_port, "GET", "/sandboxes", {"X-API-KEY": self.e2b_key}),
        ]
        for port, method, path, headers in calls:
            status, data, took = timed_request(port, method, path, headers)
            log("%s %s -> %d in %.3f s" % (method, path, status, took))
            self.assertEqual(status, 200, "%s %s: %r" % (method, path, data[:300]))
            self.assertLess(took, limit_s, "%s %s took %.2f s under the flood" % (method, path, took))


class SlowlorisDefaults(FloodCase):
    """The default limits: 1500 half-open connections from one address to the API and to
    the E2B port hold at most --max-connections-per-ip each, and keyed clients still get in."""

    def test_flood_from_one_address(self):
        floods = []
        try:
            for port in (self.spaced.port, self.e2b_port):
                floods.append(HalfOpen(port, 1500))
            time.sleep(1.0)
            for f in floods:
                held = f.alive()
                log("half-open connections held: %d of %d" % (held, len(f.socks)))
                self.assertLessEqual(held, 512, "the per-address limit (512) did not hold")
                self.assertGreater(held, 0)
            self.authenticated_requests_answered()
            # A second address is not limited by the first one's count.
            self.assertEqual(timed_request(self.spaced.port, "GET", "/v1/health", {})[0], 200)
        finally:
            for f in floods:
                f.close()
        self.assertTrue(self.spaced.alive())


class SlowlorisManyAddresses(FloodCase):
    """No per-address limit in the way (as when an attacker has many addresses): the cap on
    unauthenticated connections cuts the oldest, so keyed clients still get in."""

    extra = ["--max-connections-per-ip", "4096", "--max-unauthenticated", "200", "--header-timeout", "30"]

    def test_flood_is_capped_and_keyed_clients_get_in(self):
        floods = []
        try:
            for port in (self.spaced.port, self.e2b_port):
                floods.append(HalfOpen(port, 1500))
            time.sleep(1.0)
            for f in floods:
                held = f.alive()
                log("half-open connections held: %d of %d" % (held, len(f.socks)))
                self.assertLessEqual(held, 200, "more unauthenticated connections held than --max-unauthenticated")
                self.assertGreater(held, 100)
            self.authenticated_requests_answered()
        finally:
            for f in floods:
                f.close()

    def test_authenticated_stream_survives_flood(self):
        """An authenticated, idle keep-alive connection is not cut to make room."""
        conn = http.client.HTTPConnection("127.0.0.1", self.spaced.port, timeout=10)
        conn.request("GET", "/v1/sandboxes", headers={"Authorization": "Bearer " + self.spaced.key})
        self.assertEqual(conn.getresponse().read()[:1], b"{")
        flood = HalfOpen(self.spaced.port, 1000)
        try:
            conn.request("GET", "/v1/sandboxes", headers={"Authorization": "Bearer " + self.spaced.key})
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            resp.read()
        finally:
            flood.close()
            conn.close()


class HeaderTimeout(FloodCase):
    """--header-timeout 2: an unfinished header is cut after ~2 s of silence; a long quiet
    authenticated stream is not."""

    extra = ["--header-timeout", "2"]

    def closes_after(self, port, payload):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(payload)
            t0 = time.monotonic()
            try:
                while s.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            return time.monotonic() - t0

    def test_half_header_is_closed(self):
        for port in (self.spaced.port, self.e2b_port):
            took = self.closes_after(port, HALF_HEADER)
            log("half header on %d closed after %.2f s" % (port, took))
            self.assertGreater(took, 1.0)
            self.assertLess(took, 6.0)

    def test_unauthenticated_body_is_closed(self):
        """A client without a key cannot hold a connection by trickling a body either."""
        took = self.closes_after(self.spaced.port, b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
                                                    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        self.assertLess(took, 6.0)

    def test_quiet_stream_is_not_cut(self):
        _, c = self.spaced.api("POST", "/v1/sandboxes/%s/commands" % self.sid,
                               {"cmd": ["sh", "-c", "sleep 6; echo done"]}, key=self.token, expect=201)
        t0 = time.monotonic()
        st = self.spaced.events("/v1/sandboxes/%s/commands/%s/events?keepalive_s=60" % (self.sid, c["command_id"]), key=self.token,
                                timeout=30)
        try:
            got = []
            for ev in st:
                got.append(ev)
                if ev.get("event") == "exit":
                    break
        finally:
            st.close()
        self.assertGreater(time.monotonic() - t0, 5.0)
        self.assertEqual(got[-1].get("event"), "exit", got)
        out = b"".join(base64.b64decode(json.loads(e["data"])["data"]) for e in got if e.get("event") == "stdout")
        self.assertEqual(out, b"done\n")

    def test_quiet_upload_is_not_cut(self):
        """An authenticated upload that pauses longer than the header timeout completes."""
        with socket.create_connection(("127.0.0.1", self.spaced.port), timeout=30) as s:
            s.sendall(("PUT /v1/sandboxes/%s/files?path=/tmp/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                       "Content-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\nab" % (self.sid, self.token)).encode())
            time.sleep(4)
            s.sendall(b"cd")
            head = s.recv(4096)
        self.assertTrue(head.startswith(b"HTTP/1.1 20"), head[:200])


if __name__ == "__main__":
    unittest.main()
