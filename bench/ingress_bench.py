#!/usr/bin/env python3
"""ingress-bench: a GET of a small file from busybox httpd inside a sandbox, through the v1
API's port proxy (/v1/sandboxes/{id}/ports/8080/…, a new connection each) against the same
GET made directly from inside the sandbox's network namespace (nsenter -n, the baseline:
what the server itself costs), in alternating batches of one run so both see the same
machine. See docs/benchmarks.md.

Usage: sudo bench/ingress_bench.py [GETS]   (default 500 of each)
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
os.environ["SPACE_CONTRACT"] = "off"  # the harness's response check is not what is measured
import spaced_harness  # noqa: E402

BATCH = 50
INSIDE = r"""
import http.client, json, sys, time
out = []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", 8080, timeout=30)
    c.request("GET", "/index.html")
    r = c.getresponse(); r.read(); c.close()
    assert r.status == 200
    out.append((time.perf_counter() - t0) * 1e6)
print(json.dumps(out))
"""


def pct(v, p):
    s = sorted(v)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    sp = spaced_harness.Spaced()
    try:
        sp.start()
        sid = sp.create()
        r = sp.sh(sid, "mkdir -p /www && echo hello > /www/index.html && httpd -p 127.0.0.1:8080 -h /www")
        assert r["exit_code"] == 0, r
        pid = spaced_harness.cgroup_pids(sid)[0]
        path = "/v1/sandboxes/%s/ports/8080/index.html" % sid
        auth = {"Authorization": "Bearer " + sp.key}
        direct, proxied = [], []
        while len(proxied) < n:
            k = min(BATCH, n - len(proxied))
            out = subprocess.run(["nsenter", "-t", str(pid), "-n", sys.executable, "-c", INSIDE, str(k)],
                                 capture_output=True, text=True, check=True).stdout
            direct += json.loads(out)
            for _ in range(k):
                t0 = time.perf_counter()
                c = http.client.HTTPConnection("127.0.0.1", sp.port, timeout=30)
                c.request("GET", path, headers=auth)
                resp = c.getresponse()
                resp.read()
                c.close()
                assert resp.status == 200
                proxied.append((time.perf_counter() - t0) * 1e6)
        print("ingress-bench: %d GETs each, new connection per GET, microseconds" % n)
        print("%-28s %8s %8s %8s %8s" % ("", "p50", "p90", "p99", "mean"))
        for name, v in (("direct (in the netns)", direct), ("through /v1/.../ports/8080", proxied)):
            print("%-28s %8.0f %8.0f %8.0f %8.0f" % (name, pct(v, 50), pct(v, 90), pct(v, 99), statistics.mean(v)))
        print("proxy adds at p50: %.0f us (x%.2f)" % (pct(proxied, 50) - pct(direct, 50), pct(proxied, 50) / pct(direct, 50)))
    finally:
        sp.cleanup()


if __name__ == "__main__":
    main()
