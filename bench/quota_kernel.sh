#!/usr/bin/env bash
# quota_kernel.sh: what btrfs simple quotas cost the kernel work under spaced's snapshot
# and delete, without spaced: on two fresh loop-mounted btrfs images side by side (quotas
# on as spaced sets them — squota, qgroup 1/1 over the source subvolume — and off), N rounds
# alternating between them of: one write into the source, a read-only snapshot (timed), and
# at the end, one setting after the other, the deletion of every snapshot (each timed) and
# the time from the first delete until the cleaner has really dropped them all (`btrfs
# subvolume sync`). Times are bash's $EPOCHREALTIME around one
# `btrfs` command each (its fork+exec is in every figure, equally). Prints p50/p99 per
# measure and setting and the on/off ratio.
#
#   bench/quota_kernel.sh [-n N] [--data-mb MB] [--files N]
set -euo pipefail
N=100
DATA_MB=256
FILES=5000
while [ $# -gt 0 ]; do
  case $1 in
    -n) N=$2; shift 2 ;;
    --data-mb) DATA_MB=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    *) echo "quota_kernel.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "quota_kernel.sh: run as root" >&2; exit 1; }
WORK=$(mktemp -d /tmp/quota-kernel.XXXXXX)
cleanup() {
  set +e
  for m in on off; do mountpoint -q "$WORK/$m" && umount "$WORK/$m"; done
  rm -rf "$WORK"
}
trap cleanup EXIT
QCTL=$(mktemp "$WORK/qctl.XXXXXX.py")
cat >"$QCTL" <<'PY'
import fcntl, os, struct, sys
def ioc(d, nr, size): return (d << 30) | (size << 16) | (0x94 << 8) | nr
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.ioctl(fd, ioc(3, 40, 16), bytearray(struct.pack("QQ", 4, 0)))  # QUOTA_CTL: enable simple quotas
group = (1 << 48) | 1
fcntl.ioctl(fd, ioc(1, 42, 16), bytearray(struct.pack("QQ", 1, group)))  # QGROUP_CREATE 1/1
fcntl.ioctl(fd, ioc(1, 41, 24), bytearray(struct.pack("QQQ", 1, int(sys.argv[2]), group)))  # ASSIGN
fcntl.ioctl(fd, ioc(2, 43, 48), bytearray(struct.pack("QQQQQQ", int(sys.argv[2]), 2, 0, 10 << 30, 0, 0)))  # LIMIT
PY
for m in on off; do
  truncate -s 8G "$WORK/$m.img"
  mkfs.btrfs -q -f "$WORK/$m.img" >/dev/null
  mkdir -p "$WORK/$m"
  mount -o loop,noatime "$WORK/$m.img" "$WORK/$m"
  btrfs -q subvolume create "$WORK/$m/src" >/dev/null
  mkdir -p "$WORK/$m/snaps"
  [ $m = on ] && python3 "$QCTL" "$WORK/$m" "$(btrfs inspect-internal rootid "$WORK/$m/src")"
  head -c $((DATA_MB << 20)) /dev/urandom >"$WORK/$m/src/big"
  mkdir "$WORK/$m/src/files"
  (cd "$WORK/$m/src/files" && seq 1 "$FILES" | xargs touch)
  sync
done
now() { local t=${EPOCHREALTIME/./}; echo "${t}"; }
declare -A T
for i in $(seq "$N"); do
  for m in on off; do
    echo "$i" >"$WORK/$m/src/sample"
    dd if=/dev/urandom of="$WORK/$m/src/big" bs=1M count=1 seek=$((i % DATA_MB)) conv=notrunc status=none
    a=$(now); btrfs -q subvolume snapshot -r "$WORK/$m/src" "$WORK/$m/snaps/$i" >/dev/null; b=$(now)
    T[snap-$m]+="$((b - a)) "
  done
done
# One setting at a time (off first), so that neither cleaner has a head start on its work
# while the other's is timed: the deletes, then until the cleaner has dropped them all.
for m in off on; do
  s0=$(now)
  for i in $(seq "$N"); do
    a=$(now); btrfs -q subvolume delete "$WORK/$m/snaps/$i" >/dev/null; b=$(now)
    T[delete-$m]+="$((b - a)) "
  done
  btrfs -q subvolume sync "$WORK/$m" >/dev/null; b=$(now)
  T[sync-$m]="$((b - s0))"
done
[ -d "$WORK/on" ] && echo "quotas on: $(cat /sys/fs/btrfs/"$(findmnt -no UUID "$WORK/on")"/qgroups/mode 2>/dev/null || echo ?)"
python3 - "${T[snap-on]}" "${T[snap-off]}" "${T[delete-on]}" "${T[delete-off]}" "${T[sync-on]}" "${T[sync-off]}" "$N" <<'PY'
import sys
def pct(v, p):
    v = sorted(v); return v[max(0, min(len(v) - 1, int(round(p / 100 * len(v) + 0.5)) - 1))]
a = [[int(x) / 1000 for x in s.split()] for s in sys.argv[1:7]]
print("%-40s %9s %9s %9s %9s %7s %7s" % ("measure (ms), n=%s" % sys.argv[7], "p50 on", "p50 off", "p99 on", "p99 off", "p50 x", "p99 x"))
for name, on, off in (("snapshot -r (ioctl + fork/exec)", a[0], a[1]), ("subvolume delete", a[2], a[3])):
    print("%-40s %9.2f %9.2f %9.2f %9.2f %7.2f %7.2f" % (name, pct(on, 50), pct(off, 50), pct(on, 99), pct(off, 99),
          pct(on, 50) / pct(off, 50), pct(on, 99) / pct(off, 99)))
print("%-40s %9.2f %9.2f %29s" % ("first delete -> all %s gone (sync)" % sys.argv[7], a[4][0], a[5][0], "x %.2f" % (a[4][0] / a[5][0])))
PY
