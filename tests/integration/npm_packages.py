"""The npm packages a test directory pins (its package.json and package-lock.json), installed
into its node_modules with `npm ci` when they are not there yet: tests/e2b (the E2B SDK) and
tests/console (playwright-core). Exits 77 (meson: skipped) only when the npm registry
cannot be reached; any other failure is a failure."""

import os
import shutil
import subprocess
import sys

SKIP = 77


def npm_install(here, packages, what, min_node=20):
    """Installs here's locked packages unless every one of packages is there already."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if not npm or not node:
        sys.exit("FAIL: node and npm are needed (scripts/install-deps installs them)")
    major = subprocess.run([node, "-p", "process.versions.node.split('.')[0]"], capture_output=True, text=True).stdout.strip()
    if not major.isdigit() or int(major) < min_node:
        sys.exit("FAIL: %s needs Node >= %d; this node is %s" % (what, min_node, major or "unknown"))
    if all(os.path.exists(os.path.join(here, "node_modules", p, "package.json")) for p in packages):
        return
    locked = os.path.exists(os.path.join(here, "package-lock.json"))
    r = subprocess.run([npm, "ci" if locked else "install", "--no-audit", "--no-fund"], cwd=here, capture_output=True,
                       text=True, timeout=600)
    if r.returncode == 0:
        return
    ping = subprocess.run([npm, "ping"], cwd=here, capture_output=True, text=True, timeout=120)
    if ping.returncode != 0:
        print("SKIP: the npm registry cannot be reached, so %s cannot be installed:\n%s" % (what, ping.stderr[-2000:]),
              flush=True)
        sys.exit(SKIP)
    sys.exit("FAIL: npm install failed:\n" + r.stdout[-2000:] + r.stderr[-4000:])
