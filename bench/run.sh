#!/usr/bin/env bash
# run.sh: the whole benchmark on this machine. Builds space, starts a throwaway spaced (temp
# state dir, free loopback port), runs space-bench against it and bench/peer_bench.sh, then
# stops spaced and removes everything it made: the sandboxes' cgroups and processes, the
# btrfs pool mount and its loop device, the state dir. See docs/benchmarks.md.
#
#   bench/run.sh [--out DIR] [--workers N] [--peer-n N] [--no-peers] [--no-build] [-- SPACE_BENCH_ARGS...]
#
# Defaults: space-bench -n 100 -c 10 --exec-n 1000 --density 200; peers -n 200.
# --out DIR keeps space-bench's text and JSON reports, the peers' table and spaced's log.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=""
WORKERS=4
PEER_N=200
PEERS=1
BUILD=1
BENCH_ARGS=(-n 100 -c 10 --exec-n 1000 --density 200)
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --peer-n) PEER_N=$2; shift 2 ;;
    --no-peers) PEERS=0; shift ;;
    --no-build) BUILD=0; shift ;;
    --) shift; BENCH_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (space-bench arguments go after --)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "run.sh: run as root (spaced creates namespaces, cgroups and a btrfs pool)" >&2
  exit 1
fi
[ "$BUILD" = 1 ] && ./scripts/build
SPACED=build/src/spaced/spaced
AGENT=build/src/space_agent/space-agent
BENCH=build/bench/space-bench

STATE=$(mktemp -d /tmp/space-bench.XXXXXX)
SPACED_PID=""
[ -n "$OUT" ] && mkdir -p "$OUT"

free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    if [ -z "$(ss -Htln "sport = :$port" 2>/dev/null)" ]; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# Sandbox ids this spaced made: its rootfs subvolumes and run dirs.
our_sandboxes() {
  ls "$STATE/pool/sandboxes" "$STATE/run" 2>/dev/null | grep '^sb-' | sort -u || true
}

cleanup() {
  local id dir pid loops
  set +e
  if [ -n "$SPACED_PID" ] && kill -0 "$SPACED_PID" 2>/dev/null; then
    kill -TERM "$SPACED_PID"
    for _ in $(seq 100); do kill -0 "$SPACED_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SPACED_PID" 2>/dev/null && kill -KILL "$SPACED_PID"
    wait "$SPACED_PID" 2>/dev/null
  fi
  [ -n "$OUT" ] && cp "$STATE/spaced.log" "$OUT/spaced.log" 2>/dev/null
  # Sandboxes outlive spaced: kill what is left in our sandboxes' cgroups, then remove them.
  for id in $(our_sandboxes); do
    for dir in /sys/fs/cgroup/*/space/"$id"; do
      [ -d "$dir" ] || continue
      for pid in $(cat "$dir/cgroup.procs" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    done
    for _ in $(seq 50); do
      for dir in /sys/fs/cgroup/*/space/"$id"; do [ -d "$dir" ] && rmdir "$dir" 2>/dev/null; done
      ls -d /sys/fs/cgroup/*/space/"$id" >/dev/null 2>&1 || break
      sleep 0.1
    done
    ls -d /sys/fs/cgroup/*/space/"$id" 2>/dev/null | sed 's/^/run.sh: could not remove cgroup /' >&2
  done
  if mountpoint -q "$STATE/pool"; then
    loops=$(losetup -j "$STATE/pool.img" -O NAME -n 2>/dev/null)
    umount "$STATE/pool" || umount -l "$STATE/pool"
    for dev in $loops; do losetup -d "$dev" 2>/dev/null; done
  fi
  rm -rf "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT=$(free_port)
URL=http://127.0.0.1:$PORT
"$SPACED" --state-dir "$STATE" --listen "127.0.0.1:$PORT" --pool-size 2G --agent "$AGENT" \
  --workers "$WORKERS" --log-level warn >"$STATE/spaced.log" 2>&1 &
SPACED_PID=$!

# Up, and the busybox template (built at start) ready.
ready=""
for _ in $(seq 300); do
  kill -0 "$SPACED_PID" 2>/dev/null || { echo "run.sh: spaced exited:" >&2; cat "$STATE/spaced.log" >&2; exit 1; }
  if [ -f "$STATE/admin.key" ] &&
    curl -sf -H "Authorization: Bearer $(cat "$STATE/admin.key")" "$URL/v1/templates/busybox" 2>/dev/null |
    grep -q '"state":"ready"'; then
    ready=1
    break
  fi
  sleep 0.2
done
[ -n "$ready" ] || { echo "run.sh: busybox template not ready after 60 s" >&2; cat "$STATE/spaced.log" >&2; exit 1; }

echo "run.sh: spaced pid $SPACED_PID on $URL (workers $WORKERS), state $STATE" >&2
echo "+ space-bench --url $URL --key-file $STATE/admin.key --spaced-pid $SPACED_PID ${BENCH_ARGS[*]}" >&2
status=0
if [ -n "$OUT" ]; then
  "$BENCH" --url "$URL" --key-file "$STATE/admin.key" --spaced-pid "$SPACED_PID" --json-file "$OUT/space-bench.json" \
    "${BENCH_ARGS[@]}" | tee "$OUT/space-bench.txt" || status=$?
else
  "$BENCH" --url "$URL" --key-file "$STATE/admin.key" --spaced-pid "$SPACED_PID" "${BENCH_ARGS[@]}" || status=$?
fi
[ "$status" = 0 ] || echo "run.sh: space-bench reported errors (exit $status)" >&2

if [ "$PEERS" = 1 ]; then
  echo >&2
  echo "+ bench/peer_bench.sh -n $PEER_N" >&2
  if [ -n "$OUT" ]; then
    bench/peer_bench.sh -n "$PEER_N" | tee "$OUT/peers.txt"
  else
    bench/peer_bench.sh -n "$PEER_N"
  fi
fi
exit "$status"
