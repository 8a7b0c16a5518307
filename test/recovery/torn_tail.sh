#!/bin/bash
# test/recovery/torn_tail.sh: a batch torn by a crash is cut off at recovery.
#
# One 100 MB record is a batch of ~12,000 pages, written as ~3,000 generic-WAL
# records.  The postmaster is killed (-9) while that append is half way
# through its WAL, so crash recovery replays only the first part of the
# batch: a torn tail.  After the restart the first access to the partition
# must find it by its length/CRC, cut it off, say so in the server log, keep
# every committed record, and let new appends continue at the right offset.
# The kill may land after the append finished; then it is tried again (up to
# five times) — never counted as a pass.
#
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. test/lib/tap.sh

kp_scratch torn 56432 29192 || exit 1

KP_EXTRA_CONF="max_wal_size = 4GB
wal_buffers = 1MB" kp_init "$DATA" "$PORT" "$KPORT" || exit 1
kp_start "$DATA" || exit 1
kp_create_extension "$PORT" postgres >/dev/null || exit 1
LOG=$(kp_logfile "$DATA")
sql() { kp_psql "$PORT" postgres -At -c "$1"; }

sql "SELECT kafka.create_topic('torn', 1, '{\"max.message.bytes\": \"110000000\"}')" >/dev/null
sql "SELECT count(*) FROM (SELECT kafka.produce('torn', 'k' || g, 'committed-' || g, partition => 0) FROM generate_series(1, 500) g) s" >/dev/null
sql "SELECT kafka.flush_markers()" >/dev/null
LEO_BEFORE=$(sql "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'torn'")
echo "# log end offset before the big append: $LEO_BEFORE"

torn=0
for attempt in 1 2 3 4 5 6 7 8; do
	start_lsn=$(sql "SELECT pg_current_wal_insert_lsn()")
	# the big append, in the background
	kp_psql "$PORT" postgres -At -c "SELECT kafka.produce('torn', NULL::bytea, convert_to(repeat('x', 100000000), 'UTF8'), partition => 0)" >/dev/null 2>&1 &
	bg=$!
	# wait until about a third of its WAL is written, then kill everything
	for i in $(seq 1 400); do
		done_bytes=$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$start_lsn')::bigint" 2>/dev/null || echo 0)
		[ "${done_bytes:-0}" -gt 20000000 ] && break
		sleep 0.01
	done
	# this cluster only: its postmaster and the postmaster's children
	pm=$(kp_postmaster_pid "$DATA")
	kids=$(pgrep -P "$pm")
	kill -9 "$pm" $kids 2>/dev/null
	wait "$bg" 2>/dev/null
	for i in $(seq 1 150); do
		alive=0
		for p in $pm $kids; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.2
	done
	kp_start "$DATA" || { check "server restarts after kill -9" 0; break; }
	kp_wait_ready "$PORT" 60
	# first access: recovery of the partition
	leo=$(sql "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'torn'")
	if grep -q "kafka_pg: cut the torn tail of partition" "$LOG"; then
		torn=1
		echo "# attempt $attempt: torn tail found and cut; log end offset $leo"
		break
	fi
	echo "# attempt $attempt: the append was not torn (log end offset $leo), trying again"
done

check "a batch torn by kill -9 was found and cut, and the server log says so" "$torn" \
	"(no 'cut the torn tail' line in $LOG)"
grep "kafka_pg: cut the torn tail" "$LOG" | tail -n 2 | sed 's/^/# /'
leo=$(sql "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'torn'")
n=$(sql "SELECT count(*) FROM kafka.fetch('torn', 0, 0, 100000) WHERE convert_from(value, 'UTF8') LIKE 'committed-%'")
sql "SELECT kafka.flush_markers()" >/dev/null   # markers of the aborted attempts first
leo=$(sql "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'torn'")
check "all 500 committed records survive" "$([ "$n" = 500 ] && echo 1 || echo 0)" "(found $n)"
bad=$(sql "SELECT count(*) FROM kafka.dump_log('torn', 0, 0, 100000) WHERE NOT crc_valid")
check "every stored batch passes its CRC" "$([ "$bad" = 0 ] && echo 1 || echo 0)" "($bad bad)"
off=$(sql "SELECT \"offset\" FROM kafka.produce('torn', 'after', 'after the crash', partition => 0)")
check "the next append continues at the log end offset" "$([ "$off" = "$leo" ] && echo 1 || echo 0)" \
	"(log end $leo, got offset $off)"
last=$(sql "SELECT value FROM kafka.fetch_text('torn', 0, $off, 1)")
check "and is read back" "$([ "$last" = "after the crash" ] && echo 1 || echo 0)" "($last)"
problems=$(kp_log_problems "$LOG")
check "no PANIC or crash other than our kill -9 in the server log" "$([ -z "$problems" ] && echo 1 || echo 0)" "$problems"

tap_finish
