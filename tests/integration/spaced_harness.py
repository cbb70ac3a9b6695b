"""Shared harness for the black-box integration tests of space.

Starts the real spaced binary on a fresh temporary state directory and a free
127.0.0.1 port, talks to it over HTTP and through the real `space` CLI, and
cleans up everything it created: sandboxes, their processes and cgroups, the
loop-mounted btrfs pool and the temporary directory.

Binaries come from the environment (SPACED, SPACE_CLI, SPACE_AGENT, set by
meson) or default to the build/ directory of the repository.

SPACE_TEST_STORE=postgres runs every spaced of the tests on PostgreSQL instead of its
SQLite file: each Spaced gets a throwaway cluster of its own (pg_cluster.py) and
--database naming it, removed by cleanup() (docs/testing.md).

Standard library, plus python3-jsonschema and python3-yaml for the contract check: every
response of the v1 API the tests receive is held to api/openapi.yaml as it arrives
(openapi_contract.py), and a violation fails the test that received it.
"""

import glob
import http.client
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openapi_contract  # noqa: E402
from pg_cluster import PgCluster  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACED = os.environ.get("SPACED", os.path.join(REPO, "build/src/spaced/spaced"))
SPACE_CLI = os.environ.get("SPACE_CLI", os.path.join(REPO, "build/src/cli/space"))
SPACE_AGENT = os.environ.get("SPACE_AGENT", os.path.join(REPO, "build/src/space_agent/space-agent"))

CGROUP_ROOT = "/sys/fs/cgroup"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- helpers

_ports_given = set()


def free_port():
    """A port nothing listens on now, never one this process handed out before: the kernel
    may give the same free port to two bind(0) calls in a row, and two spaced told the same
    port (test_uid_ranges makes two before starting either) fail as "already in use"."""
    for _ in range(100):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in _ports_given:
            _ports_given.add(port)
            return port
    raise RuntimeError("no fresh free port")


def wait_for(predicate, timeout=20.0, interval=0.1, what="condition"):
    """Polls predicate() until it returns a truthy value; returns that value.
    Raises AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = predicate()
        except Exception as e:  # noqa: BLE001 - keep polling through transient errors
            last = e
            if time.monotonic() >= deadline:
                raise AssertionError("timed out after %.0fs waiting for %s (last error: %r)" % (timeout, what, e))
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.0fs waiting for %s (last value: %r)" % (timeout, what, last))
        time.sleep(interval)


def cgroup_dirs(sandbox_id):
    """Every cgroup directory of a sandbox on the host: v1 hierarchies and v2, both the
    per-instance layout (<mount>/space/<instance>/<id>) and the flat one (<mount>/space/<id>)."""
    dirs = set()
    patterns = (
        os.path.join(CGROUP_ROOT, "*", "space", sandbox_id),
        os.path.join(CGROUP_ROOT, "*", "space", "*", sandbox_id),
        os.path.join(CGROUP_ROOT, "space", sandbox_id),  # pure cgroup v2 hosts
        os.path.join(CGROUP_ROOT, "space", "*", sandbox_id),
    )
    for pattern in patterns:
        for d in glob.glob(pattern):
            if os.path.isdir(d):
                dirs.add(os.path.realpath(d))
    return sorted(dirs)


def cgroup_space_dirs():
    """<mount>/space for every hierarchy (v1 controllers, unified, pure v2)."""
    dirs = set()
    for d in glob.glob(os.path.join(CGROUP_ROOT, "*", "space")) + [os.path.join(CGROUP_ROOT, "space")]:
        if os.path.isdir(d):
            dirs.add(os.path.realpath(d))
    return sorted(dirs)


def cgroup_pids(sandbox_id):
    """Pids of every process in any cgroup of the sandbox."""
    pids = set()
    for d in cgroup_dirs(sandbox_id):
        for root, _subdirs, files in os.walk(d):
            if "cgroup.procs" in files:
                try:
                    with open(os.path.join(root, "cgroup.procs")) as f:
                        for line in f:
                            line = line.strip()
                            if line:
                                pids.add(int(line))
                except OSError:
                    pass
    return sorted(pids)


def pids_mentioning_cgroup(sandbox_id):
    """Pids whose /proc/<pid>/cgroup names the sandbox (survives a removed cgroup dir)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % p) as f:
                if ("/space/%s" % sandbox_id) in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


def read_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def proc_status(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return fields


def cpu_usage_ns(sandbox_id):
    """CPU time used by the sandbox's cgroup so far, in nanoseconds (v1 cpuacct or v2 cpu.stat)."""
    for d in cgroup_dirs(sandbox_id):
        p = os.path.join(d, "cpuacct.usage")
        if os.path.exists(p):
            with open(p) as f:
                return int(f.read().strip())
    for d in cgroup_dirs(sandbox_id):
        p = os.path.join(d, "cpu.stat")
        if os.path.exists(p):
            with open(p) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "usage_usec":
                        return int(v) * 1000
    raise AssertionError("no CPU accounting file found for %s" % sandbox_id)


def kill_cgroup_processes(sandbox_id):
    """SIGKILLs every process of a sandbox from the host (thawing frozen cgroups first)."""
    for d in cgroup_dirs(sandbox_id):
        for fname, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
            p = os.path.join(d, fname)
            if os.path.exists(p):
                try:
                    with open(p, "w") as f:
                        f.write(value)
                except OSError:
                    pass
    for _ in range(50):
        pids = set(cgroup_pids(sandbox_id)) | set(pids_mentioning_cgroup(sandbox_id))
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)


def remove_cgroup_dirs(sandbox_id):
    for d in cgroup_dirs(sandbox_id):
        # children first
        for root, subdirs, _files in sorted(os.walk(d), key=lambda t: -len(t[0])):
            try:
                os.rmdir(root)
            except OSError:
                pass


def mountinfo_lines(word):
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if word in line]


def tar_of(files):
    """An uncompressed tar of {name: bytes (a 0644 file) | None (a 0755 directory)}, in that
    order, every mtime the same (what template imports and Spacefile builds are sent as)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                t.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# --------------------------------------------------------------------------- the contract

class ContractChecks:
    """What makes a connection a contract one (ContractHTTPConnection, ContractHTTPSConnection):
    an HTTP connection whose responses are held to api/openapi.yaml: status and
    Content-Type as soon as the headers arrive (getresponse), the body when the caller
    hands it to contract_check_body() once read (JSON bodies: Spaced.request does it;
    streams and downloads are held to status and Content-Type only). Every request of
    the tests to the v1 API goes through one of these (Spaced.request, Spaced.events,
    Spaced.connection)."""

    def putrequest(self, method, url, *args, **kw):
        self._contract_method, self._contract_target = method, url
        return super().putrequest(method, url, *args, **kw)

    def getresponse(self):
        resp = super().getresponse()
        resp.contract_request = (self._contract_method, self._contract_target)
        openapi_contract.check(self._contract_method, self._contract_target, resp.status,
                               dict(resp.getheaders()), b"", streamed=True)
        return resp

    def contract_check_body(self, resp, payload):
        method, target = resp.contract_request
        openapi_contract.check(method, target, resp.status, dict(resp.getheaders()), payload)


class ContractHTTPConnection(ContractChecks, http.client.HTTPConnection):
    pass


class ContractHTTPSConnection(ContractChecks, http.client.HTTPSConnection):
    """The same over TLS (a spaced started with --tls-cert; Spaced.tls_context)."""


def contract_connection(port, timeout, tls_context=None):
    if tls_context is not None:
        return ContractHTTPSConnection("127.0.0.1", port, timeout=timeout, context=tls_context)
    return ContractHTTPConnection("127.0.0.1", port, timeout=timeout)


# --------------------------------------------------------------------------- event streams

class EventStream:
    """One text/event-stream (Server-Sent Events) response, read event by event.

    next() returns {"id": ..., "event": ..., "data": "..."} (fields as sent, data lines
    joined with newlines), or None at the end of the stream; comment lines (": text") are
    collected in .comments and, with comments=True, returned as {"comment": "text"}.
    A non-200 answer is not an error here: check .status and read .body(). rcvbuf sets a
    small socket receive buffer before connecting (to make a slow reader)."""

    def __init__(self, port, path, headers=None, timeout=120, rcvbuf=None, tls_context=None):
        self.conn = contract_connection(port, timeout, tls_context)
        if rcvbuf is not None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.settimeout(timeout)
            sock.connect(("127.0.0.1", port))
            self.conn.sock = sock
        self.conn.request("GET", path, headers=headers or {})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.comments = []

    def body(self):
        payload = self.resp.read()
        if self.status >= 300:
            self.conn.contract_check_body(self.resp, payload)
        try:
            return json.loads(payload)
        except ValueError:
            return payload

    def next(self, comments=False):
        event, data = {}, []
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n").rstrip("\r")
            if line == "":
                if event or data:
                    event["data"] = "\n".join(data)
                    return event
                continue
            if line.startswith(":"):
                text = line[1:].strip()
                self.comments.append(text)
                if comments:
                    return {"comment": text}
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                data.append(value)
            else:
                event[field] = value

    def __iter__(self):
        while True:
            ev = self.next()
            if ev is None:
                return
            yield ev

    def close(self):
        self.conn.close()


# --------------------------------------------------------------------------- spaced

class Spaced:
    """One spaced process on its own temporary state directory.

    The state directory survives stop()/kill9()/start() so restarts see the same state;
    cleanup() removes everything."""

    def __init__(self, max_body=None, workers=None, extra_args=(), database=None):
        self.tmp = tempfile.mkdtemp(prefix="spit-", dir="/tmp")
        # The store: database (a PostgreSQL URL) when given; with SPACE_TEST_STORE=postgres,
        # a cluster of this Spaced's own, started at the first start(); else SQLite.
        self.database = database
        self.pg = None
        self.own_pg = database is None and os.environ.get("SPACE_TEST_STORE") == "postgres"
        self.state_dir = os.path.join(self.tmp, "s")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.max_body = max_body
        self.workers = workers
        self.extra_args = list(extra_args)
        self.proc = None
        self.key = None
        self.runs = 0
        self.known_ids = set()
        self.saved_logs = None
        self.env = None  # extra environment for the next start() (e.g. a fault point)
        self.tls_context = None  # an ssl.SSLContext: the API is spoken over TLS (--tls-cert)

    # ---- process control

    def args(self):
        a = [SPACED, "--state-dir", self.state_dir, "--listen", "127.0.0.1:%d" % self.port,
             "--pool-size", "2G", "--log-level", "debug", "--agent", SPACE_AGENT]
        if self.database:
            a += ["--database", self.database]
        if self.max_body is not None:
            a += ["--max-body", str(self.max_body)]
        if self.workers is not None:
            a += ["--workers", str(self.workers)]
        return a + self.extra_args

    def start(self, timeout=60, health=200):
        assert self.proc is None or self.proc.poll() is not None, "spaced already running"
        if self.own_pg and self.pg is None:
            self.pg = PgCluster().start()
            self.database = self.pg.url()
        self.runs += 1
        out_path = os.path.join(self.tmp, "spaced-%d.out" % self.runs)
        err_path = os.path.join(self.tmp, "spaced-%d.err" % self.runs)
        self.out_path, self.err_path = out_path, err_path
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            self.proc = subprocess.Popen(self.args(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True,
                                         env=dict(os.environ, **self.env) if self.env else None)

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("spaced exited with %s during start-up:\n%s" % (self.proc.returncode, self.logs()))
            with open(out_path) as f:
                return "listening on" in f.read()

        deadline = time.monotonic() + timeout
        while True:
            try:
                if ready():
                    break
            except RuntimeError:
                raise
            if time.monotonic() > deadline:
                self.kill9()
                raise RuntimeError("spaced did not start within %ds:\n%s" % (timeout, self.logs()))
            time.sleep(0.05)
        status, body = self.request("GET", "/v1/health", key=None)
        if status != health:
            raise RuntimeError("health after start: %s %r" % (status, body))
        with open(os.path.join(self.state_dir, "admin.key")) as f:
            self.key = f.readline().strip()
        return self

    def stop(self, timeout=30):
        """SIGTERM and wait for exit; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("spaced did not exit within %ds of SIGTERM" % timeout)

    def kill9(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.kill()
        self.proc.wait()

    def restart(self, hard=False):
        if hard:
            self.kill9()
        else:
            self.stop()
        return self.start()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def logs(self, tail=60):
        text = []
        for p in sorted(glob.glob(os.path.join(self.tmp, "spaced-*.*"))):
            try:
                with open(p, errors="replace") as f:
                    lines = f.read().splitlines()
                text.append("== %s\n%s" % (p, "\n".join(lines[-tail:])))
            except OSError:
                pass
        return "\n".join(text)

    # ---- HTTP

    def request(self, method, path, body=None, key="admin", headers=None, raw=None, timeout=120):
        """One HTTP request. body: JSON-encoded unless raw (bytes) is given.
        key: "admin" for the admin key, None for no Authorization header, or a key string.
        Returns (status, parsed JSON or None, [raw bytes if JSON parse fails])."""
        h = {}
        if key == "admin":
            key = self.key
        if key is not None:
            h["Authorization"] = "Bearer " + key
        data = None
        if raw is not None:
            data = raw
        elif body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        conn = contract_connection(self.port, timeout, self.tls_context)
        try:
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            payload = resp.read()
            conn.contract_check_body(resp, payload)
            self.last_headers = dict(resp.getheaders())
            status = resp.status
        finally:
            conn.close()
        if not payload:
            return status, None
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload

    def connection(self, timeout=60, port=None):
        """A raw HTTPConnection to the v1 API for tests that drive HTTP by hand; its
        responses are held to the contract (call .contract_check_body(resp, payload)
        after reading a JSON body whole)."""
        return contract_connection(port or self.port, timeout, self.tls_context)

    def api(self, method, path, body=None, expect=None, **kw):
        status, data = self.request(method, path, body, **kw)
        if expect is not None:
            exp = expect if isinstance(expect, (tuple, list, set)) else (expect,)
            if status not in exp:
                raise AssertionError("%s %s -> %s (expected %s): %r" % (method, path, status, expect, data))
        return status, data

    def events(self, path, key="admin", headers=None, timeout=120, rcvbuf=None):
        """Opens a text/event-stream GET; returns an EventStream (close it)."""
        h = dict(headers or {})
        if key == "admin":
            key = self.key
        if key is not None:
            h["Authorization"] = "Bearer " + key
        return EventStream(self.port, path, headers=h, timeout=timeout, rcvbuf=rcvbuf, tls_context=self.tls_context)

    # ---- sandboxes

    def create(self, expect_state="running", **body):
        status, data = self.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", body, expect=200)
        sb = data["sandbox"]
        self.known_ids.add(sb["id"])
        if expect_state:
            assert sb["state"] == expect_state, "created sandbox is %s: %r" % (sb["state"], data)
        return sb["id"]

    def get(self, sandbox_id):
        status, data = self.api("GET", "/v1/sandboxes/" + sandbox_id, expect=200)
        return data

    def state(self, sandbox_id):
        return self.get(sandbox_id)["state"]

    def action(self, sandbox_id, verb, expect=200):
        if verb == "destroy":
            return self.api("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % sandbox_id, expect=expect)
        return self.api("POST", "/v1/sandboxes/%s/%s?wait=true&timeout_s=120" % (sandbox_id, verb), expect=expect)

    def destroy(self, sandbox_id):
        return self.action(sandbox_id, "destroy")

    def exec(self, sandbox_id, expect=200, **body):
        status, data = self.api("POST", "/v1/sandboxes/%s/exec" % sandbox_id, body, expect=expect)
        return data

    def sh(self, sandbox_id, script, **body):
        """Runs a shell script, returns the exec result (asserts HTTP 200)."""
        return self.exec(sandbox_id, shell=script, **body)

    def put_file(self, sandbox_id, path, data, mode="0644"):
        """Writes a file into a sandbox through the data plane (a session of its own)."""
        import urllib.parse
        status, body = self.request("POST", "/v1/sandboxes/%s/sessions" % sandbox_id, {})
        assert status in (200, 201), (status, body)
        q = urllib.parse.urlencode({"path": path, "mode": mode})
        status, body = self.request("PUT", "/v1/sandboxes/%s/files?%s" % (sandbox_id, q), raw=data,
                                    key=body["attach_token"], headers={"Content-Type": "application/octet-stream"})
        assert status == 201, (status, body)
        return body

    def wait_state(self, sandbox_id, states, timeout=20):
        if isinstance(states, str):
            states = (states,)
        return wait_for(lambda: self.state(sandbox_id) in states and self.state(sandbox_id),
                        timeout=timeout, what="sandbox %s to be %s" % (sandbox_id, "/".join(states)))

    def list_ids(self, state=None):
        path = "/v1/sandboxes" + ("?state=" + state if state else "")
        _, data = self.api("GET", path, expect=200)
        return {s["id"]: s["state"] for s in data["sandboxes"]}

    # ---- paths

    def instance(self):
        """The name spaced keeps in <state>/instance (its cgroups live under space/<instance>)."""
        try:
            with open(os.path.join(self.state_dir, "instance")) as f:
                return f.readline().strip() or None
        except OSError:
            return None

    def instance_cgroup_dirs(self):
        inst = self.instance()
        if not inst:
            return []
        return [os.path.join(d, inst) for d in cgroup_space_dirs() if os.path.isdir(os.path.join(d, inst))]

    def subvolume(self, sandbox_id):
        return os.path.join(self.state_dir, "pool", "sandboxes", sandbox_id)

    def run_dir(self, sandbox_id):
        return os.path.join(self.state_dir, "run", sandbox_id)

    def leaks(self, sandbox_id):
        """What is left on the host of a sandbox; empty when nothing leaked."""
        found = []
        if os.path.lexists(self.subvolume(sandbox_id)):
            found.append("subvolume " + self.subvolume(sandbox_id))
        if os.path.lexists(self.run_dir(sandbox_id)):
            found.append("run dir " + self.run_dir(sandbox_id))
        for d in cgroup_dirs(sandbox_id):
            found.append("cgroup " + d)
        pids = set(cgroup_pids(sandbox_id)) | set(pids_mentioning_cgroup(sandbox_id))
        for p in sorted(pids):
            found.append("process %d" % p)
        for line in mountinfo_lines(sandbox_id):
            found.append("mount " + line.strip())
        return found

    # ---- CLI

    def cli(self, *args, input=None, env=None, key="admin", url=True, timeout=180):
        """Runs the real `space` CLI against this spaced. Returns CompletedProcess (bytes)."""
        e = dict(os.environ)
        e.pop("SPACE_API_KEY", None)
        e.pop("SPACE_URL", None)
        e["SPACE_STATE_DIR"] = os.path.join(self.tmp, "nonexistent")  # never read a real key file
        if url:
            e["SPACE_URL"] = self.url
        if key == "admin":
            key = self.key
        if key is not None:
            e["SPACE_API_KEY"] = key
        if env:
            e.update(env)
        if isinstance(input, str):
            input = input.encode()
        return subprocess.run([SPACE_CLI] + list(args), input=input, capture_output=True, env=e, timeout=timeout)

    # ---- cleanup

    def all_ids_on_disk(self):
        ids = set(self.known_ids)
        for d in (os.path.join(self.state_dir, "pool", "sandboxes"), os.path.join(self.state_dir, "run")):
            try:
                ids.update(x for x in os.listdir(d) if x.startswith("sb-"))
            except OSError:
                pass
        return ids

    def zombie_children(self):
        """Pids of zombie children of the running spaced (dead sandboxes nobody reaped)."""
        if not self.alive():
            return []
        found = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                st = proc_status(int(p))
            except OSError:
                continue
            if st.get("PPid") == str(self.proc.pid) and st.get("State", "").startswith("Z"):
                found.append(int(p))
        return found

    def stray_processes(self, by_mounts=False):
        """Processes other than the current spaced whose command line names this state dir
        (e.g. a sandbox child of a killed spaced stuck before it exec'd the agent); with
        by_mounts, also any process whose mount table shows this test's temporary dir."""
        found = []
        me = self.proc.pid if self.alive() else None
        own_mnt_ns = os.readlink("/proc/self/ns/mnt")
        for p in os.listdir("/proc"):
            if not p.isdigit() or int(p) == me:
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if self.state_dir.encode() + b"\0" in cmd:
                found.append(int(p))
                continue
            if not by_mounts:
                continue
            # A sandbox process of ours: in a mount namespace of its own (never the one this
            # test runs in: every process there sees the pool mount), whose mount table still
            # shows this test's temporary dir.
            try:
                if os.readlink("/proc/%s/ns/mnt" % p) == own_mnt_ns:
                    continue
                with open("/proc/%s/mountinfo" % p, "rb") as f:
                    if (self.tmp + "/").encode() in f.read():
                        found.append(int(p))
            except OSError:
                pass
        return found

    def lock_holders(self):
        """Pids holding <state>/spaced.lock open (any process, by inode)."""
        lock = os.path.join(self.state_dir, "spaced.lock")
        try:
            st = os.stat(lock)
        except OSError:
            return []
        holders = set()
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                for fd in os.listdir("/proc/%s/fd" % p):
                    try:
                        s2 = os.stat("/proc/%s/fd/%s" % (p, fd))
                    except OSError:
                        continue
                    if (s2.st_ino, s2.st_dev) == (st.st_ino, st.st_dev):
                        holders.add(int(p))
            except OSError:
                continue
        return sorted(holders)

    def cleanup(self):
        """Destroys what the tests created and removes the state directory. Best effort, never raises."""
        try:
            if self.alive():
                try:
                    status, data = self.request("GET", "/v1/sandboxes", timeout=10)
                    if status == 200:
                        for sb in data["sandboxes"]:
                            self.known_ids.add(sb["id"])
                            try:
                                self.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=30" % sb["id"], timeout=40)
                            except Exception:  # noqa: BLE001
                                pass
                except Exception:  # noqa: BLE001
                    pass
            try:
                self.stop(timeout=20)
            except Exception:  # noqa: BLE001
                self.kill9()
            for sid in self.all_ids_on_disk():
                kill_cgroup_processes(sid)
                remove_cgroup_dirs(sid)
            inst_dirs = self.instance_cgroup_dirs()
            for d in inst_dirs:
                for sid in os.listdir(d):
                    if sid.startswith("sb-") and os.path.isdir(os.path.join(d, sid)):
                        kill_cgroup_processes(sid)
                        remove_cgroup_dirs(sid)
            for d in inst_dirs:
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            # Half-made sandbox children of a killed spaced still carry its command line.
            strays = self.stray_processes(by_mounts=False)
            if len(strays) > 100:  # never a plausible number of our own leftovers: refuse
                log("harness: not killing %d 'stray' processes (suspicious)" % len(strays))
                strays = []
            for pid in strays:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            pool = os.path.join(self.state_dir, "pool")
            image = os.path.join(self.state_dir, "pool.img")
            # Mounts below the pool first (none expected), then the pool itself.
            for line in reversed(mountinfo_lines(self.tmp)):
                mnt = line.split()[4]
                subprocess.run(["umount", "-l", mnt], capture_output=True)
            if os.path.ismount(pool):
                subprocess.run(["umount", "-l", pool], capture_output=True)
            if os.path.exists(image):
                r = subprocess.run(["losetup", "-j", image], capture_output=True, text=True)
                for line in r.stdout.splitlines():
                    dev = line.split(":", 1)[0]
                    if dev:
                        subprocess.run(["losetup", "-d", dev], capture_output=True)
        finally:
            self.saved_logs = self.logs(tail=40)
            if self.pg is not None:
                self.pg.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)


# --------------------------------------------------------------------------- test bases

def require_root():
    if os.geteuid() != 0:
        raise unittest.SkipTest("integration tests need root (namespaces, cgroups, btrfs)")
    for p in (SPACED, SPACE_CLI, SPACE_AGENT):
        if not os.access(p, os.X_OK):
            raise unittest.SkipTest("binary missing: %s (build first)" % p)


def build_static_probe(name, out_dir):
    """Compiles tests/integration/<name>.c as a static binary (musl-gcc, else gcc -static),
    so that it runs inside any sandbox and on the host alike. Returns its path."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".c")
    out = os.path.join(out_dir, name)
    for cc in ("musl-gcc", "gcc"):
        if shutil.which(cc):
            r = subprocess.run([cc, "-static", "-O1", "-o", out, src], capture_output=True, text=True)
            if r.returncode == 0:
                return out
            log("%s failed: %s" % (cc, r.stderr))
    raise AssertionError("cannot build %s (musl-gcc or gcc with a static libc is needed)" % name)


def probe_output(text):
    """A probe's answer: one `NAME RESULT` line per question -> {NAME: RESULT}."""
    out = {}
    for line in text.strip().splitlines():
        name, _, result = line.partition(" ")
        out[name] = result
    return out


class SpacedTestCase(unittest.TestCase):
    """One spaced for the whole class (setUpClass), cleaned up in tearDownClass."""

    spaced_kwargs = {}

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.spaced = Spaced(**cls.spaced_kwargs)
        try:
            cls.spaced.start()
        except Exception:
            cls.spaced.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.spaced.cleanup()

    def new_sandbox(self, **body):
        sid = self.spaced.create(**body)
        self.addCleanup(self._destroy_quietly, sid)
        return sid

    def _destroy_quietly(self, sid):
        try:
            if self.spaced.alive():
                self.spaced.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid, timeout=70)
        except Exception:  # noqa: BLE001
            pass

    def assertError(self, resp, status, code=None):
        got_status, body = resp
        self.assertEqual(got_status, status, "expected %s %s, got %s: %r" % (status, code, got_status, body))
        self.assertIsInstance(body, dict, "error body is not JSON: %r" % (body,))
        self.assertIn("error", body)
        self.assertIsInstance(body["error"].get("message"), str)
        if code:
            self.assertEqual(body["error"].get("code"), code, repr(body))

    def run(self, result=None):
        # Show the daemon's log tail when a test fails (helps diagnosis).
        before = len(result.failures) + len(result.errors) if result is not None else 0
        seen = len(openapi_contract.violations)
        r = super().run(result)
        met = openapi_contract.violations[seen:]
        if result is not None and met and len(result.failures) + len(result.errors) == before:
            try:
                raise openapi_contract.ContractViolation("responses outside api/openapi.yaml:\n  " + "\n  ".join(met))
            except openapi_contract.ContractViolation:
                result.addFailure(self, sys.exc_info())
        if result is not None and len(result.failures) + len(result.errors) > before:
            sp = getattr(type(self), "spaced", None) or getattr(self, "spaced", None)
            if sp is not None:
                text = getattr(sp, "saved_logs", None) or sp.logs(tail=40)
                log("---- spaced logs for %s ----\n%s" % (self.id(), text))
        return r



class ProbeSandboxTestCase(SpacedTestCase):
    """One spaced and one sandbox holding a static probe built from probe_name + ".c"
    (self.probe: its host path; self.probe_path: where it is in the sandbox)."""

    probe_name = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix=cls.probe_name + "-")
        cls.probe_path = "/root/" + cls.probe_name
        try:
            cls.probe = build_static_probe(cls.probe_name, cls.tmp)
            cls.sid = cls.spaced.create()
            with open(cls.probe, "rb") as f:
                cls.spaced.put_file(cls.sid, cls.probe_path, f.read(), mode="0755")
        except Exception:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            cls.spaced.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        super().tearDownClass()

class FreshSpacedTestCase(SpacedTestCase):
    """A fresh spaced for every test (for restart / kill -9 tests)."""

    @classmethod
    def setUpClass(cls):
        require_root()

    @classmethod
    def tearDownClass(cls):
        pass

    def setUp(self):
        self.spaced = Spaced(**self.spaced_kwargs)
        self.addCleanup(self.spaced.cleanup)
        self.spaced.start()
