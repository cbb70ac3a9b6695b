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
        conn = self.spaced.connection(timeout=10)
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


class StrictInput(SpacedTestCase):
    """Input that used to be accepted: a body on a route that takes none, JSON without its
    Content-Type, query parameters without a value or with a NUL, a mode above 4 digits.
    Each is refused with a JSON 4xx and changes nothing."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.spaced.create()
        _, s = cls.spaced.api("POST", "/v1/sandboxes/%s/sessions" % cls.sid, {}, expect=201)
        cls.session, cls.token = s["session_id"], s["attach_token"]

    def refused(self, resp, status=400, code="invalid_request"):
        self.assertError(resp, status, code)

    def key_ids(self):
        return [k["id"] for k in self.spaced.api("GET", "/v1/keys", expect=200)[1]["keys"]]

    def test_body_on_routes_without_one(self):
        _, k = self.spaced.api("POST", "/v1/keys", {"name": "strict"}, expect=201)
        kid = k["key"]["id"] if "key" in k else k["id"]
        self.refused(self.spaced.request("DELETE", "/v1/keys/%s" % kid, {"why": "not"}))
        self.refused(self.spaced.request("DELETE", "/v1/keys/%s" % kid, {}))
        self.assertIn(kid, self.key_ids())
        self.refused(self.spaced.request("DELETE", "/v1/sandboxes/%s/sessions/%s" % (self.sid, self.session), {}))
        self.assertEqual(self.spaced.request("GET", "/v1/sandboxes/%s/commands" % self.sid, key=self.token)[0], 200)
        self.spaced.sh(self.sid, "echo keep > /tmp/keep")
        self.refused(self.spaced.request("DELETE", "/v1/sandboxes/%s/files?path=/tmp/keep" % self.sid, {}, key=self.token))
        self.assertEqual(self.spaced.sh(self.sid, "cat /tmp/keep")["stdout"], "keep\n")
        # Real objects (an unknown id is 404 before any body is read, docs/tenancy.md): the
        # refusal changes nothing.
        _, d = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % self.sid, {}, expect=200)
        snap = d["snapshot"]["id"]
        self.refused(self.spaced.request("DELETE", "/v1/snapshots/%s" % snap, {}))
        self.assertEqual(self.spaced.request("GET", "/v1/snapshots/%s" % snap)[0], 200)
        self.refused(self.spaced.request("POST", "/v1/templates/layers/prune", {"older_than": 0}))
        op = self.spaced.api("GET", "/v1/operations?target=%s" % self.sid, expect=200)[1]["operations"][0]
        self.refused(self.spaced.request("POST", "/v1/operations/%s/cancel" % op["id"], {"x": 1}))
        self.assertEqual(self.spaced.api("GET", "/v1/operations/%s" % op["id"], expect=200)[1]["state"], op["state"])
        self.refused(self.spaced.request("GET", "/v1/sandboxes", {"a": 1}))
        # No-fields routes take nothing but {} or no body.
        self.refused(self.spaced.request("POST", "/v1/sandboxes/%s/commands/cmd-0/stdin/close" % self.sid, {"x": 1},
                                         key=self.token))
        self.refused(self.spaced.request("POST", "/v1/sandboxes/%s/pause" % self.sid, {"x": 1}))
        self.assertEqual(self.spaced.get(self.sid)["state"], "running")
        # and the same without a body are fine
        self.assertEqual(self.spaced.request("DELETE", "/v1/keys/%s" % kid)[0], 204)

    def test_json_without_content_type(self):
        before = self.key_ids()
        for ct in (None, "text/plain", "application/jsonp"):
            headers = {"Content-Type": ct} if ct else {}
            self.refused(self.spaced.request("POST", "/v1/keys", raw=b'{"name": "no-ct"}', headers=headers), 415,
                         "unsupported_media_type")
        self.assertEqual(self.key_ids(), before)

    def test_query_without_value_or_with_nul(self):
        before = self.spaced.list_ids()
        for q in ("wait", "wait=%00", "wait=true%00", "wait=", "wait&timeout_s=5"):
            self.refused(self.spaced.request("POST", "/v1/sandboxes?" + q, {}))
        self.assertEqual(self.spaced.list_ids(), before)
        self.refused(self.spaced.request("GET", "/v1/sandboxes?state"))

    def test_mode_above_four_digits(self):
        for mode in ("07777", "000644"):
            self.refused(self.spaced.request("PUT", "/v1/sandboxes/%s/files?path=/tmp/m&mode=%s" % (self.sid, mode),
                                             raw=b"x", key=self.token, headers={"Content-Type": "application/octet-stream"}))
        self.assertEqual(self.spaced.sh(self.sid, "test -e /tmp/m; echo $?")["stdout"], "1\n")


class ErrorShape(FloodCase):
    """Every error a client can get has its front door's JSON shape, on bad requests too;
    what libmicrohttpd answers before spaced sees the request (api/http_error_page.h) keeps
    its status and closes the connection."""

    def answer(self, port, payload):
        out = raw_exchange(port, payload, timeout=5)
        head, _, body = out.partition(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        return int(lines[0].split()[1]), {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}, body

    def test_spaced_errors_are_json(self):
        cases = [
            (b"GET /v1/" + b"a" * 2000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 404),
            (b"FOO /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", None),
            (b"GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", None),
            (b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
             b"Content-Length: 1100000\r\n\r\n" + b" " * 1100000, None),
        ]
        for port, shape in ((self.spaced.port, "api"), (self.e2b_port, "e2b")):
            for payload, want in cases:
                status, headers, body = self.answer(port, payload)
                self.assertGreaterEqual(status, 400)
                if want:
                    self.assertEqual(status, want)
                self.assertTrue(headers.get("content-type", "").startswith("application/json"), (payload[:40], headers))
                j = json.loads(body)
                if shape == "api":
                    self.assertIsInstance(j["error"]["code"], str)
                    self.assertIsInstance(j["error"]["message"], str)
                else:
                    self.assertIsInstance(j["code"], int)
                    self.assertIsInstance(j["message"], str)

    def test_library_errors_keep_status_and_close(self):
        cases = [
            (b"GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n", 431),
            (b"GET /v1/" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            (b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
            (b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413),
            (b"GET /v1/health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
            (b"GET /v1/health HTTP/3.0\r\nHost: x\r\n\r\n", 505),
        ]
        codes = {400: "invalid_request", 413: "payload_too_large", 414: "uri_too_long", 431: "headers_too_large",
                 505: "http_version_not_supported"}
        for port, shape in ((self.spaced.port, "api"), (self.e2b_port, "e2b")):
            for payload, want in cases:
                status, headers, body = self.answer(port, payload)
                self.assertEqual(status, want, payload[:60])
                self.assertEqual(headers.get("connection", "").lower(), "close")
                # libmicrohttpd answers these itself: its HTML page must not reach the client.
                self.assertTrue(headers.get("content-type", "").startswith("application/json"), (payload[:60], headers, body))
                self.assertNotIn(b"<", body, payload[:60])
                j = json.loads(body)
                if shape == "api":
                    self.assertEqual(j["error"]["code"], codes[want], payload[:60])
                    self.assertGreater(len(j["error"]["message"]), 10)
                else:
                    self.assertEqual(j["code"], want, payload[:60])
                    self.assertGreater(len(j["message"]), 10)


if __name__ == "__main__":
    unittest.main()
