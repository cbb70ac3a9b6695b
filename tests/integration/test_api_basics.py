"""Health, version, authentication, keys, operations and error handling of the HTTP API.

Bad input must get the right 4xx and change nothing."""

import http.client
import os
import re
import stat
import time
import unittest

from spaced_harness import SpacedTestCase

MAX_BODY = 64 * 1024


class ApiBasics(SpacedTestCase):
    spaced_kwargs = {"max_body": MAX_BODY}

    # ------------------------------------------------------------ health, version, auth

    def test_health_needs_no_key(self):
        status, body = self.spaced.request("GET", "/v1/health", key=None)
        self.assertEqual(status, 200)
        self.assertEqual(body["status"], "ok", body)
        pool = body["checks"]["pool"]
        self.assertEqual(pool["condition"], "ok", body)
        self.assertGreater(pool["bytes"], 0)
        self.assertEqual(pool["device_errors"], 0)
        self.assertNotIn("reason", pool)
        self.assertTrue(self.spaced.last_headers.get("Content-Type", "").startswith("application/json"))

    def test_version(self):
        status, body = self.spaced.request("GET", "/v1/version")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["api"], "v1")
        self.assertEqual(body["runtime"], "namespaces")
        self.assertIn(body["cgroup"], ("v1", "v2"))
        self.assertRegex(body["version"], r"^\d+\.\d+\.\d+")

    def test_admin_key_file(self):
        path = os.path.join(self.spaced.state_dir, "admin.key")
        st = os.stat(path)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, "admin.key mode is %o" % stat.S_IMODE(st.st_mode))
        self.assertRegex(self.spaced.key, r"^space_[0-9a-f]{40}$")
        # Only a hash is stored: the secret must not appear in the database.
        for name in os.listdir(self.spaced.state_dir):
            if name.startswith("state.db"):
                with open(os.path.join(self.spaced.state_dir, name), "rb") as f:
                    self.assertNotIn(self.spaced.key.encode(), f.read(), "key stored in clear in " + name)

    def test_missing_and_bad_keys_get_401(self):
        for path in ("/v1/version", "/v1/sandboxes", "/v1/templates", "/v1/keys", "/v1/operations"):
            self.assertError(self.spaced.request("GET", path, key=None), 401, "unauthorized")
            self.assertError(self.spaced.request("GET", path, key="space_" + "0" * 40), 401, "unauthorized")
            self.assertError(self.spaced.request("GET", path, key="garbage"), 401, "unauthorized")
        # Wrong scheme
        self.assertError(self.spaced.request("GET", "/v1/version", key=None,
                                             headers={"Authorization": "Basic " + self.spaced.key}), 401, "unauthorized")
        # Unauthenticated mutating requests change nothing
        before = self.spaced.list_ids()
        self.assertError(self.spaced.request("POST", "/v1/sandboxes", {}, key=None), 401, "unauthorized")
        self.assertEqual(self.spaced.list_ids(), before)

    def test_unknown_route_404_and_wrong_method_405(self):
        self.assertError(self.spaced.request("GET", "/v1/nothing-here"), 404, "not_found")
        self.assertError(self.spaced.request("GET", "/v2/health"), 404, "not_found")
        self.assertError(self.spaced.request("PUT", "/v1/sandboxes", {}), 405, "method_not_allowed")
        self.assertError(self.spaced.request("DELETE", "/v1/sandboxes"), 405, "method_not_allowed")
        self.assertError(self.spaced.request("POST", "/v1/health", {}), 405, "method_not_allowed")
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/sb-0123456789abcdef/exec"), 405, "method_not_allowed")
        self.assertError(self.spaced.request("PATCH", "/v1/keys", {}), 405, "method_not_allowed")

    # ------------------------------------------------------------ keys

    def test_key_lifecycle(self):
        status, k = self.spaced.request("POST", "/v1/keys", {"name": "ci"})
        self.assertEqual(status, 201, k)
        self.assertRegex(k["id"], r"^key-")
        self.assertEqual(k["name"], "ci")
        self.assertRegex(k["secret"], r"^space_[0-9a-f]{40}$")
        self.assertIn("created_at", k)
        secret = k["secret"]

        # The new key works.
        status, body = self.spaced.request("GET", "/v1/sandboxes", key=secret)
        self.assertEqual(status, 200, body)

        # The list shows it without its secret, with last_used_at set after use.
        status, body = self.spaced.request("GET", "/v1/keys")
        self.assertEqual(status, 200)
        mine = [x for x in body["keys"] if x["id"] == k["id"]]
        self.assertEqual(len(mine), 1, body)
        self.assertEqual(mine[0]["name"], "ci")
        self.assertNotIn("secret", mine[0])
        self.assertNotIn(secret, repr(body))
        for x in body["keys"]:
            self.assertNotIn("secret", x)
            # key rows grew their scope (docs/tenancy.md); still never a hash or secret
            self.assertEqual(set(x) - {"id", "name", "created_at", "last_used_at", "project", "role", "permissions",
                                       "expires_at"}, set(), x)
        self.assertIsNotNone(mine[0].get("last_used_at"), "last_used_at not set after the key was used: %r" % mine[0])

        # Delete it: it then gets 401.
        status, body = self.spaced.request("DELETE", "/v1/keys/" + k["id"])
        self.assertEqual(status, 204, body)
        self.assertIsNone(body)
        self.assertError(self.spaced.request("GET", "/v1/sandboxes", key=secret), 401, "unauthorized")
        status, body = self.spaced.request("GET", "/v1/keys")
        self.assertNotIn(k["id"], [x["id"] for x in body["keys"]])
        # Deleting again: 404
        self.assertError(self.spaced.request("DELETE", "/v1/keys/" + k["id"]), 404, "not_found")

    def test_key_bad_input(self):
        status, before = self.spaced.request("GET", "/v1/keys")
        self.assertError(self.spaced.request("POST", "/v1/keys", {"name": 5}), 400, "invalid_request")
        self.assertError(self.spaced.request("POST", "/v1/keys", {"name": "x", "admin": True}), 400, "invalid_request")
        self.assertError(self.spaced.request("POST", "/v1/keys", raw=b"{", headers={"Content-Type": "application/json"}),
                         400, "invalid_json")
        self.assertError(self.spaced.request("DELETE", "/v1/keys/key-0000000000000000"), 404, "not_found")
        self.assertError(self.spaced.request("DELETE", "/v1/keys/..%2F..%2Fetc"), 404, "not_found")
        status, after = self.spaced.request("GET", "/v1/keys")
        self.assertEqual([x["id"] for x in before["keys"]], [x["id"] for x in after["keys"]])

    # ------------------------------------------------------------ templates

    def test_templates(self):
        status, body = self.spaced.request("GET", "/v1/templates")
        self.assertEqual(status, 200, body)
        names = {t["name"]: t for t in body["templates"]}
        self.assertIn("busybox", names)
        self.assertEqual(names["busybox"]["state"], "ready")
        env = names["busybox"]["environment"]
        self.assertEqual(env["driver"], "namespaces")
        self.assertRegex(env["digest"], r"^sha256:[0-9a-f]{64}$")
        status, t = self.spaced.request("GET", "/v1/templates/busybox")
        self.assertEqual(status, 200)
        self.assertEqual(t["name"], "busybox")
        self.assertError(self.spaced.request("GET", "/v1/templates/nope"), 404, "not_found")
        self.assertError(self.spaced.request("GET", "/v1/templates/..%2F..%2Fetc"), 404, "not_found")
        self.assertError(self.spaced.request("POST", "/v1/templates/nope/build"), 404, "not_found")

    # ------------------------------------------------------------ operations

    def test_operations(self):
        status, data = self.spaced.request("POST", "/v1/sandboxes", {"metadata": {"t": "ops"}})
        self.assertEqual(status, 202, data)
        op, sb = data["operation"], data["sandbox"]
        self.spaced.known_ids.add(sb["id"])
        self.addCleanup(self._destroy_quietly, sb["id"])
        self.assertRegex(op["id"], r"^op-[0-9a-f]{16}$")
        self.assertEqual(op["kind"], "sandbox.create")
        self.assertEqual(op["target"], sb["id"])
        self.assertIn(op["state"], ("pending", "running", "succeeded"))
        self.assertRegex(sb["id"], r"^sb-[0-9a-f]{16}$")

        def finished():
            s, o = self.spaced.request("GET", "/v1/operations/" + op["id"])
            return s == 200 and o["state"] in ("succeeded", "failed") and o

        from spaced_harness import wait_for
        o = wait_for(finished, timeout=30, what="create operation to finish")
        self.assertEqual(o["state"], "succeeded", o)
        self.assertIsNone(o.get("error"))
        ts = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        for f in ("created_at", "started_at", "finished_at"):
            self.assertRegex(o[f] or "", ts, "%s of %r" % (f, o))
        self.assertLessEqual(o["created_at"], o["started_at"])
        self.assertLessEqual(o["started_at"], o["finished_at"])

        # A second operation on the same target, then the ?target= filter.
        s, stop = self.spaced.action(sb["id"], "stop")
        self.assertEqual(stop["operation"]["state"], "succeeded")
        self.assertEqual(stop["operation"]["kind"], "sandbox.stop")
        s, lst = self.spaced.request("GET", "/v1/operations?target=" + sb["id"])
        self.assertEqual(s, 200, lst)
        ids = [x["id"] for x in lst["operations"]]
        self.assertEqual(ids, [stop["operation"]["id"], op["id"]], "newest first, only this target: %r" % lst)
        self.assertTrue(all(x["target"] == sb["id"] for x in lst["operations"]))
        s, lst = self.spaced.request("GET", "/v1/operations?target=sb-0000000000000000")
        self.assertEqual(s, 200)
        self.assertEqual(lst["operations"], [])
        s, lst = self.spaced.request("GET", "/v1/operations?state=succeeded")
        self.assertEqual(s, 200)
        self.assertTrue(all(x["state"] == "succeeded" for x in lst["operations"]))
        self.assertError(self.spaced.request("GET", "/v1/operations?state=bogus"), 400, "invalid_request")
        self.assertError(self.spaced.request("GET", "/v1/operations/op-0000000000000000"), 404, "not_found")
        self.assertError(self.spaced.request("GET", "/v1/operations/..%2F..%2Fetc"), 404, "not_found")

    # ------------------------------------------------------------ bad input changes nothing

    def test_bad_input_changes_nothing(self):
        sp = self.spaced
        running = self.new_sandbox(metadata={"t": "bad-input"})
        before = sp.list_ids()
        s, ops_before = sp.request("GET", "/v1/operations")
        ops_before = len(ops_before["operations"])
        JSON = {"Content-Type": "application/json"}

        cases = [
            # (description, request args, status, code)
            ("malformed JSON", dict(method="POST", path="/v1/sandboxes", raw=b'{"template": ', headers=JSON), 400, "invalid_json"),
            ("JSON array body", dict(method="POST", path="/v1/sandboxes", raw=b"[]", headers=JSON), 400, "invalid_json"),
            ("JSON string body", dict(method="POST", path="/v1/sandboxes", raw=b'"x"', headers=JSON), 400, "invalid_json"),
            ("not UTF-8", dict(method="POST", path="/v1/sandboxes", raw=b'{"template": "\xff\xfe"}', headers=JSON), 400, None),
            ("duplicate keys", dict(method="POST", path="/v1/sandboxes", raw=b'{"timeout_s": 1, "timeout_s": 2}', headers=JSON), 400, None),
            ("unknown field", dict(method="POST", path="/v1/sandboxes", body={"tempalte": "busybox"}), 400, "invalid_request"),
            ("unknown resource field", dict(method="POST", path="/v1/sandboxes", body={"resources": {"gpus": 1}}), 400, "invalid_request"),
            ("template wrong type", dict(method="POST", path="/v1/sandboxes", body={"template": 5}), 400, "invalid_request"),
            ("resources wrong type", dict(method="POST", path="/v1/sandboxes", body={"resources": [1]}), 400, "invalid_request"),
            ("memory as string", dict(method="POST", path="/v1/sandboxes", body={"resources": {"memory_mb": "64"}}), 400, "invalid_request"),
            ("memory fractional", dict(method="POST", path="/v1/sandboxes", body={"resources": {"memory_mb": 64.5}}), 400, "invalid_request"),
            ("memory too small", dict(method="POST", path="/v1/sandboxes", body={"resources": {"memory_mb": 15}}), 400, "invalid_request"),
            ("memory too big", dict(method="POST", path="/v1/sandboxes", body={"resources": {"memory_mb": 65537}}), 400, "invalid_request"),
            ("memory negative", dict(method="POST", path="/v1/sandboxes", body={"resources": {"memory_mb": -1}}), 400, "invalid_request"),
            ("pids too small", dict(method="POST", path="/v1/sandboxes", body={"resources": {"pids": 15}}), 400, "invalid_request"),
            ("pids too big", dict(method="POST", path="/v1/sandboxes", body={"resources": {"pids": 65537}}), 400, "invalid_request"),
            ("cpus zero", dict(method="POST", path="/v1/sandboxes", body={"resources": {"cpus": 0}}), 400, "invalid_request"),
            ("cpus too many", dict(method="POST", path="/v1/sandboxes", body={"resources": {"cpus": 65}}), 400, "invalid_request"),
            ("cpus as bool", dict(method="POST", path="/v1/sandboxes", body={"resources": {"cpus": True}}), 400, "invalid_request"),
            ("huge int", dict(method="POST", path="/v1/sandboxes", raw=b'{"resources": {"memory_mb": 99999999999999999999999}}', headers=JSON), 400, None),
            ("timeout negative", dict(method="POST", path="/v1/sandboxes", body={"timeout_s": -1}), 400, "invalid_request"),
            ("timeout as string", dict(method="POST", path="/v1/sandboxes", body={"timeout_s": "10"}), 400, "invalid_request"),
            ("bad on_timeout", dict(method="POST", path="/v1/sandboxes", body={"on_timeout": "explode"}), 400, "invalid_request"),
            ("on_timeout wrong type", dict(method="POST", path="/v1/sandboxes", body={"on_timeout": 1}), 400, "invalid_request"),
            ("env not an object", dict(method="POST", path="/v1/sandboxes", body={"env": ["A=1"]}), 400, "invalid_request"),
            ("env bad name", dict(method="POST", path="/v1/sandboxes", body={"env": {"1A": "x"}}), 400, "invalid_request"),
            ("env name with =", dict(method="POST", path="/v1/sandboxes", body={"env": {"A=B": "x"}}), 400, "invalid_request"),
            ("env value not string", dict(method="POST", path="/v1/sandboxes", body={"env": {"A": 1}}), 400, "invalid_request"),
            ("metadata bad key", dict(method="POST", path="/v1/sandboxes", body={"metadata": {"a b": "x"}}), 400, "invalid_request"),
            ("metadata value too long", dict(method="POST", path="/v1/sandboxes", body={"metadata": {"k": "x" * 257}}), 400, "invalid_request"),
            ("unknown template", dict(method="POST", path="/v1/sandboxes", body={"template": "no-such-template"}), 404, "not_found"),
            ("hostile template", dict(method="POST", path="/v1/sandboxes", body={"template": "../../etc"}), 400, "invalid_request"),
            ("wrong content type", dict(method="POST", path="/v1/sandboxes", raw=b"{}", headers={"Content-Type": "text/plain"}), 415, "unsupported_media_type"),
            ("form content type", dict(method="POST", path="/v1/sandboxes", raw=b"template=busybox", headers={"Content-Type": "application/x-www-form-urlencoded"}), 415, "unsupported_media_type"),
            ("body over max-body", dict(method="POST", path="/v1/sandboxes", raw=b'{"metadata": {"k": "' + b"x" * (MAX_BODY + 10) + b'"}}', headers=JSON), 413, "payload_too_large"),
            ("exec body over max-body", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, raw=b'{"shell": "' + b"x" * (MAX_BODY * 2) + b'"}', headers=JSON), 413, "payload_too_large"),
            ("unknown sandbox", dict(method="GET", path="/v1/sandboxes/sb-0123456789abcdef"), 404, "not_found"),
            ("unknown sandbox stop", dict(method="POST", path="/v1/sandboxes/sb-0123456789abcdef/stop"), 404, "not_found"),
            ("unknown sandbox delete", dict(method="DELETE", path="/v1/sandboxes/sb-0123456789abcdef"), 404, "not_found"),
            ("unknown sandbox exec", dict(method="POST", path="/v1/sandboxes/sb-0123456789abcdef/exec", body={"cmd": ["true"]}), 404, "not_found"),
            ("hostile id ../../etc", dict(method="GET", path="/v1/sandboxes/..%2F..%2Fetc"), 404, "not_found"),
            ("hostile id .. delete", dict(method="DELETE", path="/v1/sandboxes/..%2F..%2Fetc"), 404, "not_found"),
            ("hostile id .. stop", dict(method="POST", path="/v1/sandboxes/..%2F..%2Fetc/stop"), 404, "not_found"),
            ("hostile id dotdot", dict(method="POST", path="/v1/sandboxes/../exec", body={"cmd": ["true"]}), 404, None),
            ("hostile id with quote", dict(method="GET", path="/v1/sandboxes/sb-%27%3B--"), 404, "not_found"),
            ("hostile id NUL", dict(method="GET", path="/v1/sandboxes/sb-%00abc"), 404, "not_found"),
            ("very long id", dict(method="GET", path="/v1/sandboxes/sb-" + "a" * 5000), 404, "not_found"),
            ("very long id delete", dict(method="DELETE", path="/v1/sandboxes/sb-" + "a" * 5000), 404, "not_found"),
            ("very long id exec", dict(method="POST", path="/v1/sandboxes/sb-" + "a" * 5000 + "/exec", body={"cmd": ["true"]}), 404, "not_found"),
            ("resume a running sandbox", dict(method="POST", path="/v1/sandboxes/%s/resume" % running), 409, "invalid_state"),
            ("start a running sandbox", dict(method="POST", path="/v1/sandboxes/%s/start" % running), 409, "invalid_state"),
            ("action with unknown field", dict(method="POST", path="/v1/sandboxes/%s/stop" % running, body={"force": True}), 400, "invalid_request"),
            ("action with bad wait", dict(method="POST", path="/v1/sandboxes/%s/resume?wait=maybe" % running), None, None),
            ("exec with cmd and shell", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "shell": "true"}), 400, "invalid_request"),
            ("exec with neither", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={}), 400, "invalid_request"),
            ("exec cmd not array", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": "true"}), 400, "invalid_request"),
            ("exec cmd empty", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": []}), 400, "invalid_request"),
            ("exec cmd non-string", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["echo", 1]}), 400, "invalid_request"),
            ("exec unknown field", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "as_user": "root"}), 400, "invalid_request"),
            ("exec timeout 0", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "timeout_s": 0}), 400, "invalid_request"),
            ("exec timeout too big", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "timeout_s": 3601}), 400, "invalid_request"),
            ("exec bad encoding", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "encoding": "latin1"}), 400, "invalid_request"),
            ("exec relative cwd", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "cwd": "tmp"}), 400, "invalid_request"),
            ("exec bad env name", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["true"], "env": {"A-B": "x"}}), 400, "invalid_request"),
            ("exec malformed JSON", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, raw=b"{cmd:", headers=JSON), 400, "invalid_json"),
            ("exec wrong content type", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, raw=b'{"cmd":["true"]}', headers={"Content-Type": "text/plain"}), 415, "unsupported_media_type"),
            ("exec no key", dict(method="POST", path="/v1/sandboxes/%s/exec" % running, body={"cmd": ["touch", "/tmp/unauth"]}, key=None), 401, "unauthorized"),
            ("delete no key", dict(method="DELETE", path="/v1/sandboxes/%s" % running, key=None), 401, "unauthorized"),
            ("stop bad key", dict(method="POST", path="/v1/sandboxes/%s/stop" % running, key="space_" + "1" * 40), 401, "unauthorized"),
            ("wrong method on sandbox", dict(method="PUT", path="/v1/sandboxes/%s" % running, body={}), 405, "method_not_allowed"),
            ("wrong method on exec", dict(method="GET", path="/v1/sandboxes/%s/exec" % running), 405, "method_not_allowed"),
            ("unknown action", dict(method="POST", path="/v1/sandboxes/%s/explode" % running), 404, "not_found"),
            ("bad state filter", dict(method="GET", path="/v1/sandboxes?state=bogus"), 400, "invalid_request"),
            ("bad wait timeout, unknown id", dict(method="DELETE", path="/v1/sandboxes/sb-0123456789abcdef?wait=true&timeout_s=0"), None, None),
            ("disk limit too small", dict(method="POST", path="/v1/sandboxes", body={"resources": {"disk_mb": 15}}), 400, "invalid_request"),
            ("disk limit above the maximum", dict(method="POST", path="/v1/sandboxes", body={"resources": {"disk_mb": 1048577}}), 400, "invalid_request"),
            ("disk negative", dict(method="POST", path="/v1/sandboxes", body={"resources": {"disk_mb": -1}}), 400, "invalid_request"),
        ]
        failures = []
        for desc, kw, status, code in cases:
            kw = dict(kw)
            method, path = kw.pop("method"), kw.pop("path")
            got_status, body = sp.request(method, path, kw.pop("body", None), **kw)
            if status is None:
                # Only require a 4xx for this one (the request is refused one way or another).
                if not (400 <= got_status < 500):
                    failures.append("%s: got %s %r" % (desc, got_status, body))
                continue
            if got_status != status:
                failures.append("%s: expected %s, got %s %r" % (desc, status, got_status, body))
                continue
            if not isinstance(body, dict) or "error" not in body:
                failures.append("%s: error body missing: %r" % (desc, body))
                continue
            if code and body["error"].get("code") != code:
                failures.append("%s: expected code %s, got %r" % (desc, code, body["error"]))
        # Nothing changed: same sandboxes in the same states; no new operations; the
        # running sandbox is still running and was not touched by the unauthenticated exec.
        self.assertEqual(sp.list_ids(), before, "sandbox set changed after bad requests")
        s, ops_after = sp.request("GET", "/v1/operations")
        # "action with bad wait" may legitimately have queued nothing; anything else is a change.
        self.assertEqual(len(ops_after["operations"]), ops_before,
                         "bad requests created operations: %r" % ops_after["operations"][:5])
        self.assertEqual(sp.state(running), "running")
        r = sp.exec(running, cmd=["sh", "-c", "test -e /tmp/unauth && echo yes || echo no"])
        self.assertEqual(r["stdout"], "no\n")
        self.assertEqual(failures, [], "\n".join(failures))

    def test_bad_query_parameters_change_nothing(self):
        """A bad ?wait= or ?timeout_s= must be refused before anything is queued."""
        sp = self.spaced
        running = self.new_sandbox(metadata={"t": "bad-query"})
        before = sp.list_ids()
        problems = []
        for path in ("/v1/sandboxes?wait=maybe", "/v1/sandboxes?wait=true&timeout_s=0",
                     "/v1/sandboxes?wait=true&timeout_s=601", "/v1/sandboxes?wait=true&timeout_s=abc"):
            status, body = sp.request("POST", path, {"metadata": {"t": "bad-query-create"}})
            if status != 400:
                problems.append("POST %s -> %s %r" % (path, status, body))
        path = "/v1/sandboxes/%s/stop?wait=maybe" % running
        status, body = sp.request("POST", path)
        if status != 400:
            problems.append("POST %s -> %s %r" % (path, status, body))
        time.sleep(1)
        after = sp.list_ids()
        # Clean up whatever the bad requests created, before asserting.
        for sid in set(after) - set(before):
            sp.known_ids.add(sid)
            self.addCleanup(self._destroy_quietly, sid)
        self.assertEqual(problems, [], "bad query parameters not answered 400")
        self.assertEqual(after, before, "requests refused with 400 still created/changed sandboxes")
        self.assertEqual(sp.state(running), "running")

    def test_server_survives_garbage(self):
        """Raw garbage on the socket must not take the daemon down."""
        import socket
        for payload in (b"\x00\x01\x02garbage\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /v1/sandboxes HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n{"):
            s = socket.create_connection(("127.0.0.1", self.spaced.port), timeout=5)
            try:
                s.sendall(payload)
                try:
                    s.recv(4096)
                except OSError:
                    pass
            finally:
                s.close()
        status, body = self.spaced.request("GET", "/v1/health", key=None)
        self.assertEqual(status, 200)
        self.assertTrue(self.spaced.alive())


if __name__ == "__main__":
    unittest.main()
