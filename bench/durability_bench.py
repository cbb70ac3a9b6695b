#!/usr/bin/env python3
"""durability-bench: what `--durability power` costs against `process`, side by side. Two
throwaway spaced (the integration harness: temporary state directories, free ports), one
per mode, started together; every measure alternates between them request by request, so
both see the same machine at the same moment. See docs/benchmarks.md.

Measures (ms, percentiles by nearest rank; ratio = power / process at p50 and p99):
  create   POST /v1/sandboxes?wait=true (busybox)
  snapshot POST /v1/sandboxes/{id}/snapshots?wait=true
  exec     POST /v1/sandboxes/{id}/exec `true`
  stream   a streamed command printing --stream-mb MiB in 8 KiB lines, read to its exit
           through the data plane (every record is fdatasync'ed before it is acknowledged
           in power mode)

Usage: sudo bench/durability_bench.py [-n N] [--exec-n N] [--stream-n N] [--stream-mb M] [--json FILE]
"""

import argparse
import base64
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))
from spaced_harness import Spaced  # noqa: E402


def pct(values, p):
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def ok(resp, status):
    if resp[0] != status:
        raise RuntimeError("expected %s, got %s %r" % (status, resp[0], resp[1]))
    return resp[1]


def stream_once(sp, sid, token, mb):
    script = "head -c %d /dev/zero | tr '\\0' x | fold -w 8192" % (mb << 20)
    c = ok(sp.request("POST", "/v1/sandboxes/%s/commands" % sid, {"shell": script}, key=token), 201)
    es = sp.events("/v1/sandboxes/%s/commands/%s/events" % (sid, c["command_id"]), key=token, timeout=300)
    got = 0
    try:
        for ev in es:
            if ev.get("event") == "stdout":
                got += len(base64.b64decode(json.loads(ev["data"])["data"]))
            elif ev.get("event") == "exit":
                if got < (mb << 20):
                    raise RuntimeError("the command printed %d bytes, not %d: %s" % (got, mb << 20, ev.get("data")))
                return
    finally:
        es.close()
    raise RuntimeError("stream ended without its exit")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=30, help="creates and snapshots per mode")
    ap.add_argument("--exec-n", type=int, default=300)
    ap.add_argument("--stream-n", type=int, default=5)
    ap.add_argument("--stream-mb", type=int, default=64)
    ap.add_argument("--json")
    a = ap.parse_args()
    modes = ("process", "power")
    sps = {m: Spaced(extra_args=["--durability", m]) for m in modes}
    results = {m: {"create": [], "snapshot": [], "exec": [], "stream": []} for m in modes}
    try:
        for sp in sps.values():
            sp.start()
        sandboxes = {m: [] for m in modes}
        for _ in range(a.n):
            for m in modes:
                sp = sps[m]
                box = {}
                results[m]["create"].append(timed(lambda: box.update(
                    ok(sp.request("POST", "/v1/sandboxes?wait=true", {}), 200)["sandbox"])))
                sandboxes[m].append(box["id"])
        for i in range(a.n):
            for m in modes:
                sp, sid = sps[m], sandboxes[m][i]
                sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"shell": "echo %d > /f" % i})
                results[m]["snapshot"].append(timed(lambda: ok(
                    sp.request("POST", "/v1/sandboxes/%s/snapshots?wait=true" % sid, {"label": "b"}), 200)))
        for _ in range(a.exec_n):
            for m in modes:
                sp, sid = sps[m], sandboxes[m][0]
                results[m]["exec"].append(timed(lambda: ok(
                    sp.request("POST", "/v1/sandboxes/%s/exec" % sid, {"cmd": ["true"]}), 200)))
        tokens = {m: ok(sps[m].request("POST", "/v1/sandboxes/%s/sessions" % sandboxes[m][0], {}), 201)["attach_token"]
                  for m in modes}
        for _ in range(a.stream_n):
            for m in modes:
                results[m]["stream"].append(timed(lambda: stream_once(sps[m], sandboxes[m][0], tokens[m], a.stream_mb)))
    finally:
        for sp in sps.values():
            sp.cleanup()
    report = {}
    print("%-9s %-8s %6s %9s %9s %9s" % ("measure", "mode", "n", "p50", "p90", "p99"))
    for what in ("create", "snapshot", "exec", "stream"):
        for m in modes:
            v = results[m][what]
            report.setdefault(what, {})[m] = {"n": len(v), "p50": pct(v, 50), "p90": pct(v, 90), "p99": pct(v, 99)}
            print("%-9s %-8s %6d %9.2f %9.2f %9.2f" % (what, m, len(v), pct(v, 50), pct(v, 90), pct(v, 99)))
        p, q = report[what]["power"], report[what]["process"]
        print("%-9s %-8s %6s %9.2fx %19.2fx" % (what, "ratio", "", p["p50"] / q["p50"], p["p99"] / q["p99"]))
        if what == "stream":
            for m in modes:
                print("%-9s %-8s MB/s at p50: %.0f" % ("", m, a.stream_mb / (report[what][m]["p50"] / 1000.0)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
