#!/bin/bash
# test/recovery/share_restart.sh: share-group state (KIP-932) survives a crash.
#
# A share group's records are acquired and acknowledged in SQL, some accepted,
# some rejected, some acquired and left unacknowledged, one released; then the
# postmaster and its children are killed (-9) and the server restarted.  After
# crash recovery no acknowledgement is lost: accepted and rejected records are
# never delivered again, the released one is delivered first, and the ones
# that were acquired and not acknowledged are delivered again once their
# acquisition lock (share.record.lock.duration.ms, 8 s here) has expired -
# not before - with their delivery count raised.
#
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
# the share acquirer (which kafka.share_acquire hands its work to) serves kafka.database
export KP_KAFKA_DB=postgres
. test/lib/cluster.sh
. test/lib/tap.sh

kp_scratch share-restart 56432 29192 || exit 1

kp_init "$DATA" "$PORT" "$KPORT" || exit 1
kp_start "$DATA" || exit 1
kp_create_extension "$PORT" postgres >/dev/null || exit 1
sql() { kp_psql "$PORT" postgres -At -c "$1"; }

sql "SELECT kafka.create_topic('jobs', 1)" >/dev/null
sql "SELECT count(*) FROM kafka.produce_batch('jobs', NULL::text[], (SELECT array_agg('job-' || g) FROM generate_series(0, 9) g))" >/dev/null
sql "INSERT INTO kafka.group_configs VALUES ('g', 'share.auto.offset.reset', 'earliest'), ('g', 'share.record.lock.duration.ms', '8000')" >/dev/null
# offsets 0-9: accept 0-3, reject 4, release 5, leave 6-9 acquired
acquired_at=$(date +%s%N)
got=$(kp_psql "$PORT" postgres -At -c "BEGIN" \
	-c "SELECT count(*) FROM kafka.share_acquire('g', 'jobs', 10)" \
	-c "SELECT kafka.share_acknowledge('g', 'jobs', 0, 0, 3)" \
	-c "SELECT kafka.share_acknowledge('g', 'jobs', 0, 4, NULL, 'reject')" \
	-c "SELECT kafka.share_acknowledge('g', 'jobs', 0, 5, NULL, 'release')" \
	-c "COMMIT" | sed -n 1p)
check "10 records acquired" "$([ "$got" = 10 ] && echo 1)" "(got $got)"

pm=$(kp_postmaster_pid "$DATA")
kids=$(pgrep -P "$pm")
kill -9 "$pm" $kids 2>/dev/null
for i in $(seq 1 100); do kill -0 "$pm" 2>/dev/null || break; sleep 0.1; done
rm -f "$DATA/postmaster.pid"
kp_start "$DATA" || exit 1
kp_wait_ready "$PORT" 60 || exit 1

# SQL acknowledgements move the start offset at the next acquisition
status=$(sql "SELECT end_offset, acquired, available FROM kafka.share_group_status WHERE group_id = 'g'")
check "after the crash: end offset 10, 4 acquired, 1 available" "$([ "$status" = "10|4|1" ] && echo 1)" "(got $status)"
# The released record comes back; it is accepted at once, in the same session: left acquired,
# its own lock (8 s from now) could expire before the next acquisition below and bring it
# back a third time - which is what Kafka does too, and what made this test flaky once.
first=$(kp_psql "$PORT" postgres -At \
	-c "SELECT string_agg(\"offset\" || ':' || delivery_count, ',') FROM kafka.share_acquire('g', 'jobs', 10)" \
	-c "SELECT kafka.share_acknowledge('g', 'jobs', 0, 5)" | sed -n 1p)
elapsed_ms=$((($(date +%s%N) - acquired_at) / 1000000))
start=$(sql "SELECT start_offset FROM kafka.share_group_status WHERE group_id = 'g'")
check "the acquisition moved the start offset past the done records 0-4" "$([ "$start" = 5 ] && echo 1)" "(got $start)"
if [ "$elapsed_ms" -lt 7000 ]; then
	check "while the locks last: only the released record, delivered a second time" "$([ "$first" = "5:2" ] && echo 1)" "(got $first)"
	sleep $(((8500 - elapsed_ms) / 1000 + 1))
	again=$(sql "SELECT string_agg(\"offset\" || ':' || delivery_count, ',' ORDER BY \"offset\") FROM kafka.share_acquire('g', 'jobs', 10)")
else
	echo "# the restart took ${elapsed_ms} ms: the locks had expired"
	check "the released record first, delivered a second time" "$([[ $first == 5:2* ]] && echo 1)" "(got $first)"
	again=$(echo "$first" | cut -d, -f2-)
fi
check "after the lock duration: the unacknowledged records again, never the accepted or rejected" \
	"$([ "$again" = "6:2,7:2,8:2,9:2" ] && echo 1)" "(got $again)"
none=$(sql "SELECT count(*) FROM kafka.share_acquire('g', 'jobs', 10)")
check "nothing else" "$([ "$none" = 0 ] && echo 1)" "(got $none)"

tap_finish
