"""Platform-held credentials (docs/network.md), black box: the secret store's API (a value goes
in once and never comes back out, sealed at rest), credential bindings, and the egress
gateway putting the real value on a sandbox's plain-HTTP requests to the bound destination
only, with whatever the client sent under that header removed. Then the proof that the
value never entered the sandbox: not in its environment, its files, its command output, any
API response, nor the memory of its processes (/proc/PID/mem read from the host).

The upstreams are those of test_network_egress.py (egress_upstream.py in a network namespace
this file makes; never the internet); its upstream records each request's Authorization
headers, which is how a test sees what the gateway sent."""

import json
import os
import re
import secrets
import sqlite3
import stat
import subprocess
import unittest

import test_network_egress as egress
from spaced_harness import Spaced, cgroup_pids, require_root, wait_for


class Credentials(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.n = __import__("random").randint(10, 240)
        suffix = "%04x" % __import__("random").randint(0, 0xffff)
        cls.netns, cls.link = "spt-cr-" + suffix, "sptcr" + suffix
        cls.up = "10.251.%d.2" % cls.n
        cls.denied = "10.251.%d.3" % cls.n
        cls.sp = cls.upstream = cls.tmp = None
        # the upstream network of test_network_egress.py, on addresses of this file's own
        try:
            make = egress.NetworkEgress._make_upstreams.__func__
            egress_run = egress.run

            def run(*cmd, check=True):
                cmd = tuple(c.replace("10.250.", "10.251.") if isinstance(c, str) else c for c in cmd)
                return egress_run(*cmd, check=check)
            egress.run = run
            try:
                make(cls)
            finally:
                egress.run = egress_run
            with open(cls.profiles) as f:  # and a read-only copy of its profile
                profiles = json.load(f)
            profiles["profiles"]["test-ro"] = dict(profiles["profiles"]["test"], read_only=True)
            with open(cls.profiles, "w") as f:
                json.dump(profiles, f)
            # the upstream's own self-signed certificate (CN=allowed.test) is the CA intercepted
            # upstreams are verified against: allowed.test verifies, www.allowed.test does not
            cls.upstream_cert = os.path.join(cls.tmp, "cert.pem")
            cls.sp = Spaced(extra_args=["--egress-profiles", cls.profiles, "--egress-resolver", cls.up,
                                        "--egress-upstream-ca", cls.upstream_cert,
                                        "--egress-subnet", "10.204.%d.0/24" % cls.n])
            cls.sp.start()
        except Exception:
            cls.tearDownClass()
            raise
        cls.value = "s3cr3t-" + secrets.token_hex(16)
        cls.seen = []  # every API answer this file got, to search for the value at the end

    @classmethod
    def tearDownClass(cls):
        egress.NetworkEgress.tearDownClass.__func__(cls)

    # ---- helpers

    def api(self, method, path, body=None, expect=None, **kw):
        status, answer = self.sp.request(method, path, body, **kw)[:2]
        self.seen.append(json.dumps(answer))
        if expect is not None:
            self.assertIn(status, expect if isinstance(expect, tuple) else (expect,), (method, path, answer))
        return status, answer

    def upstream_log(self):
        with open(self.log_path) as f:
            return f.read()

    def sandbox(self, **network):
        sid = self.sp.create(network=dict({"profile": "test"}, **network), metadata={"t": "credentials"})
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid, timeout=70))
        return sid

    def http(self, sid, host, path="/", method="GET", headers=()):
        """One HTTP/1.1 request from inside the sandbox (busybox nc) to the upstream; returns
        the exec result."""
        lines = "".join("%s\\r\\n" % h for h in headers)
        req = "%s %s HTTP/1.1\\r\\nHost: %s\\r\\n%sConnection: close\\r\\n" % (method, path, host, lines)
        if method == "POST":
            req += "Content-Length: 4\\r\\n\\r\\nbody"
        else:
            req += "\\r\\n"
        r = self.sp.sh(sid, "printf '%s' | timeout 8 nc -w 3 %s 80" % (req, self.up), timeout_s=30)
        self.seen.append(json.dumps(r))
        return r

    HTTPS_CLIENT = r"""
import json, socket, ssl, sys
addr, sni, method, path, cafile = sys.argv[1:6]
out = {}
ctx = ssl.create_default_context(cafile=cafile) if cafile != "-" else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
if cafile == "-":
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
ctx.set_alpn_protocols(["h2", "http/1.1"])
try:
    s = ctx.wrap_socket(socket.create_connection((addr, 443), timeout=8), server_hostname=sni)
    out["alpn"] = s.selected_alpn_protocol()
    out["cert"] = ssl.DER_cert_to_PEM_cert(s.getpeercert(binary_form=True))
    body = "body" if method == "POST" else ""
    if method == "RAW":  # not HTTP inside the TLS
        s.sendall(b"\x00\x01 not http at all\r\n\r\n")
    else:
      s.sendall(("%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer forged-by-sandbox\r\n"
               "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (method, path, sni, len(body), body)).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    out["response"] = data[:4096].decode(errors="replace")
    out["length"] = len(data)
except Exception as e:
    out["error"] = "%s: %s" % (e.__class__.__name__, e)
print(json.dumps(out))
"""

    def https(self, sid, sni, path="/", method="GET", trust="sandbox"):
        """One HTTPS request from the sandbox's network namespace (the host's Python, as the
        sandbox's busybox has no verifying TLS client) to the upstream, verifying against the
        sandbox's own trust store (trust="sandbox") or not at all ("-"); returns what it saw."""
        pid = cgroup_pids(sid)[0]
        cafile = os.path.join(self.sp.subvolume(sid), "etc/ssl/certs/ca-certificates.crt") if trust == "sandbox" else "-"
        r = subprocess.run(["nsenter", "-t", str(pid), "-n", "python3", "-c", self.HTTPS_CLIENT, self.up, sni, method, path,
                            cafile], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def requests_since(self, mark):
        return [l for l in self.upstream_log()[mark:].splitlines() if l.startswith("http ")]

    def make_secret(self, name, value):
        self.api("POST", "/v1/secrets", {"name": name, "value": value}, expect=201)
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/secrets/" + name))

    def bind(self, **body):
        _, b = self.api("POST", "/v1/credential-bindings", body, expect=201)
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/credential-bindings/" + b["id"]))
        return b

    # ---- the store

    def test_secret_api_never_returns_the_value(self):
        _, made = self.api("POST", "/v1/secrets", {"name": "API_PROBE", "value": self.value}, expect=201)
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/secrets/API_PROBE"))
        self.assertEqual(sorted(made), ["created_at", "name", "project"])
        self.api("POST", "/v1/secrets", {"name": "API_PROBE", "value": "other"}, expect=409)
        for bad in ({"name": "lower", "value": "v"}, {"name": "OK", "value": ""}, {"name": "OK", "value": "a\nb"},
                    {"name": "OK", "value": "v", "extra": 1}, {"name": "OK", "value": 5}, {"name": "OK"}):
            status, answer = self.api("POST", "/v1/secrets", bad)
            self.assertEqual(status, 400, (bad, answer))
            self.assertEqual(answer["error"]["code"], "invalid_request")
        _, got = self.api("GET", "/v1/secrets/API_PROBE", expect=200)
        self.assertEqual(got["name"], "API_PROBE")
        _, listed = self.api("GET", "/v1/secrets", expect=200)
        self.assertIn("API_PROBE", [s["name"] for s in listed["secrets"]])
        self.api("GET", "/v1/secrets/NOPE", expect=404)
        # a developer (no secret.* permission) cannot read even the names
        _, k = self.api("POST", "/v1/keys", {"name": "dev", "role": "developer"}, expect=201)
        self.api("GET", "/v1/secrets", key=k["secret"], expect=403)
        self.api("POST", "/v1/secrets", {"name": "DEV", "value": "v"}, key=k["secret"], expect=403)
        # sealed at rest: the value is nowhere in the database file, the key file is 0600
        if self.sp.pg:  # PostgreSQL: the row as the server holds it
            sealed = self.sp.pg.psql("SELECT sealed FROM secrets WHERE name = 'API_PROBE'")
            self.assertTrue(sealed.strip())
            self.assertNotIn(self.value, sealed)
            self.assertNotIn(self.value, self.sp.pg.psql("SELECT * FROM secrets"))
        elif not self.sp.database:
            db = sqlite3.connect(os.path.join(self.sp.state_dir, "state.db"))
            sealed = db.execute("SELECT sealed FROM secrets WHERE name = 'API_PROBE'").fetchone()[0]
            db.close()
            self.assertNotIn(self.value, sealed)
            for f in os.listdir(self.sp.state_dir):
                if f.startswith("state.db"):
                    with open(os.path.join(self.sp.state_dir, f), "rb") as fh:
                        self.assertNotIn(self.value.encode(), fh.read(), f)
        key = os.path.join(self.sp.state_dir, "secret.key")
        self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
        self.assertNotIn(self.value, self.sp.logs(tail=100000))
        self.api("DELETE", "/v1/secrets/API_PROBE", expect=204)
        self.api("DELETE", "/v1/secrets/API_PROBE", expect=404)

    def test_binding_api_validates(self):
        self.make_secret("BIND_PROBE", "v")
        for bad in ({"secret": "BIND_PROBE"}, {"secret": "BIND_PROBE", "destination": "10.0.0.1"},
                    {"secret": "BIND_PROBE", "destination": "a.test:80"},
                    {"secret": "BIND_PROBE", "destination": "a.test", "port": 0},
                    {"secret": "BIND_PROBE", "destination": "a.test", "format": "custom"},
                    {"secret": "BIND_PROBE", "destination": "a.test", "format": "custom", "template": "no marker"},
                    {"secret": "BIND_PROBE", "destination": "a.test", "header": "Bad Header"},
                    {"secret": "BIND_PROBE", "destination": "a.test", "methods": ["get"]},
                    {"secret": "NO_SUCH", "destination": "a.test"},
                    {"secret": "BIND_PROBE", "destination": "a.test", "sandbox_id": "sbx-0000000000000000"},
                    {"secret": "BIND_PROBE", "destination": "a.test", "what": 1}):
            status, answer = self.api("POST", "/v1/credential-bindings", bad)
            self.assertEqual(status, 400, (bad, answer))
        b = self.bind(secret="BIND_PROBE", destination="*.a.test", port=8080, format="custom",
                      template="token {secret}", header="X-Api-Key", methods=["GET"])
        _, got = self.api("GET", "/v1/credential-bindings/" + b["id"], expect=200)
        self.assertEqual((got["destination"], got["port"], got["header"], got["format"]), ("*.a.test", 8080, "X-Api-Key", "custom"))
        _, listed = self.api("GET", "/v1/credential-bindings", expect=200)
        self.assertIn(b["id"], [x["id"] for x in listed["bindings"]])

    def test_cli(self):
        value = self.value + "-cli"
        r = self.sp.cli("secret", "create", "CLI_TOKEN", input=value + "\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/secrets/CLI_TOKEN"))
        self.assertEqual(r.stdout.decode().strip(), "CLI_TOKEN")
        r = self.sp.cli("secret", "bind", "CLI_TOKEN", "--destination", "cli.test", "--format", "basic",
                        "--method", "GET")
        self.assertEqual(r.returncode, 0, r.stderr)
        binding = r.stdout.decode().strip()
        self.assertTrue(binding.startswith("bnd-"), binding)
        r = self.sp.cli("secret", "bindings")
        self.assertIn(binding, r.stdout.decode())
        self.assertIn("cli.test", r.stdout.decode())
        r = self.sp.cli("secret", "ls")
        self.assertIn("CLI_TOKEN", r.stdout.decode())
        r = self.sp.cli("--json", "secret", "ls")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(value, r.stdout.decode())
        sid = self.sandbox()
        r = self.sp.cli("grant", "create", sid, binding, "--ttl", "10m")
        self.assertEqual(r.returncode, 0, r.stderr)
        grant = r.stdout.decode().strip()
        self.assertIn(grant, self.sp.cli("grant", "ls", sid).stdout.decode())
        self.assertEqual(self.sp.cli("grant", "rm", sid, grant).returncode, 0)
        self.assertNotIn(grant, self.sp.cli("grant", "ls", sid).stdout.decode())
        self.assertNotEqual(self.sp.cli("grant", "create", sid, binding).returncode, 0)  # --ttl is required
        self.assertEqual(self.sp.cli("secret", "unbind", binding).returncode, 0)
        self.assertEqual(self.sp.cli("secret", "rm", "CLI_TOKEN").returncode, 0)
        r = self.sp.cli("secret", "rm", "CLI_TOKEN")
        self.assertNotEqual(r.returncode, 0)

    # ---- the gateway

    def test_injected_stripped_and_only_there(self):
        self.make_secret("GH_TOKEN", self.value)
        b = self.bind(secret="GH_TOKEN", destination="allowed.test", port=80)
        sid = self.sandbox()
        # the sandbox sees a placeholder, never the value
        r = self.sp.sh(sid, "echo \"$SPACE_SECRET_GH_TOKEN\"")
        self.assertEqual(r["stdout"].strip(), "space-placeholder-gh_token", r)
        m = len(self.upstream_log())
        r = self.http(sid, "allowed.test", "/with-forged", headers=("Authorization: Bearer forged-by-sandbox",))
        self.assertIn("hello from allowed.test", r["stdout"], r)
        r = self.http(sid, "allowed.test", "/post", method="POST", headers=("authorization: $SPACE_SECRET_GH_TOKEN",))
        r = self.http(sid, "www.allowed.test", "/elsewhere", headers=("Authorization: Bearer mine",))
        self.assertIn("hello from www.allowed.test", r["stdout"], r)
        seen = self.requests_since(m)
        forged = [l for l in seen if "path=/with-forged" in l]
        self.assertEqual(len(forged), 1, seen)
        self.assertIn("nauth=1 auth=Bearer %s" % self.value, forged[0])
        posted = [l for l in seen if "path=/post" in l]
        self.assertEqual(len(posted), 1, seen)
        self.assertIn("method=POST nauth=1 auth=Bearer %s" % self.value, posted[0])
        other = [l for l in seen if "path=/elsewhere" in l]
        self.assertEqual(len(other), 1, seen)
        self.assertIn("nauth=1 auth=Bearer mine", other[0])  # another destination: untouched, never the value
        self.assertNotIn(self.value, other[0])
        # audited at use, without the value
        def used():
            _, a = self.api("GET", "/v1/audit?action=secret.used&target=" + sid, expect=200)
            return a["audit"] or None
        rows = wait_for(used, timeout=10, what="a secret.used audit row")
        self.assertEqual(rows[0]["detail"]["binding"], b["id"])
        self.assertEqual(rows[0]["detail"]["secret"], "GH_TOKEN")
        self.assertEqual(rows[0]["detail"]["name"], "allowed.test")
        self.assert_never_in_sandbox(sid)

    def test_binding_changes_reach_a_running_sandbox(self):
        self.make_secret("LIVE_TOKEN", self.value + "-live")
        sid = self.sandbox()
        m = len(self.upstream_log())
        self.http(sid, "allowed.test", "/before")
        _, b = self.api("POST", "/v1/credential-bindings", {"secret": "LIVE_TOKEN", "destination": "allowed.test",
                                                            "sandbox_id": sid, "format": "basic",
                                                            "header": "Authorization"}, expect=201)
        self.http(sid, "allowed.test", "/bound")
        self.api("DELETE", "/v1/credential-bindings/" + b["id"], expect=204)
        self.http(sid, "allowed.test", "/unbound", headers=("Authorization: Bearer mine",))
        seen = self.requests_since(m)
        import base64
        want = "Basic " + base64.b64encode((self.value + "-live").encode()).decode()
        self.assertIn("nauth=0 auth=-", [l for l in seen if "path=/before" in l][0])
        self.assertIn("nauth=1 auth=" + want, [l for l in seen if "path=/bound" in l][0])
        self.assertIn("nauth=1 auth=Bearer mine", [l for l in seen if "path=/unbound" in l][0])

    def test_host_switch_on_a_bound_connection_is_refused(self):
        """A second request on the same connection naming another host never gets the value
        (the connection was decided, and the credential bound, for the first one)."""
        self.make_secret("SWITCH_TOKEN", self.value + "-switch")
        self.bind(secret="SWITCH_TOKEN", destination="allowed.test")
        sid = self.sandbox()
        m = len(self.upstream_log())
        req = ("GET /first HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n"
               "GET /second HTTP/1.1\\r\\nHost: www.allowed.test\\r\\n\\r\\n")
        self.sp.sh(sid, "printf '%s' | timeout 8 nc -w 3 %s 80" % (req, self.up), timeout_s=30)
        seen = self.requests_since(m)
        self.assertFalse([l for l in seen if "path=/second" in l], seen)

    def test_kill9_of_spaced_and_gateway_keeps_credentials(self):
        """The master key file is read again and the sealed value opens; the gateway, killed
        -9, is started again with the whole map, credentials included."""
        self.make_secret("CRASH_TOKEN", self.value + "-crash")
        self.bind(secret="CRASH_TOKEN", destination="allowed.test")
        sid = self.sandbox()
        want = "auth=Bearer %s-crash" % self.value
        self.sp.restart(hard=True)
        m = len(self.upstream_log())
        wait_for(lambda: self.http(sid, "allowed.test", "/after-restart") and want in self.upstream_log()[m:], timeout=20,
                 what="the credential after a kill -9 restart of spaced")
        import signal
        old = egress.NetworkEgress.egress_pid(self)
        self.assertTrue(old)
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: egress.NetworkEgress.egress_pid(self) not in (None, old), timeout=20, what="a new space-egress")
        m = len(self.upstream_log())
        wait_for(lambda: self.http(sid, "allowed.test", "/after-gateway") and want in self.upstream_log()[m:], timeout=20,
                 what="the credential after the gateway's restart")
        # and over HTTPS: the new gateway read the CA again and intercepts as the old one did
        m = len(self.upstream_log())
        got = self.https(sid, "allowed.test", "/tls-after-gateway")
        self.assertIn("hello from allowed.test", got.get("response", ""), got)
        self.assertIn(want, "\n".join(l for l in self.requests_since(m) if "path=/tls-after-gateway " in l))
        self.assert_never_in_sandbox(sid)

    # ---- grants

    def test_grant_expires_by_itself_and_revokes(self):
        self.make_secret("JIT_TOKEN", self.value + "-jit")
        b = self.bind(secret="JIT_TOKEN", destination="allowed.test", grant_only=True)
        sid = self.sandbox()
        want = "auth=Bearer %s-jit" % self.value
        m = len(self.upstream_log())
        self.http(sid, "allowed.test", "/before-grant")  # grant-only: nothing by itself
        self.assertIn("nauth=0", [l for l in self.requests_since(m) if "/before-grant" in l][0])
        for bad in ({"binding": b["id"]}, {"binding": b["id"], "ttl_s": 0}, {"binding": "bnd-0000000000000000", "ttl_s": 5},
                    {"binding": b["id"], "ttl_s": 5, "x": 1}):
            self.api("POST", "/v1/sandboxes/%s/grants" % sid, bad, expect=400)
        _, g = self.api("POST", "/v1/sandboxes/%s/grants" % sid, {"binding": b["id"], "ttl_s": 3}, expect=201)
        self.assertEqual((g["binding"], g["secret"], g["sandbox_id"]), (b["id"], "JIT_TOKEN", sid))
        _, listed = self.api("GET", "/v1/sandboxes/%s/grants" % sid, expect=200)
        self.assertEqual([x["id"] for x in listed["grants"]], [g["id"]])
        m = len(self.upstream_log())
        self.http(sid, "allowed.test", "/granted")
        self.assertIn(want, [l for l in self.requests_since(m) if "/granted" in l][0])

        def expired():
            _, a = self.api("GET", "/v1/audit?action=secret.grant_expired&target=" + sid, expect=200)
            return a["audit"] or None
        rows = wait_for(expired, timeout=15, what="the grant's expiry in the audit log")
        self.assertEqual(rows[0]["detail"]["grant"], g["id"])
        m = len(self.upstream_log())
        self.http(sid, "allowed.test", "/after-expiry")
        self.assertIn("nauth=0", [l for l in self.requests_since(m) if "/after-expiry" in l][0])
        _, listed = self.api("GET", "/v1/sandboxes/%s/grants" % sid, expect=200)
        self.assertEqual(listed["grants"], [])
        # revoked before its deadline: gone at once
        _, g2 = self.api("POST", "/v1/sandboxes/%s/grants" % sid, {"binding": b["id"], "ttl_s": 600}, expect=201)
        self.api("DELETE", "/v1/sandboxes/%s/grants/%s" % (sid, g2["id"]), expect=204)
        self.api("DELETE", "/v1/sandboxes/%s/grants/%s" % (sid, g2["id"]), expect=404)
        m = len(self.upstream_log())
        self.http(sid, "allowed.test", "/after-revoke")
        self.assertIn("nauth=0", [l for l in self.requests_since(m) if "/after-revoke" in l][0])
        _, created = self.api("GET", "/v1/audit?action=grant.create&target=" + sid, expect=200)
        self.assertEqual(len([r for r in created["audit"] if r["status"] == 201]), 2)
        self.assert_never_in_sandbox(sid)

    # ---- read-only

    def sh(self, sid, script, timeout_s=30):
        return self.sp.sh(sid, script, timeout_s=timeout_s)

    def check_read_only(self, sid, tag):
        m = len(self.upstream_log())
        self.assertIn("hello from allowed.test", self.http(sid, "allowed.test", "/%s-get" % tag)["stdout"])
        self.http(sid, "allowed.test", "/%s-head" % tag, method="HEAD")
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            r = self.http(sid, "allowed.test", "/%s-%s" % (tag, method.lower()), method=method)
            self.assertNotIn("HTTP/1.", r["stdout"], (method, r))
        # HTTPS is intercepted and held to reads the same way
        got = self.https(sid, "allowed.test", "/%s-tls-get" % tag)
        self.assertIn("hello from allowed.test", got.get("response", ""), got)
        got = self.https(sid, "allowed.test", "/%s-tls-post" % tag, method="POST")
        self.assertNotIn("HTTP/1.", got.get("response", ""), got)
        # TLS that is not HTTP inside is never passed blind
        got = self.https(sid, "allowed.test", "/", method="RAW")
        self.assertEqual(got.get("response", ""), "", got)
        self.assertNotIn("not http", self.upstream_log()[m:])
        seen = "\n".join(self.requests_since(m))
        self.assertIn("path=/%s-tls-get" % tag, seen)
        self.assertNotIn("path=/%s-tls-post" % tag, seen)
        self.assertIn("path=/%s-get" % tag, seen)
        for method in ("post", "put", "delete", "patch"):
            self.assertNotIn("path=/%s-%s " % (tag, method), seen)
        self.assertIn("read-only: only GET, HEAD and OPTIONS pass", self.sp.logs(tail=3000))

    def test_read_only_sandbox(self):
        sid = self.sandbox(read_only=True)
        _, net = self.api("GET", "/v1/sandboxes/%s/network" % sid, expect=200)
        self.assertIs(net["read_only"], True)
        self.check_read_only(sid, "rosb")
        # a credential on a read-only sandbox still goes only on the reads
        self.make_secret("RO_TOKEN", self.value + "-ro")
        self.bind(secret="RO_TOKEN", destination="allowed.test")
        m = len(self.upstream_log())
        self.http(sid, "allowed.test", "/ro-cred")
        self.assertIn("auth=Bearer %s-ro" % self.value, "\n".join(self.requests_since(m)))
        self.api("POST", "/v1/sandboxes", {"network": {"profile": "test", "read_only": "yes"}}, expect=400)

    def test_read_only_profile(self):
        _, profiles = self.api("GET", "/v1/egress-profiles", expect=200)
        ro = {p["name"]: p["read_only"] for p in profiles["profiles"]}
        self.assertEqual((ro["test-ro"], ro["test"]), (True, False))
        sid = self.sandbox(profile="test-ro")
        self.check_read_only(sid, "roprof")

    # ---- the platform CA of HTTPS interception

    @staticmethod
    def pem_body(pem):
        return "".join(l for l in pem.splitlines() if l and not l.startswith("-----"))

    def test_https_intercepted_only_where_needed(self):
        self.make_secret("TLS_TOKEN", self.value)
        self.bind(secret="TLS_TOKEN", destination="allowed.test", port=443)
        sid = self.sandbox()
        with open(self.upstream_cert) as f:
            upstream = self.pem_body(f.read())
        m = len(self.upstream_log())
        # a bound destination: intercepted, verified by the sandbox's own trust store (the
        # platform CA), http/1.1 only, the platform's header on and the client's copy gone
        got = self.https(sid, "allowed.test", "/tls-inject")
        self.assertIn("hello from allowed.test", got.get("response", ""), got)
        self.assertEqual(got["alpn"], "http/1.1")
        self.assertNotEqual(self.pem_body(got["cert"]), upstream)
        got = self.https(sid, "allowed.test", "/tls-post", method="POST")
        self.assertIn("hello from allowed.test", got.get("response", ""), got)
        got = self.https(sid, "allowed.test", "/big-tls")  # 4 MiB back through both sessions
        self.assertIn("Content-Length: %d" % (4 << 20), got.get("response", ""), got)
        self.assertGreater(got["length"], 4 << 20)
        self.assertLess(got["length"], (4 << 20) + 4096)
        seen = self.requests_since(m)
        for path in ("/tls-inject", "/tls-post"):
            rows = [l for l in seen if "path=%s " % path in l]
            self.assertEqual(len(rows), 1, seen)
            self.assertIn("nauth=1 auth=Bearer %s" % self.value, rows[0])
        # a destination without a binding stays end to end: the upstream's own certificate,
        # which the sandbox's trust store does not vouch for
        got = self.https(sid, "www.allowed.test", "/tls-e2e", trust="-")
        self.assertEqual(self.pem_body(got["cert"]), upstream, got)
        self.assertIn("hello from www.allowed.test", got.get("response", ""), got)
        self.assertIn("nauth=1 auth=Bearer forged-by-sandbox",
                      [l for l in self.requests_since(m) if "path=/tls-e2e " in l][0])
        got = self.https(sid, "www.allowed.test", "/tls-e2e-verified")
        self.assertIn("CERTIFICATE_VERIFY_FAILED", got.get("error", ""), got)
        # bound, but the upstream's certificate does not name it: the gateway refuses (no
        # interception of an interception), nothing reaches the upstream
        self.bind(secret="TLS_TOKEN", destination="www.allowed.test", port=443)
        got = self.https(sid, "www.allowed.test", "/tls-mismatch")
        self.assertNotIn("HTTP/1.", got.get("response", ""), got)
        self.assertNotIn("path=/tls-mismatch", self.upstream_log()[m:])
        self.assertIn("upstream certificate refused", self.sp.logs(tail=3000))
        self.assert_never_in_sandbox(sid)

    def test_platform_ca_trusted_never_its_key(self):
        ca_dir = os.path.join(self.sp.state_dir, "egress-ca")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(ca_dir, "key.pem")).st_mode), 0o600)
        with open(os.path.join(ca_dir, "cert.pem")) as f:
            cert = f.read().strip()
        with open(os.path.join(ca_dir, "key.pem")) as f:
            key = f.read()
        self.assertIn("BEGIN CERTIFICATE", cert)
        sid = self.sandbox()
        script = ("env; echo =====; cat /etc/ssl/certs/ca-certificates.crt; echo =====; "
                  "cat /etc/ssl/certs/space-platform-ca.pem")
        env, bundle, alone = self.sh(sid, script)["stdout"].split("=====\n")
        for var, path in (("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"),
                          ("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"),
                          ("NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/space-platform-ca.pem")):
            self.assertIn("%s=%s\n" % (var, path), env)
        self.assertEqual(bundle.count(cert), 1)
        self.assertEqual(alone.strip(), cert)
        # a stop and a start put it there again, once; spaced's restart keeps the same CA
        self.sp.action(sid, "stop")
        self.sp.restart(hard=True)
        self.sp.action(sid, "start")
        with open(os.path.join(ca_dir, "cert.pem")) as f:
            self.assertEqual(f.read().strip(), cert)
        self.assertEqual(self.sh(sid, "cat /etc/ssl/certs/ca-certificates.crt")["stdout"].count(cert), 1)
        # a sandbox without egress gets nothing
        plain = self.sp.create(metadata={"t": "credentials"})
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % plain, timeout=70))
        r = self.sh(plain, "env; cat /etc/ssl/certs/space-platform-ca.pem")
        self.assertNotIn("SSL_CERT_FILE", r["stdout"])
        self.assertNotIn(cert, r["stdout"])
        # the key: neither its PEM lines nor its DER anywhere in the sandbox
        body = [l for l in key.splitlines() if l and not l.startswith("-----")]
        der = __import__("base64").b64decode("".join(body))
        self.assert_never_in_sandbox(sid, needles=[l.encode() for l in body] + [der])

    # ---- never in the sandbox

    def assert_never_in_sandbox(self, sid, needles=None):
        needles = needles or [self.value.encode()]
        # environment and command output
        r = self.sp.sh(sid, "env; cat /proc/1/environ | tr '\\0' '\\n'; ps")
        for value in needles:
            self.assertNotIn(value, (r["stdout"] + r["stderr"]).encode())
        # files: the sandbox's whole rootfs, read from the host
        root = self.sp.subvolume(sid)
        for dirpath, _, files in os.walk(root):
            for f in files:
                p = os.path.join(dirpath, f)
                try:
                    if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                        continue
                    with open(p, "rb") as fh:
                        data = fh.read()
                    for value in needles:
                        self.assertNotIn(value, data, p)
                except PermissionError:
                    continue
        # the memory of every process of the sandbox, from the host
        pids = cgroup_pids(sid)
        self.assertTrue(pids, "no processes found for %s" % sid)
        scanned = 0
        for pid in pids:
            try:
                with open("/proc/%d/maps" % pid) as fh:
                    maps = fh.read().splitlines()
                mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
            except (FileNotFoundError, ProcessLookupError):
                continue
            with mem:
                for line in maps:
                    addr, perms = line.split()[:2]
                    if "r" not in perms:
                        continue
                    start, end = (int(x, 16) for x in addr.split("-"))
                    if end - start > 256 << 20:
                        continue
                    try:
                        mem.seek(start)
                        chunk = mem.read(end - start)
                    except (OSError, ValueError, OverflowError):
                        continue
                    scanned += len(chunk)
                    for value in needles:
                        self.assertNotIn(value, chunk, "pid %d %s" % (pid, line))
        self.assertGreater(scanned, 0)
        # and no API answer this file received carries it
        for answer in self.seen:
            for value in needles:
                self.assertNotIn(value, answer.encode())


if __name__ == "__main__":
    unittest.main()
