#!/usr/bin/env python3
"""network-bench: what an egress network adds to create -> first exec, side by side in one
run: sandboxes with the profile none (only lo) and with the profile public (veth, /30,
nftables set element, policy to space-egress), interleaved so that both see the same load.
A throwaway spaced (the integration harness, a temporary state directory) is started here
and removed afterwards. Nothing is sent anywhere: the first exec is `true`.

Usage: sudo bench/network_bench.py [-n N] [--json FILE]   (see docs/benchmarks.md)
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
from spaced_harness import Spaced  # noqa: E402


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--json")
    args = ap.parse_args()
    sp = Spaced(extra_args=["--egress-subnet", "10.204.0.0/22"])
    sp.start()
    samples = {"none": [], "public": []}
    try:
        for i in range(args.n + 2):  # the first pair warms up
            for profile in ("none", "public") if i % 2 == 0 else ("public", "none"):
                t0 = time.perf_counter()
                sid = sp.create(network={"profile": profile})
                r = sp.exec(sid, cmd=["true"])
                dt = (time.perf_counter() - t0) * 1000
                assert r["exit_code"] == 0, r
                sp.destroy(sid)
                if i >= 2:
                    samples[profile].append(dt)
    finally:
        sp.cleanup()
    report = {p: {"n": len(s), "p50": pct(s, 50), "p95": pct(s, 95), "p99": pct(s, 99), "max": max(s)}
              for p, s in samples.items()}
    report["added_p50_ms"] = report["public"]["p50"] - report["none"]["p50"]
    print("create -> first exec (ms), interleaved, n=%d each" % args.n)
    print("%-8s %8s %8s %8s %8s" % ("profile", "p50", "p95", "p99", "max"))
    for p in ("none", "public"):
        r = report[p]
        print("%-8s %8.2f %8.2f %8.2f %8.2f" % (p, r["p50"], r["p95"], r["p99"], r["max"]))
    print("added by the network, p50: %.2f ms" % report["added_p50_ms"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
