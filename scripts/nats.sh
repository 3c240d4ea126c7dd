#!/usr/bin/env bash
# Runs a private NATS server (Debian's nats-server) for drover under $DROVER_HOME/nats
# (default .drover/nats) with its own pid file and log, on 127.0.0.1:$DROVER_NATS_PORT
# (default 4222), no monitoring port, no JetStream.
#
# Every client authenticates with a user and password; an unauthenticated connection is
# refused. Two users, each allowed only its side of the gorouter protocol (the same
# permissions as the tests' embedded server, devstack/natstest):
#   route-emitter  publishes router.register, router.unregister, router.greet;
#                  subscribes to router.start and its reply inbox (_INBOX.>)
#   router         subscribes to router.* ; publishes router.start and greet replies
# The passwords are generated once and kept, mode 0600, in $DROVER_HOME/nats/<user>.password;
# the server's configuration (nats-server.conf, 0600) holds them too. A server started
# without this configuration (an older version of this script) is restarted with it.
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
conf=$dir/nats-server.conf
url="nats://127.0.0.1:$port"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && grep -qa nats-server "/proc/$(cat "$pidfile")/cmdline"; }

# configured reports whether the running server was started with this configuration.
configured() { tr '\0' '\n' < "/proc/$(cat "$pidfile")/cmdline" | grep -qxF "$conf"; }

# accepting reports whether the port answers with the NATS INFO line.
accepting() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && head -c 4 <&3" 2>/dev/null | grep -q INFO; }

# ensure_secret writes a random password (48 hex digits) to $1, mode 0600, unless it has one.
ensure_secret() {
  [ -s "$1" ] && return 0
  (umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > "$1.tmp" && mv "$1.tmp" "$1")
}

# write_conf writes the server's configuration: address, files, users and permissions.
write_conf() {
  ensure_secret "$dir/route-emitter.password"
  ensure_secret "$dir/router.password"
  (umask 077 && cat > "$conf.tmp" <<CONF && mv "$conf.tmp" "$conf")
# Written by scripts/nats.sh.
listen: "127.0.0.1:$port"
pid_file: "$pidfile"
log_file: "$log"
authorization {
  users = [
    {
      user: "route-emitter"
      password: "$(cat "$dir/route-emitter.password")"
      permissions: {
        publish: ["router.register", "router.unregister", "router.greet"]
        subscribe: ["router.start", "_INBOX.>"]
      }
    }
    {
      user: "router"
      password: "$(cat "$dir/router.password")"
      permissions: {
        publish: ["router.start"]
        subscribe: ["router.*"]
        # 2: the server counts each delivery of a greet against it, and a router that
        # subscribes to both router.* and router.greet receives it twice.
        allow_responses: { max: 2, expires: "1m" }
      }
    }
  ]
}
CONF
}

start() {
  command -v nats-server >/dev/null || { echo "nats-server is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  write_conf
  if running && ! configured; then stop; fi # an older version's server, without users
  if running && accepting; then echo "$url"; return; fi
  if ! running && accepting; then
    echo "127.0.0.1:$port is taken by another process (set DROVER_NATS_PORT)" >&2; exit 1
  fi
  setsid nats-server -c "$conf" >/dev/null 2>&1 < /dev/null &
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
