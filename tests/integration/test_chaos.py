"""Chaos: a seeded random sequence of sandbox lifecycle operations (create, create from a
snapshot raced by its deletion, exec, streamed commands, snapshot, fork, restore, pause,
resume, stop, start, destroy, delete snapshot), mostly submitted without waiting, on
namespace sandboxes and a few gvisor ones, whose memory state it works too (memory
snapshots, fork with memory, restore of a memory snapshot, hibernation and the wake by
resume: docs/memory-state.md), against a
real spaced that is killed with SIGKILL (now and then stopped with SIGTERM, or killed through
its fault point right after an operation's handler: the acknowledgement window) at random
moments and restarted on the same state directory.

At the end, after a last restart and once every operation has finished, the state must be
consistent: every operation ended, every sandbox in a final state with exactly the host
resources its state implies (rootfs subvolume, processes, cgroups, run dir), no orphan
subvolumes / cgroups / run dirs, no snapshot that was seen ready lost, files written before
a snapshot present in it (on disk, and when forked from or restored to), no zombies or
strays, and spaced.lock free once spaced stops. Memory state: every ready memory snapshot
has its image beside its subvolume, every hibernated sandbox its image and no runsc process,
no image (nor a partial one) that no snapshot or hibernated sandbox owns, and runsc runs
(processes, containers in its --root) only for running or paused, not hibernated, gvisor
sandboxes. No accepted operation failed because its
work had been done already ("… is stopped, not stopping") or because what it needed was
deleted after it was accepted, and a destroyed sandbox's command log is answered 410 (never
a made-up exit).

Environment:
  CHAOS_SEED  seed of the run (default: random; always printed)
  CHAOS_OPS   number of operations (default 300)
  CHAOS_KEEP  if set, failing runs copy spaced's logs to /tmp/chaos-<seed>-logs/
Needs runsc (scripts/install-deps installs it): without it the gvisor creates fail the run.

The sequence of decisions depends only on the seed, the server's answers and the states
it reports (which depend on timing); ids are the server's and differ from run to run.
Standard library only.
"""

import collections
import datetime
import glob
import http.client
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import unittest

from spaced_harness import (Spaced, cgroup_dirs, cgroup_pids, log, pids_mentioning_cgroup, read_cmdline,
                            require_root, wait_for)
from test_gvisor import runsc_containers, runsc_processes

SEED = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(1, 2 ** 31))
OPS = int(os.environ.get("CHAOS_OPS") or 300)
MAX_LIVE = 12                      # live (not destroyed) sandboxes the test keeps at most
MAX_GVISOR = 4                     # of which gvisor ones (each costs a runsc sandbox, ~1 s to start)
GVISOR_SHARE = 0.5                 # share of creates that ask for gvisor while fewer run
KILL_EVERY = (10, 40)              # operations between two daemon kills
GRACEFUL_SHARE = 0.15              # share of kills that are a SIGTERM instead of a SIGKILL
WINDOW_SHARE = 0.15                # share of kills through the fault point after a handler
INFLIGHT_SHARE = 0.35              # share of SIGKILLs with a POST in flight
WAIT_SHARE = 0.15                  # share of operations submitted with ?wait=true
OFF_STATE_SHARE = 0.15             # share of targets picked regardless of their state (-> 409s)
DRAIN_DEADLINE = 300               # seconds for every operation to finish at the end
STUCK_AFTER = 30                   # an operation running longer than this is reported as stuck
FINAL_STATES = ("running", "paused", "stopped", "failed", "destroyed")
TRANSIENT = ("creating", "starting", "stopping", "restoring", "destroying")

WEIGHTS = [("create", 9), ("exec", 16), ("snapshot", 12), ("fork", 6), ("restore", 7), ("pause", 7),
           ("resume", 6), ("stop", 7), ("start", 7), ("destroy", 6), ("delete_snapshot", 5),
           ("create_from_snapshot", 4), ("command", 4), ("memory_snapshot", 7), ("hibernate", 6),
           ("memory_fork", 3)]
FITS = {
    "exec": ("running",),
    "command": ("running",),
    "snapshot": ("running", "paused", "stopped"),
    "fork": ("running", "paused", "stopped"),
    "restore": ("running", "paused", "stopped"),
    "pause": ("running",),
    "resume": ("paused",),
    "stop": ("running", "paused"),
    "start": ("stopped",),
    "memory_snapshot": ("running", "paused"),
    "hibernate": ("running", "paused"),
    "memory_fork": ("running",),
}
MEMORY_KINDS = ("memory_snapshot", "hibernate", "memory_fork")  # on gvisor sandboxes only


def backtrace(pid):
    """Every thread's stack of a stuck process (gdb if present, else the kernel's), for the report."""
    out = []
    if shutil.which("gdb"):
        try:
            r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                                "-ex", "thread apply all bt 25"], capture_output=True, text=True, timeout=60)
            out.append("\n".join(line for line in r.stdout.splitlines()
                                 if line.startswith(("#", "Thread")) or "LWP" in line))
        except (OSError, subprocess.SubprocessError) as e:
            out.append("gdb failed: %r" % e)
    for task in sorted(glob.glob("/proc/%d/task/*" % pid)):
        try:
            with open(task + "/comm") as f:
                comm = f.read().strip()
            with open(task + "/stack") as f:
                stack = f.read().strip().replace("\n", " | ")
            out.append("task %s (%s): %s" % (os.path.basename(task), comm, stack[:300]))
        except OSError:
            pass
    return "\n".join(out)


def utc_now():
    """The time as spaced's log lines show it."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ChaosSpaced(Spaced):
    """Spaced whose notion of a stray process never reaches beyond this test's own spaced.

    The harness's stray_processes(by_mounts=True) also matches any process in another mount
    namespace whose mount table shows this test's temporary dir -- on a host where other
    spaced instances (other tests, benchmarks) run at the same time, mount propagation makes
    that true of *their* processes, and cleanup() would SIGKILL them. Here a stray is only a
    process naming this state dir on its command line (a half-started sandbox child of a
    killed spaced) or one inside this spaced instance's own cgroup tree."""

    def stray_processes(self, by_mounts=False):
        found = []
        me = self.proc.pid if self.alive() else None
        inst = self.instance()
        needle = ("/space/%s/" % inst) if inst else None
        for p in os.listdir("/proc"):
            if not p.isdigit() or int(p) in (me, os.getpid()):
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if self.state_dir.encode() + b"\0" in cmd:
                found.append(int(p))
                continue
            if by_mounts and needle:
                try:
                    with open("/proc/%s/cgroup" % p) as f:
                        if needle in f.read():
                            found.append(int(p))
                except OSError:
                    pass
        return found


class SB:
    def __init__(self, sid, seq, parent_snap=None):
        self.id = sid
        self.seq = seq                  # when the test learnt of it
        self.parent_snap = parent_snap  # a fork's snapshot (its rootfs starts as a copy of it)
        self.gone = False               # a destroy was accepted (or maybe accepted)
        self.gone_unsure = False        # the destroy's answer was cut or a 503 while stopping
        self.markers = []               # (seq, name, token) written by a successful exec
        self.restores = []              # seqs of restore attempts (accepted or maybe accepted)


class Snap:
    def __init__(self, snap_id, sandbox_id, seq):
        self.id = snap_id
        self.sandbox = sandbox_id
        self.seq = seq           # no later than the moment it was submitted
        self.ready_seq = None    # first time the API reported it ready
        self.deleted = False     # a DELETE answered 204
        self.ambiguous = False   # a DELETE was cut by a kill: it may be gone


class Chaos:
    def __init__(self, sp, seed, nops):
        self.sp = sp
        self.seed = seed
        self.nops = nops
        self.rng = random.Random(seed)
        self.seq = 0
        self.sbs = collections.OrderedDict()     # id -> SB, in the order the test learnt of them
        self.snaps = collections.OrderedDict()   # id -> Snap
        self.ops = collections.OrderedDict()     # op id -> (seq, kind, target)
        self.view_sb = {}                        # id -> state, as last listed
        self.view_rows = {}                      # id -> sandbox object, as last listed
        self.view_snap = {}                      # id -> snapshot object, as last listed
        self.problems = []
        self.notes = []
        self.stats = collections.Counter()
        self.shutting_down = False
        self.expected_exit = False
        self.last_kill_seq = 0
        self.kills = []                          # (seq, how)
        self.marker_n = 0
        self.reported_stuck = set()
        self.missing_subvol = set()
        self.trace = []                          # the last few steps, for problem reports
        self.shutdown_503 = []                   # (seq, what, target) answered 503 while stopping
        self.commands = []                       # (sandbox id, token, command id, last event id) read to the end

    # ------------------------------------------------------------------ reporting

    def problem(self, msg):
        msg = "[seq %d, %s] %s" % (self.seq, utc_now(), msg)
        log("CHAOS PROBLEM: " + msg + "\n  last steps: " + "; ".join(self.trace))
        self.problems.append(msg)

    def trace_step(self, what):
        self.trace.append("%d %s %s" % (self.seq, utc_now()[11:], what))
        del self.trace[:-8]

    def note(self, msg):
        self.notes.append("[seq %d] %s" % (self.seq, msg))

    # ------------------------------------------------------------------ HTTP

    def call(self, method, path, body=None, timeout=60, what=None):
        """One request; returns (status, data) or (None, exception) when the connection failed.
        Records a problem for any 5xx but a 503 while spaced shuts down (or an exec racing a
        state change), and for a connection failure while spaced should be serving."""
        what = what or method
        try:
            st, data = self.sp.request(method, path, body, timeout=timeout)
        except (OSError, http.client.HTTPException) as e:
            self.stats["conn-error " + what] += 1
            if not self.shutting_down and not self.expected_exit:
                self.problem("%s %s: connection failed while spaced should be serving: %r (spaced alive: %s)" % (
                    method, path, e, self.sp.alive()))
            return None, e
        self.stats["%s %s" % (what, st)] += 1
        if st >= 500:
            message = data.get("error", {}).get("message", "") if isinstance(data, dict) else ""
            if st == 503 and self.shutting_down:
                pass
            elif st == 503 and what == "exec" and "agent is not running" in message:
                self.note("exec answered 503 (agent not running, a racing state change): %s" % message)
            else:
                self.problem("%s %s %r -> %s %r" % (method, path, body, st, data))
        elif st >= 400 and st not in (404, 409):
            self.problem("%s %s %r -> unexpected %s %r" % (method, path, body, st, data))
        return st, data

    def record_op(self, data, kind, target):
        if isinstance(data, dict) and isinstance(data.get("operation"), dict):
            op = data["operation"]
            self.ops.setdefault(op["id"], (self.seq, kind, target))
            return op
        return None

    # ------------------------------------------------------------------ model

    def live(self):
        return [s for s in self.sbs.values() if not s.gone]

    def adopt_sb(self, sid, parent_snap=None):
        if sid not in self.sbs:
            self.sbs[sid] = SB(sid, self.seq, parent_snap)
            self.sp.known_ids.add(sid)
        return self.sbs[sid]

    def adopt_snap(self, snap_id, sandbox_id, seq=None):
        if snap_id not in self.snaps:
            self.snaps[snap_id] = Snap(snap_id, sandbox_id, self.seq if seq is None else seq)
        return self.snaps[snap_id]

    def refresh(self):
        """Lists sandboxes and snapshots; adopts what the test did not know (made by a request
        whose answer a kill cut off); checks that no snapshot seen ready has gone."""
        st, data = self.call("GET", "/v1/sandboxes", what="list")
        if st != 200:
            return False
        view = {s["id"]: s for s in data["sandboxes"]}
        for sid, s in view.items():
            if sid not in self.sbs:
                parent = s.get("lineage", {}).get("parent_snapshot_id")
                self.adopt_sb(sid, parent_snap=parent)
                # Made by a request in flight at the last kill: at the earliest then.
                self.sbs[sid].seq = self.last_kill_seq
                self.note("adopted sandbox %s (%s) not answered to the test" % (sid, s["state"]))
        for sid, sb in self.sbs.items():
            if sb.gone_unsure and sid in view and view[sid]["state"] != "destroying":
                sb.gone = sb.gone_unsure = False  # that destroy did not happen
            if not sb.gone and sid not in view:
                # Not listed: destroyed. Only the test destroys sandboxes.
                st2, one = self.call("GET", "/v1/sandboxes/" + sid, what="get")
                if st2 == 404:
                    self.problem("sandbox row %s vanished (404)" % sid)
                    sb.gone = True
                elif st2 == 200 and one.get("state") == "destroyed":
                    self.problem("sandbox %s is destroyed but the test never destroyed it: %r" % (sid, one))
                    sb.gone = True
        self.view_sb = {sid: s["state"] for sid, s in view.items()}
        self.view_rows = view
        st, data = self.call("GET", "/v1/snapshots", what="list")
        if st != 200:
            return False
        sview = {s["id"]: s for s in data["snapshots"]}
        for snap_id, s in sview.items():
            if snap_id not in self.snaps:
                self.adopt_snap(snap_id, s["sandbox_id"], seq=self.last_kill_seq)
                self.note("adopted snapshot %s (%s) not answered to the test" % (snap_id, s["state"]))
            if s["state"] == "ready" and self.snaps[snap_id].ready_seq is None:
                self.snaps[snap_id].ready_seq = self.seq
        for snap in self.snaps.values():
            if snap.ready_seq is not None and not snap.deleted and not snap.ambiguous and snap.id not in sview:
                self.problem("snapshot %s of %s, reported ready at seq %d, is gone (kills: %r)" % (
                    snap.id, snap.sandbox, snap.ready_seq, self.kills[-3:]))
                snap.deleted = True  # report it once
        self.view_snap = sview
        # A ready snapshot keeps its subvolume (checked as it happens, to date a loss).
        for snap_id, s in sview.items():
            if s["state"] == "ready" and snap_id not in self.missing_subvol:
                if not os.path.isdir(os.path.join(self.sp.state_dir, "pool", "snapshots", snap_id)):
                    self.missing_subvol.add(snap_id)
                    cut = self.snaps[snap_id].ambiguous
                    self.problem("snapshot %s of %s is listed ready but its subvolume is gone%s (found elsewhere: %r; kills: %r)" % (
                        snap_id, s["sandbox_id"],
                        " -- a DELETE of it was cut by a kill: it must end either deleted or intact" if cut else "",
                        self.find_subvolume(snap_id), self.kills[-2:]))
        return True

    def find_subvolume(self, name):
        pool = os.path.join(self.sp.state_dir, "pool")
        r = subprocess.run(["btrfs", "subvolume", "list", "-a", pool], capture_output=True, text=True)
        return [line.split()[-1] for line in r.stdout.splitlines() if name in line]

    def state_of(self, sid):
        return self.view_sb.get(sid, "destroyed" if self.sbs[sid].gone else "?")

    def runtime_of(self, sid):
        return (self.view_rows.get(sid) or {}).get("runtime", "namespaces")

    def hibernated(self, sid):
        row = self.view_rows.get(sid) or {}
        return row.get("state") == "paused" and "hibernated" in (row.get("state_reason") or "")

    def pick_sandbox(self, verb):
        live = self.live()
        if verb in MEMORY_KINDS:
            live = [s for s in live if self.runtime_of(s.id) == "gvisor"]
        if not live:
            return None
        fits = FITS.get(verb)
        if fits and self.rng.random() >= OFF_STATE_SHARE:
            good = [s for s in live if self.state_of(s.id) in fits]
            if good:
                return self.rng.choice(good)
        return self.rng.choice(live)

    def ready_snaps_of(self, sid):
        return [s for s in self.snaps.values()
                if s.sandbox == sid and not s.deleted and not s.ambiguous and s.ready_seq is not None]

    # ------------------------------------------------------------------ operations

    def wait_q(self):
        return "?wait=true&timeout_s=30" if self.rng.random() < WAIT_SHARE else ""

    def submit(self, method, path, body, kind, target, timeout=90):
        st, data = self.call(method, path, body, timeout=timeout, what=kind)
        self.trace_step("%s %s -> %s" % (method, path, st))
        self.record_op(data, kind, target)
        return st, data

    def do_create(self):
        body = {"metadata": {"chaos": str(self.seq)}, "resources": {"memory_mb": 256, "pids": 128}}
        gvisor = [s for s in self.live() if self.runtime_of(s.id) == "gvisor"]
        if len(gvisor) < MAX_GVISOR and self.rng.random() < GVISOR_SHARE:
            body["runtime"] = "gvisor"
            self.stats["gvisor creates"] += 1
        st, data = self.submit("POST", "/v1/sandboxes" + self.wait_q(), body, "create", None)
        if isinstance(data, dict) and isinstance(data.get("sandbox"), dict):
            self.adopt_sb(data["sandbox"]["id"])
        return st

    def do_create_from_snapshot(self):
        """A create from a ready snapshot, then at once a delete of that snapshot: the delete must
        be refused while the accepted create needs it (or the create refused if it came last)."""
        ready = [s for s in self.snaps.values() if s.ready_seq is not None and not s.deleted and not s.ambiguous]
        if not ready or len(self.live()) >= MAX_LIVE:
            return self.do_create()
        snap = self.rng.choice(ready)
        body = {"snapshot_id": snap.id, "metadata": {"chaos": str(self.seq)}}
        st, data = self.submit("POST", "/v1/sandboxes", body, "create_from_snapshot", None)
        if isinstance(data, dict) and isinstance(data.get("sandbox"), dict):
            self.adopt_sb(data["sandbox"]["id"], parent_snap=snap.id)
        if st == 202 and self.rng.random() < 0.6:
            dst, ddata = self.call("DELETE", "/v1/snapshots/" + snap.id, what="delete_snapshot")
            self.trace_step("DELETE %s right after a create from it -> %s" % (snap.id, dst))
            if dst == 204:
                snap.deleted = True
            elif dst is None:
                snap.ambiguous = True
        return st

    def do_command(self, sb):
        """A streamed command through the data plane, read to its exit; remembered so that the
        end can check what its events say once the sandbox may be destroyed."""
        st, sess = self.call("POST", "/v1/sandboxes/%s/sessions" % sb.id, {}, what="session")
        if st != 201:
            return st
        token = sess["attach_token"]
        try:
            st, c = self.sp.request("POST", "/v1/sandboxes/%s/commands" % sb.id, {"shell": "echo c-%d; echo e >&2" % self.seq},
                                    key=token, timeout=30)
        except (OSError, http.client.HTTPException):
            return None
        self.trace_step("command %s -> %s" % (sb.id, st))
        if st != 201:
            return st
        last = None
        try:
            es = self.sp.events("/v1/sandboxes/%s/commands/%s/events" % (sb.id, c["command_id"]), key=token, timeout=30)
            try:
                for ev in es:
                    last = ev.get("id") or last
                    if ev.get("event") == "gone":
                        last = None
            finally:
                es.close()
        except (OSError, http.client.HTTPException):
            return st
        if last:
            self.commands.append((sb.id, token, c["command_id"], last))
        return st

    def do_exec(self, sb):
        write = self.rng.random() < 0.6
        if write:
            self.marker_n += 1
            name = "chaos-%d" % self.marker_n
            token = "%d-%d-%s" % (self.seed, self.marker_n, sb.id)
            body = {"shell": "echo %s > /root/%s && cat /root/%s" % (token, name, name), "timeout_s": 10}
        else:
            body = {"shell": "ls /root | wc -l", "timeout_s": 10}
        st, data = self.call("POST", "/v1/sandboxes/%s/exec" % sb.id, body, timeout=60, what="exec")
        self.trace_step("exec %s -> %s" % (sb.id, st))
        if st == 200 and write:
            if data.get("exit_code") == 0 and data.get("stdout") == token + "\n":
                sb.markers.append((self.seq, name, token))
            else:
                self.problem("exec writing a marker into %s: %r" % (sb.id, data))
        return st

    def do_snapshot(self, sb):
        st, data = self.submit("POST", "/v1/sandboxes/%s/snapshots%s" % (sb.id, self.wait_q()),
                               {"label": "chaos-%d" % self.seq}, "snapshot", sb.id)
        if isinstance(data, dict) and isinstance(data.get("snapshot"), dict):
            snap = self.adopt_snap(data["snapshot"]["id"], sb.id)
            if st == 200 and data["snapshot"].get("state") == "ready" and snap.ready_seq is None:
                snap.ready_seq = self.seq
        return st

    def do_memory_snapshot(self, sb):
        st, data = self.submit("POST", "/v1/sandboxes/%s/snapshots%s" % (sb.id, self.wait_q()),
                               {"label": "chaos-mem-%d" % self.seq, "memory": True}, "memory_snapshot", sb.id)
        if isinstance(data, dict) and isinstance(data.get("snapshot"), dict):
            snap = self.adopt_snap(data["snapshot"]["id"], sb.id)
            if st == 200 and data["snapshot"].get("state") == "ready" and snap.ready_seq is None:
                snap.ready_seq = self.seq
        return st

    def do_hibernate(self, sb):
        st, _ = self.submit("POST", "/v1/sandboxes/%s/pause%s" % (sb.id, self.wait_q()), {"memory_to_disk": True},
                            "hibernate", sb.id)
        return st

    def do_memory_fork(self, sb):
        body = {"count": min(self.rng.randint(1, 2), max(1, MAX_GVISOR - len([
            s for s in self.live() if self.runtime_of(s.id) == "gvisor"]))), "memory": True}
        if len(self.live()) + body["count"] > MAX_LIVE:
            return None
        st, data = self.submit("POST", "/v1/sandboxes/%s/fork%s" % (sb.id, self.wait_q()), body, "memory_fork", sb.id)
        if isinstance(data, dict) and isinstance(data.get("sandboxes"), list):
            for child in data["sandboxes"]:
                parent = (child.get("lineage") or {}).get("parent_snapshot_id")
                if parent:
                    self.adopt_snap(parent, sb.id)
                self.adopt_sb(child["id"], parent_snap=parent)
        return st

    def do_fork(self, sb):
        body = {"count": min(self.rng.randint(1, 3), max(1, MAX_LIVE - len(self.live())))}
        ready = self.ready_snaps_of(sb.id)
        if ready and self.rng.random() < 0.5:
            body["snapshot_id"] = self.rng.choice(ready).id
        if self.rng.random() < 0.3:
            body["metadata"] = {"chaos": "fork-%d" % self.seq}
        st, data = self.submit("POST", "/v1/sandboxes/%s/fork%s" % (sb.id, self.wait_q()), body, "fork", sb.id)
        if isinstance(data, dict) and isinstance(data.get("sandboxes"), list):
            for child in data["sandboxes"]:
                parent = (child.get("lineage") or {}).get("parent_snapshot_id")
                if parent:
                    self.adopt_snap(parent, sb.id)
                self.adopt_sb(child["id"], parent_snap=parent)
        return st

    def do_restore(self, sb):
        ready = self.ready_snaps_of(sb.id)
        if not ready:
            return None
        snap = self.rng.choice(ready)
        st, data = self.submit("POST", "/v1/sandboxes/%s/restore%s" % (sb.id, self.wait_q()),
                               {"snapshot_id": snap.id}, "restore", sb.id)
        if st is None or st in (200, 202) or (isinstance(data, dict) and "operation" in data):
            sb.restores.append(self.seq)
        return st

    def do_action(self, sb, verb):
        if verb == "destroy":
            st, data = self.submit("DELETE", "/v1/sandboxes/%s%s" % (sb.id, self.wait_q()), None, verb, sb.id)
        else:
            st, data = self.submit("POST", "/v1/sandboxes/%s/%s%s" % (sb.id, verb, self.wait_q()), None, verb, sb.id)
        if verb == "destroy" and (st in (200, 202) or (isinstance(data, dict) and "operation" in data)):
            sb.gone = True
        return st

    def do_delete_snapshot(self):
        cands = [s for s in self.snaps.values() if not s.deleted and not s.ambiguous]
        if not cands:
            return None
        ready = [s for s in cands if s.ready_seq is not None]
        snap = self.rng.choice(ready if ready and self.rng.random() < 0.85 else cands)
        st, data = self.call("DELETE", "/v1/snapshots/" + snap.id, what="delete_snapshot")
        self.trace_step("DELETE %s -> %s" % (snap.id, st))
        if st == 204:
            snap.deleted = True
        elif st is None:
            snap.ambiguous = True
        return st

    def step(self, kind):
        if kind == "create":
            return self.do_create()
        if kind == "delete_snapshot":
            return self.do_delete_snapshot()
        if kind == "create_from_snapshot":
            return self.do_create_from_snapshot()
        sb = self.pick_sandbox(kind)
        if sb is None:
            return None
        if kind == "exec":
            return self.do_exec(sb)
        if kind == "command":
            return self.do_command(sb)
        if kind == "snapshot":
            return self.do_snapshot(sb)
        if kind == "fork":
            return self.do_fork(sb)
        if kind == "restore":
            return self.do_restore(sb)
        if kind == "memory_snapshot":
            return self.do_memory_snapshot(sb)
        if kind == "hibernate":
            return self.do_hibernate(sb)
        if kind == "memory_fork":
            return self.do_memory_fork(sb)
        return self.do_action(sb, kind)

    def choose(self):
        live = len(self.live())
        if live > MAX_LIVE:
            return "destroy"
        kind = self.rng.choices([k for k, _ in WEIGHTS], [w for _, w in WEIGHTS])[0]
        if kind in ("create", "fork", "create_from_snapshot", "memory_fork") and live >= MAX_LIVE:
            kind = "destroy"
        if kind not in ("create", "create_from_snapshot") and live == 0:
            kind = "create"
        return kind

    # ------------------------------------------------------------------ kills

    def inflight_request(self):
        """A POST to send while spaced gets killed (its answer may never come)."""
        live = self.live()
        choice = self.rng.choice(["create", "snapshot", "stop", "destroy", "fork", "restore", "delete_snapshot"])
        if choice == "create" or not live:
            return ("POST", "/v1/sandboxes", {"metadata": {"chaos": "inflight-%d" % self.seq}}, "create", None)
        sb = self.rng.choice(live)
        if choice == "snapshot" and self.runtime_of(sb.id) == "gvisor" and self.state_of(sb.id) in ("running", "paused"):
            # A kill mid-checkpoint or mid-hibernation: the old state or the new one, whole.
            if self.rng.random() < 0.5:
                return ("POST", "/v1/sandboxes/%s/pause" % sb.id, {"memory_to_disk": True}, "hibernate", sb)
            return ("POST", "/v1/sandboxes/%s/snapshots" % sb.id, {"label": "inflight", "memory": True}, "snapshot", sb)
        if choice == "snapshot":
            return ("POST", "/v1/sandboxes/%s/snapshots" % sb.id, {"label": "inflight"}, "snapshot", sb)
        if choice == "fork":
            return ("POST", "/v1/sandboxes/%s/fork" % sb.id, {"count": 1}, "fork", sb)
        if choice == "restore":
            ready = self.ready_snaps_of(sb.id)
            if ready:
                return ("POST", "/v1/sandboxes/%s/restore" % sb.id, {"snapshot_id": self.rng.choice(ready).id}, "restore", sb)
            return ("POST", "/v1/sandboxes/%s/snapshots" % sb.id, {"label": "inflight"}, "snapshot", sb)
        if choice == "delete_snapshot":
            cands = [s for s in self.snaps.values() if not s.deleted and not s.ambiguous]
            if cands:
                snap = self.rng.choice(cands)
                return ("DELETE", "/v1/snapshots/" + snap.id, None, "delete_snapshot", snap)
            return ("POST", "/v1/sandboxes/%s/stop" % sb.id, None, "stop", sb)
        if choice == "destroy":
            return ("DELETE", "/v1/sandboxes/" + sb.id, None, "destroy", sb)
        return ("POST", "/v1/sandboxes/%s/%s" % (sb.id, choice), None, choice, sb)

    def settle_inflight(self, req, result):
        method, path, body, kind, obj = req
        st, data = result.get("r", (None, result.get("e")))
        if st is not None:
            self.stats["inflight %s %s" % (kind, st)] += 1
            if st >= 500 and st != 503:
                self.problem("in-flight %s %s -> %s %r" % (method, path, st, data))
        else:
            self.stats["inflight %s cut" % kind] += 1
        target = obj.id if isinstance(obj, (SB, Snap)) else None
        self.record_op(data, kind, target)
        answered = st is not None
        accepted = st in (200, 202)
        if kind == "create" and accepted:
            self.adopt_sb(data["sandbox"]["id"])
        elif kind == "snapshot" and accepted:
            self.adopt_snap(data["snapshot"]["id"], obj.id, seq=self.last_kill_seq)
        elif kind == "fork" and accepted:
            for child in data["sandboxes"]:
                parent = (child.get("lineage") or {}).get("parent_snapshot_id")
                if parent:
                    self.adopt_snap(parent, obj.id, seq=self.last_kill_seq)
                self.adopt_sb(child["id"], parent_snap=parent)
        elif kind == "restore" and (accepted or not answered or st == 503):
            obj.restores.append(self.seq)
        elif kind == "destroy" and accepted:
            obj.gone = True
        elif kind == "destroy" and (not answered or st == 503):
            obj.gone = obj.gone_unsure = True  # settled by the next refresh
        elif kind == "delete_snapshot":
            if st == 204:
                obj.deleted = True
            elif not answered or st == 503:
                obj.ambiguous = True

    def check_stuck(self):
        """Operations running for much longer than any should (checked before each kill)."""
        if not self.sp.alive():
            return
        st, data = self.call("GET", "/v1/operations?state=running", what="list-ops")
        if st != 200:
            return
        now = time.time()
        stuck = []
        for op in data["operations"]:
            try:
                started = datetime.datetime.strptime(op["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
            except (TypeError, ValueError):
                continue
            if now - started > STUCK_AFTER and op["id"] not in self.reported_stuck:
                self.reported_stuck.add(op["id"])
                stuck.append("%s %s of %s running for %.0f s" % (op["id"], op["kind"], op["target"], now - started))
        if stuck:
            pid = self.sp.proc.pid
            children = []
            for p in os.listdir("/proc"):
                try:
                    with open("/proc/%s/stat" % p) as f:
                        if p.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                            children.append(int(p))
                except (OSError, ValueError, IndexError):
                    pass
            half = [c for c in children if read_cmdline(c) == read_cmdline(pid)]
            self.problem("operations stuck: %s; spaced's threads:\n%s\nits half-started sandbox children %r:\n%s" % (
                "; ".join(stuck), backtrace(pid), half, "\n".join(backtrace(c) for c in half[:2])))
        return bool(stuck)

    def kill(self, how):
        sp = self.sp
        self.check_stuck()
        self.kills.append((self.seq, how))
        self.trace_step("kill %s" % how)
        self.last_kill_seq = self.seq
        self.stats["kill " + how] += 1
        self.expected_exit = True
        if not sp.alive():
            self.problem("spaced died by itself (exit %s) before the planned %s" % (sp.proc.returncode, how))
        elif how == "sigterm":
            self.shutting_down = True
            sp.proc.send_signal(signal.SIGTERM)
            # A few requests while it stops: 503 (or a refused connection) is the right answer.
            for _ in range(2):
                req = self.inflight_request()
                st, data = self.call(req[0], req[1], req[2], timeout=10, what="during-sigterm " + req[3])
                if st == 503:
                    target = req[4].id if isinstance(req[4], (SB, Snap)) else None
                    self.shutdown_503.append((self.seq, req[3], target, data))
                self.settle_inflight(req, {"r": (st, data)} if st is not None else {"e": data})
            t0 = time.monotonic()
            try:
                rc = sp.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.problem("spaced did not exit within 60 s of SIGTERM; killing it. Threads:\n%s" % backtrace(sp.proc.pid))
                sp.kill9()
                rc = None
            if rc not in (0, None):
                self.problem("spaced exited with %s after SIGTERM" % rc)
            self.stats["sigterm seconds x10"] += int((time.monotonic() - t0) * 10)
        elif how == "window" and sp.alive():
            # spaced again, set to die right after the next operation's handler (before the
            # worker writes the operation's end, where an older spaced left it unfinished).
            sp.kill9()
            sp.env = {"SPACED_FAULT_KILL": "operation.after_handler"}
            try:
                sp.start(timeout=120)
            except (RuntimeError, OSError) as failed:
                # An operation left unfinished by the last kill was re-run at start and its
                # handler ended first: killed at the fault point during start-up, before it
                # said it listens or while the harness asked for its health (a reset).
                try:
                    sp.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    raise failed
                if sp.proc.returncode != -9:
                    raise
                self.stats["window hit at start-up"] += 1
            if sp.alive():
                req = self.inflight_request()
                st, data = self.call(req[0], req[1], req[2], timeout=30, what="window " + req[3])
                self.settle_inflight(req, {"r": (st, data)} if st is not None else {"e": data})
                try:
                    wait_for(lambda: not sp.alive(), timeout=30, what="spaced to die at the fault point")
                except AssertionError:
                    self.note("no handler ran within 30 s of a %s in the window mode" % req[3])
            sp.kill9()
            sp.env = None
        elif how == "sigkill-inflight" and sp.alive():
            req = self.inflight_request()
            result = {}

            def send():
                try:
                    result["r"] = sp.request(req[0], req[1], req[2], timeout=30)
                except (OSError, http.client.HTTPException) as e:
                    result["e"] = e

            t = threading.Thread(target=send)
            t.start()
            time.sleep(self.rng.choice([0, 0.001, 0.003, 0.01, 0.03]))
            sp.kill9()
            t.join(60)
            self.settle_inflight(req, result)
        else:
            time.sleep(self.rng.choice([0, 0, 0, 0.005, 0.02, 0.1, 0.4]))
            sp.kill9()
        # Nothing of the dead spaced may keep its lock, nor be left half-started.
        try:
            wait_for(lambda: not sp.lock_holders(), timeout=15, what="spaced.lock released")
        except AssertionError:
            self.problem("spaced.lock still held after %s by %r" % (
                how, [(p, read_cmdline(p)[:120]) for p in sp.lock_holders()]))
        # A sandbox child caught between clone() and exec of its agent still carries spaced's
        # command line for a moment; it must finish (exec or exit) on its own, promptly.
        t0 = time.monotonic()
        strays = sp.stray_processes()
        while strays and time.monotonic() - t0 < 10:
            time.sleep(0.1)
            strays = sp.stray_processes()
        if strays:
            self.problem("processes of the stopped spaced left behind after %s: %r\n%s" % (
                how, [(p, read_cmdline(p)[:120], self.proc_state(p)) for p in strays],
                "\n".join(backtrace(p) for p in strays[:2])))
        elif time.monotonic() - t0 > 1:
            self.note("half-started sandbox children took %.1f s to go after %s" % (time.monotonic() - t0, how))
        self.shutting_down = False
        sp.start(timeout=120)
        self.expected_exit = False
        self.refresh()
        if how == "sigterm":
            self.check_503_applied()

    def check_503_applied(self):
        """A request answered 503 "shutting down" must not take effect after all."""
        for seq, kind, target, body in self.shutdown_503:
            if seq != self.seq:
                continue
            applied = None
            if kind == "create":
                made = [sid for sid, row in self.view_rows.items()
                        if (row.get("metadata") or {}).get("chaos") == "inflight-%d" % seq]
                if made:
                    applied = "sandbox %s was created" % made
            elif kind == "destroy":
                if self.view_sb.get(target) in (None, "destroying"):
                    applied = "sandbox %s was destroyed" % target
            elif kind in ("snapshot", "fork"):
                made = [s["id"] for s in self.view_snap.values()
                        if s["sandbox_id"] == target and self.snaps.get(s["id"]) is not None
                        and self.snaps[s["id"]].seq == self.last_kill_seq and s["label"] in ("inflight", "fork")]
                if made:
                    applied = "snapshot %s of %s was taken" % (made, target)
            if applied:
                self.problem("%s answered 503 %r while spaced stopped, yet after the restart %s" % (kind, body, applied))

    # ------------------------------------------------------------------ main loop

    def run(self):
        sp = self.sp
        next_kill = self.rng.randint(*KILL_EVERY)
        self.refresh()
        while self.seq < self.nops:
            self.seq += 1
            if not sp.alive():
                self.problem("spaced died by itself (exit %s); log tail:\n%s" % (sp.proc.returncode, sp.logs(tail=30)))
                self.expected_exit = True
                sp.start(timeout=120)
                self.expected_exit = False
            kind = self.choose()
            self.stats["step " + kind] += 1
            self.step(kind)
            if self.seq % 5 == 0 and self.check_stuck():
                # A stuck operation would stall the rest of the run: restart now (and go on).
                self.kill("sigkill")
                next_kill = self.seq + self.rng.randint(*KILL_EVERY)
            elif self.seq >= next_kill:
                r = self.rng.random()
                how = "sigterm" if r < GRACEFUL_SHARE else "window" if r < GRACEFUL_SHARE + WINDOW_SHARE else (
                    "sigkill-inflight" if r < GRACEFUL_SHARE + WINDOW_SHARE + (1 - GRACEFUL_SHARE - WINDOW_SHARE) * INFLIGHT_SHARE
                    else "sigkill")
                self.kill(how)
                next_kill = self.seq + self.rng.randint(*KILL_EVERY)
            else:
                self.refresh()
        # The last restart: after a kill or a graceful stop, with whatever is in flight.
        self.seq += 1
        self.kill(self.rng.choice(["sigkill", "sigkill-inflight", "sigterm"]))

    # ------------------------------------------------------------------ the end

    def drain(self):
        """Waits until no operation is pending or running and no sandbox is in a transient
        state; gives up early when an operation is stuck (it would never end)."""

        def busy():
            ops = []
            for state in ("pending", "running"):
                st, data = self.call("GET", "/v1/operations?state=" + state, what="list-ops")
                if st != 200:
                    return ["GET operations -> %s" % st]
                ops += [(o["id"], o["kind"], o["target"], o["state"]) for o in data["operations"]]
            st, data = self.call("GET", "/v1/sandboxes", what="list")
            if st != 200:
                return ["GET sandboxes -> %s" % st]
            return ops + [(s["id"], s["state"]) for s in data["sandboxes"] if s["state"] in TRANSIENT]

        t0 = time.monotonic()
        left = busy()
        while left and time.monotonic() - t0 < DRAIN_DEADLINE:
            time.sleep(0.5)
            left = busy()
            if left and int(time.monotonic() - t0) % 10 == 0:
                before = len(self.reported_stuck)
                self.check_stuck()
                if len(self.reported_stuck) > before:
                    break
        if left:
            self.problem("after %.0f s, not everything ended: %r" % (time.monotonic() - t0, left[:10]))
        self.stats["drain seconds"] = int(time.monotonic() - t0)

    def expected_in_snapshot(self, snap_id, depth=0):
        """Markers that must be in a snapshot: written into its sandbox before it was submitted
        with no restore of that sandbox since, and those of the snapshot a fork started from."""
        snap = self.snaps.get(snap_id)
        if snap is None or depth > 20:
            return {}
        sb = self.sbs.get(snap.sandbox)
        if sb is None:
            return {}
        upto = snap.ready_seq if snap.ready_seq is not None else self.seq
        found = {}
        for seq, name, token in sb.markers:
            if seq < snap.seq and not any(seq < r <= upto for r in sb.restores):
                found[name] = token
        if sb.parent_snap and not any(r <= upto for r in sb.restores):
            for name, token in self.expected_in_snapshot(sb.parent_snap, depth + 1).items():
                found.setdefault(name, token)
        return found

    def expected_in_sandbox(self, sb):
        last_restore = max(sb.restores) if sb.restores else -1
        found = {}
        if sb.parent_snap and last_restore < 0:
            found.update(self.expected_in_snapshot(sb.parent_snap))
        for seq, name, token in sb.markers:
            if seq > last_restore:
                found[name] = token
        return found

    def check_markers_on_disk(self, root, expected, what):
        bad = []
        for name, token in sorted(expected.items()):
            try:
                with open(os.path.join(root, "root", name)) as f:
                    got = f.read()
            except OSError as e:
                got = "<%s>" % e.strerror
            if got != token + "\n":
                bad.append((name, token, got))
        if bad:
            self.problem("%s: %d of %d files written before it are missing or wrong: %r" % (
                what, len(bad), len(expected), bad[:5]))
        self.stats["markers checked"] += len(expected)

    def final_checks(self):
        sp = self.sp
        state_dir = sp.state_dir
        # ---- operations
        unfinished, failed = [], collections.Counter()
        # A destroy accepted while an earlier operation on its sandbox waits or runs
        # supersedes it: that operation fails saying the sandbox is being destroyed, which
        # is the answer it owes, not a re-run into its own finished work.
        destroys = collections.defaultdict(list)
        for seq, kind, target in self.ops.values():
            if kind == "destroy":
                destroys[target].append(seq)
        for op_id, (seq, kind, target) in self.ops.items():
            st, op = self.call("GET", "/v1/operations/" + op_id, what="get-op")
            if st != 200:
                self.problem("operation %s (%s of %s, seq %d) -> %s %r" % (op_id, kind, target, seq, st, op))
                continue
            if op["state"] not in ("succeeded", "failed") or not op.get("finished_at"):
                unfinished.append(op)
            if op["state"] == "failed":
                err = op.get("error") or {}
                if not err.get("code"):
                    self.problem("failed operation without an error: %r" % op)
                failed[(op["kind"], err.get("code"))] += 1
                message = err.get("message") or ""
                if (kind != "destroy" and err.get("code") == "invalid_state" and "destroy" in message
                        and any(d >= seq for d in destroys[target])):
                    self.stats["superseded by a later destroy"] += 1
                    continue
                if any(", not " + t in message for t in TRANSIENT):
                    self.problem("operation %s %s of %s re-ran into work already done: %s" % (
                        op_id, op["kind"], op["target"], err.get("message")))
                if kind == "create_from_snapshot":
                    self.problem("accepted create from a snapshot %s failed: %s %s" % (
                        op_id, err.get("code"), err.get("message")))
                if err.get("code") not in ("invalid_state", "not_found"):
                    self.problem("operation %s %s of %s failed with %s: %s" % (
                        op_id, op["kind"], op["target"], err.get("code"), err.get("message")))
        if unfinished:
            self.problem("operations not ended: %r" % unfinished[:10])
        for (kind, code), n in sorted(failed.items()):
            self.stats["op failed %s %s" % (kind, code)] = n
        for state in ("pending", "running"):
            st, data = self.call("GET", "/v1/operations?state=" + state, what="list-ops")
            if st == 200 and data["operations"]:
                self.problem("operations still %s: %r" % (state, data["operations"][:5]))

        # ---- sandbox rows
        _, data = self.call("GET", "/v1/sandboxes", what="list")
        rows = {s["id"]: s for s in data["sandboxes"]}
        _, data = self.call("GET", "/v1/sandboxes?state=destroyed", what="list")
        rows.update({s["id"]: s for s in data["sandboxes"]})
        for sid in self.sbs:
            if sid not in rows:
                self.problem("sandbox %s (known to the test) has no row" % sid)
        states = {sid: s["state"] for sid, s in rows.items()}
        self.stats.update("final sandbox " + s for s in states.values())
        for sid, s in rows.items():
            if s["state"] not in FINAL_STATES:
                self.problem("sandbox %s left in %s (%r)" % (sid, s["state"], s.get("state_reason")))

        subvols = set(os.listdir(os.path.join(state_dir, "pool", "sandboxes")))
        run_dirs = set(os.listdir(os.path.join(state_dir, "run")))
        inst_cgroups = {}
        for d in sp.instance_cgroup_dirs():
            for name in os.listdir(d):
                if os.path.isdir(os.path.join(d, name)):
                    inst_cgroups.setdefault(name, []).append(os.path.join(d, name))
        live_pids = set()
        for sid, state in sorted(states.items()):
            pids = sorted(set(cgroup_pids(sid)) | set(pids_mentioning_cgroup(sid)))
            if state in ("running", "paused", "stopped") and sid not in subvols:
                self.problem("%s is %s but has no rootfs subvolume" % (sid, state))
            if state in ("destroyed",) and sid in subvols:
                self.problem("%s is destroyed but its subvolume is still there" % sid)
            hibernated = state == "paused" and "hibernated" in (rows[sid].get("state_reason") or "")
            gvisor = rows[sid].get("runtime") == "gvisor"
            if hibernated:
                # Its memory is on disk: no process of it runs, its RAM is released.
                if pids:
                    self.problem("%s is hibernated but has processes %r" % (sid, [(p, read_cmdline(p)[:60]) for p in pids]))
                if runsc_processes(sid):
                    self.problem("%s is hibernated but runsc still runs it: %r" % (sid, runsc_processes(sid)))
            elif state in ("running", "paused"):
                live_pids.update(pids)
                if not pids:
                    self.problem("%s is %s but has no processes" % (sid, state))
                if gvisor and not runsc_processes(sid):
                    self.problem("gvisor %s is %s but no runsc process runs it" % (sid, state))
                frozen = None if gvisor else self.frozen(sid)  # runsc pauses its sandbox itself
                if frozen is not None and frozen != (state == "paused"):
                    self.problem("%s is %s but its cgroup is %s" % (sid, state, "frozen" if frozen else "thawed"))
                if sid not in run_dirs:
                    self.problem("%s is %s but has no run dir" % (sid, state))
            else:
                if runsc_processes(sid):
                    self.problem("%s is %s but runsc still runs it: %r" % (sid, state, runsc_processes(sid)))
                if pids:
                    self.problem("%s is %s but has processes %r" % (sid, state, [(p, read_cmdline(p)[:60]) for p in pids]))
                if cgroup_dirs(sid):
                    self.problem("%s is %s but has cgroup dirs %r" % (sid, state, cgroup_dirs(sid)))
                if sid in run_dirs:
                    self.problem("%s is %s but has a run dir" % (sid, state))
        for name in sorted(subvols):
            if states.get(name) in (None, "destroyed"):
                self.problem("subvolume pool/sandboxes/%s without a live row (row: %s)" % (name, states.get(name)))
        for name in sorted(run_dirs):
            if name not in states:
                self.problem("run dir run/%s without a row" % name)
        for name, dirs in sorted(inst_cgroups.items()):
            if states.get(name) not in ("running", "paused"):
                self.problem("cgroup %r without a running/paused row (row: %s)" % (dirs, states.get(name)))
        awake_gvisor = {sid for sid, s in rows.items() if s.get("runtime") == "gvisor" and s["state"] in ("running", "paused")
                        and "hibernated" not in (s.get("state_reason") or "")}
        for cid in runsc_containers(state_dir):
            if cid not in awake_gvisor:
                self.problem("runsc container %s (in spaced's --root) without a running/paused gvisor row (row: %s)" % (
                    cid, rows.get(cid, {}).get("state")))
        self.stats["final gvisor awake"] = len(awake_gvisor)
        self.stats["final hibernated"] = sum(1 for s in rows.values() if s["state"] == "paused"
                                             and "hibernated" in (s.get("state_reason") or ""))
        # Running sandboxes answer.
        for sid, state in sorted(states.items()):
            if state == "running":
                st, r = self.call("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "echo ok", "timeout_s": 10},
                                  timeout=40, what="final-exec")
                if st != 200 or r.get("stdout") != "ok\n":
                    self.problem("running %s does not answer exec: %s %r" % (sid, st, r))

        # ---- snapshots
        _, data = self.call("GET", "/v1/snapshots", what="list")
        snap_rows = {s["id"]: s for s in data["snapshots"]}
        snap_subvols = set(os.listdir(os.path.join(state_dir, "pool", "snapshots")))
        for snap_id, s in snap_rows.items():
            if s["state"] != "ready":
                self.problem("snapshot %s still %s after every operation ended" % (snap_id, s["state"]))
            elif snap_id not in snap_subvols and snap_id not in self.missing_subvol:
                self.problem("snapshot %s is ready but pool/snapshots/%s is missing (found elsewhere: %r)" % (
                    snap_id, snap_id, self.find_subvolume(snap_id)))
        for name in sorted(snap_subvols - set(snap_rows)):
            self.problem("subvolume pool/snapshots/%s without a row" % name)
        for snap in self.snaps.values():
            if snap.ready_seq is not None and not snap.deleted and not snap.ambiguous and snap.id not in snap_rows:
                self.problem("snapshot %s (ready at seq %d) lost" % (snap.id, snap.ready_seq))
            if snap.deleted and snap.id in snap_rows:
                self.problem("snapshot %s deleted (204) but still listed" % snap.id)
        self.stats["final snapshots"] = len(snap_rows)

        # ---- memory images: each one whole and owned, none without its filesystem half
        memory_dir = os.path.join(state_dir, "pool", "memory")
        images = set(os.listdir(memory_dir)) if os.path.isdir(memory_dir) else set()
        for snap_id, s in snap_rows.items():
            if s.get("kind") != "memory" or s["state"] != "ready":
                continue
            self.stats["final memory snapshots"] += 1
            if not os.path.isfile(os.path.join(memory_dir, snap_id, "checkpoint.img")):
                self.problem("memory snapshot %s is ready but its image pool/memory/%s is not whole (found: %r)" % (
                    snap_id, snap_id, sorted(os.listdir(os.path.join(memory_dir, snap_id)))
                    if snap_id in images else None))
            if snap_id not in snap_subvols:
                self.problem("memory snapshot %s has its image but not its filesystem (pool/snapshots/%s)" % (snap_id, snap_id))
        for sid, s in rows.items():
            if s["state"] == "paused" and "hibernated" in (s.get("state_reason") or ""):
                if not os.path.isfile(os.path.join(memory_dir, sid, "checkpoint.img")):
                    self.problem("%s is hibernated but its image pool/memory/%s is not whole" % (sid, sid))
                if sid not in subvols:
                    self.problem("%s is hibernated but its rootfs is gone" % sid)
        for name in sorted(images):
            owner = snap_rows.get(name)
            if name.endswith(".partial") or name.startswith("import-"):
                self.problem("pool/memory/%s left after every operation ended" % name)
            elif owner is not None:
                if owner.get("kind") != "memory":
                    self.problem("pool/memory/%s belongs to a %s snapshot" % (name, owner.get("kind")))
            elif name in rows and rows[name]["state"] in ("running", "paused"):
                if "hibernated" not in (rows[name].get("state_reason") or ""):
                    self.problem("pool/memory/%s left for %s, which is %s and not hibernated" % (name, name, rows[name]["state"]))
            else:
                self.problem("pool/memory/%s owned by no snapshot and no hibernated sandbox (row: %s)" % (
                    name, rows.get(name, {}).get("state")))

        # ---- command logs: after its exit nothing more, and once destroyed 410 (never a made-up exit)
        for sid, token, cid, last in self.commands:
            path = "/v1/sandboxes/%s/commands/%s/events?after=%s" % (sid, cid, last)
            if states.get(sid) == "destroyed":
                try:
                    st, data = sp.request("GET", path, key=token, timeout=30)
                except (OSError, http.client.HTTPException) as e:
                    self.problem("events of %s in destroyed %s: %r" % (cid, sid, e))
                    continue
                self.stats["events destroyed %s" % st] += 1
                if st not in (401, 410):
                    self.problem("events of %s after its sandbox %s was destroyed -> %s %r" % (cid, sid, st, data))
                continue
            try:
                es = sp.events(path, key=token, timeout=30)
                after = list(es) if es.status == 200 else None
                es.close()
            except (OSError, http.client.HTTPException) as e:
                self.problem("events of %s in %s after its exit: %r" % (cid, sid, e))
                continue
            if after:
                self.problem("events of %s after its exit (id %s) sent more: %r" % (cid, last, after[:3]))

        # ---- files written before a snapshot are in it (on disk)
        for snap_id in sorted(snap_rows):
            if snap_rows[snap_id]["state"] == "ready" and snap_id in snap_subvols:
                exp = self.expected_in_snapshot(snap_id)
                if exp:
                    self.check_markers_on_disk(os.path.join(state_dir, "pool", "snapshots", snap_id), exp,
                                               "snapshot %s of %s" % (snap_id, snap_rows[snap_id]["sandbox_id"]))
        for sid, state in sorted(states.items()):
            if state in ("running", "paused", "stopped") and sid in subvols and sid in self.sbs:
                exp = self.expected_in_sandbox(self.sbs[sid])
                if exp:
                    self.check_markers_on_disk(os.path.join(state_dir, "pool", "sandboxes", sid), exp,
                                               "rootfs of %s (%s)" % (sid, state))

        # ---- zombies and strays
        try:
            wait_for(lambda: sp.zombie_children() == [], timeout=15, what="no zombie children")
        except AssertionError:
            self.problem("zombie children of spaced: %r" % [(p, read_cmdline(p)) for p in sp.zombie_children()])
        strays = [p for p in sp.stray_processes(by_mounts=True) if p not in live_pids]
        if strays:
            self.problem("stray processes (not in a running/paused sandbox): %r" % [
                (p, read_cmdline(p)[:100], self.cgroup_of(p)) for p in strays])
        return states, snap_rows

    @staticmethod
    def proc_state(pid):
        try:
            with open("/proc/%d/status" % pid) as f:
                st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            with open("/proc/%d/wchan" % pid) as f:
                wchan = f.read()
            return "%s ppid=%s wchan=%s" % (st.get("State"), st.get("PPid"), wchan)
        except OSError:
            return "gone"

    @staticmethod
    def cgroup_of(pid):
        try:
            with open("/proc/%d/cgroup" % pid) as f:
                return [line.strip() for line in f if "space" in line][:1]
        except OSError:
            return []

    @staticmethod
    def frozen(sid):
        for d in cgroup_dirs(sid):
            for fname, on in (("freezer.state", "FROZEN"), ("cgroup.freeze", "1")):
                p = os.path.join(d, fname)
                if os.path.exists(p):
                    try:
                        with open(p) as f:
                            return f.read().strip() == on
                    except OSError:
                        return None
        return None

    def sample_restore_and_fork(self, states, snap_rows):
        """Files written before a snapshot are there when forking from it or restoring to it."""
        cands = []
        for snap_id in sorted(snap_rows, key=lambda i: self.snaps[i].seq if i in self.snaps else 0):
            row = snap_rows[snap_id]
            exp = self.expected_in_snapshot(snap_id)
            if row["state"] == "ready" and exp and states.get(row["sandbox_id"]) in ("running", "paused", "stopped"):
                cands.append((snap_id, row["sandbox_id"], exp))
        forks = self.rng.sample(cands, min(3, len(cands)))
        for snap_id, parent, exp in forks:
            st, data = self.submit("POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=120" % parent,
                                   {"snapshot_id": snap_id, "count": 1}, "final-fork", parent, timeout=150)
            if st != 200:
                self.problem("fork of %s from %s: %s %r" % (parent, snap_id, st, data))
                continue
            child = data["sandboxes"][0]["id"]
            self.adopt_sb(child, parent_snap=snap_id)
            self.check_markers_by_exec(child, exp, "fork %s of %s from %s" % (child, parent, snap_id))
            self.stats["sampled forks"] += 1
        used = {p for _, p, _ in forks}
        rest = [c for c in cands if c[1] not in used]
        for snap_id, sid, exp in self.rng.sample(rest, min(2, len(rest))):
            st, data = self.submit("POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=120" % sid,
                                   {"snapshot_id": snap_id}, "final-restore", sid, timeout=150)
            if st != 200:
                self.problem("restore of %s to %s: %s %r" % (sid, snap_id, st, data))
                continue
            if data["sandbox"]["state"] == "stopped":
                st, data = self.submit("POST", "/v1/sandboxes/%s/start?wait=true&timeout_s=120" % sid, None,
                                       "final-start", sid, timeout=150)
                if st != 200:
                    self.problem("start of %s after restore: %s %r" % (sid, st, data))
                    continue
            self.check_markers_by_exec(sid, exp, "%s restored to %s" % (sid, snap_id))
            self.stats["sampled restores"] += 1

    def check_markers_by_exec(self, sid, expected, what):
        names = sorted(expected)
        script = "; ".join("cat /root/%s 2>/dev/null || echo MISSING" % n for n in names)
        st, r = self.call("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": script, "timeout_s": 20}, timeout=60,
                          what="final-exec")
        want = "".join(expected[n] + "\n" for n in names)
        if st != 200 or r.get("stdout") != want:
            self.problem("%s: files written before the snapshot differ: want %r got %s %r" % (
                what, want[:300], st, r if st != 200 else r.get("stdout", "")[:300]))
        self.stats["markers checked by exec"] += len(names)


class ChaosTest(unittest.TestCase):

    def setUp(self):
        require_root()
        log("CHAOS_SEED=%d CHAOS_OPS=%d  (rerun: CHAOS_SEED=%d python3 %s)" % (SEED, OPS, SEED, __file__))
        self.sp = ChaosSpaced()
        self.chaos = None
        self.passed = False
        self.addCleanup(self.cleanup)
        self.sp.start()

    def cleanup(self):
        sp = self.sp
        if not self.passed and os.environ.get("CHAOS_KEEP"):
            dest = "/tmp/chaos-%d-logs" % SEED
            os.makedirs(dest, exist_ok=True)
            for p in glob.glob(os.path.join(sp.tmp, "spaced-*.*")):
                shutil.copy(p, dest)
            log("spaced logs kept in %s" % dest)
        sp.cleanup()
        # Whatever the cleanup could not remove would stay on the host.
        leftovers = {sid: sp.leaks(sid) for sid in sp.known_ids}
        leftovers = {k: v for k, v in leftovers.items() if v}
        if leftovers:
            log("CHAOS: leftovers after cleanup: %r" % leftovers)

    def test_chaos(self):
        sp = self.sp
        chaos = self.chaos = Chaos(sp, SEED, OPS)
        t0 = time.monotonic()
        try:
            chaos.run()
            chaos.drain()
            states, snap_rows = chaos.final_checks()
            chaos.sample_restore_and_fork(states, snap_rows)
            chaos.drain()
            # A graceful stop ends cleanly and frees the lock (sandboxes keep running).
            chaos.check_stuck()
            sp.proc.send_signal(signal.SIGTERM)
            try:
                rc = sp.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                chaos.problem("spaced did not exit within 60 s of the final SIGTERM; killing it. Threads:\n%s" % (
                    backtrace(sp.proc.pid)))
                sp.kill9()
                rc = None
            if rc not in (0, None):
                chaos.problem("spaced exited with %s after the final SIGTERM" % rc)
            try:
                wait_for(lambda: not sp.lock_holders(), timeout=15, what="spaced.lock released")
            except AssertionError:
                chaos.problem("spaced.lock held after stopping: %r" % [(p, read_cmdline(p)[:120]) for p in sp.lock_holders()])
            strays = [p for p in sp.stray_processes() if p != os.getpid()]
            if strays:
                chaos.problem("processes naming the state dir after stop: %r" % [(p, read_cmdline(p)[:120]) for p in strays])
        finally:
            elapsed = time.monotonic() - t0
            log("CHAOS_SEED=%d: %d steps, %d kills %r, %d operations tracked, %d sandboxes, %d snapshots, %.0f s" % (
                SEED, chaos.seq, len(chaos.kills), collections.Counter(h for _, h in chaos.kills), len(chaos.ops),
                len(chaos.sbs), len(chaos.snaps), elapsed))
            log("stats: " + ", ".join("%s=%s" % kv for kv in sorted(chaos.stats.items())))
            if chaos.shutdown_503:
                log("503 answers while stopping: %r" % [x[:3] for x in chaos.shutdown_503])
            for n in chaos.notes[:40]:
                log("note: " + n)
            if chaos.problems:
                log("---- spaced logs ----\n" + sp.logs(tail=40))
        if chaos.problems:
            self.fail("CHAOS_SEED=%d: %d problems:\n%s" % (SEED, len(chaos.problems), "\n".join(chaos.problems[:40])))
        self.passed = True


if __name__ == "__main__":
    unittest.main()
