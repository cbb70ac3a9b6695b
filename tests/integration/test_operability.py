"""Running spaced under a service manager: JSON logs (--log-format json), SIGHUP re-reading the
settings (log level and format change at once), the sd_notify protocol ($NOTIFY_SOCKET), and
the systemd unit and config file in deploy/ being ones spaced accepts."""
import configparser
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
import unittest

from spaced_harness import SPACE_AGENT, SPACED, Spaced, require_root

DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")


class ConfigSpaced(Spaced):
    """A spaced whose log settings come from a config file only (the harness's own
    --log-level flag would override the file)."""

    def __init__(self, conf_text, **kw):
        super().__init__(**kw)
        self.conf = os.path.join(self.tmp, "spaced.conf")
        self.write_conf(conf_text)

    def write_conf(self, text):
        with open(self.conf + ".new", "w") as f:
            f.write(text)
        os.rename(self.conf + ".new", self.conf)

    def args(self):
        return [SPACED, "--config", self.conf, "--state-dir", self.state_dir, "--listen", "127.0.0.1:%d" % self.port,
                "--pool-size", "2G", "--agent", SPACE_AGENT] + self.extra_args


def err_lines(sp):
    with open(sp.err_path, errors="replace") as f:
        return f.read().splitlines()


def wait_for(pred, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class Operability(unittest.TestCase):
    def setUp(self):
        require_root()

    def spaced(self, conf, env=None):
        sp = ConfigSpaced(conf)
        sp.env = env
        self.addCleanup(sp.cleanup)
        sp.start()
        return sp

    def test_json_logs_are_one_object_per_line_with_request_ids(self):
        sp = self.spaced("log-level = info\nlog-format = json\n")
        sp.api("GET", "/v1/sandboxes", expect=200, headers={"X-Request-Id": "req-from-client-1"})
        sp.request("GET", "/v1/sandboxes/%22%0a%7b", key=None)  # hostile bytes end up in a value
        lines = wait_for(lambda: [l for l in err_lines(sp) if "req-from-client-1" in l], "the access line")
        for line in err_lines(sp):
            obj = json.loads(line)  # every line
            self.assertIsInstance(obj, dict)
            for k in ("ts", "level", "event"):
                self.assertIsInstance(obj[k], str, line)
        access = json.loads(lines[0])
        self.assertEqual(access["event"], "http.access")
        self.assertEqual(access["request_id"], "req-from-client-1")
        self.assertEqual(access["status"], 200)  # bare integers are numbers
        self.assertEqual(access["path"], "/v1/sandboxes")

    def test_sighup_rereads_log_level_and_format(self):
        sp = self.spaced("log-level = info\nlog-format = text\n")
        sp.api("GET", "/v1/sandboxes", expect=200, headers={"X-Request-Id": "before-reload"})
        wait_for(lambda: [l for l in err_lines(sp) if "event=http.access" in l and "before-reload" in l], "a text line")

        sp.write_conf("log-level = warn\nlog-format = json\n")
        sp.proc.send_signal(signal.SIGHUP)
        reloaded = wait_for(lambda: [l for l in err_lines(sp) if l.startswith("{") and "spaced.reloaded" in l],
                            "the reload line, in JSON")
        self.assertEqual(json.loads(reloaded[0])["log_level"], "warn")
        sp.api("GET", "/v1/sandboxes", expect=200, headers={"X-Request-Id": "at-warn"})
        time.sleep(0.5)
        self.assertFalse([l for l in err_lines(sp) if "at-warn" in l], "an info line at level warn")

        sp.write_conf("log-level = info\nlog-format = json\n")
        sp.proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        sp.api("GET", "/v1/sandboxes", expect=200, headers={"X-Request-Id": "at-info-again"})
        line = wait_for(lambda: [l for l in err_lines(sp) if "at-info-again" in l], "an info line again")
        self.assertEqual(json.loads(line[0])["event"], "http.access")

        # a file that no longer parses changes nothing and says so
        sp.write_conf("log-level = shouting\n")
        sp.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: [l for l in err_lines(sp) if "spaced.reload_failed" in l], "the refusal")
        sp.api("GET", "/v1/sandboxes", expect=200, headers={"X-Request-Id": "still-info"})
        wait_for(lambda: [l for l in err_lines(sp) if "still-info" in l], "the old level kept")
        self.assertTrue(sp.alive())

    def notify_socket(self, abstract):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        if abstract:
            name = "space-test-notify-%d-%d" % (os.getpid(), time.monotonic_ns())
            s.bind("\0" + name)
            env = "@" + name
        else:
            path = os.path.join(self.tmp_dir(), "notify.sock")
            s.bind(path)
            env = path
        s.settimeout(30)
        return s, env

    def tmp_dir(self):
        import tempfile
        d = tempfile.mkdtemp(prefix="spit-notify-", dir="/tmp")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        return d

    def check_notify(self, abstract):
        s, env = self.notify_socket(abstract)
        sp = self.spaced("log-level = info\n", env={"NOTIFY_SOCKET": env})
        ready = s.recv(4096).decode()
        fields = dict(l.split("=", 1) for l in ready.split("\n"))
        self.assertEqual(fields["READY"], "1")
        self.assertEqual(int(fields["MAINPID"]), sp.proc.pid)
        self.assertIn("127.0.0.1:%d" % sp.port, fields["STATUS"])
        sp.proc.send_signal(signal.SIGHUP)
        reloading = s.recv(4096).decode()
        self.assertTrue(reloading.startswith("RELOADING=1\nMONOTONIC_USEC="), reloading)
        self.assertGreater(int(reloading.split("MONOTONIC_USEC=")[1]), 0)
        self.assertEqual(s.recv(4096).decode(), "READY=1")
        self.assertEqual(sp.stop(), 0)
        self.assertEqual(s.recv(4096).decode(), "STOPPING=1")

    def test_sd_notify_path_socket(self):
        self.check_notify(abstract=False)

    def test_sd_notify_abstract_socket(self):
        self.check_notify(abstract=True)

    def test_deploy_unit_and_config_are_accepted(self):
        unit = configparser.ConfigParser(interpolation=None, strict=False)
        unit.optionxform = str
        unit.read(os.path.join(DEPLOY, "spaced.service"))
        svc = unit["Service"]
        self.assertEqual(svc["Type"], "notify")
        self.assertIn("-HUP", svc["ExecReload"])
        argv = shlex.split(svc["ExecStart"])
        self.assertTrue(argv[0].endswith("/spaced"))
        help_text = subprocess.run([SPACED, "--help"], capture_output=True, text=True, check=True).stdout
        flags = [a for a in argv[1:] if a.startswith("--")]
        self.assertTrue(flags)
        for flag in flags:
            self.assertRegex(help_text, r"(?m)^\s+%s\b" % re.escape(flag), flag)
        # the sample config parses (--config is read before --help answers)
        r = subprocess.run([SPACED, "--config", os.path.join(DEPLOY, "spaced.conf"), "--help"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # and a bad one would not: the check above can fail
        bad = os.path.join(self.tmp_dir(), "bad.conf")
        with open(bad, "w") as f:
            f.write("no-such-setting = 1\n")
        r = subprocess.run([SPACED, "--config", bad, "--help"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)


class Health(unittest.TestCase):
    """GET /v1/health checks something real: the pool, a write to the state store, the
    controller and the workers; GET /v1/ready follows it."""

    def setUp(self):
        require_root()
        self.sp = Spaced()
        self.addCleanup(self.sp.cleanup)
        self.sp.start()

    def test_checks_and_readiness_when_well(self):
        _, h = self.sp.api("GET", "/v1/health", key=None, expect=200)
        self.assertEqual(h["status"], "ok")
        self.assertNotIn("reason", h)
        c = h["checks"]
        self.assertEqual(c["store"]["condition"], "ok")
        self.assertIsNotNone(c["store"]["checked_at"])  # measured before the first answer
        self.assertEqual(c["controller"]["condition"], "ok")
        self.assertLessEqual(c["controller"]["idle_s"], 2)
        self.assertEqual(c["workers"]["condition"], "ok")
        self.assertGreaterEqual(c["workers"]["total"], 1)
        self.assertEqual(c["pool"]["condition"], "ok")
        _, r = self.sp.api("GET", "/v1/ready", key=None, expect=200)
        self.assertEqual(r, {"ready": True, "status": "ok"})

    def test_a_store_that_refuses_writes_fails_health_and_readiness(self):
        sp = self.sp
        wal = os.path.join(sp.state_dir, "state.db-wal")
        self.assertTrue(os.path.exists(wal))
        subprocess.run(["chattr", "+i", wal], check=True)
        self.addCleanup(subprocess.run, ["chattr", "-i", wal])

        def failed():
            st, h = sp.request("GET", "/v1/health", key=None)
            return (st, h) if st == 503 else None
        st, h = wait_for(failed, "health to see the store fail", timeout=15)
        self.assertEqual(h["status"], "failed")
        self.assertEqual(h["checks"]["store"]["condition"], "failed")
        self.assertIn("state store", h["reason"])
        st, r = sp.request("GET", "/v1/ready", key=None)
        self.assertEqual((st, r["ready"], r["status"]), (503, False, "failed"))
        self.assertIn("state store", r["reason"])

        subprocess.run(["chattr", "-i", wal], check=True)
        wait_for(lambda: sp.request("GET", "/v1/health", key=None)[0] == 200, "health to recover", timeout=15)
        _, h = sp.api("GET", "/v1/health", key=None, expect=200)
        self.assertEqual(h["checks"]["store"]["condition"], "ok")
        sp.api("GET", "/v1/ready", key=None, expect=200)
        sid = sp.create()  # and it takes work again
        sp.api("GET", "/v1/sandboxes/" + sid, expect=200)


class InstalledSpaced(Spaced):
    """spaced as `meson install` lays it out, started with no path flags: it must find its
    agent (libexec/space) and the presets (share/space/presets) beside itself."""

    def __init__(self, prefix_root):
        super().__init__()
        self.binary = os.path.join(prefix_root, "usr/local/bin/spaced")

    def args(self):
        return [self.binary, "--state-dir", self.state_dir, "--listen", "127.0.0.1:%d" % self.port, "--pool-size", "2G"]


class PackagedInstall(unittest.TestCase):
    def test_an_installed_spaced_finds_its_agent_and_presets(self):
        require_root()
        import tempfile
        root = tempfile.mkdtemp(prefix="spit-install-", dir="/tmp")
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        build = os.path.dirname(os.path.dirname(os.path.dirname(SPACED)))  # build/src/spaced/spaced -> build
        r = subprocess.run(["meson", "install", "-C", build, "--destdir", root, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for rel in ("usr/local/bin/spaced", "usr/local/bin/space", "usr/local/libexec/space/space-agent",
                    "usr/local/share/space/presets/python.Spacefile", "usr/local/share/space/presets/node.Spacefile"):
            self.assertTrue(os.path.exists(os.path.join(root, rel)), rel)
        # the presets come from the install, not the source tree: one taken out there is gone
        os.unlink(os.path.join(root, "usr/local/share/space/presets/node.Spacefile"))
        sp = InstalledSpaced(root)
        self.addCleanup(sp.cleanup)
        sp.start()
        _, t = sp.api("GET", "/v1/templates", expect=200)
        names = {x["name"] for x in t["templates"]}
        self.assertTrue({"busybox", "python"} <= names, names)
        self.assertNotIn("node", names)
        sid = sp.create()
        _, out = sp.api("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["echo", "installed"]}, expect=200)
        self.assertEqual(out["stdout"], "installed\n")


if __name__ == "__main__":
    unittest.main()
