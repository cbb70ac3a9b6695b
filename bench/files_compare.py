#!/usr/bin/env python3
"""files-compare: whole-file upload (PUT) and download (GET) through the v1 files API of two
(or more) spaced builds, side by side in one run, as compare_builds.py does for exec: each
build gets a throwaway spaced and one busybox sandbox, and every sample goes to the builds
in a fresh random order so all see the same machine at the same moment. The first build
named is the baseline of the ratios. Bodies are streamed from and to memory on keep-alive
connections with the sandbox's attach token; every download is checked byte for byte.
See docs/benchmarks.md ("Files: in-band bytes against passed descriptors").

Usage: sudo bench/files_compare.py ROUNDS SIZE_MIB[,SIZE_MIB...] NAME=BUILD_DIR NAME=BUILD_DIR ...
  e.g. bench/files_compare.py 20 1,100 base=/tmp/base/build new=build
FILES_BENCH_RESOURCES='{"cpus": 2}' gives the sandboxes those resources (default: the
template's). In-band, the agent copies the bytes inside the sandbox's cgroup, so its
cpu.max and memory.max (dirty-page throttling) bound a transfer.
"""

import hashlib
import http.client
import json
import os
import random
import statistics
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_builds import BuildSpaced, pct  # noqa: E402


class Target:
    def __init__(self, sp):
        self.sp = sp
        res = json.loads(os.environ.get("FILES_BENCH_RESOURCES", "null"))
        self.sid = sp.create(template="busybox", **({"resources": res} if res else {}))
        st, body = sp.request("POST", "/v1/sandboxes/%s/sessions" % self.sid, {})
        assert st in (200, 201), (st, body)
        self.token = body["attach_token"]
        self.conn = http.client.HTTPConnection("127.0.0.1", sp.port, timeout=300)

    def call(self, method, path, body=None):
        h = {"Authorization": "Bearer " + self.token}
        if body is not None:
            h["Content-Type"] = "application/octet-stream"
        self.conn.request(method, "/v1/sandboxes/%s/files?%s" % (self.sid, urllib.parse.urlencode({"path": path})),
                          body=body, headers=h)
        resp = self.conn.getresponse()
        data = resp.read()
        return resp.status, data


def main():
    rounds = int(sys.argv[1])
    sizes = [int(s) for s in sys.argv[2].split(",")]
    builds = dict(a.split("=", 1) for a in sys.argv[3:])
    sps = {k: BuildSpaced(v) for k, v in builds.items()}
    blobs = {m: os.urandom(m << 20) for m in sizes}
    digests = {m: hashlib.sha256(b).digest() for m, b in blobs.items()}
    times = {(k, m, op): [] for k in sps for m in sizes for op in ("upload", "download")}
    try:
        for sp in sps.values():
            sp.start()
        targets = {k: Target(sp) for k, sp in sps.items()}
        for _ in range(rounds):
            for m in sizes:
                order = list(sps)
                random.shuffle(order)
                for k in order:
                    t = targets[k]
                    path = "/root/bench-%d" % m
                    t0 = time.perf_counter()
                    st, _ = t.call("PUT", path, blobs[m])
                    t1 = time.perf_counter()
                    assert st == 201, (k, st)
                    st, data = t.call("GET", path)
                    t2 = time.perf_counter()
                    assert st == 200 and hashlib.sha256(data).digest() == digests[m], (k, st, len(data))
                    times[(k, m, "upload")].append((t1 - t0) * 1000)
                    times[(k, m, "download")].append((t2 - t1) * 1000)
        base = list(sps)[0]
        print("| measure | build | n | p50 (ms) | p95 (ms) | MiB/s at p50 | ratio p50 | ratio p95 |")
        print("|---|---|---|---|---|---|---|---|")
        for m in sizes:
            for op in ("upload", "download"):
                b = times[(base, m, op)]
                for k in sps:
                    v = times[(k, m, op)]
                    print("| %s %d MiB | %s | %d | %.2f | %.2f | %.0f | %.3f | %.3f |" % (
                        op, m, k, len(v), statistics.median(v), pct(v, 95), m / (statistics.median(v) / 1000),
                        statistics.median(v) / statistics.median(b), pct(v, 95) / pct(b, 95)))
    finally:
        for sp in sps.values():
            sp.cleanup()


if __name__ == "__main__":
    main()
