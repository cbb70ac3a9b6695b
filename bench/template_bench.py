#!/usr/bin/env python3
"""template-bench: template builds and creation latency from large templates, measured
through the HTTP API of a throwaway spaced (started here on a temporary state directory
with the integration harness, and removed afterwards). See docs/benchmarks.md.

Measures (percentiles by nearest rank, ms unless said):
  1. cold build of the `debian` template (debootstrap), then of the `python` preset on it
     (empty layer cache: apt-get update + install in a build sandbox);
  2. warm rebuilds of a Spacefile FROM python with five steps (USER, COPY, three RUNs) where only the last RUN
     changes between builds (-n samples): the first three come from the layer cache;
  3. create -> first exec latency of sandboxes made from busybox (a few MB), python
     (~440 MB) and python plus a file of --big-mb MiB (-n samples each).

Usage: sudo bench/template_bench.py [-n N] [--big-mb M] [--json FILE]
Needs the Debian mirror (build sandboxes use slirp4netns).
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
from spaced_harness import Spaced  # noqa: E402


def pct(values, p):
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def summary(values):
    return {"n": len(values), "p50": pct(values, 50), "p90": pct(values, 90), "p99": pct(values, 99),
            "min": min(values), "max": max(values)}


def context(spacefile):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("Spacefile")
        info.size = len(spacefile)
        t.addfile(info, io.BytesIO(spacefile))
        data = b"requests==2.31.0\n"
        info = tarfile.TarInfo("requirements.txt")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build(sp, name, spacefile):
    t0 = time.monotonic()
    status, d = sp.request("POST", "/v1/templates?name=%s&wait=true&timeout_s=600" % name, raw=context(spacefile),
                           timeout=620)
    ms = (time.monotonic() - t0) * 1000
    if status != 200:
        raise SystemExit("build %s failed: %s %r" % (name, status, d))
    status, log = sp.request("GET", "/v1/templates/builds/%s/log" % d["operation"]["id"])
    return ms, log.decode() if isinstance(log, bytes) else str(log)


def preset(sp, name):
    t0 = time.monotonic()
    status, d = sp.request("POST", "/v1/templates/%s/build?wait=true&timeout_s=600" % name, timeout=620)
    if status != 200:
        raise SystemExit("build %s failed: %s %r" % (name, status, d))
    return (time.monotonic() - t0) * 1000


def create_latency(sp, template, n):
    create, first_exec, total = [], [], []
    for _ in range(n):
        t0 = time.monotonic()
        status, d = sp.request("POST", "/v1/sandboxes?wait=true", {"template": template})
        t1 = time.monotonic()
        if status != 200:
            raise SystemExit("create from %s: %s %r" % (template, status, d))
        sid = d["sandbox"]["id"]
        status, r = sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]})
        t2 = time.monotonic()
        if status != 200 or r["exit_code"] != 0:
            raise SystemExit("exec in %s: %s %r" % (sid, status, r))
        create.append((t1 - t0) * 1000)
        first_exec.append((t2 - t1) * 1000)
        total.append((t2 - t0) * 1000)
        sp.request("DELETE", "/v1/sandboxes/%s?wait=true" % sid)
    return {"create": summary(create), "first_exec": summary(first_exec), "total": summary(total)}


def du_mb(path):
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20, help="samples per latency measure and warm rebuilds [20]")
    ap.add_argument("--big-mb", type=int, default=2048, help="MiB of file data added for the large template [2048]")
    ap.add_argument("--json", help="also write the results as JSON to this file")
    a = ap.parse_args()
    sp = Spaced(extra_args=["--pool-size", "16G"])
    results = {}
    try:
        sp.start()
        results["debian_cold_ms"] = preset(sp, "debian")
        results["python_cold_ms"] = preset(sp, "python")
        print("cold build: debian %.1f s, python (on debian) %.1f s" % (results["debian_cold_ms"] / 1000,
                                                                      results["python_cold_ms"] / 1000), flush=True)
        base = (b"FROM python\nUSER root\nCOPY requirements.txt /app/\nRUN python3 -m venv /opt/venv\n"
                b"RUN echo step3 > /app/three\nRUN echo last-%d > /app/last\n")
        first_ms, _ = build(sp, "warm:0", base % 0)
        warm = []
        for i in range(1, a.n + 1):
            ms, log = build(sp, "warm:%d" % i, base % i)
            if log.count("CACHED") != 3:
                raise SystemExit("expected 3 cached steps:\n" + log)
            warm.append(ms)
        results["spacefile_first_build_ms"] = first_ms
        results["warm_rebuild_last_step_changed_ms"] = summary(warm)
        print("Spacefile FROM python, 5 steps: first build %.0f ms; rebuild with the last step changed: "
              "p50 %.0f p90 %.0f p99 %.0f ms (n=%d)" % (first_ms, pct(warm, 50), pct(warm, 90), pct(warm, 99), len(warm)),
              flush=True)
        big = b"FROM python\nUSER root\nRUN head -c %dM /dev/urandom > /big.bin\n" % a.big_mb
        results["big_build_ms"], _ = build(sp, "big:1", big)
        pool = os.path.join(sp.state_dir, "pool", "templates")
        sizes = {t: du_mb(os.path.join(pool, t)) for t in ("busybox", "python", "big:1")}
        results["template_mb"] = sizes
        for t in ("busybox", "python", "big:1"):
            results["create_" + t] = r = create_latency(sp, t, a.n)
            print("create -> first exec from %-8s (%5d MB): create p50 %.1f p90 %.1f p99 %.1f; total p50 %.1f p90 %.1f p99 %.1f ms"
                  % (t, sizes[t], r["create"]["p50"], r["create"]["p90"], r["create"]["p99"], r["total"]["p50"],
                     r["total"]["p90"], r["total"]["p99"]), flush=True)
    finally:
        sp.cleanup()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
