#!/usr/bin/env bash
# bench/tuning/restart_load.sh BASE.so NEW.so: how long the resolver's load of every partition takes
# after a start (src/txn/resolver.c: recovery of each partition, src/store/recovery.c), for two
# builds of kafka_pg.so on the scripts/setup.sh cluster.  The load walks the batch headers of each
# active segment, or, with producer-state snapshots (src/store/prodsnap.c), only those after the
# snapshot.  Measured from the server log's "kafka_pg resolver: loaded N partitions in S s" line.
#
# The log (made once, kept): topic rl-16k, BENCH_LARGE (2,000,000) records of 1 KiB in 16 KB batches
# (kafka-producer-perf-test, acks=all, linger.ms 5, 6 partitions: ~2 GB), and topic rl-tiny,
# BENCH_TINY (1,000,000) records of 100 B one to a batch (batch.size 0, linger.ms 0, 6 partitions).
# Then, BENCH_REPS times each, in this order:
#   base      a restart (pg_ctl stop -m fast, start) with BASE.so: the whole walk
#   new-walk  the same with NEW.so and kafka.debug_ignore_producer_snapshots on (ALTER SYSTEM): the
#             whole walk, with NEW.so's reading of the headers
#   new-snap  the same with the setting off: the snapshots NEW.so's resolver wrote at shutdown
#   new-crash BENCH_CRASH_RECORDS / BENCH_REPS more 1 KiB records to rl-16k (BENCH_CRASH_RECORDS
#             1,000,000 in all), then an immediate stop and a start: the periodic snapshots (every
#             8 MB a segment grows) and the batches after them
# Prints each load, then per mode the median (min-max) seconds and, for NEW.so, the batches read.
# The installed kafka_pg.so is put back and the server restarted at the end.  As root; asserts
# nothing.  The topics stay (BENCH_DROP=1 drops them at the end).
#
#   make && cp kafka_pg.so /tmp/new.so; (build the base elsewhere) cp .../kafka_pg.so /tmp/base.so
#   bash bench/tuning/restart_load.sh /tmp/base.so /tmp/new.so
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
. "$repo/test/lib/cluster.sh"
K=$repo/test/clients/kafka/kafka.sh
[ $# -eq 2 ] && [ -f "$1" ] && [ -f "$2" ] || { echo "usage: $0 BASE.so NEW.so" >&2; exit 2; }
BASE=$1 NEW=$2
REPS=${BENCH_REPS:-3}
LARGE=${BENCH_LARGE:-2000000}
TINY=${BENCH_TINY:-1000000}
CRASH=${BENCH_CRASH_RECORDS:-1000000}
DATA=${KP_DATA:-/var/lib/kafka_pg/data}
PGPORT=${BENCH_KP_PGPORT:-5432}
BS=${KP_BOOTSTRAP:-127.0.0.1:9092}
LOGFILE=${KP_SERVER_LOG:-$(dirname "$DATA")/server-data.log}
installed=$(pg_config --pkglibdir)/kafka_pg.so
sql() { psql -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -XAtq -c "$1"; }

work=$(mktemp -d)
cp "$installed" "$work/installed.so"
restore() {
	sql "ALTER SYSTEM RESET kafka.debug_ignore_producer_snapshots" >/dev/null 2>&1
	install_so "$work/installed.so" "$installed"
	restart_broker "$DATA" "$BS"
	if [ "${BENCH_DROP:-0}" = 1 ]; then
		sql "SELECT kafka.delete_topic('rl-16k'), kafka.delete_topic('rl-tiny')" >/dev/null
	fi
	rm -rf "$work"
}
trap restore EXIT
trap 'exit 130' INT TERM

perf() { # perf TOPIC RECORDS SIZE BATCH LINGER
	timeout 1800 "$K" cli kafka-producer-perf-test --topic "$1" --num-records "$2" --record-size "$3" \
		--throughput -1 --producer-props bootstrap.servers="$BS" acks=all enable.idempotence=true \
		batch.size="$4" linger.ms="$5" 2>&1 | grep -E '^[0-9]+ records sent' | tail -1
}

# the number of "loaded" lines in the server log so far
nloads() { grep -c 'kafka_pg resolver: loaded' "$LOGFILE"; }

# wait_load N: the (N+1)th "loaded" line once it is there: "SECONDS BATCHES" (BATCHES "-" for a build
# whose line does not say)
wait_load() {
	local n=$1 i line
	for i in $(seq 1 1200); do
		line=$(grep 'kafka_pg resolver: loaded' "$LOGFILE" | sed -n "$((n + 1))p")
		if [ -n "$line" ]; then
			sed -E 's/.*loaded [0-9]+ partitions in ([0-9.]+) s( \([0-9]+ from a producer-state snapshot, ([0-9]+) batches read\))?.*/\1 \3/' <<<"$line" |
				awk '{ print $1, ($2 == "" ? "-" : $2) }'
			return 0
		fi
		sleep 0.5
	done
	echo "timeout -"
}

# start_with SO MODE: stop the server (MODE fast or immediate), install SO, start; the load's line
start_with() {
	local so=$1 mode=$2 n
	kp_stop "$DATA" "$mode"
	install_so "$so" "$installed"
	n=$(nloads)
	kp_start "$DATA" || return 1
	kp_wait_kafka "${BS##*:}" >/dev/null 2>&1
	wait_load "$n"
}

declare -A results
run_mode() { # run_mode NAME SO STOPMODE [BEFORE-EACH-COMMAND]
	local name=$1 so=$2 mode=$3 pre=${4:-} i r
	for i in $(seq 1 "$REPS"); do
		[ -n "$pre" ] && eval "$pre" >/dev/null
		r=$(start_with "$so" "$mode")
		echo "$name rep $i: load ${r% *} s, batches read ${r#* }  (load average $(cut -d' ' -f1-3 /proc/loadavg))"
		results[$name]+="$r;"
	done
}

echo "restart_load: base $BASE, new $NEW, $REPS reps; $(nproc) cores; $(date -u '+%F %T UTC')"
install_so "$BASE" "$installed"
restart_broker "$DATA" "$BS"
wait_partitions_loaded "$PGPORT"
if [ -z "$(sql "SELECT 1 FROM kafka.topics WHERE name = 'rl-16k'")" ]; then
	sql "SELECT kafka.create_topic('rl-16k', 6), kafka.create_topic('rl-tiny', 6)" >/dev/null
	echo "fill rl-16k:  $(perf rl-16k "$LARGE" 1024 16384 5)"
	echo "fill rl-tiny: $(perf rl-tiny "$TINY" 100 0 0)"
fi
sql "SELECT topic, sum(size_bytes) AS bytes, sum(log_end_offset) AS records FROM kafka.partition_status WHERE topic LIKE 'rl-%' GROUP BY 1 ORDER BY 1" |
	sed 's/^/log: /'
sql "CHECKPOINT" >/dev/null

run_mode base "$BASE" fast
start_with "$NEW" fast >/dev/null
sql "ALTER SYSTEM SET kafka.debug_ignore_producer_snapshots = on" >/dev/null
run_mode new-walk "$NEW" fast
sql "ALTER SYSTEM RESET kafka.debug_ignore_producer_snapshots" >/dev/null
run_mode new-snap "$NEW" fast
run_mode new-crash "$NEW" immediate "perf rl-16k $((CRASH / REPS)) 1024 16384 5"

echo
echo "| mode | load, s: median (min-max) | batches read |"
echo "|---|---:|---:|"
for name in base new-walk new-snap new-crash; do
	tr ';' '\n' <<<"${results[$name]}" | sort -n | awk -v name="$name" 'NF == 2 { s[++n] = $1; b = b (b == "" ? "" : ", ") $2 }
		END { printf "| %s | %.2f (%.2f-%.2f) | %s |\n", name, s[int((n + 1) / 2)], s[1], s[n], b }'
done
