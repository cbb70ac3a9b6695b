#!/usr/bin/env python3
"""warm-pool: create -> first exec from a warm pool against cold creates, side by side in one
run: two throwaway spaced of the same build, one with --warm-pool busybox=MIN:MAX, every
sample sent to both in a random order. Then bursts of P parallel creates on each. Prints
percentiles, the ratio warm / cold, and how many warm creates were claims (from /metrics).
See docs/benchmarks.md.

Usage: sudo bench/warm_pool.py [-n CREATES] [--gap S] [--bursts B] [--parallel P] [--pool MIN:MAX] [BUILD_DIR]
"""

import argparse
import os
import random
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_builds  # noqa: E402

pct = compare_builds.pct
SPLIT = {}  # spaced -> (create ms, first exec ms) of every sample, sequential and parallel


def create_then_exec(sp):
    t = time.perf_counter()
    st, d = sp.request("POST", "/v1/sandboxes?wait=true&timeout_s=60", {"template": "busybox"})
    assert st == 200 and d["sandbox"]["state"] == "running", (st, d)
    sid = d["sandbox"]["id"]
    t1 = time.perf_counter()
    st2, r = sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
    t2 = time.perf_counter()
    assert st2 == 200 and r["exit_code"] == 0, (st2, r)
    SPLIT.setdefault(sp, ([], []))
    SPLIT[sp][0].append((t1 - t) * 1000)
    SPLIT[sp][1].append((t2 - t1) * 1000)
    return sid, (t2 - t) * 1000


def claims(sp):
    st, body = sp.request("GET", "/metrics")
    text = body.decode() if isinstance(body, bytes) else body
    for line in text.splitlines():
        if line.startswith('space_warm_pool_claims_total{template="busybox"}'):
            return int(float(line.split()[-1]))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=200, help="sequential creates per spaced")
    ap.add_argument("--gap", type=float, default=0.1, help="seconds between two sequential samples")
    ap.add_argument("--bursts", type=int, default=10)
    ap.add_argument("--parallel", type=int, default=10)
    ap.add_argument("--pool", default="4:32")
    ap.add_argument("build", nargs="?", default=os.path.join(os.path.dirname(HERE), "build"))
    a = ap.parse_args()
    sps = {"cold": compare_builds.BuildSpaced(a.build),
           "warm": compare_builds.BuildSpaced(a.build + "::--warm-pool=busybox=" + a.pool)}
    try:
        for sp in sps.values():
            sp.start()
        time.sleep(5)  # the pool fills
        seq = {k: [] for k in sps}
        for _ in range(a.n):
            order = list(sps)
            random.shuffle(order)
            for k in order:
                sid, ms = create_then_exec(sps[k])
                seq[k].append(ms)
                sps[k].request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid)
            time.sleep(a.gap)
        seq_claims = claims(sps["warm"])
        burst = {k: [] for k in sps}
        for _ in range(a.bursts):
            time.sleep(3)  # the pool refills between bursts
            order = list(sps)
            random.shuffle(order)
            for k in order:
                out, made = [], []

                def one():
                    sid, ms = create_then_exec(sps[k])
                    out.append(ms)
                    made.append(sid)

                ts = [threading.Thread(target=one) for _ in range(a.parallel)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                assert len(out) == a.parallel, (k, out)
                burst[k] += out
                for sid in made:
                    sps[k].request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid)
        all_claims = claims(sps["warm"])
        for name, data in (("create->first exec", seq), ("%d in parallel" % a.parallel, burst)):
            for k in sps:
                v = data[k]
                print("%-19s %-5s n=%-5d p50=%7.2f p90=%7.2f p99=%7.2f ms  ratio p50 %.3f p99 %.3f" % (
                    name, k, len(v), pct(v, 50), pct(v, 90), pct(v, 99), pct(v, 50) / pct(data["cold"], 50),
                    pct(v, 99) / pct(data["cold"], 99)), flush=True)
        for k in sps:
            c, e = SPLIT[sps[k]]
            print("of which (all samples) %-5s create p50=%7.2f p99=%7.2f  first exec p50=%7.2f p99=%7.2f ms" % (
                k, pct(c, 50), pct(c, 99), pct(e, 50), pct(e, 99)))
        print("warm creates answered from the pool: sequential %d of %d, parallel %d of %d" % (
            seq_claims, a.n, all_claims - seq_claims, a.bursts * a.parallel))
    finally:
        for sp in sps.values():
            sp.cleanup()


if __name__ == "__main__":
    main()
