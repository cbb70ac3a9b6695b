"""The upstreams of test_network_egress.py, run inside a network namespace the test made
(never the internet): an HTTP server on :80 (/slow streams for 30 s), a TLS server on :443
(its own self-signed certificate; it records the SNI it was asked for), a UDP sink on :9999
and a DNS server on :53 with a small zone. Every request is appended to LOG as one line (HTTP:
with its method and the Authorization headers it came with, for test_credentials.py).

usage: egress_upstream.py LOG CERT KEY ZONE_JSON"""

import json
import socket
import socketserver
import ssl
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

LOG, CERT, KEY, ZONE = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
lock = threading.Lock()


def record(line):
    with lock, open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        local = self.connection.getsockname()[0]
        auth = self.headers.get_all("Authorization") or []
        record("http local=%s host=%s path=%s sni=%s method=%s nauth=%d auth=%s" % (
            local, self.headers.get("Host"), self.path, getattr(self.connection, "sni", "-"), self.command, len(auth),
            "|".join(auth) or "-"))
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/slow"):
            return self.slow()
        body = ("hello from %s via %s\n" % (self.headers.get("Host"), local)).encode()
        if self.path.startswith("/big"):
            body = bytes(range(256)) * (4 * 4096)  # 4 MiB
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def slow(self):
        """A line every 0.1 s for 30 s: a connection that stays open (until the gateway
        closes it); how many lines went out is recorded when it ends."""
        import time
        self.send_response(200)
        self.end_headers()
        ticks, how = 0, "done"
        try:
            while ticks < 300:
                self.wfile.write(b"tick\n")
                self.wfile.flush()
                ticks += 1
                time.sleep(0.1)
        except OSError as e:
            how = "closed (%s)" % e.__class__.__name__
        record("slow-end path=%s ticks=%d how=%s" % (self.path, ticks, how))
        self.close_connection = True

    def log_message(self, *a):
        pass


class Threaded(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def tls_server():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)

    def on_sni(sock, name, _ctx):
        sock.sni = name
        record("tls sni=%s" % name)
    ctx.sni_callback = on_sni
    srv = Threaded(("0.0.0.0", 443), Handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


def udp_sink():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 9999))
    while True:
        data, peer = s.recvfrom(2048)
        record("udp from=%s len=%d" % (peer[0], len(data)))


def dns_server():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 53))
    while True:
        msg, peer = s.recvfrom(2048)
        if len(msg) < 12:
            continue
        qid, flags, qd = struct.unpack(">HHH", msg[:6])
        off, labels = 12, []
        while off < len(msg) and msg[off]:
            labels.append(msg[off + 1:off + 1 + msg[off]].decode("ascii", "replace"))
            off += 1 + msg[off]
        qtype = struct.unpack(">H", msg[off + 1:off + 3])[0]
        question = msg[12:off + 5]
        name = ".".join(labels).lower()
        record("dns name=%s qtype=%d from=%s" % (name, qtype, peer[0]))
        addr = ZONE.get(name)
        answers = b""
        if addr and qtype == 1:
            answers = struct.pack(">HHHIH", 0xc00c, 1, 1, 30, 4) + socket.inet_aton(addr)
        rcode = 0 if addr else 3
        s.sendto(struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, 1 if answers else 0, 0, 0) + question + answers, peer)


for fn in (tls_server, udp_sink, dns_server):
    threading.Thread(target=fn, daemon=True).start()
record("ready")
Threaded(("0.0.0.0", 80), Handler).serve_forever()
