"""Runtimes chosen per sandbox: GET /v1/capabilities lists the drivers; a sandbox runs on
the driver its template binding names and records it; a binding naming a runtime this
server does not host is a clear 400 at create that leaves nothing behind; a sandbox
recorded on such a runtime gets a clear 503, and spaced stays up and leaves it alone."""

import os
import shutil
import sqlite3
import unittest

from spaced_harness import SpacedTestCase

ALIEN_TEMPLATE = "alien"
ALIEN_SANDBOX = "sb-a1e0a1e0a1e0a1e0"


class Runtimes(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        sp = cls.spaced
        # A template and a sandbox as a server hosting another driver would have left them.
        cls.donor = sp.create(metadata={"t": "runtimes-donor"})
        sp.action(cls.donor, "stop")
        assert sp.stop() == 0
        db = sqlite3.connect(os.path.join(sp.state_dir, "state.db"))
        with db:
            db.execute("CREATE TEMP TABLE t AS SELECT * FROM templates WHERE name = 'busybox'")
            db.execute("UPDATE t SET name = ?, environment = json_set(environment, '$.driver', 'firecracker')",
                       (ALIEN_TEMPLATE,))
            db.execute("INSERT INTO templates SELECT * FROM t")
            db.execute("CREATE TEMP TABLE s AS SELECT * FROM sandboxes WHERE id = ?", (cls.donor,))
            db.execute("UPDATE s SET id = ?, state = 'running', runtime = 'firecracker',"
                       " runtime_state = '{\"vm\":7}', environment = json_set(environment, '$.driver', 'firecracker')",
                       (ALIEN_SANDBOX,))
            db.execute("INSERT INTO sandboxes SELECT * FROM s")
        db.close()
        sp.start()

    def test_capabilities_list_the_drivers(self):
        _, caps = self.spaced.api("GET", "/v1/capabilities", expect=200)
        drivers = caps["drivers"]
        # gvisor is hosted where runsc is installed (test_gvisor.py covers it), microvm where
        # QEMU is (test_microvm.py)
        expected = ["namespaces"] + (["gvisor"] if shutil.which("runsc") else []) + \
            (["microvm"] if shutil.which("qemu-system-x86_64") else [])
        self.assertEqual([d["name"] for d in drivers], expected)
        ns = drivers[0]
        self.assertIs(ns["default"], True)
        self.assertEqual(ns["version"], caps["runtime_version"])
        self.assertEqual(caps["runtime"], "namespaces")  # the default driver, as before
        self.assertIn(ns["cgroup"], ("v1", "v2"))
        self.assertIs(ns["capabilities"]["fd_passing"], True)
        self.assertEqual(ns["capabilities"]["pause"], caps["capabilities"]["pause"])
        self.assertEqual(ns["capabilities"]["memory_snapshot"], caps["capabilities"]["memory_snapshot"])
        self.assertEqual(ns["details"], caps["details"])

    def test_sandbox_records_its_runtime(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "runtimes-recorded"})
        self.assertEqual(sp.get(sid)["environment"]["driver"], "namespaces")
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(sp.state_dir, "state.db"), uri=True)
        runtime, state = db.execute("SELECT runtime, runtime_state FROM sandboxes WHERE id = ?", (sid,)).fetchone()
        db.close()
        self.assertEqual(runtime, "namespaces")
        self.assertEqual(sorted(__import__("json").loads(state)), ["pid", "pid_start", "uid_base"])

    def test_unknown_runtime_in_the_binding_is_a_400_at_create(self):
        sp = self.spaced
        before = sp.list_ids()
        status, body = sp.request("POST", "/v1/sandboxes?wait=true", {"template": ALIEN_TEMPLATE})
        self.assertError((status, body), 400, "invalid_request")
        self.assertIn("firecracker", body["error"]["message"])
        self.assertEqual(sp.list_ids(), before, "a refused create left a sandbox behind")
        _, ops = sp.api("GET", "/v1/operations", expect=200)
        self.assertFalse([o for o in ops["operations"] if o["kind"] == "sandbox.create" and o["state"] == "pending"])
        self.assertTrue(sp.alive())

    def test_sandbox_on_an_unhosted_runtime_gets_clear_errors(self):
        sp = self.spaced
        # The reconciler left it as it was (another server may host its runtime).
        self.assertEqual(sp.state(ALIEN_SANDBOX), "running")
        self.assertIn("reconcile.runtime_missing", sp.logs(tail=1000000))
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/exec" % ALIEN_SANDBOX, {"cmd": ["true"]}), 503,
                         "unavailable")
        status, session = sp.request("POST", "/v1/sandboxes/%s/sessions" % ALIEN_SANDBOX, {})
        self.assertIn(status, (200, 201), session)
        token = session["attach_token"]
        self.assertError(sp.request("GET", "/v1/sandboxes/%s/files/stat?path=/etc" % ALIEN_SANDBOX, key=token), 503,
                         "unavailable")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/commands" % ALIEN_SANDBOX, {"cmd": ["true"]}, key=token),
                         503, "unavailable")
        self.assertTrue(sp.alive())


if __name__ == "__main__":
    unittest.main()
