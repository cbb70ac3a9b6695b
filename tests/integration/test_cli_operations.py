"""`space op wait|cancel` against a real spaced, on template builds that take a while: wait
follows an operation to its end (exit 0 / 1 with its error), Ctrl-C stops the waiting and
leaves the operation running (and says so), --timeout, cancel; `space template build NAME`
of a preset shows the build log."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from spaced_harness import SPACE_CLI, SpacedTestCase


class CliOperations(SpacedTestCase):

    def env(self):
        e = dict(os.environ)
        e["SPACE_URL"] = self.spaced.url
        e["SPACE_API_KEY"] = self.spaced.key
        e["SPACE_STATE_DIR"] = os.path.join(self.spaced.tmp, "nonexistent")
        return e

    def cli(self, *args, timeout=180):
        return subprocess.run([SPACE_CLI] + list(args), capture_output=True, env=self.env(), timeout=timeout)

    def build(self, name, seconds):
        """Starts a build that takes about `seconds`; returns its operation id."""
        ctx = tempfile.mkdtemp(prefix="space-opw-")
        self.addCleanup(shutil.rmtree, ctx, True)
        with open(os.path.join(ctx, "Spacefile"), "w") as f:
            f.write("FROM busybox\nRUN echo start-%s; sleep %d; echo done-%s\n" % (name, seconds, name))
        r = self.cli("template", "build", "--no-follow", "-t", name, ctx)
        self.assertEqual(r.returncode, 0, r.stderr)
        op = r.stdout.decode().strip()
        self.assertRegex(op, r"^op-[0-9a-f]+$")
        return op

    def op_state(self, op):
        status, body = self.spaced.request("GET", "/v1/operations/" + op)
        self.assertEqual(status, 200, body)
        return body["state"]

    def test_wait_to_the_end(self):
        op = self.build("opwait1", 3)
        t0 = time.monotonic()
        r = self.cli("op", "wait", op)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"succeeded\n")
        self.assertGreater(time.monotonic() - t0, 1.5)
        self.assertEqual(self.op_state(op), "succeeded")
        # an ended operation: at once
        r = self.cli("op", "wait", op)
        self.assertEqual((r.returncode, r.stdout), (0, b"succeeded\n"))

    def test_ctrl_c_leaves_it_running(self):
        op = self.build("opwait2", 8)
        proc = subprocess.Popen([SPACE_CLI, "op", "wait", op], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self.env())
        try:
            time.sleep(1.5)
            self.assertIsNone(proc.poll())
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 130)
        self.assertEqual(out, b"")
        self.assertIn(b"stopped waiting; operation %s goes on" % op.encode(), err)
        self.assertIn(self.op_state(op), ("pending", "running"))
        r = self.cli("op", "wait", "--timeout", "1", op)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"still", r.stderr)
        self.assertIn(b"space op wait " + op.encode(), r.stderr)
        r = self.cli("op", "wait", op)
        self.assertEqual((r.returncode, r.stdout), (0, b"succeeded\n"), r.stderr)

    def test_cancel(self):
        op = self.build("opcancel", 60)
        time.sleep(1)
        r = self.cli("op", "cancel", op)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(r.stdout.strip(), (b"pending", b"running", b"failed"))
        t0 = time.monotonic()
        r = self.cli("op", "wait", op)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"failed\n")
        self.assertIn(b"cancelled", r.stderr)
        # cancelling what has ended: the API's refusal, as a CLI error
        r = self.cli("op", "cancel", op)
        self.assertEqual(r.returncode, 1)

    def test_ctrl_c_cancels_a_followed_build(self):
        ctx = tempfile.mkdtemp(prefix="space-opw-")
        self.addCleanup(shutil.rmtree, ctx, True)
        with open(os.path.join(ctx, "Spacefile"), "w") as f:
            f.write("FROM busybox\nRUN echo start-followed; sleep 60; echo done-followed\n")
        proc = subprocess.Popen([SPACE_CLI, "template", "build", "-t", "followed:1", ctx], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env())
        try:
            line = b""
            deadline = time.monotonic() + 60
            while b"start-followed" not in line and time.monotonic() < deadline:
                line += proc.stdout.readline()
            self.assertIn(b"start-followed", line)
            # At the step's first output: a cancel at any moment of a step reaches its processes
            # (test_templates.py, test_cancel_at_any_moment_of_a_step).
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn(b"build cancelled", err)
        op = err.decode().split("(operation ")[1].split(")")[0]
        for _ in range(300):
            if self.op_state(op) not in ("pending", "running"):
                break
            time.sleep(0.1)
        self.assertEqual(self.op_state(op), "failed")
        status, body = self.spaced.request("GET", "/v1/operations/" + op)
        self.assertEqual(body["error"]["code"], "cancelled", body)
        status, _ = self.spaced.request("GET", "/v1/templates/followed:1")
        self.assertEqual(status, 404)

    def test_bad_input(self):
        r = self.cli("op", "wait", "op-00000000deadbeef")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"not_found", r.stderr)
        for args in (["op", "wait"], ["op", "wait", "--timeout", "0", "op-1"], ["op", "cancel"]):
            self.assertEqual(self.cli(*args).returncode, 2, args)


class CliPresetBuild(SpacedTestCase):
    """`space template build NAME` of a preset or a built-in shows its build log (presets from a test dir)."""

    @classmethod
    def setUpClass(cls):
        cls.presets = tempfile.mkdtemp(prefix="space-presets-")
        with open(os.path.join(cls.presets, "quick.Spacefile"), "w") as f:
            f.write("FROM busybox\nRUN echo preset-step-one; sleep 1; echo preset-step-two\n")
        with open(os.path.join(cls.presets, "broken.Spacefile"), "w") as f:
            f.write("FROM busybox\nRUN echo about-to-fail; exit 3\n")
        cls.spaced_kwargs = {"extra_args": ["--presets-dir", cls.presets]}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.presets, True)

    def test_preset_build_shows_its_log(self):
        r = self.spaced.cli("template", "build", "quick")
        text = r.stdout.decode()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(text.index("preset-step-one"), text.index("preset-step-two"))
        self.assertTrue(text.rstrip().endswith("quick"), text)
        self.assertRegex(self.spaced.cli("template", "ls").stdout.decode(), r"(?m)^quick\s+ready")
        r = self.spaced.cli("template", "build", "broken")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"about-to-fail", r.stdout)
        self.assertIn(b"build of broken failed", r.stderr)
        # a built-in shows its builder's log too, then its name; --no-wait the operation id
        r = self.spaced.cli("template", "build", "busybox")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.decode(), r"^busybox: spaced's own builder\nbusybox built in [0-9.]+s\nbusybox\n$")
        r = self.spaced.cli("template", "build", "quick", "--no-wait")
        self.assertRegex(r.stdout.decode(), r"^op-[0-9a-f]+\n$")
        op = r.stdout.decode().strip()
        self.assertEqual(self.spaced.cli("op", "wait", op).stdout, b"succeeded\n")


if __name__ == "__main__":
    unittest.main()
