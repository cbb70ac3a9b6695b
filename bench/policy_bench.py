#!/usr/bin/env python3
"""policy: the cost of policy evaluation on the exec round trip, side by side in one run:
one throwaway spaced, two projects, a sandbox in each; one project has no policy, the other
one policy of 100 command rules none of which matches (so every rule is tried: executable
globs, argv prefixes, globs and regular expressions), and every sample execs `true` in both
in a random order. Prints percentiles of both, the difference and the ratio. See
docs/benchmarks.md (issue 15: goal <= 50 us p50 with 100 rules).

Usage: sudo bench/policy_bench.py [-n EXECS] [--rules N] [BUILD_DIR]
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


def rules(n):
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            m = {"executable": "nothing-%d*" % i}
        elif kind == 1:
            m = {"argv": {"prefix": ["nothing-%d" % i, "--flag"]}}
        elif kind == 2:
            m = {"argv": {"glob": "*nothing-%d *" % i}}
        else:
            m = {"argv": {"regex": "(^| )nothing-%d( |$)" % i}}
        out.append({"id": "r%d" % i, "effect": "deny", "match": m})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=500, help="execs per project")
    ap.add_argument("--rules", type=int, default=100)
    ap.add_argument("build", nargs="?", default=os.path.join(os.path.dirname(HERE), "build"))
    a = ap.parse_args()
    sp = compare_builds.BuildSpaced(a.build)
    try:
        sp.start()
        keys, sandboxes = {}, {}
        for project in ("nopolicy", "policy"):
            st, _ = sp.request("POST", "/v1/projects", {"id": project})
            assert st == 201, st
            st, k = sp.request("POST", "/v1/keys", {"name": "bench-" + project, "project": project, "role": "owner"})
            assert st == 201, (st, k)
            keys[project] = k["secret"]
            st, d = sp.request("POST", "/v1/sandboxes?wait=true&timeout_s=60", {"template": "busybox"}, key=keys[project])
            assert st == 200, (st, d)
            sandboxes[project] = d["sandbox"]["id"]
        st, pol = sp.request("POST", "/v1/policies", {"name": "bench", "actions": ["command"], "rules": rules(a.rules)},
                             key=keys["policy"])
        assert st == 201, (st, pol)
        times = {k: [] for k in keys}
        for i in range(a.n + 20):
            order = list(keys)
            random.shuffle(order)
            for k in order:
                t = time.perf_counter()
                st, r = sp.request("POST", "/v1/sandboxes/%s/exec" % sandboxes[k], {"cmd": ["true"]}, key=keys[k])
                dt = (time.perf_counter() - t) * 1e6
                assert st == 200 and r["exit_code"] == 0, (st, r)
                if i >= 20:  # the first ones warm the cache (the compiled set) and the sandbox
                    times[k].append(dt)
        base, pol_t = times["nopolicy"], times["policy"]
        for k in keys:
            v = times[k]
            print("exec round trip %-9s n=%-5d p50=%8.1f p90=%8.1f p99=%8.1f us" % (k, len(v), pct(v, 50), pct(v, 90),
                                                                                   pct(v, 99)))
        print("with %d rules: p50 +%.1f us (ratio %.3f), p99 +%.1f us (ratio %.3f)" % (
            a.rules, pct(pol_t, 50) - pct(base, 50), pct(pol_t, 50) / pct(base, 50), pct(pol_t, 99) - pct(base, 99),
            pct(pol_t, 99) / pct(base, 99)))
    finally:
        sp.cleanup()


if __name__ == "__main__":
    main()
