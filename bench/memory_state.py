#!/usr/bin/env python3
"""memory-state: a small gvisor sandbox's memory snapshots against its filesystem snapshots and
against a namespace sandbox's, side by side in one run (docs/memory-state.md): create ->
first exec, exec round trip, snapshot, restore -> first exec, fork of 1 and of F -> every
child running + a first exec in each, and hibernate/wake against a plain pause/resume
(freezer) of both runtimes. Every round does the variants in a random order. Prints
percentiles and the ratio to the namespace sandbox. See docs/benchmarks.md.

Usage: sudo bench/memory_state.py [-n ROUNDS] [--fork F] [--touched-mib 1,256] [BUILD_DIR]
"""

import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_builds  # noqa: E402

pct = compare_builds.pct
LOOP = "(i=0; while true; do i=$((i+1)); echo $i > /root/count; sleep 0.1; done) >/dev/null 2>&1 </dev/null &"


def ok(sp, method, path, body=None, status=200):
    st, d = sp.request(method, path, body, timeout=300)
    assert st == status, (method, path, st, d)
    return d


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def snapshot(sp, sid, memory):
    return ok(sp, "POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=120" % sid, {"memory": memory})["snapshot"]["id"]


def restore_then_exec(sp, sid, snap):
    ok(sp, "POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=120" % sid, {"snapshot_id": snap})
    ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})


def fork_then_exec(sp, sid, snap, count):
    d = ok(sp, "POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=240" % sid, {"snapshot_id": snap, "count": count})
    kids = d["operation"]["result"]["sandbox_ids"]
    for kid in kids:
        ok(sp, "POST", "/v1/sandboxes/%s/exec" % kid, {"cmd": ["true"]})
    return kids


def pause_resume(sp, sid, to_disk):
    ok(sp, "POST", "/v1/sandboxes/%s/pause?wait=true&timeout_s=120" % sid, {"memory_to_disk": to_disk})
    ok(sp, "POST", "/v1/sandboxes/%s/resume?wait=true&timeout_s=120" % sid)
    ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})


def create_then_exec(sp, runtime):
    sid = ok(sp, "POST", "/v1/sandboxes?wait=true&timeout_s=120", {"template": "busybox", "runtime": runtime})["sandbox"]["id"]
    ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
    return sid


def touched(sp, a, add):
    """Image size and times against touched memory: a gvisor sandbox with a process holding M
    MiB of random bytes (dd's one block, blocked writing it to a pipe nobody reads: random, so
    the image's compression cannot shrink it), for each M of --touched-mib: memory snapshot,
    restore -> first exec, hibernate + wake -> exec."""
    sizes = []
    for mib in a.touched_mib:
        sid = create_then_exec(sp, "gvisor")
        ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid,
           {"shell": "(dd if=/dev/urandom bs=%dM count=1 iflag=fullblock 2>/dev/null | sleep 1000000) "
                     ">/dev/null 2>&1 </dev/null & " % mib + LOOP})
        # touched once the block is read: the sandbox's memory use says so
        deadline = time.time() + 120
        while ok(sp, "GET", "/v1/sandboxes/%s/stats" % sid)["memory"]["used_bytes"] < mib * 2**20 and time.time() < deadline:
            time.sleep(0.5)
        for _ in range(a.n):
            ms, snap = timed(lambda: snapshot(sp, sid, True))
            add("touched %d MiB: snapshot" % mib, "gvisor-memory", ms)
            img = os.path.join(sp.state_dir, "pool", "memory", snap)
            size = sum(os.stat(os.path.join(img, f)).st_blocks * 512 for f in os.listdir(img))
            sizes.append((mib, size))
            ms, _ = timed(lambda: restore_then_exec(sp, sid, snap))
            add("touched %d MiB: restore -> exec" % mib, "gvisor-memory", ms)
            ms, _ = timed(lambda: pause_resume(sp, sid, True))
            add("touched %d MiB: hibernate+wake" % mib, "gvisor-memory", ms)
            ok(sp, "DELETE", "/v1/snapshots/" + snap, status=204)
        ok(sp, "DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % sid)
    for mib in a.touched_mib:
        got = [b for m, b in sizes if m == mib]
        print("touched %4d MiB: image p50 %.1f MiB (n=%d), %.2f x touched" % (
            mib, pct(got, 50) / 2**20, len(got), pct(got, 50) / (mib * 2**20)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5, help="rounds")
    ap.add_argument("--fork", type=int, default=10, help="children of the larger fork")
    ap.add_argument("--touched-mib", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    help="instead of the comparison: image size and times for these MiB of touched memory (e.g. 1,256)")
    ap.add_argument("build", nargs="?", default=os.path.join(os.path.dirname(HERE), "build"))
    a = ap.parse_args()
    sp = compare_builds.BuildSpaced(a.build)
    res = {}

    def add(what, kind, ms):
        res.setdefault(what, {}).setdefault(kind, []).append(ms)

    try:
        sp.start()
        if a.touched_mib:
            touched(sp, a, add)
            for what, by in res.items():
                for kind, v in by.items():
                    print("%-34s n=%-3d p50=%8.1f p90=%8.1f ms" % (what, len(v), pct(v, 50), pct(v, 90)), flush=True)
            return
        # The baseline: a namespace sandbox doing the same (its snapshots hold files only,
        # its pause is the cgroup freezer), beside the gvisor sandbox's filesystem and
        # memory variants.
        sids = {}
        for runtime in ("namespaces", "gvisor"):
            sids[runtime] = create_then_exec(sp, runtime)
            ok(sp, "POST", "/v1/sandboxes/%s/exec" % sids[runtime], {"shell": LOOP})
        images = []
        for _ in range(a.n):
            for runtime in random.sample(list(sids), 2):
                ms, extra = timed(lambda: create_then_exec(sp, runtime))
                add("create -> first exec", runtime, ms)
                ok(sp, "DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % extra)
                for _ in range(5):
                    ms, _ = timed(lambda: ok(sp, "POST", "/v1/sandboxes/%s/exec" % sids[runtime], {"cmd": ["true"]}))
                    add("exec round trip", runtime, ms)
            snaps = {}
            variants = [("namespaces", "namespaces", False), ("gvisor", "gvisor-fs", False), ("gvisor", "gvisor-memory", True)]
            for runtime, kind, memory in random.sample(variants, 3):
                ms, snaps[kind] = timed(lambda: snapshot(sp, sids[runtime], memory))
                add("snapshot", kind, ms)
                if memory:
                    img = os.path.join(sp.state_dir, "pool", "memory", snaps[kind], "checkpoint.img")
                    images.append(os.stat(img).st_blocks * 512)
            owner = {kind: sids[runtime] for runtime, kind, _ in variants}
            for kind in random.sample(list(snaps), 3):
                ms, _ = timed(lambda: restore_then_exec(sp, owner[kind], snaps[kind]))
                add("restore -> first exec", kind, ms)
            for count in (1, a.fork):
                for kind in random.sample(list(snaps), 3):
                    ms, kids = timed(lambda: fork_then_exec(sp, owner[kind], snaps[kind], count))
                    add("fork of %d -> exec in each" % count, kind, ms)
                    for kid in kids:
                        ok(sp, "DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % kid)
            pauses = [("namespaces", "namespaces", False), ("gvisor", "gvisor-freeze", False), ("gvisor", "gvisor-hibernate", True)]
            for runtime, kind, to_disk in random.sample(pauses, 3):
                ms, _ = timed(lambda: pause_resume(sp, sids[runtime], to_disk))
                add("pause+resume -> exec", kind, ms)
            for snap in snaps.values():
                ok(sp, "DELETE", "/v1/snapshots/" + snap, status=204)
        for what, by in res.items():
            base = by["namespaces"]
            for kind, v in by.items():
                print("%-26s %-16s n=%-3d p50=%8.1f p90=%8.1f ms  ratio p50 %.2f" % (
                    what, kind, len(v), pct(v, 50), pct(v, 90), pct(v, 50) / pct(base, 50)), flush=True)
        print("memory image of the sandbox: p50 %.0f KiB (n=%d)" % (pct(images, 50) / 1024, len(images)))
    finally:
        sp.cleanup()


if __name__ == "__main__":
    main()
