"""Approvals (docs/governance.md) against the real spaced: a require_approval rule holds
exec and streamed commands (202, a pending_approval command, an approval_requested event),
a person with approval.write — never the key that asked — approves (the command then runs
exactly as asked) or denies it (it ends lost, approval_denied), an undecided one expires
(--approval-timeout), a policy that denies the command by the time it is approved wins, and
a pending approval survives a kill -9 of spaced."""
import base64
import http.client
import json
import os
import secrets
import struct
import subprocess
import threading
import time

import hashlib
import hmac
import http.server
import shutil
import tempfile

from spaced_harness import SPACE_CLI, SPACED, SpacedTestCase, free_port, wait_for

TIMEOUT_S = 10  # --approval-timeout of this spaced (a restart on a busy machine fits in it)


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


def read_marker(glob):
    """A script that prints a marker file without naming it (its argv is not held) and
    without an exec whose argv would name it (the exec watch sees a `cat` of the expanded
    name): shell builtins only."""
    return 'for f in %s; do while read -r l; do echo "$l"; done < "$f"; done' % glob


class ApprovalHelpers:
    # ---------------------------------------------------------------- helpers

    def policy(self, doc):
        _, body = self.spaced.api("POST", "/v1/policies", doc, expect=201)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/policies/" + body["id"])
        return body

    def hold_marker_policy(self, name="hold"):
        """Any command that mentions approval-marker waits for a person."""
        return self.policy({"name": name + "-" + secrets.token_hex(3), "rules": [
            {"id": "marker", "effect": "require_approval", "actions": ["command"],
             "message": "a person looks at these", "match": {"argv": {"glob": "*approval-marker*"}}}]})

    def key(self, role):
        _, k = self.spaced.api("POST", "/v1/keys", {"name": "apr-%s-%s" % (role, secrets.token_hex(3)), "role": role},
                               expect=201)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/keys/" + k["id"])
        return k["secret"]

    def token(self, sid):
        _, sess = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)
        return sess["attach_token"]

    def command(self, sid, cid, token, wait=False):
        _, c = self.spaced.api("GET", "/v1/sandboxes/%s/commands/%s%s" % (sid, cid, "?wait=true&timeout_s=30" if wait else ""),
                               key=token, expect=200)
        return c

    def held_exec(self, sid, script, key="admin"):
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": script}, key=key)
        self.assertEqual(status, 202, body)
        self.assertEqual(body["state"], "pending_approval", body)
        self.assertRegex(body["approval"]["approval_id"], r"^apr-[0-9a-f]{16}$")
        self.assertEqual(body["approval_id"], body["approval"]["approval_id"])
        self.assertEqual(body["approval"]["rule_id"], "marker")
        self.assertIn("needs approval", body["approval"]["reason"])
        self.assertIn("a person looks at these", body["approval"]["reason"])
        self.assertIsNone(body["exit_code"])
        return body

    def ls_tmp(self, sid):
        out = self.spaced.exec(sid, cmd=["ls", "/tmp"])
        self.assertEqual(out["exit_code"], 0, out)
        return out["stdout"]

    def audit_rows(self, action, target):
        _, audit = self.spaced.api("GET", "/v1/audit?action=%s&target=%s&limit=1000" % (action, target), expect=200)
        return audit["audit"]


class ApprovalsTest(ApprovalHelpers, SpacedTestCase):
    @classmethod
    def setUpClass(cls):
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--approval-timeout", str(TIMEOUT_S),
                                            "--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()

    # ---------------------------------------------------------------- held, approved, denied

    def test_held_exec_runs_once_approved(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        held = self.held_exec(sid, "echo ran > /tmp/approval-marker-1; echo hello-approved")
        aid, cid = held["approval_id"], held["command_id"]
        # Nothing ran while it waits; it is listed as pending in the project.
        self.assertNotIn("approval-marker-1", self.ls_tmp(sid))
        _, got = self.spaced.api("GET", "/v1/approvals/" + aid, expect=200)
        self.assertEqual((got["state"], got["command_id"], got["sandbox_id"]), ("pending", cid, sid))
        self.assertEqual(got["command"]["argv"][:2], ["/bin/sh", "-c"])
        _, listed = self.spaced.api("GET", "/v1/approvals?state=pending", expect=200)
        self.assertIn(aid, [a["id"] for a in listed["approvals"]])
        token = self.token(sid)
        self.assertEqual(self.command(sid, cid, token)["state"], "pending_approval")
        # The stream says what it waits for, then carries the output once approved.
        stream = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (sid, cid), key=token, timeout=60)
        self.addCleanup(stream.close)
        self.assertEqual(stream.status, 200)
        first = stream.next()
        self.assertEqual(first["event"], "approval_requested", first)
        self.assertEqual(json.loads(first["data"])["approval_id"], aid)
        _, decided = self.spaced.api("POST", "/v1/approvals/%s/approve" % aid, {"comment": "fine"}, key=owner,
                                     expect=200)
        self.assertEqual((decided["state"], decided["comment"]), ("approved", "fine"))
        self.assertIsNotNone(decided["decided_by"])
        seen, exit_ev = b"", None
        for ev in stream:
            if ev.get("event") == "stdout":
                import base64
                seen += base64.b64decode(json.loads(ev["data"])["data"])
            if ev.get("event") == "exit":
                exit_ev = json.loads(ev["data"])
                break
        self.assertIn(b"hello-approved", seen)
        self.assertEqual(exit_ev["exit_code"], 0, exit_ev)
        done = self.command(sid, cid, token, wait=True)
        self.assertEqual((done["state"], done["exit_code"]), ("exited", 0), done)
        self.assertIn("approval-marker-1", self.ls_tmp(sid))
        # Decided once.
        self.assertError(self.spaced.request("POST", "/v1/approvals/%s/deny" % aid, {}, key=owner), 409, "conflict")
        # The hold and the settlement are audit rows of their own (no request of theirs records them).
        asked = self.audit_rows("approval.requested", aid)
        self.assertEqual(len(asked), 1, asked)
        self.assertRegex(asked[0]["key_id"] or "", r"^key-", asked)  # the key that asked
        self.assertEqual(asked[0]["detail"], {"sandbox": sid, "command": cid, "state": "pending", "outcome": "held"})
        settled = self.audit_rows("approval.settled", aid)
        self.assertEqual([(r["detail"]["state"], r["detail"]["outcome"]) for r in settled], [("approved", "started")])

    def test_streamed_command_denied_ends_with_reason(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        token = self.token(sid)
        status, held = self.spaced.request("POST", "/v1/sandboxes/%s/commands" % sid,
                                           {"cmd": ["touch", "/tmp/approval-marker-2"], "tag": "t"}, key=token)
        self.assertEqual(status, 202, held)
        self.assertEqual(held["state"], "pending_approval")
        aid, cid = held["approval"]["approval_id"], held["command_id"]
        _, listed = self.spaced.api("GET", "/v1/sandboxes/%s/commands" % sid, key=token, expect=200)
        self.assertIn(cid, [c["command_id"] for c in listed["commands"]])
        _, decided = self.spaced.api("POST", "/v1/approvals/%s/deny" % aid, {"comment": "not today"}, key=owner,
                                     expect=200)
        self.assertEqual(decided["state"], "denied")
        done = self.command(sid, cid, token, wait=True)
        self.assertEqual((done["state"], done["reason"], done["exit_code"]), ("lost", "approval_denied", None), done)
        self.assertIn("denied", done["message"])
        stream = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (sid, cid), key=token, timeout=30)
        self.addCleanup(stream.close)
        evs = list(stream)
        self.assertEqual(evs[-1]["event"], "exit", evs)
        end = json.loads(evs[-1]["data"])
        self.assertEqual((end["exit_code"], end["reason"]), (None, "approval_denied"), end)
        self.assertNotIn("approval-marker-2", self.ls_tmp(sid))

    def test_requesting_key_and_roles(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        developer, viewer, owner = self.key("developer"), self.key("viewer"), self.key("owner")
        held = self.held_exec(sid, "touch /tmp/approval-marker-3", key=owner)
        aid = held["approval_id"]
        # The key that asked may not decide, even holding approval.write; nor may a developer.
        status, body = self.spaced.request("POST", "/v1/approvals/%s/approve" % aid, {}, key=owner)
        self.assertEqual((status, body["error"]["code"]), (403, "forbidden"), body)
        self.assertIn("another key", body["error"]["message"])
        self.assertError(self.spaced.request("POST", "/v1/approvals/%s/approve" % aid, {}, key=developer), 403,
                         "forbidden")
        # Every role reads them.
        _, got = self.spaced.api("GET", "/v1/approvals/" + aid, key=viewer, expect=200)
        self.assertEqual(got["state"], "pending")
        # Bad input changes nothing.
        self.assertError(self.spaced.request("POST", "/v1/approvals/%s/approve" % aid, {"comment": 5}), 400,
                         "invalid_request")
        self.assertError(self.spaced.request("POST", "/v1/approvals/%s/approve" % aid, {"why": "x"}), 400,
                         "invalid_request")
        self.assertError(self.spaced.request("GET", "/v1/approvals?state=maybe"), 400, "invalid_request")
        self.assertError(self.spaced.request("POST", "/v1/approvals/apr-0000000000000000/approve", {}), 404, "not_found")
        self.assertEqual(self.spaced.api("GET", "/v1/approvals/" + aid, expect=200)[1]["state"], "pending")
        # Another key (the admin's) approves; the step is audited.
        rid = "apr-audit-" + secrets.token_hex(4)
        self.spaced.api("POST", "/v1/approvals/%s/approve" % aid, None, headers={"X-Request-Id": rid}, expect=200)
        # The row is written when the request ends, just after its answer: wait for it.
        def rows():
            _, audit = self.spaced.api("GET", "/v1/audit?action=approval.approve&limit=1000", expect=200)
            return [r for r in audit["audit"] if r["request_id"] == rid]
        wait_for(lambda: rows(), timeout=10, what="the approve's audit row")
        self.assertEqual([(r["target"], r["status"]) for r in rows()], [(aid, 200)])
        token = self.token(sid)
        self.assertEqual(self.command(sid, held["command_id"], token, wait=True)["exit_code"], 0)

    # ---------------------------------------------------------------- expiry, policy change, restart

    def test_expiry_denies(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        held = self.held_exec(sid, "touch /tmp/approval-marker-4")
        token = self.token(sid)
        deadline = time.monotonic() + TIMEOUT_S + 10
        while time.monotonic() < deadline:
            c = self.command(sid, held["command_id"], token)
            if c["state"] != "pending_approval":
                break
            time.sleep(0.2)
        self.assertEqual((c["state"], c["reason"]), ("lost", "approval_expired"), c)
        _, got = self.spaced.api("GET", "/v1/approvals/" + held["approval_id"], expect=200)
        self.assertEqual((got["state"], got["decided_by"]), ("expired", None))
        self.assertError(self.spaced.request("POST", "/v1/approvals/%s/approve" % held["approval_id"], {},
                                             key=self.key("owner")), 409, "conflict")
        self.assertNotIn("approval-marker-4", self.ls_tmp(sid))
        # Written right after the command ends: wait for it.
        rows = wait_for(lambda: self.audit_rows("approval.expired", held["approval_id"]), timeout=10,
                        what="the expiry's audit row")
        self.assertEqual(len(rows), 1, rows)
        detail = rows[0]["detail"]
        self.assertEqual((detail["state"], detail["outcome"], detail["command"]),
                         ("expired", "approval_expired", held["command_id"]))
        self.assertIn(rows[0]["key_id"], (None, ""))

    def test_policy_change_while_pending(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        held = self.held_exec(sid, "touch /tmp/approval-marker-5")
        # A denial added while it waits wins over the approval.
        self.policy({"name": "later-deny", "rules": [
            {"id": "no-marker", "effect": "deny", "match": {"argv": {"glob": "*approval-marker-5*"}}}]})
        self.spaced.api("POST", "/v1/approvals/%s/approve" % held["approval_id"], {}, key=self.key("owner"), expect=200)
        c = self.command(sid, held["command_id"], self.token(sid), wait=True)
        self.assertEqual((c["state"], c["reason"]), ("lost", "policy_denied"), c)
        self.assertNotIn("approval-marker-5", self.ls_tmp(sid))

    def test_pending_survives_kill9(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        held = self.held_exec(sid, "echo after-restart > /tmp/approval-marker-6")
        self.spaced.restart(hard=True)
        _, got = self.spaced.api("GET", "/v1/approvals/" + held["approval_id"], expect=200)
        self.assertEqual(got["state"], "pending")
        token = self.token(sid)
        self.assertEqual(self.command(sid, held["command_id"], token)["state"], "pending_approval")
        self.spaced.api("POST", "/v1/approvals/%s/approve" % held["approval_id"], {}, key=owner, expect=200)
        c = self.command(sid, held["command_id"], token, wait=True)
        self.assertEqual((c["state"], c["exit_code"]), ("exited", 0), c)
        out = self.spaced.exec(sid, shell=read_marker("/tmp/approval-mark?r-6"))
        self.assertEqual(out["stdout"], "after-restart\n")

    def cli(self, *args, key="admin"):
        done = self.spaced.cli(*args, key=key)
        done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
        return done

    def test_kill9_between_decision_and_start(self):
        """spaced killed right after writing an approval, before starting the command: the
        next start runs it (once), so an acknowledged decision is never lost."""
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        sp = self.spaced
        sp.stop()
        sp.env = {"SPACED_FAULT_KILL": "approval.after_decide:approved"}
        sp.start()
        try:  # held and decided at once: well inside --approval-timeout
            held = self.held_exec(sid, "echo once >> /tmp/approval-marker-10")
            try:
                sp.request("POST", "/v1/approvals/%s/approve" % held["approval_id"], {}, key=owner, timeout=30)
            except Exception:  # noqa: BLE001 - the connection dies with spaced
                pass
            deadline = time.monotonic() + 30
            while sp.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(sp.proc.returncode, -9, "spaced ended otherwise than at the fault point")
        finally:
            sp.kill9()
            sp.env = None
            sp.start()
        _, got = sp.api("GET", "/v1/approvals/" + held["approval_id"], expect=200)
        self.assertEqual(got["state"], "approved")
        c = self.command(sid, held["command_id"], self.token(sid), wait=True)
        self.assertEqual((c["state"], c["exit_code"]), ("exited", 0), c)
        self.assertEqual(sp.exec(sid, shell=read_marker("/tmp/approval-mark?r-10"))["stdout"], "once\n")

    def test_cli(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        a = self.held_exec(sid, "touch /tmp/approval-marker-7")["approval_id"]
        b = self.held_exec(sid, "touch /tmp/approval-marker-8")["approval_id"]
        ls = self.cli("approvals", "ls")
        self.assertEqual(ls.returncode, 0, ls.stderr)
        self.assertIn(a, ls.stdout)
        self.assertIn("marker", ls.stdout)
        refused = self.cli("approvals", "approve", a)  # the admin key asked
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("another key", refused.stderr)
        ok = self.cli("approvals", "approve", a, "-m", "looks fine", key=owner)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("approved", ok.stdout)
        no = self.cli("approvals", "deny", b, key=owner)
        self.assertEqual(no.returncode, 0, no.stderr)
        self.assertIn("denied", no.stdout)
        js = self.cli("--json", "approvals", "ls", "--all")
        self.assertEqual(js.returncode, 0, js.stderr)
        states = {x["id"]: x["state"] for x in json.loads(js.stdout)["approvals"]}
        self.assertEqual((states[a], states[b]), ("approved", "denied"))
        self.assertEqual(self.cli("approvals", "ls", "--bogus").returncode, 2)
        # space exec waits for the decision, saying so, then behaves like the command.
        env = dict(os.environ, SPACE_URL=self.spaced.url, SPACE_API_KEY=self.spaced.key,
                   SPACE_STATE_DIR=os.path.join(self.spaced.tmp, "nonexistent"))
        proc = subprocess.Popen([SPACE_CLI, "exec", sid, "--", "sh", "-c", "echo cli-ran approval-marker-9"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline, c = time.monotonic() + 20, []
        while not c and time.monotonic() < deadline:
            c = [x for x in self.spaced.api("GET", "/v1/approvals?state=pending", expect=200)[1]["approvals"]
                 if "approval-marker-9" in " ".join(x["command"]["argv"])]
            time.sleep(0.1)
        self.assertEqual(len(c), 1)
        self.assertEqual(self.cli("approvals", "approve", c[0]["id"], key=owner).returncode, 0)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(out, b"cli-ran approval-marker-9\n")
        self.assertIn(b"waiting for approval " + c[0]["id"].encode(), err)

    # ---------------------------------------------------------------- E2B

    def e2b_start(self, sb, script, result):
        """An envd process start, read to its end (in a thread: it blocks while held)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=60)
        try:
            conn.request("POST", "/process.Process/Start",
                         body=envelope({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", script]}}),
                         headers={"Content-Type": "application/connect+json", "E2b-Sandbox-Id": sb["sandboxID"],
                                  "X-Access-Token": sb["envdAccessToken"], "Keepalive-Ping-Interval": "1"})
            resp = conn.getresponse()
            result["status"], result["payload"] = resp.status, resp.read()
        except Exception as e:  # noqa: BLE001 - reported by the test
            result["error"] = e
        finally:
            conn.close()

    def test_e2b_process_waits_for_approval(self):
        made = self.spaced.cli("--json", "key", "create", "--e2b", "apr-e2b-" + secrets.token_hex(3))
        self.assertEqual(made.returncode, 0, made.stderr)
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=60)
        conn.request("POST", "/sandboxes", body=json.dumps({"templateID": "base"}).encode(),
                     headers={"X-API-KEY": json.loads(made.stdout)["secret"], "Content-Type": "application/json"})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        self.assertEqual(resp.status, 201, body)
        sb = json.loads(body)
        self.spaced.known_ids.add(sb["sandboxID"])
        self.addCleanup(self._destroy_quietly, sb["sandboxID"])
        self.hold_marker_policy()
        owner = self.key("owner")
        for verdict in ("approve", "deny"):
            with self.subTest(verdict=verdict):
                result = {}
                t = threading.Thread(target=self.e2b_start, args=(sb, "echo e2b-%s # approval-marker-e2b" % verdict, result))
                t.start()
                deadline, pending = time.monotonic() + 20, []
                while not pending and time.monotonic() < deadline:
                    _, got = self.spaced.api("GET", "/v1/approvals?state=pending", expect=200)
                    pending = [a for a in got["approvals"] if a["sandbox_id"] == sb["sandboxID"]]
                    time.sleep(0.1)
                self.assertEqual(len(pending), 1, pending)
                time.sleep(1.5)
                self.assertTrue(t.is_alive(), result)  # the process call stays open while it waits
                self.spaced.api("POST", "/v1/approvals/%s/%s" % (pending[0]["id"], verdict), {}, key=owner, expect=200)
                t.join(60)
                self.assertFalse(t.is_alive())
                self.assertEqual(result.get("status"), 200, result)
                got = frames(result["payload"])
                events = [m["event"] for f, m in got if not f & 0x02 and "event" in m]
                self.assertIn({"keepalive": {}}, events, got)  # sent while it waited
                events = [e for e in events if "keepalive" not in e]
                if verdict == "approve":
                    self.assertIn("start", events[0], got)
                    out = b"".join(base64.b64decode(e["data"]["stdout"]) for e in events if "data" in e and "stdout" in e["data"])
                    self.assertEqual(out, b"e2b-approve\n", got)
                    self.assertTrue(any("end" in e for e in events), got)
                else:
                    self.assertFalse(any("start" in e for e in events), got)
                    flags, end = got[-1]
                    self.assertTrue(flags & 0x02, got)
                    self.assertEqual(end["error"]["code"], "permission_denied", end)
                    self.assertIn("denied by an approver", end["error"]["message"])

    def test_only_commands_are_held(self):
        status, body = self.spaced.request("POST", "/v1/policies", {"name": "ap-files", "rules": [
            {"id": "w", "effect": "require_approval", "actions": ["file.write"]}]})
        self.assertEqual((status, body["error"]["code"]), (422, "unsupported"), body)
        self.assertIn("require_approval holds commands only", body["error"]["message"])


class WebhookReceiver:
    """An operator's webhook endpoint on 127.0.0.1: records every POST; answers 500 to the
    next `fail` deliveries, 204 after."""

    def __init__(self):
        self.deliveries, self.fail, self.lock = [], 0, threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.deliveries.append((self.path, dict(self.headers.items()), body))
                    failing = receiver.fail > 0
                    receiver.fail -= 1 if failing else 0
                self.send_response(500 if failing else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def of(self, delivery):
        with self.lock:
            return [(h, b) for _, h, b in self.deliveries if h.get("X-Space-Delivery") == delivery]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class ApprovalWebhookTest(ApprovalHelpers, SpacedTestCase):
    """--approval-webhook: each request, decision and expiry is POSTed to the operator's URL,
    signed (HMAC-SHA256 over "<timestamp>.<body>"), retried until answered 2xx, and a request
    still pending is delivered again after a restart."""

    SECRET = b"webhook-secret-" + secrets.token_hex(16).encode()
    EXPIRY_S = 8

    @classmethod
    def setUpClass(cls):
        cls.receiver = WebhookReceiver()
        cls.secret_dir = tempfile.mkdtemp(prefix="spit-hook-", dir="/tmp")
        cls.secret_path = os.path.join(cls.secret_dir, "hook.key")
        with open(os.open(cls.secret_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(cls.SECRET + b"\n")  # the line ending is not part of the key
        cls.spaced_kwargs = {"extra_args": [
            "--approval-timeout", str(cls.EXPIRY_S),
            "--approval-webhook", "http://127.0.0.1:%d/hooks/approvals" % cls.receiver.port,
            "--approval-webhook-secret", cls.secret_path]}
        try:
            super().setUpClass()
        except Exception:
            cls.receiver.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.receiver.stop()
        shutil.rmtree(cls.secret_dir, ignore_errors=True)

    def deliveries(self, delivery, count=1, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.receiver.of(delivery)
            if len(got) >= count:
                return got
            time.sleep(0.1)
        self.fail("%d deliveries of %s did not come: %r" % (count, delivery, self.receiver.of(delivery)))

    def verified(self, headers, body, event):
        ts = headers["X-Space-Timestamp"]
        want = hmac.new(self.SECRET, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        self.assertEqual(headers["X-Space-Signature"], "sha256=" + want)
        self.assertLess(abs(time.time() - int(ts)), 300)
        self.assertEqual(headers["X-Space-Event"], event)
        self.assertEqual(headers["Content-Type"], "application/json")
        j = json.loads(body)
        self.assertEqual((j["event"], j["delivery"]), (event, headers["X-Space-Delivery"]))
        return j

    def test_request_and_decision_are_delivered_signed_and_retried(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        self.receiver.fail = 1  # the first attempt gets a 500: the same delivery comes again
        held = self.held_exec(sid, "echo hooked > /tmp/approval-marker-w1")
        aid = held["approval_id"]
        got = self.deliveries(aid + ".approval.requested", count=2)
        for headers, body in got[:2]:
            j = self.verified(headers, body, "approval.requested")
            self.assertEqual((j["approval"]["id"], j["approval"]["state"], j["approval"]["command_id"]),
                             (aid, "pending", held["command_id"]))
            self.assertEqual(j["approval"]["command"]["argv"][:2], ["/bin/sh", "-c"])
        self.assertEqual(self.receiver.deliveries[-1][0], "/hooks/approvals")
        # A forged signature is told apart: the receiver's check is real.
        headers, body = got[0]
        self.assertNotEqual(headers["X-Space-Signature"],
                            "sha256=" + hmac.new(b"another key", headers["X-Space-Timestamp"].encode() + b"." + body,
                                                 hashlib.sha256).hexdigest())
        self.spaced.api("POST", "/v1/approvals/%s/approve" % aid, {"comment": "ok"}, key=owner, expect=200)
        (headers, body), = self.deliveries(aid + ".approval.approved")
        j = self.verified(headers, body, "approval.approved")
        self.assertEqual((j["approval"]["state"], j["approval"]["comment"]), ("approved", "ok"))
        self.assertTrue(j["approval"]["decided_by"])
        c = self.command(sid, held["command_id"], self.token(sid), wait=True)
        self.assertEqual((c["state"], c["exit_code"]), ("exited", 0), c)

    def test_expiry_is_delivered(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        held = self.held_exec(sid, "touch /tmp/approval-marker-w2")
        (headers, body), = self.deliveries(held["approval_id"] + ".approval.expired", timeout=self.EXPIRY_S + 30)
        j = self.verified(headers, body, "approval.expired")
        self.assertEqual((j["approval"]["state"], j["approval"]["decided_by"]), ("expired", None))
        self.assertIsNotNone(j["approval"]["decided_at"])

    def test_pending_request_is_delivered_again_after_kill9(self):
        sid = self.new_sandbox()
        self.hold_marker_policy()
        owner = self.key("owner")
        held = self.held_exec(sid, "touch /tmp/approval-marker-w3")
        aid = held["approval_id"]
        before = len(self.deliveries(aid + ".approval.requested"))
        self.spaced.restart(hard=True)
        again = self.deliveries(aid + ".approval.requested", count=before + 1)
        j = self.verified(*again[-1], "approval.requested")
        self.assertEqual(j["approval"]["state"], "pending")
        self.spaced.api("POST", "/v1/approvals/%s/deny" % aid, {}, key=owner, expect=200)
        self.deliveries(aid + ".approval.denied")

    def test_refused_settings(self):
        """spaced does not start with half a webhook or a bad one, and says why."""
        short = os.path.join(self.secret_dir, "short.key")
        with open(short, "wb") as f:
            f.write(b"tiny\n")
        url = "http://127.0.0.1:%d/h" % self.receiver.port
        for args, words in ((["--approval-webhook", url], "go together"),
                            (["--approval-webhook-secret", self.secret_path], "go together"),
                            (["--approval-webhook", "ftp://127.0.0.1/h", "--approval-webhook-secret", self.secret_path],
                             "approval-webhook"),
                            (["--approval-webhook", "http:///nohost", "--approval-webhook-secret", self.secret_path],
                             "approval-webhook")):
            done = subprocess.run([SPACED, "--state-dir", os.path.join(self.secret_dir, "never")] + args,
                                  capture_output=True, timeout=60)
            self.assertNotEqual(done.returncode, 0, args)
            self.assertIn(words, done.stderr.decode(), args)
        bad = None
        from spaced_harness import Spaced
        sp = Spaced(extra_args=["--approval-webhook", url, "--approval-webhook-secret", short])
        try:
            with self.assertRaises(RuntimeError) as caught:
                sp.start(timeout=60)
            bad = str(caught.exception)
        finally:
            sp.cleanup()
        self.assertIn("at least 16", bad)


if __name__ == "__main__":
    import unittest
    unittest.main()
