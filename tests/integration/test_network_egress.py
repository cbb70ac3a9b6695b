"""Egress of sandboxes (docs/network.md), black box: spaced with an operator profile file
and space-egress resolving through a DNS server the test runs. Every upstream lives in a
network namespace this file makes (an HTTP server, a TLS server recording SNI, a UDP sink,
a DNS zone), never the internet; the root namespace's changes (that namespace's veth, the
daemon's nftables table) are removed in tearDownClass even after a failure.

The path of a packet: sandbox eth0 → host link sx<id> → nftables DNAT (TCP to the gateway,
DNS to its resolver; everything else dropped) → space-egress decides by SNI / Host / address
and dials from the host's namespace."""

import json
import os
import random
import socket
import subprocess
import threading
import time
import unittest

from spaced_harness import Spaced, free_port, require_root, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK_DIR = "/run/space/egress-blocks"


def run(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr))
    return r


class NetworkEgress(unittest.TestCase):
    runtime = {}  # the create's runtime field; NetworkEgressOnGvisor names gvisor

    @classmethod
    def setUpClass(cls):
        require_root()
        if not os.path.exists("/usr/sbin/nft") and not os.path.exists("/sbin/nft"):
            raise unittest.SkipTest("nft (the nftables package) is needed to inspect the rules")
        cls.n = random.randint(10, 240)
        suffix = "%04x" % random.randint(0, 0xffff)
        cls.netns, cls.link = "spt-eg-" + suffix, "spteg" + suffix
        cls.up = "10.250.%d.2" % cls.n       # allowed upstream address
        cls.denied = "10.250.%d.3" % cls.n   # an address no rule allows (private)
        cls.sp = None
        cls.upstream = None
        cls.tmp = None
        try:
            cls._make_upstreams()
            cls.sp = Spaced(extra_args=["--egress-profiles", cls.profiles, "--egress-resolver", cls.up,
                                        "--egress-subnet", "10.203.%d.0/24" % cls.n])
            cls.sp.start()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def _make_upstreams(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="spt-egress-")
        cls.log_path = os.path.join(cls.tmp, "upstream.log")
        cert, key = os.path.join(cls.tmp, "cert.pem"), os.path.join(cls.tmp, "key.pem")
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=allowed.test", "-days", "1",
            "-keyout", key, "-out", cert)
        run("ip", "netns", "add", cls.netns)
        run("ip", "link", "add", cls.link, "type", "veth", "peer", "name", "up0", "netns", cls.netns)
        run("ip", "addr", "add", "10.250.%d.1/24" % cls.n, "dev", cls.link)
        run("ip", "link", "set", cls.link, "up")
        for a in (cls.up, cls.denied):
            run("ip", "-n", cls.netns, "addr", "add", a + "/24", "dev", "up0")
        run("ip", "-n", cls.netns, "link", "set", "up0", "up")
        run("ip", "-n", cls.netns, "link", "set", "lo", "up")
        zone = {"allowed.test": cls.up, "www.allowed.test": cls.up, "blocked.test": cls.up,
                "denied-ip.test": cls.denied, "loopback.test": "127.0.0.1"}
        cls.upstream = subprocess.Popen(
            ["ip", "netns", "exec", cls.netns, "python3", os.path.join(HERE, "egress_upstream.py"), cls.log_path, cert,
             key, json.dumps(zone)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(cls.log_path) and "ready" in open(cls.log_path).read(), timeout=20,
                 what="the upstreams")
        cls.profiles = os.path.join(cls.tmp, "profiles.json")
        with open(cls.profiles, "w") as f:
            json.dump({"profiles": {"test": {"default": "deny", "rules": [
                {"deny": "blocked.test"},
                {"allow": cls.up + "/32"},
                {"allow": "allowed.test"},
                {"allow": "*.allowed.test"},
                {"allow": "loopback.test"},
            ]}}}, f)

    @classmethod
    def tearDownClass(cls):
        instance = cls.sp.instance() if cls.sp else None
        if cls.sp:
            cls.sp.cleanup()
        if cls.upstream:
            cls.upstream.kill()
            cls.upstream.wait()
        run("ip", "link", "del", cls.link, check=False)
        run("ip", "netns", "del", cls.netns, check=False)
        if instance:
            run("nft", "delete", "table", "inet", "space_" + instance, check=False)
        if cls.tmp:
            import shutil
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- helpers

    def sandbox(self, network=None):
        body = dict(self.runtime, metadata={"t": "egress"})
        if network is not None:
            body["network"] = network
        sid = self.sp.create(**body)
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid, timeout=70))
        return sid

    def sh(self, sid, script, timeout_s=30):
        return self.sp.sh(sid, script, timeout_s=timeout_s)

    def get(self, sid, host, path, addr=None):
        """An HTTP/1.0 GET from inside the sandbox (busybox nc); addr None: the name is
        resolved through the sandbox's DNS first. Returns the exec result."""
        req = "printf 'GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' | timeout 8 nc -w 2 " % (path, host)
        if addr is None:
            script = ("A=$(nslookup %s | awk '/^Address: /{a=$2} END{print a}'); [ -n \"$A\" ] || { echo no-address; "
                      "exit 9; }; %s$A 80" % (host, req))
        else:
            script = req + "%s 80" % addr
        return self.sh(sid, script)

    def tls_hello(self, sid, sni, addr):
        """Sends a real ClientHello for sni (made by this process's OpenSSL) from the
        sandbox to addr:443; returns what came back (hex of the first bytes)."""
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname=sni)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        self.sp.put_file(sid, "/tmp/hello.bin", out.read())
        r = self.sh(sid, "timeout 8 nc -w 2 %s 443 < /tmp/hello.bin | head -c 3 | hexdump -C | head -1" % addr)
        return r["stdout"]

    def upstream_log(self):
        with open(self.log_path) as f:
            return f.read()

    def mark(self):
        return len(self.upstream_log())

    def seen_since(self, mark):
        return self.upstream_log()[mark:]

    def egress_pid(self):
        r = run("pgrep", "-P", str(self.sp.proc.pid), "-x", "space-egress", check=False)
        pids = r.stdout.split()
        return int(pids[0]) if len(pids) == 1 else None

    def host_link(self, sid):
        return "sx" + self.sp.instance()[1:5] + sid[3:12]

    @classmethod
    def shared(cls):
        if not cls.__dict__.get("_shared"):  # its own class's (a subclass runs another spaced)
            sid = cls.sp.create(network={"profile": "test"}, metadata={"t": "egress-shared"}, **cls.runtime)
            cls._shared = sid
        return cls._shared

    # ---- the API

    def test_api_network_field(self):
        sid = self.sandbox(network={"profile": "test", "deny": ["www.allowed.test"]})
        net = self.sp.get(sid)["network"]
        self.assertEqual(net, {"profile": "test", "allow": [], "deny": ["www.allowed.test"]})
        sid2 = self.sandbox()
        self.assertEqual(self.sp.get(sid2)["network"], {"profile": "none", "allow": [], "deny": []})

    def test_api_bad_network_is_400_and_stores_nothing(self):
        before = set(self.sp.list_ids())
        for bad in ({"profile": "nosuch"}, {"profile": "test", "allow": ["not a rule"]},
                    {"profile": "test", "deny": "a.com"}, {"profile": "test", "deny": ["10.0.0.1/8"]},
                    {"profile": "none", "allow": ["a.com"]}, {"profile": 3}, {"proxy": "x"}, "public",
                    {"profile": "test", "allow": ["a.com:0"]}):
            status, body = self.sp.request("POST", "/v1/sandboxes?wait=true", {"network": bad})
            self.assertEqual(status, 400, (bad, body))
            self.assertEqual(body["error"]["code"], "invalid_request", body)
        self.assertEqual(set(self.sp.list_ids()), before)

    # ---- none

    def test_profile_none_has_only_lo(self):
        sid = self.sandbox()
        r = self.sh(sid, "ip -o link | awk '{print $2}'")
        self.assertEqual(r["stdout"].split(), ["lo:"], r)
        self.assertFalse(os.path.exists("/sys/class/net/" + self.host_link(sid)))

    # ---- allowed and denied

    def test_allowed_name_passes_http_and_tls(self):
        sid = self.shared()
        m = self.mark()
        r = self.get(sid, "allowed.test", "/hi")
        self.assertIn("hello from allowed.test via %s" % self.up, r["stdout"], r)
        self.assertIn("16 03", self.tls_hello(sid, "www.allowed.test", self.up))  # a ServerHello came back
        seen = self.seen_since(m)
        self.assertIn("host=allowed.test path=/hi", seen)
        self.assertIn("tls sni=www.allowed.test", seen)
        logs = self.sp.logs(tail=400)
        self.assertIn('name="allowed.test" decision=allow', logs)

    def test_large_transfer_is_whole(self):
        sid = self.shared()
        r = self.sh(sid, "printf 'GET /big HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n' | timeout 20 nc -w 5 %s 80 "
                         "| tail -c 4194304 | md5sum" % self.up)
        import hashlib
        self.assertIn(hashlib.md5(bytes(range(256)) * (4 * 4096)).hexdigest(), r["stdout"], r)
        import re

        def logged():
            return any(int(n) >= 4 << 20 for n in re.findall(r"decision=end .* bytes_in=(\d+)", self.sp.logs(tail=2000)))
        wait_for(logged, timeout=10, what="the connection's end line with every byte counted")

    def test_dns_answers_only_allowed_names(self):
        sid = self.shared()
        r = self.sh(sid, "nslookup allowed.test")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertIn(self.up, r["stdout"])
        for name in ("blocked.test", "denied-ip.test", "loopback.test", "unknown.test"):
            r = self.sh(sid, "nslookup %s" % name)
            self.assertNotEqual(r["exit_code"], 0, (name, r))
            self.assertNotIn("10.250.", r["stdout"].split("Name:")[-1] if "Name:" in r["stdout"] else "", (name, r))
        self.assertNotIn("dns name=blocked.test", self.upstream_log())  # never even resolved

    def test_denied_name_refused(self):
        sid = self.shared()
        m = self.mark()
        r = self.sh(sid, "printf 'GET /x HTTP/1.1\\r\\nHost: blocked.test\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo rc=$?" % self.up)
        self.assertNotIn("HTTP/1.", r["stdout"], r)
        self.assertNotIn("host=blocked.test", self.seen_since(m))

    def test_direct_ip_to_a_denied_address_refused(self):
        sid = self.shared()
        m = self.mark()
        r = self.sh(sid, "printf 'GET /d HTTP/1.0\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo rc=$?" % self.denied)
        self.assertNotIn("HTTP/1.", r["stdout"], r)
        self.assertNotIn("local=%s" % self.denied, self.seen_since(m))
        # the allowed address, by IP alone, passes (a network rule allows it)
        r = self.sh(sid, "printf 'GET /ip HTTP/1.0\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80" % self.up)
        self.assertIn("HTTP/1.0 200", r["stdout"], r)

    def test_sni_or_host_disagreeing_with_a_denied_address_refused(self):
        sid = self.shared()
        m = self.mark()
        # an allowed name sent to a denied address
        r = self.sh(sid, "printf 'GET /s HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80" % self.denied)
        self.assertNotIn("HTTP/1.", r["stdout"], r)
        # TLS: an allowed SNI to the denied address, a denied SNI to the allowed one
        self.assertNotIn("16 03", self.tls_hello(sid, "www.allowed.test", self.denied))
        self.assertNotIn("16 03", self.tls_hello(sid, "blocked.test", self.up))
        # a denied name sent to the allowed address
        r = self.sh(sid, "printf 'GET /s HTTP/1.1\\r\\nHost: blocked.test\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80" % self.up)
        self.assertNotIn("HTTP/1.", r["stdout"], r)
        seen = self.seen_since(m)
        self.assertNotIn("path=/s", seen)
        self.assertNotIn("local=%s" % self.denied, seen)
        self.assertNotIn("tls sni=blocked.test", seen)

    def test_incomplete_client_hello_is_not_dialled(self):
        # a ClientHello begun and never finished must not be dialled by address after the
        # wait (the rest would carry a name the gateway never saw)
        sid = self.shared()
        self.tls_hello(sid, "www.allowed.test", self.up)  # leaves /tmp/hello.bin
        m = self.mark()
        r = self.sh(sid, "(head -c 40 /tmp/hello.bin; sleep 7; tail -c +41 /tmp/hello.bin) | timeout 12 nc -w 2 %s 443 "
                         "| head -c 3 | hexdump -C | head -1; echo done" % self.up)
        self.assertNotIn("16 03", r["stdout"], r)
        self.assertNotIn("tls sni=", self.seen_since(m))
        self.assertIn('reason="incomplete TLS or HTTP"', self.sp.logs(tail=400))

    def test_udp_and_icmp_dropped(self):
        sid = self.shared()
        m = self.mark()
        r = self.sh(sid, "for i in 1 2 3; do echo x | nc -u -w 1 %s 9999; done; ping -c 1 -W 2 %s; echo ping=$?; "
                         "ping -c 1 -W 2 10.203.%d.1; echo gw=$?" % (self.up, self.up, self.n))
        self.assertIn("ping=1", r["stdout"], r)
        self.assertIn("gw=1", r["stdout"], r)
        time.sleep(0.5)
        self.assertNotIn("udp from=", self.seen_since(m))

    def test_ipv6_refused(self):
        sid = self.shared()
        r = self.sh(sid, "ip -6 addr show dev eth0; ping6 -c 1 -W 2 ff02::1%eth0; echo ping6=$?")
        self.assertNotIn("inet6", r["stdout"], r)
        self.assertIn("ping6=1", r["stdout"], r)

    def test_host_services_and_other_sandboxes_refused(self):
        sid = self.shared()
        other = self.sandbox(network={"profile": "test"})
        other_addr = self.sh(other, "ip -4 -o addr show dev eth0")["stdout"].split()[3].split("/")[0]
        gateway = self.sh(sid, "ip route show default")["stdout"].split()[2]
        # a host service listening on every address of the host
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", 0))
        srv.listen(8)
        srv.settimeout(0.2)
        port = srv.getsockname()[1]
        accepted = []

        def accept():
            end = time.monotonic() + 12
            while time.monotonic() < end:
                try:
                    accepted.append(srv.accept())
                except socket.timeout:
                    pass
        t = threading.Thread(target=accept)
        t.start()
        r = self.sh(sid, "echo a | timeout 8 nc -w 2 %s %d; echo a | timeout 8 nc -w 2 127.0.0.1 %d; "
                         "printf 'GET /v1/health HTTP/1.0\\r\\n\\r\\n' | timeout 8 nc -w 2 %s %d; echo b | timeout 8 nc -w 2 %s 80; "
                         "echo c | timeout 8 nc -w 2 169.254.169.254 80; echo done"
                    % (gateway, port, port, gateway, self.sp.port, other_addr))
        t.join()
        srv.close()
        self.assertEqual(accepted, [], "a sandbox reached a host service")
        self.assertNotIn("HTTP/1.", r["stdout"], r)
        self.assertIn("done", r["stdout"], r)
        logs = self.sp.logs(tail=600)
        self.assertIn("dst=%s port=%d" % (gateway, self.sp.port), logs)
        self.assertIn("dst=%s port=80" % other_addr, logs)

    def test_a_sandbox_cannot_change_its_link(self):
        # the gateway knows a sandbox by its source address: a sandbox must not take
        # another's (it has no CAP_NET_ADMIN; the host also drops packets whose source does
        # not route back through their link), nor move its route or address
        allowed = self.shared()
        victim_addr = self.sh(allowed, "ip -4 -o addr show dev eth0")["stdout"].split()[3].split("/")[0]
        thief = self.sandbox(network={"profile": "test", "deny": ["allowed.test"]})
        r = self.sh(thief, "ip addr add %s/32 dev eth0; echo add=$?; ip route del default; echo route=$?; "
                           "ip link set eth0 down; echo down=$?; ip -4 -o addr show dev eth0" % victim_addr)
        for step in ("add", "route", "down"):
            self.assertNotIn("%s=0" % step, r["stdout"], r)
        self.assertNotIn(victim_addr, r["stdout"], r)
        self.assertIn("hello from", self.get(allowed, "allowed.test", "/victim")["stdout"])

    def test_name_resolving_to_loopback_refused(self):
        sid = self.shared()
        r = self.sh(sid, "echo 127.0.0.1 loopback.test >> /etc/hosts; printf 'GET / HTTP/1.1\\r\\nHost: loopback.test"
                         "\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo rc=$?" % self.up)
        self.assertNotIn("HTTP/1.", r["stdout"], r)

    def test_per_sandbox_rules_narrow(self):
        sid = self.sandbox(network={"profile": "test", "deny": ["www.allowed.test"], "allow": ["*.allowed.test",
                                                                                               "allowed.test"]})
        r = self.get(sid, "allowed.test", "/n")
        self.assertIn("hello from allowed.test", r["stdout"], r)
        r = self.sh(sid, "nslookup www.allowed.test; echo rc=$?")
        self.assertNotIn("rc=0", r["stdout"], r)
        # an allow of its own cannot widen the profile
        wide = self.sandbox(network={"profile": "test", "allow": ["blocked.test"]})
        r = self.sh(wide, "printf 'GET / HTTP/1.1\\r\\nHost: blocked.test\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80" % self.up)
        self.assertNotIn("HTTP/1.", r["stdout"], r)

    # ---- changing a sandbox's rules at runtime (PUT /v1/sandboxes/{id}/network)

    def put_network(self, sid, body, expect=200):
        return self.sp.api("PUT", "/v1/sandboxes/%s/network" % sid, body, expect=expect)[1]

    def refused_http(self, sid, host, path):
        r = self.sh(sid, "printf 'GET %s HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo done"
                    % (path, host, self.up))
        return "HTTP/1." not in r["stdout"]

    def test_runtime_change_narrows_new_and_open_connections(self):
        sid = self.sandbox(network={"profile": "test"})
        self.assertEqual(self.sp.api("GET", "/v1/sandboxes/%s/network" % sid, expect=200)[1],
                         {"profile": "test", "allow": [], "deny": []})
        m = self.mark()
        # an open connection to allowed.test, streaming (a line every 0.1 s for 30 s)
        done = {}

        def hold():
            done["r"] = self.sh(sid, "s=$(date +%%s); printf 'GET /slow-%s HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n' "
                                     "| timeout 25 nc %s 80 | wc -l; echo took=$(( $(date +%%s) - s ))" % (sid, self.up),
                                timeout_s=40)
        t = threading.Thread(target=hold)
        t.start()
        wait_for(lambda: "path=/slow-%s" % sid in self.seen_since(m), timeout=15, what="the open connection")
        time.sleep(0.5)
        net = self.put_network(sid, {"deny": ["allowed.test"]})
        self.assertEqual(net, {"profile": "test", "allow": [], "deny": ["allowed.test"]})
        # new connections: the very next one is refused (the gateway has the rules before
        # the PUT answers), and so is its DNS
        self.assertTrue(self.refused_http(sid, "allowed.test", "/after-put"))
        self.assertNotIn("rc=0", self.sh(sid, "nslookup allowed.test; echo rc=$?")["stdout"])
        # the open one was reset by the gateway, long before its 30 s
        t.join(30)
        self.assertFalse(t.is_alive())
        took = int(done["r"]["stdout"].split("took=")[1].split()[0])
        self.assertLess(took, 10, done["r"])
        wait_for(lambda: "slow-end path=/slow-%s" % sid in self.seen_since(m), timeout=10, what="the upstream to see the end")
        end = [ln for ln in self.seen_since(m).splitlines() if ln.startswith("slow-end path=/slow-%s" % sid)][0]
        self.assertIn("how=closed", end)
        self.assertNotIn("path=/after-put", self.seen_since(m))
        self.assertIn("denied by a new policy", self.sp.logs(tail=400))
        # other names of the profile still pass; rules given back widen to the profile again
        self.assertIn("hello from", self.get(sid, "www.allowed.test", "/www")["stdout"])
        self.put_network(sid, {"profile": "test"})
        self.assertIn("hello from", self.get(sid, "allowed.test", "/back")["stdout"])
        self.assertEqual(self.sp.get(sid)["network"], {"profile": "test", "allow": [], "deny": []})
        # audited as sandbox.network_update
        _, audit = self.sp.api("GET", "/v1/audit?action=sandbox.network_update&target=" + sid, expect=200)
        self.assertEqual(len(audit["audit"]), 2, audit)

    def test_profile_change_needs_network_profile_and_a_stop_for_none(self):
        sid = self.sandbox(network={"profile": "test", "deny": ["www.allowed.test"]})
        # sandbox.write alone (an owner, a developer) cannot give it another profile
        for role in ("owner", "developer"):
            _, k = self.sp.api("POST", "/v1/keys", {"name": "net-" + role, "role": role}, expect=201)
            status, body = self.sp.request("PUT", "/v1/sandboxes/%s/network" % sid, {"profile": "public"}, key=k["secret"])
            self.assertEqual((status, body["error"]["code"]), (403, "forbidden"), body)
            # its own profile's name stays allowed to them
            self.sp.api("PUT", "/v1/sandboxes/%s/network" % sid, {"profile": "test", "deny": ["www.allowed.test"]},
                        key=k["secret"], expect=200)
        self.assertEqual(self.sp.get(sid)["network"], {"profile": "test", "allow": [], "deny": ["www.allowed.test"]})
        status, body = self.sp.request("PUT", "/v1/sandboxes/%s/network" % sid, {"profile": "nosuch"})
        self.assertEqual((status, body["error"]["code"]), (400, "invalid_request"), body)
        # the admin: another profile, running; the gateway has it before the PUT answers
        self.assertTrue(self.refused_http(sid, "blocked.test", "/before-change"))
        net = self.put_network(sid, {"profile": "public", "deny": ["blocked.test"]})
        self.assertEqual(net, {"profile": "public", "allow": [], "deny": ["blocked.test"]})
        self.assertTrue(self.refused_http(sid, "blocked.test", "/still-denied"))
        self.assertTrue(self.refused_http(sid, "allowed.test", "/public-denies-private"))  # public: no private address
        self.put_network(sid, {"profile": "test"})
        self.assertIn("hello from", self.get(sid, "www.allowed.test", "/www-after-change")["stdout"])
        # to none: only stopped; then no link at its start, and back
        status, body = self.sp.request("PUT", "/v1/sandboxes/%s/network" % sid, {"profile": "none"})
        self.assertEqual((status, body["error"]["code"]), (409, "invalid_state"), body)
        self.assertEqual(self.sp.get(sid)["network"]["profile"], "test")
        self.sp.action(sid, "stop")
        self.assertEqual(self.put_network(sid, {"profile": "none"}), {"profile": "none", "allow": [], "deny": []})
        self.sp.action(sid, "start")
        self.assertFalse(os.path.exists("/sys/class/net/" + self.host_link(sid)))
        self.assertEqual(self.sh(sid, "ip -o link | awk '{print $2}'")["stdout"].split(), ["lo:"])
        self.sp.action(sid, "stop")
        self.put_network(sid, {"profile": "test"})
        self.sp.action(sid, "start")
        self.assertTrue(os.path.exists("/sys/class/net/" + self.host_link(sid)))
        self.assertIn("hello from", self.get(sid, "allowed.test", "/after-none")["stdout"])
        _, audit = self.sp.api("GET", "/v1/audit?action=sandbox.network_update&target=" + sid, expect=200)
        self.assertGreaterEqual(len(audit["audit"]), 6, audit)

    def test_runtime_change_cannot_widen(self):
        sid = self.sandbox(network={"profile": "test", "deny": ["www.allowed.test"]})
        # an allow of its own narrows to that name; blocked.test stays denied by the profile
        self.put_network(sid, {"allow": ["blocked.test", "allowed.test"]})
        self.assertTrue(self.refused_http(sid, "blocked.test", "/wide"))
        self.assertTrue(self.refused_http(sid, "www.allowed.test", "/narrow"))
        self.assertIn("hello from", self.get(sid, "allowed.test", "/ok")["stdout"])
        before = self.sp.get(sid)["network"]
        # (another profile needs network.profile: test_profile_change_needs_network_profile_and_a_stop_for_none)
        for bad in ({"profile": "nosuch"}, {"profile": "none", "deny": ["a.com"]}, {"allow": ["not a rule"]}, {"deny": "a.com"},
                    {"proxy": "x"}, {"profile": 3}, [1]):
            status, body = self.sp.request("PUT", "/v1/sandboxes/%s/network" % sid, bad)
            self.assertEqual(status, 400, (bad, body))
            self.assertEqual(body["error"]["code"], "invalid_json" if bad == [1] else "invalid_request", body)
        self.assertEqual(self.sp.get(sid)["network"], before)
        none = self.sandbox()
        status, body = self.sp.request("PUT", "/v1/sandboxes/%s/network" % none, {"deny": ["a.com"]})
        self.assertEqual(status, 400, body)
        self.assertEqual(self.put_network(none, {}), {"profile": "none", "allow": [], "deny": []})
        status, body = self.sp.request("PUT", "/v1/sandboxes/sb-nosuch/network", {"deny": []})
        self.assertEqual(status, 404, body)

    def test_change_of_a_stopped_sandbox_holds_at_its_start(self):
        sid = self.sandbox(network={"profile": "test"})
        self.sp.action(sid, "stop")
        self.put_network(sid, {"deny": ["allowed.test"]})
        self.sp.action(sid, "start")
        self.assertTrue(self.refused_http(sid, "allowed.test", "/stopped-then-denied"))
        self.assertIn("hello from", self.get(sid, "www.allowed.test", "/www-after-start")["stdout"])

    def test_egress_profiles_listed(self):
        _, body = self.sp.api("GET", "/v1/egress-profiles", expect=200)
        names = [p["name"] for p in body["profiles"]]
        self.assertEqual(names, sorted(names))
        for n in ("none", "public", "package-registries", "test"):
            self.assertIn(n, names)
        self.assertEqual(body["default"], "none")
        test = [p for p in body["profiles"] if p["name"] == "test"][0]
        self.assertEqual(test["default"], "deny")
        self.assertEqual(test["rules"][0], {"deny": "blocked.test"})
        reg = [p for p in body["profiles"] if p["name"] == "package-registries"][0]
        self.assertIn({"allow": "pypi.org:443"}, reg["rules"])
        # a sandbox of the built-in profile: none of the test's names resolve or pass
        sid = self.sandbox(network={"profile": "package-registries"})
        self.assertTrue(self.refused_http(sid, "allowed.test", "/registries"))
        self.assertNotIn("rc=0", self.sh(sid, "nslookup allowed.test; echo rc=$?")["stdout"])

    def test_cli_egress_flags_and_network_commands(self):
        r = self.sp.cli("sandbox", "create", "--egress", "test", "--deny", "www.allowed.test", "--allow", "allowed.test",
                        "--allow", "*.allowed.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        sid = r.stdout.decode().strip()
        self.sp.known_ids.add(sid)
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid, timeout=70))
        r = self.sp.cli("--json", "network", "get", sid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"profile": "test", "allow": ["allowed.test", "*.allowed.test"],
                                                "deny": ["www.allowed.test"]})
        self.assertTrue(self.refused_http(sid, "www.allowed.test", "/cli-denied"))
        r = self.sp.cli("--json", "network", "set", sid, "--deny", "allowed.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"profile": "test", "allow": [], "deny": ["allowed.test"]})
        self.assertTrue(self.refused_http(sid, "allowed.test", "/cli-now-denied"))
        self.assertIn("hello from", self.get(sid, "www.allowed.test", "/cli-www")["stdout"])
        r = self.sp.cli("network", "set", sid, "--deny", "not a rule")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"network.deny", r.stderr)
        r = self.sp.cli("network", "profiles")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.decode()
        for n in ("NAME", "package-registries", "public", "test"):
            self.assertIn(n, out)
        self.assertEqual(self.sp.cli("network", "set").returncode, 2)
        r = self.sp.cli("--json", "network", "set", sid, "--profile", "public", "--deny", "blocked.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"profile": "public", "allow": [], "deny": ["blocked.test"]})
        r = self.sp.cli("network", "set", sid, "--profile", "none")  # running: to none needs a stop
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"stop it first", r.stderr)

    # ---- connections in the audit log

    def test_connections_are_audited(self):
        sid = self.sandbox(network={"profile": "test"})
        project = self.sp.get(sid)["project"]
        self.assertIn("hello from", self.get(sid, "allowed.test", "/audited")["stdout"])
        self.assertTrue(self.refused_http(sid, "blocked.test", "/audited-denied"))

        def rows():
            _, body = self.sp.api("GET", "/v1/audit?action=egress.connection&target=" + sid, expect=200)
            return body["audit"] if len(body["audit"]) >= 2 else None
        got = wait_for(rows, timeout=10, what="the connection rows")
        allow = [r for r in got if r["detail"]["decision"] == "allow"]
        deny = [r for r in got if r["detail"]["decision"] == "deny"]
        self.assertTrue(allow and deny, got)
        a = allow[0]
        self.assertEqual(a["project"], project)
        self.assertIsNone(a["error_code"])
        self.assertEqual(a["detail"]["name"], "allowed.test")
        self.assertEqual(a["detail"]["port"], 80)
        self.assertEqual(a["detail"]["dialled"], self.up)
        self.assertGreater(a["detail"]["bytes_in"], 0)
        self.assertGreater(a["detail"]["bytes_out"], 0)
        self.assertGreaterEqual(a["detail"]["duration_ms"], 0)
        self.assertTrue(a["source"].startswith("10.203.%d." % self.n), a)
        d = deny[0]
        self.assertEqual(d["error_code"], "egress_denied")
        self.assertEqual(d["detail"]["name"], "blocked.test")
        self.assertEqual(d["detail"]["bytes_in"], 0)
        # the audit log's filters: by project, and nothing under another sandbox's id
        _, body = self.sp.api("GET", "/v1/audit?action=egress.connection&project=%s" % project, expect=200)
        self.assertTrue(any(r["target"] == sid for r in body["audit"]))
        _, body = self.sp.api("GET", "/v1/audit?action=egress.connection&target=sb-nosuch", expect=200)
        self.assertEqual(body["audit"], [])

    # ---- the E2B front door (allow_internet_access, network.allowOut/denyOut, PUT …/network)

    def test_e2b_fields_map_onto_the_policy(self):
        import http.client
        port = free_port()
        sp2 = Spaced(extra_args=["--egress-profiles", self.profiles, "--egress-resolver", self.up, "--egress-profile", "test",
                                 "--egress-subnet", "10.204.%d.0/24" % self.n, "--e2b-listen", "127.0.0.1:%d" % port])
        sp2.start()

        def stop():
            instance = sp2.instance()
            sp2.cleanup()
            run("nft", "delete", "table", "inet", "space_" + instance, check=False)
        self.addCleanup(stop)
        made = sp2.cli("--json", "key", "create", "--e2b", "egress-e2b")
        self.assertEqual(made.returncode, 0, made.stderr)
        key = json.loads(made.stdout)["secret"]

        def e2b(method, path, body=None):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request(method, path, json.dumps(body) if body is not None else None,
                         {"X-API-KEY": key, "Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            conn.close()
            return r.status, json.loads(data) if data else None

        def refused(sid, host):
            r = sp2.sh(sid, "printf 'GET /e2b HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo done"
                       % (host, self.up))
            return "HTTP/1." not in r["stdout"]

        status, made = e2b("POST", "/sandboxes", {"templateID": "base", "timeout": 300,
                                                  "network": {"denyOut": ["0.0.0.0/0"], "allowOut": ["allowed.test"]}})
        self.assertEqual(status, 201, made)
        sid = made["sandboxID"]
        sp2.known_ids.add(sid)
        self.assertEqual(sp2.get(sid)["network"], {"profile": "test", "allow": ["allowed.test"], "deny": []})
        self.assertTrue(e2b("GET", "/sandboxes/" + sid)[1]["allowInternetAccess"])
        self.assertFalse(refused(sid, "allowed.test"))
        self.assertTrue(refused(sid, "www.allowed.test"))
        # E2B's PUT narrows further: nothing at all
        status, body = e2b("PUT", "/sandboxes/%s/network" % sid, {"denyOut": ["0.0.0.0/0"]})
        self.assertEqual(status, 204, body)
        self.assertEqual(sp2.get(sid)["network"], {"profile": "test", "allow": [], "deny": ["0.0.0.0/0"]})
        self.assertTrue(refused(sid, "allowed.test"))
        # and back to the profile; a deny of one name
        status, body = e2b("PUT", "/sandboxes/%s/network" % sid, {"denyOut": ["www.allowed.test"]})
        self.assertEqual(status, 204, body)
        self.assertFalse(refused(sid, "allowed.test"))
        self.assertTrue(refused(sid, "www.allowed.test"))
        # bad input changes nothing
        for bad in ({"rules": {"allowed.test": [{"transform": {}}]}}, {"denyOut": ["not a rule"]}, {"allowOut": "x"},
                    {"allow_internet_access": "no"}):
            status, body = e2b("PUT", "/sandboxes/%s/network" % sid, bad)
            self.assertEqual(status, 400, (bad, body))
        self.assertEqual(sp2.get(sid)["network"]["deny"], ["www.allowed.test"])
        self.assertEqual(e2b("PUT", "/sandboxes/sb-nosuch0000/network", {"denyOut": []})[0], 404)
        # no internet asked for: the profile none, only lo
        status, made = e2b("POST", "/sandboxes", {"templateID": "base", "allow_internet_access": False})
        self.assertEqual(status, 201, made)
        off = made["sandboxID"]
        sp2.known_ids.add(off)
        self.assertEqual(sp2.get(off)["network"], {"profile": "none", "allow": [], "deny": []})
        self.assertFalse(e2b("GET", "/sandboxes/" + off)[1]["allowInternetAccess"])
        self.assertEqual(e2b("PUT", "/sandboxes/%s/network" % off, {"denyOut": ["0.0.0.0/0"]})[0], 204)
        # no fields: the operator's default profile, unnarrowed
        status, made = e2b("POST", "/sandboxes", {"templateID": "base"})
        self.assertEqual(status, 201, made)
        sp2.known_ids.add(made["sandboxID"])
        self.assertEqual(sp2.get(made["sandboxID"])["network"], {"profile": "test", "allow": [], "deny": []})
        status, body = e2b("POST", "/sandboxes", {"templateID": "base", "network": {"allowOut": [3]}})
        self.assertEqual(status, 400, body)

    # ---- the gateway dies, the daemon restarts

    def test_gateway_killed_is_restarted_and_fails_closed(self):
        sid = self.shared()
        self.assertIn("hello from", self.get(sid, "allowed.test", "/k")["stdout"])
        pid = self.egress_pid()
        self.assertIsNotNone(pid)
        m = self.mark()
        os.kill(pid, 9)
        # meanwhile (and after) nothing denied opens
        r = self.sh(sid, "printf 'GET /x HTTP/1.1\\r\\nHost: blocked.test\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; "
                         "printf 'GET /d HTTP/1.0\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo done" % (self.up, self.denied))
        self.assertNotIn("HTTP/1.", r["stdout"], r)
        new = wait_for(lambda: (self.egress_pid() or pid) != pid and self.egress_pid(), timeout=10,
                       what="space-egress to be restarted")
        self.assertNotEqual(new, pid)
        r = self.get(sid, "allowed.test", "/again")
        self.assertIn("hello from", r["stdout"], r)
        seen = self.seen_since(m)
        self.assertIn("path=/again", seen)
        self.assertNotIn("host=blocked.test", seen)
        self.assertNotIn("local=%s" % self.denied, seen)

    def test_stop_and_start_gives_the_link_again(self):
        sid = self.sandbox(network={"profile": "test"})
        link = self.host_link(sid)
        self.sp.action(sid, "stop")
        self.assertFalse(os.path.exists("/sys/class/net/" + link))
        self.sp.action(sid, "start")
        self.assertTrue(os.path.exists("/sys/class/net/" + link))
        r = self.get(sid, "allowed.test", "/after-start")
        self.assertIn("hello from", r["stdout"], r)

    def test_spaced_restart_keeps_running_sandboxes_connected(self):
        sid = self.sandbox(network={"profile": "test"})
        old = self.egress_pid()
        self.sp.restart(hard=True)
        # the gateway of the killed daemon does not outlive it (its control socket closed)
        wait_for(lambda: not os.path.exists("/proc/%d/cmdline" % old) or not open("/proc/%d/cmdline" % old).read(),
                 timeout=10, what="the old space-egress to exit")
        r = self.get(sid, "allowed.test", "/after-restart")
        self.assertIn("hello from", r["stdout"], r)
        r = self.sh(sid, "printf 'GET /d HTTP/1.0\\r\\n\\r\\n' | timeout 8 nc -w 2 %s 80; echo done" % self.denied)
        self.assertNotIn("HTTP/1.", r["stdout"], r)

    def test_destroy_leaves_nothing_behind(self):
        sid = self.sp.create(network={"profile": "public"}, **self.runtime)
        link = self.host_link(sid)
        self.assertTrue(os.path.exists("/sys/class/net/" + link))
        table = "space_" + self.sp.instance()
        self.assertIn('iifname "%s*"' % link[:6], run("nft", "list", "table", "inet", table).stdout)
        owners = [open(os.path.join(BLOCK_DIR, f)).read() for f in os.listdir(BLOCK_DIR) if not f.startswith(".")]
        self.assertTrue(any(sid in o for o in owners))
        host_addr = run("ip", "-4", "-o", "addr", "show", "dev", link).stdout.split()[3]
        self.assertTrue(host_addr.startswith("10.203.%d." % self.n), host_addr)
        self.sp.destroy(sid)
        self.assertFalse(os.path.exists("/sys/class/net/" + link))
        owners = [open(os.path.join(BLOCK_DIR, f)).read() for f in os.listdir(BLOCK_DIR) if not f.startswith(".")]
        self.assertFalse(any(sid in o for o in owners))
        self.assertNotIn(" %s " % host_addr, run("ip", "-4", "-o", "addr").stdout)


class NetworkEgressOnGvisor(NetworkEgress):
    """The core cases on gvisor sandboxes: runsc --network=sandbox in a namespace spaced made
    with the same link (gVisor's netstack takes it over), the same rules and gateway; and
    memory snapshots, restore and fork of a sandbox with a network (a new link each)."""
    runtime = {"runtime": "gvisor"}
    CORE = ("test_profile_none_has_only_lo", "test_allowed_name_passes_http_and_tls", "test_dns_answers_only_allowed_names",
            "test_denied_name_refused", "test_direct_ip_to_a_denied_address_refused", "test_udp_and_icmp_dropped",
            "test_host_services_and_other_sandboxes_refused", "test_name_resolving_to_loopback_refused",
            "test_runtime_change_narrows_new_and_open_connections", "test_stop_and_start_gives_the_link_again",
            "test_destroy_leaves_nothing_behind")

    def test_gvisor_sandbox_has_the_link_and_the_platform_ca(self):
        sid = self.shared()
        self.assertEqual(self.sp.get(sid)["runtime"], "gvisor")
        self.assertTrue(os.path.exists("/sys/class/net/" + self.host_link(sid)))
        r = self.sh(sid, "cat /proc/version; cat /etc/resolv.conf; grep -c 'BEGIN CERT' /etc/ssl/certs/space-platform-ca.pem; "
                         "echo ssl=$SSL_CERT_FILE")
        self.assertIn("nameserver 10.203.%d." % self.n, r["stdout"], r)
        self.assertIn("ssl=/etc/ssl/certs/ca-certificates.crt", r["stdout"], r)
        self.assertIn("\n1\n", r["stdout"], r)

    def test_memory_snapshots_refused_disk_snapshot_restore_and_fork_get_a_new_link(self):
        sid = self.sandbox(network={"profile": "test", "deny": ["www.allowed.test"]})
        self.assertIn("hello from", self.get(sid, "allowed.test", "/before-snap")["stdout"])
        # runsc cannot checkpoint a sandbox on the host's network stack: a 422, nothing made
        _, before = self.sp.api("GET", "/v1/snapshots?sandbox_id=" + sid, expect=200)
        for path in ("/v1/sandboxes/%s/snapshots" % sid, "/v1/sandboxes/%s/fork" % sid):
            status, body = self.sp.request("POST", path + "?wait=true", {"memory": True})
            self.assertEqual((status, body["error"]["code"]), (422, "unsupported"), body)
        self.assertEqual(self.sp.api("GET", "/v1/snapshots?sandbox_id=" + sid, expect=200)[1], before)
        self.assertEqual(self.sp.get(sid)["state"], "running")
        self.assertIn("hello from", self.get(sid, "allowed.test", "/after-refusal")["stdout"])
        # a disk snapshot, its restore: a new link, the same rules
        _, d = self.sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {}, expect=200)
        snap = d["snapshot"]
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/snapshots/" + snap["id"]))
        self.sp.api("POST", "/v1/sandboxes/%s/restore?wait=true" % sid, {"snapshot_id": snap["id"]}, expect=200)
        self.assertTrue(os.path.exists("/sys/class/net/" + self.host_link(sid)))
        self.assertIn("hello from", self.get(sid, "allowed.test", "/after-restore")["stdout"])
        self.assertTrue(self.refused_http(sid, "www.allowed.test", "/denied-after-restore"))
        # a fork: its own link, the parent's rules
        _, d = self.sp.api("POST", "/v1/sandboxes/%s/fork?wait=true" % sid, {}, expect=200)
        child = d["operation"]["result"]["sandbox_ids"][0]
        fork_snap = d["operation"]["result"].get("snapshot_id")
        if fork_snap:
            self.addCleanup(lambda: self.sp.request("DELETE", "/v1/snapshots/" + fork_snap))
        self.addCleanup(lambda: self.sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % child, timeout=70))
        self.assertEqual(self.sp.get(child)["runtime"], "gvisor")
        self.assertTrue(os.path.exists("/sys/class/net/" + self.host_link(child)))
        self.assertEqual(self.sp.get(child)["network"], {"profile": "test", "allow": [], "deny": ["www.allowed.test"]})
        self.assertIn("hello from", self.get(child, "allowed.test", "/child")["stdout"])
        self.assertTrue(self.refused_http(child, "www.allowed.test", "/child-denied"))
        self.assertIn("hello from", self.get(sid, "allowed.test", "/parent-after-fork")["stdout"])

def load_tests(loader, tests, pattern):
    """NetworkEgress whole; on gvisor its core cases and the gvisor ones."""
    suite = unittest.TestSuite(loader.loadTestsFromTestCase(NetworkEgress))
    for name in loader.getTestCaseNames(NetworkEgressOnGvisor):
        if name in NetworkEgressOnGvisor.CORE or name not in dir(NetworkEgress):
            suite.addTest(NetworkEgressOnGvisor(name))
    return suite


if __name__ == "__main__":
    unittest.main()
