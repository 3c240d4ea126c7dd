#!/usr/bin/env bash
# Runs a private PostgreSQL cluster for drover under $DROVER_HOME/postgres (default
# .drover/postgres) on its own port and socket dir, as the postgres user, without touching
# any system cluster.
#   scripts/postgres.sh start   # init if needed, start, create role and database "drover"
#   scripts/postgres.sh stop
#   scripts/postgres.sh url     # print the connection URL
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${DROVER_HOME:-$root/.drover}
port=${DROVER_PG_PORT:-54329}
data=$home/postgres/data
run=$home/postgres/run
log=$home/postgres/postgres.log
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
url="postgres://drover@127.0.0.1:$port/drover?sslmode=disable"

as_pg() { runuser -u postgres -- "$@"; }

start() {
  [ -x "$bin/pg_ctl" ] || { echo "postgresql is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$home/postgres" "$run"
  chown postgres:postgres "$home/postgres" "$run"
  chmod 755 "$home"
  if [ ! -s "$data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
    cat >> "$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$run'
max_connections = 300
shared_buffers = 256MB
fsync = on
synchronous_commit = on
CONF
  fi
  if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null
  fi
  local psql=("$bin/psql" -h "$run" -p "$port" -U postgres -v ON_ERROR_STOP=1 -qAt)
  as_pg "${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='drover'" | grep -q 1 ||
    as_pg "${psql[@]}" -c "CREATE ROLE drover LOGIN SUPERUSER"
  as_pg "${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='drover'" | grep -q 1 ||
    as_pg "${psql[@]}" -c "CREATE DATABASE drover OWNER drover"
  echo "$url"
}

stop() {
  [ -s "$data/PG_VERSION" ] || return 0
  as_pg "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "$url" ;;
  *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
