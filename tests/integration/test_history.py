"""Snapshots, restore and fork: a snapshot of a running sandbox is consistent and later
writes stay out of it; restore brings back the exact files (and keeps later snapshots);
fork makes independent sandboxes with their lineage recorded; paused and stopped sandboxes;
memory snapshots refused; bad input; deleting snapshots (also while spaced's background size
measurement reads one); destroy of a parent; kill -9 of spaced right after a fork, a restore
or a snapshot leaves nothing half made."""

import hashlib
import os
import time
import unittest

from spaced_harness import (FreshSpacedTestCase, SpacedTestCase, cgroup_dirs, cgroup_pids, read_cmdline,
                            wait_for)

FINISHED = ("succeeded", "failed")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def freezer_states(sandbox_id):
    """What the sandbox's freezer says: "FROZEN"/"THAWED" (v1) or "1"/"0" (v2 cgroup.freeze)."""
    found = []
    for d in cgroup_dirs(sandbox_id):
        for name in ("freezer.state", "cgroup.freeze"):
            p = os.path.join(d, name)
            if os.path.exists(p):
                with open(p) as f:
                    found.append(f.read().strip())
    return found


def is_frozen(sandbox_id):
    states = freezer_states(sandbox_id)
    return bool(states) and all(s in ("FROZEN", "1") for s in states)


def is_thawed(sandbox_id):
    states = freezer_states(sandbox_id)
    return bool(states) and all(s in ("THAWED", "0") for s in states)


def check_counter_log(test, data, what):
    """data is the output of `echo 1; echo 2; ...`: every line complete, no gap, no repeat."""
    text = data.decode()
    test.assertTrue(text.endswith("\n"), "%s: last line torn: %r" % (what, text[-40:]))
    lines = text[:-1].split("\n")
    test.assertEqual(lines, [str(i) for i in range(1, len(lines) + 1)],
                     "%s is not 1..N, one per line (%d lines)" % (what, len(lines)))
    return len(lines)


class HistoryMixin:
    """Helpers shared by both test classes (self.spaced is a started Spaced)."""

    def snap_dir(self, snapshot_id):
        return os.path.join(self.spaced.state_dir, "pool", "snapshots", snapshot_id)

    def snapshot(self, sid, label=None, expect_state=None):
        body = {} if label is None else {"label": label}
        status, data = self.spaced.request("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, body)
        self.assertEqual(status, 200, data)
        op, snap = data["operation"], data["snapshot"]
        self.assertEqual(op["kind"], "sandbox.snapshot", op)
        self.assertEqual(op["target"], sid, op)
        self.assertEqual(op["state"], "succeeded", op)
        self.assertEqual(op["result"]["snapshot_id"], snap["id"], op)
        self.assertRegex(snap["id"], r"^snap-[0-9a-f]{16}$")
        self.assertEqual(snap["state"], "ready", snap)
        self.assertEqual(snap["sandbox_id"], sid)
        self.addCleanup(self.delete_snapshot_quietly, snap["id"])
        if expect_state:
            self.assertEqual(self.spaced.state(sid), expect_state, "sandbox state after its snapshot")
        return snap

    def delete_snapshot_quietly(self, snapshot_id):
        try:
            if self.spaced.alive():
                self.spaced.request("DELETE", "/v1/snapshots/" + snapshot_id, timeout=60)
        except Exception:  # noqa: BLE001
            pass

    def get_snapshot(self, snapshot_id):
        return self.spaced.api("GET", "/v1/snapshots/" + snapshot_id, expect=200)[1]

    def assertSameSnapshot(self, got, want):
        """Equal but for bytes_exclusive, which a background pass fills in (null until then)."""
        size = got.get("bytes_exclusive")
        self.assertTrue(size is None or (isinstance(size, int) and size >= 0), got)
        self.assertEqual({k: v for k, v in got.items() if k != "bytes_exclusive"},
                         {k: v for k, v in want.items() if k != "bytes_exclusive"})

    def delete_snapshot(self, snapshot_id, timeout=30):
        """DELETE that waits out the background size measurement: while it reads a snapshot
        spaced answers 409 "being read" (test_delete_while_size_is_measured covers that)."""
        def attempt():
            status, body = self.spaced.request("DELETE", "/v1/snapshots/" + snapshot_id)
            if status == 409 and "being read" in str(body):
                return False
            return status, body
        return wait_for(attempt, timeout=timeout, interval=0.2, what="delete of %s" % snapshot_id)

    def send_of(self, snapshot_id):
        """Pid of a `btrfs send` reading this snapshot (spaced's background size measurement)."""
        path = self.snap_dir(snapshot_id)
        for p in os.listdir("/proc"):
            if p.isdigit():
                cmd = read_cmdline(int(p))
                if cmd.startswith("btrfs send") and (path + " ") in (cmd + " "):
                    return int(p)
        return None

    def list_snapshots(self, sid=None):
        path = "/v1/sandboxes/%s/snapshots" % sid if sid else "/v1/snapshots"
        return self.spaced.api("GET", path, expect=200)[1]["snapshots"]

    def restore(self, sid, snapshot_id):
        status, data = self.spaced.request("POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=120" % sid,
                                           {"snapshot_id": snapshot_id})
        self.assertEqual(status, 200, data)
        self.assertEqual(data["operation"]["kind"], "sandbox.restore", data)
        self.assertEqual(data["operation"]["state"], "succeeded", data)
        self.assertEqual(data["operation"]["result"], {"snapshot_id": snapshot_id}, data)
        self.assertEqual(data["sandbox"]["id"], sid)
        return data

    def track_children(self, ids):
        for cid in ids:
            self.spaced.known_ids.add(cid)
            self.addCleanup(self.destroy_quietly, cid)

    def destroy_quietly(self, sid):
        try:
            if self.spaced.alive():
                self.spaced.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid, timeout=70)
        except Exception:  # noqa: BLE001
            pass

    def fork(self, sid, count, snapshot_id=None, metadata=None):
        body = {"count": count}
        if snapshot_id:
            body["snapshot_id"] = snapshot_id
        if metadata is not None:
            body["metadata"] = metadata
        status, data = self.spaced.request("POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=120" % sid, body)
        if isinstance(data, dict):
            self.track_children([c["id"] for c in data.get("sandboxes", [])])
            result = (data.get("operation") or {}).get("result") or {}
            if result.get("snapshot_id") and not snapshot_id:
                self.addCleanup(self.delete_snapshot_quietly, result["snapshot_id"])
        self.assertEqual(status, 200, data)
        op = data["operation"]
        self.assertEqual(op["kind"], "sandbox.fork", op)
        self.assertEqual(op["target"], sid, op)
        self.assertEqual(op["state"], "succeeded", op)
        children = data["sandboxes"]
        self.assertEqual(len(children), count, data)
        self.assertEqual(op["result"]["sandbox_ids"], [c["id"] for c in children], op)
        return op["result"]["snapshot_id"], children

    def cat(self, sid, path):
        r = self.spaced.sh(sid, "cat %s" % path)
        self.assertEqual(r["exit_code"], 0, r)
        return r["stdout"]

    def exists_in(self, sid, path):
        r = self.spaced.sh(sid, "test -e %s && echo yes || echo no" % path)
        return r["stdout"] == "yes\n"

    def head(self, sid):
        return self.spaced.get(sid)["lineage"]["head_snapshot_id"]


class History(HistoryMixin, SpacedTestCase):

    # ------------------------------------------------------------ snapshot + restore

    def test_snapshot_of_running_sandbox_is_consistent_and_restore_is_exact(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-consistent"})
        # Dirty data (never synced) and a writer busy appending one line per write().
        r = sp.sh(sid, "echo v1 > /root/a && mkdir -p /root/d && echo deep > /root/d/e && "
                       "dd if=/dev/urandom of=/root/big bs=1M count=8 2>/dev/null && sha256sum /root/big")
        self.assertEqual(r["exit_code"], 0, r)
        big_sum = r["stdout"].split()[0]
        r = sp.sh(sid, "(i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); echo $i; done >> /root/log) "
                       "</dev/null >/dev/null 2>&1 & echo $!")
        writer = r["stdout"].strip()
        self.assertTrue(writer.isdigit(), r)
        wait_for(lambda: int(sp.sh(sid, "wc -c < /root/log")["stdout"].strip() or 0) > 1000, timeout=30,
                 what="the writer to start")

        snap = self.snapshot(sid, label="consistent", expect_state="running")
        self.assertEqual(snap["label"], "consistent")
        self.assertEqual(snap["kind"], "filesystem")
        self.assertIsNone(snap["parent_snapshot_id"], "first snapshot of a sandbox has no parent")
        self.assertTrue(snap["bytes_exclusive"] is None or snap["bytes_exclusive"] >= 0, snap)
        self.assertIsInstance(snap["pause_ms"], (int, float))
        self.assertGreaterEqual(snap["pause_ms"], 0)
        self.assertRegex(snap["created_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        self.assertSameSnapshot(self.get_snapshot(snap["id"]), snap)
        self.assertEqual(self.head(sid), snap["id"])
        self.assertEqual([s["id"] for s in self.list_snapshots(sid)], [snap["id"]])
        _, data = sp.api("GET", "/v1/snapshots?sandbox_id=" + sid, expect=200)
        self.assertEqual([s["id"] for s in data["snapshots"]], [snap["id"]])
        self.assertIn(snap["id"], [s["id"] for s in self.list_snapshots()])

        # The sandbox was thawed: the writer goes on, exec answers.
        self.assertTrue(is_thawed(sid), "sandbox still frozen after its snapshot: %r" % freezer_states(sid))
        self.assertEqual(sp.sh(sid, "kill -0 %s && echo alive" % writer)["stdout"], "alive\n")

        # The snapshot on disk: read-only, the exact files, the log cut at a line boundary.
        root = os.path.join(self.snap_dir(snap["id"]), "root")
        self.assertTrue(os.path.isdir(root), "no snapshot subvolume at %s" % self.snap_dir(snap["id"]))
        self.assertEqual(read_bytes(os.path.join(root, "a")), b"v1\n")
        self.assertEqual(read_bytes(os.path.join(root, "d", "e")), b"deep\n")
        self.assertEqual(sha256_file(os.path.join(root, "big")), big_sum, "dirty data missing from the snapshot")
        log_in_snap = read_bytes(os.path.join(root, "log"))
        n = check_counter_log(self, log_in_snap, "the log in the snapshot")
        self.assertGreater(n, 0)
        mode = os.stat(os.path.join(sp.state_dir, "pool", "snapshots")).st_mode & 0o777
        self.assertEqual(mode & 0o077, 0, "pool/snapshots is open to other host users (mode %o): sandbox files, "
                                          "setuid ones included, would be reachable" % mode)
        with self.assertRaises(OSError, msg="snapshot is writable"):
            fd = os.open(os.path.join(root, "intruder"), os.O_CREAT | os.O_WRONLY, 0o644)
            os.close(fd)

        # Later writes do not reach the snapshot.
        wait_for(lambda: int(sp.sh(sid, "wc -c < /root/log")["stdout"].strip()) > len(log_in_snap) + 1000,
                 timeout=30, what="the writer to go on after the snapshot")
        sp.sh(sid, "kill %s; echo v2 > /root/a; echo new > /root/new; rm -rf /root/d /root/big" % writer)
        self.assertEqual(read_bytes(os.path.join(root, "log")), log_in_snap)
        self.assertEqual(read_bytes(os.path.join(root, "a")), b"v1\n")
        self.assertFalse(os.path.exists(os.path.join(root, "new")))
        self.assertEqual(sha256_file(os.path.join(root, "big")), big_sum)

        # Restore: exactly the snapshot's files, running again, head back at the snapshot.
        data = self.restore(sid, snap["id"])
        self.assertEqual(data["sandbox"]["state"], "running", data)
        self.assertEqual(sp.state(sid), "running")
        self.assertEqual(self.cat(sid, "/root/a"), "v1\n")
        self.assertEqual(self.cat(sid, "/root/d/e"), "deep\n")
        self.assertFalse(self.exists_in(sid, "/root/new"), "file created after the snapshot survived restore")
        r = sp.sh(sid, "sha256sum /root/big")
        self.assertEqual(r["stdout"].split()[0], big_sum, r)
        r = sp.sh(sid, "cat /root/log | sha256sum")
        self.assertEqual(r["stdout"].split()[0], hashlib.sha256(log_in_snap).hexdigest(), "log differs after restore")
        # The writer was not brought back (restore restarts the sandbox) and the sandbox is usable.
        self.assertEqual(sp.sh(sid, "ps -o args | grep -c '[w]hile'")["stdout"], "0\n")
        self.assertEqual(sp.sh(sid, "echo after > /root/a && cat /root/a")["stdout"], "after\n")
        self.assertEqual(self.head(sid), snap["id"])
        # The snapshot is untouched by writes after the restore.
        self.assertEqual(read_bytes(os.path.join(root, "a")), b"v1\n")
        # And it appears in the operation list with its result.
        _, op = sp.api("GET", "/v1/operations/" + data["operation"]["id"], expect=200)
        self.assertEqual(op["result"], {"snapshot_id": snap["id"]})

    def test_restore_keeps_later_snapshots_and_lineage(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-chain"})
        snaps = []
        for v in ("1", "2", "3"):
            sp.sh(sid, "echo %s > /root/v; echo %s > /root/only-%s" % (v, v, v))
            snaps.append(self.snapshot(sid, label="v" + v))
        s1, s2, s3 = snaps
        self.assertIsNone(s1["parent_snapshot_id"])
        self.assertEqual(s2["parent_snapshot_id"], s1["id"])
        self.assertEqual(s3["parent_snapshot_id"], s2["id"])
        sp.sh(sid, "echo 4 > /root/v")

        self.restore(sid, s1["id"])
        self.assertEqual(self.cat(sid, "/root/v"), "1\n")
        self.assertFalse(self.exists_in(sid, "/root/only-2"))
        self.assertFalse(self.exists_in(sid, "/root/only-3"))
        # Later snapshots are still there, ready, unchanged.
        listed = self.list_snapshots(sid)
        self.assertEqual([s["id"] for s in listed], [s1["id"], s2["id"], s3["id"]], listed)
        self.assertTrue(all(s["state"] == "ready" for s in listed), listed)
        for s in snaps:
            self.assertSameSnapshot(self.get_snapshot(s["id"]), s)
            self.assertTrue(os.path.isdir(self.snap_dir(s["id"])))
        self.assertEqual(self.head(sid), s1["id"])
        # A snapshot taken now descends from the restored one.
        sp.sh(sid, "echo 1b > /root/v")
        s4 = self.snapshot(sid, label="v1b")
        self.assertEqual(s4["parent_snapshot_id"], s1["id"], "snapshot after restore names the restored one as parent")

        # Forward again to the latest of the old line.
        self.restore(sid, s3["id"])
        self.assertEqual(self.cat(sid, "/root/v"), "3\n")
        self.assertEqual(self.cat(sid, "/root/only-2"), "2\n")
        self.assertEqual(self.head(sid), s3["id"])
        self.assertEqual([s["id"] for s in self.list_snapshots(sid)], [s1["id"], s2["id"], s3["id"], s4["id"]])
        self.restore(sid, s4["id"])
        self.assertEqual(self.cat(sid, "/root/v"), "1b\n")
        # Deleting a middle snapshot keeps the lineage a chain.
        self.assertEqual(self.delete_snapshot(s2["id"])[0], 204)
        self.assertEqual(self.get_snapshot(s3["id"])["parent_snapshot_id"], s1["id"])
        self.restore(sid, s3["id"])
        self.assertEqual(self.cat(sid, "/root/only-2"), "2\n")

    def test_restore_stopped_sandbox_stays_stopped(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-stopped"})
        sp.sh(sid, "echo old > /root/f")
        snap = self.snapshot(sid)
        sp.sh(sid, "echo new > /root/f; echo extra > /root/extra")
        sp.action(sid, "stop")
        data = self.restore(sid, snap["id"])
        self.assertEqual(data["sandbox"]["state"], "stopped", data)
        self.assertEqual(sp.state(sid), "stopped")
        self.assertIsNone(sp.get(sid)["state_reason"], "a clean restore leaves no reason")
        self.assertEqual(cgroup_pids(sid), [], "a stopped sandbox has processes after restore")
        # The restored files are on disk; start shows them.
        self.assertEqual(read_bytes(os.path.join(sp.subvolume(sid), "root", "f")), b"old\n")
        sp.action(sid, "start")
        self.assertEqual(self.cat(sid, "/root/f"), "old\n")
        self.assertFalse(self.exists_in(sid, "/root/extra"))

    def test_snapshot_and_fork_of_stopped_sandbox(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-stopped-snap"})
        sp.sh(sid, "echo stopped-state > /root/f")
        sp.action(sid, "stop")
        snap = self.snapshot(sid, expect_state="stopped")
        self.assertEqual(read_bytes(os.path.join(self.snap_dir(snap["id"]), "root", "f")), b"stopped-state\n")
        self.assertEqual(cgroup_pids(sid), [])
        # Fork of a stopped sandbox: the child runs, the parent stays stopped.
        fork_snap, children = self.fork(sid, 1)
        self.assertNotEqual(fork_snap, snap["id"])
        self.assertEqual(self.get_snapshot(fork_snap)["parent_snapshot_id"], snap["id"])
        self.assertEqual(children[0]["state"], "running")
        self.assertEqual(self.cat(children[0]["id"], "/root/f"), "stopped-state\n")
        self.assertEqual(sp.state(sid), "stopped")

    def test_restore_of_paused_sandbox_runs_it(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-paused-restore"})
        sp.sh(sid, "echo before > /root/f")
        snap = self.snapshot(sid)
        sp.sh(sid, "echo after > /root/f")
        sp.action(sid, "pause")
        data = self.restore(sid, snap["id"])
        self.assertEqual(data["sandbox"]["state"], "running", data)
        self.assertEqual(self.cat(sid, "/root/f"), "before\n")

    # ------------------------------------------------------------ paused

    def test_snapshot_of_paused_sandbox_keeps_it_paused(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-paused"})
        sp.sh(sid, "echo paused-content > /root/p; sleep 300 </dev/null >/dev/null 2>&1 &")
        sp.action(sid, "pause")
        self.assertTrue(is_frozen(sid), freezer_states(sid))
        snap = self.snapshot(sid, label="while-paused", expect_state="paused")
        self.assertTrue(is_frozen(sid), "a snapshot thawed a paused sandbox: %r" % freezer_states(sid))
        self.assertEqual(read_bytes(os.path.join(self.snap_dir(snap["id"]), "root", "p")), b"paused-content\n")
        self.assertEqual(self.head(sid), snap["id"])
        # Exec on the paused sandbox is still refused; fork from it works and leaves it paused.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]}), 409, "invalid_state")
        _, children = self.fork(sid, 1)
        self.assertEqual(self.cat(children[0]["id"], "/root/p"), "paused-content\n")
        self.assertEqual(sp.state(sid), "paused")
        self.assertTrue(is_frozen(sid), "a fork thawed a paused sandbox: %r" % freezer_states(sid))
        sp.action(sid, "resume")
        self.assertEqual(sp.sh(sid, "ps -o comm | grep -c '^sleep'")["stdout"], "1\n", "processes lost across the snapshot")

    # ------------------------------------------------------------ fork

    def test_fork_three_independent_children(self):
        sp = self.spaced
        parent = self.new_sandbox(metadata={"t": "history-fork", "who": "parent"}, env={"FORKED": "yes"},
                                  resources={"memory_mb": 256, "pids": 128})
        sp.sh(parent, "echo base > /root/base; mkdir -p /work && echo w > /work/w")
        snap_id, children = self.fork(parent, 3)
        ids = [c["id"] for c in children]
        self.assertEqual(len(set(ids)), 3)
        self.assertNotIn(parent, ids)
        for c in children:
            self.assertRegex(c["id"], r"^sb-[0-9a-f]{16}$")
            self.assertEqual(c["state"], "running", c)
            self.assertEqual(c["lineage"], {"parent_sandbox_id": parent, "parent_snapshot_id": snap_id,
                                            "head_snapshot_id": snap_id}, c)
            self.assertEqual(c["metadata"], {"t": "history-fork", "who": "parent"}, "children inherit metadata")
            self.assertEqual(c["env"], {"FORKED": "yes"})
            self.assertEqual(c["resources"]["memory_mb"], 256)
            self.assertEqual(c["template"], "busybox")
            self.assertEqual(sp.get(c["id"]), c)
        # The fork's snapshot belongs to the parent and is its new head.
        snap = self.get_snapshot(snap_id)
        self.assertEqual(snap["sandbox_id"], parent)
        self.assertEqual(snap["state"], "ready")
        self.assertEqual(self.head(parent), snap_id)
        self.assertIsNone(sp.get(parent)["lineage"]["parent_sandbox_id"])
        self.assertEqual(sp.state(parent), "running")
        listed = sp.list_ids()
        for cid in ids:
            self.assertEqual(listed.get(cid), "running")

        # Each child starts from the parent's files, writes its own; nobody sees another's.
        everyone = [parent] + ids
        for i, sid in enumerate(everyone):
            self.assertEqual(self.cat(sid, "/root/base"), "base\n")
            self.assertEqual(self.cat(sid, "/work/w"), "w\n")
            r = sp.sh(sid, "echo me-%d > /root/who; echo x > /root/mine-%d; echo changed-%d > /root/base" % (i, i, i))
            self.assertEqual(r["exit_code"], 0, r)
        for i, sid in enumerate(everyone):
            self.assertEqual(self.cat(sid, "/root/who"), "me-%d\n" % i)
            self.assertEqual(self.cat(sid, "/root/base"), "changed-%d\n" % i)
            r = sp.sh(sid, "ls /root | grep '^mine-'")
            self.assertEqual(r["stdout"], "mine-%d\n" % i, "sandbox %d sees another's files: %r" % (i, r))
        # Their rootfs are separate subvolumes; the snapshot kept the parent's files as forked.
        root = os.path.join(self.snap_dir(snap_id), "root")
        self.assertEqual(read_bytes(os.path.join(root, "base")), b"base\n")
        self.assertFalse(os.path.exists(os.path.join(root, "who")))
        for i, sid in enumerate(everyone):
            self.assertEqual(read_bytes(os.path.join(sp.subvolume(sid), "root", "who")), b"me-%d\n" % i)
        # Processes are separate too: a process in one child is invisible to the others.
        sp.sh(ids[0], "sleep 300 </dev/null >/dev/null 2>&1 &")
        for sid in everyone:
            r = sp.sh(sid, "ps -o comm | grep -c '^sleep'")
            self.assertEqual(r["stdout"], "1\n" if sid == ids[0] else "0\n", (sid, r))
        pid_sets = [set(cgroup_pids(sid)) for sid in everyone]
        for i in range(len(pid_sets)):
            self.assertTrue(pid_sets[i], "sandbox %d has no processes" % i)
            for j in range(i + 1, len(pid_sets)):
                self.assertFalse(pid_sets[i] & pid_sets[j], "sandboxes %d and %d share processes" % (i, j))
        # Each has its own uid range on the host.
        outside = []
        for sid in everyone:
            pid = cgroup_pids(sid)[0]
            with open("/proc/%d/uid_map" % pid) as f:
                inside, out, length = f.read().split()[:3]
            self.assertEqual(inside, "0")
            outside.append(int(out))
        self.assertEqual(len(set(outside)), len(outside), "sandboxes share a uid range: %r" % outside)
        # Inside, files are root's as in the parent.
        self.assertEqual(sp.sh(ids[1], "stat -c %u:%g /root/base; id -u")["stdout"], "0:0\n0\n")

        # The operation keeps its result.
        _, ops = sp.api("GET", "/v1/operations?target=" + parent, expect=200)
        fork_ops = [o for o in ops["operations"] if o["kind"] == "sandbox.fork"]
        self.assertEqual(len(fork_ops), 1, ops)
        self.assertEqual(fork_ops[0]["result"], {"snapshot_id": snap_id, "sandbox_ids": ids})

        # A child is an ordinary sandbox: stop/start keeps its own files; destroy leaves the others.
        sp.action(ids[2], "stop")
        sp.action(ids[2], "start")
        self.assertEqual(self.cat(ids[2], "/root/who"), "me-3\n")
        sp.destroy(ids[1])
        self.assertEqual(sp.leaks(ids[1]), [])
        for sid in (parent, ids[0], ids[2]):
            self.assertEqual(sp.sh(sid, "echo up")["stdout"], "up\n")

    def test_fork_sixteen(self):
        sp = self.spaced
        parent = self.new_sandbox(metadata={"t": "history-fork-16"})
        sp.sh(parent, "echo sixteen > /root/n")
        _, children = self.fork(parent, 16)
        self.assertEqual(len({c["id"] for c in children}), 16)
        for c in children:
            self.assertEqual(c["state"], "running", c)
            self.assertEqual(self.cat(c["id"], "/root/n"), "sixteen\n")
        for c in children:
            sp.destroy(c["id"])
            self.assertEqual(sp.leaks(c["id"]), [])

    def test_fork_metadata_and_explicit_older_snapshot(self):
        sp = self.spaced
        parent = self.new_sandbox(metadata={"t": "history-fork-old"})
        sp.sh(parent, "echo 1 > /root/v")
        s1 = self.snapshot(parent, label="one")
        sp.sh(parent, "echo 2 > /root/v; echo later > /root/later")
        s2 = self.snapshot(parent, label="two")
        sp.sh(parent, "echo 3 > /root/v")
        before = [s["id"] for s in self.list_snapshots(parent)]

        snap_id, children = self.fork(parent, 2, snapshot_id=s1["id"], metadata={"role": "child"})
        self.assertEqual(snap_id, s1["id"])
        for c in children:
            self.assertEqual(c["lineage"], {"parent_sandbox_id": parent, "parent_snapshot_id": s1["id"],
                                            "head_snapshot_id": s1["id"]})
            self.assertEqual(c["metadata"], {"role": "child"})
            self.assertEqual(self.cat(c["id"], "/root/v"), "1\n")
            self.assertFalse(self.exists_in(c["id"], "/root/later"))
        # No new snapshot; the parent's head and files are unchanged.
        self.assertEqual([s["id"] for s in self.list_snapshots(parent)], before)
        self.assertEqual(self.head(parent), s2["id"])
        self.assertEqual(self.cat(parent, "/root/v"), "3\n")
        _, data = sp.api("GET", "/v1/sandboxes?metadata.role=child", expect=200)
        self.assertEqual(sorted(s["id"] for s in data["sandboxes"]), sorted(c["id"] for c in children))

        # A child's own snapshot descends from the snapshot it was forked from.
        child = children[0]["id"]
        sp.sh(child, "echo child > /root/v")
        cs = self.snapshot(child)
        self.assertEqual(cs["parent_snapshot_id"], s1["id"])
        self.assertEqual(cs["sandbox_id"], child)
        # Restore of the child to its own snapshot works; to the parent's is refused (400).
        sp.sh(child, "echo drift > /root/v")
        self.restore(child, cs["id"])
        self.assertEqual(self.cat(child, "/root/v"), "child\n")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % child, {"snapshot_id": s1["id"]}),
                         400, "invalid_request")
        # And a grandchild from the child's snapshot.
        _, grand = self.fork(child, 1, snapshot_id=cs["id"])
        self.assertEqual(grand[0]["lineage"]["parent_sandbox_id"], child)
        self.assertEqual(self.cat(grand[0]["id"], "/root/v"), "child\n")

    # ------------------------------------------------------------ refusals

    def test_capabilities_and_memory_snapshot_refused(self):
        sp = self.spaced
        _, caps = sp.api("GET", "/v1/capabilities", expect=200)
        self.assertIsInstance(caps["runtime"], str)
        self.assertIsInstance(caps["runtime_version"], str)
        c = caps["capabilities"]
        self.assertIs(c["filesystem_snapshot"], True)
        self.assertIs(c["restore"], True)
        self.assertIs(c["fork"], True)
        self.assertIsInstance(c["memory_snapshot"], bool)
        self.assertIsInstance(c["pause"], bool)
        self.assertEqual(sp.request("GET", "/v1/capabilities", key=None)[0], 401)
        if c["memory_snapshot"]:
            raise unittest.SkipTest("this runtime takes memory snapshots")
        sid = self.new_sandbox(metadata={"t": "history-memory"})
        snaps_before = [s["id"] for s in self.list_snapshots()]
        on_disk_before = sorted(os.listdir(os.path.join(sp.state_dir, "pool", "snapshots")))
        _, ops_before = sp.api("GET", "/v1/operations?target=" + sid, expect=200)
        for path in ("/v1/sandboxes/%s/snapshots", "/v1/sandboxes/%s/snapshots?wait=true"):
            for body in ({"memory": True}, {"memory": True, "label": "m"}):
                self.assertError(sp.request("POST", path % sid, body), 422, "unsupported")
        self.assertEqual([s["id"] for s in self.list_snapshots()], snaps_before)
        self.assertEqual(sorted(os.listdir(os.path.join(sp.state_dir, "pool", "snapshots"))), on_disk_before)
        _, ops_after = sp.api("GET", "/v1/operations?target=" + sid, expect=200)
        self.assertEqual(ops_after, ops_before, "a refused memory snapshot queued an operation")
        self.assertIsNone(self.head(sid))
        self.assertEqual(sp.state(sid), "running")
        # memory:false is a filesystem snapshot.
        status, data = sp.request("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {"memory": False})
        self.assertEqual(status, 200, data)
        self.addCleanup(self.delete_snapshot_quietly, data["snapshot"]["id"])
        self.assertEqual(data["snapshot"]["kind"], "filesystem")

    def test_bad_input(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-bad"})
        other = self.new_sandbox(metadata={"t": "history-bad-other"})
        snap = self.snapshot(sid)
        other_snap = self.snapshot(other)
        sandboxes_before = sp.list_ids()
        snaps_before = [s["id"] for s in self.list_snapshots()]
        ghost_sb, ghost_snap = "sb-0000000000000000", "snap-0000000000000000"

        # Unknown things: 404.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % ghost_sb, {}), 404, "not_found")
        self.assertError(sp.request("GET", "/v1/sandboxes/%s/snapshots" % ghost_sb), 404, "not_found")
        self.assertError(sp.request("GET", "/v1/snapshots/" + ghost_snap), 404, "not_found")
        self.assertError(sp.request("GET", "/v1/snapshots/not..valid!"), 404, "not_found")
        self.assertError(sp.request("DELETE", "/v1/snapshots/" + ghost_snap), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": ghost_snap}), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % ghost_sb, {"snapshot_id": snap["id"]}),
                         404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"snapshot_id": ghost_snap}), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % ghost_sb, {"count": 1}), 404, "not_found")
        # Another sandbox's snapshot: 400 for restore and fork.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": other_snap["id"]}),
                         400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"snapshot_id": other_snap["id"]}),
                         400, "invalid_request")
        # Count out of range or not an integer.
        for count in (0, 17, -1, 1.5, "3", True):
            self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"count": count}), 400, "invalid_request")
        # Unknown fields.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"labl": "x"}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": snap["id"], "force": True}),
                         400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"cnt": 2}), 400, "invalid_request")
        # Wrong types and sizes.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"label": 5}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"label": "x" * 128}), 400,
                         "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"memory": "yes"}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, raw=b"{not json",
                                    headers={"Content-Type": "application/json"}), 400, "invalid_json")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"metadata": "x"}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"snapshot_id": 7}), 400, "invalid_request")
        # Restore without a snapshot.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": None}), 400,
                         "invalid_request")
        status, body = sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": ""})
        self.assertIn(status, (400, 404), body)  # no such snapshot either way
        self.assertError(sp.request("GET", "/v1/snapshots?sandbox_id=bad%20id"), 400, "invalid_request")
        # None of that made anything or changed the sandboxes.
        self.assertEqual(sp.list_ids(), sandboxes_before)
        self.assertEqual([s["id"] for s in self.list_snapshots()], snaps_before)
        self.assertEqual(self.head(sid), snap["id"])
        self.assertEqual(sp.sh(sid, "echo fine")["stdout"], "fine\n")
        # A label of 127 characters is fine; no body at all is fine.
        self.snapshot(sid, label="y" * 127)
        status, data = sp.request("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid)
        self.assertEqual(status, 200, data)
        self.addCleanup(self.delete_snapshot_quietly, data["snapshot"]["id"])
        self.assertEqual(data["snapshot"]["label"], "")

    def test_wrong_state(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-state"})
        snap = self.snapshot(sid)
        sp.destroy(sid)
        # A destroyed sandbox: 404 for snapshot, restore and fork; its snapshot survives.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {}), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": snap["id"]}), 404,
                         "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"count": 1}), 404, "not_found")
        self.assertEqual(self.get_snapshot(snap["id"])["state"], "ready")

    # ------------------------------------------------------------ delete

    def test_delete_snapshot(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-delete"})
        sp.sh(sid, "echo keep > /root/k")
        keep = self.snapshot(sid, label="keep")
        sp.sh(sid, "echo gone > /root/k")
        doomed = self.snapshot(sid, label="doomed")
        self.assertEqual(doomed["parent_snapshot_id"], keep["id"])
        self.assertEqual(self.head(sid), doomed["id"])
        path = self.snap_dir(doomed["id"])
        self.assertTrue(os.path.isdir(path))
        status, body = self.delete_snapshot(doomed["id"])
        self.assertEqual(status, 204, body)
        self.assertIsNone(body)
        self.assertFalse(os.path.lexists(path), "snapshot subvolume left at %s" % path)
        self.assertError(sp.request("GET", "/v1/snapshots/" + doomed["id"]), 404, "not_found")
        self.assertNotIn(doomed["id"], [s["id"] for s in self.list_snapshots(sid)])
        self.assertNotIn(doomed["id"], [s["id"] for s in self.list_snapshots()])
        self.assertError(sp.request("DELETE", "/v1/snapshots/" + doomed["id"]), 404, "not_found")
        # Lineage stays a chain: the sandbox's head falls back to the deleted one's parent.
        self.assertEqual(self.head(sid), keep["id"])
        # Restore and fork to it: 404; the sandbox is untouched.
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": doomed["id"]}), 404,
                         "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"snapshot_id": doomed["id"]}), 404,
                         "not_found")
        self.assertEqual(sp.state(sid), "running")
        self.assertEqual(self.cat(sid, "/root/k"), "gone\n")
        # The other snapshot is intact and usable; deleting the sandbox's head is allowed.
        self.assertTrue(os.path.isdir(self.snap_dir(keep["id"])))
        self.restore(sid, keep["id"])
        self.assertEqual(self.cat(sid, "/root/k"), "keep\n")
        # Deleting the snapshot children were forked from leaves the children working.
        snap_id, children = self.fork(sid, 1)
        self.assertEqual(self.delete_snapshot(snap_id)[0], 204)
        self.assertFalse(os.path.lexists(self.snap_dir(snap_id)))
        self.assertEqual(self.cat(children[0]["id"], "/root/k"), "keep\n")
        self.assertEqual(self.delete_snapshot(keep["id"])[0], 204)
        self.assertEqual(sp.state(sid), "running")

    def test_delete_while_size_is_measured(self):
        """DELETE of a snapshot nothing uses answers 204, also while spaced's own background
        size measurement (`btrfs send` of the snapshot, every ~5 s) happens to read it."""
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "history-delete-sizer"})
        r = sp.sh(sid, "dd if=/dev/urandom of=/root/big bs=1M count=256 2>/dev/null && sync", timeout_s=600)
        self.assertEqual(r["exit_code"], 0, r)
        snap = self.snapshot(sid)
        try:
            pid = wait_for(lambda: self.send_of(snap["id"]), timeout=30, interval=0.005,
                           what="the background size measurement to read %s" % snap["id"])
        except AssertionError:
            if self.get_snapshot(snap["id"])["bytes_exclusive"] is None:
                raise unittest.SkipTest("no background size measurement on this spaced")
            raise unittest.SkipTest("the size measurement finished before it could be caught")
        status, body = sp.request("DELETE", "/v1/snapshots/" + snap["id"])
        still_sending = os.path.exists("/proc/%d" % pid)
        self.assertEqual(status, 204, "DELETE of an unused snapshot while spaced measures its size (btrfs send pid %d, "
                                      "still running after the answer: %s): %r" % (pid, still_sending, body))
        self.assertFalse(os.path.lexists(self.snap_dir(snap["id"])))
        self.assertError(sp.request("GET", "/v1/snapshots/" + snap["id"]), 404, "not_found")

    # ------------------------------------------------------------ destroy of the parent

    def test_destroy_parent_keeps_snapshots_and_children(self):
        sp = self.spaced
        parent = sp.create(metadata={"t": "history-orphaned"})
        self.addCleanup(self.destroy_quietly, parent)
        sp.sh(parent, "echo from-parent > /root/f")
        snap = self.snapshot(parent, label="kept")
        fork_snap, children = self.fork(parent, 2)
        ids = [c["id"] for c in children]
        sp.destroy(parent)
        self.assertEqual(sp.state(parent), "destroyed")
        self.assertEqual(sp.leaks(parent), [])
        # Its snapshots stay: GET, lists, the subvolumes.
        for sid_ in (snap["id"], fork_snap):
            s = self.get_snapshot(sid_)
            self.assertEqual(s["sandbox_id"], parent)
            self.assertEqual(s["state"], "ready")
            self.assertTrue(os.path.isdir(self.snap_dir(sid_)))
        _, data = sp.api("GET", "/v1/snapshots?sandbox_id=" + parent, expect=200)
        self.assertEqual([s["id"] for s in data["snapshots"]], [snap["id"], fork_snap])
        self.assertEqual(read_bytes(os.path.join(self.snap_dir(snap["id"]), "root", "f")), b"from-parent\n")
        # The children keep running with their files and their lineage.
        for cid in ids:
            self.assertEqual(sp.state(cid), "running")
            self.assertEqual(self.cat(cid, "/root/f"), "from-parent\n")
            self.assertEqual(sp.get(cid)["lineage"]["parent_sandbox_id"], parent)
        # A child can still snapshot, restore and fork.
        sp.sh(ids[0], "echo child > /root/f")
        cs = self.snapshot(ids[0])
        self.assertEqual(cs["parent_snapshot_id"], fork_snap)
        sp.sh(ids[0], "echo drift > /root/f")
        self.restore(ids[0], cs["id"])
        self.assertEqual(self.cat(ids[0], "/root/f"), "child\n")
        # The dead parent's snapshots can be deleted.
        self.assertEqual(self.delete_snapshot(snap["id"])[0], 204)
        self.assertFalse(os.path.lexists(self.snap_dir(snap["id"])))


class HistoryCrash(HistoryMixin, FreshSpacedTestCase):
    """kill -9 of spaced in the middle of a fork or a restore."""

    def wait_lock_released(self):
        sp = self.spaced
        wait_for(lambda: not sp.lock_holders(), timeout=10,
                 what="spaced.lock to be released after kill -9 (held by %r: %r)" % (
                     sp.lock_holders(), [read_cmdline(p)[:100] for p in sp.lock_holders()]))

    def all_rows(self):
        rows = self.spaced.list_ids()
        for st in ("failed", "destroyed"):
            rows.update(self.spaced.list_ids(state=st))
        return rows

    def check_disk_matches_rows(self):
        sp = self.spaced
        rows = self.all_rows()
        live = {sid for sid, st in rows.items() if st != "destroyed"}
        on_disk = set(os.listdir(os.path.join(sp.state_dir, "pool", "sandboxes")))
        self.assertEqual(on_disk - live, set(), "subvolumes under pool/sandboxes without a live row (rows %r)" % rows)
        for sid, st in rows.items():
            if st in ("running", "stopped", "paused"):
                self.assertIn(sid, on_disk, "%s is %s but has no rootfs" % (sid, st))
        snaps = {s["id"]: s for s in self.list_snapshots()}
        snap_disk = set(os.listdir(os.path.join(sp.state_dir, "pool", "snapshots")))
        self.assertEqual(snap_disk - set(snaps), set(), "snapshot subvolumes without a row")
        for s in snaps.values():
            self.assertEqual(s["state"], "ready", "snapshot row left unfinished: %r" % s)
            self.assertIn(s["id"], snap_disk, "snapshot %s is ready but has no subvolume" % s["id"])
        return rows, snaps

    def test_kill9_right_after_fork(self):
        sp = self.spaced
        parent = sp.create(metadata={"t": "crash-fork"})
        sp.sh(parent, "echo base > /root/base; dd if=/dev/urandom of=/root/blob bs=1M count=4 2>/dev/null; "
                      "sleep 300 </dev/null >/dev/null 2>&1 &")
        blob_sum = sp.sh(parent, "sha256sum /root/blob")["stdout"].split()[0]
        forks = []
        for rnd, delay in enumerate((0, 0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08)):
            status, data = sp.request("POST", "/v1/sandboxes/%s/fork" % parent, {"count": 3, "metadata": {"round": str(rnd)}})
            self.assertEqual(status, 202, data)
            op = data["operation"]
            children = [c["id"] for c in data["sandboxes"]]
            self.assertEqual(len(children), 3, data)
            sp.known_ids.update(children)
            forks.append((op["id"], children))
            if delay:
                time.sleep(delay)
            sp.kill9()
            self.wait_lock_released()
            sp.start()

            def settled():
                states = {cid: sp.state(cid) for cid in children}
                if not all(s in ("running", "failed") for s in states.values()):
                    return False
                _, o = sp.api("GET", "/v1/operations/" + op["id"], expect=200)
                return o if o["state"] in FINISHED else False

            o = wait_for(settled, timeout=90, interval=0.2, what="fork children and operation to settle (round %d)" % rnd)
            self.assertIsNotNone(o["finished_at"], o)
            states = {cid: sp.state(cid) for cid in children}
            if o["state"] == "succeeded":
                self.assertEqual(set(states.values()), {"running"}, (o, states))
                self.assertEqual(o["result"]["sandbox_ids"], children, o)
                self.assertEqual(self.get_snapshot(o["result"]["snapshot_id"])["state"], "ready")
            else:
                self.assertIsNotNone(o["error"], o)
            for cid, st in states.items():
                if st == "running":
                    self.assertEqual(self.cat(cid, "/root/base"), "base\n")
                    self.assertEqual(sp.sh(cid, "sha256sum /root/blob")["stdout"].split()[0], blob_sum)
                    self.assertEqual(sp.get(cid)["lineage"]["parent_sandbox_id"], parent)
            # The parent is running and not left frozen; its process survived.
            self.assertEqual(sp.state(parent), "running")
            self.assertTrue(is_thawed(parent), "parent left frozen after the crash: %r" % freezer_states(parent))
            self.assertEqual(sp.sh(parent, "ps -o comm | grep -c '^sleep'", timeout_s=10)["stdout"], "1\n")
            # No operation left pending anywhere; disk and rows agree.
            _, ops = sp.api("GET", "/v1/operations", expect=200)
            unfinished = [x for x in ops["operations"] if x["state"] not in FINISHED]
            self.assertEqual(unfinished, [], "operations left unfinished")
            self.check_disk_matches_rows()
            for cid, st in states.items():
                if st == "failed":
                    self.assertEqual(cgroup_pids(cid), [], "failed child %s has processes" % cid)
            self.assertEqual(sp.stray_processes(), [], "half-made processes of the killed spaced left behind")

        # Everything made can be destroyed without leaks.
        for _op, children in forks:
            for cid in children:
                sp.destroy(cid)
                self.assertEqual(sp.leaks(cid), [], "leaks after destroying %s" % cid)
        for s in self.list_snapshots():
            self.assertEqual(self.delete_snapshot(s["id"])[0], 204)
        self.assertEqual(os.listdir(os.path.join(sp.state_dir, "pool", "snapshots")), [])

    def test_kill9_right_after_snapshot(self):
        sp = self.spaced
        sid = sp.create(metadata={"t": "crash-snapshot"})
        sp.sh(sid, "echo snap > /root/f; sleep 300 </dev/null >/dev/null 2>&1 &")
        taken = []
        for rnd, delay in enumerate((0, 0.001, 0.003, 0.01)):
            status, data = sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"label": "r%d" % rnd})
            self.assertEqual(status, 202, data)
            op, snap = data["operation"], data["snapshot"]
            self.assertIn(snap["state"], ("creating", "ready"), snap)
            if delay:
                time.sleep(delay)
            sp.kill9()
            self.wait_lock_released()
            sp.start()

            def settled():
                _, o = sp.api("GET", "/v1/operations/" + op["id"], expect=200)
                return o if o["state"] in FINISHED else False

            o = wait_for(settled, timeout=60, interval=0.2, what="snapshot operation to settle (round %d)" % rnd)
            status, s = sp.request("GET", "/v1/snapshots/" + snap["id"])
            if o["state"] == "succeeded":
                self.assertEqual(status, 200, s)
                self.assertEqual(s["state"], "ready", s)
                self.assertEqual(read_bytes(os.path.join(self.snap_dir(snap["id"]), "root", "f")), b"snap\n")
                taken.append(snap["id"])
            else:
                self.assertEqual(status, 404, "a failed snapshot left its row: %r" % (s,))
            self.assertEqual(sp.state(sid), "running")
            self.assertTrue(is_thawed(sid), "sandbox left frozen after the crash: %r" % freezer_states(sid))
            self.assertEqual(sp.sh(sid, "ps -o comm | grep -c '^sleep'", timeout_s=10)["stdout"], "1\n")
            self.check_disk_matches_rows()
        if taken:
            self.assertEqual(self.head(sid), taken[-1])
        sp.destroy(sid)
        self.assertEqual(sp.leaks(sid), [])

    def test_kill9_right_after_restore(self):
        sp = self.spaced
        sid = sp.create(metadata={"t": "crash-restore"})
        sp.sh(sid, "echo restored > /root/f")
        snap = self.snapshot(sid)
        for rnd, delay in enumerate((0, 0.002, 0.005, 0.01)):
            sp.sh(sid, "echo drift-%d > /root/f; echo x > /root/extra" % rnd)
            status, data = sp.request("POST", "/v1/sandboxes/%s/restore" % sid, {"snapshot_id": snap["id"]})
            self.assertEqual(status, 202, data)
            op = data["operation"]
            if delay:
                time.sleep(delay)
            sp.kill9()
            self.wait_lock_released()
            sp.start()

            def settled():
                _, o = sp.api("GET", "/v1/operations/" + op["id"], expect=200)
                return o if o["state"] in FINISHED and sp.state(sid) != "restoring" else False

            o = wait_for(settled, timeout=90, interval=0.2, what="restore to settle (round %d)" % rnd)
            self.assertEqual(o["state"], "succeeded", "interrupted restore not finished by the restart: %r" % o)
            self.assertEqual(sp.state(sid), "running", sp.get(sid))
            self.assertEqual(self.cat(sid, "/root/f"), "restored\n")
            self.assertFalse(self.exists_in(sid, "/root/extra"))
            self.assertEqual(self.head(sid), snap["id"])
            self.check_disk_matches_rows()
            self.assertEqual(sp.stray_processes(), [], "half-made processes of the killed spaced left behind")
        sp.destroy(sid)
        self.assertEqual(sp.leaks(sid), [])


if __name__ == "__main__":
    unittest.main()
