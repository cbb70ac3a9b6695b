"""Storage faults, told truthfully. The state directory sits on a small ext4 filesystem made
here (a loop device), so that the sparse pool image can outgrow it for real: the loop device
then fails writes, btrfs aborts its transaction and forces the pool read-only. spaced must
size a new image to what its filesystem holds, say when the host is nearly full, say when the
pool is read-only (health, refusals) also after a restart, give freed space back (trim), and
unmount its pool at a clean stop."""

import os
import signal
import subprocess
import time
import unittest

from spaced_harness import Spaced, require_root, wait_for


def run(*a):
    return subprocess.run(a, check=True, capture_output=True, text=True)


class SmallHostSpaced(Spaced):
    """A spaced whose state directory is on an ext4 filesystem of host_mib MiB (a loop mount
    under the harness's temporary directory, which its cleanup unmounts like the pool)."""

    def __init__(self, host_mib, pool_args, **kw):
        super().__init__(**kw)
        self.pool_args = list(pool_args)
        self.host_img = os.path.join(self.tmp, "host.img")
        with open(self.host_img, "wb") as f:
            f.truncate(host_mib << 20)
        run("mkfs.ext4", "-q", "-F", "-m", "0", self.host_img)
        os.makedirs(self.state_dir)
        run("mount", "-o", "loop", self.host_img, self.state_dir)

    def args(self):
        a = super().args()
        i = a.index("--pool-size")
        del a[i:i + 2]
        return a + self.pool_args


class StorageFaults(unittest.TestCase):

    def setUp(self):
        require_root()

    def spaced(self, host_mib, pool_args, **kw):
        sp = SmallHostSpaced(host_mib, pool_args, **kw)
        self.addCleanup(sp.cleanup)
        return sp

    def health(self, sp):
        return sp.request("GET", "/v1/health", key=None)

    def test_image_is_sized_to_its_filesystem(self):
        # An explicit size the filesystem cannot hold is refused, with the way out named.
        sp = self.spaced(600, ["--pool-size", "4G"])
        with self.assertRaises(RuntimeError) as cm:
            sp.start(timeout=30)
        self.assertIn("--pool-overcommit", str(cm.exception))
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "pool.img")))
        # The default size is capped to what fits.
        sp.pool_args = []
        sp.start()
        size = os.stat(os.path.join(sp.state_dir, "pool.img")).st_size
        st = os.statvfs(sp.state_dir)
        self.assertLessEqual(size, 600 << 20)
        self.assertLess(size, (st.f_bavail * st.f_frsize) + (size // 50) + (64 << 20))
        status, h = self.health(sp)
        self.assertEqual((status, h["status"]), (200, "ok"), h)
        self.assertEqual(h["checks"]["pool"]["image"]["bytes"], size)

    def test_host_full_under_the_image_is_reported_and_refused(self):
        sp = self.spaced(700, ["--pool-size", "3G", "--pool-overcommit", "on", "--pool-low-space", "350M",
                               "--pool-trim-interval", "0"])
        sp.start()
        self.assertEqual(self.health(sp)[1]["status"], "ok")
        sid = sp.create(metadata={"t": "fill"})
        other = sp.create(metadata={"t": "bystander"})
        self.assertEqual(sp.get(other)["storage"], {"condition": "ok", "reason": None})
        # Fill the host filesystem through the image until spaced says it is low on space.
        sp.sh(sid, "dd if=/dev/urandom of=/fill1 bs=1M count=420 2>&1; sync", timeout_s=120)
        h = wait_for(lambda: (lambda r: r[1] if r[1]["status"] != "ok" else None)(self.health(sp)), timeout=30,
                     what="health to report low space")
        self.assertEqual(h["status"], "degraded", h)
        self.assertEqual(h["checks"]["pool"]["condition"], "low_space", h)
        self.assertIn("may still grow", h["checks"]["pool"]["reason"])
        st, d = sp.request("POST", "/v1/sandboxes?wait=true", {})
        self.assertEqual(st, 503, d)
        self.assertIn("low_space", d["error"]["message"])
        # More: the loop device runs out, btrfs forces the pool read-only.
        r = sp.sh(sid, "dd if=/dev/urandom of=/fill2 bs=1M count=600 2>&1; sync; echo x > /after && echo wrote",
                  timeout_s=180)
        h = wait_for(lambda: (lambda r: r[1] if r[0] == 503 else None)(self.health(sp)), timeout=60,
                     what="health to report the read-only pool")
        self.assertEqual(h["status"], "failed", h)
        self.assertIn(h["checks"]["pool"]["condition"], ("read_only", "failed"), h)
        self.assertNotIn("wrote", sp.sh(other, "echo y > /bystander && echo wrote")["stdout"])
        # Each sandbox on the pool says so itself, with the reason, in its own row and in lists.
        for row in [sp.get(other), sp.get(sid)] + sp.api("GET", "/v1/sandboxes")[1]["sandboxes"]:
            self.assertIn(row["storage"]["condition"], ("read_only", "failed"), row)
            self.assertTrue(row["storage"]["reason"], row)
        for method, path, body in (("POST", "/v1/sandboxes/%s/snapshots" % other, {}), ("POST", "/v1/sandboxes", {}),
                                   ("DELETE", "/v1/sandboxes/%s" % other, None)):
            st, d = sp.request(method, path, body)
            self.assertEqual(st, 503, "%s %s: %r" % (method, path, d))
            self.assertEqual(d["error"]["code"], "unavailable", d)
        # A restart tells the same truth (the pool is still read-only).
        sp.kill9()
        sp.start(health=503)
        self.assertEqual(self.health(sp)[1]["checks"]["pool"]["condition"], "read_only")

    def test_trim_gives_freed_space_back(self):
        sp = self.spaced(900, ["--pool-size", "700M", "--pool-trim-interval", "10"])
        sp.start()
        sid = sp.create(metadata={"t": "trim"})
        image = os.path.join(sp.state_dir, "pool.img")
        sp.sh(sid, "dd if=/dev/urandom of=/big bs=1M count=200 2>&1; sync", timeout_s=120)
        grown = os.stat(image).st_blocks * 512
        self.assertGreater(grown, 180 << 20)
        sp.sh(sid, "rm /big; sync")
        shrunk = wait_for(lambda: (lambda b: b if b < grown - (150 << 20) else None)(os.stat(image).st_blocks * 512),
                          timeout=60, what="the image to shrink after a trim")
        h = self.health(sp)[1]
        self.assertLessEqual(h["checks"]["pool"]["image"]["allocated_bytes"], shrunk + (16 << 20), h)

    def test_clean_stop_unmounts_an_idle_pool(self):
        sp = self.spaced(900, ["--pool-size", "700M"])
        pool = os.path.join(sp.state_dir, "pool")
        sp.start()
        sid = sp.create(metadata={"t": "keeps"})
        self.assertEqual(sp.stop(), 0)
        self.assertTrue(os.path.ismount(pool), "a running sandbox's pool was unmounted under it")
        sp.start()
        self.assertEqual(sp.sh(sid, "echo still")["stdout"], "still\n")
        sp.action(sid, "stop")
        self.assertEqual(sp.stop(), 0)
        self.assertFalse(os.path.ismount(pool), "the pool stayed mounted after a clean stop with nothing running")
        image = os.path.join(sp.state_dir, "pool.img")
        self.assertEqual(run("losetup", "-j", image).stdout.strip(), "", "the loop device stayed")
        sp.start()  # and it comes back
        sp.action(sid, "start")
        self.assertEqual(sp.sh(sid, "echo back")["stdout"], "back\n")


if __name__ == "__main__":
    unittest.main()
