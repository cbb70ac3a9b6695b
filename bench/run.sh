#!/usr/bin/env bash
# run.sh: the whole benchmark on this machine. Builds space, starts a throwaway spaced (temp
# state dir, free loopback port), runs space-bench against it and bench/peer_bench.sh, then
# stops spaced and removes everything it made: the sandboxes' processes and cgroups, the
# btrfs pool mount and its loop device, the state dir. See docs/benchmarks.md.
#
#   bench/run.sh [--out DIR] [--workers N] [--pool-size SIZE] [--peer-n N] [--no-peers] [--no-build]
#                [--no-isolate] [--spaced-arg ARG]... [-- SPACE_BENCH_ARGS...]
#
# Defaults: space-bench -n 100 -c 10 --exec-n 1000 --density 200; peers -n 200.
# --out DIR keeps space-bench's text and JSON reports, the peers' table and spaced's log.
# --spaced-arg ARG is passed on to spaced (repeat it; e.g. --spaced-arg --disk-quota=off).
# --pool-size: spaced's btrfs pool image [2G]; the history measures with 1 GiB of files want 8G,
# and so do 1000 snapshots of the storage measure (~1 GiB of kept data):
#   bench/run.sh --no-peers --pool-size 8G -- --only history,storage --storage-n 1000
# space-bench always gets --pool <state-dir>/pool (for the storage measure's usage figures).
#
# Isolation (default on hybrid/v1 hosts): spaced runs in its own mount and cgroup namespaces,
# rooted at a private cgroup (space-bench.XXXXXX under the current cgroup of each hierarchy).
# spaced keeps its sandboxes' cgroups under <hierarchy>/space/<instance>/ and only reconciles
# its own instance, but the private namespaces still keep the measured spaced apart from the
# others on a shared machine (and from spaced versions before instance-scoped cgroups, which
# removed every <hierarchy>/space/<id> they did not know). --no-isolate runs spaced plainly,
# as `scripts/up` does.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=""
WORKERS=4
POOL_SIZE=2G
PEER_N=200
PEERS=1
BUILD=1
ISOLATE=1
BENCH_ARGS=(-n 100 -c 10 --exec-n 1000 --density 200)
SPACED_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --pool-size) POOL_SIZE=$2; shift 2 ;;
    --peer-n) PEER_N=$2; shift 2 ;;
    --no-peers) PEERS=0; shift ;;
    --no-build) BUILD=0; shift ;;
    --no-isolate) ISOLATE=0; shift ;;
    --spaced-arg) SPACED_ARGS+=("$2"); shift 2 ;;
    --) shift; BENCH_ARGS=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (space-bench arguments go after --)" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "run.sh: run as root (spaced creates namespaces, cgroups and a btrfs pool)" >&2
  exit 1
fi
[ "$BUILD" = 1 ] && ./scripts/build
SPACED=$PWD/build/src/spaced/spaced
AGENT=$PWD/build/src/space_agent/space-agent
BENCH=${SPACE_BENCH:-$PWD/build/bench/space-bench} # e.g. a sanitizer build

STATE=$(mktemp -d /tmp/space-bench.XXXXXX)
SPACED_PID=""
HOLDER_PID=""   # anchors the private namespaces (isolated mode)
CG_DIRS=()      # host paths of our private cgroups (isolated mode)
IN_NS=()        # command prefix that enters those namespaces
[ -n "$OUT" ] && mkdir -p "$OUT"

# A port no socket uses, below the kernel's ephemeral range: a port of that range may be taken
# at any moment as the local end of some outgoing connection, and then spaced cannot listen on
# it ("in use?"; 2 of 10 runs on a busy machine).
free_port() {
  local port lo=20000 hi
  read -r hi _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || hi=32768
  [ "$hi" -gt $((lo + 1000)) ] || { lo=$(( hi > 11000 ? hi - 10000 : 1024 )); }
  for _ in $(seq 100); do
    port=$((lo + RANDOM % (hi - lo)))
    if [ -z "$(ss -Htan "sport = :$port" 2>/dev/null)" ]; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# --- isolation -----------------------------------------------------------------------------

# Prints "mountpoint fstype options" for every cgroup hierarchy mounted under /sys/fs/cgroup;
# options are the super options without rw (the v1 controller list, or name=...).
cgroup_mounts() {
  awk '{ for (i = 7; $i != "-"; i++); fs = $(i + 1); opts = $(i + 3)
         if ((fs == "cgroup" || fs == "cgroup2") && $5 ~ "^/sys/fs/cgroup/") {
           gsub(/(^|,)rw(,|$)/, ",", opts); gsub(/^,|,$/, "", opts); print $5, fs, (opts == "" ? "-" : opts) } }' \
    /proc/self/mountinfo
}

# This process's cgroup in the hierarchy with these options (v1) or in the v2 one.
current_cgroup() {
  local fs=$1 opts=$2 line ctrls
  while IFS= read -r line; do
    ctrls=${line#*:}
    ctrls=${ctrls%%:*}
    if [ "$fs" = cgroup2 ] && [ -z "$ctrls" ]; then echo "${line#*::}"; return; fi
    if [ "$fs" = cgroup ] && [ -n "$ctrls" ] && [[ ",$opts," == *",$ctrls,"* || ",$ctrls," == *",$opts,"* ]]; then
      echo "${line#*:*:}"
      return
    fi
  done </proc/self/cgroup
  echo /
}

setup_isolation() {
  local name mp fs opts cur dir remount="" i=0
  name=$(basename "$STATE")
  while read -r mp fs opts; do
    cur=$(current_cgroup "$fs" "$opts")
    dir="$mp${cur%/}/$name"
    mkdir "$dir"
    CG_DIRS+=("$dir")
    if [ -f "$dir/cpuset.cpus" ]; then # a v1 cpuset cgroup takes no task before it has cpus and mems
      cat "$(dirname "$dir")/cpuset.cpus" >"$dir/cpuset.cpus"
      cat "$(dirname "$dir")/cpuset.mems" >"$dir/cpuset.mems"
    fi
    if [ "$fs" = cgroup2 ]; then
      remount+="umount '$mp' && mount -t cgroup2 cgroup2 '$mp' && "
    else
      remount+="umount '$mp' && mount -t cgroup -o '$opts' cgroup '$mp' && "
    fi
    i=$((i + 1))
  done < <(cgroup_mounts)
  [ "$i" -gt 0 ] || { echo "run.sh: no cgroup hierarchy under /sys/fs/cgroup" >&2; return 1; }
  # The holder joins our cgroups, then makes the namespaces: their cgroup root is ours, and
  # /sys/fs/cgroup/* remounted inside shows only our subtree.
  bash -c 'ready=$1 remount=$2; shift 2
           for d in "$@"; do echo $$ >"$d/cgroup.procs"; done
           exec unshare --cgroup --mount --propagation private -- \
             bash -c "$remount touch \"\$0\" && exec sleep infinity" "$ready"' \
    holder "$STATE/ns-ready" "$remount" "${CG_DIRS[@]}" &
  HOLDER_PID=$!
  for _ in $(seq 100); do [ -f "$STATE/ns-ready" ] && break; sleep 0.05; done
  [ -f "$STATE/ns-ready" ] || { echo "run.sh: could not set up the private namespaces" >&2; return 1; }
  IN_NS=(nsenter -t "$HOLDER_PID" -m -C --)
}

# --- clean-up ------------------------------------------------------------------------------

# Sandbox ids this spaced made: its rootfs subvolumes and run dirs.
our_sandboxes() {
  local p
  for p in "$STATE"/pool/sandboxes/sb-* "$STATE"/run/sb-*; do
    [ -e "$p" ] && basename "$p"
  done | sort -u
}

# spaced's instance name: its sandboxes' cgroups are <hierarchy>/space/<instance>/<id>.
instance() { cat "$STATE/instance" 2>/dev/null || true; }

kill_cgroup_tree() { # kills every process in the cgroups under $1 (inclusive)
  local f pid
  # A frozen task (a snapshot cut short) dies only once thawed.
  find "$1" -name freezer.state 2>/dev/null | while read -r f; do echo THAWED >"$f" 2>/dev/null; done
  find "$1" -name cgroup.freeze 2>/dev/null | while read -r f; do echo 0 >"$f" 2>/dev/null; done
  find "$1" -name cgroup.procs 2>/dev/null | while read -r f; do
    for pid in $(cat "$f" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  done
}

cleanup() {
  local id dir loops inst
  set +e
  if [ -n "$SPACED_PID" ] && kill -0 "$SPACED_PID" 2>/dev/null; then
    kill -TERM "$SPACED_PID"
    for _ in $(seq 100); do kill -0 "$SPACED_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SPACED_PID" 2>/dev/null && kill -KILL "$SPACED_PID"
    wait "$SPACED_PID" 2>/dev/null
  fi
  [ -n "$OUT" ] && cp "$STATE/spaced.log" "$OUT/spaced.log" 2>/dev/null
  # Sandboxes outlive spaced: kill what is left in our sandboxes' cgroups, then remove them.
  if [ "$ISOLATE" = 1 ]; then
    for dir in "${CG_DIRS[@]}"; do [ -d "$dir/space" ] && kill_cgroup_tree "$dir/space"; done
  else
    inst=$(instance)
    for id in $(our_sandboxes); do
      for dir in /sys/fs/cgroup/*/space/${inst:+$inst/}"$id"; do [ -d "$dir" ] && kill_cgroup_tree "$dir"; done
      for _ in $(seq 50); do
        for dir in /sys/fs/cgroup/*/space/${inst:+$inst/}"$id"; do
          [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        ls -d /sys/fs/cgroup/*/space/${inst:+$inst/}"$id" >/dev/null 2>&1 || break
        sleep 0.1
      done
      ls -d /sys/fs/cgroup/*/space/${inst:+$inst/}"$id" 2>/dev/null | sed 's/^/run.sh: could not remove cgroup /' >&2
    done
    if [ -n "$inst" ]; then # the instance's own level, once empty
      for dir in /sys/fs/cgroup/*/space/"$inst"; do [ -d "$dir" ] && rmdir "$dir" 2>/dev/null; done
    fi
  fi
  # The pool: mounted in the private mount namespace when isolated.
  loops=$(losetup -j "$STATE/pool.img" -O NAME -n 2>/dev/null)
  "${IN_NS[@]}" sh -c "mountpoint -q '$STATE/pool' && { umount '$STATE/pool' || umount -l '$STATE/pool'; }"
  if [ -n "$HOLDER_PID" ]; then
    kill -KILL "$HOLDER_PID" 2>/dev/null
    wait "$HOLDER_PID" 2>/dev/null
    for dir in "${CG_DIRS[@]}"; do
      for _ in $(seq 50); do
        find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
        [ -d "$dir" ] || break
        sleep 0.1
      done
      [ -d "$dir" ] && echo "run.sh: could not remove cgroup $dir" >&2
    done
  fi
  for dev in $loops; do losetup -d "$dev" 2>/dev/null; done
  rm -rf "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- run -----------------------------------------------------------------------------------

if [ "$ISOLATE" = 1 ] && [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  # Pure v2 would need spaced in a leaf of its own beside space/ (no internal processes);
  # not done yet.
  echo "run.sh: pure cgroup v2 host: running spaced without isolation" >&2
  ISOLATE=0
fi
[ "$ISOLATE" = 1 ] && setup_isolation
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
# In isolated mode spaced first joins the root of its cgroup namespace (our private cgroup).
"${IN_NS[@]}" bash -c 'if [ "$1" = 1 ]; then for f in /sys/fs/cgroup/*/cgroup.procs; do echo $$ >"$f"; done; fi; exec "${@:2}"' \
  spaced "$ISOLATE" "$SPACED" --state-dir "$STATE" --listen "127.0.0.1:$PORT" --pool-size "$POOL_SIZE" --agent "$AGENT" \
  --workers "$WORKERS" --log-level warn ${SPACED_ARGS[@]+"${SPACED_ARGS[@]}"} >"$STATE/spaced.log" 2>&1 &
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

echo "run.sh: spaced pid $SPACED_PID on $URL (workers $WORKERS, pool $POOL_SIZE, isolated: $ISOLATE), state $STATE" >&2
echo "+ space-bench --url $URL --key-file $STATE/admin.key --spaced-pid $SPACED_PID --pool $STATE/pool ${BENCH_ARGS[*]}" >&2
BENCH_CMD=("${IN_NS[@]}" "$BENCH" --url "$URL" --key-file "$STATE/admin.key" --spaced-pid "$SPACED_PID" --pool "$STATE/pool")
status=0
if [ -n "$OUT" ]; then
  "${BENCH_CMD[@]}" --json-file "$OUT/space-bench.json" "${BENCH_ARGS[@]}" | tee "$OUT/space-bench.txt" || status=$?
else
  "${BENCH_CMD[@]}" "${BENCH_ARGS[@]}" || status=$?
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
