"""Docker/kubectl habits of the `space` CLI against a real spaced: `space ps` (-q, -o json|wide,
--format, --filter), `space inspect`, short id prefixes, tables that fit 100 columns, `--json`
passing numbers through unchanged, `--help` for every verb, and the bash and zsh completion scripts."""

import json
import os
import re
import shutil
import subprocess
import unittest

from spaced_harness import REPO, SpacedTestCase

VERBS = ["health", "version", "capabilities", "ps", "inspect", "stats", "exec", "cp", "logs", "attach", "restore", "fork",
         "audit", "template", "template ls", "template get", "template build", "template import", "template rm",
         "template prune", "sandbox", "sandbox create", "sandbox ls", "sandbox get", "sandbox set", "sandbox stop",
         "sandbox start", "sandbox pause", "sandbox resume", "sandbox rm", "snapshot", "snapshot create",
         "snapshot ls", "snapshot get", "snapshot rm", "snapshot export", "snapshot import", "op", "op ls", "op get",
         "key", "key create", "key ls", "key rm", "project", "project create", "project ls", "network",
         "network get", "network set", "network profiles"]


def out(r):
    return r.stdout.decode(errors="replace")


class CliHabits(SpacedTestCase):

    def space(self, *args, ok=True, **kw):
        r = self.spaced.cli(*args, **kw)
        if ok:
            self.assertEqual(r.returncode, 0, "space %s -> %d: %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    def create(self, *flags):
        sid = out(self.space("sandbox", "create", *flags)).strip()
        self.assertRegex(sid, r"^sb-[0-9a-f]{16}$")
        self.spaced.known_ids.add(sid)
        self.addCleanup(self._destroy_quietly, sid)
        return sid

    def test_ps(self):
        a = self.create("--meta", "team=a", "--cpus", "0.5")
        b = self.create("--meta", "team=b")
        ids = out(self.space("ps", "-q")).split()
        self.assertIn(a, ids)
        self.assertIn(b, ids)
        self.assertEqual(out(self.space("sandbox", "ls", "-q")).split(), ids)
        self.assertRegex(out(self.space("ps")), r"(?m)^ID\s+STATE\s+TEMPLATE\s+CREATED$")
        self.assertRegex(out(self.space("ps")), r"(?m)^%s\s+running\s+busybox\s" % a)
        # filters: server-side (state, metadata), here (template, id prefix), all must match
        self.assertEqual(out(self.space("ps", "-q", "--filter", "metadata.team=a")).split(), [a])
        self.assertEqual(out(self.space("ps", "-q", "--filter", "state=running,meta.team=b")).split(), [b])
        self.assertEqual(out(self.space("ps", "-q", "--filter", "state=stopped", "--filter", "metadata.team=b")), "")
        self.assertEqual(out(self.space("ps", "-q", "--filter", "template=busybox", "--meta", "team=a")).split(), [a])
        self.assertEqual(out(self.space("ps", "-q", "--filter", "template=nope", "--meta", "team=a")), "")
        self.assertEqual(out(self.space("ps", "-q", "--filter", "id=" + a[3:12])).split(), [a])
        self.assertEqual(out(self.space("ps", "-q", "--filter", "id=" + a[:12])).split(), [a])
        for bad in (["--filter", "colour=red"], ["--filter", "state"], ["-o", "yamlish"], ["--format", "{{.id"],
                    ["--format", "{{id}}"], ["-q", "-o", "wide"]):
            r = self.space("ps", *bad, ok=False)
            self.assertEqual(r.returncode, 2, bad)
            self.assertEqual(r.stdout, b"")
        # -o json is the API's answer; -o wide adds the resources and metadata
        data = json.loads(out(self.space("ps", "-o", "json", "--meta", "team=a")))
        self.assertEqual([s["id"] for s in data["sandboxes"]], [a])
        wide = out(self.space("ps", "-o", "wide", "--meta", "team=a"))
        self.assertRegex(wide, r"(?m)^ID\s+STATE\s+TEMPLATE\s+CPUS\s+MEM_MB\s+PIDS\s+CREATED\s+METADATA$")
        self.assertRegex(wide, r'(?m)^%s\s+running\s+busybox\s+0\.5\s+\d+\s+\d+\s+\S+\s+\{"team":\s*"a"\}$' % a)
        # --format
        r = self.space("ps", "--format", "{{.id}}\\t{{.resources.cpus}}\\t{{json .metadata}}\\t{{.nothing}}",
                       "--meta", "team=a")
        self.assertEqual(out(r), '%s\t0.5\t{"team":"a"}\t-\n' % a)
        lines = out(self.space("ps", "--format", "json", "--filter", "metadata.team=b")).splitlines()
        self.assertEqual([json.loads(line)["id"] for line in lines], [b])

    def test_inspect(self):
        sid = self.create()
        r = self.space("inspect", sid)
        data = json.loads(out(r))
        self.assertIsInstance(data, list)
        self.assertEqual([d["id"] for d in data], [sid])
        op = out(self.space("sandbox", "stop", sid, "--no-wait")).strip()
        self.spaced.wait_state(sid, "stopped", timeout=30)
        data = json.loads(out(self.space("inspect", sid[:10], op)))
        self.assertEqual([d["id"] for d in data], [sid, op])
        self.assertEqual(data[0]["state"], "stopped")
        data = json.loads(out(self.space("inspect", "--type", "template", "busybox")))
        self.assertEqual(data[0]["name"], "busybox")
        r = self.space("inspect", sid, "sb-00000000000000ff", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual([d["id"] for d in json.loads(out(r))], [sid])  # the found one still printed
        self.assertIn(b"not_found", r.stderr)
        self.assertEqual(self.space("inspect", ok=False).returncode, 2)
        self.assertEqual(self.space("inspect", "--type", "volume", "x", ok=False).returncode, 2)

    def test_json_passes_numbers_through(self):
        sid = self.create("--cpus", "0.1", "--memory", "100")
        status, raw = self.spaced.request("GET", "/v1/sandboxes/" + sid)
        self.assertEqual(status, 200)
        self.assertEqual(raw["resources"]["cpus"], 0.1)
        for args in (["--json", "sandbox", "get", sid], ["sandbox", "get", sid, "--json"],
                     ["ps", "-o", "json", "--filter", "id=" + sid]):
            text = out(self.space(*args))
            self.assertRegex(text, r'"cpus": 0\.1\b', args)
            self.assertNotIn("0.1000000", text)
            self.assertRegex(text, r'"memory_mb": 100\b')
        self.assertIn('"cpus":0.1,', out(self.space("ps", "--format", "{{json .resources}}", "--filter",
                                                    "id=" + sid)))

    def test_short_id_prefixes(self):
        sid = self.create()
        for prefix in (sid[3:9], sid[:9]):
            r = self.space("sandbox", "get", prefix)
            self.assertRegex(out(r), r"(?m)^id:\s+%s$" % sid)
        self.assertEqual(out(self.space("exec", sid[3:10], "--", "echo", "hi")), "hi\n")
        self.space("cp", "-", sid[3:10] + ":/tmp/pre", input=b"by prefix")
        self.assertEqual(self.space("cp", sid[:10] + ":/tmp/pre", "-").stdout, b"by prefix")
        self.assertEqual(json.loads(out(self.space("inspect", sid[3:8])))[0]["id"], sid)
        r = self.space("sandbox", "get", "0123456789abcde", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"no sandbox id starts with '0123456789abcde'", r.stderr)
        # two sandboxes whose ids start with the same digit (at most 17 by pigeonhole)
        by_first = {sid[3]: [sid]}
        while all(len(v) < 2 for v in by_first.values()):
            s = self.create()
            by_first.setdefault(s[3], []).append(s)
        first = [k for k, v in by_first.items() if len(v) >= 2][0]
        r = self.space("sandbox", "stop", first, ok=False)
        self.assertEqual(r.returncode, 1)
        err = r.stderr.decode()
        self.assertIn("'%s' is the start of" % first, err)
        for s in by_first[first][:2]:
            self.assertIn(s, err)
            self.assertEqual(self.spaced.state(s), "running")  # nothing was changed

    def test_tables_fit_100_columns(self):
        sid = self.create("--meta", "owner=a-rather-long-owner-name")
        self.space("snapshot", "create", sid, "--label", "a label that is long enough to matter")
        self.space("key", "create", "--role", "viewer", "--name", "a-key-with-a-long-descriptive-name", ok=False)
        self.space("sandbox", "stop", sid)
        too_wide = []
        for args in (["ps"], ["sandbox", "ls"], ["template", "ls"], ["snapshot", "ls"], ["snapshot", "ls", sid],
                     ["op", "ls"], ["key", "ls"], ["project", "ls"]):
            text = out(self.space(*args))
            self.assertTrue(text.strip(), args)
            if any(len(line) > 100 for line in text.splitlines()):
                too_wide.append("space %s:\n%s" % (" ".join(args), text))
        self.assertEqual(too_wide, [], "\n".join(too_wide))
        # `space audit` is a log whose rows hold two whole ids (request ids are grepped for in
        # the access log): it is not held to 100 columns, but its times are compact
        self.assertRegex(out(self.space("audit")), r"(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ")

    def test_stats(self):
        sp = self.spaced
        busy, idle = self.create(), self.create("--memory", "256")
        _, s = sp.api("POST", "/v1/sandboxes/%s/sessions" % busy, {}, expect=201)
        sp.api("POST", "/v1/sandboxes/%s/commands" % busy, {"cmd": ["sh", "-c", "while :; do :; done"]},
               key=s["attach_token"], expect=201)
        r = self.space("stats", busy, idle[:8])
        lines = out(r).splitlines()
        self.assertEqual(lines[0].split()[:3], ["SANDBOX", "STATE", "CPU"])
        rows = {l.split()[0]: l.split() for l in lines[1:]}
        self.assertEqual(set(rows), {busy, idle})
        # A spinning loop against an idle shell (a busy shared machine gives the loop less than a CPU).
        self.assertGreater(float(rows[busy][2].rstrip("%")), 5.0, lines)
        self.assertGreater(float(rows[busy][2].rstrip("%")), 5 * float(rows[idle][2].rstrip("%")), lines)
        self.assertIn("256.0MiB", rows[idle])
        r = self.space("stats", "--json", busy)
        [j] = json.loads(out(r))
        self.assertEqual(j["sandbox_id"], busy)
        self.assertEqual(j["memory"]["limit_bytes"], 512 << 20)
        self.assertGreater(j["cpu"]["usage_us"], 0)
        # Without ids: every running sandbox.
        listed = {l.split()[0] for l in out(self.space("stats")).splitlines()[1:]}
        self.assertTrue({busy, idle} <= listed, listed)
        # A stopped sandbox has no figures: the API's 409, and the CLI's exit 1.
        sp.action(idle, "stop")
        st, body = sp.request("GET", "/v1/sandboxes/%s/stats" % idle)
        self.assertEqual((st, body["error"]["code"]), (409, "invalid_state"))
        self.assertEqual(self.space("stats", idle, ok=False).returncode, 1)
        self.assertEqual(sp.request("GET", "/v1/sandboxes/sb-0000000000000000/stats")[0], 404)

    def test_ps_yaml(self):
        import yaml
        sp = self.spaced
        sid = self.create("--meta", "note=yes: no # [x] &a *b", "--meta", "on=1")
        r = self.space("ps", "-o", "yaml")
        self.assertTrue(out(r).startswith("---\n"), out(r))
        docs = yaml.safe_load(out(r))
        _, listing = sp.api("GET", "/v1/sandboxes", expect=200)
        # The YAML is the API's list, value for value (hostile text stays text).
        self.assertEqual(docs, listing["sandboxes"])
        mine = [d for d in docs if d["id"] == sid][0]
        self.assertEqual(mine["metadata"], {"note": "yes: no # [x] &a *b", "on": "1"})
        self.assertEqual(self.space("ps", "-o", "toml", ok=False).returncode, 2)

    def test_help_for_every_verb(self):
        for verb in VERBS:
            with self.subTest(verb=verb):
                r = self.space(*(verb.split() + ["--help"]))
                self.assertTrue(out(r).startswith("usage: space "), out(r)[:80])
                self.assertEqual(r.stderr, b"")

    def test_bash_completion(self):
        script = os.path.join(REPO, "src/cli/completion/space.bash")
        bash = shutil.which("bash")
        if not bash:
            self.skipTest("no bash")
        sid = self.create()

        def complete(line):
            words = line.split(" ")
            prog = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; COMP_LINE=%s; COMP_POINT=${#COMP_LINE}; _space; '
                    'printf "%%s\\n" "${COMPREPLY[@]}"' % (script, " ".join("'%s'" % w for w in words),
                                                         len(words) - 1, "'%s'" % line))
            env = dict(os.environ, SPACE_URL=self.spaced.url, SPACE_API_KEY=self.spaced.key,
                       PATH=os.path.dirname(os.environ.get("SPACE_CLI", os.path.join(REPO, "build/src/cli/space"))) +
                       ":" + os.environ.get("PATH", ""))
            r = subprocess.run([bash, "--norc", "-c", prog], capture_output=True, env=env, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.decode().split()

        self.assertEqual(complete("space sa"), ["sandbox"])
        self.assertIn("ps", complete("space "))
        self.assertIn("exec", complete("space e"))
        self.assertEqual(sorted(complete("space snapshot ex")), ["export"])
        self.assertIn(sid, complete("space exec "))
        self.assertIn(sid, complete("space sandbox stop "))
        self.assertIn("--filter", complete("space ps --f"))
        self.assertEqual(complete("space exec %s -- " % sid), [])
        # meson installs it where bash-completion looks
        build = os.path.dirname(os.path.dirname(os.path.dirname(
            os.environ.get("SPACE_CLI", os.path.join(REPO, "build/src/cli/space")))))
        r = subprocess.run(["meson", "introspect", build, "--installed"], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        installed = json.loads(r.stdout)
        self.assertTrue(any(src.endswith("src/cli/completion/space.bash") and
                            dst.endswith("/share/bash-completion/completions/space")
                            for src, dst in installed.items()), installed)


    def test_zsh_completion(self):
        """The zsh function, run by zsh itself with its words; compadd (zsh's builtin that
        offers the candidates, filtering them by the prefix typed) is replaced by one that
        prints them."""
        zsh = shutil.which("zsh")
        if not zsh:
            self.skipTest("no zsh (scripts/install-deps installs it)")
        cli = os.environ.get("SPACE_CLI", os.path.join(REPO, "build/src/cli/space"))
        function = os.path.join(os.path.dirname(cli), "_space")
        sid = self.create()
        harness = ('compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }; _files() { print -r -- "<files>"; }; '
                   'words=("${(@Q)${(z)1}}"); [[ $1 == *" " ]] && words+=(""); CURRENT=${#words}; source "$2"')

        def complete(line):
            env = dict(os.environ, SPACE_URL=self.spaced.url, SPACE_API_KEY=self.spaced.key,
                       SPACE_BASH_COMPLETION=os.path.join(REPO, "src/cli/completion/space.bash"),
                       PATH=os.path.dirname(cli) + ":" + os.environ.get("PATH", ""))
            r = subprocess.run([zsh, "-f", "-c", harness, "zsh", line, function], capture_output=True, env=env, timeout=30)
            self.assertEqual(r.stderr, b"")
            return r.returncode, r.stdout.decode().split()

        rc, top = complete("space ")
        self.assertEqual(rc, 0)
        self.assertTrue({"sandbox", "ps", "exec", "snapshot", "policy"} <= set(top), top)
        self.assertIn("export", complete("space snapshot ex")[1])
        self.assertNotIn("export", complete("space sandbox ")[1])
        self.assertIn(sid, complete("space exec ")[1])
        self.assertIn(sid, complete("space --json sandbox stop ")[1])
        self.assertEqual(complete("space sandbox stop %s " % sid)[1], [])  # one id, then nothing
        self.assertIn("--filter", complete("space ps --f")[1])
        self.assertEqual(complete("space cp ")[1], ["<files>"])
        self.assertEqual(complete("space exec %s -- " % sid), (1, []))
        # zsh's compinit registers it for space, and meson installs it where compinit looks
        r = subprocess.run([zsh, "-f", "-c", 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -D; '
                            'print -r -- ${_comps[space]}', "zsh", os.path.dirname(function)],
                           capture_output=True, timeout=30)
        self.assertEqual(r.stdout, b"_space\n", r.stderr)
        build = os.path.dirname(os.path.dirname(os.path.dirname(cli)))
        r = subprocess.run(["meson", "introspect", build, "--installed"], capture_output=True)
        installed = json.loads(r.stdout)
        self.assertTrue(any(dst.endswith("/share/zsh/site-functions/_space") for dst in installed.values()), installed)
        with open(function) as f:
            self.assertIn("/share/bash-completion/completions/space", f.read())


class CreateBuildsPreset(SpacedTestCase):
    """`space sandbox create --template P` of a preset that is not built yet builds it first
    (its log on stderr, the id alone on stdout) instead of failing with template_not_ready."""

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.presets = tempfile.mkdtemp(prefix="space-presets-")
        with open(os.path.join(cls.presets, "tiny.Spacefile"), "w") as f:
            f.write("FROM busybox\nRUN echo made-by-the-preset > /made\n")
        cls.spaced_kwargs = {"extra_args": ["--presets-dir", cls.presets]}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.presets, ignore_errors=True)

    def test_create_builds_an_unbuilt_preset(self):
        sp = self.spaced
        _, t = sp.api("GET", "/v1/templates/tiny", expect=200)
        self.assertEqual(t["state"], "not_built")
        # The API itself still refuses: building is the CLI's help, not a side effect of a create.
        self.assertEqual(sp.request("POST", "/v1/sandboxes", {"template": "tiny"})[0], 409)
        r = sp.cli("sandbox", "create", "--template", "tiny")
        self.assertEqual(r.returncode, 0, r.stderr)
        sid = out(r).strip()
        self.assertRegex(sid, r"^sb-[0-9a-f]{16}$")
        sp.known_ids.add(sid)
        self.assertIn("not built yet", r.stderr.decode())
        self.assertIn("made-by-the-preset", r.stderr.decode() + sp.sh(sid, "cat /made")["stdout"])
        self.assertEqual(sp.sh(sid, "cat /made")["stdout"], "made-by-the-preset\n")
        _, t = sp.api("GET", "/v1/templates/tiny", expect=200)
        self.assertEqual(t["state"], "ready")
        # Built now: the next create does not build again.
        r = sp.cli("sandbox", "create", "--template", "tiny")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("not built yet", r.stderr.decode())
        sp.known_ids.add(out(r).strip())
        # A template that does not exist: the create's own error, once.
        r = sp.cli("sandbox", "create", "--template", "nosuch")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.decode().count("not found"), 1, r.stderr)


class UnixSocketUrl(SpacedTestCase):
    """The CLI reaches spaced's --unix-socket with --url unix:/PATH or SPACE_URL=unix:///PATH."""

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.sockdir = tempfile.mkdtemp(prefix="space-sock-")
        cls.sock = os.path.join(cls.sockdir, "api.sock")
        cls.spaced_kwargs = {"extra_args": ["--unix-socket", cls.sock]}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.sockdir, ignore_errors=True)

    def test_unix_socket_url(self):
        sp = self.spaced
        r = sp.cli("--url", "unix:" + self.sock, "sandbox", "create", url=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        sid = out(r).strip()
        sp.known_ids.add(sid)
        env = dict(os.environ, SPACE_URL="unix://" + self.sock)
        r = sp.cli("ps", "-q", url=False, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(sid, out(r).split())
        r = sp.cli("--url", "unix:" + self.sock + ".missing", "ps", url=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("unix:" + self.sock + ".missing", r.stderr.decode())
        r = sp.cli("--url", "ftp://x", "ps", url=False)
        self.assertEqual(r.returncode, 2)

    def test_the_command_scripts_up_prints_works(self):
        from spaced_harness import SPACE_CLI
        sp = self.spaced
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SPACE_")}
        for flags in (["--listen", "127.0.0.1:%d" % sp.port, "--state-dir", sp.state_dir],
                      ["--listen=127.0.0.1:%d" % sp.port, "--state-dir=" + sp.state_dir, "--unix-socket", self.sock]):
            p = subprocess.run([os.path.join(REPO, "scripts", "cli-command")] + flags, capture_output=True, timeout=30,
                               env=dict(clean, SPACE_CLI_PATH=SPACE_CLI))
            self.assertEqual(p.returncode, 0, p.stderr)
            command = p.stdout.decode().strip()
            self.assertIn("SPACE_STATE_DIR=" + sp.state_dir, command)
            r = subprocess.run(["sh", "-c", command + " health"], capture_output=True, timeout=60, env=clean)
            self.assertEqual(r.returncode, 0, (command, r.stderr))


if __name__ == "__main__":
    unittest.main()
