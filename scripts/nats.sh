#!/usr/bin/env bash
# Runs a private NATS server (Debian's nats-server) for drover under $DROVER_HOME/nats
# (default .drover/nats) with its own pid file and log, on 127.0.0.1:$DROVER_NATS_PORT
# (default 4222), no monitoring port, no JetStream.
#   scripts/nats.sh start   # start (if not running), wait until it accepts connections, print the URL
#   scripts/nats.sh stop
#   scripts/nats.sh url     # print the URL
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${DROVER_HOME:-$root/.drover}
port=${DROVER_NATS_PORT:-4222}
dir=$home/nats
pidfile=$dir/nats-server.pid
log=$dir/nats-server.log
url="nats://127.0.0.1:$port"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && grep -qa nats-server "/proc/$(cat "$pidfile")/cmdline"; }

# accepting reports whether the port answers with the NATS INFO line.
accepting() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && head -c 4 <&3" 2>/dev/null | grep -q INFO; }

start() {
  command -v nats-server >/dev/null || { echo "nats-server is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  if running && accepting; then echo "$url"; return; fi
  if ! running && accepting; then
    echo "127.0.0.1:$port is taken by another process (set DROVER_NATS_PORT)" >&2; exit 1
  fi
  setsid nats-server -a 127.0.0.1 -p "$port" -P "$pidfile" -l "$log" >/dev/null 2>&1 < /dev/null &
  local pid=$!
  for _ in $(seq 1 100); do
    if accepting; then echo "$url"; return; fi
    kill -0 "$pid" 2>/dev/null || { tail -20 "$log" >&2 || true; echo "nats-server exited" >&2; exit 1; }
    sleep 0.1
  done
  tail -20 "$log" >&2 || true
  echo "nats-server did not answer on 127.0.0.1:$port" >&2
  exit 1
}

stop() {
  running || { rm -f "$pidfile"; return 0; }
  local pid; pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "$url" ;;
  *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
