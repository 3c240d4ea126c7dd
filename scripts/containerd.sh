#!/usr/bin/env bash
# Runs a private containerd for drover under $DROVER_HOME/containerd (default
# .drover/containerd): its own root, state, socket and config, no CRI plugin, so the
# system's containerd (if any) is not disturbed. Cells use their own namespaces in it.
#   scripts/containerd.sh start    # start (if not running) and wait for the socket
#   scripts/containerd.sh stop     # stop it (containers live on) and unmount its btrfs
#   scripts/containerd.sh socket   # print the socket path
# Disk quotas: containerd's root (image layers and the containers' writable layers) is
# on a btrfs filesystem with quotas, in a sparse image file ($dir/fs.img, size
# DROVER_CONTAINERD_FS_SIZE, default 64G) loop-mounted at $dir/btrfs, so the executor can
# give each container a subvolume limited to its disk_mb (writes beyond it fail with
# EDQUOT). DROVER_CONTAINERD_FS=plain keeps the root on the host's filesystem (the
# executor then stops containers over their disk_mb by polling); so does any failure to
# set btrfs up, with a message saying why.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${DROVER_HOME:-$root/.drover}
dir=$home/containerd
sock=$dir/containerd.sock
pidfile=$dir/containerd.pid
fsmode=${DROVER_CONTAINERD_FS:-btrfs}
img=$dir/fs.img
mnt=$dir/btrfs
fs_size=${DROVER_CONTAINERD_FS_SIZE:-64G}

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
say() { echo "containerd.sh: $*" >&2; }

# mount_btrfs mounts the btrfs image with quotas enabled at $mnt (making the image
# first), or reuses the mount a former start left; it fails with a message when it
# cannot.
mount_btrfs() {
  local err
  if mountpoint -q "$mnt"; then
    [ "$(findmnt -no FSTYPE --mountpoint "$mnt")" = btrfs ] || { say "$mnt is mounted but is not btrfs"; return 1; }
  else
    command -v mkfs.btrfs >/dev/null && command -v btrfs >/dev/null ||
      { say "btrfs-progs is not installed (run scripts/install-deps.sh)"; return 1; }
    grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || true
    grep -qw btrfs /proc/filesystems || { say "the kernel has no btrfs"; return 1; }
    if [ ! -s "$img" ]; then
      rm -f "$img.tmp"
      if ! { truncate -s "$fs_size" "$img.tmp" && mkfs.btrfs -q "$img.tmp" >/dev/null; }; then
        rm -f "$img.tmp"; say "could not make a btrfs image of $fs_size at $img"; return 1
      fi
      mv "$img.tmp" "$img"
    fi
    mkdir -p "$mnt"
    err=$(mount -o loop,discard "$img" "$mnt" 2>&1) || { say "could not mount $img: $err"; return 1; }
  fi
  err=$(btrfs quota enable "$mnt" 2>&1) || { say "could not enable quotas on $mnt: $err"; return 1; }
}

# unmount_btrfs unmounts the btrfs and frees its loop device; containers still running
# keep it busy, and then it stays mounted for the next start.
unmount_btrfs() {
  mountpoint -q "$mnt" 2>/dev/null || return 0
  if umount "$mnt" 2>/dev/null; then
    local l
    for l in $(losetup -n -O NAME -j "$img" 2>/dev/null); do losetup -d "$l" 2>/dev/null || true; done
  else
    say "$mnt stays mounted: containers still use it (the next start reuses it)"
  fi
}

start() {
  command -v containerd >/dev/null || { echo "containerd is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir/root" "$dir/state"
  if running && [ -S "$sock" ]; then echo "$sock"; return; fi
  local croot=$dir/root
  case "$fsmode" in
    plain) ;;
    btrfs)
      if mount_btrfs; then
        croot=$mnt/root
        mkdir -p "$croot"
      else
        say "falling back to a plain root at $croot: disk_mb is enforced by polling, not by the filesystem (DROVER_CONTAINERD_FS=plain chooses this without a warning)"
      fi ;;
    *) say "DROVER_CONTAINERD_FS must be btrfs or plain, got '$fsmode'"; exit 2 ;;
  esac
  cat > "$dir/config.toml" <<CONF
version = 2
root = "$croot"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
CONF
  rm -f "$sock"
  setsid containerd --config "$dir/config.toml" >"$dir/containerd.log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 100); do
    if [ -S "$sock" ] && ctr --address "$sock" version >/dev/null 2>&1; then echo "$sock"; return; fi
    running || { tail -20 "$dir/containerd.log" >&2; echo "containerd exited" >&2; exit 1; }
    sleep 0.1
  done
  tail -20 "$dir/containerd.log" >&2
  echo "containerd did not answer on $sock" >&2
  exit 1
}

stop() {
  if running; then
    local pid; pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  fi
  unmount_btrfs
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  socket) echo "$sock" ;;
  *) echo "usage: $0 start|stop|socket" >&2; exit 2 ;;
esac
