#!/usr/bin/env bash
# Runs a private PostgreSQL cluster for drover under $DROVER_HOME/postgres (default
# .drover/postgres) on its own port ($DROVER_PG_PORT, default 54329) and socket dir, as the
# postgres user, without touching any system cluster.
#
# Every connection authenticates with a password (SCRAM, pg_hba.conf), over TCP and the
# socket alike. The passwords are generated once and kept, mode 0600, next to the data:
#   admin.password    the superuser "postgres" (this script's own administration only)
#   drover.password   the role "drover": LOGIN, not a superuser, owner of the database
#                     "drover"; the BBS runs as it. For tests, which create and drop a
#                     database each, also CREATEDB and pg_signal_backend (see start)
#   pgpass            a libpq password file with the drover role's password, for psql and
#                     tests (PGPASSFILE, or passfile= in the URL)
# A cluster made by an older version of this script (trust, drover a superuser) is
# switched over by `start`: the passwords are set first, then pg_hba.conf is rewritten and
# reloaded, so the running cluster never has to stop.
#
#   scripts/postgres.sh start   # init if needed, start, ensure role and database "drover"; print the URL
#   scripts/postgres.sh stop
#   scripts/postgres.sh url     # print the connection URL (no password: see pgpass)
#   scripts/postgres.sh psql [ARGS]  # psql as drover on the database drover, with pgpass
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${DROVER_HOME:-$root/.drover}
port=${DROVER_PG_PORT:-54329}
dir=$home/postgres
data=$dir/data
run=$dir/run
log=$dir/postgres.log
admin_password=$dir/admin.password
drover_password=$dir/drover.password
pgpass=$dir/pgpass
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
url="postgres://drover@127.0.0.1:$port/drover?sslmode=disable"

as_pg() { runuser -u postgres -- "$@"; }

# hba is the cluster's whole pg_hba.conf: a password for every connection.
hba() {
  cat <<HBA
# Written by scripts/postgres.sh: every connection authenticates with a password (SCRAM).
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
HBA
}

# ensure_secret writes a random password (48 hex digits) to $1, mode 0600, unless it has one.
ensure_secret() {
  [ -s "$1" ] && return 0
  (umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > "$1.tmp" && mv "$1.tmp" "$1")
}

# admin_sql runs the SQL on stdin as the superuser over the socket. Passwords travel in
# the SQL on stdin and in the environment, never in a command line.
admin_sql() {
  PGPASSWORD=$(cat "$admin_password") "$bin/psql" -h "$run" -p "$port" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 -qAt -f -
}

start() {
  [ -x "$bin/pg_ctl" ] || { echo "postgresql is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir" "$run"
  chown postgres:postgres "$dir" "$run"
  chmod 755 "$home"
  # One start at a time (make up and test runs may start it together).
  exec 9>"$dir/start.lock"
  flock 9
  ensure_secret "$admin_password"
  chown postgres:postgres "$admin_password" # initdb, run as postgres, reads it
  ensure_secret "$drover_password"
  if [ ! -s "$data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$data" -U postgres --auth-local=scram-sha-256 --auth-host=scram-sha-256 \
      --pwfile="$admin_password" -E UTF8 >/dev/null
    hba > "$data/pg_hba.conf"
    cat >> "$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$run'
max_connections = 300
shared_buffers = 256MB
fsync = on
synchronous_commit = on
password_encryption = scram-sha-256
CONF
  fi
  if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    # 9>&-: the server must not inherit (and hold) the lock.
    as_pg "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null 9>&-
  fi
  local switch=false
  if ! hba | cmp -s - "$data/pg_hba.conf"; then
    # A cluster of an older version (trust): the superuser gets its password while no
    # password is needed yet.
    switch=true
    admin_sql <<SQL || { echo "postgres: cannot log in as the superuser with $admin_password (make clean starts afresh)" >&2; exit 1; }
ALTER ROLE postgres PASSWORD '$(cat "$admin_password")';
SQL
  fi
  # The BBS's role: not a superuser, owner of its database. For tests, which create and
  # drop a database each (a production role needs neither): CREATEDB, and
  # pg_signal_backend, without which DROP DATABASE ... WITH (FORCE) fails when an
  # autovacuum worker is in the database. Re-applied at every start, which also demotes
  # the superuser role of older versions.
  admin_sql <<SQL
SET client_min_messages = warning;
SELECT 'CREATE ROLE drover' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'drover') \gexec
ALTER ROLE drover LOGIN NOSUPERUSER CREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '$(cat "$drover_password")';
GRANT pg_signal_backend TO drover;
SELECT 'CREATE DATABASE drover OWNER drover' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'drover') \gexec
ALTER DATABASE drover OWNER TO drover;
SQL
  (umask 077 && echo "*:$port:*:drover:$(cat "$drover_password")" > "$pgpass.tmp" && mv "$pgpass.tmp" "$pgpass")
  if $switch; then
    # Passwords are set: from now on every connection needs one.
    hba > "$data/pg_hba.conf"
    as_pg "$bin/pg_ctl" -D "$data" reload >/dev/null
  fi
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
  psql) shift; PGPASSFILE=$pgpass exec "$bin/psql" "$url" "$@" ;;
  *) echo "usage: $0 start|stop|url|psql [ARGS]" >&2; exit 2 ;;
esac
