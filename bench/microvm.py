#!/usr/bin/env python3
"""microvm: sandboxes of the microvm runtime against namespace sandboxes, side by side in one
run (docs/runtimes.md): create -> first exec (a cold boot for a microvm), the exec round
trip in a running sandbox, and the host memory per idle sandbox (the cgroup's figure: for a
microvm, QEMU and its guest). Each round creates one of each in a random order. For the
microvm, each round also takes a memory snapshot of its sandbox, restores it, and creates a
sandbox from it (-> first exec): the create that a pre-booted template would give, beside
the cold boot of the same round; then forks N (10) from it. Prints
percentiles and the ratio microvm / namespaces. Under TCG (no usable KVM) the microvm
figures are TCG figures: say so wherever they are quoted. See docs/benchmarks.md.

Usage: sudo bench/microvm.py [-n ROUNDS] [--exec-n N] [--fork N] [BUILD_DIR]
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
RUNTIMES = ("namespaces", "microvm")


def ok(sp, method, path, body=None, status=200):
    st, d = sp.request(method, path, body, timeout=300)
    assert st == status, (method, path, st, d)
    return d


def create_then_exec(sp, runtime):
    sid = ok(sp, "POST", "/v1/sandboxes?wait=true&timeout_s=240", {"template": "busybox", "runtime": runtime})["sandbox"]["id"]
    ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
    return sid


def memory_bytes(sp, sid):
    d = ok(sp, "GET", "/v1/sandboxes/%s/stats" % sid)
    return d["memory"]["used_bytes"] - d["memory"]["cache_bytes"]


def memory_state(sp, sid, add, fork_n):
    """Memory snapshot, restore, a create from the snapshot -> first exec, and a fork of
    fork_n from it (until all run), of a running microvm."""
    t = time.perf_counter()
    snap = ok(sp, "POST", "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=240" % sid, {"memory": True})["snapshot"]["id"]
    add("memory snapshot", "microvm", (time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    ok(sp, "POST", "/v1/sandboxes/%s/restore?wait=true&timeout_s=240" % sid, {"snapshot_id": snap})
    ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
    add("restore -> first exec", "microvm", (time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    kid = ok(sp, "POST", "/v1/sandboxes?wait=true&timeout_s=240", {"snapshot_id": snap})["sandbox"]["id"]
    ok(sp, "POST", "/v1/sandboxes/%s/exec" % kid, {"cmd": ["true"]})
    add("microvm create -> first exec", "from memory snapshot", (time.perf_counter() - t) * 1000)
    ok(sp, "DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % kid)
    if fork_n:
        t = time.perf_counter()
        d = ok(sp, "POST", "/v1/sandboxes/%s/fork?wait=true&timeout_s=600" % sid, {"snapshot_id": snap, "count": fork_n})
        add("fork of %d from memory snapshot" % fork_n, "microvm", (time.perf_counter() - t) * 1000)
        for kid in d["operation"]["result"]["sandbox_ids"]:
            ok(sp, "DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % kid)
    ok(sp, "DELETE", "/v1/snapshots/" + snap, status=204)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5, help="rounds (one create of each runtime per round)")
    ap.add_argument("--exec-n", type=int, default=100, help="exec round trips per sandbox")
    ap.add_argument("--fork", type=int, default=10, help="microvm sandboxes per fork from a memory snapshot (0: none)")
    ap.add_argument("build", nargs="?", default=os.path.join(os.path.dirname(HERE), "build"))
    a = ap.parse_args()
    sp = compare_builds.BuildSpaced(a.build)
    res = {}

    def add(what, kind, v):
        res.setdefault(what, {}).setdefault(kind, []).append(v)

    try:
        sp.start(timeout=180)
        _, caps = sp.api("GET", "/v1/capabilities", expect=200)
        version = {d["name"]: d["version"] for d in caps["drivers"]}.get("microvm")
        assert version, "this spaced hosts no microvm runtime"
        print("microvm runtime: %s" % version, flush=True)
        for _ in range(a.n):
            for runtime in random.sample(RUNTIMES, 2):
                t = time.perf_counter()
                sid = create_then_exec(sp, runtime)
                add("create -> first exec", runtime, (time.perf_counter() - t) * 1000)
                if runtime == "microvm":
                    add("microvm create -> first exec", "microvm cold boot", (time.perf_counter() - t) * 1000)
                for _ in range(a.exec_n):
                    t = time.perf_counter()
                    ok(sp, "POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
                    add("exec round trip", runtime, (time.perf_counter() - t) * 1000)
                time.sleep(1)
                add("idle memory, no cache (MiB)", runtime, memory_bytes(sp, sid) / 1048576)
                if runtime == "microvm":
                    memory_state(sp, sid, add, a.fork)
                ok(sp, "DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=120" % sid)
        for what, by in res.items():
            base = by.get("namespaces") or by.get("microvm cold boot")  # none: a microvm-only figure
            for kind in by:
                v = by[kind]
                ratio = "  ratio p50 %.2f" % (pct(v, 50) / max(pct(base, 50), 1e-9)) if base else ""
                print("%-30s %-20s n=%-4d p50=%9.1f p90=%9.1f p99=%9.1f%s" % (
                    what, kind, len(v), pct(v, 50), pct(v, 90), pct(v, 99), ratio), flush=True)
    finally:
        sp.cleanup()


if __name__ == "__main__":
    main()
