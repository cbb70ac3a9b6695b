"""The `space` CLI against a real spaced: sandbox create/ls/get/stop/start/pause/resume/rm,
exec (exit code, stdout/stderr pass-through, stdin, env, binary output), template ls,
key create/ls/rm, op get/ls, --json, errors and exit statuses."""

import json
import os
import re
import unittest

from spaced_harness import SpacedTestCase


def out(r):
    return r.stdout.decode(errors="replace")


def err(r):
    return r.stderr.decode(errors="replace")


class Cli(SpacedTestCase):

    def space(self, *args, ok=True, **kw):
        r = self.spaced.cli(*args, **kw)
        if ok:
            self.assertEqual(r.returncode, 0, "space %s -> %d\nstdout: %s\nstderr: %s" % (" ".join(args), r.returncode, out(r), err(r)))
        return r

    def create(self, *flags):
        r = self.space("sandbox", "create", *flags)
        sid = out(r).strip()
        self.assertRegex(sid, r"^sb-[0-9a-f]{16}$", "create printed %r" % out(r))
        self.spaced.known_ids.add(sid)
        self.addCleanup(self._destroy_quietly, sid)
        return sid

    def test_health_and_version(self):
        self.assertEqual(out(self.space("health")).strip(), "ok")
        r = self.space("version")
        self.assertIn("0.1.0", out(r))
        self.assertIn("namespaces", out(r))
        r = self.space("--json", "version")
        self.assertEqual(json.loads(out(r))["api"], "v1")
        r = self.space("--version")
        self.assertIn("0.1.0", out(r))

    def test_sandbox_lifecycle(self):
        sid = self.create("--memory", "128", "--pids", "64", "--cpus", "0.5", "--env", "A=1", "--env", "B=two words",
                          "--meta", "owner=cli")
        sb = self.spaced.get(sid)
        self.assertEqual(sb["state"], "running")
        self.assertEqual(sb["resources"]["memory_mb"], 128)
        self.assertEqual(sb["resources"]["pids"], 64)
        self.assertEqual(sb["resources"]["cpus"], 0.5)
        self.assertEqual(sb["env"], {"A": "1", "B": "two words"})
        self.assertEqual(sb["metadata"], {"owner": "cli"})

        # ls (text) shows it; ls with --json parses
        r = self.space("sandbox", "ls")
        self.assertRegex(out(r), r"(?m)^%s\s+running\s+busybox" % sid)
        r = self.space("--json", "sandbox", "ls")
        data = json.loads(out(r))
        self.assertIn(sid, [s["id"] for s in data["sandboxes"]])
        r = self.space("sandbox", "ls", "--meta", "owner=cli")
        self.assertIn(sid, out(r))
        r = self.space("sandbox", "ls", "--meta", "owner=nobody")
        self.assertNotIn(sid, out(r))
        r = self.space("sandbox", "ls", "--state", "stopped")
        self.assertNotIn(sid, out(r))

        r = self.space("sandbox", "get", sid)
        self.assertRegex(out(r), r"(?m)^id:\s+%s$" % sid)
        self.assertRegex(out(r), r"(?m)^state:\s+running$")
        r = self.space("--json", "sandbox", "get", sid)
        self.assertEqual(json.loads(out(r))["id"], sid)

        # stop / start keep files
        self.space("exec", sid, "--", "sh", "-c", "echo kept > /root/f")
        r = self.space("sandbox", "stop", sid)
        self.assertEqual(out(r).strip(), "stopped")
        self.assertEqual(self.spaced.state(sid), "stopped")
        r = self.space("sandbox", "start", sid)
        self.assertEqual(out(r).strip(), "running")
        self.assertEqual(out(self.space("exec", sid, "--", "cat", "/root/f")), "kept\n")
        # pause / resume
        self.assertEqual(out(self.space("sandbox", "pause", sid)).strip(), "paused")
        r = self.space("exec", sid, "--", "true", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("invalid_state", err(r))
        self.assertEqual(out(self.space("sandbox", "resume", sid)).strip(), "running")
        # Wrong state: exit 1 with the API's code
        r = self.space("sandbox", "resume", sid, ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("invalid_state", err(r))
        # rm
        r = self.space("sandbox", "rm", sid)
        self.assertEqual(out(r).strip(), "destroyed")
        self.assertEqual(self.spaced.state(sid), "destroyed")
        self.assertEqual(self.spaced.leaks(sid), [])

    def test_sandbox_ls_json_after_command(self):
        """Issue 2 names `space sandbox ls --json` (flag after the command)."""
        sid = self.create()
        r = self.space("sandbox", "ls", "--json", ok=False)
        self.assertEqual(r.returncode, 0, "`space sandbox ls --json` refused: %s" % err(r))
        self.assertIn(sid, [s["id"] for s in json.loads(out(r))["sandboxes"]])

    def test_no_wait(self):
        r = self.space("sandbox", "create", "--no-wait")
        sid = out(r).strip()
        self.assertRegex(sid, r"^sb-[0-9a-f]{16}$")
        self.spaced.known_ids.add(sid)
        self.addCleanup(self._destroy_quietly, sid)
        self.spaced.wait_state(sid, "running", timeout=30)
        r = self.space("sandbox", "stop", sid, "--no-wait")
        op = out(r).strip()
        self.assertRegex(op, r"^op-[0-9a-f]{16}$")
        self.spaced.wait_state(sid, "stopped", timeout=30)
        r = self.space("op", "get", op)
        self.assertRegex(out(r), r"(?m)^id:\s+%s$" % op)
        self.assertRegex(out(r), r"(?m)^kind:\s+sandbox.stop$")
        self.assertRegex(out(r), r"(?m)^state:\s+succeeded$")
        r = self.space("--json", "op", "get", op)
        o = json.loads(out(r))
        self.assertEqual(o["target"], sid)
        self.assertIsNotNone(o["finished_at"])
        r = self.space("op", "ls", "--target", sid)
        lines = [line for line in out(r).splitlines()[1:] if line.strip()]
        self.assertEqual(len(lines), 2, out(r))
        self.assertTrue(lines[0].startswith(op), "newest first: %s" % out(r))
        r = self.space("--json", "op", "ls", "--target", sid)
        self.assertEqual({o["target"] for o in json.loads(out(r))["operations"]}, {sid})

    def test_exec(self):
        sid = self.create("--env", "FROM_CREATE=c")
        r = self.space("exec", sid, "--", "sh", "-c", "echo out; echo err >&2; exit 7", ok=False)
        self.assertEqual(r.returncode, 7)
        self.assertEqual(out(r), "out\n")
        self.assertEqual(err(r), "err\n")
        r = self.space("exec", sid, "--", "true")
        self.assertEqual(r.stdout, b"")
        r = self.space("exec", sid, "--", "sh", "-c", "kill -9 $$", ok=False)
        self.assertEqual(r.returncode, 137)
        r = self.space("exec", sid, "--", "no-such-cmd", ok=False)
        self.assertEqual(r.returncode, 127)
        # env, cwd, stdin
        r = self.space("exec", "--env", "X=from exec", "--cwd", "/tmp", sid, "--", "sh", "-c", 'echo "$FROM_CREATE $X"; pwd')
        self.assertEqual(out(r), "c from exec\n/tmp\n")
        r = self.space("exec", "--stdin", sid, "--", "wc", "-c", input="hello\n")
        self.assertEqual(out(r).strip(), "6")
        # Binary output is passed through byte for byte
        r = self.space("exec", sid, "--", "sh", "-c", "printf '\\000\\001\\377\\376abc'")
        self.assertEqual(r.stdout, b"\x00\x01\xff\xfeabc")
        # Timeout: exit 137 and a note on stderr
        r = self.space("exec", "--timeout", "1", sid, "--", "sleep", "30", ok=False)
        self.assertEqual(r.returncode, 137)
        self.assertRegex(err(r).lower(), r"time")
        # --json: the API answer, and the exit code still passes through
        r = self.space("--json", "exec", sid, "--", "sh", "-c", "echo j; exit 3", ok=False)
        self.assertEqual(r.returncode, 3)
        ans = json.loads(out(r))
        self.assertEqual(ans["exit_code"], 3)
        # Arguments are passed as argv, not re-split by a shell
        r = self.space("exec", sid, "--", "printf", "%s|", "a b", "c;d", "$HOME")
        self.assertEqual(out(r), "a b|c;d|$HOME|")

    def test_exec_streams_all_output(self):
        # The streamed path has no per-exec cap: every byte arrives.
        sid = self.create()
        r = self.space("exec", sid, "--", "sh", "-c", "head -c 2000000 /dev/zero")
        self.assertEqual(len(r.stdout), 2000000)
        self.assertEqual(r.stdout.count(b"\0"), 2000000)

    def test_exec_json_truncated(self):
        # The one-shot path caps each stream and says so.
        sid = self.create()
        r = self.space("--json", "exec", sid, "--", "sh", "-c", "head -c 2000000 /dev/zero")
        self.assertTrue(json.loads(out(r))["truncated"])

    def test_exec_binary_stdin_streams(self):
        sid = self.create()
        data = b"\xff\x00\xfe" * 1000 + b"end"
        r = self.space("exec", "--stdin", sid, "--", "cat", input=data)
        self.assertEqual(r.stdout, data)

    def test_exec_json_stdin_refused_when_not_utf8(self):
        sid = self.create()
        r = self.space("--json", "exec", "--stdin", sid, "--", "cat", input=b"\xff\x00\xfe", ok=False)
        self.assertIn(r.returncode, (1, 2), "binary stdin should be refused before sending: %s" % err(r))
        self.assertIn("stdin", err(r))
        self.assertEqual(r.stdout, b"")
        r = self.space("--json", "exec", "--stdin", sid, "--", "cat", input=b"\xff\xfe not utf-8", ok=False)
        self.assertIn(r.returncode, (1, 2), "non-UTF-8 stdin should be refused before sending: %s" % err(r))

    def test_templates(self):
        r = self.space("template", "ls")
        self.assertRegex(out(r), r"(?m)^busybox\s+ready")
        r = self.space("--json", "template", "ls")
        names = [t["name"] for t in json.loads(out(r))["templates"]]
        self.assertIn("busybox", names)
        r = self.space("template", "get", "busybox")
        self.assertRegex(out(r), r"(?m)^name:\s+busybox$")
        r = self.space("template", "get", "nope", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not_found", err(r))

    def test_keys(self):
        r = self.space("key", "create", "cli-key")
        text = out(r)
        kid = re.search(r"(?m)^id:\s+(key-[0-9a-f]+)$", text).group(1)
        secret = re.search(r"(?m)^secret:\s+(space_[0-9a-f]{40})$", text).group(1)
        r = self.space("key", "ls")
        self.assertIn(kid, out(r))
        self.assertIn("cli-key", out(r))
        self.assertNotIn(secret, out(r))
        r = self.space("--json", "key", "ls")
        self.assertIn(kid, [k["id"] for k in json.loads(out(r))["keys"]])
        # The new key works from the CLI (env var) and with --key
        r = self.spaced.cli("sandbox", "ls", key=secret)
        self.assertEqual(r.returncode, 0, err(r))
        r = self.spaced.cli("--key", secret, "sandbox", "ls", key=None)
        self.assertEqual(r.returncode, 0, err(r))
        r = self.space("key", "rm", kid)
        self.assertEqual(out(r).strip(), kid)
        r = self.spaced.cli("sandbox", "ls", key=secret)
        self.assertEqual(r.returncode, 1)
        self.assertIn("unauthorized", err(r))
        self.assertNotIn(secret, err(r) + out(r), "the key must never be printed")

    def test_errors_and_exit_statuses(self):
        # no key: only health works
        r = self.spaced.cli("health", key=None)
        self.assertEqual(r.returncode, 0)
        r = self.spaced.cli("sandbox", "ls", key=None)
        self.assertEqual(r.returncode, 1)
        self.assertIn("unauthorized", err(r))
        # unknown id
        r = self.space("sandbox", "get", "sb-0000000000000000", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not_found", err(r))
        # hostile ids are encoded, not walked
        r = self.space("sandbox", "get", "../../etc", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not_found", err(r))
        # usage errors: 2
        for args in (("bogus",), ("sandbox",), ("sandbox", "create", "--memory"), ("sandbox", "create", "--env", "NOEQUALS"),
                     ("exec",), ("sandbox", "stop")):
            r = self.space(*args, ok=False)
            self.assertEqual(r.returncode, 2, "space %s -> %d: %s" % (" ".join(args), r.returncode, err(r)))
        # API validation: 1 with the code
        r = self.space("sandbox", "create", "--memory", "1", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("invalid_request", err(r))
        r = self.space("sandbox", "create", "--on-timeout", "explode", ok=False)
        self.assertIn(r.returncode, (1, 2))
        # unreachable server
        r = self.spaced.cli("sandbox", "ls", env={"SPACE_URL": "http://127.0.0.1:1"}, url=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot reach", err(r))
        # Nothing was created by any of that
        self.assertEqual([s for s, st in self.spaced.list_ids().items() if st != "destroyed"
                          and s not in self.spaced.known_ids], [])

    def test_key_from_state_dir(self):
        """Without --key or SPACE_API_KEY the admin key file under $SPACE_STATE_DIR is used."""
        r = self.spaced.cli("sandbox", "ls", key=None, env={"SPACE_STATE_DIR": self.spaced.state_dir})
        self.assertEqual(r.returncode, 0, err(r))

    def test_url_flag(self):
        r = self.spaced.cli("--url", self.spaced.url, "sandbox", "ls", url=False)
        self.assertEqual(r.returncode, 0, err(r))


if __name__ == "__main__":
    unittest.main()
