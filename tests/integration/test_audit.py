"""Request ids (X-Request-Id), the access log, the audit log (GET /v1/audit, `space audit`,
--audit-retention) and the listening port (a port in use fails the start)."""
import base64
import hashlib
import http.client
import json
import os
import re
import secrets
import subprocess
import time
import unittest
import urllib.parse

from spaced_harness import SPACED, FreshSpacedTestCase, Spaced, SpacedTestCase, free_port

MADE_ID = re.compile(r"^[0-9a-f]{32}$")


def logfmt(line):
    """Parses one `key=value key="quoted \\" value"` line; raises ValueError on anything else."""
    out, i, n = {}, 0, len(line)
    while i < n:
        m = re.compile(r'([a-z_]+)=').match(line, i)
        if not m:
            raise ValueError("not key=value at %d: %r" % (i, line))
        key, i = m.group(1), m.end()
        if i < n and line[i] == '"':
            i += 1
            val = []
            while i < n and line[i] != '"':
                if line[i] == "\\":
                    i += 1
                val.append(line[i])
                i += 1
            if i >= n:
                raise ValueError("unterminated value: %r" % line)
            i += 1
        else:
            j = line.find(" ", i)
            j = n if j < 0 else j
            val, i = list(line[i:j]), j
        if key in out:
            raise ValueError("key %s twice: %r" % (key, line))
        out[key] = "".join(val)
        if i < n:
            if line[i] != " ":
                raise ValueError("no space after a value at %d: %r" % (i, line))
            i += 1
    return out


class AuditBase(SpacedTestCase):
    e2b_port = None

    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()

    def err_log(self):
        with open(self.spaced.err_path, errors="replace") as f:
            return f.read()

    def access_lines(self, request_id, wait=5.0):
        """The access lines naming request_id. They are written when the request ends, which
        may be just after the client has its answer: wait for one for up to `wait` s."""
        deadline = time.monotonic() + wait
        while True:
            out = [logfmt(line) for line in self.err_log().splitlines()
                   if "event=http.access" in line and request_id in line]
            if out or time.monotonic() > deadline:
                return out
            time.sleep(0.05)

    def e2b(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def audit(self, query="", expect=200, key="admin"):
        status, data = self.spaced.request("GET", "/v1/audit" + query, key=key)
        self.assertEqual(status, expect, data)
        return data

    def audit_all(self, query=""):
        rows, cursor = [], None
        while True:
            q = query + ("&" if query else "") + "limit=1000" + ("&cursor=" + cursor if cursor else "")
            data = self.audit("?" + q)
            rows += data["audit"]
            cursor = data["next_cursor"]
            if not cursor:
                return rows

    def rows_of(self, request_id, wait=5.0):
        """The audit rows of request_id (written at the request's end: waits for one)."""
        deadline = time.monotonic() + wait
        while True:
            rows = [r for r in self.audit_all() if r["request_id"] == request_id]
            if rows or time.monotonic() > deadline:
                return rows
            time.sleep(0.05)

    def rid(self, tag):
        return "%s-%s" % (tag, secrets.token_hex(6))


class RequestIdTest(AuditBase):
    def test_made_when_absent(self):
        self.spaced.api("GET", "/v1/version", expect=200)
        first = self.spaced.last_headers.get("X-Request-Id")
        self.spaced.api("GET", "/v1/version", expect=200)
        second = self.spaced.last_headers.get("X-Request-Id")
        self.assertRegex(first or "", MADE_ID)
        self.assertRegex(second or "", MADE_ID)
        self.assertNotEqual(first, second)

    def test_client_id_echoed_on_success_and_errors(self):
        for path, key, status in (("/v1/version", "admin", 200), ("/v1/no-such-route", "admin", 404),
                                  ("/v1/sandboxes", None, 401), ("/v1/sandboxes?wait", "admin", 400)):
            rid = self.rid("Echo.id_ok")
            got, _ = self.spaced.request("GET", path, key=key, headers={"X-Request-Id": rid})
            self.assertEqual(got, status, path)
            self.assertEqual(self.spaced.last_headers.get("X-Request-Id"), rid, path)

    def test_malformed_replaced_never_echoed(self):
        bad = ["has space", 'quo"te', "a" * 65, "semi;colon", "tab\there", "x=y", "caf\u00e9".encode().decode("latin-1"),
               "key_id=key-forged"]
        for value in bad:
            got, _ = self.spaced.request("GET", "/v1/version", headers={"X-Request-Id": value})
            self.assertEqual(got, 200)
            made = self.spaced.last_headers.get("X-Request-Id")
            self.assertRegex(made or "", MADE_ID, repr(value))
            self.assertNotEqual(made, value)
            lines = self.access_lines(made)
            self.assertEqual(len(lines), 1, made)
            self.assertNotIn(value, self.err_log(), "a malformed id reached the log: %r" % value)
        # 64 characters of the allowed set are kept, whole.
        ok = "A-z.0_9" * 9 + "x"
        self.assertEqual(len(ok), 64)
        self.spaced.request("GET", "/v1/version", headers={"X-Request-Id": ok})
        self.assertEqual(self.spaced.last_headers.get("X-Request-Id"), ok)

    def test_event_stream_carries_the_id(self):
        sid = self.new_sandbox()
        _, s = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)
        token = s["attach_token"]
        _, c = self.spaced.api("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["echo", "hi"]}, key=token, expect=201)
        rid = self.rid("sse")
        es = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (sid, c["command_id"]), key=token,
                                headers={"X-Request-Id": rid})
        try:
            self.assertEqual(es.status, 200)
            self.assertEqual(es.headers.get("x-request-id"), rid)
            events = list(es)
        finally:
            es.close()
        self.assertEqual(events[-1].get("event"), "exit")
        # The access line is written when the stream ends, with what it sent.
        line = self.access_lines(rid, wait=10)[0]
        self.assertEqual(line["status"], "200")
        self.assertGreater(int(line["bytes"]), 0)

    def test_e2b_door(self):
        rid = self.rid("e2b")
        status, headers, _ = self.e2b("GET", "/sandboxes", headers={"X-API-KEY": "e2b_" + "0" * 40, "X-Request-Id": rid})
        self.assertEqual(status, 401)
        self.assertEqual(headers.get("X-Request-Id"), rid)
        status, headers, _ = self.e2b("GET", "/health", headers={"X-Request-Id": "bad id"})
        self.assertRegex(headers.get("X-Request-Id", ""), MADE_ID)
        line = self.access_lines(rid)[0]
        self.assertEqual((line["door"], line["method"], line["path"], line["status"]), ("e2b", "GET", "/sandboxes", "401"))

    def test_access_log_line(self):
        rid = self.rid("access")
        self.spaced.api("GET", "/v1/sandboxes?limit=5", expect=200, headers={"X-Request-Id": rid})
        lines = self.access_lines(rid)
        self.assertEqual(len(lines), 1)
        line = lines[0]
        self.assertEqual(line["level"], "info")
        self.assertEqual((line["door"], line["method"], line["path"], line["status"]), ("v1", "GET", "/v1/sandboxes", "200"))
        self.assertRegex(line["key_id"], r"^key-")
        self.assertEqual(line["source"], "127.0.0.1")
        self.assertGreater(int(line["bytes"]), 0)
        self.assertGreaterEqual(int(line["duration_us"]), 0)
        self.assertNotIn("limit=5", line["path"])

    def test_hostile_path_cannot_forge_a_line(self):
        rid = self.rid("forge")
        forged = '/v1/x" status=200 key_id=key-admin\nts=now level=error event=forged "'
        path = urllib.parse.quote(forged, safe="/")
        got, _ = self.spaced.request("GET", path, headers={"X-Request-Id": rid})
        self.assertEqual(got, 404)
        log_text = self.err_log()
        self.assertNotIn("event=forged", [l.split(" ")[2] if len(l.split(" ")) > 2 else "" for l in log_text.splitlines()])
        lines = self.access_lines(rid)
        self.assertEqual(len(lines), 1)
        self.assertEqual(lines[0]["status"], "404")
        self.assertEqual(lines[0]["key_id"], "-")
        self.assertTrue(lines[0]["path"].startswith("/v1/x"), lines[0])
        for raw in log_text.splitlines():
            logfmt(raw)  # every line of the log still parses as one event


class AuditLogTest(AuditBase):
    def test_create_and_delete_are_recorded(self):
        rid_c, rid_d = self.rid("create"), self.rid("delete")
        _, data = self.spaced.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", {}, expect=200,
                                  headers={"X-Request-Id": rid_c})
        sid = data["sandbox"]["id"]
        self.spaced.known_ids.add(sid)
        self.spaced.api("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % sid, expect=200,
                        headers={"X-Request-Id": rid_d})
        (c,) = self.rows_of(rid_c)
        (d,) = self.rows_of(rid_d)
        self.assertEqual((c["action"], c["method"], c["status"], c["error_code"]), ("sandbox.create", "POST", 200, None))
        self.assertEqual((d["action"], d["method"], d["target"], d["status"]), ("sandbox.delete", "DELETE", sid, 200))
        for r in (c, d):
            self.assertRegex(r["key_id"], r"^key-")
            self.assertEqual(r["source"], "127.0.0.1")
            self.assertEqual(r["project"], "default")  # the admin key's project and role
            self.assertEqual(r["role"], "admin")
            self.assertRegex(r["time"], r"^\d{4}-\d\d-\d\dT")
        # Reads are not audited.
        rid = self.rid("read")
        self.spaced.api("GET", "/v1/sandboxes", expect=200, headers={"X-Request-Id": rid})
        self.assertTrue(self.access_lines(rid))  # it has ended
        self.assertEqual(self.rows_of(rid, wait=0), [])

    def test_refusals_are_recorded(self):
        rid_401, rid_400, rid_e2b = self.rid("r401"), self.rid("r400"), self.rid("re2b")
        self.spaced.request("GET", "/v1/keys", key="space_" + "f" * 40, headers={"X-Request-Id": rid_401})
        got, _ = self.spaced.request("POST", "/v1/sandboxes", {"cpus": "lots"}, headers={"X-Request-Id": rid_400})
        self.assertEqual(got, 400)
        self.e2b("DELETE", "/sandboxes/sb-nope", headers={"X-API-KEY": "e2b_" + "1" * 40, "X-Request-Id": rid_e2b})
        (r401,) = self.rows_of(rid_401)
        self.assertEqual((r401["action"], r401["status"], r401["error_code"], r401["key_id"]),
                         ("key.list", 401, "unauthorized", None))
        (r400,) = self.rows_of(rid_400)
        self.assertEqual((r400["action"], r400["status"]), ("sandbox.create", 400))
        self.assertIsNotNone(r400["error_code"])
        (re2b,) = self.rows_of(rid_e2b)
        self.assertEqual((re2b["action"], re2b["target"], re2b["status"]), ("sandbox.delete", "sb-nope", 401))

    def test_data_plane_refusal(self):
        sid = self.new_sandbox()
        rid = self.rid("dp")
        got, body = self.spaced.request("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["true"]},
                                        key="sat_" + "0" * 40, headers={"X-Request-Id": rid})
        self.assertIn(got, (401, 403), body)
        (row,) = self.rows_of(rid)
        self.assertEqual((row["action"], row["target"], row["status"]), ("command.start", sid, got))

    def test_create_rows_name_what_they_made(self):
        # A create's path names nothing: its row's target is the new object's id.
        rid_sb, rid_key, rid_bad = self.rid("mk-sb"), self.rid("mk-key"), self.rid("mk-bad")
        _, data = self.spaced.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", {}, expect=200,
                                  headers={"X-Request-Id": rid_sb})
        sid = data["sandbox"]["id"]
        self.spaced.known_ids.add(sid)
        _, key = self.spaced.api("POST", "/v1/keys", {"name": "audit-target"}, expect=201, headers={"X-Request-Id": rid_key})
        got, _ = self.spaced.request("POST", "/v1/sandboxes", {"template": "no-such-template"},
                                     headers={"X-Request-Id": rid_bad})
        self.assertEqual(got, 404)
        (r_sb,) = self.rows_of(rid_sb)
        (r_key,) = self.rows_of(rid_key)
        (r_bad,) = self.rows_of(rid_bad)
        self.assertEqual((r_sb["action"], r_sb["target"]), ("sandbox.create", sid))
        self.assertEqual((r_key["action"], r_key["target"]), ("key.create", key["id"]))
        self.assertEqual((r_bad["action"], r_bad["target"], r_bad["status"]), ("sandbox.create", None, 404))
        self.assertEqual(self.audit("?action=sandbox.create&target=%s" % sid)["audit"], [r_sb])
        # The E2B door's create too.
        made = self.spaced.cli("--json", "key", "create", "--e2b", "audit-e2b")
        self.assertEqual(made.returncode, 0, made.stderr)
        rid_e2b = self.rid("mk-e2b")
        status, _, body = self.e2b("POST", "/sandboxes", json.dumps({"templateID": "base"}).encode(),
                                   {"X-API-KEY": json.loads(made.stdout)["secret"], "Content-Type": "application/json",
                                    "X-Request-Id": rid_e2b})
        self.assertEqual(status, 201, body)
        e2b_sid = json.loads(body)["sandboxID"]
        self.spaced.known_ids.add(e2b_sid)
        (r_e2b,) = self.rows_of(rid_e2b)
        self.assertEqual((r_e2b["action"], r_e2b["target"], r_e2b["status"]), ("sandbox.create", e2b_sid, 201))

    def test_data_plane_rows_carry_the_project(self):
        # An attach token and an envd token act in their sandbox's project: the row says which.
        sid = self.new_sandbox()
        _, sess = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)
        rid = self.rid("dp-proj")
        self.spaced.api("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["true"]}, key=sess["attach_token"], expect=201,
                        headers={"X-Request-Id": rid})
        (row,) = self.rows_of(rid)
        self.assertEqual((row["action"], row["target"], row["status"]), ("command.start", sid, 201))
        self.assertEqual((row["key_id"], row["project"], row["role"]), (sess["session_id"], "default", None))
        made = self.spaced.cli("--json", "key", "create", "--e2b", "audit-envd")
        self.assertEqual(made.returncode, 0, made.stderr)
        status, _, body = self.e2b("POST", "/sandboxes", json.dumps({"templateID": "base"}).encode(),
                                   {"X-API-KEY": json.loads(made.stdout)["secret"], "Content-Type": "application/json"})
        self.assertEqual(status, 201, body)
        sb = json.loads(body)
        self.spaced.known_ids.add(sb["sandboxID"])
        rid_envd = self.rid("envd-proj")
        status, _, body = self.e2b("POST", "/filesystem.Filesystem/MakeDir", json.dumps({"path": "/tmp/audit-dir"}).encode(),
                                   {"Content-Type": "application/json", "E2b-Sandbox-Id": sb["sandboxID"],
                                    "X-Access-Token": sb["envdAccessToken"], "X-Request-Id": rid_envd})
        self.assertEqual(status, 200, body)
        (row,) = self.rows_of(rid_envd)
        self.assertEqual((row["action"], row["target"], row["project"], row["status"]),
                         ("file.mkdir", sb["sandboxID"], "default", 200))

    def test_filters(self):
        rid = self.rid("filt")
        target = "sb-" + secrets.token_hex(8)
        self.spaced.request("DELETE", "/v1/sandboxes/%s" % target, headers={"X-Request-Id": rid})
        self.assertTrue(self.rows_of(rid))
        rows = self.audit("?action=sandbox.delete&target=%s" % target)["audit"]
        self.assertEqual([r["request_id"] for r in rows], [rid])
        self.assertEqual(rows[0]["status"], 404)
        row = rows[0]
        self.assertEqual(self.audit("?target=%s&key_id=%s" % (target, row["key_id"]))["audit"], rows)
        self.assertEqual(self.audit("?target=%s&key_id=key-00000000" % target)["audit"], [])
        self.assertEqual(self.audit("?target=%s&project=default" % target)["audit"], rows)
        # A project that does not exist is a 404, as on every list (docs/tenancy.md).
        self.audit("?target=%s&project=p1" % target, expect=404)
        self.assertEqual(self.audit("?target=%s&since=%s" % (target, urllib.parse.quote(row["time"])))["audit"], rows)
        self.assertEqual(self.audit("?target=%s&until=%s" % (target, urllib.parse.quote(row["time"])))["audit"], [])
        self.assertEqual(self.audit("?target=%s&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00%%2B02:00" % target)
                         ["audit"], rows)
        for bad in ("since=yesterday", "until=2026-02-30T00:00:00Z", "since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z",
                    "action=a%20b", "target=../x", "key_id=" + "k" * 80, "limit=0", "limit=100000", "limit=x",
                    "cursor=garbage", "wat=1", "project="):
            data = self.audit("?" + bad, expect=400)
            self.assertEqual(data["error"]["code"], "invalid_request", bad)

    def test_pagination(self):
        target = "sb-" + secrets.token_hex(8)
        made = []
        for i in range(7):
            rid = self.rid("page%d" % i)
            made.append(rid)
            self.spaced.request("DELETE", "/v1/sandboxes/%s" % target, headers={"X-Request-Id": rid})
            self.assertTrue(self.rows_of(rid))
        seen, cursor, pages = [], None, 0
        while True:
            data = self.audit("?target=%s&limit=3%s" % (target, "&cursor=" + cursor if cursor else ""))
            pages += 1
            self.assertLessEqual(len(data["audit"]), 3)
            seen += [r["request_id"] for r in data["audit"]]
            cursor = data["next_cursor"]
            if not cursor:
                break
        self.assertEqual(pages, 3)
        self.assertEqual(seen, made)
        # A cursor is the list's own: one made the same way for another list is refused.
        def cursor(lst, ms, rid):
            raw = ("%s:%d:%s" % (lst, ms, rid)).encode()
            return base64.urlsafe_b64encode(hashlib.sha256(raw).digest()[:8] + raw).decode().rstrip("=")
        self.audit("?target=%s&cursor=%s" % (target, cursor("audit", 0, "aud-0")))  # the format, understood
        self.audit("?cursor=" + cursor("sandboxes", 0, "aud-0"), expect=400)

    def test_no_secret_recorded(self):
        _, made = self.spaced.api("POST", "/v1/keys", {"name": "audit-secret"}, expect=201)
        secret = made["secret"]
        self.spaced.api("GET", "/v1/sandboxes", key=secret, expect=200)
        self.spaced.request("DELETE", "/v1/keys/key-nope", key=secret)
        wrong = secret[:-4] + "0000"
        self.spaced.request("POST", "/v1/keys", {"name": "x"}, key=wrong)
        self.e2b("POST", "/sandboxes", b"{}", {"X-API-KEY": "e2b_" + secret[len("space_"):], "Content-Type": "application/json"})
        rows = self.audit_all()
        self.assertTrue(any(r["key_id"] == made["id"] for r in rows))
        dump = json.dumps(rows) + self.err_log()
        for s in (secret, secret[len("space_"):], wrong[len("space_"):], self.spaced.key[len("space_"):]):
            self.assertNotIn(s, dump)
        cli = self.spaced.cli("--json", "audit", "--limit", "1000")
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertNotIn(secret[len("space_"):].encode(), cli.stdout)

    def test_hostile_target_is_recorded_escaped(self):
        # Any bytes in the path's id (not UTF-8, quotes, newlines): the row is still written,
        # and the whole log still renders as JSON (no row can be hidden by its target).
        rid = self.rid("hostile")
        got, _ = self.spaced.request("DELETE", "/v1/sandboxes/%FF%FE%22%0Ax", headers={"X-Request-Id": rid})
        self.assertEqual(got, 404)
        (row,) = self.rows_of(rid)
        self.assertEqual(row["target"], '\\xff\\xfe\\"\\x0ax')
        self.assertEqual((row["action"], row["status"]), ("sandbox.delete", 404))

    def test_rows_cannot_be_rewritten_through_the_api(self):
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            got, _ = self.spaced.request(method, "/v1/audit")
            self.assertEqual(got, 405, method)

    def test_cli(self):
        target = "sb-" + secrets.token_hex(8)
        rids = [self.rid("cli%d" % i) for i in range(3)]
        for rid in rids:
            self.spaced.request("DELETE", "/v1/sandboxes/%s" % target, headers={"X-Request-Id": rid})
            self.assertTrue(self.rows_of(rid))
        out = self.spaced.cli("--json", "audit", "--target", target, "--action", "sandbox.delete")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = json.loads(out.stdout)["audit"]
        self.assertEqual([r["request_id"] for r in rows], rids)
        out = self.spaced.cli("--json", "audit", "--target", target, "--limit", "2")
        self.assertEqual([r["request_id"] for r in json.loads(out.stdout)["audit"]], rids[:2])
        out = self.spaced.cli("audit", "--target", target, "--since", "2000-01-01T00:00:00Z")
        self.assertEqual(out.returncode, 0, out.stderr)
        text = out.stdout.decode()
        self.assertIn("ACTION", text.splitlines()[0])
        for rid in rids:
            self.assertIn(rid, text)
        out = self.spaced.cli("audit", "--since", "yesterday")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(b"since", out.stderr)
        # More rows than one page: the CLI follows cursors.
        total = len(self.audit_all())
        out = self.spaced.cli("--json", "audit", "--limit", "100000")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertGreaterEqual(len(json.loads(out.stdout)["audit"]), total)


class RetentionTest(FreshSpacedTestCase):
    spaced_kwargs = {"extra_args": ["--audit-retention", "2"]}

    def test_old_rows_swept(self):
        old = "old-" + secrets.token_hex(4)
        self.spaced.request("DELETE", "/v1/sandboxes/sb-gone", headers={"X-Request-Id": old})
        deadline = time.monotonic() + 5
        while old not in [r["request_id"] for r in self.spaced.api("GET", "/v1/audit?limit=1000", expect=200)[1]["audit"]]:
            self.assertLess(time.monotonic(), deadline, "no audit row for the request")
            time.sleep(0.05)
        time.sleep(3)
        self.spaced.restart()  # the sweep runs at the controller's first tick
        new = "new-" + secrets.token_hex(4)
        self.spaced.request("DELETE", "/v1/sandboxes/sb-gone", headers={"X-Request-Id": new})

        def swept():
            _, d = self.spaced.api("GET", "/v1/audit?limit=1000", expect=200)
            ids = [r["request_id"] for r in d["audit"]]
            return old not in ids and new in ids

        deadline = time.monotonic() + 15
        while not swept():
            self.assertLess(time.monotonic(), deadline, "old audit rows were not swept")
            time.sleep(0.2)
        with open(self.spaced.err_path) as f:
            self.assertIn("audit_rows=", f.read())

    def test_bad_setting_refused(self):
        for bad in ("0", "-1", "soon"):
            p = subprocess.run([SPACED, "--audit-retention", bad], capture_output=True, timeout=30)
            self.assertNotEqual(p.returncode, 0, bad)


class PortInUseTest(FreshSpacedTestCase):
    def test_second_spaced_on_the_same_port_fails(self):
        second = Spaced()
        self.addCleanup(second.cleanup)
        second.port, second.url = self.spaced.port, self.spaced.url
        p = subprocess.run(second.args(), capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertNotEqual(p.returncode, 0)
        err = p.stderr.decode()
        msg = [l for l in err.splitlines() if l.startswith("spaced: ")]
        self.assertEqual(len(msg), 1, err)
        self.assertIn("127.0.0.1:%d" % self.spaced.port, msg[0])
        self.assertIn("already in use", msg[0])
        # It stopped before making a pool: nothing of it is mounted.
        with open("/proc/self/mountinfo") as f:
            self.assertNotIn(second.tmp, f.read())
        statuses = [self.spaced.request("GET", "/v1/sandboxes")[0] for _ in range(40)]
        self.assertEqual(statuses, [200] * 40)

    def test_restart_right_after_kill_binds(self):
        # SO_REUSEADDR (not SO_REUSEPORT) still lets a restart bind beside the last run's
        # connections in TIME_WAIT.
        conns = []
        for _ in range(5):
            c = http.client.HTTPConnection("127.0.0.1", self.spaced.port, timeout=10)
            c.request("GET", "/v1/health")
            c.getresponse().read()
            conns.append(c)
        self.spaced.kill9()
        for c in conns:
            c.close()
        self.spaced.start()
        self.assertEqual(self.spaced.request("GET", "/v1/health")[0], 200)


if __name__ == "__main__":
    unittest.main()
