"""A hostile agent cannot push more through spaced than spaced's own caps (issue 10, Medium).

All agent output is untrusted: a sandbox's root may have taken its PID 1 over. These tests
run spaced with --agent pointing at tests/integration/agents/hostile_agent.c (built static
here), which answers HELLO honestly and then lies: 48 MiB of stdout for an exec capped at
1 MiB, a reply that trickles forever, a 64 MiB frame header with nothing behind it, a huge
ERROR message, a 40 MiB file entry. spaced must answer every one within its deadline, keep
at most the cap, say it truncated, and not grow its memory by what the agent sent."""

import http.client
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from spaced_harness import SpacedTestCase, proc_status, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
CAP = 1 << 20


def build_hostile_agent():
    out = os.path.join(tempfile.mkdtemp(prefix="hostile-agent-"), "hostile-agent")
    src = os.path.join(HERE, "agents", "hostile_agent.c")
    cc = shutil.which("musl-gcc") or shutil.which("cc")
    subprocess.run([cc, "-static", "-O1", "-Wall", "-Wextra", "-Werror", "-o", out, src], check=True)
    return out


HOSTILE = build_hostile_agent()


def vm_kb(pid, field):
    return int(proc_status(pid)[field].split()[0])


class HostileAgent(SpacedTestCase):
    spaced_kwargs = {"extra_args": ["--agent", HOSTILE, "--exec-output-cap", str(CAP)]}

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(os.path.dirname(HOSTILE), ignore_errors=True)

    def setUp(self):
        self.sid = self.new_sandbox(metadata={"t": "hostile"})
        # What spaced is made of before the attack: the high-water mark must not rise by
        # anything like what the agent sends.
        self.pid = self.spaced.proc.pid
        self.hwm_before = vm_kb(self.pid, "VmHWM")

    def assertMemoryBounded(self, what):
        grown_mib = (vm_kb(self.pid, "VmHWM") - self.hwm_before) / 1024
        self.assertLess(grown_mib, 16, "%s: spaced's peak RSS grew by %.1f MiB" % (what, grown_mib))

    def assertStillServes(self):
        r = self.spaced.exec(self.sid, cmd=["echo"])
        self.assertEqual(r["stdout"], "ok\n", r)
        self.assertEqual(self.spaced.request("GET", "/v1/health", key=None)[0], 200)

    def exec_timed(self, cmd, timeout_s=30):
        t0 = time.monotonic()
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % self.sid,
                                           {"cmd": cmd, "timeout_s": timeout_s, "encoding": "base64"}, timeout=120)
        return status, body, time.monotonic() - t0

    def test_flood_is_capped_and_flagged(self):
        status, body, _ = self.exec_timed(["flood", "48"])
        self.assertEqual(status, 200, body)
        import base64
        out = base64.b64decode(body["stdout"])
        self.assertLessEqual(len(out), CAP, "spaced passed on %d bytes for a 1 MiB cap" % len(out))
        self.assertEqual(len(out), CAP)
        self.assertTrue(body["truncated"], "the agent said nothing was truncated; spaced must know better")
        self.assertMemoryBounded("48 MiB exec")
        self.assertStillServes()

    def test_many_stdout_fields_are_capped_together(self):
        status, body, _ = self.exec_timed(["fields", "8"])
        self.assertEqual(status, 200, body)
        import base64
        self.assertEqual(len(base64.b64decode(body["stdout"])), CAP)
        self.assertTrue(body["truncated"])
        self.assertMemoryBounded("64 stdout fields")

    def test_trickling_reply_meets_the_deadline(self):
        # The command's timeout is 2 s; spaced waits at most that plus its 10 s grace for
        # the whole reply, however slowly the bytes come.
        status, body, took = self.exec_timed(["trickle"], timeout_s=2)
        self.assertNotEqual(status, 200, body)
        self.assertLess(took, 25, "a trickling agent held the exec for %.0f s" % took)
        self.assertIn("error", body)
        self.assertStillServes()

    def test_frame_header_without_its_body(self):
        status, body, took = self.exec_timed(["hugeframe"], timeout_s=2)
        # The rest never comes: the deadline passes, which is the caller's 504, not a 500.
        self.assertEqual(status, 504, body)
        self.assertEqual(body["error"]["code"], "timeout", body)
        self.assertLess(took, 25)
        self.assertMemoryBounded("a 64 MiB frame header")
        self.assertStillServes()

    def test_huge_error_message(self):
        status, body, _ = self.exec_timed(["bigerror", "40"])
        self.assertNotEqual(status, 200, body)
        self.assertLess(len(str(body)), 64 << 10, "the agent's error message came through whole")
        self.assertMemoryBounded("a 40 MiB error")
        self.assertStillServes()

    def test_huge_file_entry(self):
        status, body = self.spaced.request("GET", "/v1/sandboxes/%s/files/stat?path=/" % self.sid)
        self.assertNotEqual(status, 200, body)
        self.assertIn("error", body)
        self.assertMemoryBounded("a 40 MiB file entry")
        self.assertStillServes()

    def download_lie(self, path):
        """GET a file whose bytes the agent lies about: the body must stop short of the size
        announced (the client sees it incomplete), spaced must stay small and serving."""
        status, session = self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, {})
        self.assertIn(status, (200, 201), session)
        conn = http.client.HTTPConnection("127.0.0.1", self.spaced.port, timeout=120)
        t0 = time.monotonic()
        conn.request("GET", "/v1/sandboxes/%s/files?path=%s" % (self.sid, path),
                     headers={"Authorization": "Bearer " + session["attach_token"]})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertEqual(int(resp.getheader("Content-Length")), (1 << 20) + 100)
        got = b""
        try:
            while True:
                piece = resp.read(65536)
                if not piece:
                    break
                got += piece
        except http.client.IncompleteRead as e:
            got += e.partial
        conn.close()
        self.assertLess(len(got), (1 << 20) + 100, "the body was not cut")
        self.assertLess(time.monotonic() - t0, 20, "the lie was not caught at once")
        self.assertMemoryBounded("a download from a lying agent (%s)" % path)
        wait_for(lambda: "path=%s error=" % path in self.spaced.logs(tail=400), timeout=10, what="the reason in the log")
        self.assertStillServes()
        return got

    def test_download_past_the_range_is_cut(self):
        got = self.download_lie("/oversend")
        self.assertLessEqual(len(got), 1 << 20)  # never a byte past what the agent may send

    def test_download_frame_of_the_wrong_type_is_cut(self):
        self.download_lie("/wrongtype")

    def test_download_frame_over_the_bound_is_cut(self):
        self.download_lie("/hugeframe")

    def test_download_cut_short_by_an_error(self):
        got = self.download_lie("/short")
        self.assertLessEqual(len(got), ((1 << 20) + 100) // 2)

    def test_job_events_for_commands_spaced_never_started(self):
        """Starting a command makes spaced subscribe to the agent's job events; the hostile
        agent answers with output for 200 made-up jobs (64 KiB each) and one 8 MiB event.
        spaced keeps no log for any of them and its memory does not grow by them."""
        sp = self.spaced
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % self.sid, {}, expect=201)
        status, body = sp.request("POST", "/v1/sandboxes/%s/commands" % self.sid, {"cmd": ["true"]},
                                  key=s["attach_token"])
        self.assertNotEqual(status, 201, body)  # the hostile agent refuses to start jobs
        time.sleep(3)  # the channel has had the flood
        root = os.path.join(sp.state_dir, "command-logs", self.sid)
        fakes = [d for d in (os.listdir(root) if os.path.isdir(root) else []) if d.startswith("fake-")]
        self.assertEqual(fakes, [], "spaced made logs for jobs it never started")
        self.assertMemoryBounded("job events for unknown jobs")
        self.assertStillServes()


if __name__ == "__main__":
    unittest.main()
