"""Policies (docs/governance.md) against the real spaced: CRUD and validation of
/v1/policies, the dry run, and enforcement on both front doors — a denied command, file
write and create answer 403 policy_denied (the E2B door: permission_denied), change
nothing, and are written to the audit log; one project's policy leaves another alone; a
restart keeps the policies."""
import http.client
import json
import secrets
import struct
import time
import urllib.parse

from spaced_harness import SpacedTestCase, free_port


def envelope(msg):
    data = json.dumps(msg).encode()
    return struct.pack(">BI", 0, len(data)) + data


def frames(payload):
    """The Connect envelopes of a streamed answer: [(flags, parsed JSON)]."""
    out, i = [], 0
    while i + 5 <= len(payload):
        flags, n = struct.unpack(">BI", payload[i:i + 5])
        out.append((flags, json.loads(payload[i + 5:i + 5 + n] or b"{}")))
        i += 5 + n
    return out


class PoliciesTest(SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()

    # ---------------------------------------------------------------- helpers

    def policy(self, doc, key="admin", project=None, expect=201):
        path = "/v1/policies" + ("?project=" + project if project else "")
        status, body = self.spaced.request("POST", path, doc, key=key)
        self.assertEqual(status, expect, body)
        if status == 201:
            self.addCleanup(self.spaced.request, "DELETE", "/v1/policies/" + body["id"])
        return body

    def e2b(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def e2b_sandbox(self):
        made = self.spaced.cli("--json", "key", "create", "--e2b", "pol-e2b-" + secrets.token_hex(3))
        self.assertEqual(made.returncode, 0, made.stderr)
        status, body = self.e2b("POST", "/sandboxes", json.dumps({"templateID": "base"}).encode(),
                                {"X-API-KEY": json.loads(made.stdout)["secret"], "Content-Type": "application/json"})
        self.assertEqual(status, 201, body)
        sb = json.loads(body)
        self.spaced.known_ids.add(sb["sandboxID"])
        self.addCleanup(self._destroy_quietly, sb["sandboxID"])
        return sb

    def envd_headers(self, sb, rid=None, stream=False):
        h = {"Content-Type": "application/connect+json" if stream else "application/json",
             "E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"]}
        if rid:
            h["X-Request-Id"] = rid
        return h

    def audit_row(self, request_id, wait=5.0):
        deadline = time.monotonic() + wait
        while True:
            _, data = self.spaced.api("GET", "/v1/audit?limit=1000", expect=200)
            rows = [r for r in data["audit"] if r["request_id"] == request_id]
            while not rows and data["next_cursor"]:
                _, data = self.spaced.api("GET", "/v1/audit?limit=1000&cursor=" + data["next_cursor"], expect=200)
                rows = [r for r in data["audit"] if r["request_id"] == request_id]
            if rows or time.monotonic() > deadline:
                self.assertEqual(len(rows), 1, rows)
                return rows[0]
            time.sleep(0.05)

    def attach_token(self, sid):
        _, sess = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)
        return sess["attach_token"]

    # ---------------------------------------------------------------- CRUD and validation

    def test_crud_and_versions(self):
        doc = {"name": "crud", "rules": [{"id": "r1", "effect": "deny", "match": {"executable": "nothing-runs-this"}}]}
        made = self.policy(doc)
        self.assertRegex(made["id"], r"^pol-[0-9a-f]{16}$")
        self.assertEqual((made["name"], made["project"], made["version"]), ("crud", "default", 1))
        self.assertEqual(made["document"], doc)
        _, got = self.spaced.api("GET", "/v1/policies/" + made["id"], expect=200)
        self.assertEqual(got, made)
        _, listed = self.spaced.api("GET", "/v1/policies", expect=200)
        self.assertIn(made["id"], [p["id"] for p in listed["policies"]])
        # Same name again: 409, nothing added.
        self.policy(doc, expect=409)
        doc["rules"][0]["message"] = "changed"
        _, put = self.spaced.api("PUT", "/v1/policies/%s?if_version=1" % made["id"], doc, expect=200)
        self.assertEqual(put["version"], 2)
        self.assertEqual(put["document"]["rules"][0]["message"], "changed")
        status, body = self.spaced.request("PUT", "/v1/policies/%s?if_version=1" % made["id"], doc)
        self.assertEqual((status, body["error"]["code"]), (409, "conflict"), body)
        self.spaced.api("DELETE", "/v1/policies/" + made["id"], expect=204)
        self.assertError(self.spaced.request("GET", "/v1/policies/" + made["id"]), 404, "not_found")
        self.assertError(self.spaced.request("DELETE", "/v1/policies/" + made["id"]), 404, "not_found")

    def test_validation_names_the_rule_and_changes_nothing(self):
        _, before = self.spaced.api("GET", "/v1/policies", expect=200)
        bad = {"name": "bad", "rules": [{"id": "ok", "effect": "allow"},
                                        {"id": "broken", "effect": "deny", "match": {"argv": {"regex": "("}}}]}
        status, body = self.spaced.request("POST", "/v1/policies", bad)
        self.assertEqual((status, body["error"]["code"]), (400, "invalid_request"), body)
        self.assertIn('rules[1] ("broken"): match.argv.regex', body["error"]["message"])
        for doc, word in (({"name": "x", "colour": "red"}, "colour"), ({"rules": []}, "name is required"),
                          ({"name": "x", "default": "perhaps"}, "default"),
                          ({"name": "x", "rules": [{"id": "a", "effect": "deny", "actions": ["command"],
                                                    "match": {"path": "/etc/*"}}]}, "match.path never applies")):
            status, body = self.spaced.request("POST", "/v1/policies", doc)
            self.assertEqual((status, body["error"]["code"]), (400, "invalid_request"), (doc, body))
            self.assertIn(word, body["error"]["message"])
        status, body = self.spaced.request("POST", "/v1/policies", {"name": "ap", "rules": [
            {"id": "push", "effect": "require_approval", "match": {"argv": {"prefix": ["git", "push"]}}}]})
        self.assertEqual((status, body["error"]["code"]), (422, "unsupported"), body)
        self.assertIn("require_approval holds commands only", body["error"]["message"])
        status, body = self.spaced.request("POST", "/v1/policies", {"name": "sb", "sandbox_id": "sb-0000000000000000"})
        self.assertEqual(status, 400, body)
        _, after = self.spaced.api("GET", "/v1/policies", expect=200)
        self.assertEqual(before, after)

    def test_roles(self):
        self.spaced.api("POST", "/v1/projects", {"id": "pol-roles"}, expect=201)
        keys = {}
        for role in ("owner", "developer", "viewer"):
            _, k = self.spaced.api("POST", "/v1/keys", {"name": "pol-" + role, "project": "pol-roles", "role": role},
                                   expect=201)
            keys[role] = k["secret"]
        doc = {"name": "by-owner"}
        for role in ("developer", "viewer"):
            self.assertError(self.spaced.request("POST", "/v1/policies", doc, key=keys[role]), 403, "forbidden")
        made = self.policy(doc, key=keys["owner"])
        self.assertEqual(made["project"], "pol-roles")
        for role in ("developer", "viewer"):  # every role reads its project's policies
            _, got = self.spaced.api("GET", "/v1/policies/" + made["id"], key=keys[role], expect=200)
            self.assertEqual(got["id"], made["id"])
            self.assertError(self.spaced.request("DELETE", "/v1/policies/" + made["id"], key=keys[role]), 403, "forbidden")
        # Another project's owner neither sees nor changes it.
        _, other = self.spaced.api("GET", "/v1/policies", key=self.spaced.key, expect=200)
        self.assertIn(made["id"], [p["id"] for p in other["policies"]])  # the admin sees every project's

    # ---------------------------------------------------------------- dry run

    def test_dry_run(self):
        made = self.policy({"name": "dry", "actions": ["command"], "rules": [
            {"id": "no-curl", "effect": "deny", "message": "no downloads", "match": {"executable": "curl"}}]})
        _, d = self.spaced.api("POST", "/v1/policies/test", {"request": {
            "action": "command", "argv": ["sh", "-c", "curl -s http://127.0.0.1/ | sh"]}}, expect=200)
        self.assertEqual((d["decision"], d["policy_id"], d["rule"]), ("deny", made["id"], "no-curl"))
        self.assertIn("no downloads", d["message"])
        _, d = self.spaced.api("POST", "/v1/policies/test", {"request": {"action": "command", "argv": ["ls"]}},
                               expect=200)
        self.assertEqual(d["decision"], "allow")
        self.assertNotIn("rule", d)
        # A draft replaces the stored policy of its name: the author sees the edit first.
        draft = {"name": "dry", "actions": ["command"], "rules": [
            {"id": "no-ls", "effect": "deny", "match": {"argv": {"exact": ["ls"]}}}]}
        _, d = self.spaced.api("POST", "/v1/policies/test", {"policy": draft, "request": {
            "action": "command", "argv": ["ls"]}}, expect=200)
        self.assertEqual((d["decision"], d["rule"]), ("deny", "no-ls"))
        _, d = self.spaced.api("POST", "/v1/policies/test", {"policy": draft, "request": {
            "action": "command", "argv": ["curl", "x"]}}, expect=200)
        self.assertEqual(d["decision"], "allow")
        self.assertError(self.spaced.request("POST", "/v1/policies/test", {"request": {"action": "fly"}}), 400,
                         "invalid_request")
        self.assertError(self.spaced.request("POST", "/v1/policies/test", {"request": {
            "action": "command", "argv": ["ls"], "sandbox_id": "sb-0000000000000000"}}), 404, "not_found")

    # ---------------------------------------------------------------- enforcement, v1

    def test_exec_and_commands_denied_on_v1(self):
        sid = self.new_sandbox()
        made = self.policy({"name": "v1-cmd", "rules": [
            {"id": "no-marker", "effect": "deny", "message": "not this one", "actions": ["command"],
             "match": {"argv": {"regex": "touch /tmp/policy-marker"}}}]})
        rid = "pol-exec-" + secrets.token_hex(4)
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "touch /tmp/policy-marker"},
                                           headers={"X-Request-Id": rid})
        self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)
        for word in ('"v1-cmd"', made["id"], '"no-marker"', "not this one"):
            self.assertIn(word, body["error"]["message"])
        row = self.audit_row(rid)
        self.assertEqual((row["action"], row["status"], row["error_code"]), ("sandbox.exec", 403, "policy_denied"))
        # Streamed commands are held to the same rule.
        token = self.attach_token(sid)
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/commands" % sid,
                                           {"cmd": ["sh", "-c", "touch /tmp/policy-marker"]}, key=token)
        self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)
        # Nothing ran; other commands still do.
        out = self.spaced.exec(sid, cmd=["ls", "/tmp"])
        self.assertEqual(out["exit_code"], 0, out)
        self.assertNotIn("policy-marker", out["stdout"])
        # A shell does not hide a denied executable.
        self.policy({"name": "v1-exe", "rules": [{"id": "no-wget", "effect": "deny", "match": {"executable": "wget"}}]})
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "true && wget -q x"})
        self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)

    def test_file_write_denied_on_v1(self):
        sid = self.new_sandbox()
        self.policy({"name": "v1-files", "rules": [
            {"id": "ro-etc", "effect": "deny", "actions": ["file.write", "file.delete"], "match": {"path": "/etc/*"}}]})
        token = self.attach_token(sid)
        for path in ("/etc/policy-test", "/tmp/../etc/policy-test"):
            status, body = self.spaced.request("PUT", "/v1/sandboxes/%s/files?path=%s" % (sid, urllib.parse.quote(path)),
                                               raw=b"x", key=token, headers={"Content-Type": "application/octet-stream"})
            self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/files/mkdir" % sid, {"path": "/etc/policy-dir"},
                                           key=token)
        self.assertEqual(status, 403, body)
        status, body = self.spaced.request("DELETE", "/v1/sandboxes/%s/files?path=/etc/passwd" % sid, key=token)
        self.assertEqual(status, 403, body)
        out = self.spaced.exec(sid, shell="ls /etc/policy-test /etc/policy-dir 2>&1; cat /etc/passwd >/dev/null; echo $?")
        self.assertIn("No such file", out["stdout"])
        self.assertTrue(out["stdout"].strip().endswith("0"), out)
        # Reads and writes elsewhere are untouched.
        status, body = self.spaced.request("PUT", "/v1/sandboxes/%s/files?path=/tmp/ok" % sid, raw=b"ok", key=token,
                                           headers={"Content-Type": "application/octet-stream"})
        self.assertIn(status, (200, 201), body)
        status, _ = self.spaced.request("GET", "/v1/sandboxes/%s/files?path=/etc/passwd" % sid, key=token)
        self.assertEqual(status, 200)

    def test_create_denied(self):
        made = self.policy({"name": "no-creates", "rules": [
            {"id": "no-busybox", "effect": "deny", "actions": ["sandbox.create"], "match": {"template": "*"}}]})
        before = set(self.spaced.list_ids())
        rid = "pol-create-" + secrets.token_hex(4)
        status, body = self.spaced.request("POST", "/v1/sandboxes?wait=true&timeout_s=60", {}, headers={"X-Request-Id": rid})
        self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)
        self.assertIn("no-busybox", body["error"]["message"])
        self.assertEqual(set(self.spaced.list_ids()), before)
        row = self.audit_row(rid)
        self.assertEqual((row["action"], row["status"], row["error_code"]), ("sandbox.create", 403, "policy_denied"))
        # The E2B door: its own error shape, the same decision.
        made_key = self.spaced.cli("--json", "key", "create", "--e2b", "pol-e2b-create")
        status, body = self.e2b("POST", "/sandboxes", json.dumps({"templateID": "base"}).encode(),
                                {"X-API-KEY": json.loads(made_key.stdout)["secret"], "Content-Type": "application/json"})
        self.assertEqual(status, 403, body)
        self.assertIn("no-busybox", json.loads(body)["message"])
        self.assertEqual(set(self.spaced.list_ids()), before)
        self.spaced.api("DELETE", "/v1/policies/" + made["id"], expect=204)
        self.new_sandbox()  # lifted at once: the cache followed the change

    def test_fork_and_export_denied(self):
        sid = self.new_sandbox()
        self.policy({"name": "lifecycle", "rules": [
            {"id": "few-forks", "effect": "deny", "actions": ["sandbox.fork"], "match": {"count_over": 1}},
            {"id": "no-export", "effect": "deny", "actions": ["snapshot.export"]}]})
        before = set(self.spaced.list_ids())
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/fork" % sid, {"count": 2})
        self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)
        self.assertIn("few-forks", body["error"]["message"])
        self.assertEqual(set(self.spaced.list_ids()), before)
        _, snap = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, {}, expect=200)
        snap_id = snap["snapshot"]["id"] if "snapshot" in snap else snap["operation"]["result"]["snapshot_id"]
        status, body = self.spaced.request("GET", "/v1/snapshots/%s/export" % snap_id)
        self.assertEqual((status, body["error"]["code"]), (403, "policy_denied"), body)

    # ---------------------------------------------------------------- enforcement, E2B

    def test_e2b_process_and_files_denied(self):
        sb = self.e2b_sandbox()
        self.policy({"name": "e2b", "rules": [
            {"id": "no-marker", "effect": "deny", "actions": ["command"],
             "match": {"argv": {"regex": "touch /tmp/e2b-marker"}}},
            {"id": "ro-etc", "effect": "deny", "actions": ["file.write"], "match": {"path": "/etc/*"}}]})
        # The SDK's commands.run: /bin/bash -l -c "<script>".
        rid = "pol-e2b-start-" + secrets.token_hex(4)
        start = {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "touch /tmp/e2b-marker"]}}
        status, payload = self.e2b("POST", "/process.Process/Start", envelope(start), self.envd_headers(sb, rid, True))
        self.assertEqual(status, 200, payload)
        (flags, end), = frames(payload)
        self.assertTrue(flags & 0x02, payload)
        self.assertEqual(end["error"]["code"], "permission_denied", end)
        self.assertIn("no-marker", end["error"]["message"])
        row = self.audit_row(rid)
        self.assertEqual((row["action"], row["error_code"]), ("command.start", "policy_denied"))
        status, body = self.e2b("POST", "/filesystem.Filesystem/MakeDir", json.dumps({"path": "/etc/e2b-dir"}).encode(),
                                self.envd_headers(sb))
        self.assertEqual(status, 403, body)
        self.assertEqual(json.loads(body)["code"], "permission_denied")
        # Nothing happened inside; an allowed call still works.
        status, body = self.e2b("POST", "/filesystem.Filesystem/Stat", json.dumps({"path": "/tmp/e2b-marker"}).encode(),
                                self.envd_headers(sb))
        self.assertEqual(status, 404, body)
        status, body = self.e2b("POST", "/filesystem.Filesystem/Stat", json.dumps({"path": "/etc/e2b-dir"}).encode(),
                                self.envd_headers(sb))
        self.assertEqual(status, 404, body)
        status, body = self.e2b("POST", "/filesystem.Filesystem/MakeDir", json.dumps({"path": "/tmp/e2b-dir"}).encode(),
                                self.envd_headers(sb))
        self.assertEqual(status, 200, body)

    # ---------------------------------------------------------------- CLI

    def cli(self, *args, input=None):
        r = self.spaced.cli(*args, input=input)
        r.stdout, r.stderr = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        return r

    def test_cli(self):
        doc = {"name": "cli-pol", "rules": [{"id": "no-nc", "effect": "deny", "match": {"executable": "nc"}}]}
        made = self.cli("--json", "policy", "apply", "-", input=json.dumps(doc))
        self.assertEqual(made.returncode, 0, made.stderr)
        pid = json.loads(made.stdout)["id"]
        self.addCleanup(self.spaced.request, "DELETE", "/v1/policies/" + pid)
        listed = self.cli("policy", "ls")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("cli-pol", listed.stdout)
        doc["rules"][0]["message"] = "no netcat"
        again = self.cli("policy", "apply", "-", input=json.dumps(doc))
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("replaced (version 2)", again.stdout)
        denied = self.cli("policy", "test", "command", "--", "sh", "-c", "nc -l 1")
        self.assertEqual(denied.returncode, 3, denied.stdout + denied.stderr)
        self.assertIn("no netcat", denied.stdout)
        allowed = self.cli("policy", "test", "command", "--", "ls")
        self.assertEqual(allowed.returncode, 0, allowed.stdout + allowed.stderr)
        got = self.cli("policy", "get", "cli-pol")
        self.assertEqual(json.loads(got.stdout)["version"], 2)
        bad = self.cli("policy", "apply", "-", input=json.dumps({"name": "x", "rules": [{"id": "a"}]}))
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("effect is required", bad.stderr)
        gone = self.cli("policy", "rm", "cli-pol")
        self.assertEqual(gone.returncode, 0, gone.stderr)
        self.assertError(self.spaced.request("GET", "/v1/policies/" + pid), 404, "not_found")

    # ---------------------------------------------------------------- isolation, narrowing, restart

    def test_project_isolation_and_sandbox_narrowing(self):
        self.spaced.api("POST", "/v1/projects", {"id": "pol-iso"}, expect=201)
        _, k = self.spaced.api("POST", "/v1/keys", {"name": "pol-iso", "project": "pol-iso", "role": "owner"}, expect=201)
        other = k["secret"]
        self.policy({"name": "iso", "rules": [{"id": "no-id", "effect": "deny", "match": {"argv": {"exact": ["id", "-u"]}}}]})
        mine = self.new_sandbox()
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/exec" % mine, {"cmd": ["id", "-u"]}), 403,
                         "policy_denied")
        _, made = self.spaced.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", {}, key=other, expect=200)
        theirs = made["sandbox"]["id"]
        self.spaced.known_ids.add(theirs)
        self.addCleanup(self._destroy_quietly, theirs)
        _, out = self.spaced.api("POST", "/v1/sandboxes/%s/exec" % theirs, {"cmd": ["id", "-u"]}, key=other, expect=200)
        self.assertEqual(out["exit_code"], 0)
        # A policy narrowed to one sandbox: it adds a denial there only, and cannot lift the
        # project's.
        second = self.new_sandbox()
        self.policy({"name": "narrow", "sandbox_id": second, "default": "allow", "rules": [
            {"id": "no-uname", "effect": "deny", "match": {"executable": "uname"}},
            {"id": "lift", "effect": "allow", "match": {"executable": "id"}}]})
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/exec" % second, {"cmd": ["uname"]}), 403,
                         "policy_denied")
        self.spaced.exec(mine, cmd=["uname"])
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/exec" % second, {"cmd": ["id", "-u"]}), 403,
                         "policy_denied")
        # Another project's owner cannot see or name this project's policies.
        _, listed = self.spaced.api("GET", "/v1/policies", key=other, expect=200)
        self.assertEqual(listed["policies"], [])
        self.assertError(self.spaced.request("GET", "/v1/policies?project=default", key=other), 404, "not_found")

    def test_restart_keeps_policies(self):
        made = self.policy({"name": "durable", "rules": [
            {"id": "no-sleep", "effect": "deny", "match": {"executable": "sleep"}}]})
        self.spaced.restart(hard=True)
        _, got = self.spaced.api("GET", "/v1/policies/" + made["id"], expect=200)
        self.assertEqual(got["document"], made["document"])
        sid = self.new_sandbox()
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["sleep", "0"]}), 403,
                         "policy_denied")


if __name__ == "__main__":
    import unittest
    unittest.main()
