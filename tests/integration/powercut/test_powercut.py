"""The powercut filesystem itself: after a cut the backing directory holds exactly what was
fsync'ed, no more (so a test on it can see a loss) and no less (so it cannot invent one);
SQLite in WAL mode and btrfs on a loop device over a file in it work and lose exactly what
their own syncs did not cover. Needs root and /dev/fuse; a few seconds."""

import ctypes
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from powercut_fs import PowercutFs, require_powercut  # noqa: E402

BLOCK = 4096
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
LIBC = ctypes.CDLL(None, use_errno=True)


def pattern(seed, n):
    return bytes((seed * 31 + i * 7) & 0xFF for i in range(n))


class PowercutTestCase(unittest.TestCase):

    torn_seed = None

    def setUp(self):
        if os.geteuid() != 0:
            self.fail("the powercut tests need root (FUSE mounts, loop devices)")
        require_powercut()
        self.tmp = tempfile.mkdtemp(prefix="powercut-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.fs = PowercutFs(os.path.join(self.tmp, "backing"), os.path.join(self.tmp, "mnt"), torn_seed=self.torn_seed)
        self.fs.mount()
        self.addCleanup(self.fs.unmount)

    def m(self, name):
        return os.path.join(self.fs.mountpoint, name)

    def b(self, name):
        return os.path.join(self.fs.backing, name)

    def backing_bytes(self, name):
        with open(self.b(name), "rb") as f:
            return f.read()

    def write_synced(self, name, data):
        fd = os.open(self.m(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


class Files(PowercutTestCase):

    def test_unsynced_overwrite_and_append_are_undone(self):
        synced = pattern(1, 3 * BLOCK + 100)
        self.write_synced("f", synced)
        with open(self.m("f"), "r+b") as f:  # overwrite across a block edge, then append
            f.seek(BLOCK - 10)
            f.write(b"x" * 50)
            f.seek(0, os.SEEK_END)
            f.write(pattern(2, 2 * BLOCK))
        with open(self.m("f"), "rb") as f:  # reads see every write at once
            self.assertEqual(len(f.read()), len(synced) + 2 * BLOCK)
        pending = self.fs.pending()
        self.assertEqual(pending["paths"][self.b("f")]["synced"], len(synced), pending)
        undone = self.fs.cut()
        # blocks 0 and 1 (the overwrite) and 3 (its first 100 bytes were synced, then appended to)
        self.assertEqual((undone["files"], undone["blocks"], undone["bytes_beyond"]), (1, 3, 2 * BLOCK), undone)
        self.assertEqual(self.backing_bytes("f"), synced)

    def test_a_synced_write_survives_and_a_later_one_does_not(self):
        self.write_synced("f", b"first\n")
        with open(self.m("f"), "ab") as f:
            f.write(b"second\n")
            f.flush()
            os.fdatasync(f.fileno())  # fdatasync counts like fsync
            f.write(b"third\n")
        self.fs.cut()
        self.assertEqual(self.backing_bytes("f"), b"first\nsecond\n")

    def test_a_sync_through_another_descriptor_counts(self):
        self.write_synced("f", b"a" * BLOCK)
        w = os.open(self.m("f"), os.O_WRONLY)
        os.pwrite(w, b"b" * 10, 0)
        r = os.open(self.m("f"), os.O_RDONLY)
        os.fsync(r)
        os.close(r)
        os.pwrite(w, b"c" * 10, 100)
        os.close(w)  # close is not a sync
        self.fs.cut()
        self.assertEqual(self.backing_bytes("f"), b"b" * 10 + b"a" * (BLOCK - 10))

    def test_truncation_and_holes_are_undone(self):
        synced = pattern(3, 5 * BLOCK)
        self.write_synced("t", synced)
        self.write_synced("p", synced)
        self.write_synced("z", synced)
        os.truncate(self.m("t"), 100)
        with open(self.m("t"), "ab") as f:
            f.write(b"regrown")
        with open(self.m("p"), "r+b") as f:
            os.posix_fallocate(f.fileno(), 0, 1)  # mode 0: changes nothing that was synced
            # (not util-linux fallocate: it fsyncs after punching)
            self.assertEqual(LIBC.fallocate(f.fileno(), FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE,
                                            ctypes.c_long(BLOCK), ctypes.c_long(2 * BLOCK)), 0)
        with open(self.m("z"), "w+b") as f:  # O_TRUNC at open
            f.write(b"new")
        with open(self.m("p"), "rb") as f:
            self.assertEqual(f.read()[BLOCK:3 * BLOCK], b"\0" * 2 * BLOCK)
        self.fs.cut()
        for name in ("t", "p", "z"):
            self.assertEqual(self.backing_bytes(name), synced, name)

    def test_new_files_keep_their_names_but_not_unsynced_data(self):
        with open(self.m("new"), "wb") as f:
            f.write(b"never synced")
        os.mkdir(self.m("d"))
        self.write_synced("d/kept", b"kept")
        os.rename(self.m("d/kept"), self.m("d/renamed"))
        self.fs.cut()
        self.assertEqual(self.backing_bytes("new"), b"")  # metadata is durable at once
        self.assertEqual(self.backing_bytes("d/renamed"), b"kept")

    def test_after_the_cut_everything_fails(self):
        self.write_synced("f", b"x")
        fd = os.open(self.m("f"), os.O_RDWR)
        self.fs.cut()
        with self.assertRaises(OSError) as e:
            os.pwrite(fd, b"y", 0)
        self.assertEqual(e.exception.errno, 5)
        with self.assertRaises(OSError):  # close's flush fails too (the descriptor is gone anyway)
            os.close(fd)
        with self.assertRaises(OSError):
            os.listdir(self.fs.mountpoint + "/")
        with self.assertRaises(OSError):
            open(self.m("other"), "wb")
        self.assertEqual(self.backing_bytes("f"), b"x")


class Torn(PowercutTestCase):
    """--torn: each unsynced block is kept or undone by a seeded coin; synced bytes never change."""

    torn_seed = 12345

    def test_each_block_is_old_or_new_and_both_happen(self):
        old, new = pattern(7, 64 * BLOCK), pattern(8, 96 * BLOCK)
        self.write_synced("f", old)
        with open(self.m("f"), "r+b") as f:
            f.write(new)
        self.write_synced("g", b"synced")  # untouched since its sync
        self.fs.cut()
        got = self.backing_bytes("f")
        self.assertIn(len(got), (len(old), len(new)))
        kinds = set()
        for i in range(len(got) // BLOCK):
            block = got[i * BLOCK:(i + 1) * BLOCK]
            choices = {"new": new[i * BLOCK:(i + 1) * BLOCK]}
            if i < 64:
                choices["old"] = old[i * BLOCK:(i + 1) * BLOCK]
            else:
                choices["zero"] = b"\0" * BLOCK
            kind = [k for k, v in choices.items() if v == block]
            self.assertTrue(kind, "block %d is neither its synced nor its new bytes" % i)
            kinds.add(kind[0])
        self.assertTrue({"old", "new"} <= kinds, kinds)
        self.assertEqual(self.backing_bytes("g"), b"synced")


class Sqlite(PowercutTestCase):
    """SQLite in WAL mode (its -shm is mmap'ed) on powercut, as spaced keeps state.db."""

    def run_commits(self, synchronous, n=40):
        db = sqlite3.connect(self.m("state.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=" + synchronous)
        db.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, v TEXT)")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the table itself is durable
        for i in range(n):
            db.execute("INSERT INTO t VALUES (?, ?)", (i, "v%d" % i * 20))
        self.assertEqual(db.execute("SELECT count(*) FROM t").fetchone()[0], n)
        self.fs.cut()
        db.close()  # fails quietly on EIO; the file is what the cut left
        self.fs.unmount()
        after = sqlite3.connect(self.b("state.db"))
        try:
            self.assertEqual(after.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            return after.execute("SELECT count(*) FROM t").fetchone()[0]
        finally:
            after.close()

    def test_full_keeps_every_commit(self):
        self.assertEqual(self.run_commits("FULL"), 40)

    def test_normal_loses_commits_and_the_cut_shows_it(self):
        kept = self.run_commits("NORMAL")
        print("\nsqlite synchronous=NORMAL: %d of 40 commits survived the cut" % kept, file=sys.stderr)
        self.assertLess(kept, 40)


class LoopBtrfs(PowercutTestCase):
    """btrfs on a loop device over a sparse image in powercut, as spaced's pool.img: the
    loop driver turns btrfs's flushes into fsync of the image."""

    def test_btrfs_flushes_reach_the_image_and_the_cut_keeps_them(self):
        image, pool = self.m("pool.img"), os.path.join(self.tmp, "pool")
        os.makedirs(pool)
        with open(image, "wb") as f:
            f.truncate(512 << 20)
        r = subprocess.run(["mkfs.btrfs", "-q", "-f", image], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run(["mount", "-o", "loop,noatime", image, pool], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(subprocess.run, ["umount", "-l", pool], capture_output=True)
        with open(os.path.join(pool, "durable"), "wb") as f:
            f.write(pattern(5, 1 << 20))
        subprocess.run(["sync", "-f", pool], check=True)
        self.assertNotIn(self.b("pool.img"), self.fs.pending()["paths"], "sync -f left the image unsynced")
        # Data written straight to the device, its extent not committed: a cut loses it.
        r = subprocess.run(["dd", "if=/dev/urandom", "of=" + os.path.join(pool, "lost"), "bs=1M", "count=4",
                            "oflag=direct", "status=none"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        pending = self.fs.pending()["paths"].get(self.b("pool.img"))
        self.assertTrue(pending and pending["blocks"] > 0, "unsynced writes to the image are not tracked")
        self.fs.cut()
        subprocess.run(["umount", "-l", pool], capture_output=True)
        self.fs.unmount()
        r = subprocess.run(["mount", "-o", "loop,noatime", self.b("pool.img"), pool], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            self.assertEqual(sorted(os.listdir(pool)), ["durable"])
            with open(os.path.join(pool, "durable"), "rb") as f:
                self.assertEqual(f.read(), pattern(5, 1 << 20))
        finally:
            subprocess.run(["umount", pool], capture_output=True)


if __name__ == "__main__":
    unittest.main()
