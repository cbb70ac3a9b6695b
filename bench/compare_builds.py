#!/usr/bin/env python3
"""compare-builds: create -> first exec and the exec round trip of two (or more) spaced
builds, side by side in one run: each build gets a throwaway spaced (the integration
harness), and every sample goes to the builds in a fresh random order, so all see the same
machine at the same moment. The first build named is the baseline of the ratios.
See docs/benchmarks.md.

Usage: sudo bench/compare_builds.py CREATES EXECS NAME=BUILD_DIR[::--flag=value,...] ...
  e.g. bench/compare_builds.py 200 2000 base=/work/base/build new=build off=build::--proc-views=off
"""

import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Builds of other versions answer in their own shape: the integration tests' contract check
# (api/openapi.yaml of this checkout) is not theirs to meet, nor a cost to measure.
os.environ["SPACE_CONTRACT"] = "off"
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
import spaced_harness  # noqa: E402


class BuildSpaced(spaced_harness.Spaced):
    def __init__(self, build):
        super().__init__()
        # BUILD_DIR[::--flag=value,...]: the same build with other server flags
        build, _, flags = build.partition("::")
        self.build = os.path.abspath(build)
        self.flags = [f for f in flags.split(",") if f]

    def args(self):
        return [self.build + "/src/spaced/spaced", "--state-dir", self.state_dir, "--listen", "127.0.0.1:%d" % self.port,
                "--pool-size", "2G", "--agent", self.build + "/src/space_agent/space-agent"] + self.flags


def pct(v, p):
    s = sorted(v)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def main():
    creates, execs_n = int(sys.argv[1]), int(sys.argv[2])
    builds = dict(a.split("=", 1) for a in sys.argv[3:])
    sps = {k: BuildSpaced(v) for k, v in builds.items()}
    try:
        for sp in sps.values():
            sp.start()
        create = {k: [] for k in sps}
        execs = {k: [] for k in sps}
        for _ in range(creates):
            order = list(sps)
            random.shuffle(order)
            for k in order:
                sp = sps[k]
                t = time.perf_counter()
                st, d = sp.request("POST", "/v1/sandboxes?wait=true&timeout_s=60", {"template": "busybox"})
                sid = d["sandbox"]["id"]
                st2, r = sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
                create[k].append((time.perf_counter() - t) * 1000)
                assert st == 200 and st2 == 200 and r["exit_code"] == 0, (k, st, d, st2, r)
                sp.request("DELETE", "/v1/sandboxes/%s?wait=true&timeout_s=60" % sid)
        sids = {k: sps[k].create() for k in sps}
        for _ in range(execs_n):
            order = list(sps)
            random.shuffle(order)
            for k in order:
                t = time.perf_counter()
                st, r = sps[k].request("POST", "/v1/sandboxes/%s/exec" % sids[k], {"cmd": ["true"]})
                execs[k].append((time.perf_counter() - t) * 1000)
                assert st == 200, (k, st, r)
        base = list(sps)[0]
        for name, data in (("create->first exec", create), ("exec round trip", execs)):
            for k in sps:
                v = data[k]
                print("%-19s %-6s n=%-5d p50=%7.2f p90=%7.2f p99=%7.2f ms  ratio p50 %.3f p99 %.3f" % (
                    name, k, len(v), pct(v, 50), pct(v, 90), pct(v, 99), pct(v, 50) / pct(data[base], 50),
                    pct(v, 99) / pct(data[base], 99)), flush=True)
    finally:
        for sp in sps.values():
            sp.cleanup()


if __name__ == "__main__":
    main()
