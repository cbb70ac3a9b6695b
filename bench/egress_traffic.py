#!/usr/bin/env python3
"""egress-traffic: what the egress gateway costs traffic, side by side with a direct
connection in the same run (issue 11's goals: added latency per connection p50 <= 0.5 ms,
p99 <= 2 ms; pass-through throughput >= 80 % of direct; 1000 concurrent connections).

An upstream HTTP server (space-egress-peer serve) runs in a network namespace this script
makes (10.251.N.2, never the internet; requests name it by address in Host, as a name
would be resolved by the gateway). The same static client runs on the host (the direct
path: host -> veth -> upstream) and inside a sandbox whose profile allows the upstream (the
gateway's path: sandbox -> nftables -> space-egress -> upstream), in alternating rounds so
that both see the same load. A throwaway spaced (the integration harness) is started here
and removed afterwards, with the namespace and its link.

Usage: sudo bench/egress_traffic.py [--rounds R] [-n N] [--mb M] [--concurrent C] [--json FILE]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from spaced_harness import Spaced  # noqa: E402

PEER = os.environ.get("SPACE_EGRESS_PEER", os.path.join(REPO, "build", "bench", "space-egress-peer"))


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


def run(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


class Upstream:
    def __init__(self):
        self.n = random.randint(10, 240)
        tag = "%04x" % random.randint(0, 0xffff)
        self.netns, self.link = "spb-eg-" + tag, "spbeg" + tag
        self.addr = "10.251.%d.2" % self.n
        self.proc = None

    def start(self):
        run("ip", "netns", "add", self.netns)
        run("ip", "link", "add", self.link, "type", "veth", "peer", "name", "up0", "netns", self.netns)
        run("ip", "addr", "add", "10.251.%d.1/24" % self.n, "dev", self.link)
        run("ip", "link", "set", self.link, "up")
        run("ip", "-n", self.netns, "addr", "add", self.addr + "/24", "dev", "up0")
        run("ip", "-n", self.netns, "link", "set", "up0", "up")
        run("ip", "-n", self.netns, "link", "set", "lo", "up")
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.netns, PEER, "serve", "80"], stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the upstream did not start")
        return self

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
        run("ip", "link", "del", self.link, check=False)
        run("ip", "netns", "del", self.netns, check=False)


def direct(*args):
    r = run(PEER, *args)
    return r.stdout.split("\n")


def through(sp, sid, *args):
    r = sp.exec(sid, cmd=["/tmp/space-egress-peer"] + list(args), timeout_s=300)
    if r["exit_code"] != 0:
        raise RuntimeError("the client in the sandbox failed: %r" % r)
    return r["stdout"].split("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("-n", type=int, default=200, help="connections per round and path (latency)")
    ap.add_argument("--mb", type=int, default=256, help="bytes of one fetch (throughput), MiB")
    ap.add_argument("--concurrent", type=int, default=1000)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not os.access(PEER, os.X_OK):
        sys.exit("build first: %s is missing" % PEER)
    tmp = tempfile.mkdtemp(prefix="spb-egress-")
    up = Upstream().start()
    profiles = os.path.join(tmp, "profiles.json")
    with open(profiles, "w") as f:
        json.dump({"profiles": {"bench": {"default": "deny", "rules": [{"allow": up.addr + "/32"}]}}}, f)
    sp = Spaced(extra_args=["--egress-profiles", profiles, "--egress-subnet", "10.205.%d.0/24" % up.n])
    lat = {"direct": [], "gateway": []}
    mbps = {"direct": [], "gateway": []}
    conc = {"direct": [], "gateway": []}
    try:
        sp.start()
        sid = sp.create(network={"profile": "bench"})
        with open(PEER, "rb") as f:
            sp.put_file(sid, "/tmp/space-egress-peer", f.read(), mode="0755")
        host = NAME = up.addr  # the Host header names the address: the gateway resolves a name it is given
        for path in ("direct", "gateway"):  # warm-up: caches, the gateway's first connection
            (direct if path == "direct" else lambda *a: through(sp, sid, *a))("latency", host, "80", NAME, "20")
        size = args.mb << 20
        for r in range(args.rounds):
            for path in ("direct", "gateway") if r % 2 == 0 else ("gateway", "direct"):
                call = direct if path == "direct" else (lambda *a: through(sp, sid, *a))
                lat[path] += [int(x) / 1000.0 for x in call("latency", host, "80", NAME, str(args.n)) if x.strip()]
                got, us = call("fetch", host, "80", NAME, str(size))[0].split()
                mbps[path].append(int(got) / (int(us) / 1e6) / (1 << 20))
                ok, us = call("concurrent", host, "80", NAME, str(args.concurrent))[0].split()
                conc[path].append((int(ok), int(us) / 1000.0))
        sp.destroy(sid)
    finally:
        sp.cleanup()
        up.stop()
    rep = {}
    for path in ("direct", "gateway"):
        rep[path] = {
            "connections": len(lat[path]),
            "latency_ms": {"p50": pct(lat[path], 50), "p99": pct(lat[path], 99)},
            "fetch_mib_s": {"p50": pct(mbps[path], 50), "min": min(mbps[path])},
            "concurrent": {"ok_min": min(o for o, _ in conc[path]), "ms_p50": pct([t for _, t in conc[path]], 50)},
        }
    rep["added_latency_ms"] = {p: rep["gateway"]["latency_ms"][p] - rep["direct"]["latency_ms"][p] for p in ("p50", "p99")}
    rep["throughput_ratio"] = rep["gateway"]["fetch_mib_s"]["p50"] / rep["direct"]["fetch_mib_s"]["p50"]
    print("egress traffic, %d rounds, direct and through the gateway alternating" % args.rounds)
    print("%-8s %12s %12s %14s %22s" % ("path", "conn p50 ms", "conn p99 ms", "fetch MiB/s", "%d at once: ok, p50 ms" % args.concurrent))
    for path in ("direct", "gateway"):
        x = rep[path]
        print("%-8s %12.3f %12.3f %14.1f %14d %7.1f" % (path, x["latency_ms"]["p50"], x["latency_ms"]["p99"], x["fetch_mib_s"]["p50"],
                                                   x["concurrent"]["ok_min"], x["concurrent"]["ms_p50"]))
    print("added per connection: p50 %.3f ms, p99 %.3f ms; throughput gateway/direct %.3f" % (
        rep["added_latency_ms"]["p50"], rep["added_latency_ms"]["p99"], rep["throughput_ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rep, f, indent=1)


if __name__ == "__main__":
    main()
