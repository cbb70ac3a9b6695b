#!/usr/bin/env python3
"""policy: the cost of policy evaluation on the exec round trip, side by side in one run:
one throwaway spaced, two projects, a sandbox in each; one project has no policy, the other
one policy of 100 command rules none of which matches (so every rule is tried: executable
globs, argv prefixes, globs and regular expressions), and every sample execs `true` in both
in a random order. Prints percentiles of both, the difference and the ratio. See
docs/benchmarks.md (issue 15: goal <= 50 us p50 with 100 rules).

With --exec-loop K: instead, K rounds of a streamed command running a shell loop of 1000
`/bin/true` in each project (in a random order each round): in the project with command
rules every one of those execs is watched (JOB_EXEC_CHECK, docs/governance.md), in the
other none is. Prints the command's wall time (start to end, as the API reports it).

Usage: sudo bench/policy_bench.py [-n EXECS] [--rules N] [--exec-loop K] [BUILD_DIR]
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


LOOP = "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done; echo $i"


def exec_loop(sp, keys, sandboxes, a):
    tokens = {}
    for k in keys:
        st, sess = sp.request("POST", "/v1/sandboxes/%s/sessions" % sandboxes[k], {}, key=keys[k])
        assert st == 201, (st, sess)
        tokens[k] = sess["attach_token"]
    times = {k: [] for k in keys}
    for i in range(a.exec_loop + 1):
        order = list(keys)
        random.shuffle(order)
        for k in order:
            base = "/v1/sandboxes/%s/commands" % sandboxes[k]
            t = time.perf_counter()
            st, c = sp.request("POST", base, {"cmd": ["sh", "-c", LOOP]}, key=tokens[k])
            assert st == 201, (st, c)
            st, end = sp.request("GET", "%s/%s?wait=true&timeout_s=600" % (base, c["command_id"]), key=tokens[k])
            dt = (time.perf_counter() - t) * 1e3
            assert st == 200 and end["state"] == "exited" and end["exit_code"] == 0, (st, end)
            if i >= 1:  # the first round warms the sandboxes
                times[k].append(dt)
    for k in keys:
        v = times[k]
        print("loop of 1000 execs %-9s n=%-3d p50=%9.1f p90=%9.1f ms (%.1f us per exec at p50)" % (
            "watched" if k == "policy" else "unwatched", len(v), pct(v, 50), pct(v, 90), pct(v, 50)))
    w, u = times["policy"], times["nopolicy"]
    print("watch: p50 +%.1f ms per 1000 execs (ratio %.2f), +%.0f us per exec" % (
        pct(w, 50) - pct(u, 50), pct(w, 50) / pct(u, 50), pct(w, 50) - pct(u, 50)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=500, help="execs per project")
    ap.add_argument("--rules", type=int, default=100)
    ap.add_argument("--exec-loop", type=int, default=0, help="rounds of the watched shell loop instead")
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
        if a.exec_loop:
            return exec_loop(sp, keys, sandboxes, a)
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
