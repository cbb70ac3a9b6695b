"""Snapshot import is an attack surface: hostile btrfs send streams, built here by a small
stream writer, try to write, chmod, chown, mknod and clone outside the new snapshot (on the
host, in other snapshots and sandboxes). Each must be refused with a 4xx and leave the host
marker directory, every other snapshot and sandbox, and the staging area exactly as they
were. Two layers are attacked: the stream check (commands of the stream itself) and the
confinement of btrfs receive (symlinks that the parent snapshot, made by a sandbox, holds).
Also: the pool's mount flags (a setuid-root file made in a sandbox gives no root on the
host) and the lineage rules of import and restore."""

import hashlib
import os
import socket
import stat
import struct
import subprocess
import tempfile
import unittest
import uuid as uuidlib

from spaced_harness import FreshSpacedTestCase, SpacedTestCase, mountinfo_lines, wait_for

# ---- a btrfs send stream writer (format v1; see btrfs-progs kernel-shared/send.h)

C = dict(SUBVOL=1, SNAPSHOT=2, MKFILE=3, MKDIR=4, MKNOD=5, MKFIFO=6, MKSOCK=7, SYMLINK=8, RENAME=9, LINK=10,
         UNLINK=11, RMDIR=12, SET_XATTR=13, REMOVE_XATTR=14, WRITE=15, CLONE=16, TRUNCATE=17, CHMOD=18,
         CHOWN=19, UTIMES=20, END=21)
A = dict(UUID=1, CTRANSID=2, INO=3, SIZE=4, MODE=5, UID=6, GID=7, RDEV=8, CTIME=9, MTIME=10, ATIME=11,
         XATTR_NAME=13, XATTR_DATA=14, PATH=15, PATH_TO=16, PATH_LINK=17, FILE_OFFSET=18, DATA=19,
         CLONE_UUID=20, CLONE_CTRANSID=21, CLONE_PATH=22, CLONE_OFFSET=23, CLONE_LEN=24)


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_TABLE = _crc_table()


def crc32c(data, crc=0):  # btrfs send's: seed 0, no final inversion
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc


def tlv(name, value):
    if isinstance(value, str):
        value = value.encode()
    elif isinstance(value, int):
        value = struct.pack("<Q", value)
    return struct.pack("<HH", A[name], len(value)) + value


def timespec(name):
    return struct.pack("<HH", A[name], 12) + struct.pack("<QI", 1700000000, 0)


def cmd(name, *attrs):
    body = b"".join(attrs)
    crc = crc32c(struct.pack("<IHI", len(body), C[name], 0) + body)
    return struct.pack("<IHI", len(body), C[name], crc) + body


def stream(*cmds, version=1):
    return b"btrfs-stream\0" + struct.pack("<I", version) + b"".join(cmds)


def subvol(name, uid=None):
    return cmd("SUBVOL", tlv("PATH", name), tlv("UUID", uid or uuidlib.uuid4().bytes), tlv("CTRANSID", 7))


def end():
    return cmd("END")


def new_file(path, ino, data=b"x"):
    """A regular file the way btrfs send makes one: an orphan name, renamed into place."""
    orphan = "o%d-1-0" % ino
    return [cmd("MKFILE", tlv("PATH", orphan), tlv("INO", ino)), cmd("RENAME", tlv("PATH", orphan), tlv("PATH_TO", path)),
            cmd("WRITE", tlv("PATH", path), tlv("FILE_OFFSET", 0), tlv("DATA", data)),
            cmd("CHOWN", tlv("PATH", path), tlv("UID", 0), tlv("GID", 0)),
            cmd("CHMOD", tlv("PATH", path), tlv("MODE", 0o644)),
            cmd("UTIMES", tlv("PATH", path), timespec("ATIME"), timespec("MTIME"), timespec("CTIME"))]


def parse_first_command(data):
    """The attributes of a stream's first command (SUBVOL or SNAPSHOT) as {type: bytes}."""
    assert data[:13] == b"btrfs-stream\0", data[:16]
    length, _cmd, _crc = struct.unpack_from("<IHI", data, 17)
    body, attrs, pos = data[27:27 + length], {}, 0
    while pos < len(body):
        t, n = struct.unpack_from("<HH", body, pos)
        attrs[t] = body[pos + 4:pos + 4 + n]
        pos += 4 + n
    return attrs


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def snapshot_name():
    return "snap-" + os.urandom(8).hex()


def tree_digest(root):
    """Every entry under root: path, type and mode, owner, size, mtime, content or target."""
    h = hashlib.sha256()
    if not os.path.lexists(root):
        return "absent"
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [""] + sorted(filenames) + dirnames:
            p = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(p)
            h.update(("%s %o %d %d %d %d\n" % (os.path.relpath(p, root), st.st_mode, st.st_uid, st.st_gid, st.st_size,
                                               st.st_mtime_ns)).encode())
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
            elif stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(p).encode())
    return h.hexdigest()


class ImportAttacks(SpacedTestCase):
    """Every hostile stream: 4xx, and nothing anywhere changed."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.marker = tempfile.mkdtemp(prefix="space-marker-")
        os.makedirs(os.path.join(cls.marker, "dir"))
        with open(os.path.join(cls.marker, "dir", "file"), "w") as f:
            f.write("host file\n")
        os.chmod(os.path.join(cls.marker, "dir", "file"), 0o644)
        cls.up = "../" * 24 + cls.marker.lstrip("/")  # from anywhere in the pool up to the marker

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.marker])
        super().tearDownClass()

    # ---- helpers

    def pool(self, *parts):
        return os.path.join(self.spaced.state_dir, "pool", *parts)

    def world(self):
        """What no import may change: the host marker, the other snapshots and sandboxes,
        the templates; and the staging area must end empty."""
        return {"marker": tree_digest(self.marker), "snapshots": tree_digest(self.pool("snapshots")),
                "sandboxes": tree_digest(self.pool("sandboxes")), "templates": tree_digest(self.pool("templates")),
                "staging": sorted(os.listdir(self.pool("staging"))),
                "rows": sorted(s["id"] for s in self.spaced.api("GET", "/v1/snapshots", expect=200)[1]["snapshots"])}

    def post(self, data, query=""):
        return self.spaced.request("POST", "/v1/snapshots/import" + query, raw=data,
                                   headers={"Content-Type": "application/octet-stream"})

    def snapshot(self, sid):
        _, d = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {}, expect=200)
        return d["snapshot"]["id"]

    def export(self, snap):
        sp = self.spaced
        conn = sp.connection(timeout=120)
        conn.request("GET", "/v1/snapshots/%s/export?full=true" % snap, headers={"Authorization": "Bearer " + sp.key})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        self.assertEqual(r.status, 200)
        return body

    def assertRefused(self, data, query="", status=400, code="invalid_request", says=None):
        before = self.world()
        st, body = self.post(data, query)
        self.assertError((st, body), status, code)
        if says:
            self.assertIn(says, body["error"]["message"])
        self.assertEqual(self.world(), before, "a refused import changed something")
        self.assertEqual(os.listdir(self.pool("staging")), [], "staging debris left")
        return body

    # ---- the positive control: the writer makes streams receive accepts

    def test_handmade_stream_is_received(self):
        name = snapshot_name()
        st, snap = self.post(stream(subvol(name), cmd("MKDIR", tlv("PATH", "o256-1-0"), tlv("INO", 256)),
                                    cmd("RENAME", tlv("PATH", "o256-1-0"), tlv("PATH_TO", "root")),
                                    *new_file("root/hello", 257, b"hello\n"),
                                    cmd("SYMLINK", tlv("PATH", "root/link"), tlv("INO", 258), tlv("PATH_LINK", "/etc/passwd")),
                                    cmd("MKFIFO", tlv("PATH", "root/fifo"), tlv("INO", 259)), end()))
        self.assertEqual(st, 201, snap)
        self.addCleanup(self.spaced.request, "DELETE", "/v1/snapshots/" + name)
        self.assertEqual(snap["id"], name)
        self.assertFalse(snap.get("sandbox_id"))
        with open(self.pool("snapshots", name, "root", "hello")) as f:
            self.assertEqual(f.read(), "hello\n")
        self.assertEqual(os.readlink(self.pool("snapshots", name, "root", "link")), "/etc/passwd")
        self.assertEqual(os.listdir(self.pool("staging")), [])

    # ---- the stream check

    def test_write_through_own_symlink(self):
        name = snapshot_name()
        link = cmd("SYMLINK", tlv("PATH", "esc"), tlv("INO", 257), tlv("PATH_LINK", os.path.join(self.marker, "dir")))
        body = self.assertRefused(stream(subvol(name), link, *new_file("esc/pwned", 258), end()), says="symlink")
        self.assertIn("esc/pwned", body["error"]["message"])
        # Renamed first, or reached through a renamed directory: still the same symlink.
        moved = [cmd("MKDIR", tlv("PATH", "d"), tlv("INO", 259)),
                 cmd("SYMLINK", tlv("PATH", "d/l"), tlv("INO", 257), tlv("PATH_LINK", os.path.join(self.marker, "dir"))),
                 cmd("RENAME", tlv("PATH", "d"), tlv("PATH_TO", "e"))]
        self.assertRefused(stream(subvol(name), *moved, *new_file("e/l/pwned", 258), end()), says="symlink")
        # Commands that follow a symlink named as their target: truncate, chmod, write.
        for c in (cmd("TRUNCATE", tlv("PATH", "esc"), tlv("SIZE", 0)), cmd("CHMOD", tlv("PATH", "esc"), tlv("MODE", 0o4777)),
                  cmd("WRITE", tlv("PATH", "esc"), tlv("FILE_OFFSET", 0), tlv("DATA", b"pwned"))):
            file_link = cmd("SYMLINK", tlv("PATH", "esc"), tlv("INO", 257),
                            tlv("PATH_LINK", os.path.join(self.marker, "dir", "file")))
            self.assertRefused(stream(subvol(name), file_link, c, end()), says="symlink")

    def test_dotdot_and_absolute_paths(self):
        name = snapshot_name()
        for path in (self.up + "/dir/pwned", os.path.join(self.marker, "dir", "pwned"), "a//b", "./a", "a/..", "",
                     b"\xff\x01/../x"):  # the reason quotes it: still JSON
            self.assertRefused(stream(subvol(name), *new_file(path, 257), end()), says="plain relative path")
        for c in (cmd("CHMOD", tlv("PATH", self.up + "/dir/file"), tlv("MODE", 0o4755)),
                  cmd("CHOWN", tlv("PATH", self.up + "/dir/file"), tlv("UID", 65534), tlv("GID", 65534)),
                  cmd("TRUNCATE", tlv("PATH", self.up + "/dir/file"), tlv("SIZE", 0)),
                  cmd("UNLINK", tlv("PATH", self.up + "/dir/file")),
                  cmd("RENAME", tlv("PATH", "x"), tlv("PATH_TO", self.up + "/dir/file")),
                  cmd("LINK", tlv("PATH", "x"), tlv("PATH_LINK", self.up + "/dir/file")),
                  cmd("SYMLINK", tlv("PATH", self.up + "/dir/l"), tlv("INO", 257), tlv("PATH_LINK", "/"))):
            self.assertRefused(stream(subvol(name), c, end()), says="plain relative path")
        # A NUL inside a path: receive would cut it there.
        self.assertRefused(stream(subvol(name), *new_file("ok\0/../../x", 257), end()))

    def test_device_nodes(self):
        name = snapshot_name()
        for mode, rdev in ((stat.S_IFBLK | 0o666, os.makedev(7, 0)), (stat.S_IFCHR | 0o666, os.makedev(1, 3)),
                           (stat.S_IFCHR | 0o666, os.makedev(1, 1))):
            mknod = cmd("MKNOD", tlv("PATH", "dev"), tlv("INO", 257), tlv("MODE", mode), tlv("RDEV", rdev))
            self.assertRefused(stream(subvol(name), mknod, end()), says="device node")

    def test_subvolume_names_and_counts(self):
        for bad in ("sandboxes", "evil", "snap-", "snap-UPPER", "../snapshots/snap-x", "snap-a/b"):
            self.assertRefused(stream(subvol(bad), end()), says="snapshot")
        # Two subvolumes in one stream, with or without an END between them.
        self.assertRefused(stream(subvol(snapshot_name()), subvol(snapshot_name()), end()), says="second subvolume")
        self.assertRefused(stream(subvol(snapshot_name()), end(), subvol(snapshot_name()), end()), says="after the end")
        # A stream that does not start with its subvolume.
        self.assertRefused(stream(*new_file("x", 257), end()), says="start with its subvolume")

    def test_refused_at_its_end_after_writes(self):
        name = snapshot_name()
        writes = [c for i in range(40) for c in new_file("f%d" % i, 300 + i, os.urandom(30000))]
        for tail in (cmd("MKFILE", tlv("PATH", self.up + "/dir/late"), tlv("INO", 999)),
                     cmd("MKNOD", tlv("PATH", "late"), tlv("INO", 999), tlv("MODE", stat.S_IFBLK), tlv("RDEV", 0x700)),
                     b"\xff" * 10):
            self.assertRefused(stream(subvol(name), *writes, tail, end()))
        # Cut before END, or with a bad CRC at the end.
        self.assertRefused(stream(subvol(name), *writes), says="before its END")
        bad = bytearray(end())
        bad[6] ^= 1
        self.assertRefused(stream(subvol(name), *writes) + bytes(bad), says="CRC")
        self.assertFalse(os.path.lexists(self.pool("snapshots", name)))

    def test_bounded_and_unknown(self):
        name = snapshot_name()
        self.assertRefused(stream(subvol(name), struct.pack("<IHI", 1 << 30, C["WRITE"], 0), end()), says="bytes")
        self.assertRefused(stream(subvol(name), cmd("END")[:4] + struct.pack("<H", 99) + cmd("END")[6:], end()))
        self.assertRefused(stream(subvol(name), end(), version=3), says="version")
        self.assertRefused(stream(subvol(name), cmd("SET_XATTR", tlv("PATH", ""), tlv("XATTR_NAME", "trusted.x"),
                                                     tlv("XATTR_DATA", "y")), end()), says="extended attribute")
        # A repeated attribute (receive would apply the last one).
        self.assertRefused(stream(subvol(name), cmd("MKFILE", tlv("PATH", "ok"), tlv("PATH", self.up + "/dir/x"),
                                                     tlv("INO", 257)), end()), says="repeated")

    def test_parent_and_clone_sources_are_the_named_ones(self):
        """SNAPSHOT and CLONE may take data only from the stream's own subvolume or the
        parent the caller named: not from another sandbox's snapshot found by UUID."""
        sp = self.spaced
        victim, mine = self.new_sandbox(), self.new_sandbox()
        sp.sh(victim, "echo victim-secret > /root/secret")
        vs, ms = self.snapshot(victim), self.snapshot(mine)
        v = parse_first_command(self.export(vs))
        m = parse_first_command(self.export(ms))
        name = snapshot_name()
        from_victim = cmd("SNAPSHOT", tlv("PATH", name), tlv("UUID", uuidlib.uuid4().bytes), tlv("CTRANSID", 9),
                          tlv("CLONE_UUID", v[A["UUID"]]), tlv("CLONE_CTRANSID", v[A["CTRANSID"]]))
        self.assertRefused(stream(from_victim, end()), says="needs parent_snapshot_id")
        self.assertRefused(stream(from_victim, end()), "?parent_snapshot_id=" + ms, says="not the parent snapshot named")
        clone = cmd("CLONE", tlv("PATH", "stolen"), tlv("FILE_OFFSET", 0), tlv("CLONE_LEN", 4096),
                    tlv("CLONE_UUID", v[A["UUID"]]), tlv("CLONE_CTRANSID", v[A["CTRANSID"]]),
                    tlv("CLONE_PATH", "root/secret"), tlv("CLONE_OFFSET", 0))
        self.assertRefused(stream(subvol(name), cmd("MKFILE", tlv("PATH", "stolen"), tlv("INO", 257)), clone, end()),
                           says="clone")
        del m

    # ---- the confinement of receive

    def test_symlinks_in_the_parent_lead_nowhere(self):
        """The check cannot know the symlinks of the parent snapshot (a sandbox made them): an
        increment that writes, chmods and truncates through them must stay in its staging."""
        sp = self.spaced
        sid = self.new_sandbox()
        target = os.path.join(self.marker, "dir")
        sp.sh(sid, "ln -s %s /root/abs; ln -s %s /root/rel; ln -s %s/file /root/file" % (target, self.up + "/dir", target))
        parent = self.snapshot(sid)
        p = parse_first_command(self.export(parent))
        for attack in (new_file("root/abs/pwned", 300), new_file("root/rel/pwned", 300), new_file(b"root/abs/\xff\x01", 300),
                       [cmd("CHMOD", tlv("PATH", "root/abs"), tlv("MODE", 0o4777))],
                       [cmd("CHMOD", tlv("PATH", "root/file"), tlv("MODE", 0o4777))],
                       [cmd("TRUNCATE", tlv("PATH", "root/file"), tlv("SIZE", 0))],
                       [cmd("WRITE", tlv("PATH", "root/file"), tlv("FILE_OFFSET", 0), tlv("DATA", b"pwned"))],
                       [cmd("CHOWN", tlv("PATH", "root/rel/file"), tlv("UID", 65534), tlv("GID", 65534))]):
            inc = cmd("SNAPSHOT", tlv("PATH", snapshot_name()), tlv("UUID", uuidlib.uuid4().bytes), tlv("CTRANSID", 9),
                      tlv("CLONE_UUID", p[A["UUID"]]), tlv("CLONE_CTRANSID", p[A["CTRANSID"]]))
            st, body = self.post(stream(inc, *attack, end()), "?parent_snapshot_id=" + parent)
            if st == 201:  # received, but then it can only have touched its own copy
                self.addCleanup(sp.request, "DELETE", "/v1/snapshots/" + body["id"])
            else:
                self.assertError((st, body), 400, "invalid_request")
                self.assertIn("btrfs receive", body["error"]["message"], "not stopped where this test aims")
            self.assertEqual(tree_digest(self.marker), self.world()["marker"])
            with open(os.path.join(target, "file")) as f:
                self.assertEqual(f.read(), "host file\n")
            self.assertEqual(os.stat(os.path.join(target, "file")).st_mode & 0o7777, 0o644)
            self.assertEqual(os.stat(target).st_mode & 0o7000, 0)
            self.assertFalse(os.path.exists(os.path.join(target, "pwned")))
            self.assertEqual(os.listdir(self.pool("staging")), [])

    def test_round_trip_full_then_increment_on_the_import(self):
        """Legitimate streams still work: a full one, then an increment whose parent is
        itself an import (receive finds it by its received UUID)."""
        sp = self.spaced
        sid = self.new_sandbox()
        sp.sh(sid, "echo one > /root/a")
        s1 = self.snapshot(sid)
        sp.sh(sid, "echo two > /root/b; rm /root/a")
        s2 = self.snapshot(sid)
        full = self.export(s1)
        conn = sp.connection(timeout=120)
        conn.request("GET", "/v1/snapshots/%s/export?parent=%s" % (s2, s1), headers={"Authorization": "Bearer " + sp.key})
        r = conn.getresponse()
        inc = r.read()
        conn.close()
        self.assertEqual(r.status, 200)
        sp.api("DELETE", "/v1/snapshots/" + s2, expect=204)
        sp.api("DELETE", "/v1/snapshots/" + s1, expect=204)
        st, snap = self.post(full)
        self.assertEqual(st, 201, snap)
        st, snap = self.post(inc, "?parent_snapshot_id=" + s1)
        self.assertEqual(st, 201, snap)
        self.assertEqual(snap["parent_snapshot_id"], s1)
        with open(self.pool("snapshots", s2, "root", "b")) as f:
            self.assertEqual(f.read(), "two\n")
        self.assertFalse(os.path.exists(self.pool("snapshots", s2, "root", "a")))
        self.assertEqual(os.listdir(self.pool("staging")), [])
        for s in (s2, s1):
            sp.api("DELETE", "/v1/snapshots/" + s, expect=204)

    # ---- lineage

    def test_import_does_not_attach_to_foreign_sandboxes(self):
        sp = self.spaced
        owner, other = self.new_sandbox(), self.new_sandbox()
        sp.sh(owner, "echo 1 > /root/a")
        s1 = self.snapshot(owner)
        full = self.export(s1)
        sp.api("DELETE", "/v1/snapshots/" + s1, expect=204)
        # A full stream says nothing of where it came from: it joins no sandbox.
        self.assertRefused(full, "?sandbox_id=" + other, status=403, code="forbidden")
        self.assertRefused(full, "?sandbox_id=" + owner, status=403, code="forbidden")
        st, snap = self.post(full)
        self.assertEqual(st, 201, snap)
        self.assertFalse(snap.get("sandbox_id"))
        # Restore takes only the sandbox's own snapshots: the import is nobody's.
        before = sp.sh(other, "ls /root")["stdout"]
        self.assertError(sp.request("POST", "/v1/sandboxes/%s/restore" % other, {"snapshot_id": s1}), 400, "invalid_request")
        self.assertEqual(sp.sh(other, "ls /root")["stdout"], before)
        # An increment on another sandbox's snapshot does not join the other sandbox.
        s2 = self.snapshot(owner)
        self.assertRefused(b"", "?sandbox_id=%s&parent_snapshot_id=%s" % (other, s2), status=403, code="forbidden")


class PoolMount(SpacedTestCase):

    def pool_mount(self):
        root = os.path.join(self.spaced.state_dir, "pool")
        lines = [line.split() for line in mountinfo_lines(" " + root + " ")]
        lines = [f for f in lines if f[4] == root]
        self.assertTrue(lines, "pool is not mounted")
        return lines[-1][5].split(",")

    def test_pool_is_nosuid_nodev(self):
        opts = self.pool_mount()
        self.assertIn("nosuid", opts)
        self.assertIn("nodev", opts)

    def test_setuid_file_from_a_sandbox_gives_no_root(self):
        sp = self.spaced
        sid = self.new_sandbox()
        # The host's id(1), written and made setuid by the sandbox's root (busybox would drop
        # its setuid privileges by itself and prove nothing).
        import base64
        with open("/usr/bin/id", "rb") as f:
            b64 = base64.b64encode(f.read()).decode()
        r = sp.sh(sid, "base64 -d > /root/id && chmod 4755 /root/id", stdin=b64)
        self.assertEqual(r["exit_code"], 0, r)
        path = os.path.join(sp.subvolume(sid), "root", "id")
        st = os.stat(path)
        self.assertEqual(st.st_uid, 0, "the sandbox's root is not host root on disk: this test proves nothing")
        self.assertTrue(st.st_mode & stat.S_ISUID)
        fd = os.open(path, os.O_PATH)
        try:
            r = subprocess.run(["id", "-u"], executable="/proc/self/fd/%d" % fd, pass_fds=(fd,), user=65534, group=65534,
                               capture_output=True, text=True, timeout=30)
        finally:
            os.close(fd)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "65534", "a setuid-root file of a sandbox ran as root on the host")


    def test_setuid_root_file_carried_in_by_an_import_gives_no_root(self):
        sp = self.spaced
        with open("/usr/bin/id", "rb") as f:
            binary = f.read()
        name = snapshot_name()
        writes = [cmd("WRITE", tlv("PATH", "id"), tlv("FILE_OFFSET", off), tlv("DATA", binary[off:off + 49152]))
                  for off in range(0, len(binary), 49152)]
        data = stream(subvol(name), cmd("MKFILE", tlv("PATH", "id"), tlv("INO", 257)), *writes,
                      cmd("CHOWN", tlv("PATH", "id"), tlv("UID", 0), tlv("GID", 0)),
                      cmd("CHMOD", tlv("PATH", "id"), tlv("MODE", 0o4755)), end())
        st, snap = sp.request("POST", "/v1/snapshots/import", raw=data, headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(st, 201, snap)
        self.addCleanup(sp.request, "DELETE", "/v1/snapshots/" + name)
        path = os.path.join(sp.state_dir, "pool", "snapshots", name, "id")
        st = os.stat(path)
        self.assertEqual((st.st_uid, st.st_mode & 0o7777), (0, 0o4755), "the import did not carry a setuid-root file")
        fd = os.open(path, os.O_PATH)
        try:
            r = subprocess.run(["id", "-u"], executable="/proc/self/fd/%d" % fd, pass_fds=(fd,), user=65534, group=65534,
                               capture_output=True, text=True, timeout=30)
        finally:
            os.close(fd)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "65534", "an imported setuid-root file ran as root on the host")


class PoolRemount(FreshSpacedTestCase):

    def test_older_mount_gets_the_flags_at_start(self):
        sp = self.spaced
        root = os.path.join(sp.state_dir, "pool")
        sp.stop()
        # An older spaced left its pool mounted without the flags (this one unmounts an idle
        # pool at a clean stop: mount it back the old way).
        if os.path.ismount(root):
            subprocess.run(["mount", "-o", "remount,suid,dev", root], check=True)
        else:
            subprocess.run(["mount", "-o", "loop,noatime,user_subvol_rm_allowed", os.path.join(sp.state_dir, "pool.img"), root],
                           check=True)
        opts = [line.split()[5] for line in mountinfo_lines(" " + root + " ") if line.split()[4] == root]
        self.assertNotIn("nosuid", opts[-1].split(","))
        sp.start()
        opts = [line.split()[5] for line in mountinfo_lines(" " + root + " ") if line.split()[4] == root]
        self.assertIn("nosuid", opts[-1].split(","))
        self.assertIn("nodev", opts[-1].split(","))


class ImportCrash(FreshSpacedTestCase):

    def start_import(self, name, extra=1000):
        """Sends the start of an import and leaves it open; returns the socket."""
        sp = self.spaced
        head = stream(subvol(name), *[c for i in range(20) for c in new_file("f%d" % i, 300 + i, os.urandom(20000))])
        s = socket.create_connection(("127.0.0.1", sp.port), timeout=30)
        s.sendall(("POST /v1/snapshots/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % (sp.key, len(head) + extra)).encode())
        s.sendall(head)
        staging = os.path.join(sp.state_dir, "pool", "staging")
        wait_for(lambda: any(os.path.exists(os.path.join(staging, d, "recv", name, "f19")) for d in os.listdir(staging)),
                 what="receive to apply the stream so far")
        return s

    def test_receive_runs_confined(self):
        """The receive process itself: its own mount namespace, rooted in the import's recv
        directory, no_new_privs, a seccomp filter, a cut bounding set."""
        sp = self.spaced
        name = snapshot_name()
        s = self.start_import(name)
        try:
            pids = [int(d) for d in os.listdir("/proc") if d.isdigit() and read_file("/proc/%s/cmdline" % d).startswith(b"btrfs\0receive")]
            mine = [pid for pid in pids if os.path.exists("/proc/%d/root/%s/f19" % (pid, name))]
            self.assertEqual(len(mine), 1, "no receive process of this import found: %r" % pids)
            pid = mine[0]
            self.assertNotEqual(os.readlink("/proc/%d/ns/mnt" % pid), os.readlink("/proc/self/ns/mnt"))
            self.assertEqual(os.listdir("/proc/%d/root" % pid), [name], "receive's root is not its recv directory")
            status = dict(line.split(":", 1) for line in read_file("/proc/%d/status" % pid).decode().splitlines() if ":" in line)
            self.assertEqual(status["NoNewPrivs"].strip(), "1")
            self.assertEqual(status["Seccomp"].strip(), "2")
            bnd = int(status["CapBnd"], 16)
            for cap in (16, 17, 19, 22, 25):  # SYS_MODULE, SYS_RAWIO, SYS_PTRACE, SYS_BOOT, SYS_TIME
                self.assertFalse(bnd & (1 << cap), "capability %d left in receive's bounding set" % cap)
            self.assertTrue(bnd & (1 << 21), "receive needs CAP_SYS_ADMIN for its ioctls")
            # Its mounts: the writable ones are its staging only.
            rw = [line.split()[4] for line in read_file("/proc/%d/mountinfo" % pid).decode().splitlines()
                  if "rw" in line.split()[5].split(",")]
            self.assertEqual(rw, ["/"], "writable mounts seen by receive (from its chroot): %r" % rw)
        finally:
            s.close()
        wait_for(lambda: os.listdir(os.path.join(sp.state_dir, "pool", "staging")) == [], what="the import to be undone")

    def test_kill9_mid_import_leaves_only_swept_debris(self):
        sp = self.spaced
        staging = os.path.join(sp.state_dir, "pool", "staging")
        name = snapshot_name()
        s = self.start_import(name)
        sp.kill9()
        s.close()
        sp.start()
        wait_for(lambda: os.listdir(staging) == [], what="the staging sweep")
        self.assertFalse(os.path.lexists(os.path.join(sp.state_dir, "pool", "snapshots", name)))
        self.assertEqual(sp.api("GET", "/v1/snapshots", expect=200)[1]["snapshots"], [])
        self.assertEqual([f for f in os.listdir(os.path.join(sp.state_dir, "logs")) if "import" in f], [])


if __name__ == "__main__":
    unittest.main()
