#!/bin/bash
# test/cluster/catalog_stamp.sh: a catalog that another build of kafka_pg
# created (src/catalog/stamp.c) is refused clearly, and nothing crashes.
#
# Run by test/run-tests' cluster part on the shared throwaway cluster (PORT,
# KAFKA_PORT, DATA, TEST_DB: the database kafka.database names) before any
# other part uses it; it leaves TEST_DB without the extension.
#   1. CREATE EXTENSION stores the installed build's stamp; the SQL API works.
#   2. The stamp changed as if another build had created the catalog: a new
#      session's SQL calls fail with 55000, the stamps and the remedy.
#   3. After a restart every worker (resolver, log cleaner, share acquirers,
#      listeners) logs that error once, with the remedy, and stays up: no
#      worker exits, nothing crashes; the listener closes a Kafka connection
#      without answering it.
#   3b. kafka.catalog_stamp dropped (a build from before the stamps): the same
#      error with that detail, in SQL and from the resolver.
#   4. DROP EXTENSION kafka_pg CASCADE; CREATE EXTENSION kafka_pg: the
#      workers say they resume, the listener answers, the SQL API works.
set -eu
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
: "${PORT:?}" "${KAFKA_PORT:?}" "${DATA:?}" "${TEST_DB:?}"
LOG=$(kp_logfile "$DATA")

fail() {
	echo "catalog_stamp: FAIL: $*" >&2
	exit 1
}
sql() { kp_psql "$PORT" "$TEST_DB" -At "$@"; }
# the server log from line $1 on
log_since() { tail -n +"$1" "$LOG"; }
# wait_log FROM PATTERN [SECONDS]: until an ERE matches the log from line FROM
wait_log() {
	local i
	for i in $(seq 1 $((${3:-30} * 5))); do
		log_since "$1" | grep -qE "$2" && return 0
		sleep 0.2
	done
	fail "no log line matching /$2/ within ${3:-30}s; the log from there:
$(log_since "$1" | tail -n 30)"
}

# ApiVersions v0 on a new Kafka connection: "answered", "closed" or "no answer"
api_versions() {
	/usr/bin/python3 - "$KAFKA_PORT" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
body = struct.pack(">hhih", 18, 0, 7, 5) + b"stamp"
s.sendall(struct.pack(">i", len(body)) + body)
try:
    data = s.recv(4)
    print("answered" if len(data) == 4 else "closed")
except ConnectionResetError:
    print("closed")
except socket.timeout:
    print("no answer")
PY
}

library=$(kp_installed_catalog_stamp)
case $library in
	"" | *@*) fail "the installed install script has no catalog stamp ('$library')" ;;
esac

# 1. this build's catalog
sql -c "CREATE EXTENSION kafka_pg"
stamp=$(kp_catalog_stamp "$PORT" "$TEST_DB")
[ "$stamp" = "$library" ] || fail "CREATE EXTENSION stored stamp '$stamp', the installed build's is '$library'"
sql -c "SELECT kafka.create_topic('stamp_check', 1)" >/dev/null
echo "ok 1 - CREATE EXTENSION stored this build's catalog stamp $library; kafka.create_topic works"

# 2. another build's catalog, in SQL
sql -c "UPDATE kafka.catalog_stamp SET stamp = 'another-build'"
for call in "kafka.create_topic('stamp_check2', 1)" "kafka.produce('stamp_check', 'k', 'v')" \
	"kafka.describe_acls()" "kafka.partition_status"; do
	if out=$(kp_psql "$PORT" "$TEST_DB" -v VERBOSITY=verbose -c "SELECT * FROM $call" 2>&1); then
		fail "SELECT * FROM $call ran on another build's catalog: $out"
	fi
	echo "$out" | grep -qF "ERROR:  55000: kafka_pg: the catalog in database \"$TEST_DB\" was created by a different build of kafka_pg" ||
		fail "SELECT * FROM $call: not the catalog stamp's error: $out"
	echo "$out" | grep -qF "DETAIL:  The catalog's stamp is another-build, this library's is $library" ||
		fail "SELECT * FROM $call: no stamps in the detail: $out"
	echo "$out" | grep -qF "DROP EXTENSION kafka_pg CASCADE; CREATE EXTENSION kafka_pg" ||
		fail "SELECT * FROM $call: no remedy in the hint: $out"
done
echo "ok 2 - on another build's catalog kafka.create_topic, kafka.produce, kafka.describe_acls and the view kafka.partition_status fail with 55000, both stamps and the remedy"

# 3. the workers after a restart
kp_stop "$DATA"
from=$(($(wc -l <"$LOG") + 1))
kp_start "$DATA"
kp_wait_kafka "$KAFKA_PORT" 30 || fail "the listener does not accept connections after the restart"
msg="was created by a different build of kafka_pg"
for w in "resolver" "log cleaner" "share acquirer 0" "share acquirer 1" "listener 0"; do
	wait_log "$from" "ERROR:  kafka_pg $w: the catalog in database \"$TEST_DB\" $msg"
done
answer=$(api_versions)
[ "$answer" = closed ] || fail "the listener on another build's catalog: ApiVersions $answer, not closed"
# a few resolver rounds (it checks every second) and listener idle checks
sleep 3
reports=$(log_since "$from" | grep -oE "ERROR:  kafka_pg [a-z ]+[0-9]*: the catalog in database \"$TEST_DB\" $msg" | sort | uniq -c)
echo "$reports" | awk '$1 != 1 { bad = 1 } END { exit bad }' ||
	fail "a worker reported the catalog more than once:
$reports"
hints=$(log_since "$from" | grep -cF "HINT:  Either re-create the extension, which drops every topic and its records: DROP EXTENSION kafka_pg CASCADE; CREATE EXTENSION kafka_pg;" || true)
[ "$hints" -ge 5 ] || fail "only $hints of the reports have the remedy as their HINT"
exits=$(log_since "$from" | grep -E 'background worker "kafka_pg[^"]*" \(PID [0-9]+\) exited' || true)
[ -z "$exits" ] || fail "kafka_pg workers exited on another build's catalog:
$exits"
problems=$(log_since "$from" | grep -E 'PANIC:|TRAP:|terminated by signal' || true)
[ -z "$problems" ] || fail "crash lines in the log: $problems"
"$PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "$PORT" || fail "the server is not up"
echo "ok 3 - after a restart the workers reported another build's catalog once each ($(echo "$reports" | wc -l) reports, with the remedy), none exited, the listener closed a connection without answering"

# 3b. a catalog from before the stamps (no kafka.catalog_stamp at all), while running
from=$(($(wc -l <"$LOG") + 1))
sql -c "ALTER EXTENSION kafka_pg DROP TABLE kafka.catalog_stamp" -c "DROP TABLE kafka.catalog_stamp"
[ "$(kp_catalog_stamp "$PORT" "$TEST_DB")" = none ] || fail "kp_catalog_stamp does not say 'none' for a catalog without a stamp"
if out=$(kp_psql "$PORT" "$TEST_DB" -v VERBOSITY=verbose -c "SELECT kafka.create_topic('stamp_check2', 1)" 2>&1); then
	fail "kafka.create_topic ran on a catalog without a stamp: $out"
fi
echo "$out" | grep -qF "DETAIL:  The catalog has no stamp: a build older than catalog stamps created it (this library's stamp is $library)" ||
	fail "a catalog without a stamp: not the catalog stamp's error: $out"
# the resolver, still refusing the catalog, reads it every second: another catalog, reported again
wait_log "$from" "kafka_pg resolver DETAIL:  The catalog has no stamp" 10
echo "ok 3b - a catalog without kafka.catalog_stamp (a build from before the stamps): kafka.create_topic fails with the detail saying so, the resolver reports it"

# 4. re-created by this build
from=$(($(wc -l <"$LOG") + 1))
sql -c "DROP EXTENSION kafka_pg CASCADE" -c "CREATE EXTENSION kafka_pg"
stamp=$(kp_catalog_stamp "$PORT" "$TEST_DB")
[ "$stamp" = "$library" ] || fail "the re-created extension has stamp '$stamp', not '$library'"
answer=$(api_versions)
[ "$answer" = answered ] || fail "the listener on the re-created catalog: ApiVersions $answer"
wait_log "$from" "LOG:  kafka_pg resolver: the catalog in database \"$TEST_DB\" was created by this build of kafka_pg \\(catalog stamp $library\\): resuming"
wait_log "$from" "LOG:  kafka_pg listener [0-9]+: the catalog in database \"$TEST_DB\" was created by this build of kafka_pg"
sql -c "SELECT kafka.create_topic('stamp_check', 1)" >/dev/null
sql -c "DROP EXTENSION kafka_pg"
echo "ok 4 - DROP EXTENSION kafka_pg CASCADE; CREATE EXTENSION kafka_pg: the resolver and the listener resumed, ApiVersions answered, kafka.create_topic works"
