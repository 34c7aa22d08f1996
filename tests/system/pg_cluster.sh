# shellcheck shell=bash
# A throwaway PostgreSQL cluster for the tests/system scripts (sourced, not run):
# initdb in a temporary directory, owned by and run as the `postgres` user (the
# server refuses to run as root), listening on a unix socket in that directory
# only (listen_addresses = ''). Used by postgres_test.sh and
# lua_postgres_test.sh.
#
# Expects say/fail, tests/system/lib.sh sourced, and $work: the test's
# directory (mode 0755: the server, as postgres, reaches its socket there).
# Sets pgbin (the server's binaries) and data (the cluster's directory).

# pg_find: sets pgbin, failing unless the server's binaries and the postgres
# user are there. Debian keeps the binaries out of PATH, per major version.
pg_find() {
  pgbin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null |
    sort -V | tail -n 1)
  [[ -x "$pgbin/initdb" && -x "$pgbin/postgres" ]] ||
    fail "no PostgreSQL server under /usr/lib/postgresql/*/bin: apt-get install postgresql"
  id postgres >/dev/null 2>&1 || fail "no postgres user: apt-get install postgresql"
}

as_postgres() {
  if [[ $(id -un) == postgres ]]; then "$@"; else runuser -u postgres -- "$@"; fi
}
# The postmaster's PID, from its pid file ("" when it is not running).
pg_pid() { head -n 1 "${data:-}/postmaster.pid" 2>/dev/null || true; }
# sql STATEMENT: runs it as the postgres superuser, unaligned, tuples only.
# shellcheck disable=SC2154  # $work is the sourcing script's
sql() { psql -X -q -At -h "$work" -U postgres -d postgres -c "$1"; }

# pg_init: a new cluster in $work/data (trust authentication, UTF-8).
pg_init() {
  data=$work/data
  [[ $(id -u) -eq 0 ]] && chown postgres "$work"
  as_postgres "$pgbin/initdb" -D "$data" -A trust -U postgres -E UTF8 \
    --locale=C.UTF-8 --no-sync >"$work/initdb.log" 2>&1 ||
    { cat "$work/initdb.log" >&2; fail "initdb failed"; }
}

# pg_start [-c NAME=VALUE...]: starts the server in the background (its log in
# $work/postgres.log) and waits, up to 20 s, until it answers a query.
pg_start() {
  as_postgres "$pgbin/postgres" -D "$data" -c listen_addresses='' \
    -c unix_socket_directories="$work" -c fsync=off "$@" >>"$work/postgres.log" 2>&1 &
  wait_for "sql 'SELECT 1'" 20 || { tail "$work/postgres.log" >&2; fail "postgres did not start"; }
}

# pg_stop: a fast shutdown (SIGINT) of the postmaster by its PID, then KILL
# after 10 s.
pg_stop() {
  local pid
  pid=$(pg_pid)
  [[ -z "$pid" ]] || stop_pid "$pid" INT
}
