"""Host uid ranges are allocated host-wide: two spaced on one host (different state
directories) never hand out the same range, a range stays taken while its sandbox runs
(across a kill -9 of its daemon) and is free again once the sandbox stops."""

import os
import unittest

from spaced_harness import Spaced, cgroup_pids, require_root

RANGE_DIR = "/run/space/uid-ranges"


def uid_range(sid):
    """(first host uid, length) of the sandbox's user namespace, read from its init's uid_map."""
    pids = cgroup_pids(sid)
    assert pids, "sandbox %s has no processes" % sid
    with open("/proc/%d/uid_map" % pids[0]) as f:
        inside, outside, length = f.read().split()[:3]
    assert inside == "0", inside
    return int(outside), int(length)


def owner_of(base):
    with open(os.path.join(RANGE_DIR, str(base))) as f:
        return f.read().split()


class UidRanges(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        require_root()
        cls.a, cls.b = Spaced(), Spaced()
        try:
            cls.a.start()
            cls.b.start()
        except Exception:
            cls.a.cleanup()
            cls.b.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.a.cleanup()
        cls.b.cleanup()

    def assertDisjoint(self, ranges):
        spans = sorted(ranges.values())
        for (b1, l1), (b2, _l2) in zip(spans, spans[1:]):
            self.assertLessEqual(b1 + l1, b2, "uid ranges overlap: %r" % ranges)

    def test_two_daemons_never_share_a_range(self):
        made = []
        for i in range(3):  # interleaved, so each allocation races the other daemon's
            made.append((self.a, self.a.create(metadata={"t": "uid-a%d" % i})))
            made.append((self.b, self.b.create(metadata={"t": "uid-b%d" % i})))
        ranges = {sid: uid_range(sid) for _sp, sid in made}
        self.assertEqual(len(ranges), 6)
        for sid, (base, length) in ranges.items():
            self.assertEqual(length, 65536, sid)
            self.assertGreaterEqual(base, 1000000, sid)
        self.assertEqual(len({b for b, _l in ranges.values()}), 6, ranges)
        self.assertDisjoint(ranges)
        # Each range is recorded host-wide under the daemon and sandbox that hold it.
        for sp, sid in made:
            instance, holder, state_dir = owner_of(ranges[sid][0])
            self.assertEqual((instance, holder, state_dir), (sp.instance(), sid, sp.state_dir))
        # The sandbox sees the same map from inside.
        sp, sid = made[0]
        self.assertEqual(sp.sh(sid, "cat /proc/self/uid_map")["stdout"].split()[:3],
                         ["0", str(ranges[sid][0]), "65536"])

        # Stopped, a sandbox gives its range back; started again it gets one that is free.
        stopped = made[0][1]
        self.a.action(stopped, "stop")
        self.assertFalse(os.path.exists(os.path.join(RANGE_DIR, str(ranges[stopped][0]))))
        newcomer = self.b.create(metadata={"t": "uid-b-new"})
        self.a.action(stopped, "start")
        live = {sid: uid_range(sid) for _sp, sid in made}
        live[newcomer] = uid_range(newcomer)
        self.assertDisjoint(live)

        # A daemon killed with -9 leaves its sandboxes running: their ranges stay taken, and
        # the restarted daemon keeps them.
        self.a.kill9()
        others = [self.b.create(metadata={"t": "uid-b-while-a-down-%d" % i}) for i in range(2)]
        self.a.start()
        live.update({sid: uid_range(sid) for sid in others})
        for sp, sid in made:
            if sp is self.a:
                self.assertEqual(self.a.state(sid), "running", sid)
                self.assertEqual(uid_range(sid), live[sid], "sandbox %s changed range across the restart" % sid)
        self.assertDisjoint(live)
        for sid in others + [newcomer]:
            self.b.destroy(sid)
            self.assertFalse(os.path.exists(os.path.join(RANGE_DIR, str(live[sid][0]))), sid)
        for sp, sid in made:
            sp.destroy(sid)


if __name__ == "__main__":
    unittest.main()
