#!/usr/bin/env bash
# quota_bench.sh: the cost of disk quotas (btrfs simple quotas, docs/operating.md "Disk
# quotas") on what they can slow down — snapshot, snapshot delete, create and destroy —
# with quotas on and off side by side: bench/run.sh alternately with --disk-quota=on and
# =off, ROUNDS pairs, each on its own throwaway spaced and 8G pool. Prints one table of p50
# and p99 per measure and setting (the median over the rounds) and the on/off ratio.
#
#   bench/quota_bench.sh [--rounds N] [--out DIR] [-- SPACE_BENCH_ARGS...]
#
# SUMMARY_ONLY=1 prints the table of an earlier --out DIR without running anything.
# Default space-bench arguments: --only seq,history -n 100 -c 10 --history-n 100
# --history-sizes 1,256 --fork-count 1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=2
OUT=""
ARGS=(--only seq,history -n 100 -c 10 --history-n 100 --history-sizes 1,256 --fork-count 1)
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --) shift; ARGS=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "quota_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/quota-bench.XXXXXX)
mkdir -p "$OUT"
[ "${SUMMARY_ONLY:-0}" = 1 ] || ./scripts/build
for r in $( [ "${SUMMARY_ONLY:-0}" = 1 ] || seq "$ROUNDS"); do
  for q in on off; do
    echo "quota_bench.sh: round $r, quotas $q" >&2
    bench/run.sh --no-build --no-peers --pool-size 8G --out "$OUT/$q-$r" --spaced-arg "--disk-quota=$q" -- "${ARGS[@]}" \
      >"$OUT/$q-$r.txt" 2>&1 || echo "quota_bench.sh: round $r quotas $q reported errors (see $OUT/$q-$r.txt)" >&2
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import os, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
want = ("create", "destroy", "snapshot (wait=true)", "snapshot delete", "restore", "fork count=1")
rows = {}
for q in ("on", "off"):
    for r in range(1, rounds + 1):
        for line in open(os.path.join(out, "%s-%d.txt" % (q, r))):
            m = re.match(r"^(.*?)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*(\(.*\))?\s*$", line)
            if not m or not any(w in m.group(1) for w in want) or "pause" in m.group(1):
                continue
            rows.setdefault(m.group(1).strip(), {}).setdefault(q, []).append((float(m.group(6)), float(m.group(8))))
print("%-44s %10s %10s %10s %10s %8s %8s" % ("measure (ms; median of %d runs)" % rounds, "p50 on", "p50 off", "p99 on", "p99 off", "p50 x", "p99 x"))
for name, d in rows.items():
    if "on" not in d or "off" not in d:
        continue
    p50 = {q: statistics.median(v[0] for v in d[q]) for q in d}
    p99 = {q: statistics.median(v[1] for v in d[q]) for q in d}
    print("%-44s %10.2f %10.2f %10.2f %10.2f %8.2f %8.2f" % (name, p50["on"], p50["off"], p99["on"], p99["off"],
          p50["on"] / p50["off"] if p50["off"] else 0, p99["on"] / p99["off"] if p99["off"] else 0))
print("reports: %s" % out)
PY
