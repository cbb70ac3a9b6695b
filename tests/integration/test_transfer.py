"""Snapshot export and import (btrfs send streams, incremental against the parent) and
sandboxes created from snapshots: the basis for moving a session to another host."""

import os
import unittest

from spaced_harness import SpacedTestCase


class Transfer(SpacedTestCase):

    def snapshot(self, sid):
        _, d = self.spaced.api("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {}, expect=200)
        return d["snapshot"]["id"]

    def export(self, snap, query=""):
        sp = self.spaced
        conn = sp.connection(timeout=120)
        conn.request("GET", "/v1/snapshots/%s/export%s" % (snap, query), headers={"Authorization": "Bearer " + sp.key})
        r = conn.getresponse()
        body = r.read()
        headers = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        return r.status, headers, body

    def test_round_trip_full_and_incremental(self):
        sp = self.spaced
        sid = self.new_sandbox()
        sp.sh(sid, "echo base > /root/a")
        s1 = self.snapshot(sid)
        sp.sh(sid, "dd if=/dev/urandom of=/root/b bs=1k count=256 2>/dev/null; echo more > /root/c; rm /root/a")
        s2 = self.snapshot(sid)
        checksum = sp.sh(sid, "md5sum /root/b")["stdout"]

        status, h, full = self.export(s1)
        self.assertEqual(status, 200)
        self.assertEqual(h["x-space-snapshot-id"], s1)
        self.assertNotIn("x-space-parent-snapshot-id", h)  # a full stream
        status, h, inc = self.export(s2)
        self.assertEqual(status, 200)
        self.assertEqual(h["x-space-parent-snapshot-id"], s1, "the export is not incremental against the parent")
        # Only what changed travels: about the 256 KiB written, not the whole filesystem.
        self.assertLess(len(inc), len(full))
        self.assertLess(len(inc), 1024 * 1024)
        status, h, s2_full = self.export(s2, "?full=true")
        self.assertNotIn("x-space-parent-snapshot-id", h)  # a full stream
        self.assertGreater(len(s2_full), len(inc))

        # Importing what is already here is refused and changes nothing.
        st, body = sp.request("POST", "/v1/snapshots/import", raw=inc,
                              headers={"Content-Type": "application/octet-stream"})
        self.assertError((st, body), 409, "already_exists")

        # Delete s2, import its incremental stream (the parent s1 is here): it comes back.
        sp.api("DELETE", "/v1/snapshots/" + s2, expect=204)
        self.assertFalse(os.path.exists(os.path.join(sp.state_dir, "pool", "snapshots", s2)))
        st, snap = sp.request("POST", "/v1/snapshots/import?sandbox_id=%s&parent_snapshot_id=%s&label=moved" % (sid, s1),
                              raw=inc, headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(st, 201, snap)
        self.assertEqual(snap["id"], s2)
        self.assertEqual(snap["state"], "ready")
        self.assertEqual(snap["label"], "moved")
        self.assertEqual(snap["parent_snapshot_id"], s1)

        # A sandbox made from the imported snapshot has exactly its files.
        _, d = sp.api("POST", "/v1/sandboxes?wait=true", {"snapshot_id": s2}, expect=200)
        new = d["sandbox"]["id"]
        self.addCleanup(self._destroy_quietly, new)
        self.assertEqual(d["sandbox"]["lineage"]["parent_snapshot_id"], s2)
        self.assertEqual(d["sandbox"]["lineage"]["parent_sandbox_id"], sid)
        self.assertEqual(d["sandbox"]["template"], "busybox")
        self.assertEqual(sp.sh(new, "md5sum /root/b")["stdout"], checksum)
        self.assertEqual(sp.sh(new, "cat /root/c; test -e /root/a; echo $?")["stdout"], "more\n1\n")

    def test_bad_imports_and_exports(self):
        sp = self.spaced
        before = sp.api("GET", "/v1/snapshots", expect=200)[1]["snapshots"]
        st, body = sp.request("POST", "/v1/snapshots/import", raw=os.urandom(4096),
                              headers={"Content-Type": "application/octet-stream"})
        self.assertError((st, body), 400, "invalid_request")
        st, body = sp.request("POST", "/v1/snapshots/import", raw=b"x", key=None)
        self.assertError((st, body), 401, "unauthorized")
        st, body = sp.request("POST", "/v1/snapshots/import?sandbox_id=../../x", raw=b"x")
        self.assertError((st, body), 400, "invalid_request")
        self.assertEqual(sp.api("GET", "/v1/snapshots", expect=200)[1]["snapshots"], before)
        self.assertEqual(sorted(os.listdir(os.path.join(sp.state_dir, "pool", "snapshots"))), sorted(s["id"] for s in before))
        self.assertEqual(self.export("snap-doesnotexist0")[0], 404)
        sid = self.new_sandbox()
        s1 = self.snapshot(sid)
        self.assertEqual(self.export(s1, "?parent=snap-nothere00000000")[0], 400)
        # Creating from a snapshot validates like any create.
        self.assertError(sp.request("POST", "/v1/sandboxes", {"snapshot_id": "snap-nothere00000000"}), 404, "not_found")
        self.assertError(sp.request("POST", "/v1/sandboxes", {"snapshot_id": s1, "template": "busybox"}), 400, "invalid_request")


if __name__ == "__main__":
    unittest.main()
