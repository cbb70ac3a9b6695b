"""The web console's server side (docs/console.md): signing in exchanges an API key for an
HttpOnly, SameSite=Strict session cookie that authenticates control routes as the key
would; a cookie request that may change something needs the session's CSRF token; signing
out (or revoking the key) ends the session at once; the console's files are served from
one flat directory, with a Content-Security-Policy, and nothing outside it is reachable.
The pages themselves are driven in a real browser by tests/console."""

import http.client
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spaced_harness import Spaced, SpacedTestCase, require_root  # noqa: E402

COOKIE = "space_console"


def raw_get(port, path, method="GET", headers=None):
    """A request with the path sent exactly as given (no client normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class ConsoleSessionTest(SpacedTestCase):

    def sign_in(self, key=None, headers=None):
        status, body = self.spaced.request("POST", "/v1/console/session", {"api_key": key or self.spaced.key}, key=None,
                                           headers=headers)
        self.assertEqual(status, 201, body)
        cookie = self.spaced.last_headers["Set-Cookie"]
        token = cookie.split(";")[0].split("=", 1)[1]
        return token, cookie, body

    def as_cookie(self, method, path, token, csrf=None, body=None):
        h = {"Cookie": "%s=%s" % (COOKIE, token)}
        if csrf:
            h["X-Space-CSRF"] = csrf
        return self.spaced.request(method, path, body, key=None, headers=h)

    def make_key(self, role, name):
        status, body = self.spaced.request("POST", "/v1/keys", {"name": name, "role": role})
        self.assertEqual(status, 201, body)
        return body["secret"], body["key"]["id"] if "key" in body else body["id"]

    def test_sign_in_sets_a_strict_httponly_cookie_and_names_the_caller(self):
        token, cookie, body = self.sign_in()
        attrs = [a.strip() for a in cookie.split(";")]
        self.assertTrue(token.startswith("spcs_") and len(token) == 45, token)
        for a in ("Path=/", "HttpOnly", "SameSite=Strict"):
            self.assertIn(a, attrs)
        self.assertNotIn("Secure", attrs)  # plain HTTP: a Secure cookie would never come back
        self.assertTrue(any(a.startswith("Max-Age=") and 0 < int(a[8:]) <= 3600 for a in attrs), attrs)
        self.assertEqual(body["role"], "admin")
        self.assertIn("sandbox.write", body["permissions"])
        self.assertEqual(len(body["session"]["csrf_token"]), 40)
        self.assertNotIn(self.spaced.key, json.dumps(body))

    def test_the_audit_log_names_the_key_that_signed_in(self):
        status, _ = self.spaced.request("POST", "/v1/console/session", {"api_key": "space_" + "0" * 40}, key=None)
        self.assertEqual(status, 401)
        _, _, me = self.sign_in()
        status, body = self.spaced.request("GET", "/v1/audit?action=console.sign_in")
        self.assertEqual(status, 200, body)
        rows = {r["status"]: r for r in body["audit"]}
        self.assertEqual(rows[201]["key_id"], me["key_id"])
        self.assertEqual(rows[201]["target"], me["session"]["id"])
        self.assertIsNone(rows[401]["key_id"])

    def test_secure_behind_a_tls_proxy(self):
        _, cookie, _ = self.sign_in(headers={"X-Forwarded-Proto": "https"})
        self.assertIn("Secure", [a.strip() for a in cookie.split(";")])

    def test_a_bad_key_or_body_gets_no_session(self):
        for body, want in (({"api_key": "space_" + "0" * 40}, 401), ({}, 400), ({"api_key": 7}, 400),
                           ({"api_key": "x", "role": "admin"}, 400)):
            status, answer = self.spaced.request("POST", "/v1/console/session", body, key=None)
            self.assertEqual(status, want, (body, answer))
            self.assertNotIn("Set-Cookie", self.spaced.last_headers)
        # a cross-site form cannot post JSON: the route wants application/json
        status, _ = self.spaced.request("POST", "/v1/console/session", key=None, raw=b"api_key=x",
                                        headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertEqual(status, 415)

    def test_the_cookie_is_the_key_and_writes_need_the_csrf_token(self):
        token, _, me = self.sign_in()
        csrf = me["session"]["csrf_token"]
        status, body = self.as_cookie("GET", "/v1/sandboxes", token)
        self.assertEqual(status, 200, body)
        status, body = self.as_cookie("GET", "/v1/console/session", token)
        self.assertEqual((status, body["session"]["csrf_token"]), (200, csrf))
        for bad in (None, "0" * 40, csrf[:-1]):
            status, body = self.as_cookie("POST", "/v1/keys", token, csrf=bad, body={"name": "nope", "role": "viewer"})
            self.assertEqual(status, 403, body)
            self.assertIn("X-Space-CSRF", body["error"]["message"])
        status, body = self.as_cookie("POST", "/v1/keys", token, csrf=csrf, body={"name": "by-cookie", "role": "viewer"})
        self.assertEqual(status, 201, body)
        # an Authorization header wins over the cookie (a key's request needs no CSRF token)
        status, body = self.spaced.request("GET", "/v1/console/session", headers={"Cookie": "%s=%s" % (COOKIE, token)})
        self.assertEqual((status, body["session"]), (200, None))

    def test_a_viewer_cookie_has_a_viewers_permissions(self):
        secret, _ = self.make_key("viewer", "console-viewer")
        token, _, me = self.sign_in(secret)
        self.assertEqual(me["role"], "viewer")
        self.assertNotIn("sandbox.write", me["permissions"])
        status, body = self.as_cookie("DELETE", "/v1/sandboxes/sb-0000000000000000", token, csrf=me["session"]["csrf_token"])
        self.assertEqual(status, 403, body)
        self.assertIn("sandbox.write", body["error"]["message"])

    def test_sign_out_ends_the_session_on_the_server(self):
        token, _, me = self.sign_in()
        csrf = me["session"]["csrf_token"]
        status, _ = self.as_cookie("DELETE", "/v1/console/session", token)  # no CSRF token: refused
        self.assertEqual(status, 403)
        status, _ = self.as_cookie("DELETE", "/v1/console/session", token, csrf=csrf)
        self.assertEqual(status, 204)
        self.assertIn("Max-Age=0", self.spaced.last_headers["Set-Cookie"])
        status, body = self.as_cookie("GET", "/v1/sandboxes", token)
        self.assertEqual(status, 401, body)
        status, body = self.spaced.request("DELETE", "/v1/console/session")  # a key has no session to end
        self.assertEqual(status, 404, body)

    def test_revoking_the_key_ends_its_sessions(self):
        secret, key_id = self.make_key("developer", "console-revoked")
        token, _, _ = self.sign_in(secret)
        self.assertEqual(self.as_cookie("GET", "/v1/sandboxes", token)[0], 200)
        status, _ = self.spaced.request("DELETE", "/v1/keys/" + key_id)
        self.assertEqual(status, 204)
        self.assertEqual(self.as_cookie("GET", "/v1/sandboxes", token)[0], 401)

    def test_a_made_up_cookie_is_refused(self):
        for token in ("spcs_" + "0" * 40, "", "space_" + "1" * 40, "x" * 300):
            self.assertEqual(self.as_cookie("GET", "/v1/sandboxes", token)[0], 401, token)

    def test_the_console_page_is_served_with_a_csp(self):
        for path, ctype in (("/console", "text/html"), ("/console/", "text/html"), ("/console/app.js", "text/javascript"),
                            ("/console/style.css", "text/css"), ("/console/xterm.mjs", "text/javascript")):
            status, headers, body = raw_get(self.spaced.port, path)
            self.assertEqual(status, 200, path)
            self.assertTrue(headers["content-type"].startswith(ctype), (path, headers))
            csp = headers["content-security-policy"]
            self.assertIn("default-src 'none'", csp)
            self.assertIn("script-src 'self'", csp)
            self.assertIn("connect-src 'self'", csp)
            self.assertEqual(headers["x-content-type-options"], "nosniff")
            self.assertTrue(body)
        status, headers, body = raw_get(self.spaced.port, "/console/app.js", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(raw_get(self.spaced.port, "/console/app.js", method="POST")[0], 405)


class ConsoleFilesTest(unittest.TestCase):
    """A console directory holding what must not be served."""

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.dir = tempfile.mkdtemp(prefix="console-")
        with open(os.path.join(cls.dir, "index.html"), "w") as f:
            f.write("<p>index</p>")
        with open(os.path.join(cls.dir, ".hidden.js"), "w") as f:
            f.write("hidden")
        with open(os.path.join(cls.dir, "notes.txt"), "w") as f:
            f.write("no type")
        os.symlink("/etc/passwd", os.path.join(cls.dir, "passwd.js"))
        os.mkdir(os.path.join(cls.dir, "sub.js"))
        with open(os.path.join(cls.dir, "sub.js", "inner.js"), "w") as f:
            f.write("inner")
        os.mkfifo(os.path.join(cls.dir, "fifo.js"))
        cls.spaced = Spaced(extra_args=["--console-dir", cls.dir])
        try:
            cls.spaced.start()
        except Exception:
            cls.spaced.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.spaced.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_index(self):
        status, _, body = raw_get(self.spaced.port, "/console")
        self.assertEqual((status, body), (200, b"<p>index</p>"))

    def test_hostile_paths_are_404(self):
        for path in ("/console/.hidden.js", "/console/notes.txt", "/console/passwd.js", "/console/sub.js",
                     "/console/sub.js/inner.js", "/console/fifo.js", "/console/../etc/passwd", "/console/..%2f..%2fetc%2fpasswd",
                     "/console/%2e%2e/%2e%2e/etc/passwd", "/console/..", "/console/a..js", "/console/a%0a.js",
                     "/console//etc/passwd", "/console/" + "a" * 3000 + ".js"):
            with self.subTest(path=path):
                status, headers, body = raw_get(self.spaced.port, path)
                self.assertIn(status, (404, 400), (path, status, body[:200]))
                self.assertNotIn(b"root:", body)
                self.assertNotIn(b"hidden", body)
                self.assertNotIn(b"inner", body)

    def test_a_missing_directory_is_503(self):
        d = Spaced(extra_args=["--console-dir", os.path.join(self.dir, "nowhere")])
        try:
            d.start()
            status, _, _ = raw_get(d.port, "/console")
            self.assertEqual(status, 503)
            self.assertEqual(d.request("GET", "/v1/health", key=None)[0], 200)
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
