"""Disk quotas (issue 10, Medium): one sandbox cannot fill the shared pool.

Each sandbox's rootfs has an enforced limit (resources.disk_mb, btrfs qgroups); all
sandboxes together stay below the pool's size minus a reserve. The attacks: write past
the limit, create 200k empty files, fill the pool from several sandboxes; after each,
another sandbox still writes, a snapshot is still taken and the API still answers. The
limit survives a restart of spaced, a restore and a fork."""

import os
import subprocess
import unittest

from spaced_harness import FreshSpacedTestCase, SpacedTestCase

# A write that goes until the disk says no; prints how many MiB made it.
FILL = "dd if=/dev/zero of=%s bs=1M count=%d 2>&1; sync; echo MB=$(( $(cat %s 2>/dev/null | wc -c) / 1048576 ))"


def mb_written(result):
    for line in result["stdout"].splitlines():
        if line.startswith("MB="):
            return int(line[3:])
    raise AssertionError("no MB= line: %r" % result)


def quota_refused(result):
    text = result["stdout"] + result["stderr"]
    return "Disk quota exceeded" in text or "No space left" in text


class DiskQuota(SpacedTestCase):
    # 2G pool (harness); the sandboxes' group gets the pool less 512M.
    spaced_kwargs = {"extra_args": ["--sandbox-disk-mb", "64", "--pool-reserve", "512M"]}

    def snapshot(self, sid):
        status, data = self.spaced.request("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, {})
        self.assertEqual(status, 200, data)
        self.assertEqual(data["snapshot"]["state"], "ready", data)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/snapshots/" + data["snapshot"]["id"])
        return data["snapshot"]["id"]

    def assertStillWorks(self, bystander):
        sp = self.spaced
        r = sp.sh(bystander, FILL % ("/root/b", 8, "/root/b"))
        self.assertEqual(mb_written(r), 8, r)
        self.assertEqual(sp.sh(bystander, "rm /root/b; echo ok")["stdout"], "ok\n")
        self.assertEqual(sp.request("GET", "/v1/health", key=None)[0], 200)
        self.assertEqual(sp.api("GET", "/v1/sandboxes", expect=200)[0], 200)

    def test_write_past_quota_is_refused(self):
        sp = self.spaced
        bystander = self.new_sandbox(metadata={"t": "bystander"})
        sid = self.new_sandbox(resources={"disk_mb": 32}, metadata={"t": "filler"})
        self.assertEqual(sp.get(sid)["resources"]["disk_mb"], 32)
        self.assertEqual(sp.get(bystander)["resources"]["disk_mb"], 64, "the daemon default applies")
        r = sp.sh(sid, FILL % ("/root/big", 200, "/root/big"), timeout_s=120)
        self.assertTrue(quota_refused(r), r)
        self.assertLessEqual(mb_written(r), 32, r)
        # The full sandbox itself still answers, the others write, snapshots are taken.
        self.assertEqual(sp.sh(sid, "echo alive")["stdout"], "alive\n")
        self.assertStillWorks(bystander)
        self.snapshot(sid)
        self.snapshot(bystander)

    def test_many_empty_files_are_bounded(self):
        sp = self.spaced
        bystander = self.new_sandbox(metadata={"t": "bystander-files"})
        sid = self.new_sandbox(resources={"disk_mb": 16}, metadata={"t": "inodes"})
        # Metadata is charged to the subvolume: 200k empty files do not fit in 16 MiB.
        r = sp.sh(sid, "mkdir /root/d && cd /root/d && seq 1 200000 | xargs touch 2>&1 | tail -2;"
                       " echo N=$(ls | wc -l)", timeout_s=600)
        count = int(r["stdout"].rsplit("N=", 1)[1])
        self.assertLess(count, 200000, r)
        self.assertTrue(quota_refused(r), r)
        self.assertStillWorks(bystander)
        self.snapshot(sid)

    def test_sandboxes_together_cannot_take_the_reserve(self):
        sp = self.spaced
        # Three sandboxes with limits that add up to more than the pool: together they
        # stop at the group's limit (pool - 512M reserve), and the reserve is left.
        fillers = [self.new_sandbox(resources={"disk_mb": 1024}, metadata={"t": "pool%d" % i}) for i in range(3)]
        for sid in fillers:
            self.addCleanup(sp.request, "POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "rm -f /root/big; sync"})
        total = 0
        for sid in fillers:
            r = sp.sh(sid, FILL % ("/root/big", 1024, "/root/big"), timeout_s=300)
            total += mb_written(r)
        self.assertLess(total, 2048 - 400, "sandboxes took the pool's reserve: %d MiB" % total)
        st = os.statvfs(os.path.join(sp.state_dir, "pool"))
        self.assertGreater(st.f_bavail * st.f_frsize, 128 << 20, "the reserve is gone")
        # Snapshots and the API still work with the group full; the space comes back.
        self.snapshot(fillers[0])
        self.assertEqual(sp.request("GET", "/v1/health", key=None)[0], 200)
        # A create while the group is full is a clear 503, not a half-made sandbox.
        status, data = sp.request("POST", "/v1/sandboxes?wait=true&timeout_s=120", {"metadata": {"t": "late"}})
        if isinstance(data, dict) and data.get("sandbox"):
            sp.known_ids.add(data["sandbox"]["id"])
            self.addCleanup(self._destroy_quietly, data["sandbox"]["id"])
        if status != 200:
            self.assertEqual(status, 503, data)
            self.assertEqual(data["error"]["code"], "unavailable", data)

    def test_bad_disk_limits_are_refused(self):
        sp = self.spaced
        for bad in (0, 15, -1, 16 * 1024 * 1024 + 1, "64", 1.5):
            self.assertError(sp.request("POST", "/v1/sandboxes", {"resources": {"disk_mb": bad}}), 400, "invalid_request")


class DiskQuotaKept(FreshSpacedTestCase):
    spaced_kwargs = {"extra_args": ["--sandbox-disk-mb", "64"]}

    def assertLimited(self, sid, limit_mb):
        r = self.spaced.sh(sid, "rm -f /root/big; " + FILL % ("/root/big", 200, "/root/big") + "; rm -f /root/big",
                           timeout_s=120)
        self.assertTrue(quota_refused(r), r)
        self.assertLessEqual(mb_written(r), limit_mb, r)

    def test_restart_restore_and_fork_keep_the_limit(self):
        sp = self.spaced
        sid = self.new_sandbox(resources={"disk_mb": 24}, metadata={"t": "kept"})
        sp.sh(sid, "echo one > /root/mark")
        status, data = sp.request("POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, {})
        self.assertEqual(status, 200, data)
        snap = data["snapshot"]["id"]
        # kill -9 and start: the limit is still in the row and on the rootfs.
        sp.restart(hard=True)
        sp.wait_state(sid, "running", timeout=60)
        self.assertEqual(sp.get(sid)["resources"]["disk_mb"], 24)
        self.assertLimited(sid, 24)
        # A restore makes a new rootfs subvolume: it is limited too.
        status, data = sp.request("POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=120" % sid, {"snapshot_id": snap})
        self.assertEqual(status, 200, data)
        self.assertEqual(sp.sh(sid, "cat /root/mark")["stdout"], "one\n")
        self.assertLimited(sid, 24)
        # So is a fork's child, which inherits the parent's resources.
        status, data = sp.request("POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=120" % sid, {"count": 1})
        self.assertEqual(status, 200, data)
        child = data["sandboxes"][0]["id"]
        sp.known_ids.add(child)
        self.addCleanup(self._destroy_quietly, child)
        self.addCleanup(sp.request, "DELETE", "/v1/snapshots/" + data["operation"]["result"]["snapshot_id"])
        self.assertEqual(sp.get(child)["resources"]["disk_mb"], 24)
        self.assertLimited(child, 24)
        # stop/start applies it again (idempotent).
        sp.action(sid, "stop")
        sp.action(sid, "start")
        self.assertLimited(sid, 24)
        sp.request("DELETE", "/v1/snapshots/" + snap)


class DiskQuotaTurnedOn(FreshSpacedTestCase):
    spaced_kwargs = {"extra_args": ["--disk-quota", "off"]}

    def test_sandbox_from_before_quotas_starts_and_is_bounded_by_the_pool_group(self):
        sp = self.spaced
        sid = self.new_sandbox(metadata={"t": "before-quotas"})
        self.assertEqual(sp.get(sid)["resources"]["disk_mb"], 0)
        sp.stop()
        sp.extra_args = ["--disk-quota", "on", "--pool-reserve", "1536M"]
        sp.start()
        sp.wait_state(sid, "running", timeout=60)
        # No limit of its own (it was made without one), but inside the sandboxes' group:
        # it stops at the pool less the reserve (2G - 1.5G).
        r = sp.sh(sid, FILL % ("/root/big", 1024, "/root/big"), timeout_s=300)
        self.assertTrue(quota_refused(r), r)
        self.assertLessEqual(mb_written(r), 512, r)
        sp.sh(sid, "rm -f /root/big; sync")


class DiskQuotaOff(SpacedTestCase):
    spaced_kwargs = {"extra_args": ["--disk-quota", "off"]}

    def test_disk_mb_is_refused_when_quotas_are_off(self):
        sp = self.spaced
        self.assertError(sp.request("POST", "/v1/sandboxes", {"resources": {"disk_mb": 100}}), 422, "unsupported")
        sid = self.new_sandbox()
        self.assertEqual(sp.get(sid)["resources"]["disk_mb"], 0)
        out = subprocess.run(["btrfs", "qgroup", "show", os.path.join(sp.state_dir, "pool")], capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0, "quotas should be off: %s" % out.stdout)


if __name__ == "__main__":
    unittest.main()
