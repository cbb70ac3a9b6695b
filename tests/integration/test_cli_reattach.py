"""`space exec` across restarts of spaced (soft and kill -9): the output resumes with
Last-Event-ID, nothing printed twice, nothing lost, the exit code kept; when spaced does not
come back in time the CLI names the command and how to reattach; `space logs [-f]` and
`space attach` get back to any streamed command."""

import os
import re
import subprocess
import time
import unittest

from spaced_harness import SPACE_CLI, SpacedTestCase

LINES = 40


def expected_lines(n=LINES):
    return b"".join(b"line%d\n" % i for i in range(1, n + 1))


# one line every 0.1 s, then an exit code the test can tell apart
COUNTER = "i=1; while [ $i -le %d ]; do echo line$i; i=$((i+1)); sleep 0.1; done; echo err >&2; exit 6" % LINES


class CliReattach(SpacedTestCase):

    def setUp(self):
        if not self.spaced.alive():
            self.spaced.start()
        self.sid = self.new_sandbox()

    def env(self, **extra):
        e = dict(os.environ)
        e["SPACE_URL"] = self.spaced.url
        e["SPACE_API_KEY"] = self.spaced.key
        e["SPACE_STATE_DIR"] = os.path.join(self.spaced.tmp, "nonexistent")
        e.update(extra)
        return e

    def popen(self, *args, env=None):
        proc = subprocess.Popen([SPACE_CLI] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env or self.env())
        self.addCleanup(self.reap, proc)
        return proc

    def reap(self, proc):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()

    def cli(self, *args, env=None, input=None, timeout=120):
        return subprocess.run([SPACE_CLI] + list(args), capture_output=True, env=env or self.env(), input=input,
                              timeout=timeout)

    def read_until(self, proc, needle):
        got = b""
        while needle not in got:
            line = proc.stdout.readline()
            self.assertNotEqual(line, b"", "the CLI ended before %r: %r" % (needle, got))
            got += line
        return got

    def exec_across(self, restart):
        proc = self.popen("exec", self.sid, "--", "sh", "-c", COUNTER)
        head = self.read_until(proc, b"line5\n")
        restart()
        rest, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 6, err)
        self.assertEqual(head + rest, expected_lines())  # nothing twice, nothing lost
        self.assertIn(b"err\n", err)
        return err

    def test_exec_survives_a_restart(self):
        self.exec_across(lambda: self.spaced.restart())

    def test_exec_survives_kill_9_and_a_slow_start(self):
        def restart():
            self.spaced.kill9()
            time.sleep(3)  # refused connections for a while
            self.spaced.start()
        err = self.exec_across(restart)
        self.assertIn(b"trying again", err)

    def test_exec_started_while_spaced_is_away_is_refused_cleanly(self):
        # The retries are for a command already running: a new exec against a stopped
        # spaced says so once its time is up, and starts nothing.
        self.spaced.stop()
        t0 = time.monotonic()
        r = self.cli("exec", self.sid, "--", "true", env=self.env(SPACE_RETRY_S="1"))
        self.assertEqual(r.returncode, 1)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertIn(b"cannot reach spaced", r.stderr)

    def test_lost_for_good_prints_how_to_reattach_then_attach_and_logs(self):
        proc = self.popen("exec", self.sid, "--", "sh", "-c", COUNTER, env=self.env(SPACE_RETRY_S="2"))
        head = self.read_until(proc, b"line3\n")
        self.spaced.kill9()
        t0 = time.monotonic()
        rest, err = proc.communicate(timeout=60)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(proc.returncode, 1, err)
        text = err.decode(errors="replace")
        m = re.search(r"space attach (sb-[0-9a-f]+) (cmd-[0-9a-zA-Z-]+)", text)
        self.assertIsNotNone(m, text)
        self.assertEqual(m.group(1), self.sid)
        cid = m.group(2)
        self.assertIn("space logs -f %s %s" % (self.sid, cid), text)
        self.assertTrue(expected_lines().startswith(head + rest))

        self.spaced.start()
        # attach: the whole output from the start, the command's exit code
        r = self.cli("attach", self.sid, cid)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertEqual(r.stdout, expected_lines())
        self.assertEqual(r.stderr, b"err\n")
        # logs of an ended command: the same output, exit 0
        r = self.cli("logs", self.sid, cid)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, expected_lines(), b"err\n"))
        r = self.cli("logs", "-f", self.sid, cid)
        self.assertEqual((r.returncode, r.stdout), (0, expected_lines()))

    def start_command(self, cmd, stdin=False):
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, {"ttl_s": 600})
        self.assertEqual(status, 201, body)
        token = body["attach_token"]
        status, body = self.spaced.request("POST", "/v1/sandboxes/%s/commands" % self.sid,
                                           {"cmd": ["sh", "-c", cmd], "stdin": stdin}, key=token)
        self.assertEqual(status, 201, body)
        return body["command_id"]

    def test_logs_of_a_running_command(self):
        cid = self.start_command("echo one; echo two >&2; sleep 1000")
        time.sleep(1)
        t0 = time.monotonic()
        r = self.cli("logs", self.sid, cid, timeout=30)
        self.assertLess(time.monotonic() - t0, 15)  # what is there so far, then it returns
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, b"one\n", b"two\n"))
        # -f follows it: it ends when the command does (killed here through attach's signal)
        proc = self.popen("logs", "-f", self.sid, cid)
        self.assertEqual(proc.stdout.readline(), b"one\n")
        time.sleep(0.5)
        self.assertIsNone(proc.poll())
        att = self.popen("attach", self.sid, cid)
        self.assertEqual(att.stdout.readline(), b"one\n")
        att.send_signal(15)
        att.wait(timeout=30)
        self.assertEqual(att.returncode, 143)
        proc.wait(timeout=30)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout.read(), b"")

    def test_attach_with_stdin(self):
        cid = self.start_command("read a; echo got:$a; cat; echo eof", stdin=True)
        r = self.cli("attach", "-i", self.sid, cid, input=b"hello\nmore\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"got:hello\nmore\neof\n")
        # without -i, stdin is not taken (a script's /dev/null does not close the command's)
        cid = self.start_command("echo ready; read a; echo got:$a", stdin=True)
        proc = self.popen("attach", self.sid, cid)
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        time.sleep(1)
        self.assertIsNone(proc.poll())
        r = self.cli("attach", "-i", self.sid, cid, input=b"late\n")
        self.assertEqual(r.stdout, b"ready\ngot:late\n")
        proc.wait(timeout=30)
        self.assertEqual(proc.stdout.read(), b"got:late\n")

    def test_bad_ids(self):
        r = self.cli("logs", self.sid, "cmd-nosuch")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"not_found", r.stderr)
        r = self.cli("attach", self.sid, "cmd-nosuch")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"not_found", r.stderr)
        r = self.cli("logs", self.sid)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
