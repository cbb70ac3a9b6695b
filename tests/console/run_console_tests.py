#!/usr/bin/env python3
"""The web console's browser tests (docs/console.md): console_test.mjs drives Debian's
Chromium (/usr/bin/chromium, scripts/install-deps) with playwright-core (package.json,
installed with npm ci here at test time) against a real spaced serving /console.
Screenshots go to CONSOLE_ARTIFACTS (meson: <build>/console-artifacts). Exits 77 (meson:
skipped) only when not root or when the npm registry cannot be reached."""

import io
import os
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import spaced_harness as h  # noqa: E402
from npm_packages import npm_install  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

# A build whose log the templates page shows while it runs: five lines a second apart.
SPACEFILE = b"FROM busybox\nRUN for i in 1 2 3 4 5; do echo build-line-$i; sleep 1; done\n"


def build_context(path):
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("Spacefile")
        info.size = len(SPACEFILE)
        tar.addfile(info, io.BytesIO(SPACEFILE))


def main():
    if os.geteuid() != 0:
        print("SKIP: the console tests need root (they run spaced)", flush=True)
        sys.exit(77)
    for p in (h.SPACED, h.SPACE_AGENT):
        if not os.access(p, os.X_OK):
            sys.exit("FAIL: binary missing: %s (build first)" % p)
    if not os.access(CHROMIUM, os.X_OK):
        sys.exit("FAIL: %s is missing (scripts/install-deps installs chromium)" % CHROMIUM)
    npm_install(HERE, ["playwright-core"], "playwright-core")
    artifacts = os.environ.get("CONSOLE_ARTIFACTS") or os.path.join(h.REPO, "build", "console-artifacts")
    d = h.Spaced()
    ok = False
    try:
        d.start()
        status, viewer = d.request("POST", "/v1/keys", {"name": "console-viewer", "role": "viewer"})
        if status != 201:
            sys.exit("FAIL: viewer key: %s %r" % (status, viewer))
        context = os.path.join(d.tmp, "console-build.tar")
        build_context(context)
        env = dict(os.environ, SPACE_URL=d.url, SPACE_ADMIN_KEY=d.key, SPACE_VIEWER_KEY=viewer["secret"],
                   CONSOLE_ARTIFACTS=artifacts, CHROMIUM=CHROMIUM, CONSOLE_BUILD_CONTEXT=context)
        r = subprocess.run(["node", os.path.join(HERE, "console_test.mjs")], cwd=HERE, env=env, timeout=900)
        ok = r.returncode == 0
    finally:
        if not ok:
            print(d.logs(tail=60), file=sys.stderr)
        d.cleanup()
    if not ok:
        sys.exit("FAIL: console browser tests (screenshots in %s)" % artifacts)
    print("PASS: console browser tests (screenshots in %s)" % artifacts)


if __name__ == "__main__":
    main()
