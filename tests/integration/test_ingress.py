"""Ingress: HTTP to TCP ports inside a sandbox (docs/api.md "Ports", docs/e2b.md), black box
against the real spaced. The servers run inside the sandboxes (busybox httpd with a CGI echo,
busybox nc for the hostile ones); the connections are made in the sandbox's own network
namespace, to its loopback. Both front doors: the v1 path form and the E2B listener (its
Host form <port>-<id>.<domain> and its path form)."""

import http.client
import json
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spaced_harness import Spaced, free_port, require_root, wait_for  # noqa: E402

DOMAIN = "sbx.test"

ECHO_CGI = """#!/bin/sh
echo "Content-Type: text/plain"
echo "X-Echo-Method: $REQUEST_METHOD"
echo ""
echo "method=$REQUEST_METHOD query=$QUERY_STRING xff=$HTTP_X_FORWARDED_FOR auth=$HTTP_AUTHORIZATION"
if [ -n "$CONTENT_LENGTH" ]; then head -c "$CONTENT_LENGTH"; fi
"""

# A WebSocket handshake in busybox sh (sha1sum, base64), then every byte back (cat): the
# frames come back as the client sent them, which is what a relay test needs.
WS_SH = r"""#!/bin/sh
key=""
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
  case "$line" in [Ss]ec-[Ww]eb[Ss]ocket-[Kk]ey:*) key=$(printf '%s' "${line#*:}" | tr -d ' ');; esac
done
hex=$(printf '%s' "${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11" | sha1sum | cut -d' ' -f1)
acc=$(printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')" | base64)
printf 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n' "$acc"
exec cat
"""

SERVE = ("mkdir -p /www/cgi-bin && echo hello-from-sandbox > /www/index.html && "
         "printf '%s' \"$ECHO\" > /www/cgi-bin/echo && chmod 755 /www/cgi-bin/echo && "
         "httpd -p 127.0.0.1:8080 -h /www")  # it listens before it goes to the background


def raw_request(port, method, path, body=None, headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), data
    finally:
        conn.close()


class Ingress(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.e2b_port = free_port()
        cls.sp = Spaced(extra_args=["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port, "--e2b-domain", DOMAIN,
                                    "--ingress-timeout", "3", "--ingress-connections", "8"])
        try:
            cls.sp.start()
            cls.sid = cls.sp.create()
            r = cls.sp.sh(cls.sid, SERVE, env={"ECHO": ECHO_CGI})
            assert r["exit_code"] == 0, r
        except Exception:
            cls.sp.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sp.cleanup()

    def v1(self, method, tail, body=None, headers=None, sid=None, key="admin", timeout=60):
        h = dict(headers or {})
        if key == "admin":
            key = self.sp.key
        if key:
            h["Authorization"] = "Bearer " + key
        return raw_request(self.sp.port, method, "/v1/sandboxes/%s/ports/%s" % (sid or self.sid, tail), body, h,
                           timeout=timeout)

    def assertSpacedError(self, got, status, code):
        st, headers, data = got
        self.assertEqual(st, status, data)
        self.assertEqual(json.loads(data)["error"]["code"], code, data)

    # ---- the v1 path form

    def test_get_through_v1(self):
        st, headers, data = self.v1("GET", "8080/index.html")
        self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))
        self.assertIn("sandbox", headers.get("content-security-policy", ""))

    def test_post_with_a_body_and_query_through_v1(self):
        body = os.urandom(300 * 1024).hex().encode()  # 600 KiB, streamed both ways
        st, headers, data = self.v1("POST", "8080/cgi-bin/echo?a=1&b=%2F", body, {"Content-Type": "text/plain"})
        self.assertEqual(st, 200, data[:300])
        first, rest = data.split(b"\n", 1)
        self.assertIn(b"method=POST query=a=1&b=%2F xff=127.0.0.1 auth=", first)
        self.assertTrue(first.endswith(b"auth="), first)  # the API key stays with spaced
        self.assertEqual(rest, body)
        self.assertEqual(headers.get("x-echo-method"), "POST")

    def test_request_as_the_sandbox_sees_it(self):
        # nc records the raw request and answers at once
        script = ("printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\nX-Hop: 1\\r\\n"
                  "Keep-Alive: timeout=5\\r\\nSet-Cookie: a=b\\r\\n\\r\\nok' > /tmp/answer; rm -f /tmp/req; "
                  "(nc -l -p 8096 < /tmp/answer > /tmp/req 2>/dev/null &); sleep 0.3")
        self.assertEqual(self.sp.sh(self.sid, script)["exit_code"], 0)

        def chunks():
            yield b"first-"
            yield b"second"

        conn = http.client.HTTPConnection("127.0.0.1", self.sp.port, timeout=60)
        try:
            conn.putrequest("PUT", "/v1/sandboxes/%s/ports/8096/a%%20b//c?x=%%2F&flag" % self.sid, skip_accept_encoding=True)
            for k, v in (("Authorization", "Bearer " + self.sp.key), ("Cookie", "space_console=secret"),
                         ("Connection", "keep-alive, X-Hop-Request"), ("X-Hop-Request", "drop me"),
                         ("X-Forwarded-For", "6.6.6.6"), ("X-Custom", "kept"), ("Transfer-Encoding", "chunked")):
                conn.putheader(k, v)
            conn.endheaders()
            for c in chunks():
                conn.send(b"%x\r\n%s\r\n" % (len(c), c))
            conn.send(b"0\r\n\r\n")
            resp = conn.getresponse()
            body = resp.read()
            headers = dict((k.lower(), v) for k, v in resp.getheaders())
        finally:
            conn.close()
        self.assertEqual((resp.status, body), (200, b"ok"))
        self.assertNotIn("x-hop", headers.get("connection", "").lower())
        self.assertNotIn("keep-alive", headers)
        self.assertNotIn("set-cookie", headers)  # the API's origin: no cookies from a sandbox
        wait_for(lambda: "0\r\n\r\n" in self.sp.sh(self.sid, "cat /tmp/req")["stdout"], timeout=20, what="the request")
        seen = self.sp.sh(self.sid, "cat /tmp/req")["stdout"]
        head, body = seen.split("\r\n\r\n", 1)
        lines = head.split("\r\n")
        self.assertEqual(lines[0], "PUT /a%20b//c?x=%2F&flag HTTP/1.1")
        names = dict((l.split(":", 1)[0].lower(), l.split(":", 1)[1].strip()) for l in lines[1:])
        for gone in ("authorization", "cookie", "x-hop-request", "keep-alive"):
            self.assertNotIn(gone, names)
        self.assertEqual(names["x-custom"], "kept")
        self.assertEqual(names["x-forwarded-for"], "127.0.0.1")
        self.assertEqual(names["x-forwarded-proto"], "http")
        self.assertEqual(names["transfer-encoding"], "chunked")
        self.assertEqual(names["connection"], "close")
        # the body, re-chunked as it came in, decodes to what was sent
        decoded, rest = b"", body.encode()
        while True:
            size, rest = rest.split(b"\r\n", 1)
            n = int(size, 16)
            if n == 0:
                break
            decoded, rest = decoded + rest[:n], rest[n + 2:]
        self.assertEqual(decoded, b"first-second")

    def test_head(self):
        st, headers, data = self.v1("HEAD", "8080/index.html")
        self.assertEqual((st, data), (200, b""))

    def test_nothing_listening_is_502(self):
        self.assertSpacedError(self.v1("GET", "8099/"), 502, "bad_gateway")

    def test_bad_port_is_400(self):
        for port in ("0", "65536", "08080", "http"):
            self.assertSpacedError(self.v1("GET", port + "/"), 400, "invalid_request")

    def test_needs_a_key(self):
        st, _, _ = self.v1("GET", "8080/", key=None)
        self.assertEqual(st, 401)

    def test_another_projects_sandbox_is_404(self):
        self.sp.api("POST", "/v1/projects", {"id": "ingress-other"}, expect=(201, 409))
        _, body = self.sp.api("POST", "/v1/keys", {"name": "ing-other", "project": "ingress-other", "role": "developer"},
                              expect=201)
        other = body["secret"]
        self.assertSpacedError(self.v1("GET", "8080/", key=other), 404, "not_found")
        self.assertSpacedError(self.v1("GET", "8080/", sid="sb-0000000000000000"), 404, "not_found")

    # ---- WebSocket (HTTP Upgrade)

    def websocket_round_trip(self, port, path, host):
        import base64
        import hashlib
        self.assertEqual(self.sp.sh(self.sid, "printf '%s' \"$WS\" > /ws.sh && chmod 755 /ws.sh && "
                                    "(nc -l -p 8095 -e /ws.sh >/dev/null 2>&1 &); sleep 0.3", env={"WS": WS_SH})
                         ["exit_code"], 0)
        key = base64.b64encode(os.urandom(16)).decode()
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        try:
            s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
                       % (path, host, key, "Authorization: Bearer %s\r\n" % self.sp.key if port == self.sp.port else ""))
                      .encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                self.assertTrue(chunk, "closed before the 101: %r" % head)
                head += chunk
            head, rest = head.split(b"\r\n\r\n", 1)
            lines = head.decode().split("\r\n")
            self.assertTrue(lines[0].startswith("HTTP/1.1 101"), head)
            headers = dict((k.strip().lower(), v.strip()) for k, v in (l.split(":", 1) for l in lines[1:]))
            want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
            self.assertEqual(headers.get("sec-websocket-accept"), want.decode())
            self.assertEqual(headers.get("upgrade", "").lower(), "websocket")
            for text in (b"hello ws", b"second frame " * 9):  # under 126 bytes: a one-byte length
                mask = os.urandom(4)
                frame = bytes([0x81, 0x80 | len(text)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(text))
                s.sendall(frame)
                got = rest
                while len(got) < len(frame):
                    chunk = s.recv(4096)
                    self.assertTrue(chunk, "closed mid-frame")
                    got += chunk
                rest = got[len(frame):]
                self.assertEqual(got[:len(frame)], frame)  # the echo: the same frame back
                payload = bytes(b ^ got[2:6][i % 4] for i, b in enumerate(got[6:len(frame)]))
                self.assertEqual(payload, text)
        finally:
            s.close()
        # the relay ended with the client: the port's places are free again
        wait_for(lambda: self.v1("GET", "8080/index.html")[0] == 200, timeout=20, what="the port again")

    def test_websocket_through_v1(self):
        self.websocket_round_trip(self.sp.port, "/v1/sandboxes/%s/ports/8095/ws" % self.sid, "127.0.0.1")

    def test_websocket_through_e2b_host(self):
        self.websocket_round_trip(self.e2b_port, "/ws", "8095-%s.%s" % (self.sid, DOMAIN))

    def test_abandoned_upgrades_give_their_places_back(self):
        self.assertEqual(self.sp.sh(self.sid, "printf '%s' \"$WS\" > /ws.sh && chmod 755 /ws.sh && "
                                    "(nc -ll -p 8097 -e /ws.sh >/dev/null 2>&1 &); sleep 0.3", env={"WS": WS_SH})
                         ["exit_code"], 0)
        import struct
        for i in range(12):  # more than --ingress-connections (8)
            s = socket.create_connection(("127.0.0.1", self.sp.port), timeout=30)
            s.sendall(("GET /v1/sandboxes/%s/ports/8097/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                       "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n" % (self.sid, self.sp.key)).encode())
            if i % 2:
                time.sleep(0.2)  # some after the 101 came, some before
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        # every place comes back: eight connections at once still fit
        def eight_fit():
            conns = []
            try:
                for _ in range(8):
                    c = http.client.HTTPConnection("127.0.0.1", self.sp.port, timeout=30)
                    c.putrequest("GET", "/v1/sandboxes/%s/ports/8080/cgi-bin/echo" % self.sid)
                    c.putheader("Authorization", "Bearer " + self.sp.key)
                    c.putheader("Content-Length", "1")
                    c.endheaders()  # the body's byte is held back: each holds its place
                    conns.append(c)
                time.sleep(0.3)
                ninth = self.v1("GET", "8080/index.html")[0]
                held = []
                for c in conns:
                    c.send(b"x")
                    r = c.getresponse()
                    r.read()
                    held.append(r.status)
                # the eight had their places (none was left to a leak), the ninth had none
                return held == [200] * 8 and ninth == 503
            finally:
                for c in conns:
                    c.close()
        wait_for(eight_fit, timeout=30, what="the eight places of the sandbox")

    # ---- gVisor: its network stack is its own; the agent relays

    def test_gvisor_sandbox_through_its_agent(self):
        import shutil
        self.assertTrue(shutil.which("runsc"), "runsc is not installed (scripts/install-deps installs it)")
        sid = self.sp.create(runtime="gvisor")
        try:
            self.assertEqual(self.sp.sh(sid, SERVE, env={"ECHO": ECHO_CGI})["exit_code"], 0)
            st, _, data = self.v1("GET", "8080/index.html", sid=sid)
            self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))
            body = b"g" * 200000
            st, _, data = self.v1("POST", "8080/cgi-bin/echo", body, sid=sid)
            self.assertEqual(st, 200, data[:200])
            self.assertTrue(data.endswith(body))
            self.assertSpacedError(self.v1("GET", "8099/", sid=sid), 502, "bad_gateway")
            st, _, data = self.e2b("GET", "/index.html", "8080-%s.%s" % (sid, DOMAIN))
            self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))
        finally:
            self.sp.destroy(sid)

    # ---- hostile servers

    def test_endless_headers_are_bounded(self):
        script = ("((printf 'HTTP/1.1 200 OK\\r\\n'; yes 'X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa') | "
                  "nc -l -p 8091 >/dev/null 2>&1 &); sleep 0.3")
        self.assertEqual(self.sp.sh(self.sid, script)["exit_code"], 0)
        self.assertSpacedError(self.v1("GET", "8091/"), 502, "bad_gateway")

    def test_a_server_that_never_answers_times_out_and_others_go_on(self):
        script = "(sleep 3600 | nc -l -p 8092 >/dev/null 2>&1 &); sleep 0.3"
        self.assertEqual(self.sp.sh(self.sid, script)["exit_code"], 0)
        got = {}

        def hang():
            got["r"] = self.v1("GET", "8092/")

        t = threading.Thread(target=hang)
        t.start()
        # while that one waits, the API and the good port answer
        st, _, data = self.v1("GET", "8080/index.html")
        self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))
        self.assertEqual(self.sp.request("GET", "/v1/health", key=None)[0], 200)
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertSpacedError(got["r"], 504, "timeout")

    def test_connections_per_sandbox_are_capped(self):
        script = "for p in $(seq 8100 8108); do (sleep 3600 | nc -l -p $p >/dev/null 2>&1 &); done; sleep 0.3"
        self.assertEqual(self.sp.sh(self.sid, script)["exit_code"], 0)
        results = []
        threads = [threading.Thread(target=lambda p=p: results.append(self.v1("GET", "%d/" % p)))
                   for p in range(8100, 8108)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # not an assertion on time: the 8 hold their places until the timeout

        over = self.v1("GET", "8108/")
        for t in threads:
            t.join(60)
        # the ninth was refused while the eight were held, or got its own timeout if one ended first
        self.assertIn(over[0], (503, 504), over)
        self.assertEqual(sorted(r[0] for r in results), [504] * 8)
        # the places are given back
        st, _, data = self.v1("GET", "8080/index.html")
        self.assertEqual(st, 200)

    # ---- the E2B listener

    def e2b(self, method, path, host, body=None, headers=None):
        h = dict(headers or {})
        h["Host"] = host
        return raw_request(self.e2b_port, method, path, body, h)

    def test_e2b_host_form(self):
        st, headers, data = self.e2b("GET", "/index.html", "8080-%s.%s" % (self.sid, DOMAIN))
        self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))
        self.assertNotIn("content-security-policy", headers)  # an origin of its own
        body = b"x" * 100000
        st, _, data = self.e2b("POST", "/cgi-bin/echo?z=9", "8080-%s.%s:%d" % (self.sid, DOMAIN, self.e2b_port), body)
        self.assertEqual(st, 200, data[:200])
        self.assertTrue(data.startswith(b"method=POST query=z=9"), data[:200])
        self.assertTrue(data.endswith(body))

    def test_e2b_envd_host_is_envd(self):
        # getHost(49983) is envd's own host on E2B: the envd routes answer there
        st, _, data = self.e2b("GET", "/health", "49983-%s.%s" % (self.sid, DOMAIN), headers={"E2b-Sandbox-Id": self.sid})
        self.assertEqual(st, 204, data)

    def test_e2b_path_form(self):
        st, _, data = self.e2b("GET", "/sandboxes/%s/ports/8080/index.html" % self.sid, "127.0.0.1")
        self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))

    def test_e2b_errors(self):
        st, _, data = self.e2b("GET", "/", "8099-%s.%s" % (self.sid, DOMAIN))
        self.assertEqual(st, 502, data)
        self.assertEqual(json.loads(data)["code"], 502)
        st, _, data = self.e2b("GET", "/", "8080-sb-0000000000000000.%s" % DOMAIN)
        self.assertEqual(st, 404, data)

    def test_e2b_create_reports_the_domain(self):
        made = self.sp.cli("--json", "key", "create", "--e2b", "ingress")
        self.assertEqual(made.returncode, 0, made.stderr)
        key = json.loads(made.stdout)["secret"]
        st, _, data = raw_request(self.e2b_port, "GET", "/sandboxes/" + self.sid, headers={"X-API-KEY": key})
        self.assertEqual(st, 200, data)
        self.assertEqual(json.loads(data)["domain"], DOMAIN)
        # allowPublicTraffic must be a boolean; false makes the ports private (parity_test.mjs
        # drives the token through the SDK).
        st, _, data = raw_request(self.e2b_port, "POST", "/sandboxes", json.dumps(
            {"templateID": "busybox", "network": {"allowPublicTraffic": "no"}}).encode(),
            headers={"X-API-KEY": key, "Content-Type": "application/json"})
        self.assertEqual(st, 400, data)
        self.assertIn("allowPublicTraffic", json.loads(data)["message"])

    def test_e2b_private_ports_need_the_traffic_token(self):
        made = self.sp.cli("--json", "key", "create", "--e2b", "ingress-private")
        self.assertEqual(made.returncode, 0, made.stderr)
        key = json.loads(made.stdout)["secret"]
        st, _, data = raw_request(self.e2b_port, "POST", "/sandboxes", json.dumps(
            {"templateID": "busybox", "network": {"allowPublicTraffic": False}}).encode(),
            headers={"X-API-KEY": key, "Content-Type": "application/json"})
        self.assertEqual(st, 201, data)
        created = json.loads(data)
        sid, token = created["sandboxID"], created["trafficAccessToken"]
        self.sp.known_ids.add(sid)
        self.assertRegex(token, "^[0-9a-f]{64}$")
        self.assertEqual(self.sp.sh(sid, SERVE, env={"ECHO": ECHO_CGI})["exit_code"], 0)
        host = "8080-%s.%s" % (sid, DOMAIN)
        st, _, data = self.e2b("GET", "/index.html", host)
        self.assertEqual(st, 403, data)
        self.assertEqual(json.loads(data)["code"], 403)
        st, _, data = self.e2b("GET", "/index.html", host, headers={"e2b-traffic-access-token": token[:-1] + "x"})
        self.assertEqual(st, 403, data)
        st, _, data = self.e2b("GET", "/index.html", host, headers={"E2B-Traffic-Access-Token": token})
        self.assertEqual(st, 200, data)
        # The token stays on spaced's side: the sandbox's CGI sees every header but that one.
        self.assertEqual(self.sp.sh(sid, "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\nenv\\n' "
                                         "> /www/cgi-bin/env && chmod 755 /www/cgi-bin/env")["exit_code"], 0)
        st, _, data = self.e2b("GET", "/cgi-bin/env", host, headers={"e2b-traffic-access-token": token, "X-Seen": "yes"})
        self.assertEqual(st, 200, data)
        self.assertIn(b"HTTP_X_SEEN=yes", data)
        self.assertNotIn(token.encode(), data)
        self.assertNotIn(b"TRAFFIC", data.upper())
        st, _, data = raw_request(self.e2b_port, "GET", "/sandboxes/" + sid, headers={"X-API-KEY": key})
        self.assertEqual(json.loads(data)["network"], {"allowPublicTraffic": False})

    def test_paused_sandbox_wakes_on_e2b_traffic_not_on_v1(self):
        sid = self.sp.create()
        try:
            self.assertEqual(self.sp.sh(sid, SERVE, env={"ECHO": ECHO_CGI})["exit_code"], 0)
            self.sp.action(sid, "pause")
            self.assertEqual(self.sp.state(sid), "paused")
            self.assertSpacedError(self.v1("GET", "8080/", sid=sid), 409, "invalid_state")
            st, _, data = self.e2b("GET", "/index.html", "8080-%s.%s" % (sid, DOMAIN))
            self.assertEqual((st, data), (200, b"hello-from-sandbox\n"))
            self.assertEqual(self.sp.state(sid), "running")
        finally:
            self.sp.destroy(sid)


if __name__ == "__main__":
    unittest.main()
