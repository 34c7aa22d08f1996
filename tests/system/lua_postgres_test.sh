#!/usr/bin/env bash
# Lua's pool:query against a real PostgreSQL, under every model: the query
# runs on the postgres handler's own pool and exchange code. A bound
# parameter, NULL as gearbox.null, an error as nil, err, sqlstate, the
# per-connection statement cache bounded at 64 (DEALLOCATE on eviction),
# the items.lua example next to the built-in postgres handler on the same
# query, and libpq connections back at baseline after clients that hang up
# mid-query.
#
#   bash tests/system/lua_postgres_test.sh        # MODELS="async" to narrow
#
# A throwaway cluster (initdb in a temp dir, run as the postgres user, on a
# unix socket there only), as tests/system/postgres_test.sh makes it.
# Needs: postgresql, curl, python3, runuser.
set -euo pipefail

if [[ -z "${_LUA_PG_TEST_BOUNDED:-}" ]]; then
  export _LUA_PG_TEST_BOUNDED=1
  exec timeout -k 10 "${LUA_PG_TEST_TIMEOUT:-240}" bash "$0" "$@"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MODELS=${MODELS:-prefork threadpool async}
say() { echo "lua_postgres_test: $*"; }
fail() { echo "lua_postgres_test: FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/system/lib.sh
source "$root/tests/system/lib.sh"
need curl:curl python3:python3 psql:postgresql runuser:util-linux
# shellcheck source=tests/system/pg_cluster.sh
source "$root/tests/system/pg_cluster.sh"
pg_find
find_gearboxd

work=$(mktemp -d "${TMPDIR:-/tmp}/gearbox-luapg.XXXXXX")
chmod 0755 "$work"
gpid=""
cleanup() {
  local rc=$?
  [[ -n "$gpid" ]] && stop_pid "$gpid" TERM
  pg_stop
  if ((rc != 0)); then say "logs of the failed run are in $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 124' TERM INT
same_json() {  # A B: equal as JSON values (key order aside)
  python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))' "$1" "$2"
}
pg_init
pg_start
sql "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric, note text);
     INSERT INTO items VALUES (1, 'apple', 1.5, NULL), (2, 'pear', 2.25, 'ripe')"
dsn="host=$work user=postgres dbname=postgres"
export GEARBOX_TEST_DSN=$dsn GEARBOX_ITEMS_DSN=$dsn
# Connections gearboxd holds (every client backend but this psql's).
backends() {
  sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'
       AND pid <> pg_backend_pid()"
}

for model in $MODELS; do
  port=$(free_port)
  cat >"$work/$model.toml" <<TOML
[server]
model = "$model"
[prefork]
workers = 2
[threadpool]
threads = 2
[async]
loops = 1
[[listen]]
address = "127.0.0.1:$port"
[[route]]
path = "/q"
handler = "lua"
script = "$root/tests/system/lua_pg.lua"
timeout = "3s"
[[route]]
path = "/items"
handler = "lua"
script = "$root/sdk/examples/lua/items.lua"
[[route]]
path = "/pg"
handler = "postgres"
dsn = "$dsn"
query = "SELECT id, name, price, note FROM items WHERE id = \$1"
params = ["id"]
pool = 1
TOML
  "$GEARBOXD" -t -c "$work/$model.toml" || fail "$model: -t failed (nothing may connect)"
  "$GEARBOXD" -c "$work/$model.toml" >"$work/$model.log" 2>&1 &
  gpid=$!
  wait_for "curl -sf http://127.0.0.1:$port/q?do=add\&n=1" 10 || fail "$model: not serving"
  get() { curl -s --max-time 10 "http://127.0.0.1:$port$1"; }
  [[ $(get '/q?do=add&n=41') == "n=42 type=number null=true" ]] ||
    fail "$model: bound parameter: $(get '/q?do=add&n=41')"
  [[ $(get '/q?do=bad') == rows=nil\ err=*\ sqlstate=42P01 ]] ||
    fail "$model: error: $(get '/q?do=bad')"
  [[ $(get '/q?do=many') == "prepared=64" ]] ||
    fail "$model: statement cache: $(get '/q?do=many')"
  # The same row, typed alike, from Lua and from the built-in handler.
  same_json "$(get '/items?id=2')" "$(get '/pg?id=2' | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)[0]))')" ||
    fail "$model: items.lua $(get '/items?id=2') vs postgres $(get '/pg?id=2')"
  same_json "$(get '/items?id=1')" '{"id": 1, "name": "apple", "price": 1.5, "note": null}' ||
    fail "$model: NULL: $(get '/items?id=1')"
  # Warm every worker's pools, then hang up mid-query 20 times. The warm-up
  # runs 4 clients at once: one client at a time may be served by one worker
  # only, and a pool the other opens later is not a leak.
  warmers=()
  for _ in $(seq 4); do
    (for _ in $(seq 20); do get '/q?do=add&n=1' >/dev/null; get '/items?id=1' >/dev/null; done) &
    warmers+=($!)
  done
  wait "${warmers[@]}"
  before=$(backends)
  for _ in $(seq 20); do
    curl -s --max-time 0.2 "http://127.0.0.1:$port/q?do=sleep&s=1" >/dev/null || true
  done
  for _ in $(seq 20); do get '/q?do=add&n=1' >/dev/null; get '/items?id=1' >/dev/null; done
  wait_for "[[ \$(backends) -le $before ]]" 15 ||
    fail "$model: libpq connections: $before before, $(backends) after"
  [[ $(get '/q?do=add&n=1') == "n=2 type=number null=true" ]] || fail "$model: not healthy after"
  say "$model: bound parameter, NULL, error, 64 statements kept of 71, items.lua = the built-in row, connections $before -> $(backends)"
  stop_pid "$gpid" TERM
  gpid=""
done
say "PASS"
