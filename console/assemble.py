#!/usr/bin/env python3
"""Copies the console's files and its vendored xterm.js flat into OUTDIR (console/meson.build).

usage: assemble.py OUTDIR FILE... --vendor FILE...
A vendored file that is missing means `npm ci` has not run in console/ (scripts/build runs it)."""
import os
import shutil
import sys


def main():
    out, rest = sys.argv[1], sys.argv[2:]
    split = rest.index("--vendor")
    own, vendor = rest[:split], rest[split + 1:]
    for path in vendor:
        if not os.path.exists(path):
            sys.exit("console: %s is missing: run `npm ci` in console/ (scripts/build does)" % path)
    for path in own + vendor:
        shutil.copyfile(path, os.path.join(out, os.path.basename(path)))


main()
