#!/usr/bin/env python3
"""console-bench: the console's two figures of issue 18 (docs/benchmarks.md), in one run on
one throwaway spaced:
  - first render of the sandbox list with N sandboxes (default 1000: 20 running, the rest
    stopped, as a long-lived fleet of sessions is), against the API's own list answer
    fetched from the same page in the same round;
  - keystroke echo in the terminal (a key until the terminal paints it), against a bare
    one-byte POST to the same shell's stdin from the same page.
Needs what the console tests need: root, /usr/bin/chromium and tests/console/node_modules
(python3 tests/console/run_console_tests.py installs it).

Usage: sudo bench/console_bench.py [N]
"""

import concurrent.futures
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
os.environ["SPACE_CONTRACT"] = "off"  # the harness's response check is not what is measured
import spaced_harness  # noqa: E402

RUNNING = 20


def pct(v, p):
    s = sorted(v)
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def row(name, measured, base):
    m50, m99, b50, b99 = pct(measured, 50), pct(measured, 99), pct(base, 50), pct(base, 99)
    return "| %s | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f |" % (name, m50, m99, b50, b99, m50 / b50, m99 / b99)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    modules = os.path.join(REPO, "tests", "console", "node_modules")
    if not os.path.isdir(os.path.join(modules, "playwright-core")):
        sys.exit("console-bench: run python3 tests/console/run_console_tests.py once (it installs playwright-core)")
    sp = spaced_harness.Spaced()
    try:
        sp.start()

        def make(i):
            sid = sp.create(metadata={"bench": "console"})
            if i >= RUNNING:
                sp.action(sid, "stop")
            return sid

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            ids = list(pool.map(make, range(n)))
        shell = ids[0]
        status, session = sp.request("POST", "/v1/sandboxes/%s/sessions" % shell, {})
        assert status in (200, 201), (status, session)
        env = dict(os.environ, SPACE_URL=sp.url, SPACE_ADMIN_KEY=sp.key, CONSOLE_BENCH_SANDBOXES=str(n),
                   CONSOLE_BENCH_SANDBOX=shell, CONSOLE_BENCH_TOKEN=session["attach_token"],
                   CONSOLE_BENCH_MODULES=modules)
        r = subprocess.run(["node", os.path.join(HERE, "console_bench.mjs")], cwd=os.path.join(REPO, "tests", "console"),
                           env=env, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            sys.exit("console-bench: the browser half failed:\n" + r.stdout[-2000:] + r.stderr[-4000:])
        out = json.loads(r.stdout.strip().splitlines()[-1])
        print("| measure (ms) | console p50 / p99 | baseline p50 / p99 | ratio p50 | ratio p99 |")
        print("|---|---|---|---|---|")
        print(row("first render of %d sandboxes (n = %d) vs the API's list answer" % (n, len(out["render"]["page"])),
                  out["render"]["page"], out["render"]["api"]))
        print(row("keystroke echo in the terminal (n = %d) vs a one-byte stdin POST" % len(out["echo"]["terminal"]),
                  out["echo"]["terminal"], out["echo"]["stdin"]))
    finally:
        sp.cleanup()


if __name__ == "__main__":
    main()
