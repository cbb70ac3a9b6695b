"""Memory state of gvisor sandboxes (docs/memory-state.md): a snapshot with `memory: true` is
the runsc checkpoint image plus the btrfs snapshot taken at the same frozen moment; restore
and fork of it bring the processes back where they were (a shell loop goes on counting from
the snapshot's value, a value held only in a process's memory survives); the image lives in
pool/memory/<snapshot id>, is counted in bytes_exclusive and goes with the snapshot; spaced
killed between the checkpoint and the row leaves the old state or the new one. Needs runsc
from bookworm-backports (scripts/install-deps): without it these tests fail."""

import http.client
import json
import os
import shutil
import subprocess
import time
import unittest

from spaced_harness import SpacedTestCase, free_port, tar_of, wait_for
from test_gvisor import runsc_processes
from test_rolling import rolling_of

# A process whose state lives in its memory: the secret is read once and its file removed,
# the counter is a shell variable; both are written out (whole, by a rename) every 0.1 s.
COUNTER = ("echo s3cr3t-$$ > /root/secret; "
           "(v=$(cat /root/secret); rm /root/secret; i=0; "
           "while true; do i=$((i+1)); echo \"$v $i\" > /root/count.tmp; mv /root/count.tmp /root/count; sleep 0.1; done)"
           " >/dev/null 2>&1 </dev/null & echo started")


class MemoryState(SpacedTestCase):

    @classmethod
    def setUpClass(cls):
        assert shutil.which("runsc"), "runsc is not installed (scripts/install-deps installs it)"
        cls.spaced_kwargs = {"extra_args": ["--memory-import", "on"]}  # the export/import case brings an image
        super().setUpClass()

    def counting_sandbox(self, tag):
        sp = self.spaced
        sid = self.new_sandbox(runtime="gvisor", metadata={"t": tag})
        self.assertEqual(sp.sh(sid, COUNTER)["stdout"], "started\n")
        wait_for(lambda: self.count(sid)[1] >= 3, timeout=30, what="the counter of %s to run" % sid)
        return sid

    def count(self, sid):
        """(secret, counter) as the loop inside last wrote them."""
        out = self.spaced.sh(sid, "cat /root/count")["stdout"].split()
        return out[0], int(out[1])

    def snapshot_count(self, snap_id):
        with open(os.path.join(self.spaced.state_dir, "pool", "snapshots", snap_id, "root", "count")) as f:
            secret, n = f.read().split()
        return secret, int(n)

    def image_dir(self, snap_id):
        return os.path.join(self.spaced.state_dir, "pool", "memory", snap_id)

    def memory_snapshot(self, sid, **body):
        _, d = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, dict(memory=True, **body), expect=200)
        snap = d["snapshot"]
        self.assertEqual((snap["state"], snap["kind"]), ("ready", "memory"))
        self.addCleanup(self.delete_snapshot_quietly, snap["id"])
        return snap

    def delete_snapshot_quietly(self, snap_id):
        if self.spaced.alive():
            self.spaced.request("DELETE", "/v1/snapshots/" + snap_id)

    def test_capabilities_say_gvisor_takes_memory_snapshots(self):
        _, caps = self.spaced.api("GET", "/v1/capabilities", expect=200)
        by_name = {d["name"]: d for d in caps["drivers"]}
        self.assertIs(by_name["gvisor"]["capabilities"]["memory_snapshot"], True)
        self.assertIs(by_name["namespaces"]["capabilities"]["memory_snapshot"], False)

    def test_namespace_sandbox_refuses_memory_and_changes_nothing(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "memory-ns"})
        _, ops_before = sp.api("GET", "/v1/operations?target=" + sid, expect=200)
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"memory": True}), 422, "unsupported")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"memory": True}), 422, "unsupported")
        _, ops_after = sp.api("GET", "/v1/operations?target=" + sid, expect=200)
        self.assertEqual(ops_after, ops_before)
        self.assertEqual(sp.state(sid), "running")

    def test_bad_input(self):
        sp = self.spaced
        sid = self.new_sandbox(runtime="gvisor", metadata={"t": "memory-bad"})
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"memory": "yes"}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"memory": 1}), 400, "invalid_request")
        snap = self.memory_snapshot(sid)
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/fork" % sid, {"memory": True, "snapshot_id": snap["id"]}),
                         400, "invalid_request")
        # A stopped sandbox has no processes to save.
        sp.action(sid, "stop")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"memory": True}), 409, "invalid_state")

    def test_snapshot_restore_goes_on_counting_from_the_snapshot(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-restore")
        snap = self.memory_snapshot(sid, label="counting")
        # The filesystem snapshot and the image are of one moment: the count on disk is
        # where the restored loop goes on from.
        secret, at_snapshot = self.snapshot_count(snap["id"])
        self.assertTrue(secret.startswith("s3cr3t-"), secret)
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(snap["id"]), "checkpoint.img")))
        # The sandbox went on running after the snapshot.
        wait_for(lambda: self.count(sid)[1] >= at_snapshot + 20, timeout=30, what="the loop to go on")
        before_restore = self.count(sid)[1]
        sp.api("POST", "/v1/sandboxes/%s/restore?wait=true" % sid, {"snapshot_id": snap["id"]}, expect=200)
        self.assertEqual(sp.state(sid), "running")
        self.assertEqual(self.spaced.get(sid)["lineage"]["head_snapshot_id"], snap["id"])
        got_secret, n = self.count(sid)
        # The secret exists only in the process's memory (its file was removed before the snapshot).
        self.assertEqual(got_secret, secret)
        self.assertEqual(sp.sh(sid, "test -e /root/secret; echo $?")["stdout"], "1\n")
        self.assertGreaterEqual(n, at_snapshot)
        self.assertLess(n, before_restore, "the counter did not go back to the snapshot's")
        wait_for(lambda: self.count(sid)[1] > n + 5, timeout=30, what="the restored loop to go on counting")

    def test_image_is_counted_and_goes_with_the_snapshot(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-bytes")
        snap = self.memory_snapshot(sid)
        image = os.path.join(self.image_dir(snap["id"]), "checkpoint.img")
        image_bytes = os.stat(image).st_blocks * 512
        self.assertGreater(image_bytes, 0)
        measured = wait_for(lambda: sp.api("GET", "/v1/snapshots/" + snap["id"], expect=200)[1]["bytes_exclusive"],
                            timeout=60, what="the snapshot to be measured")
        self.assertGreaterEqual(measured, image_bytes)
        sp.api("DELETE", "/v1/snapshots/" + snap["id"], expect=204)
        self.assertFalse(os.path.exists(self.image_dir(snap["id"])))
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "pool", "snapshots", snap["id"])))

    def test_paused_sandbox_stays_paused(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-paused")
        sp.action(sid, "pause")
        snap = self.memory_snapshot(sid)
        self.assertEqual(sp.state(sid), "paused")
        with open(os.path.join(sp.subvolume(sid), "root", "count")) as f:
            frozen = f.read()
        time.sleep(1)
        with open(os.path.join(sp.subvolume(sid), "root", "count")) as f:
            self.assertEqual(f.read(), frozen, "a paused sandbox ran during its memory snapshot")
        sp.action(sid, "resume")
        n = self.count(sid)[1]
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the loop to go on after resume")
        self.assertEqual(self.snapshot_count(snap["id"])[1], int(frozen.split()[1]))

    def test_fork_from_memory_snapshot_continues_independently(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-fork")
        snap = self.memory_snapshot(sid)
        secret, at_snapshot = self.snapshot_count(snap["id"])
        _, d = sp.api("POST", "/v1/sandboxes/%s/fork?wait=true" % sid, {"snapshot_id": snap["id"], "count": 2}, expect=200)
        kids = d["operation"]["result"]["sandbox_ids"]
        self.assertEqual(len(kids), 2)
        for kid in kids:
            self.addCleanup(self._destroy_quietly, kid)
            self.assertEqual(sp.state(kid), "running")
        # Each goes on from the snapshot's count, in its own filesystem.
        sp.sh(kids[0], "echo first > /root/mark")
        for kid in kids:
            got_secret, n = self.count(kid)
            self.assertEqual(got_secret, secret)
            self.assertGreaterEqual(n, at_snapshot)
            wait_for(lambda: self.count(kid)[1] > n + 5, timeout=30, what="the loop of %s to go on" % kid)
        self.assertEqual(sp.sh(kids[1], "cat /root/mark 2>/dev/null; echo .")["stdout"], ".\n")
        self.assertEqual(sp.sh(sid, "cat /root/mark 2>/dev/null; echo .")["stdout"], ".\n")
        # What the restored kernel holds is the parent's: its hostname (docs/memory-state.md).
        self.assertEqual(sp.sh(kids[0], "hostname")["stdout"].strip(), sid)
        # Destroying one leaves the other running.
        sp.destroy(kids[0])
        n = self.count(kids[1])[1]
        wait_for(lambda: self.count(kids[1])[1] > n + 3, timeout=30, what="the other fork to go on")

    def test_fork_with_memory_of_the_running_sandbox(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-fork-live")
        _, d = sp.api("POST", "/v1/sandboxes/%s/fork?wait=true" % sid, {"memory": True}, expect=200)
        result = d["operation"]["result"]
        kid = result["sandbox_ids"][0]
        self.addCleanup(self._destroy_quietly, kid)
        self.addCleanup(self.delete_snapshot_quietly, result["snapshot_id"])
        _, snap = sp.api("GET", "/v1/snapshots/" + result["snapshot_id"], expect=200)
        self.assertEqual((snap["kind"], snap["label"]), ("memory", "fork"))
        secret, at_snapshot = self.snapshot_count(snap["id"])
        got_secret, n = self.count(kid)
        self.assertEqual(got_secret, secret)
        self.assertGreaterEqual(n, at_snapshot)
        wait_for(lambda: self.count(kid)[1] > n + 5, timeout=30, what="the fork's loop to go on")
        # The parent went on too.
        p = self.count(sid)[1]
        wait_for(lambda: self.count(sid)[1] > p + 5, timeout=30, what="the parent's loop to go on")

    def test_kill9_between_checkpoint_and_row_leaves_a_whole_pair(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-crash")
        sp.stop()
        sp.env = {"SPACED_FAULT_KILL": "snapshot.memory:checkpointed"}
        sp.start()
        try:
            status, d = sp.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"memory": True})
            self.assertEqual(status, 202, d)
            snap_id = d["snapshot"]["id"]
            wait_for(lambda: not sp.alive(), timeout=60, what="spaced to die at the fault point")
            self.assertEqual(sp.proc.returncode, -9, "spaced ended otherwise than at the fault point")
            # Killed with the image still partial: no row says ready without it.
            self.assertFalse(os.path.exists(self.image_dir(snap_id)))
            self.assertTrue(os.path.exists(self.image_dir(snap_id) + ".partial"))
        finally:
            sp.kill9()
            sp.env = None
        sp.start()
        self.addCleanup(self.delete_snapshot_quietly, snap_id)
        snap = wait_for(lambda: (lambda s: s if s["state"] == "ready" else None)(
            sp.api("GET", "/v1/snapshots/" + snap_id, expect=200)[1]), timeout=60, what="the redone snapshot")
        self.assertEqual(snap["kind"], "memory")
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(snap_id), "checkpoint.img")))
        self.assertFalse(os.path.exists(self.image_dir(snap_id) + ".partial"))
        # The sandbox runs on, its agent answering.
        n = self.count(sid)[1]
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the loop to go on after the crash")
        # And the pair restores.
        _, at_snapshot = self.snapshot_count(snap_id)
        sp.api("POST", "/v1/sandboxes/%s/restore?wait=true" % sid, {"snapshot_id": snap_id}, expect=200)
        self.assertGreaterEqual(self.count(sid)[1], at_snapshot)

    def hibernate(self, sid):
        sp = self.spaced
        _, d = sp.api("POST", "/v1/sandboxes/%s/pause?wait=true" % sid, {"memory_to_disk": True}, expect=200)
        self.assertEqual(d["sandbox"]["state"], "paused")
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(sid), "checkpoint.img")))
        return d

    def test_hibernate_releases_the_sandbox_and_resume_brings_it_back(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-hibernate")
        self.assertTrue(runsc_processes(sid))
        d = self.hibernate(sid)
        self.assertIn("hibernated", d["sandbox"]["state_reason"])
        # Its RAM is released: no runsc process of it is left, nothing runs in its cgroup.
        self.assertEqual(runsc_processes(sid), [])
        with open(os.path.join(sp.subvolume(sid), "root", "count")) as f:
            secret, at_hibernate = f.read().split()
        time.sleep(1)
        with open(os.path.join(sp.subvolume(sid), "root", "count")) as f:
            self.assertEqual(f.read().split(), [secret, at_hibernate])
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "true"}), 409, "invalid_state")
        sp.action(sid, "resume")
        self.assertFalse(os.path.exists(self.image_dir(sid)), "the spent image was kept")
        got_secret, n = self.count(sid)
        self.assertEqual(got_secret, secret)
        self.assertGreaterEqual(n, int(at_hibernate))
        wait_for(lambda: self.count(sid)[1] > n + 5, timeout=30, what="the woken loop to go on")

    def test_hibernated_sandbox_survives_restarts_of_spaced(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-hibernate-restart")
        self.hibernate(sid)
        secret = self.snapshot_secret_of_rootfs(sid)
        sp.restart(hard=True)
        self.assertEqual(sp.state(sid), "paused")
        sp.restart()
        self.assertEqual(sp.state(sid), "paused")
        # The controller's liveness check leaves it be (it has no process, on purpose).
        time.sleep(3)
        self.assertEqual(sp.state(sid), "paused")
        sp.action(sid, "resume")
        self.assertEqual(self.count(sid)[0], secret)

    def test_paused_sandbox_hibernates_in_place(self):
        sp = self.spaced
        sid = self.counting_sandbox("memory-hibernate-paused")
        sp.action(sid, "pause")
        secret, n = self.snapshot_secret_of_rootfs(sid), self.count_of_rootfs(sid)
        d = self.hibernate(sid)
        self.assertIn("hibernated", d["sandbox"]["state_reason"])
        self.assertEqual(runsc_processes(sid), [])
        self.assertEqual(self.count_of_rootfs(sid), n)
        sp.action(sid, "resume")
        got_secret, m = self.count(sid)
        self.assertEqual(got_secret, secret)
        self.assertGreaterEqual(m, n)
        wait_for(lambda: self.count(sid)[1] > m + 3, timeout=30, what="the woken loop to go on")

    def count_of_rootfs(self, sid):
        with open(os.path.join(self.spaced.subvolume(sid), "root", "count")) as f:
            return int(f.read().split()[1])

    def test_hibernate_refusals_and_stop_of_a_hibernated_sandbox(self):
        sp = self.spaced
        ns = self.new_sandbox(metadata={"t": "memory-hibernate-ns"})
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/pause" % ns, {"memory_to_disk": True}), 422, "unsupported")
        self.assertEqual(sp.state(ns), "running")
        sid = self.new_sandbox(runtime="gvisor", metadata={"t": "memory-hibernate-stop"})
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/pause" % sid, {"memory_to_disk": "y"}), 400, "invalid_request")
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/pause" % sid, {"other": 1}), 400, "invalid_request")
        self.hibernate(sid)
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/pause" % sid, {"memory_to_disk": True}), 409, "invalid_state")
        sp.action(sid, "stop")
        self.assertFalse(os.path.exists(self.image_dir(sid)))
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "echo up")["stdout"], "up\n")

    def test_kill9_mid_hibernate_keeps_the_memory(self):
        # Killed at every step: frozen with the agent parked before runsc's checkpoint, after
        # the checkpoint before the image's rename, after the rename before the record, after
        # the record before the processes end, and after. Each time the restart finishes the
        # hibernation and the woken sandbox goes on from where it was.
        sp = self.spaced
        for point in ("checkpoint:frozen", "hibernate:checkpointed", "hibernate:committed", "hibernate:recorded",
                      "hibernate:stopped"):
            sid = self.counting_sandbox("memory-hibernate-crash")
            sp.stop()
            sp.env = {"SPACED_FAULT_KILL": point}
            sp.start()
            try:
                status, d = sp.request("POST", "/v1/sandboxes/%s/pause" % sid, {"memory_to_disk": True})
                self.assertEqual(status, 202, d)
                wait_for(lambda: not sp.alive(), timeout=60, what="spaced to die at " + point)
                self.assertEqual(sp.proc.returncode, -9)
            finally:
                sp.kill9()
                sp.env = None
            sp.start()
            sp.wait_state(sid, "paused", timeout=60)
            self.assertIn("hibernated", sp.get(sid)["state_reason"], point)
            self.assertEqual(runsc_processes(sid), [], point)
            self.assertTrue(os.path.isfile(os.path.join(self.image_dir(sid), "checkpoint.img")), point)
            self.assertFalse(os.path.exists(self.image_dir(sid) + ".partial"), point)
            secret = self.snapshot_secret_of_rootfs(sid)
            sp.action(sid, "resume")
            got_secret, n = self.count(sid)
            self.assertEqual(got_secret, secret, point)
            wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the loop to go on after " + point)
            self.assertEqual(sp.sh(sid, "echo up")["stdout"], "up\n", point)

    def test_kill9_mid_wake_brings_the_sandbox_back(self):
        # Killed once the woken sandbox runs and its handle is recorded, its row still paused:
        # the redone resume finds it running and only lets its agent listen; the spent image
        # goes once it is settled running.
        sp = self.spaced
        sid = self.counting_sandbox("memory-wake-crash")
        self.hibernate(sid)
        secret = self.snapshot_secret_of_rootfs(sid)
        sp.stop()
        sp.env = {"SPACED_FAULT_KILL": "wake:launched"}
        sp.start()
        try:
            status, d = sp.request("POST", "/v1/sandboxes/%s/resume" % sid, {})
            self.assertEqual(status, 202, d)
            wait_for(lambda: not sp.alive(), timeout=60, what="spaced to die at wake:launched")
            self.assertEqual(sp.proc.returncode, -9)
        finally:
            sp.kill9()
            sp.env = None
        sp.start()
        sp.wait_state(sid, "running", timeout=60)
        got_secret, n = self.count(sid)
        self.assertEqual(got_secret, secret)
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the woken loop to go on")
        self.assertFalse(os.path.exists(self.image_dir(sid)), "the spent image was kept")
        self.hibernate(sid)
        sp.action(sid, "resume")
        self.assertEqual(self.count(sid)[0], secret)

    def test_failed_hibernation_leaves_the_sandbox_running(self):
        # The image cannot be moved into place (an immutable file where it goes): the
        # sandbox goes on running, without an image, and its state_reason says why.
        sp = self.spaced
        sid = self.counting_sandbox("memory-hibernate-fails")
        blocker = os.path.join(self.image_dir(sid), "blocker")
        os.makedirs(self.image_dir(sid))
        open(blocker, "w").close()
        subprocess.run(["chattr", "+i", blocker], check=True)
        try:
            status, d = sp.request("POST", "/v1/sandboxes/%s/pause?wait=true&timeout_s=120" % sid, {"memory_to_disk": True})
            self.assertEqual((status, d["operation"]["state"]), (500, "failed"), d)
            sb = sp.get(sid)
            self.assertEqual(sb["state"], "running")
            self.assertTrue(sb["state_reason"].startswith("hibernation failed"), sb["state_reason"])
            self.assertFalse(os.path.exists(self.image_dir(sid) + ".partial"))
            n = self.count(sid)[1]
            wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the loop to go on")
        finally:
            subprocess.run(["chattr", "-i", blocker], check=True)
            shutil.rmtree(self.image_dir(sid))
        self.hibernate(sid)
        sp.action(sid, "resume")
        self.assertEqual(sp.sh(sid, "echo up")["stdout"], "up\n")

    def test_rolling_memory_snapshots(self):
        # A policy with memory: true on a gvisor sandbox takes memory snapshots on the same
        # schedule and retention as filesystem ones; a sandbox whose files did not change is
        # skipped. Refused (422, nothing changed) where the runtime has no memory state.
        sp = self.spaced
        policy = {"interval_s": 60, "max_count": 1, "memory": True}
        before = sp.list_ids()
        self.assertError(sp.request("POST", "/v1/sandboxes", {"rolling_snapshots": policy}), 422, "unsupported")
        self.assertEqual(sp.list_ids(), before)
        ns = self.new_sandbox(metadata={"t": "memory-rolling-ns"})
        self.assertError(sp.request("PATCH", "/v1/sandboxes/" + ns, {"rolling_snapshots": policy}), 422, "unsupported")
        self.assertIsNone(sp.get(ns)["rolling_snapshots"])
        sid = self.new_sandbox(runtime="gvisor", rolling_snapshots=policy, metadata={"t": "memory-rolling"})
        self.assertEqual(sp.get(sid)["rolling_snapshots"]["memory"], True)
        # A process whose only trace is in memory: its pid, and a value it holds.
        sp.sh(sid, "echo 1 > /root/f; (v=held-$$; while true; do sleep 1; done) >/dev/null 2>&1 </dev/null & "
                   "echo $! > /root/pid")
        ready = lambda: [x for x in rolling_of(sp, sid) if x["state"] == "ready"]  # noqa: E731
        first = wait_for(ready, timeout=60, what="the first rolling memory snapshot")
        self.assertEqual(first[0]["kind"], "memory")
        self.assertTrue(os.path.isdir(self.image_dir(first[0]["id"])))
        # Unchanged files: when the interval has passed no new one is taken (memory alone
        # changing does not count, as for filesystem snapshots).
        time.sleep(75)
        self.assertEqual([x["id"] for x in rolling_of(sp, sid)], [first[0]["id"]], "an unchanged sandbox was snapshotted")
        sp.sh(sid, "echo 2 > /root/f")
        second = wait_for(lambda: ready() and ready()[-1]["id"] != first[0]["id"] and ready(), timeout=60,
                          what="the second rolling memory snapshot")
        # max_count 1: the first goes, both halves.
        wait_for(lambda: len(rolling_of(sp, sid)) == 1, timeout=60, what="retention to drop the first")
        self.assertEqual(sp.request("GET", "/v1/snapshots/" + first[0]["id"])[0], 404)
        self.assertFalse(os.path.exists(self.image_dir(first[0]["id"])))
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "pool", "snapshots", first[0]["id"])))
        newest = second[-1]
        self.assertEqual(newest["kind"], "memory")
        pid = sp.sh(sid, "cat /root/pid")["stdout"].strip()
        sp.sh(sid, "kill %s; echo 3 > /root/f" % pid)
        sp.api("POST", "/v1/sandboxes/%s/restore?wait=true" % sid, {"snapshot_id": newest["id"]}, expect=200)
        self.assertEqual(sp.sh(sid, "cat /root/f")["stdout"], "2\n")
        self.assertEqual(sp.sh(sid, "kill -0 %s && echo alive" % pid)["stdout"], "alive\n")

    def download(self, path):
        sp = self.spaced
        conn = sp.connection(timeout=120)
        conn.request("GET", path, headers={"Authorization": "Bearer " + sp.key})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        return r.status, body

    def staged_images(self):
        memory = os.path.join(self.spaced.state_dir, "pool", "memory")
        return sorted(n for n in os.listdir(memory) if n.startswith("import-"))

    def import_memory(self, snap_id, data):
        return self.spaced.request("POST", "/v1/snapshots/import/memory?snapshot_id=" + snap_id, raw=data,
                                   headers={"Content-Type": "application/x-tar"})

    def test_export_and_import_carry_the_memory(self):
        # A memory snapshot moves as two downloads (its filesystem's send stream and its
        # image as a tar); on the other side the image is staged first, then the filesystem
        # import makes the snapshot, kind memory, and a sandbox made from it goes on from
        # that moment. Here the "other host" is this one once the snapshot is deleted.
        sp = self.spaced
        sid = self.counting_sandbox("memory-transfer")
        snap = self.memory_snapshot(sid)["id"]
        secret, at = self.snapshot_count(snap)
        st, fs = self.download("/v1/snapshots/%s/export?full=true" % snap)
        self.assertEqual(st, 200)
        st, image = self.download("/v1/snapshots/%s/memory" % snap)
        self.assertEqual(st, 200)
        _, d = sp.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {}, expect=200)
        self.addCleanup(self.delete_snapshot_quietly, d["snapshot"]["id"])
        self.assertError(sp.request("GET", "/v1/snapshots/%s/memory" % d["snapshot"]["id"]), 409, "invalid_state")
        self.assertEqual(sp.request("GET", "/v1/snapshots/snap-doesnotexist0/memory")[0], 404)
        # Here already: refused.
        self.assertError(self.import_memory(snap, image), 409, "already_exists")
        sp.api("DELETE", "/v1/snapshots/" + snap, expect=204)
        self.assertFalse(os.path.exists(self.image_dir(snap)))

        # Hostile or wrong archives: 4xx, nothing staged.
        for bad, why in ((self.tar({"checkpoint.img": ("link", "/etc/passwd")}), "a symlink"),
                         (self.tar({"checkpoint.img": b"x", "evil": b"y"}), "another file"),
                         (self.tar({"pages.img": b"x"}), "no checkpoint.img"),
                         (self.tar({"../checkpoint.img": b"x"}), "a path outside"),
                         (self.tar({"sub/checkpoint.img": b"x"}), "a directory"),
                         (self.tar({"checkpoint.img": ("hardlink", "/etc/passwd")}), "a hard link out"),
                         (self.tar({"checkpoint.img": ("fifo", None)}), "a fifo"),
                         (os.urandom(4096), "not a tar")):
            st, body = self.import_memory(snap, bad)
            self.assertEqual(st, 400, (why, body))
            self.assertEqual(self.staged_images(), [], why)
        for q in ("", "?snapshot_id=../x", "?snapshot_id=sb-00000000", "?other=1"):
            st, body = sp.request("POST", "/v1/snapshots/import/memory" + q, raw=image,
                                  headers={"Content-Type": "application/x-tar"})
            self.assertEqual(st, 400, (q, body))
        self.assertEqual(self.staged_images(), [])

        st, body = self.import_memory(snap, image)
        self.assertEqual(st, 201, body)
        self.assertEqual(len(self.staged_images()), 1)
        st, got = sp.request("POST", "/v1/snapshots/import", raw=fs, headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(st, 201, got)
        self.addCleanup(self.delete_snapshot_quietly, snap)
        self.assertEqual((got["id"], got["kind"]), (snap, "memory"))
        self.assertEqual(self.staged_images(), [])
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(snap), "checkpoint.img")))
        # A sandbox made from it goes on from the snapshot's moment.
        moved = self.new_sandbox(snapshot_id=snap)
        self.assertEqual(sp.get(moved)["runtime"], "gvisor")
        got_secret, n = self.count(moved)
        self.assertEqual(got_secret, secret)
        self.assertGreaterEqual(n, at)
        wait_for(lambda: self.count(moved)[1] > n + 3, timeout=30, what="the moved loop to go on")
        # A staged image no import adopted goes at the next start.
        st, body = self.import_memory("snap-0123456789abcdef", image)
        self.assertEqual(st, 201, body)
        sp.restart()
        self.assertEqual(self.staged_images(), [])

    @staticmethod
    def tar(entries):
        import io
        import tarfile
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for name, what in entries.items():
                info = tarfile.TarInfo(name)
                if isinstance(what, bytes):
                    info.size = len(what)
                    t.addfile(info, io.BytesIO(what))
                    continue
                kind, target = what
                info.type = {"link": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE}[kind]
                info.linkname = target or ""
                t.addfile(info)
        return buf.getvalue()

    def snapshot_secret_of_rootfs(self, sid):
        with open(os.path.join(self.spaced.subvolume(sid), "root", "count")) as f:
            return f.read().split()[0]

    def test_orphan_images_are_swept_at_start(self):
        sp = self.spaced
        memory = os.path.join(sp.state_dir, "pool", "memory")
        os.makedirs(os.path.join(memory, "snap-0000000000000000"), exist_ok=True)
        os.makedirs(os.path.join(memory, "snap-1111111111111111.partial"), exist_ok=True)
        sp.restart()
        self.assertFalse(os.path.exists(os.path.join(memory, "snap-0000000000000000")))
        self.assertFalse(os.path.exists(os.path.join(memory, "snap-1111111111111111.partial")))



class IdleHibernation(SpacedTestCase):
    """The controller's idle policy (--hibernate-idle S) and E2B's pause and connect: a
    gvisor sandbox paused S seconds is hibernated, a namespace one stays frozen in place;
    E2B's pause of a gvisor sandbox is a hibernation and its connect the wake."""

    @classmethod
    def setUpClass(cls):
        assert shutil.which("runsc"), "runsc is not installed (scripts/install-deps installs it)"
        cls.e2b_port = free_port()
        cls.spaced_kwargs = {"extra_args": ["--hibernate-idle", "1", "--e2b-listen", "127.0.0.1:%d" % cls.e2b_port]}
        super().setUpClass()
        made = cls.spaced.cli("--json", "key", "create", "--e2b", "idle-hibernation")
        assert made.returncode == 0, made.stderr
        cls.e2b_key = json.loads(made.stdout)["secret"]

    counting_sandbox = MemoryState.counting_sandbox
    count = MemoryState.count
    image_dir = MemoryState.image_dir
    snapshot_secret_of_rootfs = MemoryState.snapshot_secret_of_rootfs

    def e2b(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.e2b_port, timeout=180)
        try:
            conn.request(method, path, body=json.dumps(body or {}).encode(),
                         headers={"X-API-KEY": self.e2b_key, "Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = resp.read()
            return resp.status, (json.loads(payload) if payload else None)
        finally:
            conn.close()

    def hibernated(self, sid):
        sb = self.spaced.get(sid)
        return sb["state"] == "paused" and "hibernated" in (sb["state_reason"] or "")

    def test_paused_sandboxes_hibernate_after_the_idle_time(self):
        sp = self.spaced
        ns = self.new_sandbox(metadata={"t": "idle-ns"})
        sp.action(ns, "pause")
        sid = self.counting_sandbox("idle-gvisor")
        sp.action(sid, "pause")
        wait_for(lambda: self.hibernated(sid), timeout=90, what="the idle policy to hibernate %s" % sid)
        self.assertEqual(runsc_processes(sid), [])
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(sid), "checkpoint.img")))
        # The namespace sandbox, paused longer, has no memory state: it stays frozen in place.
        self.assertEqual(sp.get(ns)["state"], "paused")
        self.assertFalse(self.hibernated(ns))
        secret = self.snapshot_secret_of_rootfs(sid)
        sp.action(sid, "resume")
        got_secret, n = self.count(sid)
        self.assertEqual(got_secret, secret)
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the woken loop to go on")
        sp.action(ns, "resume")
        self.assertEqual(sp.sh(ns, "echo up")["stdout"], "up\n")

    def test_memory_import_is_off_by_default(self):
        # This spaced runs without --memory-import: a client's image (bytes runsc restore would
        # parse) is refused before anything is written.
        memory = os.path.join(self.spaced.state_dir, "pool", "memory")
        before = sorted(os.listdir(memory)) if os.path.isdir(memory) else []
        st, body = self.spaced.request("POST", "/v1/snapshots/import/memory?snapshot_id=snap-0123456789abcdef",
                                       raw=b"x" * 4096, headers={"Content-Type": "application/x-tar"})
        self.assertEqual((st, body["error"]["code"]), (403, "forbidden"), body)
        self.assertIn("--memory-import on", body["error"]["message"])
        self.assertEqual(sorted(os.listdir(memory)) if os.path.isdir(memory) else [], before)

    def test_e2b_pause_hibernates_and_connect_wakes(self):
        sp = self.spaced
        sid = self.counting_sandbox("idle-e2b")
        status, d = self.e2b("POST", "/sandboxes/%s/pause" % sid)
        self.assertEqual(status, 204, d)
        self.assertTrue(self.hibernated(sid))
        self.assertEqual(runsc_processes(sid), [])
        status, d = self.e2b("POST", "/sandboxes/%s/pause" % sid)
        self.assertEqual(status, 409, d)
        secret = self.snapshot_secret_of_rootfs(sid)
        status, d = self.e2b("POST", "/sandboxes/%s/connect" % sid, {"timeout": 300})
        self.assertEqual(status, 201, d)
        self.assertEqual(sp.state(sid), "running")
        got_secret, n = self.count(sid)
        self.assertEqual(got_secret, secret)
        wait_for(lambda: self.count(sid)[1] > n + 3, timeout=30, what="the woken loop to go on")
        self.assertFalse(os.path.exists(self.image_dir(sid)))


class IdlePolicy(SpacedTestCase):
    """Idle policies of their own (docs/memory-state.md, Idle policy): this spaced has no
    --hibernate-idle, so only a sandbox's own policy (its create's, its template's IDLE, a
    PATCH's, its parent's for a fork) hibernates or stops it once it has been paused that
    long; a bad policy is a 400 that changes nothing."""

    @classmethod
    def setUpClass(cls):
        assert shutil.which("runsc"), "runsc is not installed (scripts/install-deps installs it)"
        super().setUpClass()

    counting_sandbox = MemoryState.counting_sandbox
    count = MemoryState.count
    image_dir = MemoryState.image_dir
    hibernated = IdleHibernation.hibernated

    def build_template(self, name, spacefile):
        status, d = self.spaced.request("POST", "/v1/templates?name=%s&wait=true&timeout_s=300" % name,
                                        raw=tar_of({"Spacefile": spacefile.encode()}),
                                        headers={"Content-Type": "application/x-tar"}, timeout=320)
        self.assertEqual(status, 200, d)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/templates/%s?force=true" % name)

    def test_own_policy_hibernates_and_none_does_not(self):
        sp = self.spaced
        none = self.counting_sandbox("idle-none")
        sid = self.new_sandbox(runtime="gvisor", idle={"after_s": 1}, metadata={"t": "idle-own"})
        self.assertEqual(sp.get(sid)["idle"], {"after_s": 1, "action": "hibernate"})
        self.assertIsNone(sp.get(none)["idle"])
        ns_stop = self.new_sandbox(idle={"after_s": 1, "action": "stop"}, metadata={"t": "idle-ns-stop"})
        ns_hibernate = self.new_sandbox(idle={"after_s": 1}, metadata={"t": "idle-ns-hibernate"})
        # A fork takes its parent's policy.
        _, forked = sp.api("POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=120" % ns_stop, {"count": 1}, expect=200)
        child = forked["sandboxes"][0]["id"]
        fork_snap = (forked["operation"].get("result") or {}).get("snapshot_id")
        if fork_snap:
            self.addCleanup(sp.request, "DELETE", "/v1/snapshots/" + fork_snap)
        self.addCleanup(self._destroy_quietly, child)
        self.assertEqual(sp.get(child)["idle"], {"after_s": 1, "action": "stop"})
        # The one without a policy is paused first: had the server's default applied to it,
        # it would be due before the other.
        for s in (none, ns_hibernate, ns_stop, sid):
            sp.action(s, "pause")
        wait_for(lambda: self.hibernated(sid), timeout=90, what="its own idle policy to hibernate %s" % sid)
        self.assertEqual(runsc_processes(sid), [])
        self.assertTrue(os.path.isfile(os.path.join(self.image_dir(sid), "checkpoint.img")))
        wait_for(lambda: sp.state(ns_stop) == "stopped", timeout=90, what="the stop policy to stop %s" % ns_stop)
        sb = sp.get(none)
        self.assertEqual(sb["state"], "paused")
        self.assertFalse(self.hibernated(none))
        self.assertNotEqual(runsc_processes(none), [])
        # A namespace sandbox cannot hibernate: it stays frozen in place.
        self.assertEqual(sp.state(ns_hibernate), "paused")
        self.assertFalse(self.hibernated(ns_hibernate))
        # A PATCH gives the other one a policy; it is then hibernated as well.
        _, patched = sp.api("PATCH", "/v1/sandboxes/" + none, {"idle": {"after_s": 1, "action": "hibernate"}}, expect=200)
        self.assertEqual(patched["idle"], {"after_s": 1, "action": "hibernate"})
        wait_for(lambda: self.hibernated(none), timeout=90, what="the patched policy to hibernate %s" % none)
        sp.action(sid, "resume")
        self.assertEqual(sp.sh(sid, "echo awake")["stdout"], "awake\n")
        sp.action(none, "resume")
        _, n = self.count(none)
        wait_for(lambda: self.count(none)[1] > n + 3, timeout=30, what="the woken loop of %s to go on" % none)
        # null: none of its own again.
        _, cleared = sp.api("PATCH", "/v1/sandboxes/" + none, {"idle": None}, expect=200)
        self.assertIsNone(cleared["idle"])

    def test_template_policy_applies_to_its_sandboxes(self):
        sp = self.spaced
        self.build_template("idle-hibernate", "FROM busybox\nIDLE 1\n")
        self.build_template("idle-stop", "FROM busybox\nIDLE 1 stop\n")
        _, t = sp.api("GET", "/v1/templates/idle-stop", expect=200)
        self.assertEqual(t["environment"]["config"]["idle"], {"after_s": 1, "action": "stop"})
        gv = self.new_sandbox(template="idle-hibernate", runtime="gvisor", metadata={"t": "idle-tmpl-gvisor"})
        ns = self.new_sandbox(template="idle-stop", metadata={"t": "idle-tmpl-ns"})
        # A policy given at create wins over the template's: 0 is off.
        kept = self.new_sandbox(template="idle-stop", idle={"after_s": 0}, metadata={"t": "idle-tmpl-off"})
        self.assertEqual(sp.get(gv)["idle"], {"after_s": 1, "action": "hibernate"})
        self.assertEqual(sp.get(ns)["idle"], {"after_s": 1, "action": "stop"})
        self.assertEqual(sp.get(kept)["idle"], {"after_s": 0, "action": "hibernate"})
        for s in (kept, ns, gv):
            sp.action(s, "pause")
        wait_for(lambda: self.hibernated(gv), timeout=90, what="the template's policy to hibernate %s" % gv)
        wait_for(lambda: sp.state(ns) == "stopped", timeout=90, what="the template's policy to stop %s" % ns)
        self.assertEqual(sp.state(kept), "paused")
        sp.action(gv, "resume")
        self.assertEqual(sp.sh(gv, "echo awake")["stdout"], "awake\n")

    def test_bad_policy_is_400_and_changes_nothing(self):
        sp = self.spaced
        bad = [1, "900", [], {}, {"action": "stop"}, {"after_s": -1}, {"after_s": 604801}, {"after_s": 1.5},
               {"after_s": True}, {"after_s": "60"}, {"after_s": 60, "action": "destroy"}, {"after_s": 60, "action": 1},
               {"after_s": 60, "extra": 1}]
        _, before = sp.api("GET", "/v1/sandboxes?limit=1000", expect=200)
        for policy in bad:
            self.assertError(sp.request("POST", "/v1/sandboxes", {"template": "busybox", "idle": policy}), 400,
                             "invalid_request")
        _, after = sp.api("GET", "/v1/sandboxes?limit=1000", expect=200)
        self.assertEqual(len(after["sandboxes"]), len(before["sandboxes"]))
        sid = self.new_sandbox(idle={"after_s": 600, "action": "stop"}, metadata={"t": "idle-bad"})
        was = sp.get(sid)
        for policy in bad:
            self.assertError(sp.request("PATCH", "/v1/sandboxes/" + sid, {"idle": policy, "metadata": {"k": "v"}}), 400,
                             "invalid_request")
        now = sp.get(sid)
        self.assertEqual((now["idle"], now["metadata"], now["updated_at"]), (was["idle"], was["metadata"], was["updated_at"]))
        # A Spacefile's bad IDLE fails before anything is queued, naming the line.
        for line in ("IDLE soon", "IDLE 60 destroy", "IDLE 604801", "IDLE 60 stop now"):
            st, d = sp.request("POST", "/v1/templates?name=idle-bad&wait=true",
                               raw=tar_of({"Spacefile": ("FROM busybox\n" + line + "\n").encode()}),
                               headers={"Content-Type": "application/x-tar"})
            self.assertEqual((st, d["error"]["code"]), (400, "invalid_request"), d)
            self.assertIn("line 2", d["error"]["message"])
        self.assertEqual(sp.request("GET", "/v1/templates/idle-bad")[0], 404)


if __name__ == "__main__":
    unittest.main()
