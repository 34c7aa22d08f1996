# shellcheck shell=bash
# postgres_routes.sh: sourced by postgres_test.sh (its helpers and $work in
# scope). What the checks in postgres_errors.sh and postgres_limits.sh need,
# under every model: answers_setup makes their database objects (a table u, a
# function fail_with that raises a given SQLSTATE, a table orphan_t for
# postgres_pipeline.sh) and a listener that never accepts (mute_pid, mute_port);
# answers_routes writes their routes; check_captures checks $1 bound from a
# path capture.
# shellcheck disable=SC2154  # $work is postgres_test.sh's

answers_setup() {  # once, after the cluster is up
  sql "CREATE TABLE u (id int PRIMARY KEY); CREATE TABLE orphan_t (id int);
       CREATE FUNCTION fail_with(code text) RETURNS int LANGUAGE plpgsql AS
         \$\$ BEGIN RAISE EXCEPTION 'failing with %', code USING ERRCODE = code;
         END \$\$;"
  # A listener that never accepts: the kernel completes handshakes into its
  # backlog, nobody ever answers libpq's startup packet.
  python3 -c '
import signal, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
signal.pause()  # until the cleanup stops it' >"$work/mute.port" &
  mute_pid=$!
  wait_for "[[ -s '$work/mute.port' ]]" 5 || fail "the mute listener did not start"
  mute_port=$(cat "$work/mute.port")
}

answers_routes() {  # the routes these checks use, appended to a config
  local dsn="host=$work user=postgres dbname=postgres"
  cat <<EOF
[[route]]
path = "/items/{id}"
handler = "postgres"
dsn = "$dsn"
query = "SELECT id FROM t WHERE id = \$1::int"
params = ["id"]
[[route]]
path = "/words/{w}"
handler = "postgres"
dsn = "$dsn"
query = "SELECT \$1::text AS w"
params = ["w"]
[[route]]
path = "/insert"
handler = "postgres"
dsn = "$dsn"
query = "INSERT INTO u VALUES (\$1::int) RETURNING id"
params = ["id"]
[[route]]
path = "/raise"
handler = "postgres"
dsn = "$dsn"
query = "SELECT fail_with(\$1)"
params = ["code"]
[[route]]
path = "/stmt-timeout"
handler = "postgres"
dsn = "$dsn options='-c statement_timeout=100'"
query = "SELECT pg_sleep(2)"
[[route]]
path = "/rowcap"
handler = "postgres"
dsn = "$dsn"
query = "SELECT generate_series(1, \$1::int) AS g"
params = ["n"]
max_rows = 100
pool = 1
[[route]]
path = "/bytecap"
handler = "postgres"
dsn = "$dsn"
query = "SELECT repeat('x', 90) AS x FROM generate_series(1, \$1::int) g"
params = ["n"]
max_bytes = 900
pool = 1
[[route]]
path = "/int8s"
handler = "postgres"
dsn = "$dsn"
query = "SELECT 9007199254740993::int8 AS i8, 12345678901234567890.5::numeric AS n, 7 AS i4"
int8 = "string"
[[route]]
path = "/mute"
handler = "postgres"
dsn = "host=127.0.0.1 port=$mute_port user=postgres dbname=postgres connect_timeout=30"
query = "SELECT 1"
connect_timeout = "300ms"
timeout = "10s"
[[route]]
path = "/fresh"
handler = "postgres"
dsn = "$dsn"
query = "SELECT 'fresh' AS f"
[[route]]
path = "/status"
handler = "status"
[[route]]
path = "/fd1"
handler = "postgres"
dsn = "$dsn"
query = "SELECT pg_sleep(\$1::float8) AS fd1_query"
params = ["s"]
pool = 1
EOF
}

# $1 bound from a path capture (/items/{id}, params = ["id"]): the capture
# wins over ?id=, and is percent-decoded once (%31 is "1"; %2F stays in the
# one segment; '+' is not a space there, unlike in a query argument).
check_captures() {  # BASE
  local out
  out=$(curl -s "$1/items/2?id=1")
  [[ $out == '[{"id":2}]' ]] || fail "/items/2?id=1: got $out"
  out=$(curl -s "$1/items/%31")
  [[ $out == '[{"id":1}]' ]] || fail "/items/%31: got $out"
  out=$(curl -s "$1/words/a%20b%2Fc+d%2541")
  [[ $out == '[{"w":"a b/c+d%41"}]' ]] || fail "/words/...: got $out"
}
