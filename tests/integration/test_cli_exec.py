"""`space exec` as docker users expect it: -t with a stdin that is not a terminal, EOF on stdin,
an interactive shell and Ctrl-C under a pseudo-terminal (python's pty module), and signals to
the CLI passed on to the remote process group, the CLI ending with the command's exit code."""

import os
import pty
import select
import signal
import subprocess
import time
import unittest

from spaced_harness import SPACE_CLI, SpacedTestCase


def cli_env(spaced):
    e = dict(os.environ)
    e["SPACE_URL"] = spaced.url
    e["SPACE_API_KEY"] = spaced.key
    e["SPACE_STATE_DIR"] = os.path.join(spaced.tmp, "nonexistent")
    return e


class Pty:
    """The CLI on the slave side of a new pseudo-terminal; the test holds the master."""

    def __init__(self, env, *args):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([SPACE_CLI] + list(args), stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.seen = b""

    def expect(self, needle, timeout=30):
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("did not see %r within %ds; saw %r" % (needle, timeout, self.seen))
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the CLI closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError("the terminal closed before %r; saw %r" % (needle, self.seen))
                self.seen += chunk
        return self.seen

    def send(self, data):
        os.write(self.master, data)

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


class CliExec(SpacedTestCase):

    def setUp(self):
        self.sid = self.new_sandbox()
        self.env = cli_env(self.spaced)

    def run_cli(self, *args, input=None, timeout=60):
        return subprocess.run([SPACE_CLI] + list(args), input=input, capture_output=True, env=self.env,
                              timeout=timeout)

    def test_tty_with_piped_stdin_runs_without_a_terminal(self):
        # `echo | space exec -it ID -- sh` used to wait forever on a remote terminal.
        t0 = time.monotonic()
        r = self.run_cli("exec", "-it", self.sid, "--", "sh", input=b"echo hi; exit 3\n", timeout=60)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(r.stdout, b"hi\n")
        self.assertIn(b"not a terminal", r.stderr)
        # and an empty stdin is an EOF, not a hang
        r = self.run_cli("exec", "-it", self.sid, "--", "sh", input=b"", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # -t alone with stdin not a terminal: the same (no remote terminal), output exact
        r = self.run_cli("exec", "-t", self.sid, "--", "sh", "-c", "printf 'a\\nb'; [ -t 0 ] || echo no-tty",
                         input=b"", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"a\nbno-tty\n")

    def test_stdin_eof_is_passed_on(self):
        r = self.run_cli("exec", "-i", self.sid, "--", "sh", "-c", "cat; echo done", input=b"abc", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"abcdone\n")

    def test_interactive_shell_on_a_terminal(self):
        p = Pty(self.env, "exec", "-it", self.sid, "--", "sh")
        try:
            p.send(b"tty; echo $((6*7))x\r")
            p.expect(b"42x")
            self.assertIn(b"/dev/pts/", p.seen)
            p.send(b"exit 5\r")
            self.assertEqual(p.wait(), 5, p.seen)
        finally:
            p.close()

    def test_ctrl_c_on_a_terminal_reaches_the_command(self):
        p = Pty(self.env, "exec", "-it", self.sid, "--", "sh", "-c",
                "trap 'echo trapped; exit 9' INT; echo ready; while :; do sleep 1; done")
        try:
            p.expect(b"ready")
            p.send(b"\x03")
            p.expect(b"trapped")
            self.assertEqual(p.wait(), 9, p.seen)
        finally:
            p.close()

    def remote_sleeps(self, marker):
        r = self.run_cli("exec", self.sid, "--", "sh", "-c",
                         "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
        # one argv per process, NUL-separated: "sleep N " is the sleep itself, not the shell
        return r.stdout.decode(errors="replace").count(marker)

    def test_signals_go_to_the_remote_process_group(self):
        for sig, seconds in ((signal.SIGTERM, 1001), (signal.SIGHUP, 1002), (signal.SIGINT, 1003)):
            with self.subTest(sig=sig.name):
                proc = subprocess.Popen([SPACE_CLI, "exec", self.sid, "--", "sh", "-c",
                                         "echo ready; sleep %d; echo not-reached" % seconds],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=self.env)
                try:
                    self.assertEqual(proc.stdout.readline(), b"ready\n")
                    self.assertEqual(self.remote_sleeps("sleep %d " % seconds), 1)
                    proc.send_signal(sig)
                    rc = proc.wait(timeout=30)
                    rest = proc.stdout.read()
                finally:
                    if proc.poll() is None:
                        proc.kill()
                    proc.wait()
                    proc.stdout.close()
                    proc.stderr.close()
                self.assertEqual(rc, 128 + sig, "exit status after %s" % sig.name)
                self.assertEqual(rest, b"")
                # the sleep (not only the shell) got it: nothing of the command is left
                self.assertEqual(self.remote_sleeps("sleep %d " % seconds), 0)

    def test_cli_waits_for_a_command_that_handles_the_signal(self):
        proc = subprocess.Popen([SPACE_CLI, "exec", self.sid, "--", "sh", "-c",
                                 "trap 'echo cleaning; sleep 1; echo cleaned; exit 4' TERM; echo ready; "
                                 "while :; do sleep 1; done"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        try:
            self.assertEqual(proc.stdout.readline(), b"ready\n")
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=30)
            self.assertEqual(proc.stdout.read(), b"cleaning\ncleaned\n")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.assertEqual(rc, 4)


if __name__ == "__main__":
    unittest.main()
