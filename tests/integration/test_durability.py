"""--durability power: every acknowledgement survives a power cut.

spaced's state directory (state.db and its WAL, command logs, pool.img with the btrfs pool
on a loop device over it) is put on powercut (powercut/), a FUSE passthrough that at a
"power cut" puts every file back to its state at its last fsync. spaced does acknowledged
work; at once the power is cut, spaced and every sandbox process are SIGKILLed, everything
is unmounted, and a fresh spaced starts on what was durable. Everything it answered must
be there and say what was answered: sandboxes and their states, operations and their
results, snapshots and the files written by execs before them, uploaded files, and every
event of a streamed command that a reader had been sent.

Two shapes of work: a fixed one (creates, a stop, a destroy, a snapshot, an upload, a
command read to its exit and one still running, read part way; the cut right after the
last answer) and rounds where two clients work concurrently and the power is cut at a
random moment, with requests in flight (every other cut torn: a random part of the
unsynced writes reached the disk). With --durability process the fixed scenario is
run too and what it lost is printed (it may lose: that is what the mode promises). In
every run a synced and an unsynced file written on the mount itself show that the cut
sees a loss and invents none. Needs root and /dev/fuse; well under a minute."""

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "powercut"))
from powercut_fs import PowercutFs, require_powercut  # noqa: E402
from spaced_harness import SPACED, Spaced, kill_cgroup_processes, log, require_root  # noqa: E402

SEED = int(os.environ.get("DURABILITY_SEED", "0")) or random.randrange(1, 1 << 30)
ROUNDS = int(os.environ.get("DURABILITY_ROUNDS", "3"))


def spaced_knows_durability():
    r = subprocess.run([SPACED, "--help"], capture_output=True, text=True, timeout=30)
    return "--durability" in (r.stdout + r.stderr)


def loop_devices_on(image):
    """Loop devices whose backing file is image (read from sysfs: stat of a cut FUSE file fails)."""
    found = []
    for name in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % name) as f:
                if f.read().strip().replace(" (deleted)", "") == image:
                    found.append("/dev/" + name)
        except OSError:
            pass
    return found


class Acks:
    """What spaced answered, in order. Once closed (just before the cut) nothing more is
    recorded: an answer that arrives after that may not have been durable before the cut."""

    def __init__(self):
        self.lock = threading.Lock()
        self.closed = False
        self.items = []

    def add(self, *items):
        with self.lock:
            if self.closed:
                return False
            self.items.extend(items)
            return True

    def close(self):
        with self.lock:
            self.closed = True


class Client:
    """The calls the scenarios make, each returning what spaced answered (raises on a
    failed call: before the cut that fails the test, after it the work just ends)."""

    def __init__(self, sp, acks):
        self.sp, self.acks = sp, acks
        self.tokens = {}

    def call(self, method, path, body=None, expect=200, **kw):
        if self.acks.closed:  # the power is going: nothing new reaches the next spaced either
            raise AssertionError("closed")
        st, d = self.sp.request(method, path, body, timeout=60, **kw)
        if st != expect:
            raise AssertionError("%s %s -> %s (expected %s): %r" % (method, path, st, expect, d))
        return d

    def create(self, label):
        d = self.call("POST", "/v1/sandboxes?wait=true&timeout_s=60", {"metadata": {"t": label}})
        sid = d["sandbox"]["id"]
        self.sp.known_ids.add(sid)
        self.acks.add(("sandbox", sid, ("running", "stopped")), ("operation", d["operation"]["id"], {}))
        return sid

    def action(self, sid, verb, state):
        if verb == "destroy":
            d = self.call("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid)
        else:
            d = self.call("POST", "/v1/sandboxes/%s/%s?wait=true&timeout_s=60" % (sid, verb))
        self.acks.add(("sandbox", sid, (state,)), ("operation", d["operation"]["id"], {}))

    def sh(self, sid, script):
        r = self.call("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": script})
        if r["exit_code"] != 0:
            raise AssertionError("exec %r in %s: %r" % (script, sid, r))
        return r["stdout"]

    def snapshot(self, sid, files):
        """files: {path: content} written by answered execs before this request."""
        d = self.call("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=60" % sid, {})
        snap = d["snapshot"]["id"]
        self.acks.add(("snapshot", snap, sid, dict(files)), ("operation", d["operation"]["id"], {"snapshot_id": snap}))
        return snap

    def token(self, sid):
        if sid not in self.tokens:
            self.tokens[sid] = self.call("POST", "/v1/sandboxes/%s/sessions" % sid, {}, expect=201)["attach_token"]
        return self.tokens[sid]

    def upload(self, sid, path, content):
        q = urllib.parse.urlencode({"path": path})
        self.call("PUT", "/v1/sandboxes/%s/files?%s" % (sid, q), raw=content, key=self.token(sid), expect=201,
                  headers={"Content-Type": "application/octet-stream"})
        self.acks.add(("file", sid, path, content.decode()))

    def command(self, sid, argv):
        d = self.call("POST", "/v1/sandboxes/%s/commands" % sid, {"cmd": argv}, key=self.token(sid), expect=201)
        return d["command_id"]

    def read_events(self, sid, cid, limit=None):
        """Reads the command's events from the first (to the exit, or `limit` of them),
        recording each one as it arrives: a reader was sent it, so it was acknowledged."""
        es = self.sp.events("/v1/sandboxes/%s/commands/%s/events" % (sid, cid), key=self.token(sid), timeout=60)
        seen = []
        try:
            if es.status != 200:
                raise AssertionError("events of %s: %s %r" % (cid, es.status, es.body()))
            for ev in es:
                seen.append((ev.get("id"), ev.get("event"), ev.get("data")))
                if ev.get("event") == "exit" or (limit and len(seen) >= limit):
                    break
        finally:
            self.acks.add(("events", sid, cid, list(seen)))
            es.close()
        return seen


class Scenario:
    """One run: work on spaced --durability MODE over powercut, the cut, a fresh spaced on
    what was durable, and the list of acknowledged things it no longer shows."""

    def __init__(self, test, mode, label, torn_seed=None):
        self.test, self.mode, self.label = test, mode, label
        self.spaced = Spaced(extra_args=["--durability", mode])
        self.fs = PowercutFs(os.path.join(self.spaced.tmp, "backing"), self.spaced.state_dir, torn_seed=torn_seed)
        self.acks = Acks()
        self.unpromised = []  # answered, but no promise covers it: reported only
        self.threads = []

    # ---- the fixed work

    def fixed_work(self):
        c = Client(self.spaced, self.acks)
        a = c.create("durability-a")
        b = c.create("durability-b")
        c.action(b, "stop", "stopped")
        d = c.create("durability-c")
        c.action(d, "destroy", "destroyed")
        self.acks.add(("no-subvolume", d))
        files = {"/root/one": "snapped-1\n", "/root/d/seq": "".join("%d\n" % i for i in range(1, 5001))}
        c.sh(a, "echo snapped-1 > /root/one && mkdir -p /root/d && seq 1 5000 > /root/d/seq")
        c.snapshot(a, files)
        c.upload(a, "/root/uploaded", b"uploaded-before-cut\n")
        c.sh(a, "echo after-snapshot > /root/unsnapped")
        self.unpromised.append(("file", a, "/root/unsnapped", "after-snapshot\n"))
        c.read_events(a, c.command(a, ["sh", "-c", "seq 1 300; echo done >&2; seq 301 600"]))
        # Still running at the cut: 40 events read, the stream left open.
        cid = c.command(a, ["sh", "-c", "i=1; while :; do echo $i; i=$((i+1)); sleep 0.01; done"])
        c.read_events(a, cid, limit=40)

    # ---- the concurrent work, cut at a random moment

    def worker(self, n, rng, errors):
        c = Client(self.spaced, self.acks)
        try:
            while not self.acks.closed:
                sid = c.create("durability-w%d" % n)
                files = {}
                for i in range(3):
                    if self.acks.closed:
                        return
                    path, content = "/root/w%d-%d" % (n, i), "written %d %d %d\n" % (n, i, rng.randrange(1 << 30))
                    c.sh(sid, "printf '%s' > %s" % (content, path))
                    files[path] = content
                    c.snapshot(sid, files)
                    c.upload(sid, "/root/up%d" % i, ("upload %d %d\n" % (n, i)).encode())
                    c.read_events(sid, c.command(sid, ["sh", "-c", "seq 1 %d" % rng.randrange(1, 400)]))
        except Exception as e:  # noqa: BLE001 - after the cut every call fails
            if not self.acks.closed:
                errors.append("worker %d: %r" % (n, e))

    def concurrent_work(self, rng, workers=2):
        errors = []
        threads = [threading.Thread(target=self.worker, args=(n, random.Random(rng.random()), errors), daemon=True)
                   for n in range(workers)]
        for t in threads:
            t.start()
        self.threads = threads
        time.sleep(rng.uniform(1.0, 3.0))
        if errors:
            raise AssertionError("work failed before the cut: %s" % errors)

    # ---- the cut

    def probe_files(self):
        """One file synced and one not, written on the mount itself just before the cut."""
        with open(os.path.join(self.spaced.state_dir, "probe-synced"), "wb") as f:
            f.write(b"synced\n")
            f.flush()
            os.fsync(f.fileno())
        with open(os.path.join(self.spaced.state_dir, "probe-unsynced"), "wb") as f:
            f.write(b"not synced\n")

    def cut_and_restart(self):
        sp = self.spaced
        self.acks.close()
        self.undone = self.fs.cut()
        sp.kill9()
        for t in self.threads:
            t.join(timeout=60)
        for sid in sp.all_ids_on_disk():
            kill_cgroup_processes(sid)
        for pid in sp.stray_processes(by_mounts=False):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        loops = loop_devices_on(os.path.join(sp.state_dir, "pool.img"))
        with open("/proc/self/mountinfo") as f:
            below = [line.split()[4] for line in f if line.split()[4].startswith(sp.state_dir + "/")]
        for mnt in reversed(below):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        for dev in loops:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        self.fs.unmount()
        # The backing directory is the disk after the crash: it becomes the state directory.
        os.rmdir(sp.state_dir)
        os.rename(self.fs.backing, sp.state_dir)
        sp.start()

    # ---- after the cut

    def get(self, path):
        return self.spaced.request("GET", path, timeout=60)

    def cat(self, sid, path):
        for _ in range(50):  # a sandbox started again just now: its agent may not answer yet (503)
            st, r = self.spaced.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "cat %s 2>/dev/null" % path},
                                        timeout=60)
            if st != 503:
                break
            time.sleep(0.1)
        return r["stdout"] if st == 200 else "(exec: %s %r)" % (st, r)

    def on_disk(self, sid, path):
        """The file as the post-crash disk has it, in the sandbox's root subvolume (read on the
        host: what is checked is the disk, not the path of a sandbox coming back)."""
        full = os.path.join(self.spaced.subvolume(sid), path.lstrip("/"))
        if not os.path.isdir(self.spaced.subvolume(sid)):
            return "(sandbox gone)"
        try:
            with open(full) as f:
                return f.read()
        except OSError as e:
            return "(%s)" % e.strerror

    def ensure_running(self, sid, started):
        if sid in started:
            return started[sid]
        st, d = self.get("/v1/sandboxes/" + sid)
        ok = st == 200 and d["state"] in ("running", "stopped")
        if ok and d["state"] == "stopped":
            st, d = self.spaced.request("POST", "/v1/sandboxes/%s/start?wait=true&timeout_s=60" % sid, timeout=90)
            ok = st == 200
        started[sid] = ok
        return ok

    def events_now(self, sid, cid, count):
        st, d = self.spaced.request("POST", "/v1/sandboxes/%s/sessions" % sid, {}, timeout=60)
        if st != 201:
            return "no session (%s %r)" % (st, d)
        es = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (sid, cid), key=d["attach_token"], timeout=30)
        try:
            if es.status != 200:
                return "events: %s %r" % (es.status, es.body())
            found = []
            for ev in es:
                found.append((ev.get("id"), ev.get("event"), ev.get("data")))
                if len(found) >= count:
                    break
            return found
        finally:
            es.close()

    def losses(self, records, snapshot_checks=3):
        """(lost, checked): a line per acknowledged thing not found as answered."""
        lost, started, checked = [], {}, 0
        # A sandbox's last answered state is the one it must be in.
        last = {r[1]: i for i, r in enumerate(records) if r[0] == "sandbox"}
        records = [r for i, r in enumerate(records) if r[0] != "sandbox" or last[r[1]] == i]
        # States first: nothing here starts a sandbox before its state was read.
        for r in records:
            if r[0] == "sandbox":
                checked += 1
                st, d = self.get("/v1/sandboxes/" + r[1])
                if st != 200 or d["state"] not in r[2]:
                    lost.append("sandbox %s answered %s: now %s" % (r[1], "/".join(r[2]), d["state"] if st == 200 else
                                                                    "%s %r" % (st, d)))
            elif r[0] == "operation":
                checked += 1
                st, d = self.get("/v1/operations/" + r[1])
                res = (d.get("result") or {}) if st == 200 else {}
                if st != 200 or d["state"] != "succeeded" or any(res.get(k) != v for k, v in r[2].items()):
                    lost.append("operation %s answered succeeded %s: now %s" % (r[1], r[2], "%s %s" %
                                (d["state"], res) if st == 200 else "%s %r" % (st, d)))
            elif r[0] == "no-subvolume":
                checked += 1
                if os.path.lexists(self.spaced.subvolume(r[1])):
                    lost.append("sandbox %s answered destroyed: its subvolume is back" % r[1])
        # Snapshots: each ready; the latest few opened and their files read.
        snaps = [r for r in records if r[0] == "snapshot"]
        for r in snaps:
            checked += 1
            st, d = self.get("/v1/snapshots/" + r[1])
            if st != 200 or d["state"] != "ready":
                lost.append("snapshot %s answered ready: now %s" % (r[1], d["state"] if st == 200 else st))
        latest = {}
        for r in snaps:
            latest[r[2]] = r
        for r in list(latest.values())[-snapshot_checks:]:
            if self.get("/v1/snapshots/" + r[1])[0] != 200:
                continue
            st, d = self.spaced.request("POST", "/v1/sandboxes?wait=true&timeout_s=60", {"snapshot_id": r[1]},
                                        timeout=90)
            if st != 200:
                lost.append("snapshot %s: a sandbox from it fails: %s %r" % (r[1], st, d))
                continue
            self.spaced.known_ids.add(d["sandbox"]["id"])
            for path, content in r[3].items():
                checked += 1
                got = self.cat(d["sandbox"]["id"], path)
                if got != content:
                    lost.append("snapshot %s: %s written before it reads %r" % (r[1], path, got[:80]))
        # Files and command events, in their sandboxes (started again where the crash stopped them).
        for r in records:
            if r[0] == "file":
                checked += 1
                got = self.on_disk(r[1], r[2])
                if got != r[3]:
                    lost.append("file %s in %s answered written: now %r" % (r[2], r[1], got[:80]))
            elif r[0] == "events" and r[3]:
                checked += 1
                self.ensure_running(r[1], started)
                found = self.events_now(r[1], r[2], len(r[3]))
                if not isinstance(found, list):
                    lost.append("command %s: %d events had been read; now %s" % (r[2], len(r[3]), found))
                elif found[:len(r[3])] != r[3]:
                    same = next((i for i, (x, y) in enumerate(zip(r[3], found)) if x != y), min(len(r[3]), len(found)))
                    lost.append("command %s: %d events had been read; only the first %d are there as read" %
                                (r[2], len(r[3]), same))
        return lost, checked

    # ---- the whole run

    def run(self, work):
        sp = self.spaced
        self.test.addCleanup(self.cleanup)
        self.fs.mount()
        sp.start()
        t0 = time.monotonic()
        work()
        self.probe_files()
        self.work_s = time.monotonic() - t0
        self.cut_and_restart()
        with open(os.path.join(sp.state_dir, "probe-synced"), "rb") as f:
            self.test.assertEqual(f.read(), b"synced\n", "the cut lost a synced write")
        with open(os.path.join(sp.state_dir, "probe-unsynced"), "rb") as f:
            unsynced = f.read()
        if self.fs.torn_seed:  # a torn cut may keep the file's new size, each block new or zeroed
            self.test.assertIn(unsynced, (b"", b"not synced\n", b"\0" * 11), "a torn cut made up bytes")
        else:
            self.test.assertEqual(unsynced, b"", "the cut kept a write that was never synced")
        lost, checked = self.losses(list(self.acks.items))
        other, _ = self.losses(self.unpromised)
        log("durability %s, %s: %.1fs of work, %d acknowledgements checked, %d lost; the cut undid %d files, "
            "%d blocks, %d bytes past synced sizes%s" %
            (self.mode, self.label, self.work_s, checked, len(lost), self.undone["files"], self.undone["blocks"],
             self.undone["bytes_beyond"],
             "".join("\n  undone: %s (size %d, synced %d, %d blocks)" %
                     (os.path.relpath(p, self.fs.backing), f["size"], f["synced"], f["blocks"])
                     for p, f in sorted(self.undone["paths"].items()))))
        for line in other:
            log("durability %s, %s: not promised, and lost: %s" % (self.mode, self.label, line))
        return lost

    def cleanup(self):
        """After a failure before the cut too: spaced's own cleanup while the mount is there
        (its loop device is looked up in sysfs: a cut image cannot be stat'ed), then the
        mount, then whatever is left of the temporary directory."""
        sp = self.spaced
        loops = loop_devices_on(os.path.join(sp.state_dir, "pool.img"))
        try:
            sp.cleanup()
        finally:
            for dev in loops:
                subprocess.run(["losetup", "-d", dev], capture_output=True)
            self.fs.unmount(timeout=5)
            shutil.rmtree(sp.tmp, ignore_errors=True)


class PowerCut(unittest.TestCase):

    def setUp(self):
        require_root()
        require_powercut()
        if not spaced_knows_durability():
            self.fail("%s has no --durability option (issue 19): the power-cut promise cannot be tested" % SPACED)

    def test_power_mode_loses_nothing_acknowledged(self):
        s = Scenario(self, "power", "fixed")
        lost = s.run(s.fixed_work)
        self.assertEqual(lost, [], "--durability power lost acknowledged work in a power cut:\n" + "\n".join(lost))

    def test_power_mode_cut_at_random_moments(self):
        log("durability: seed %d (DURABILITY_SEED=%d reruns it)" % (SEED, SEED))
        rng = random.Random(SEED)
        for n in range(ROUNDS):
            with self.subTest(round=n):
                # Odd rounds: a torn cut (a random part of the unsynced writes reached the disk).
                torn = rng.randrange(1, 1 << 62) if n % 2 else None
                s = Scenario(self, "power", "round %d%s" % (n, " torn" if torn else ""), torn_seed=torn)
                lost = s.run(lambda: s.concurrent_work(rng))
                self.assertGreater(len(s.acks.items), 0, "nothing was acknowledged before the cut")
                self.assertEqual(lost, [], "--durability power lost acknowledged work (seed %d, round %d):\n%s" %
                                 (SEED, n, "\n".join(lost)))

    def test_process_mode_losses_are_reported(self):
        s = Scenario(self, "process", "fixed")
        lost = s.run(s.fixed_work)
        log("durability process: %d acknowledged things lost in the power cut%s" %
            (len(lost), "".join("\n  - " + line for line in lost)))


if __name__ == "__main__":
    unittest.main()
