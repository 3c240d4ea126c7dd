#!/usr/bin/env bash
# Runs a private containerd for drover under $DROVER_HOME/containerd (default
# .drover/containerd): its own root, state, socket and config, no CRI plugin, so the
# system's containerd (if any) is not disturbed. Cells use their own namespaces in it.
#   scripts/containerd.sh start    # start (if not running) and wait for the socket
#   scripts/containerd.sh stop
#   scripts/containerd.sh socket   # print the socket path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${DROVER_HOME:-$root/.drover}
dir=$home/containerd
sock=$dir/containerd.sock
pidfile=$dir/containerd.pid

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start() {
  command -v containerd >/dev/null || { echo "containerd is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir/root" "$dir/state"
  if running && [ -S "$sock" ]; then echo "$sock"; return; fi
  cat > "$dir/config.toml" <<CONF
version = 2
root = "$dir/root"
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
  running || return 0
  local pid; pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  socket) echo "$sock" ;;
  *) echo "usage: $0 start|stop|socket" >&2; exit 2 ;;
esac
