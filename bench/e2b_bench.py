#!/usr/bin/env python3
"""e2b_bench.py: bench/e2b_bench.mjs against a throwaway spaced with --e2b-listen.

Starts spaced on a temporary state directory (the integration tests' harness), makes an
E2B-form key with `space key create --e2b`, runs the Node measure once per SDK given (each
sample paired with the same through the v1 API, with the harness's admin key), and removes
everything it made. The SDKs come from tests/e2b/node_modules (installed by the E2B
tests; `npm ci` in tests/e2b otherwise). Run as root:

    bench/e2b_bench.py [-n 100] [--sdk e2b-latest] [--sdk e2b-2.14] [--json]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import spaced_harness as h  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--sdk", action="append")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sdks = a.sdk or ["e2b-latest"]
    if not os.path.isdir(os.path.join(REPO, "tests", "e2b", "node_modules")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=os.path.join(REPO, "tests", "e2b"), check=True)
    port = h.free_port()
    d = h.Spaced(extra_args=["--e2b-listen", "127.0.0.1:%d" % port, "--log-level", "info"])
    try:
        d.start()
        made = d.cli("--json", "key", "create", "--e2b", "e2b-bench")
        key = json.loads(made.stdout)["secret"]
        url = "http://127.0.0.1:%d" % port
        env = dict(os.environ, E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=key, SPACE_URL=d.url, SPACE_API_KEY=d.key)
        env.pop("E2B_DEBUG", None)
        for sdk in sdks:
            cmd = ["node", os.path.join(HERE, "e2b_bench.mjs"), "-n", str(a.n), "--sdk", sdk] + (["--json"] if a.json else [])
            r = subprocess.run(cmd, env=env)
            if r.returncode != 0:
                sys.exit(r.returncode)
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
