"""The data plane through any spaced of the fleet (docs/fleet.md): PostgreSQL (a throwaway
cluster), two nodes and a --role control process on 127.0.0.1, all given one --fleet-secret.
A sandbox lives on node a; its exec, files, streamed commands and their SSE resume reached
through the control process and through node b answer as a itself does; the hop's node
credential is checked (a wrong, malformed or missing one is refused, and never taken on a
control route); a sandbox whose node is lost answers 503 node_unavailable."""

import os
import secrets
import shutil
import time
import unittest

from pg_cluster import PgCluster
from spaced_harness import Spaced, SpacedTestCase, require_root, wait_for

LEASE_S = 3


def events_of(es):
    return [(e.get("id"), e.get("event"), e.get("data")) for e in es]


class FleetDataPlane(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.pg = PgCluster().start()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def setUp(self):
        self.db = "fleetdp_%d" % int(time.monotonic() * 1000)
        url = self.pg.create_database(self.db)
        self.secret_dir = os.path.join("/tmp", "fleet-secret-%d-%s" % (os.getpid(), secrets.token_hex(4)))
        os.makedirs(self.secret_dir, mode=0o700)
        self.addCleanup(shutil.rmtree, self.secret_dir, True)
        self.secret = os.path.join(self.secret_dir, "fleet.key")
        with open(os.open(self.secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        args = ["--claim-lease", str(LEASE_S), "--node-lost-after", str(LEASE_S * 3), "--fleet-secret", self.secret]
        self.a = Spaced(database=url, extra_args=args + ["--node-label", "zone=a", "--node-label", "example.com/disk=ssd"])
        self.b = Spaced(database=url, extra_args=args)
        self.c = Spaced(database=url, extra_args=args + ["--role", "control"])
        self.addCleanup(self.c.cleanup)
        self.addCleanup(self.b.cleanup)
        self.addCleanup(self.a.cleanup)
        self.sid = None
        self.addCleanup(self.destroy)
        self.a.start()
        for sp in (self.b, self.c):
            os.makedirs(sp.state_dir, mode=0o700)
            shutil.copy(os.path.join(self.a.state_dir, "admin.key"), os.path.join(sp.state_dir, "admin.key"))
            sp.start()
        # A create submitted to a is claimed by a: the sandbox lives there.
        self.sid = self.a.create()
        self.assertEqual(self.a.get(self.sid)["node"], self.a.instance())
        wait_for(lambda: self.pg.psql("SELECT count(*) FROM nodes WHERE state = 'ready'", database=self.db) == "2",
                 timeout=20, what="both nodes ready")

    def test_node_labels_are_in_the_node_row(self):
        _, d = self.c.api("GET", "/v1/nodes", expect=200)
        labels = {n["id"]: n["labels"] for n in d["nodes"]}
        self.assertEqual(labels, {self.a.instance(): {"example.com/disk": "ssd", "zone": "a"}, self.b.instance(): {}})

    def destroy(self):
        if self.sid and self.a.alive():
            self.a.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % self.sid, timeout=70)

    def token(self, sp):
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % self.sid, {}, expect=201)
        return s["attach_token"]

    def test_exec_files_commands_the_same_through_any_spaced(self):
        a, b, c = self.a, self.b, self.c
        sid = self.sid
        direct = a.exec(sid, cmd=["sh", "-c", "echo out; echo err >&2; exit 3"])
        for sp in (b, c):
            got = sp.exec(sid, cmd=["sh", "-c", "echo out; echo err >&2; exit 3"])
            self.assertEqual((got["stdout"], got["stderr"], got["exit_code"]),
                             (direct["stdout"], direct["stderr"], direct["exit_code"]))
        # A file put through the control process is the file a serves, and back through b.
        data = os.urandom(300000)
        c.put_file(sid, "/tmp/blob", data)
        tok = self.token(c)
        for sp in (a, b, c):
            status, body = sp.request("GET", "/v1/sandboxes/%s/files?path=/tmp/blob" % sid, key=tok)
            self.assertEqual((status, body), (200, data))
        stats = [sp.api("GET", "/v1/sandboxes/%s/files/stat?path=/tmp/blob" % sid, key=tok, expect=200)[1]
                 for sp in (a, b, c)]
        self.assertEqual(stats[0], stats[1])
        self.assertEqual(stats[0], stats[2])
        self.assertEqual(stats[0]["size"], len(data))
        # Errors are the owning node's, passed on as they are.
        for sp in (a, b, c):
            self.assertError(sp.request("GET", "/v1/sandboxes/%s/files?path=/nonexistent" % sid, key=tok), 404, "not_found")
        # A streamed command started through c (an attach token minted on b): its events,
        # and a resume from the middle by Last-Event-ID, are what a streams.
        tok = self.token(b)
        _, cmd = c.api("POST", "/v1/sandboxes/%s/commands" % sid,
                       {"cmd": ["sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done"]}, key=tok, expect=201)
        cid = cmd["command_id"]
        path = "/v1/sandboxes/%s/commands/%s/events" % (sid, cid)
        streams = {}
        for name, sp in (("a", a), ("b", b), ("c", c)):
            es = sp.events(path, key=tok)
            self.addCleanup(es.close)
            self.assertEqual(es.status, 200)
            self.assertTrue(es.headers.get("content-type", "").startswith("text/event-stream"), es.headers)
            streams[name] = events_of(es)
            es.close()
        self.assertEqual(streams["a"][-1][1], "exit", streams["a"])
        self.assertEqual(streams["b"], streams["a"])
        self.assertEqual(streams["c"], streams["a"])
        middle = streams["a"][1][0]
        resumed = {}
        for name, sp in (("a", a), ("c", c)):
            es = sp.events(path, key=tok, headers={"Last-Event-ID": middle})
            self.addCleanup(es.close)
            resumed[name] = events_of(es)
            es.close()
        self.assertEqual(resumed["c"], resumed["a"])
        self.assertEqual(resumed["a"], streams["a"][2:])
        got = c.api("GET", "/v1/sandboxes/%s/commands/%s?wait=true&timeout_s=60" % (sid, cid), key=tok, expect=200)[1]
        self.assertEqual(got["exit_code"], 0, got)
        # The caller is checked at the front door it came to: a wrong token is refused by c.
        self.assertError(c.request("GET", "/v1/sandboxes/%s/commands" % sid, key="not-a-token"), 401)
        _, k = a.api("POST", "/v1/keys", {"name": "viewer", "role": "viewer"}, expect=201)
        self.assertError(c.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]}, key=k["secret"]), 403)

    def test_node_credential_refused_when_wrong_or_missing(self):
        a, sid = self.a, self.sid
        principal = '{"key_id":"","project_id":"default","role":4,"permissions":65535,"expires_at_ms":0,"session_id":""}'
        now = int(time.time() * 1000)
        exec_path = "/v1/sandboxes/%s/exec" % sid
        forged = {"X-Space-Node-Auth": "v1 %s %d %s" % (self.b.instance(), now, "0" * 64),
                  "X-Space-Node-Principal": principal}
        self.assertError(a.request("POST", exec_path, {"cmd": ["true"]}, key=None, headers=forged), 401, "unauthorized")
        for bad in ("", "v1", "v1 x 1 zz", "v2 %s %d %s" % (self.b.instance(), now, "0" * 64)):
            h = {"X-Space-Node-Auth": bad, "X-Space-Node-Principal": principal}
            self.assertError(a.request("POST", exec_path, {"cmd": ["true"]}, key=None, headers=h), 401)
        # A principal header alone is not a credential: no key, 401.
        self.assertError(a.request("POST", exec_path, {"cmd": ["true"]}, key=None,
                                   headers={"X-Space-Node-Principal": principal}), 401)
        # Never taken on a control route, even beside a key.
        self.assertError(a.request("GET", "/v1/keys", headers=forged), 401)
        # A node without the fleet's secret cannot pass requests on: 503 node_unavailable.
        d = Spaced(database=a.database, extra_args=["--role", "control"])
        self.addCleanup(d.cleanup)
        os.makedirs(d.state_dir, mode=0o700)
        shutil.copy(os.path.join(a.state_dir, "admin.key"), os.path.join(d.state_dir, "admin.key"))
        d.start()
        self.assertError(d.request("POST", exec_path, {"cmd": ["true"]}), 503, "node_unavailable")
        # Nothing ran: the sandbox is as it was.
        self.assertEqual(a.sh(sid, "echo still")["stdout"], "still\n")

    def test_sandbox_on_a_lost_node_is_node_unavailable(self):
        a, c, sid = self.a, self.c, self.sid
        self.assertEqual(c.sh(sid, "echo up")["stdout"], "up\n")
        a.kill9()
        # Past the lease a's sandbox cannot be reached: a clear 503 from the control process.
        wait_for(lambda: c.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})[0] == 503,
                 timeout=LEASE_S * 3 + 20, what="the exec to be refused")
        status, body = c.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
        self.assertError((status, body), 503, "node_unavailable")
        self.assertIn(a.instance(), body["error"]["message"])
        # a back: reached through c again.
        a.start()
        wait_for(lambda: c.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})[0] == 200,
                 timeout=60, what="a reached again")
        self.assertEqual(c.sh(sid, "echo back")["stdout"], "back\n")


if __name__ == "__main__":
    unittest.main()
