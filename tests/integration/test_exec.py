"""POST /v1/sandboxes/{id}/exec: exit codes, signals, stdin, env, cwd, timeout, output
truncation, binary output, NUL bytes, missing commands, concurrency."""

import base64
import threading
import unittest

from spaced_harness import SpacedTestCase

MIB = 1024 * 1024


class Exec(SpacedTestCase):
    runtime = {}  # {"runtime": "gvisor"} in test_gvisor.py's ExecOnGvisor

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.sid = cls.spaced.create(env={"FROM_CREATE": "c", "SHARED": "create", "PATH_EXTRA": "x"},
                                        metadata={"t": "exec"}, **cls.runtime)
        except Exception:
            cls.spaced.cleanup()
            raise

    def ex(self, **body):
        return self.spaced.exec(self.sid, **body)

    def test_exit_codes(self):
        for code in (0, 1, 7, 42, 255):
            r = self.ex(cmd=["sh", "-c", "exit %d" % code])
            self.assertEqual(r["exit_code"], code, r)
            self.assertIsNone(r["signal"])
            self.assertFalse(r["timed_out"])
        r = self.ex(shell="exit 3")
        self.assertEqual(r["exit_code"], 3)
        r = self.ex(cmd=["false"])
        self.assertEqual(r["exit_code"], 1)
        self.assertIsInstance(r["duration_ms"], (int, float))
        self.assertGreaterEqual(r["duration_ms"], 0)

    def test_user(self):
        r = self.ex(shell="id -u; id -g; echo $HOME; pwd", user="nobody")
        self.assertEqual(r["exit_code"], 0, r)
        uid, gid, home, cwd = r["stdout"].split("\n")[:4]
        self.assertEqual((uid, gid), ("65534", "65534"), r)
        # A user's default cwd is its home, or / when that does not exist (nobody's
        # /nonexistent).
        self.assertEqual(cwd, home if home != "/nonexistent" else "/", r)
        # A non-root user holds no capabilities, root keeps its set.
        r = self.ex(shell="grep CapEff /proc/self/status", user="65534")
        self.assertIn("0000000000000000", r["stdout"], r)
        r = self.ex(shell="id -u", user="root")
        self.assertEqual(r["stdout"], "0\n")
        st, body = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % self.sid, {"cmd": ["id"], "user": "no-such-user"})
        self.assertEqual(st, 400, body)
        st, body = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % self.sid, {"cmd": ["id"], "user": "-x"})
        self.assertEqual(st, 400, body)

    def test_signal(self):
        r = self.ex(shell="kill -TERM $$")
        self.assertEqual(r["signal"], 15, r)
        self.assertEqual(r["exit_code"], 128 + 15, r)
        r = self.ex(shell="kill -KILL $$")
        self.assertEqual(r["signal"], 9, r)
        self.assertEqual(r["exit_code"], 137, r)

    def test_stdout_stderr(self):
        r = self.ex(shell="echo out; echo err >&2; printf 'no newline'")
        self.assertEqual(r["stdout"], "out\nno newline")
        self.assertEqual(r["stderr"], "err\n")
        self.assertEqual(r["encoding"], "utf8")
        self.assertFalse(r["truncated"])
        r = self.ex(cmd=["echo", "a b", "c;d", "$HOME", "'q'"])
        self.assertEqual(r["stdout"], "a b c;d $HOME 'q'\n", "argv must not go through a shell")
        r = self.ex(cmd=["printf", "%s", "h\u00e9llo \u2603 \U0001F600"])
        self.assertEqual(r["stdout"], "h\u00e9llo \u2603 \U0001F600")

    def test_stdin(self):
        r = self.ex(cmd=["cat"], stdin="line1\nline2\n")
        self.assertEqual(r["stdout"], "line1\nline2\n")
        r = self.ex(cmd=["wc", "-c"], stdin="x" * 300000)
        self.assertEqual(r["stdout"].strip(), "300000")
        r = self.ex(cmd=["cat"], stdin="")
        self.assertEqual(r["stdout"], "")
        # No stdin: /dev/null, so cat ends at once
        r = self.ex(cmd=["cat"], timeout_s=10)
        self.assertFalse(r["timed_out"])
        self.assertEqual(r["stdout"], "")
        # Unicode stdin round-trips
        r = self.ex(cmd=["cat"], stdin="\u00e9\u2603")
        self.assertEqual(r["stdout"], "\u00e9\u2603")
        # A command that does not read its stdin does not block the exec
        r = self.ex(cmd=["true"], stdin="y" * 900000, timeout_s=20)
        self.assertFalse(r["timed_out"], r)
        self.assertEqual(r["exit_code"], 0)

    def test_stdin_with_nul(self):
        """A JSON string may carry U+0000; it must not be silently cut at the NUL."""
        status, r = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % self.sid,
                                        {"cmd": ["od", "-An", "-c"], "stdin": "a\u0000b"})
        if status == 400:
            return  # refusing is acceptable
        self.assertEqual(status, 200, r)
        self.assertEqual(r["stdout"].split(), ["a", "\\0", "b"], "stdin with a NUL was altered: %r" % r)

    def test_env(self):
        r = self.ex(shell="echo $FROM_CREATE $SHARED $FROM_EXEC; echo $PATH; echo $HOME")
        self.assertEqual(r["stdout"].splitlines()[0], "c create")
        self.assertIn("/bin", r["stdout"].splitlines()[1])
        self.assertEqual(r["stdout"].splitlines()[2], "/root")
        r = self.ex(shell="echo $FROM_CREATE $SHARED $FROM_EXEC", env={"SHARED": "exec", "FROM_EXEC": "e"})
        self.assertEqual(r["stdout"], "c exec e\n", "per-exec env must be merged over the sandbox env")
        r = self.ex(cmd=["env"], env={"WEIRD": "a=b c\nd"})
        self.assertIn("WEIRD=a=b c\nd", r["stdout"])
        # A per-exec env does not stick
        r = self.ex(shell="echo ${FROM_EXEC:-unset}")
        self.assertEqual(r["stdout"], "unset\n")

    def test_cwd(self):
        self.assertEqual(self.ex(cmd=["pwd"])["stdout"], "/\n")
        self.assertEqual(self.ex(cmd=["pwd"], cwd="/tmp")["stdout"], "/tmp\n")
        self.ex(shell="mkdir -p '/tmp/with space'")
        self.assertEqual(self.ex(cmd=["pwd"], cwd="/tmp/with space")["stdout"], "/tmp/with space\n")
        r = self.ex(cmd=["pwd"], cwd="/does/not/exist")
        self.assertEqual(r["exit_code"], 127, r)
        self.assertIn("/does/not/exist", r["stderr"])

    def test_missing_command(self):
        r = self.ex(cmd=["no-such-command-xyz"])
        self.assertEqual(r["exit_code"], 127, r)
        self.assertIn("no-such-command-xyz", r["stderr"])
        r = self.ex(cmd=["/bin/no/such"])
        self.assertEqual(r["exit_code"], 127, r)
        r = self.ex(shell="no-such-command-xyz")
        self.assertEqual(r["exit_code"], 127, r)
        # Not executable
        self.ex(shell="echo data > /tmp/notexec && chmod 644 /tmp/notexec")
        r = self.ex(cmd=["/tmp/notexec"])
        self.assertIn(r["exit_code"], (126, 127), r)

    def test_timeout(self):
        r = self.ex(cmd=["sleep", "30"], timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertEqual(r["signal"], 9, r)
        self.assertEqual(r["exit_code"], 137, r)
        self.assertLess(r["duration_ms"], 20000)
        # The whole process group goes: a child of the shell is killed too
        r = self.ex(shell="sleep 31 & sleep 32; echo never", timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertNotIn("never", r["stdout"])
        ps = self.ex(cmd=["ps"])["stdout"]
        self.assertNotIn("sleep 31", ps)
        self.assertNotIn("sleep 32", ps)
        # Output written before the timeout is kept
        r = self.ex(shell="echo before; sleep 30", timeout_s=1)
        self.assertTrue(r["timed_out"])
        self.assertEqual(r["stdout"], "before\n")

    def test_truncation(self):
        r = self.ex(shell="head -c 3000000 /dev/zero | tr '\\0' 'a'", timeout_s=60)
        self.assertTrue(r["truncated"], {k: v for k, v in r.items() if k not in ("stdout",)})
        self.assertEqual(len(r["stdout"]), MIB)
        self.assertEqual(set(r["stdout"]), {"a"})
        self.assertEqual(r["exit_code"], 0)
        # Exactly 1 MiB is not truncated
        r = self.ex(shell="head -c %d /dev/zero | tr '\\0' 'b'" % MIB, timeout_s=60)
        self.assertFalse(r["truncated"])
        self.assertEqual(len(r["stdout"]), MIB)
        # stderr is capped too
        r = self.ex(shell="head -c 2000000 /dev/zero | tr '\\0' 'c' >&2", timeout_s=60)
        self.assertTrue(r["truncated"])
        self.assertEqual(len(r["stderr"]), MIB)
        # A big producer does not block (the rest is drained and dropped)
        r = self.ex(shell="head -c 50000000 /dev/zero; echo done >&2", timeout_s=60)
        self.assertFalse(r["timed_out"])
        self.assertEqual(r["stderr"], "done\n")

    def test_binary_base64_round_trip(self):
        data = bytes(range(256)) * 64 + b"\x00\x00\xff\xfe\x80"
        b64 = base64.b64encode(data).decode()
        # Send the bytes in (as base64 text, decoded inside), get the raw bytes back as base64.
        r = self.ex(shell="base64 -d", stdin=b64, encoding="base64")
        self.assertEqual(r["encoding"], "base64")
        self.assertEqual(base64.b64decode(r["stdout"]), data)
        self.assertEqual(base64.b64decode(r["stderr"]), b"")
        # stderr in base64 too
        r = self.ex(shell="printf '\\377\\000\\001' >&2", encoding="base64")
        self.assertEqual(base64.b64decode(r["stderr"]), b"\xff\x00\x01")
        # Binary data hashed on both sides
        r = self.ex(shell="head -c 100000 /dev/urandom | tee /tmp/rand | md5sum; cat /tmp/rand", encoding="base64")
        out = base64.b64decode(r["stdout"])
        md5_line, payload = out.split(b"\n", 1)
        import hashlib
        self.assertEqual(hashlib.md5(payload).hexdigest(), md5_line.split()[0].decode())

    def test_nul_and_invalid_utf8(self):
        r = self.ex(shell="printf 'a\\000b\\000'", encoding="utf8")
        self.assertEqual(r["stdout"], "a\u0000b\u0000", r)
        r = self.ex(shell="printf 'a\\000b\\000'", encoding="base64")
        self.assertEqual(base64.b64decode(r["stdout"]), b"a\x00b\x00")
        # Invalid UTF-8 is replaced with U+FFFD in utf8 mode
        r = self.ex(shell="printf 'x\\377y'")
        self.assertEqual(r["stdout"], "x\ufffdy", r)

    def test_background_process_does_not_hold_exec(self):
        # The exec ends with its shell, not with the background sleep: it answers well
        # before the sleep would end (and before its own timeout), however loaded the host.
        r = self.ex(shell="sleep 300 & echo started", timeout_s=120)
        self.assertFalse(r["timed_out"], r)
        self.assertEqual(r["stdout"], "started\n")
        self.assertLess(r["duration_ms"], 100000)
        self.ex(shell="pkill sleep || killall sleep || true")

    def test_concurrent_execs(self):
        results = {}

        def one(i):
            results[i] = self.spaced.exec(self.sid, shell="sleep 1; echo %d" % i, timeout_s=60)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(sorted(results), list(range(6)))
        for i, r in results.items():
            self.assertEqual(r["stdout"], "%d\n" % i)
            self.assertEqual(r["exit_code"], 0)

    def test_files_persist_between_execs(self):
        self.ex(shell="echo hello > /root/state.txt")
        self.assertEqual(self.ex(cmd=["cat", "/root/state.txt"])["stdout"], "hello\n")
        # Writes anywhere in the rootfs work (it is the sandbox's own snapshot)
        r = self.ex(shell="echo x > /bin/newfile && cat /bin/newfile && rm /bin/newfile")
        self.assertEqual(r["stdout"], "x\n", r)

    def test_large_argv_and_shell(self):
        big = "x" * 100000
        r = self.ex(cmd=["sh", "-c", 'printf %s "$1" | wc -c', "sh", big])
        self.assertEqual(r["stdout"].strip(), "100000")
        r = self.ex(shell="echo " + "y" * 50000 + " | wc -c")
        self.assertEqual(r["stdout"].strip(), "50001")


if __name__ == "__main__":
    unittest.main()
