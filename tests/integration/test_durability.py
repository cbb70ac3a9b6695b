"""--durability power: every acknowledgement survives a power cut.

spaced's state directory (state.db and its WAL, command logs, pool.img with the btrfs pool
on a loop device over it) is put on powercut (powercut/), a FUSE passthrough that at a
"power cut" puts every file back to its state at its last fsync. spaced does acknowledged
work: creates, a stop, a destroy, a snapshot (after files were written by exec), a file upload, a
streamed command read to its exit and one still running and read part way. Then at once
the power is cut, spaced and every sandbox process are SIGKILLed and everything unmounted,
and a fresh spaced starts on what was durable. Everything it answered must be there and
say what was answered; with --durability process the same scenario is run and what it
lost is printed (it may lose: that is what the mode promises), and a write left unsynced
on purpose shows that the method sees a loss. Needs root and /dev/fuse; about a minute."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "powercut"))
from powercut_fs import PowercutFs, require_powercut  # noqa: E402
from spaced_harness import SPACED, Spaced, kill_cgroup_processes, log, require_root  # noqa: E402
from test_data_plane import DataPlaneClient, counting_script, decoded  # noqa: E402


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


def event_key(ev):
    return (ev.get("id"), ev.get("event"), ev.get("data"))


class Scenario(DataPlaneClient):
    """One run: acknowledged work on spaced --durability MODE over powercut, the cut, a
    fresh spaced on what was durable. losses() lists every acknowledged thing not found."""

    def __init__(self, test, mode):
        self.test, self.mode = test, mode
        self.spaced = Spaced(extra_args=["--durability", mode])
        self.fs = PowercutFs(os.path.join(self.spaced.tmp, "backing"), self.spaced.state_dir)
        self.acked = {}      # what spaced answered, to be found after the cut
        self.unpromised = {} # answered, but not promised durable by this design (reported only)

    # unittest helpers DataPlaneClient uses
    def addCleanup(self, fn, *a):
        self.test.addCleanup(fn, *a)

    def __getattr__(self, name):  # assertEqual, assertTrue, ... of the running test
        return getattr(self.test, name)

    # ---- before the cut

    def work(self):
        sp = self.spaced
        _, d = sp.api("POST", "/v1/sandboxes?wait=true&timeout_s=120", {"metadata": {"t": "durability-a"}}, expect=200)
        a = d["sandbox"]["id"]
        sp.known_ids.add(a)
        self.acked["create"] = (a, d["operation"]["id"], d["sandbox"]["state"])
        b = sp.create(metadata={"t": "durability-b"})
        _, d = sp.api("POST", "/v1/sandboxes/%s/stop?wait=true&timeout_s=120" % b, expect=200)
        self.acked["stop"] = (b, d["operation"]["id"], d["sandbox"]["state"])
        c = sp.create(metadata={"t": "durability-c"})
        _, d = sp.api("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % c, expect=200)
        self.acked["destroy"] = (c, d["operation"]["id"], d["sandbox"]["state"])

        # Files written by acknowledged execs, then a snapshot: they must be in it.
        r = sp.sh(a, "echo snapped-1 > /root/one && mkdir -p /root/d && seq 1 5000 > /root/d/seq && sync")
        self.assertEqual(r["exit_code"], 0, r)
        _, d = sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % a, {"label": "before-cut"},
                      expect=200)
        self.acked["snapshot"] = (d["snapshot"]["id"], d["operation"]["id"], d["snapshot"]["state"])

        token = self.token(a)
        self.token_a = token
        # An upload answered 201 (power mode syncs the file and the pool before answering).
        q = urllib.parse.urlencode({"path": "/root/uploaded"})
        status, body = sp.request("PUT", "/v1/sandboxes/%s/files?%s" % (a, q), raw=b"uploaded-before-cut\n", key=token,
                                  headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(status, 201, body)
        self.acked["upload"] = (a, "/root/uploaded", b"uploaded-before-cut\n")
        # A file written by exec after the snapshot: no promise covers it (reported only).
        sp.sh(a, "echo after-snapshot > /root/unsnapped")
        self.unpromised["exec-file"] = (a, "/root/unsnapped", "after-snapshot\n")

        # A streamed command read to its exit, and one still running, read part way.
        c, events = self.run_finished(a, token)
        self.acked["finished-command"] = (a, c, [event_key(ev) for ev in events])
        c = self.start(a, token, cmd=["sh", "-c", counting_script(100000, 0.01)])["command_id"]
        es = self.stream(a, token, c)
        seen = self.read_until(es, lambda evs: len(evs) >= 40, "40 events")
        self.acked["running-command"] = (a, c, [event_key(ev) for ev in seen])
        self.stream_open = es

    def run_finished(self, sid, token):
        c, events, ex = self.run_command(sid, token, cmd=["sh", "-c", "seq 1 300; echo done >&2"])
        self.assertEqual(ex.get("exit_code"), 0, ex)
        return c["command_id"], events

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
        t0 = time.monotonic()
        self.undone = self.fs.cut()
        self.cut_s = time.monotonic() - t0
        sp.kill9()
        for sid in sp.all_ids_on_disk():
            kill_cgroup_processes(sid)
        for pid in sp.stray_processes(by_mounts=False):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.stream_open.close()
        except Exception:  # noqa: BLE001 - the connection died with spaced
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

    def losses(self):
        sp, lost, other = self.spaced, [], []
        a, op, state = self.acked["create"]
        self.expect_sandbox(lost, a, ("running", "stopped"), "created (answered %s)" % state)
        self.expect_operation(lost, op, "create of " + a)
        b, op, state = self.acked["stop"]
        self.expect_sandbox(lost, b, ("stopped",), "stopped (answered %s)" % state)
        self.expect_operation(lost, op, "stop of " + b)
        c, op, state = self.acked["destroy"]
        self.expect_sandbox(lost, c, ("destroyed",), "destroyed (answered %s)" % state)
        self.expect_operation(lost, op, "destroy of " + c)
        if os.path.lexists(sp.subvolume(c)):
            lost.append("sandbox %s destroyed (answered %s): its subvolume is back" % (c, state))
        snap, op, state = self.acked["snapshot"]
        st, d = sp.request("GET", "/v1/snapshots/" + snap)
        if st != 200 or d["state"] != "ready":
            lost.append("snapshot %s (answered %s): now %s %s" % (snap, state, st, d))
        self.expect_operation(lost, op, "snapshot %s" % snap, snapshot_id=snap)

        # The sandbox's own files: start it again if the crash left it stopped.
        if sp.request("GET", "/v1/sandboxes/" + a)[0] == 200 and sp.state(a) == "stopped":
            sp.action(a, "start")
        sid, path, content = self.acked["upload"]
        got = self.cat(sid, path)
        if got != content.decode():
            lost.append("uploaded %s (answered 201): now %r" % (path, got))
        sid, path, content = self.unpromised["exec-file"]
        got = self.cat(sid, path)
        if got != content:
            other.append("exec-written file %s (no snapshot after it): now %r" % (path, got))

        # The snapshot holds what the execs before it wrote.
        if st == 200:
            from_snap = sp.create(snapshot_id=snap)
            got = sp.sh(from_snap, "cat /root/one; wc -l < /root/d/seq")["stdout"]
            if got != "snapped-1\n5000\n":
                lost.append("snapshot %s contents: %r" % (snap, got))

        st, d = sp.request("POST", "/v1/sandboxes/%s/sessions" % a, {})
        for what in ("finished-command", "running-command"):
            sid, cid, read = self.acked[what]
            if st != 201:
                lost.append("%s %s: %d events had been read; no session on its sandbox now (%s %s)" %
                            (what, cid, len(read), st, d))
                continue
            token = d["attach_token"]
            found = self.events_now(sid, token, cid, len(read))
            if found[:len(read)] != read:
                first = next((i for i, (x, y) in enumerate(zip(read, found)) if x != y), min(len(read), len(found)))
                lost.append("%s %s: %d events had been read; after the cut %d of them are there as read "
                            "(first difference at event %d: %r)" %
                            (what, cid, len(read), first, first + 1, found[first] if first < len(found) else None))
        return lost, other

    def expect_sandbox(self, lost, sid, states, what):
        st, d = self.spaced.request("GET", "/v1/sandboxes/" + sid)
        if st != 200 or d["state"] not in states:
            lost.append("sandbox %s %s: now %s %s" % (sid, what, st, d if st != 200 else d["state"]))

    def expect_operation(self, lost, op, what, **result):
        st, d = self.spaced.request("GET", "/v1/operations/" + op)
        ok = st == 200 and d["state"] == "succeeded" and all((d.get("result") or {}).get(k) == v
                                                            for k, v in result.items())
        if not ok:
            lost.append("operation %s (%s, answered succeeded): now %s %s" % (op, what, st, d))

    def cat(self, sid, path):
        try:
            r = self.spaced.sh(sid, "cat %s 2>/dev/null" % path)
            return r["stdout"]
        except AssertionError as e:
            return "unreadable: %s" % e

    def events_now(self, sid, token, cid, at_least):
        """The command's events from the first one, after the cut (up to at_least of them
        and whatever follows until the stream ends)."""
        es = self.spaced.events("/v1/sandboxes/%s/commands/%s/events" % (sid, cid), key=token, timeout=30)
        try:
            if es.status != 200:
                return [("status", es.status, repr(es.body()))]
            found = []
            for ev in es:
                found.append(event_key(ev))
                if len(found) >= at_least:
                    break
            return found
        finally:
            es.close()

    # ---- the whole run

    def run(self):
        sp = self.spaced
        self.test.addCleanup(self.cleanup)
        self.fs.mount()
        sp.start()
        t0 = time.monotonic()
        self.work()
        self.probe_files()
        self.work_s = time.monotonic() - t0
        self.cut_and_restart()
        with open(os.path.join(sp.state_dir, "probe-unsynced"), "rb") as f:
            probe_unsynced = f.read()
        with open(os.path.join(sp.state_dir, "probe-synced"), "rb") as f:
            probe_synced = f.read()
        lost, other = self.losses()
        log("durability %s: work %.1fs; the cut undid %d files, %d blocks, %d bytes past synced sizes%s" %
            (self.mode, self.work_s, self.undone["files"], self.undone["blocks"], self.undone["bytes_beyond"],
             "".join("\n  undone: %s (size %d, synced %d, %d blocks)" %
                     (os.path.relpath(p, self.fs.backing), f["size"], f["synced"], f["blocks"])
                     for p, f in sorted(self.undone["paths"].items()))))
        return lost, other, probe_synced, probe_unsynced

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
        s = Scenario(self, "power")
        lost, other, synced, unsynced = s.run()
        # The method sees a loss where there is one, and invents none.
        self.assertEqual((synced, unsynced), (b"synced\n", b""), "the power cut is not what it should be")
        for line in other:
            log("durability power: not promised, and lost: " + line)
        self.assertEqual(lost, [], "--durability power lost acknowledged work in a power cut:\n" + "\n".join(lost))

    def test_process_mode_losses_are_reported(self):
        s = Scenario(self, "process")
        lost, other, synced, unsynced = s.run()
        self.assertEqual((synced, unsynced), (b"synced\n", b""), "the power cut is not what it should be")
        log("durability process: %d acknowledged things lost in the power cut%s" %
            (len(lost), "".join("\n  - " + line for line in lost + other)))


if __name__ == "__main__":
    unittest.main()
