"""The data plane: attach sessions and their tokens, streamed commands over Server-Sent
Events (live output, resume by Last-Event-ID / ?after=, keep-alives), stdin, PTYs,
signals, lost commands (sandbox destroyed or stopped mid-stream), the per-command log cap,
many streams at once, and resume with exact sequence continuity across kill -9 of spaced."""

import base64
import hashlib
import json
import os
import re
import signal
import threading
import time
import unittest

from spaced_harness import FreshSpacedTestCase, SpacedTestCase, cgroup_pids, read_cmdline, wait_for

TOKEN_RE = re.compile(r"^spat_[0-9a-f]{40}$")
OUTPUT_EVENTS = ("stdout", "stderr", "pty")


def decoded(ev):
    """The bytes an output event carries."""
    return base64.b64decode(json.loads(ev["data"])["data"], validate=True)


def output(events, kinds=OUTPUT_EVENTS):
    return b"".join(decoded(ev) for ev in events if ev.get("event") in kinds)


def exit_data(events):
    ends = [ev for ev in events if ev.get("event") == "exit"]
    assert len(ends) == 1, "expected exactly one exit event, got %r" % (events,)
    assert events[-1] is ends[0], "the exit event is not the last one: %r" % (events,)
    return json.loads(ends[0]["data"])


def assert_consecutive(test, events, first=1):
    """Event ids are first, first+1, ... with no gap and no repeat."""
    ids = [int(ev["id"]) for ev in events]
    test.assertEqual(ids, list(range(first, first + len(ids))), "event ids are not consecutive")


class DataPlaneClient:
    """Calls on the data plane of one spaced, authorised by attach tokens (mixed into tests)."""

    def session(self, sid, ttl_s=None, expect=201):
        body = {} if ttl_s is None else {"ttl_s": ttl_s}
        _, s = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % sid, body, expect=expect)
        return s

    def token(self, sid):
        return self.session(sid)["attach_token"]

    def dp(self, method, sid, tail, body=None, token=None, expect=None, **kw):
        return self.spaced.api(method, "/v1/sandboxes/%s/%s" % (sid, tail), body, key=token, expect=expect, **kw)

    def start(self, sid, token, **spec):
        _, c = self.dp("POST", sid, "commands", spec, token=token, expect=201)
        return c

    def command(self, sid, token, cid, wait=False):
        q = "?wait=true&timeout_s=120" if wait else ""
        _, c = self.dp("GET", sid, "commands/%s%s" % (cid, q), token=token, expect=200, timeout=180)
        return c

    def commands(self, sid, token):
        _, data = self.dp("GET", sid, "commands", token=token, expect=200)
        return data["commands"]

    def stream(self, sid, token, cid, after=None, last_event_id=None, query="", timeout=120, rcvbuf=None):
        path = "/v1/sandboxes/%s/commands/%s/events" % (sid, cid)
        params = [p for p in (query, "after=%d" % after if after is not None else "") if p]
        if params:
            path += "?" + "&".join(params)
        headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else None
        es = self.spaced.events(path, key=token, headers=headers, timeout=timeout, rcvbuf=rcvbuf)
        self.addCleanup(es.close)
        self.assertEqual(es.status, 200, es.body() if es.status != 200 else "")
        self.assertTrue(es.headers.get("content-type", "").startswith("text/event-stream"), es.headers)
        return es

    def all_events(self, sid, token, cid, **kw):
        """Every event from the given position to the end of the stream (which must end with exit)."""
        es = self.stream(sid, token, cid, **kw)
        events = list(es)
        es.close()
        self.assertTrue(events and events[-1].get("event") == "exit", "stream did not end with exit: %r" % events[-5:])
        return events

    def run_command(self, sid, token, **spec):
        """Starts a command and reads its whole stream: (command, events, exit data)."""
        c = self.start(sid, token, **spec)
        events = self.all_events(sid, token, c["command_id"])
        return c, events, exit_data(events)

    def read_until(self, es, predicate, what, limit=10000):
        """Reads events from es until predicate(events so far) holds; returns them."""
        seen = []
        for _ in range(limit):
            ev = es.next()
            self.assertIsNotNone(ev, "stream ended before %s: %r" % (what, seen[-5:]))
            seen.append(ev)
            if predicate(seen):
                return seen
            self.assertNotEqual(ev.get("event"), "exit", "command exited before %s: %r" % (what, seen[-5:]))
        self.fail("no %s in %d events" % (what, limit))

    def stdin(self, sid, token, cid, raw=None, body=None):
        if raw is not None:
            return self.dp("POST", sid, "commands/%s/stdin" % cid, token=token, raw=raw,
                           headers={"Content-Type": "application/octet-stream"}, expect=204)
        return self.dp("POST", sid, "commands/%s/stdin" % cid, body, token=token, expect=204)

    def close_stdin(self, sid, token, cid):
        return self.dp("POST", sid, "commands/%s/stdin/close" % cid, token=token, expect=204)


def counting_script(n, delay):
    """Prints 1..n, one numbered line every `delay` seconds."""
    return "i=1; while [ $i -le %d ]; do echo $i; i=$((i+1)); sleep %s; done" % (n, delay)


def numbered(n):
    return "".join("%d\n" % i for i in range(1, n + 1)).encode()


class Sessions(DataPlaneClient, SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(metadata={"t": "data-plane-sessions"})
            cls.other = cls.spaced.create(metadata={"t": "data-plane-other"})
        except Exception:
            cls.spaced.cleanup()
            raise

    def list_sessions(self, sid):
        _, data = self.spaced.api("GET", "/v1/sandboxes/%s/sessions" % sid, expect=200)
        return data["sessions"]

    def data_status(self, sid, token):
        return self.spaced.request("GET", "/v1/sandboxes/%s/commands" % sid, key=token)

    def test_create_list_renew_revoke(self):
        s = self.session(self.sid, ttl_s=600)
        self.assertRegex(s["attach_token"], TOKEN_RE)
        self.assertEqual(s["sandbox_id"], self.sid)
        self.assertEqual(s["state"], "active")
        self.assertIsNone(s["revoked_at"])
        self.assertEqual(s["data_url"], "%s/v1/sandboxes/%s" % (self.spaced.url, self.sid))
        for k in ("session_id", "created_at", "expires_at"):
            self.assertTrue(s[k], s)
        self.assertEqual(self.data_status(self.sid, s["attach_token"])[0], 200)
        # The default is an hour; two sessions never share a token.
        d = self.session(self.sid)
        self.assertNotEqual(d["attach_token"], s["attach_token"])
        self.assertGreater(d["expires_at"], s["expires_at"])

        listed = self.list_sessions(self.sid)
        by_id = {x["session_id"]: x for x in listed}
        self.assertIn(s["session_id"], by_id)
        self.assertIn(d["session_id"], by_id)
        self.assertNotIn(s["attach_token"], json.dumps(listed), "a listing shows a token")
        for x in listed:
            self.assertNotIn("attach_token", x)
        self.assertNotIn(s["session_id"], {x["session_id"] for x in self.list_sessions(self.other)})

        _, renewed = self.spaced.api("POST", "/v1/sandboxes/%s/sessions/%s/renew" % (self.sid, s["session_id"]),
                                     {"ttl_s": 86400}, expect=200)
        self.assertEqual(renewed["session_id"], s["session_id"])
        self.assertGreater(renewed["expires_at"], d["expires_at"])
        self.assertNotIn("attach_token", renewed)
        self.assertEqual(self.data_status(self.sid, s["attach_token"])[0], 200)

        self.spaced.api("DELETE", "/v1/sandboxes/%s/sessions/%s" % (self.sid, s["session_id"]), expect=204)
        self.assertError(self.data_status(self.sid, s["attach_token"]), 401, "unauthorized")
        gone = {x["session_id"]: x for x in self.list_sessions(self.sid)}[s["session_id"]]
        self.assertEqual(gone["state"], "revoked")
        self.assertIsNotNone(gone["revoked_at"])
        # Another session of the sandbox is untouched.
        self.assertEqual(self.data_status(self.sid, d["attach_token"])[0], 200)
        # A revoked session cannot be renewed back to life.
        st, _ = self.spaced.request("POST", "/v1/sandboxes/%s/sessions/%s/renew" % (self.sid, s["session_id"]),
                                    {"ttl_s": 60})
        self.assertNotEqual(st, 200)
        self.assertError(self.data_status(self.sid, s["attach_token"]), 401, "unauthorized")

    def test_token_scope(self):
        mine = self.token(self.sid)
        theirs = self.token(self.other)
        # The control key is no data-plane credential, nor is nothing or garbage.
        self.assertError(self.data_status(self.sid, self.spaced.key), 401, "unauthorized")
        self.assertError(self.data_status(self.sid, None), 401, "unauthorized")
        self.assertError(self.data_status(self.sid, "spat_" + "0" * 40), 401, "unauthorized")
        self.assertError(self.data_status(self.sid, "nonsense"), 401, "unauthorized")
        # Another sandbox's token: forbidden, on every kind of data route.
        self.assertError(self.data_status(self.sid, theirs), 403, "forbidden")
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/commands" % self.sid, {"cmd": ["true"]},
                                             key=theirs), 403, "forbidden")
        c = self.start(self.sid, mine, cmd=["sleep", "60"])
        cid = c["command_id"]
        for method, tail, body in (("GET", "commands/" + cid, None), ("GET", "commands/%s/events" % cid, None),
                                   ("POST", "commands/%s/stdin" % cid, {"text": "x"}),
                                   ("POST", "commands/%s/signal" % cid, {"signal": "KILL"})):
            self.assertError(self.spaced.request(method, "/v1/sandboxes/%s/%s" % (self.sid, tail), body, key=theirs),
                             403, "forbidden")
            self.assertError(self.spaced.request(method, "/v1/sandboxes/%s/%s" % (self.sid, tail), body,
                                                 key=self.spaced.key), 401, "unauthorized")
        # A command of this sandbox is not found under another, even with that one's token.
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s" % (self.other, cid), key=theirs),
                         404, "not_found")
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/commands/%s/signal" % (self.other, cid),
                                             {"signal": "KILL"}, key=theirs), 404)
        # Nothing of that reached the command: it still runs.
        self.assertEqual(self.command(self.sid, mine, cid)["state"], "running")
        self.dp("POST", self.sid, "commands/%s/signal" % cid, {"signal": "KILL"}, token=mine, expect=204)
        self.assertEqual(self.command(self.sid, mine, cid, wait=True)["signal"], 9)
        # An attach token is no control credential.
        self.assertError(self.spaced.request("GET", "/v1/sandboxes", key=mine), 401)
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, {}, key=mine), 401)
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/%s/sessions" % self.sid, key=mine), 401)

    def test_expiry(self):
        s = self.session(self.sid, ttl_s=1)
        # Poll rather than trust one sleep: the token must go within a few seconds of its ttl.
        time.sleep(2)
        wait_for(lambda: self.data_status(self.sid, s["attach_token"])[0] == 401, timeout=10,
                 what="a 1 s token to expire")
        self.assertError(self.data_status(self.sid, s["attach_token"]), 401, "unauthorized")
        listed = {x["session_id"]: x for x in self.list_sessions(self.sid)}
        self.assertEqual(listed[s["session_id"]]["state"], "expired")
        # Renewing an expired session is refused or gives it a new life; either way it is consistent.
        st, r = self.spaced.request("POST", "/v1/sandboxes/%s/sessions/%s/renew" % (self.sid, s["session_id"]),
                                    {"ttl_s": 600})
        self.assertEqual(self.data_status(self.sid, s["attach_token"])[0], 200 if st == 200 else 401, (st, r))

    def test_bad_requests_change_nothing(self):
        before = self.list_sessions(self.sid)
        for body in ({"ttl_s": 0}, {"ttl_s": -1}, {"ttl_s": 604801}, {"ttl_s": "60"}, {"ttl_s": 1.5},
                     {"ttl": 60}, [60]):
            self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, body), 400)
        for raw in (b"{", b"ttl_s=60", b"\xff\xfe"):
            self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, raw=raw,
                                                 headers={"Content-Type": "application/json"}), 400)
        self.assertEqual(self.list_sessions(self.sid), before, "a refused request created or changed a session")
        # Bounds themselves are fine.
        self.session(self.sid, ttl_s=1)
        self.session(self.sid, ttl_s=604800)
        s = self.session(self.sid, ttl_s=60)
        path = "/v1/sandboxes/%s/sessions/%s/renew" % (self.sid, s["session_id"])
        for body in ({"ttl_s": 0}, {"ttl_s": 604801}, {"nope": 1}):
            self.assertError(self.spaced.request("POST", path, body), 400)
        self.assertError(self.spaced.request("POST", path, raw=b"{nope", headers={"Content-Type": "application/json"}), 400)
        after = {x["session_id"]: x for x in self.list_sessions(self.sid)}[s["session_id"]]
        self.assertEqual(after["expires_at"], s["expires_at"], "a refused renew changed the session")

    def test_unknown_sandbox_and_session(self):
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/sb-0000000000000000/sessions", {}), 404, "not_found")
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/sb-0000000000000000/sessions"), 404, "not_found")
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/sessions/ses-0000000000000000/renew" % self.sid,
                                             {"ttl_s": 60}), 404, "not_found")
        self.assertError(self.spaced.request("DELETE", "/v1/sandboxes/%s/sessions/ses-0000000000000000" % self.sid),
                         404, "not_found")
        # A session of another sandbox is not found under this one.
        s = self.session(self.other)
        self.assertError(self.spaced.request("DELETE", "/v1/sandboxes/%s/sessions/%s" % (self.sid, s["session_id"])), 404)
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/sessions/%s/renew" % (self.sid, s["session_id"]),
                                             {"ttl_s": 60}), 404)
        self.assertEqual(self.data_status(self.other, s["attach_token"])[0], 200)
        # Sessions need the control key.
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, {}, key=None), 401)


class Commands(DataPlaneClient, SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(env={"FROM_SANDBOX": "sb"}, metadata={"t": "data-plane"})
            _, s = cls.spaced.api("POST", "/v1/sandboxes/%s/sessions" % cls.sid, {"ttl_s": 86400}, expect=201)
            cls.tok = s["attach_token"]
        except Exception:
            cls.spaced.cleanup()
            raise

    def go(self, **spec):
        return self.run_command(self.sid, self.tok, **spec)

    # ---- commands

    def test_exit_codes(self):
        for code in (0, 1, 42, 255):
            c, events, end = self.go(shell="exit %d" % code)
            self.assertEqual(end["exit_code"], code, end)
            self.assertFalse(end["timed_out"])
            self.assertIsInstance(end["duration_ms"], int)
            done = self.command(self.sid, self.tok, c["command_id"], wait=True)
            self.assertEqual(done["state"], "exited")
            self.assertEqual(done["exit_code"], code)
            self.assertIsNone(done["signal"])
            self.assertIsNotNone(done["finished_at"])
        c, _, end = self.go(cmd=["false"], tag="t-false")
        self.assertEqual(end["exit_code"], 1)
        self.assertEqual(c["tag"], "t-false")
        self.assertEqual(c["spec"]["cmd"], ["false"])
        self.assertIn(c["state"], ("starting", "running", "exited"))
        self.assertGreater(c["pid"], 0)
        listed = {x["command_id"]: x for x in self.commands(self.sid, self.tok)}
        self.assertEqual(listed[c["command_id"]]["exit_code"], 1)
        self.assertEqual(listed[c["command_id"]]["tag"], "t-false")
        # A missing program is an exit status, not a failed request.
        _, events, end = self.go(cmd=["no-such-program-xyz"])
        self.assertEqual(end["exit_code"], 127, end)
        self.assertIn(b"no-such-program-xyz", output(events, ("stderr",)))

    def test_stdout_stderr_separated(self):
        _, events, end = self.go(shell="echo out1; echo err1 >&2; echo out2; echo err2 >&2")
        self.assertEqual(output(events, ("stdout",)), b"out1\nout2\n")
        self.assertEqual(output(events, ("stderr",)), b"err1\nerr2\n")
        self.assertEqual(end["exit_code"], 0)
        assert_consecutive(self, events)
        # argv does not go through a shell
        _, events, _ = self.go(cmd=["echo", "a b", "$HOME", ";x"])
        self.assertEqual(output(events), b"a b $HOME ;x\n")

    def test_binary_safe_output(self):
        _, events, _ = self.go(shell="printf '\\000\\377\\376'; printf 'a\\000b\\200' >&2")
        self.assertEqual(output(events, ("stdout",)), b"\x00\xff\xfe")
        self.assertEqual(output(events, ("stderr",)), b"a\x00b\x80")
        data = bytes(range(256)) * 512
        c = self.start(self.sid, self.tok, cmd=["cat"], stdin=True)
        self.stdin(self.sid, self.tok, c["command_id"], raw=data)
        self.close_stdin(self.sid, self.tok, c["command_id"])
        events = self.all_events(self.sid, self.tok, c["command_id"])
        self.assertEqual(output(events), data, "binary stdin did not come back byte for byte")

    def test_env_and_cwd(self):
        _, events, _ = self.go(shell="echo $FROM_SANDBOX $MINE; pwd", env={"MINE": "a=b c"}, cwd="/tmp")
        self.assertEqual(output(events), b"sb a=b c\n/tmp\n")
        _, events, _ = self.go(cmd=["pwd"])
        self.assertEqual(output(events), b"/\n")
        _, events, _ = self.go(shell="echo ${MINE:-unset}")
        self.assertEqual(output(events), b"unset\n", "a per-command env stuck")

    def test_user(self):
        _, _, end = self.go(shell="grep -q '^dptester:' /etc/passwd || "
                                  "echo 'dptester:x:4321:4321:t:/tmp:/bin/sh' >> /etc/passwd")
        self.assertEqual(end["exit_code"], 0)
        for user, uid in (("dptester", b"4321"), ("4321", b"4321"), ("nobody", b"65534"), ("root", b"0"), (None, b"0")):
            spec = {"cmd": ["id", "-u"]}
            if user is not None:
                spec["user"] = user
            _, events, end = self.go(**spec)
            self.assertEqual(output(events).strip(), uid, "user %r: %r" % (user, events))
        _, events, _ = self.go(shell="echo $HOME; touch /root/x 2>&1 || echo denied", user="dptester")
        self.assertEqual(output(events).splitlines()[0], b"/tmp")
        self.assertIn(b"denied", output(events))
        before = len(self.commands(self.sid, self.tok))
        self.assertError(self.dp("POST", self.sid, "commands", {"cmd": ["id"], "user": "no-such-user"}, token=self.tok),
                         400)
        self.assertEqual(len(self.commands(self.sid, self.tok)), before)

    def test_wait(self):
        c = self.start(self.sid, self.tok, cmd=["sleep", "60"])
        cid = c["command_id"]
        _, got = self.dp("GET", self.sid, "commands/%s?wait=true&timeout_s=1" % cid, token=self.tok, expect=200)
        self.assertEqual((got["state"], got["exit_code"], got["finished_at"]), ("running", None, None))
        self.assertEqual(self.command(self.sid, self.tok, cid)["state"], "running")
        self.assertIn(cid, {x["command_id"]: x["state"] for x in self.commands(self.sid, self.tok)})
        # No stdin asked for: there is none to write to (the command is not disturbed).
        st, r = self.dp("POST", self.sid, "commands/%s/stdin" % cid, {"text": "x"}, token=self.tok)
        self.assertIn(st, (400, 409), r)
        self.dp("POST", self.sid, "commands/%s/signal" % cid, {"signal": "TERM"}, token=self.tok, expect=204)
        got = self.command(self.sid, self.tok, cid, wait=True)
        self.assertEqual((got["state"], got["signal"]), ("exited", 15))
        self.assertIsNotNone(got["finished_at"])
        self.assertError(self.dp("GET", self.sid, "commands/%s?wait=maybe" % cid, token=self.tok), 400)

    def test_timeout(self):
        c, events, end = self.go(shell="echo before; sleep 60", timeout_s=1)
        self.assertTrue(end["timed_out"], end)
        self.assertEqual(output(events), b"before\n")
        done = self.command(self.sid, self.tok, c["command_id"], wait=True)
        self.assertTrue(done["timed_out"])
        self.assertEqual(done["state"], "exited")

    def test_bad_input_creates_nothing(self):
        before = {c["command_id"] for c in self.commands(self.sid, self.tok)}
        bad = ({}, {"cmd": ["true"], "shell": "true"}, {"cmd": []}, {"cmd": "true"}, {"cmd": [1]},
               {"shell": "true", "cwd": "tmp"}, {"shell": "true", "cwd": ""}, {"shell": "true", "nope": 1},
               {"shell": "true", "tty": {"cols": 0, "rows": 24}}, {"shell": "true", "tty": {"cols": "80", "rows": 24}},
               {"shell": "true", "tty": {"cols": 80, "rows": 24, "x": 1}}, {"shell": "true", "tty": 5},
               {"shell": "true", "timeout_s": -1}, {"shell": "true", "stdin": "yes"}, {"shell": "true", "env": {"A": 1}},
               {"shell": "true", "env": {"A=B": "x"}}, {"shell": "true", "user": ""}, [1, 2])
        for body in bad:
            self.assertError(self.dp("POST", self.sid, "commands", body, token=self.tok), 400)
        for raw in (b"{", b"", b"cmd=true"):
            st, r = self.dp("POST", self.sid, "commands", token=self.tok, raw=raw,
                            headers={"Content-Type": "application/json"})
            self.assertEqual(st, 400, (raw, r))
        after = {c["command_id"] for c in self.commands(self.sid, self.tok)}
        self.assertEqual(after, before, "a refused request created a command")
        # Unknown commands
        self.assertError(self.dp("GET", self.sid, "commands/cmd-0000000000000000", token=self.tok), 404, "not_found")
        st, r = self.spaced.request("GET", "/v1/sandboxes/%s/commands/cmd-0000000000000000/events" % self.sid,
                                    key=self.tok)
        self.assertEqual(st, 404, r)
        self.assertError(self.dp("POST", self.sid, "commands/cmd-0000000000000000/signal", {"signal": "KILL"},
                                 token=self.tok), 404)

    def test_paused_sandbox_refuses(self):
        sid = self.new_sandbox(metadata={"t": "data-plane-paused"})
        tok = self.token(sid)
        c = self.start(sid, tok, cmd=["sleep", "300"])
        self.spaced.action(sid, "pause")
        self.assertError(self.dp("POST", sid, "commands", {"cmd": ["true"]}, token=tok), 409, "invalid_state")
        self.assertEqual([x["command_id"] for x in self.commands(sid, tok)], [c["command_id"]])
        self.spaced.action(sid, "resume")
        _, events, end = self.run_command(sid, tok, shell="echo back")
        self.assertEqual(output(events), b"back\n")
        self.assertEqual(self.command(sid, tok, c["command_id"])["state"], "running")

    # ---- streaming

    def test_live_output_before_exit(self):
        """The first line arrives while the command still runs (it waits for our stdin)."""
        c = self.start(self.sid, self.tok, shell="echo a; read x; echo b$x", stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid)
        first = es.next()
        self.assertEqual((first["event"], decoded(first)), ("stdout", b"a\n"))
        self.assertEqual(self.command(self.sid, self.tok, cid)["state"], "running")
        self.stdin(self.sid, self.tok, cid, body={"text": "c\n"})
        rest = list(es)
        self.assertEqual(output(rest), b"bc\n")
        self.assertEqual(exit_data(rest)["exit_code"], 0)
        assert_consecutive(self, [first] + rest)

    def test_resume(self):
        c = self.start(self.sid, self.tok, shell=counting_script(40, 0.05) + "; echo end >&2")
        cid = c["command_id"]
        # Mid-run: read a few, drop the connection, come back with Last-Event-ID.
        es = self.stream(self.sid, self.tok, cid)
        head = [es.next() for _ in range(3)]
        es.close()
        tail = self.all_events(self.sid, self.tok, cid, last_event_id=head[-1]["id"])
        union = head + tail
        assert_consecutive(self, union)
        self.assertEqual(output(union, ("stdout",)), numbered(40))
        self.assertEqual(output(union, ("stderr",)), b"end\n")
        self.assertEqual(exit_data(union)["exit_code"], 0)
        full = self.all_events(self.sid, self.tok, cid)
        self.assertEqual(full, union, "a fresh read differs from the resumed one")
        # From every position, by header and by query: exactly the events after it.
        for n in (0, 1, 2, len(full) // 2, len(full) - 1):
            self.assertEqual(self.all_events(self.sid, self.tok, cid, last_event_id=n), full[n:], "Last-Event-ID %d" % n)
            self.assertEqual(self.all_events(self.sid, self.tok, cid, after=n), full[n:], "after=%d" % n)
        # After the end: nothing more to send; the stream still closes.
        for n in (len(full), len(full) + 100):
            es = self.stream(self.sid, self.tok, cid, after=n)
            self.assertIsNone(es.next(), "events after the last one (after=%d)" % n)
            es.close()
        es = self.stream(self.sid, self.tok, cid, last_event_id=len(full))
        self.assertIsNone(es.next(), "events after the last one")
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s/events?after=x" % (self.sid, cid),
                                             key=self.tok), 400)
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s/events" % (self.sid, cid),
                                             key=self.tok, headers={"Last-Event-ID": "-3"}), 400)

    def test_resume_many_times_while_running(self):
        c = self.start(self.sid, self.tok, shell=counting_script(60, 0.02))
        cid = c["command_id"]
        got, last = [], None
        while not got or got[-1]["event"] != "exit":
            es = self.stream(self.sid, self.tok, cid, last_event_id=last)
            for _ in range(4):
                ev = es.next()
                if ev is None:
                    break
                got.append(ev)
                last = ev["id"]
                if ev["event"] == "exit":
                    break
            es.close()
        assert_consecutive(self, got)
        self.assertEqual(output(got), numbered(60))

    def test_keepalive(self):
        c = self.start(self.sid, self.tok, cmd=["cat"], stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid, query="keepalive_s=1")
        seen = []
        while sum(1 for e in seen if e.get("comment") == "keepalive") < 2:
            ev = es.next(comments=True)
            self.assertIsNotNone(ev, "stream ended while idle")
            self.assertNotEqual(ev.get("event"), "exit")
            seen.append(ev)
        self.stdin(self.sid, self.tok, cid, raw=b"alive\n")
        self.close_stdin(self.sid, self.tok, cid)
        rest = list(es)
        self.assertEqual(output(rest), b"alive\n")
        self.assertEqual(exit_data(rest)["exit_code"], 0)
        self.assertError(self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s/events?keepalive_s=0" % (self.sid, cid),
                                             key=self.tok), 400)

    def test_revoked_token_ends_open_stream(self):
        s = self.session(self.sid)
        tok = s["attach_token"]
        c = self.start(self.sid, tok, cmd=["cat"], stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, tok, cid, query="keepalive_s=1")
        self.stdin(self.sid, tok, cid, raw=b"before\n")
        self.read_until(es, lambda evs: output(evs) == b"before\n", "the first line")
        self.spaced.api("DELETE", "/v1/sandboxes/%s/sessions/%s" % (self.sid, s["session_id"]), expect=204)
        rest = list(es)  # the stream ends without an exit: the command goes on
        self.assertNotIn("exit", [e.get("event") for e in rest], rest)
        st, _ = self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s/events" % (self.sid, cid), key=tok)
        self.assertEqual(st, 401)
        tok2 = self.token(self.sid)
        self.stdin(self.sid, tok2, cid, raw=b"after\n")
        self.close_stdin(self.sid, tok2, cid)
        events = self.all_events(self.sid, tok2, cid)
        self.assertEqual(output(events), b"before\nafter\n")

    def test_revoked_key_ends_the_sessions_it_opened(self):
        """Revoking an API key revokes the attach sessions it opened (not another key's):
        their tokens are refused and their open streams end."""
        _, k = self.spaced.api("POST", "/v1/keys", {"name": "opener", "role": "developer"}, expect=201)
        _, s = self.spaced.api("POST", "/v1/sandboxes/%s/sessions" % self.sid, {}, key=k["secret"], expect=201)
        tok = s["attach_token"]
        other = self.session(self.sid)  # opened by the admin key: stays
        c = self.start(self.sid, tok, cmd=["cat"], stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, tok, cid, query="keepalive_s=1")
        self.stdin(self.sid, tok, cid, raw=b"before\n")
        self.read_until(es, lambda evs: output(evs) == b"before\n", "the first line")
        self.spaced.api("DELETE", "/v1/keys/" + k["id"], expect=204)
        rest = list(es)  # ends without an exit: the command goes on
        self.assertNotIn("exit", [e.get("event") for e in rest], rest)
        st, _ = self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s" % (self.sid, cid), key=tok)
        self.assertEqual(st, 401)
        _, listed = self.spaced.api("GET", "/v1/sandboxes/%s/sessions" % self.sid, expect=200)
        states = {x["session_id"]: x["state"] for x in listed["sessions"]}
        self.assertEqual(states[s["session_id"]], "revoked")
        self.assertEqual(states[other["session_id"]], "active")
        tok2 = other["attach_token"]
        self.stdin(self.sid, tok2, cid, raw=b"after\n")
        self.close_stdin(self.sid, tok2, cid)
        self.assertEqual(output(self.all_events(self.sid, tok2, cid)), b"before\nafter\n")

    # ---- stdin

    def test_stdin_chunks(self):
        c = self.start(self.sid, self.tok, cmd=["cat"], stdin=True)
        cid = c["command_id"]
        chunks = [b"raw \x00\xff bytes\n", "json text \u00e9\n", b"\x01\x02base64\n", b"", b"x" * 200000]
        self.stdin(self.sid, self.tok, cid, raw=chunks[0])
        self.stdin(self.sid, self.tok, cid, body={"text": chunks[1]})
        self.stdin(self.sid, self.tok, cid, body={"data": base64.b64encode(chunks[2]).decode()})
        self.stdin(self.sid, self.tok, cid, raw=chunks[3])
        self.stdin(self.sid, self.tok, cid, raw=chunks[4])
        padded = [b"p", b"pa", b"pad", b"\x00"]  # base64 with two, one and no padding characters
        for p in padded:
            self.stdin(self.sid, self.tok, cid, body={"data": base64.b64encode(p).decode()})
        self.assertError(self.dp("POST", self.sid, "commands/%s/stdin" % cid, {"data": "not base64!"}, token=self.tok), 400)
        self.assertError(self.dp("POST", self.sid, "commands/%s/stdin" % cid, {"text": "a", "data": "YQ=="},
                                 token=self.tok), 400)
        self.close_stdin(self.sid, self.tok, cid)
        events = self.all_events(self.sid, self.tok, cid)
        expect = chunks[0] + chunks[1].encode() + chunks[2] + chunks[4] + b"".join(padded)
        self.assertEqual(output(events), expect)
        self.assertEqual(exit_data(events)["exit_code"], 0)
        # The command has ended: input is refused, and so is a second close.
        st, r = self.dp("POST", self.sid, "commands/%s/stdin/close" % cid, token=self.tok)
        self.assertIn(st, (400, 409), r)
        st, r = self.dp("POST", self.sid, "commands/%s/stdin" % cid, {"text": "late"}, token=self.tok)
        self.assertIn(st, (400, 409), r)

    def test_stdin_interactive(self):
        c = self.start(self.sid, self.tok, cmd=["head", "-n1"], stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid)
        self.stdin(self.sid, self.tok, cid, body={"text": "first line\n"})
        events = list(es)
        self.assertEqual(output(events), b"first line\n")
        self.assertEqual(exit_data(events)["exit_code"], 0)
        # A shell driven line by line, answers read back before the next question.
        c = self.start(self.sid, self.tok, shell="while read a b; do echo $((a+b)); done; echo bye", stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid)
        for a, b in ((1, 2), (40, 2), (7, 7)):
            self.stdin(self.sid, self.tok, cid, raw=b"%d %d\n" % (a, b))
            got = self.read_until(es, lambda evs: output(evs).endswith(b"\n"), "the answer")
            self.assertEqual(output(got), b"%d\n" % (a + b))
        self.close_stdin(self.sid, self.tok, cid)
        rest = list(es)
        self.assertEqual(output(rest), b"bye\n")
        # Without stdin: true the command reads EOF at once.
        _, events, end = self.go(cmd=["cat"], timeout_s=30)
        self.assertEqual((output(events), end["timed_out"]), (b"", False))

    def test_background_child_does_not_hold_the_end(self):
        """The command ends when its process does, even if a child it left keeps the output open."""
        _, events, end = self.go(shell="sleep 45 </dev/null & echo started", timeout_s=120)
        self.assertEqual(output(events), b"started\n")
        self.assertEqual(end["exit_code"], 0)
        self.assertFalse(end["timed_out"])
        ps = self.spaced.sh(self.sid, "ps -o args")["stdout"]
        self.assertIn("sleep 45", ps, "the exit was held until the child ended")
        self.spaced.sh(self.sid, "pkill -f 'sleep 45' || true")

    def test_large_stdin(self):
        data = bytes(range(256)) * 4096  # 1 MiB
        c = self.start(self.sid, self.tok, cmd=["md5sum"], stdin=True)
        self.stdin(self.sid, self.tok, c["command_id"], raw=data)
        self.close_stdin(self.sid, self.tok, c["command_id"])
        events = self.all_events(self.sid, self.tok, c["command_id"])
        self.assertEqual(output(events).split()[0].decode(), hashlib.md5(data).hexdigest())

    # ---- pty

    def test_pty_output_complete(self):
        """Everything a pty program writes before it exits reaches the stream."""
        _, events, end = self.go(shell="seq 1 50000; exit 3", tty={"cols": 80, "rows": 24})
        self.assertEqual(end["exit_code"], 3)
        self.assertEqual(output(events).replace(b"\r\n", b"\n"), numbered(50000))

    def test_pty(self):
        _, events, end = self.go(cmd=["stty", "size"], tty={"cols": 100, "rows": 40})
        self.assertEqual([e["event"] for e in events[:-1]], ["pty"] * (len(events) - 1))
        self.assertEqual(output(events).strip(), b"40 100")
        self.assertEqual(end["exit_code"], 0)
        _, events, _ = self.go(cmd=["tty"], tty={"cols": 80, "rows": 24})
        self.assertRegex(output(events).strip().decode(), r"^/dev/pts/\d+$")
        _, events, _ = self.go(shell="test -t 0 && test -t 1 && echo yes", tty={"cols": 80, "rows": 24})
        self.assertEqual(output(events).strip(), b"yes")
        # Without a tty, no terminal.
        _, events, _ = self.go(shell="test -t 1 && echo tty || echo notty")
        self.assertEqual(output(events), b"notty\n")

    def test_pty_resize(self):
        c = self.start(self.sid, self.tok, cmd=["sh"], tty={"cols": 100, "rows": 40}, stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid)
        self.stdin(self.sid, self.tok, cid, raw=b"stty size\n")
        self.read_until(es, lambda evs: b"40 100" in output(evs), "the first size")
        self.dp("POST", self.sid, "commands/%s/resize" % cid, {"cols": 132, "rows": 50}, token=self.tok, expect=204)
        self.stdin(self.sid, self.tok, cid, raw=b"stty size\n")
        self.read_until(es, lambda evs: b"50 132" in output(evs), "the new size")
        for body in ({"cols": 0, "rows": 10}, {"cols": 10}, {"cols": "10", "rows": 10}, {"cols": 10, "rows": 10, "x": 1}):
            self.assertError(self.dp("POST", self.sid, "commands/%s/resize" % cid, body, token=self.tok), 400)
        self.stdin(self.sid, self.tok, cid, raw=b"exit 5\n")
        rest = list(es)
        self.assertEqual(exit_data(rest)["exit_code"], 5)
        st, r = self.dp("POST", self.sid, "commands/%s/resize" % cid, {"cols": 90, "rows": 30}, token=self.tok)
        self.assertIn(st, (400, 409), r)
        # No tty: nothing to resize.
        c = self.start(self.sid, self.tok, cmd=["sleep", "60"])
        st, r = self.dp("POST", self.sid, "commands/%s/resize" % c["command_id"], {"cols": 90, "rows": 30}, token=self.tok)
        self.assertIn(st, (400, 409), r)
        self.dp("POST", self.sid, "commands/%s/signal" % c["command_id"], {"signal": "KILL"}, token=self.tok, expect=204)

    def test_pty_stdin_close_sends_eof(self):
        c = self.start(self.sid, self.tok, cmd=["cat"], tty={"cols": 80, "rows": 24}, stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid)
        self.stdin(self.sid, self.tok, cid, raw=b"typed\n")
        self.read_until(es, lambda evs: output(evs).count(b"typed") >= 2, "the echo and cat's copy")
        self.close_stdin(self.sid, self.tok, cid)
        rest = list(es)
        self.assertEqual(exit_data(rest)["exit_code"], 0)

    # ---- signals

    def test_signals(self):
        for sig, num in (("TERM", 15), ("SIGKILL", 9), (9, 9), ("int", 2)):
            c = self.start(self.sid, self.tok, cmd=["sleep", "100"])
            cid = c["command_id"]
            wait_for(lambda: self.command(self.sid, self.tok, cid)["state"] == "running", timeout=30,
                     what="the command to run")
            self.dp("POST", self.sid, "commands/%s/signal" % cid, {"signal": sig}, token=self.tok, expect=204)
            events = self.all_events(self.sid, self.tok, cid)
            end = exit_data(events)
            self.assertEqual((end["signal"], end["exit_code"]), (num, 128 + num), (sig, end))
            done = self.command(self.sid, self.tok, cid, wait=True)
            self.assertEqual((done["signal"], done["exit_code"]), (num, 128 + num))
        # A shell and its child: the signal ends the command, not only the shell.
        c = self.start(self.sid, self.tok, shell="sleep 100; echo never")
        cid = c["command_id"]
        wait_for(lambda: self.command(self.sid, self.tok, cid)["state"] == "running", timeout=30,
                 what="the command to run")
        self.dp("POST", self.sid, "commands/%s/signal" % cid, {"signal": "TERM"}, token=self.tok, expect=204)
        events = self.all_events(self.sid, self.tok, cid, timeout=60)
        self.assertNotIn(b"never", output(events))
        self.assertEqual(exit_data(events)["signal"], 15, events)
        c = self.start(self.sid, self.tok, cmd=["sleep", "100"])
        cid = c["command_id"]
        for body in ({"signal": "NOPE"}, {"signal": 0}, {"signal": 99}, {"sig": "TERM"}):
            self.assertError(self.dp("POST", self.sid, "commands/%s/signal" % cid, body, token=self.tok), 400)
        self.assertEqual(self.command(self.sid, self.tok, cid)["state"], "running")
        self.dp("POST", self.sid, "commands/%s/signal" % cid, {"signal": "KILL"}, token=self.tok, expect=204)
        self.command(self.sid, self.tok, cid, wait=True)
        st, r = self.dp("POST", self.sid, "commands/%s/signal" % cid, {"signal": "KILL"}, token=self.tok)
        self.assertEqual(st, 409, r)

    # ---- lost commands

    def _lost_mid_stream(self, verb, reasons, gone_ok=False):
        sid = self.new_sandbox(metadata={"t": "data-plane-" + verb})
        tok = self.token(sid)
        c = self.start(sid, tok, shell="while true; do echo tick; sleep 0.1; done")
        cid = c["command_id"]
        es = self.stream(sid, tok, cid)
        self.read_until(es, lambda evs: len(evs) >= 2, "some output")
        result = {}
        if verb == "kill":  # the agent (the sandbox's PID 1, so all goes with it), from the host
            act = lambda: self.kill_agent(sid)  # noqa: E731
        else:
            act = lambda: self.spaced.action(sid, verb)  # noqa: E731
        t = threading.Thread(target=lambda: result.setdefault("r", act()))
        t.start()
        rest = []
        while True:
            ev = es.next()
            if ev is None:
                break
            rest.append(ev)
        t.join(180)
        self.assertIn("r", result, "%s did not finish" % verb)
        if gone_ok and rest and rest[-1]["event"] == "gone":
            # The log went with the sandbox before this reader had read it all: it is told
            # so, with how the command ended, and no exit is made up.
            gone = json.loads(rest[-1]["data"])
            self.assertEqual((gone["reason"], gone["command_state"]), ("log_removed", "lost"), gone)
            self.assertIn(gone.get("command_reason"), reasons, gone)
            self.assertNotIn("id", rest[-1], rest[-1])
            self.assertEqual(set(e["event"] for e in rest[:-1]) - {"stdout"}, set(), rest)
            return sid, tok, cid
        self.assertTrue(rest and rest[-1]["event"] == "exit", "stream did not end with exit: %r" % rest[-3:])
        end = json.loads(rest[-1]["data"])
        self.assertTrue(end.get("lost"), end)
        self.assertIsNone(end["exit_code"], end)
        self.assertIn(end["reason"], reasons, end)
        self.assertTrue(end.get("message"), end)
        self.assertEqual(set(e["event"] for e in rest[:-1]) - {"stdout"}, set(), rest)
        return sid, tok, cid

    def test_destroyed_mid_stream(self):
        sid, tok, cid = self._lost_mid_stream("destroy", ("sandbox_destroyed",), gone_ok=True)
        st, r = self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % sid, {})
        self.assertIn(st, (404, 409), r)
        # Asked again later: the log went with the sandbox, and the answer says so.
        es = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (sid, cid), key=tok)
        self.addCleanup(es.close)
        self.assertIn(es.status, (401, 410), es.body())

    def test_destroyed_sandbox_log_is_gone_not_made_up(self):
        """After its sandbox is destroyed, a command's events never invent an exit: a reader
        that was behind is told the log is gone (410 gone), and so is one that had the real
        exit (no second exit)."""
        sid = self.new_sandbox(metadata={"t": "data-plane-gone"})
        tok = self.token(sid)
        c, events, end = self.run_command(sid, tok, shell="for i in $(seq 1 50); do echo line $i; done")
        self.assertEqual(end["exit_code"], 0, end)
        self.spaced.destroy(sid)
        for after in (0, int(events[0]["id"]), int(events[-1]["id"])):
            st, body = self.spaced.request("GET", "/v1/sandboxes/%s/commands/%s/events?after=%d" % (sid, c["command_id"], after),
                                           key=tok)
            self.assertEqual(st, 410, body)
            self.assertEqual(body["error"]["code"], "gone", body)

    def kill_agent(self, sid):
        # The agent (PID 1) and its /proc view server (a fork of it, the same cmdline): the
        # first kill ends the pid namespace, so the second may find its process gone.
        agents = [p for p in cgroup_pids(sid) if "space-agent" in read_cmdline(p)]
        self.assertTrue(agents, "no agent process found for %s" % sid)
        for p in agents:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not cgroup_pids(sid), timeout=30, what="the sandbox's processes to end")
        return True

    def test_agent_killed_mid_stream(self):
        self._lost_mid_stream("kill", ("agent_unreachable", "sandbox_stopped", "sandbox_failed"))

    def test_stopped_mid_stream(self):
        sid, tok, cid = self._lost_mid_stream("stop", ("sandbox_stopped",))
        self.spaced.action(sid, "start")
        tok = self.token(sid)
        done = self.command(sid, tok, cid)
        self.assertEqual(done["state"], "lost")
        self.assertEqual(done.get("reason"), "sandbox_stopped", done)
        self.assertIn("stopped", done.get("message", ""))
        self.assertIsNone(done["exit_code"])
        # The log survives the stop: a new reader gets the output and the same end.
        events = self.all_events(sid, tok, cid)
        assert_consecutive(self, events)
        self.assertEqual(exit_data(events).get("reason"), "sandbox_stopped")
        es = self.stream(sid, tok, cid, last_event_id=events[-1]["id"])
        self.assertIsNone(es.next(), "a second end after the lost exit")
        self.assertTrue(set(output(events).split()) <= {b"tick"})
        # And the restarted sandbox runs new commands.
        _, events, _ = self.run_command(sid, tok, shell="echo again")
        self.assertEqual(output(events), b"again\n")

    # ---- many at once

    def test_many_concurrent_commands(self):
        """20 commands at once, all 20 streams open before any of them goes on."""
        n, lines = 20, 30
        results, errors = {}, []
        ready = threading.Barrier(n + 1, timeout=180)
        cids = {}

        def one(i):
            try:
                script = "echo ready; read go; i=1; while [ $i -le %d ]; do echo %d-$i; i=$((i+1)); done; exit %d" % (
                    lines, i, i)
                c = self.start(self.sid, self.tok, shell=script, stdin=True)
                cids[i] = c["command_id"]
                es = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (self.sid, c["command_id"]),
                                        key=self.tok, timeout=180)
                try:
                    first = es.next()
                    ready.wait()
                    results[i] = [first] + list(es)
                finally:
                    es.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append((i, e))
                ready.abort()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        try:
            ready.wait()
            for i in range(n):
                self.stdin(self.sid, self.tok, cids[i], raw=b"go\n")
        finally:
            for t in threads:
                t.join(240)
        self.assertEqual(errors, [])
        self.assertEqual(sorted(results), list(range(n)))
        for i, events in results.items():
            assert_consecutive(self, events)
            self.assertEqual(output(events), b"ready\n" + "".join("%d-%d\n" % (i, k) for k in range(1, lines + 1)).encode())
            self.assertEqual(exit_data(events)["exit_code"], i)
        listed = {c["command_id"]: c for c in self.commands(self.sid, self.tok)}
        for i, cid in cids.items():
            self.assertEqual((listed[cid]["state"], listed[cid]["exit_code"]), ("exited", i))

    def test_stream_survives_pause(self):
        """A paused sandbox's command is not lost: its stream idles, then goes on after resume."""
        sid = self.new_sandbox(metadata={"t": "data-plane-pause-stream"})
        tok = self.token(sid)
        c = self.start(sid, tok, shell="echo 1; read go; " + "i=2; while [ $i -le 30 ]; do echo $i; i=$((i+1)); done",
                       stdin=True)
        cid = c["command_id"]
        es = self.stream(sid, tok, cid, query="keepalive_s=1")
        head = [es.next()]
        self.spaced.action(sid, "pause")
        seen = []
        while sum(1 for e in seen if e.get("comment") == "keepalive") < 3:
            ev = es.next(comments=True)
            self.assertIsNotNone(ev, "the stream ended while the sandbox was paused")
            self.assertIn("comment", ev, "an event while paused: %r" % (ev,))
            seen.append(ev)
        self.assertEqual(self.command(sid, tok, cid)["state"], "running")
        self.spaced.action(sid, "resume")
        self.stdin(sid, tok, cid, raw=b"go\n")
        got = head + list(es)
        assert_consecutive(self, got)
        self.assertEqual(output(got), numbered(30))
        self.assertEqual(exit_data(got)["exit_code"], 0)


class LogCap(DataPlaneClient, SpacedTestCase):
    # A cap well above the agent's output records (up to 256 KiB, one pipe read): the log
    # drops whole segments, so with a cap the size of one record it may keep only the
    # newest one, which is all it promises.
    spaced_kwargs = {"extra_args": ["--command-log-cap", "1M"]}
    CAP = 1024 * 1024

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(metadata={"t": "data-plane-cap"})
            _, s = cls.spaced.api("POST", "/v1/sandboxes/%s/sessions" % cls.sid, {}, expect=201)
            cls.tok = s["attach_token"]
        except Exception:
            cls.spaced.cleanup()
            raise

    def test_oldest_output_dropped(self):
        n = 320000  # a little over 2 MiB of numbered lines
        full = numbered(n)
        self.assertGreater(len(full), 2 * 1024 * 1024)
        c = self.start(self.sid, self.tok, cmd=["seq", "1", str(n)])
        cid = c["command_id"]
        self.assertEqual(self.command(self.sid, self.tok, cid, wait=True)["exit_code"], 0)
        events = self.all_events(self.sid, self.tok, cid)
        self.assertEqual(events[0]["event"], "dropped", events[:2])
        d = json.loads(events[0]["data"])
        self.assertEqual(int(events[0]["id"]), d["last_seq"])
        self.assertEqual(d["first_seq"], 1, d)
        self.assertGreaterEqual(d["last_seq"], d["first_seq"])
        self.assertTrue(d["message"])
        rest = events[1:]
        assert_consecutive(self, rest, first=d["last_seq"] + 1)
        kept = output(rest)
        self.assertEqual(exit_data(rest)["exit_code"], 0)
        self.assertTrue(full.endswith(kept), "what is kept is not the end of the output")
        self.assertTrue(kept, "nothing kept")
        self.assertLessEqual(len(kept), 2 * self.CAP, "the log kept %d bytes with a %d cap" % (len(kept), self.CAP))
        self.assertGreaterEqual(len(kept), self.CAP // 4, "the log kept far less than its cap")
        # A reader resuming inside what was dropped gets the notice too; one past it does not.
        again = self.all_events(self.sid, self.tok, cid, after=d["first_seq"])
        self.assertEqual(again[0]["event"], "dropped")
        self.assertEqual(again[1:], rest)
        self.assertEqual(self.all_events(self.sid, self.tok, cid, last_event_id=d["last_seq"]), rest)

    def test_live_reader_left_behind(self):
        """A reader that stops reading while the command writes far more than the cap: whatever
        it gets is in order, and every gap is announced by a dropped event covering exactly it."""
        n = 1000000  # about 6.9 MB, far more than the cap and what sockets and spaced buffer
        full = numbered(n)
        c = self.start(self.sid, self.tok, shell="echo 0; read go; seq 1 %d" % n, stdin=True)
        cid = c["command_id"]
        es = self.stream(self.sid, self.tok, cid, rcvbuf=4096)
        first = es.next()
        self.assertEqual(decoded(first), b"0\n")
        self.stdin(self.sid, self.tok, cid, raw=b"go\n")
        self.assertEqual(self.command(self.sid, self.tok, cid, wait=True)["exit_code"], 0)
        events = [first] + list(es)
        self.assertEqual(exit_data(events)["exit_code"], 0)
        prev, pieces, piece = int(first["id"]), [], b""
        for ev in events[1:]:
            if ev["event"] == "dropped":
                d = json.loads(ev["data"])
                self.assertEqual(d["first_seq"], prev + 1, "a dropped range that does not start after the last event")
                self.assertEqual(int(ev["id"]), d["last_seq"])
                self.assertGreaterEqual(d["last_seq"], d["first_seq"])
                pieces.append(piece)
                piece = b""
            else:
                self.assertEqual(int(ev["id"]), prev + 1, "a gap without a dropped event")
                piece += decoded(ev) if ev["event"] != "exit" else b""
            prev = int(ev["id"])
        pieces.append(piece)
        # The kept pieces appear in the full output in order; the last one is its end.
        pos = 0
        for p in pieces:
            at = full.find(p, pos) if p else pos
            self.assertGreaterEqual(at, 0, "kept output is not part of the output, in order")
            pos = at + len(p)
        self.assertTrue(full.endswith(pieces[-1]))
        if len(pieces) == 1:
            self.assertEqual(pieces[0], full, "nothing dropped, yet output is missing")

    def test_small_output_not_dropped(self):
        _, events, _ = self.run_command(self.sid, self.tok, cmd=["seq", "1", "1000"])
        self.assertNotIn("dropped", [e["event"] for e in events])
        self.assertEqual(output(events), numbered(1000))


class SandboxLogCap(DataPlaneClient, SpacedTestCase):
    """Many commands, each under the per-command cap, together far over the per-sandbox cap:
    the sandbox's logs stay under it, the oldest commands' output goes first (announced as
    dropped, ending with their exit), and the newest command keeps all of its output."""
    CAP = 1024 * 1024
    spaced_kwargs = {"extra_args": ["--command-log-cap", "1M", "--sandbox-log-cap", "1M"]}

    def log_bytes(self, sid):
        root = os.path.join(self.spaced.state_dir, "command-logs", sid)
        total = 0
        for d, _dirs, files in os.walk(root):
            total += sum(os.path.getsize(os.path.join(d, f)) for f in files if f.endswith(".seg"))
        return total

    def test_many_commands_are_capped_together(self):
        sid = self.new_sandbox(metadata={"t": "sandbox-log-cap"})
        tok = self.token(sid)
        n = 100000  # ~590 KB each: under the 1 MiB per-command cap
        full = numbered(n)
        self.assertLess(len(full), self.CAP)
        ids = []
        for _ in range(12):  # ~7 MB together
            c = self.start(sid, tok, cmd=["seq", "1", str(n)])
            self.assertEqual(self.command(sid, tok, c["command_id"], wait=True)["exit_code"], 0)
            ids.append(c["command_id"])
        held = self.log_bytes(sid)
        self.assertLessEqual(held, self.CAP + 300 * 1024, "the sandbox's logs hold %d bytes with a 1 MiB cap" % held)
        # The newest command is whole; the oldest was dropped, said so, and still ends.
        newest = self.all_events(sid, tok, ids[-1])
        self.assertNotIn("dropped", [e["event"] for e in newest])
        self.assertEqual(output(newest), full)
        oldest = self.all_events(sid, tok, ids[0])
        self.assertEqual(oldest[0]["event"], "dropped", oldest[:2])
        self.assertEqual(json.loads(oldest[0]["data"])["first_seq"], 1)
        self.assertEqual(exit_data(oldest)["exit_code"], 0)
        self.assertTrue(full.endswith(output(oldest)))
        # Another sandbox's logs are its own: untouched by this one's cap.
        other = self.new_sandbox(metadata={"t": "sandbox-log-cap-other"})
        otok = self.token(other)
        _, events, _ = self.run_command(other, otok, cmd=["seq", "1", str(n)])
        self.assertEqual(output(events), full)


class Restart(DataPlaneClient, FreshSpacedTestCase):

    def test_stream_continues_across_kill9(self):
        sp = self.spaced
        sid = sp.create(metadata={"t": "data-plane-restart"})
        tok = self.token(sid)
        n = 120  # one line every 50 ms: about 6 s
        c = self.start(sid, tok, shell=counting_script(n, 0.05))
        cid = c["command_id"]
        es = self.stream(sid, tok, cid)
        head = self.read_until(es, lambda evs: len(evs) >= 5, "the first lines")
        sp.kill9()
        es.close()
        time.sleep(1)  # the command goes on printing while spaced is down
        sp.start()
        # The token was kept (hashed) across the restart.
        tail = self.all_events(sid, tok, cid, last_event_id=head[-1]["id"], timeout=180)
        union = head + tail
        assert_consecutive(self, union)
        self.assertEqual(output(union), numbered(n), "lines lost or repeated across the restart")
        self.assertEqual(exit_data(union)["exit_code"], 0)
        done = self.command(sid, tok, cid, wait=True)
        self.assertEqual((done["state"], done["exit_code"]), ("exited", 0))
        self.assertEqual(self.all_events(sid, tok, cid), union)

    def test_heavy_output_across_kill9(self):
        """kill -9 twice while a command writes as fast as it can: no byte lost, none twice."""
        sp = self.spaced
        sid = sp.create(metadata={"t": "data-plane-restart-heavy"})
        tok = self.token(sid)
        n = 1500000  # about 10 MB
        c = self.start(sid, tok, cmd=["seq", "1", str(n)])
        cid = c["command_id"]
        got = []
        for _ in range(2):
            es = self.stream(sid, tok, cid, last_event_id=got[-1]["id"] if got else None, timeout=180)
            got += self.read_until(es, lambda evs: len(evs) >= 20, "some output")
            sp.kill9()
            es.close()
            sp.start()
        got += self.all_events(sid, tok, cid, last_event_id=got[-1]["id"], timeout=180)
        assert_consecutive(self, got)
        self.assertEqual(exit_data(got)["exit_code"], 0)
        self.assertEqual(output(got), numbered(n))

    def test_command_finishes_while_spaced_is_down(self):
        sp = self.spaced
        sid = sp.create(metadata={"t": "data-plane-restart-finish"})
        tok = self.token(sid)
        c = self.start(sid, tok, shell="echo started; read go; seq 1 2000; echo done >&2; exit 7", stdin=True)
        cid = c["command_id"]
        es = self.stream(sid, tok, cid)
        self.read_until(es, lambda evs: output(evs) == b"started\n", "the first line")
        self.stdin(sid, tok, cid, raw=b"go\n")
        sp.kill9()
        es.close()
        time.sleep(1)  # most likely it ends while spaced is down; either way nothing may be lost
        sp.start()
        events = self.all_events(sid, tok, cid, timeout=180)
        assert_consecutive(self, events)
        self.assertEqual(output(events, ("stdout",)), b"started\n" + numbered(2000))
        self.assertEqual(output(events, ("stderr",)), b"done\n")
        self.assertEqual(exit_data(events)["exit_code"], 7)
        done = self.command(sid, tok, cid, wait=True)
        self.assertEqual((done["state"], done["exit_code"]), ("exited", 7))

    def test_stream_continues_across_sigterm_restart(self):
        sp = self.spaced
        sid = sp.create(metadata={"t": "data-plane-restart-term"})
        tok = self.token(sid)
        c = self.start(sid, tok, shell=counting_script(60, 0.05))
        cid = c["command_id"]
        es = self.stream(sid, tok, cid)
        head = self.read_until(es, lambda evs: len(evs) >= 3, "the first lines")
        self.assertEqual(sp.stop(), 0)
        rest = []
        try:
            for ev in es:  # what was on its way may still arrive; then the stream ends
                rest.append(ev)
        except OSError:
            pass
        es.close()
        sp.start()
        got = head + rest
        self.assertNotIn("exit", [e["event"] for e in rest[:-1]])
        if not got or got[-1]["event"] != "exit":
            got += self.all_events(sid, tok, cid, last_event_id=got[-1]["id"], timeout=180)
        assert_consecutive(self, got)
        self.assertEqual(output(got), numbered(60))
        self.assertEqual(exit_data(got)["exit_code"], 0)

    def test_paused_sandbox_across_kill9(self):
        """spaced restarts while the sandbox is frozen: after resume its command goes on, whole."""
        sp = self.spaced
        sid = sp.create(metadata={"t": "data-plane-restart-paused"})
        tok = self.token(sid)
        c = self.start(sid, tok, shell="echo 1; read go; i=2; while [ $i -le 40 ]; do echo $i; i=$((i+1)); done",
                       stdin=True)
        cid = c["command_id"]
        es = self.stream(sid, tok, cid)
        head = [es.next()]
        sp.action(sid, "pause")
        sp.kill9()
        es.close()
        sp.start()
        self.assertEqual(sp.state(sid), "paused")
        time.sleep(2)  # spaced tries its channel to the frozen agent meanwhile
        self.assertEqual(self.command(sid, tok, cid)["state"], "running")
        sp.action(sid, "resume")
        self.stdin(sid, tok, cid, raw=b"go\n")
        got = head + self.all_events(sid, tok, cid, last_event_id=head[-1]["id"], timeout=180)
        assert_consecutive(self, got)
        self.assertEqual(output(got), numbered(40))
        self.assertEqual(exit_data(got)["exit_code"], 0)

    def test_idle_command_survives_kill9(self):
        """A command waiting for stdin keeps its input channel across a restart."""
        sp = self.spaced
        sid = sp.create(metadata={"t": "data-plane-restart-stdin"})
        tok = self.token(sid)
        c = self.start(sid, tok, cmd=["cat"], stdin=True)
        cid = c["command_id"]
        self.stdin(sid, tok, cid, raw=b"one\n")
        es = self.stream(sid, tok, cid)
        self.read_until(es, lambda evs: output(evs) == b"one\n", "the first echo")
        sp.kill9()
        es.close()
        sp.start()
        self.assertEqual(self.command(sid, tok, cid)["state"], "running")
        self.stdin(sid, tok, cid, raw=b"two\n")
        self.close_stdin(sid, tok, cid)
        events = self.all_events(sid, tok, cid)
        assert_consecutive(self, events)
        self.assertEqual(output(events), b"one\ntwo\n")
        self.assertEqual(exit_data(events)["exit_code"], 0)


if __name__ == "__main__":
    unittest.main()
