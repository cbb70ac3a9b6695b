"""The exec watch (docs/governance.md, "What a command rule sees") against the real spaced:
in a project with command rules every execve of a command's process tree (v1 exec and
streamed commands; as root or as another user) is checked, so a denied executable stays
denied when a shell variable, a script file, busybox or a copy of it, or a symlink starts
it; a denied exec fails with EACCES, says why on the command's stderr and is an audit row;
a renamed copy of another binary is not caught (documented); allowed commands with many
execs still work; a project without command rules is not watched, nor is a gVisor sandbox
(its kernel cannot); a flood of execs is bounded; execs made while spaced is killed wait
and are decided by the next spaced."""
import json
import secrets
import time

from spaced_harness import SpacedTestCase
from test_data_plane import DataPlaneClient, exit_data, output


class ExecWatchTest(DataPlaneClient, SpacedTestCase):
    def policy(self, doc):
        status, body = self.spaced.request("POST", "/v1/policies", doc)
        self.assertEqual(status, 201, body)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/policies/" + body["id"])
        return body

    def run_script(self, sid, script, **spec):
        c, events, end = self.run_command(sid, self.token(sid), cmd=["sh", "-c", script], **spec)
        return c, output(events, ("stdout",)).decode(), output(events, ("stderr",)).decode(), end

    def audit_denials(self, cid, wait=10.0):
        deadline = time.monotonic() + wait
        while True:
            _, body = self.spaced.api("GET", "/v1/audit?action=command.exec_denied&target=%s&limit=1000" % cid, expect=200)
            rows = [r for r in body["audit"] if r.get("target") == cid]
            if rows or time.monotonic() > deadline:
                return rows
            time.sleep(0.2)

    def deny_wget(self):
        return self.policy({"name": "no-wget-" + secrets.token_hex(3), "rules": [
            {"id": "no-wget", "effect": "deny", "message": "no downloads", "match": {"executable": "wget"}}]})

    def test_denied_executable_stays_denied_behind_a_shell(self):
        sid = self.new_sandbox()
        self.deny_wget()
        # The lexical reading of the script does not see a variable: the watch does.
        c, out, err, end = self.run_script(sid, 'x=wget; $x --help >/dev/null 2>&1; echo "rc=$?"')
        self.assertEqual(out, "rc=126\n", (out, err))
        self.assertIn("space: exec of /bin/busybox denied", err)
        self.assertIn("no downloads", err)
        rows = self.audit_denials(c["command_id"])
        self.assertTrue(rows, "no command.exec_denied row")
        detail = rows[0]["detail"] if isinstance(rows[0]["detail"], dict) else json.loads(rows[0]["detail"])
        self.assertEqual(detail["argv"][0], "wget")
        self.assertEqual(detail["real"], "/bin/busybox")
        self.assertNotIn("env", detail)
        # A script file, and busybox naming the applet.
        c, out, err, _ = self.run_script(sid, 'printf "wget --help\\necho rc=\\$?\\n" > /tmp/s.sh; sh /tmp/s.sh 2>/dev/null')
        self.assertEqual(out, "rc=126\n", (out, err))
        c, out, err, _ = self.run_script(sid, 'busybox wget --help >/dev/null 2>&1; echo "rc=$?"')
        self.assertEqual(out, "rc=126\n", (out, err))
        # A copy of busybox runs the applet its name or its argv[1] says: both are seen.
        c, out, err, _ = self.run_script(sid, 'cp /bin/busybox /tmp/busybox-copy; /tmp/busybox-copy wget --help '
                                              '>/dev/null 2>&1; echo "rc=$?"; cp /bin/busybox /tmp/wget; p=/tmp/wget; '
                                              '$p --help >/dev/null 2>&1; echo "rc=$?"')
        self.assertEqual(out, "rc=126\nrc=126\n", (out, err))
        # Other commands of the same shells still run.
        c, out, err, end = self.run_script(sid, "x=echo; $x fine; busybox true && echo ok")
        self.assertEqual((out, end["exit_code"]), ("fine\nok\n", 0), err)

    def test_v1_exec_is_watched(self):
        sid = self.new_sandbox()
        self.deny_wget()
        out = self.spaced.exec(sid, shell='x=wget; $x --help >/dev/null 2>&1; echo "rc=$?"')
        self.assertEqual((out["stdout"], out["exit_code"]), ("rc=126\n", 0), out)
        self.assertIn("no downloads", out["stderr"])
        # An exec's stdin, output cap and exit code are kept on the way through the job path.
        out = self.spaced.exec(sid, cmd=["cat"], stdin="fed\n")
        self.assertEqual((out["stdout"], out["exit_code"]), ("fed\n", 0), out)
        out = self.spaced.exec(sid, shell="echo oops >&2; exit 3")
        self.assertEqual((out["stderr"], out["exit_code"]), ("oops\n", 3), out)
        out = self.spaced.exec(sid, shell="sleep 5", timeout_s=1)
        self.assertTrue(out["timed_out"], out)

    def test_command_of_another_user_is_watched(self):
        sid = self.new_sandbox()
        self.deny_wget()
        # The agent reads the process of a non-root user as that user: its execs run or are
        # denied as root's are.
        c, out, err, end = self.run_script(sid, 'id -u; x=wget; $x --help >/dev/null 2>&1; echo "rc=$?"', user="user")
        self.assertNotEqual(out.splitlines()[0], "0", (out, err))
        self.assertEqual(out.splitlines()[1:], ["rc=126"], (out, err))
        self.assertIn("no downloads", err)

    def test_symlink_is_matched_on_the_file_it_runs(self):
        sid = self.new_sandbox()
        self.spaced.exec(sid, shell="mkdir -p /opt && printf '#!/bin/sh\\necho secret\\n' > /opt/tool && chmod +x /opt/tool")
        self.policy({"name": "no-tool", "rules": [
            {"id": "no-tool", "effect": "deny", "match": {"executable": "/opt/tool"}}]})
        c, out, err, _ = self.run_script(sid, "ln -sf /opt/tool /tmp/innocent; /tmp/innocent; echo rc=$?")
        self.assertEqual(out, "rc=126\n", (out, err))
        self.assertIn("exec of /opt/tool denied", err)
        # A renamed copy is another file: a rule on a name or a path does not see it (documented).
        c, out, err, _ = self.run_script(sid, "cp /opt/tool /tmp/copy; /tmp/copy")
        self.assertEqual(out, "secret\n", err)

    def test_many_execs_and_a_flood_are_bounded(self):
        sid = self.new_sandbox()
        self.deny_wget()
        c, out, err, end = self.run_script(sid, "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done; echo $i")
        self.assertEqual((out, end["exit_code"]), ("200\n", 0), err)
        # 8 shells each exec'ing in a loop: the agent holds a bounded number of checks, spaced
        # stays responsive, and the timeout ends it.
        started = self.start(sid, self.token(sid), cmd=["sh", "-c", "for j in 1 2 3 4 5 6 7 8; do "
                                                                  "(while :; do /bin/true; done) & done; wait"],
                             timeout_s=5)
        for _ in range(5):
            self.spaced.api("GET", "/v1/sandboxes/" + sid, expect=200)
        end = self.command(sid, self.token(sid), started["command_id"], wait=True)
        self.assertNotEqual(end.get("state"), "running", end)
        out = self.spaced.exec(sid, cmd=["echo", "alive"])
        self.assertEqual(out["stdout"], "alive\n")

    def test_gvisor_keeps_the_lexical_check(self):
        # runsc refuses seccomp user notifications: its sandboxes are not watched (documented),
        # and their commands run rather than fail.
        sid = self.new_sandbox(runtime="gvisor")
        self.deny_wget()
        c, out, err, end = self.run_script(sid, 'x=wget; $x --help >/dev/null 2>&1; echo ok')
        self.assertEqual((out, end["exit_code"]), ("ok\n", 0), err)
        self.assertNotIn("space: exec", err)
        self.assertError(self.spaced.request("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": ["wget", "x"]},
                                             key=self.token(sid)), 403, "policy_denied")

    def test_project_without_command_rules_is_not_watched(self):
        sid = self.new_sandbox()
        # A file rule only: commands are not watched, so a variable-named wget runs.
        self.policy({"name": "files-only", "rules": [
            {"id": "no-etc", "effect": "deny", "actions": ["file.write"], "match": {"path": "/etc/**"}}]})
        c, out, err, end = self.run_script(sid, 'x=wget; $x --help >/dev/null 2>&1; echo "rc=$?"')
        self.assertNotEqual(out, "rc=126\n", err)
        self.assertNotIn("space: exec", err)

    def test_restart_while_an_exec_waits(self):
        sid = self.new_sandbox()
        self.deny_wget()
        token = self.token(sid)
        c = self.start(sid, token, cmd=["sh", "-c", "sleep 1; x=wget; $x --help >/dev/null 2>&1; echo rc=$?; "
                                                 "x=echo; $x allowed; echo done"])
        # spaced is away when the execs come: they wait (nothing runs unchecked) and are
        # asked again of the next spaced.
        self.spaced.kill9()
        time.sleep(3)
        self.spaced.start()
        token = self.token(sid)
        end = self.command(sid, token, c["command_id"], wait=True)
        self.assertEqual(end["state"], "exited", end)
        events = self.all_events(sid, token, c["command_id"])
        self.assertEqual(output(events, ("stdout",)).decode(), "rc=126\nallowed\ndone\n")


if __name__ == "__main__":
    import unittest
    unittest.main()
