"""TLS on every TCP listener (--tls-cert/--tls-key): the API, the E2B front door and the
keyless metrics listener speak TLS with the operator's certificate; a client that trusts
the operator's CA gets through (Python, and the space CLI with SPACE_CA_CERT), one that
does not is refused, plain HTTP gets no answer; the unix socket stays plain. A bad
certificate, a key that is not its certificate's, or only one of the two flags: spaced
refuses to start, saying why, and leaves nothing behind. SIGHUP re-reads the certificate and
key: new connections get the new pair, open ones keep theirs, and a pair that does not load
leaves the old one in force. A test CA made here with openssl."""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

from spaced_harness import SPACED, SPACE_AGENT, Spaced, SpacedTestCase, free_port, require_root


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def make_leaf(d, name):
    """NAME.key and NAME.pem: a certificate for 127.0.0.1 signed by the CA of d."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "san.ext", "-out", name + ".pem", cwd=d)
    os.chmod(os.path.join(d, name + ".key"), 0o600)


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1 signed by it, and a second, unrelated key."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=space test CA", "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    make_leaf(d, "server")
    openssl("genpkey", "-algorithm", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", "other.key", cwd=d)
    for k in ("server.key", "other.key", "ca.key"):
        os.chmod(os.path.join(d, k), 0o600)


class TLS(SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        cls.pki = tempfile.mkdtemp(prefix="spit-pki-", dir="/tmp")
        make_pki(cls.pki)
        cls.e2b_port, cls.metrics_port = free_port(), free_port()
        cls.sock = os.path.join(cls.pki, "api.sock")
        cls.spaced_kwargs = {"extra_args": [
            "--tls-cert", os.path.join(cls.pki, "server.pem"), "--tls-key", os.path.join(cls.pki, "server.key"),
            "--e2b-listen", "127.0.0.1:%d" % cls.e2b_port, "--metrics-listen", "127.0.0.1:%d" % cls.metrics_port,
            "--unix-socket", cls.sock]}
        cls.trusting = ssl.create_default_context(cafile=os.path.join(cls.pki, "ca.pem"))
        sp = Spaced(**cls.spaced_kwargs)
        sp.tls_context = cls.trusting
        sp.url = "https://127.0.0.1:%d" % sp.port
        cls.spaced = sp
        try:
            sp.start()
        except Exception:
            sp.cleanup()
            shutil.rmtree(cls.pki, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.pki, ignore_errors=True)

    def get(self, port, path, context, headers=None):
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=context)
        try:
            conn.request("GET", path, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def test_api_over_tls(self):
        sp = self.spaced
        sid = self.new_sandbox()
        _, out = sp.api("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["echo", "over tls"]}, expect=200)
        self.assertEqual(out["stdout"], "over tls\n")
        # The connection really was TLS, with the operator's certificate.
        with socket.create_connection(("127.0.0.1", sp.port), timeout=30) as raw:
            with self.trusting.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                self.assertIn(tls.version(), ("TLSv1.2", "TLSv1.3"))
                self.assertEqual(dict(x[0] for x in tls.getpeercert()["subject"])["commonName"], "127.0.0.1")
        self.assertIn("listening on https://127.0.0.1:%d" % sp.port, open(sp.out_path).read())

    def test_library_errors_are_json_over_tls(self):
        # libmicrohttpd answers a bad Content-Length itself; over TLS too the client gets the
        # JSON answer (written into the TLS session), not the library's HTML page.
        for port, shape in ((self.spaced.port, "api"), (self.e2b_port, "e2b")):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
                with self.trusting.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    tls.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
                    out = b""
                    while True:
                        try:
                            chunk = tls.recv(65536)
                        except (ssl.SSLError, ConnectionError):
                            break
                        if not chunk:
                            break
                        out += chunk
            head, _, body = out.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 400 "), out[:200])
            self.assertIn(b"content-type: application/json", head.lower())
            j = json.loads(body)
            if shape == "api":
                self.assertEqual(j["error"]["code"], "invalid_request")
            else:
                self.assertEqual(j["code"], 400)

    def test_console_cookie_is_secure_over_tls(self):
        # No proxy header: the connection itself is TLS, so the cookie only travels over TLS.
        sp = self.spaced
        status, body = sp.request("POST", "/v1/console/session", {"api_key": sp.key}, key=None)
        self.assertEqual(status, 201, body)
        attrs = [a.strip() for a in sp.last_headers["Set-Cookie"].split(";")]
        self.assertIn("Secure", attrs)
        self.assertIn("HttpOnly", attrs)

    def test_untrusted_and_plain_clients_refused(self):
        sp = self.spaced
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.get(sp.port, "/v1/health", ssl.create_default_context())  # the system CAs do not know it
        # Plain HTTP to a TLS port: no HTTP answer comes back.
        conn = http.client.HTTPConnection("127.0.0.1", sp.port, timeout=10)
        try:
            with self.assertRaises((http.client.HTTPException, ConnectionError, OSError)):
                conn.request("GET", "/v1/health")
                resp = conn.getresponse()
                resp.read()
                self.fail("a plain request to the TLS port was answered: %s" % resp.status)
        finally:
            conn.close()

    def test_every_tcp_listener_speaks_tls(self):
        st, body = self.get(self.metrics_port, "/metrics", self.trusting)
        self.assertEqual(st, 200)
        self.assertIn(b"space_http_requests_total", body)
        made = self.spaced.cli("--json", "key", "create", "--e2b", "tls", env={"SPACE_CA_CERT": os.path.join(self.pki, "ca.pem")})
        self.assertEqual(made.returncode, 0, made.stderr)
        st, body = self.get(self.e2b_port, "/sandboxes", self.trusting,
                            headers={"X-API-KEY": json.loads(made.stdout)["secret"]})
        self.assertEqual(st, 200, body)
        self.assertIsInstance(json.loads(body), list)

    def test_unix_socket_stays_plain(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(self.sock)
        try:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:200])

    def test_cli_with_the_operators_ca(self):
        sp = self.spaced
        ok = sp.cli("--json", "sandbox", "ls", env={"SPACE_CA_CERT": os.path.join(self.pki, "ca.pem")})
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("sandboxes", json.loads(ok.stdout))
        refused = sp.cli("--json", "sandbox", "ls")
        self.assertNotEqual(refused.returncode, 0)
        self.assertRegex(refused.stderr.decode(), r"(?i)certificate|SSL")


def pem_der(path):
    return ssl.PEM_cert_to_DER_cert(open(path).read())


class TLSReload(SpacedTestCase):
    """The certificate is replaced while spaced runs (an operator's renewal): SIGHUP."""

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.pki = tempfile.mkdtemp(prefix="spit-pki-", dir="/tmp")
        make_pki(cls.pki)
        make_leaf(cls.pki, "renewed")
        cls.cert, cls.key = os.path.join(cls.pki, "live.pem"), os.path.join(cls.pki, "live.key")
        shutil.copy(os.path.join(cls.pki, "server.pem"), cls.cert)
        shutil.copy(os.path.join(cls.pki, "server.key"), cls.key)
        cls.trusting = ssl.create_default_context(cafile=os.path.join(cls.pki, "ca.pem"))
        sp = Spaced(extra_args=["--tls-cert", cls.cert, "--tls-key", cls.key])
        sp.tls_context = cls.trusting
        sp.url = "https://127.0.0.1:%d" % sp.port
        cls.spaced = sp
        try:
            sp.start()
        except Exception:
            sp.cleanup()
            shutil.rmtree(cls.pki, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.pki, ignore_errors=True)

    def served_der(self):
        with socket.create_connection(("127.0.0.1", self.spaced.port), timeout=30) as raw:
            with self.trusting.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                return tls.getpeercert(binary_form=True)

    def install(self, cert_src, key_src):
        shutil.copy(cert_src, self.cert)
        shutil.copy(key_src, self.key)

    def hup_and_wait(self, event):
        sp = self.spaced
        before = open(sp.err_path).read().count(event)
        sp.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 20
        while open(sp.err_path).read().count(event) == before:
            self.assertLess(time.time(), deadline, "no %s after SIGHUP: %s" % (event, sp.logs()))
            time.sleep(0.05)

    def test_renewed_certificate_reaches_new_connections_only(self):
        sp = self.spaced
        old, new = pem_der(os.path.join(self.pki, "server.pem")), pem_der(os.path.join(self.pki, "renewed.pem"))
        self.assertEqual(self.served_der(), old)
        # A keep-alive connection opened with the old certificate.
        conn = http.client.HTTPSConnection("127.0.0.1", sp.port, timeout=30, context=self.trusting)
        try:
            conn.request("GET", "/v1/health")
            resp = conn.getresponse()
            resp.read()
            self.assertEqual(resp.status, 200)
            self.assertEqual(conn.sock.getpeercert(binary_form=True), old)
            self.install(os.path.join(self.pki, "renewed.pem"), os.path.join(self.pki, "renewed.key"))
            self.hup_and_wait("spaced.tls_reloaded")
            self.assertEqual(self.served_der(), new)
            # The open connection goes on, with the certificate it was made with.
            conn.request("GET", "/v1/health")
            resp = conn.getresponse()
            resp.read()
            self.assertEqual(resp.status, 200)
            self.assertEqual(conn.sock.getpeercert(binary_form=True), old)
        finally:
            conn.close()
        # And the API works over the new one.
        _, out = sp.api("GET", "/v1/sandboxes", expect=200)
        self.assertIn("sandboxes", out)
        self.install(os.path.join(self.pki, "server.pem"), os.path.join(self.pki, "server.key"))
        self.hup_and_wait("spaced.tls_reloaded")
        self.assertEqual(self.served_der(), old)

    def test_a_pair_that_does_not_load_keeps_the_old_one(self):
        in_force = self.served_der()
        for cert, key, why in ((os.path.join(self.pki, "renewed.pem"), os.path.join(self.pki, "other.key"),
                                "not the key of the first certificate"),
                               (os.path.join(self.pki, "renewed.pem"), os.path.join(self.pki, "renewed.pem"),
                                "holds no PEM block")):
            self.install(cert, key)
            self.hup_and_wait("spaced.tls_reload_failed")
            self.assertIn(why, open(self.spaced.err_path).read())
            self.assertEqual(self.served_der(), in_force)
            _, out = self.spaced.api("GET", "/v1/health", expect=200)
        self.install(os.path.join(self.pki, "server.pem"), os.path.join(self.pki, "server.key"))
        self.hup_and_wait("spaced.tls_reloaded")


class TLSRefusals(unittest.TestCase):
    """Starts that must fail: each says why and exits non-zero before binding anything."""

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.pki = tempfile.mkdtemp(prefix="spit-pki-", dir="/tmp")
        make_pki(cls.pki)
        with open(os.path.join(cls.pki, "junk.pem"), "w") as f:
            f.write("not a certificate\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki, ignore_errors=True)

    def start_fails(self, *flags):
        state = tempfile.mkdtemp(prefix="spit-", dir="/tmp")
        port = free_port()
        try:
            p = subprocess.run([SPACED, "--state-dir", os.path.join(state, "s"), "--listen", "127.0.0.1:%d" % port,
                                "--pool-size", "2G", "--agent", SPACE_AGENT] + list(flags),
                               capture_output=True, timeout=120)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            # Nothing listens on the port it was given.
            with self.assertRaises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
            self.assertFalse(os.path.exists(os.path.join(state, "s", "pool.img")))
            return p.stderr.decode()
        finally:
            subprocess.run(["umount", "-l", os.path.join(state, "s", "pool")], capture_output=True)
            shutil.rmtree(state, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.pki, name)

    def test_only_one_of_the_two(self):
        self.assertIn("give both or neither", self.start_fails("--tls-cert", self.path("server.pem")))
        self.assertIn("give both or neither", self.start_fails("--tls-key", self.path("server.key")))

    def test_unreadable_or_not_pem(self):
        err = self.start_fails("--tls-cert", self.path("missing.pem"), "--tls-key", self.path("server.key"))
        self.assertIn("cannot read certificate", err)
        err = self.start_fails("--tls-cert", self.path("junk.pem"), "--tls-key", self.path("server.key"))
        self.assertIn("holds no PEM block", err)
        err = self.start_fails("--tls-cert", self.path("server.pem"), "--tls-key", self.path("server.pem"))
        self.assertIn("holds no PEM block", err)  # a certificate given as the key
        err = self.start_fails("--tls-cert", self.pki, "--tls-key", self.path("server.key"))
        self.assertIn("not a regular file", err)

    def test_key_of_another_certificate(self):
        err = self.start_fails("--tls-cert", self.path("server.pem"), "--tls-key", self.path("other.key"))
        self.assertIn("was refused", err)


if __name__ == "__main__":
    unittest.main()
