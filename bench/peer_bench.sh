#!/usr/bin/env bash
# peer_bench.sh: the work space-bench times ("make an isolated environment from a busybox
# rootfs and run `true` in it"), done N times by the peers Debian ships, each run timed from
# the shell with $EPOCHREALTIME (no fork for the clock). Prints p50/p95/p99/max in ms.
#
#   bench/peer_bench.sh [-n N]        (root; needs bubblewrap, crun, busybox-static)
#
# The rootfs is the same content as space's busybox template: busybox-static, one symlink
# per applet (`busybox --install -s` in a chroot), the same directories and /etc files.
# Everything it makes lives in one temp dir, removed on exit.
set -euo pipefail
export LC_ALL=C # $EPOCHREALTIME with a '.' decimal point

N=100
WARMUP=3
PREFIX="space-peer-bench-$$"

# --- timing --------------------------------------------------------------------------------

# time_series OUTFILE N CMD...: runs CMD N times (after $WARMUP untimed runs), appends one
# line per run to OUTFILE: microseconds, or "err" when CMD failed.
time_series() {
  local out=$1 n=$2 i s e
  shift 2
  for ((i = 0; i < WARMUP; i++)); do "${@//@I@/w$i}" >/dev/null 2>&1 || true; done
  for ((i = 0; i < n; i++)); do
    s=$EPOCHREALTIME
    if "${@//@I@/$i}" >/dev/null 2>&1; then
      e=$EPOCHREALTIME
      echo $((${e/./} - ${s/./})) >>"$out"
    else
      echo err >>"$out"
    fi
  done
}

# summarize NAME FILE: one table row from a time_series file.
summarize() {
  local name=$1 file=$2
  { grep -v err "$file" || true; } | sort -n | awk -v name="$name" -v errors="$(grep -c err "$file" || true)" '
    { v[NR] = $1 / 1000.0; sum += v[NR] }
    function pct(p,  r) { r = int((p * NR + 99) / 100); if (r < 1) r = 1; return v[r] }
    END {
      if (NR == 0) { printf "%-34s %6d %5d %8s\n", name, 0, errors, "(all runs failed)"; exit }
      printf "%-34s %6d %5d %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", name, NR, errors, v[1], sum / NR,
             pct(50), pct(95), pct(99), v[NR]
    }'
}

# --- the rootfs ----------------------------------------------------------------------------

make_rootfs() {
  local root=$1 busybox d
  busybox=$(command -v busybox || true)
  [ -x /bin/busybox ] && busybox=/bin/busybox
  if [ -z "$busybox" ] || ! "$busybox" --list-full >/dev/null 2>&1; then
    echo "peer_bench: busybox not found (apt-get install busybox-static)" >&2
    return 1
  fi
  for d in bin sbin usr usr/bin usr/sbin etc proc sys dev root home home/user var run mnt; do
    mkdir -p "$root/$d"
  done
  mkdir -m 1777 "$root/tmp" "$root/var/tmp"
  chown 1000:1000 "$root/home/user"
  cp "$busybox" "$root/bin/busybox"
  chmod 755 "$root/bin/busybox"
  chroot "$root" /bin/busybox --install -s
  printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
  printf 'NAME="space busybox"\nID=busybox\n' >"$root/etc/os-release"
}

# --- crun ----------------------------------------------------------------------------------

# make_bundle DIR ROOTFS [userns]: an OCI bundle running `true` read-only on ROOTFS. With
# "userns": a user namespace mapping 0 to host 100000 (65536 ids) and a cgroup with memory
# and pids limits, which is what a space sandbox has.
make_bundle() {
  local dir=$1 rootfs=$2 variant=${3:-}
  mkdir -p "$dir"
  (cd "$dir" && crun spec)
  local filter='.process.args = ["true"] | .process.terminal = false | .root.path = $rootfs | .root.readonly = true'
  if [ "$variant" = userns ]; then
    filter+=' | .linux.namespaces += [{"type": "user"}]
      | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
      | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
      | .linux.resources = {"memory": {"limit": 536870912}, "pids": {"limit": 256}}'
  fi
  jq --arg rootfs "$rootfs" "$filter" "$dir/config.json" >"$dir/config.json.new"
  mv "$dir/config.json.new" "$dir/config.json"
}

# Runs inside its own mount namespace (see crun_series): crun refuses hybrid cgroup hosts
# whose v2 hierarchy has any controller ("cgroups in hybrid mode not supported"); these
# machines have hugetlb there. Hiding that file from crun, in this namespace only, lets it
# run with the v1 controllers, as space does.
inner_crun() {
  local bundle=$1 n=$2 out=$3 controllers=/sys/fs/cgroup/unified/cgroup.controllers
  if [ -n "$(cat "$controllers" 2>/dev/null)" ]; then
    mount --bind /dev/null "$controllers"
  fi
  time_series "$out" "$n" crun run --bundle "$bundle" "$PREFIX-@I@"
}

crun_series() {
  local bundle=$1 n=$2 out=$3
  if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    PREFIX=$PREFIX unshare --mount --propagation private "$0" --inner-crun "$bundle" "$n" "$out"
  else
    inner_crun "$bundle" "$n" "$out"
  fi
}

# --- main ----------------------------------------------------------------------------------

if [ "${1:-}" = "--inner-crun" ]; then
  PREFIX=${PREFIX:-space-peer-bench}
  inner_crun "$2" "$3" "$4"
  exit 0
fi

while [ $# -gt 0 ]; do
  case $1 in
    -n) N=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "peer_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "peer_bench: run as root" >&2
  exit 1
fi

WORK=$(mktemp -d /tmp/space-peer-bench.XXXXXX)
chmod 755 "$WORK" # the user-namespaced runs (host uid 100000) must traverse it
cleanup() {
  local id
  if command -v crun >/dev/null; then
    for id in $(crun list -q 2>/dev/null | grep "^$PREFIX-" || true); do
      crun delete --force "$id" >/dev/null 2>&1 || true
    done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
make_rootfs "$WORK/rootfs"
ROOTFS=$WORK/rootfs

printf 'peer_bench: n=%s, %s cpus, kernel %s, rootfs %s (%s entries)\n\n' "$N" "$(nproc)" "$(uname -r)" \
  "$ROOTFS" "$(find "$ROOTFS" | wc -l)"
printf '%-34s %6s %5s %8s %8s %8s %8s %8s %8s\n' "peer (ms)" n err min mean p50 p95 p99 max

time_series "$WORK/host" "$N" /bin/true
summarize "host: fork+exec true (floor)" "$WORK/host"

time_series "$WORK/unshare" "$N" unshare --user --map-root-user --pid --fork --mount --net --ipc --uts \
  chroot "$ROOTFS" /bin/true
summarize "unshare -Upfmniu + chroot" "$WORK/unshare"

if command -v bwrap >/dev/null; then
  time_series "$WORK/bwrap" "$N" bwrap --unshare-all --die-with-parent --ro-bind "$ROOTFS" / true
  summarize "bwrap --unshare-all --ro-bind" "$WORK/bwrap"
  time_series "$WORK/bwrap-full" "$N" bwrap --unshare-all --die-with-parent --ro-bind "$ROOTFS" / \
    --proc /proc --dev /dev --tmpfs /tmp true
  summarize "  + --proc --dev --tmpfs /tmp" "$WORK/bwrap-full"
else
  echo "bwrap: not installed (apt-get install bubblewrap)"
fi

if command -v crun >/dev/null && command -v jq >/dev/null; then
  make_bundle "$WORK/crun" "$ROOTFS"
  crun_series "$WORK/crun" "$N" "$WORK/crun.times"
  summarize "crun run (root spec)" "$WORK/crun.times"
  make_bundle "$WORK/crun-userns" "$ROOTFS" userns
  crun_series "$WORK/crun-userns" "$N" "$WORK/crun-userns.times"
  summarize "  + user ns + memory/pids cgroup" "$WORK/crun-userns.times"
else
  echo "crun: not installed (apt-get install crun jq)"
fi
