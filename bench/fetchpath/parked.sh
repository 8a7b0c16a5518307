#!/bin/bash
# bench/fetchpath/parked.sh BEFORE.so AFTER.so [ROUNDS]: what idle long-polling consumers cost a
# producer, for two builds of kafka_pg.so alternating on one cluster (the PostgreSQL that
# pg_config names; its kafka_pg.so is overwritten, AFTER.so is left installed).
#
# Per round, build and poller count P (BENCH_POLLERS, default "0 200"): restart the server with
# that build; P connections (bench/fetchpath/pollers.py) long-poll the empty partitions of topic
# "idle" (one each, max_wait_ms 500); meanwhile kafka-producer-perf-test sends BENCH_RECORDS
# (300000) records of 100 B, acks=1, to topic "hot" (6 partitions) as fast as it can.  Prints
# per run the produce rate, the listener processes' CPU time (utime+stime) during the produce,
# per 100,000 records, and what the pollers saw (answers before 80% of max_wait_ms mean a
# poller was answered early); then per build and P the median and spread, and the ratio
# AFTER/BEFORE of the medians.  Asserts nothing.  As root (the library directory).
#
#   bench/fetchpath/parked.sh /tmp/before.so /tmp/after.so 3
set -u
before_so=$(readlink -f "$1"); after_so=$(readlink -f "$2"); rounds=${3:-3}
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
K=$PWD/test/clients/kafka/kafka.sh
LIB=$(pg_config --pkglibdir)
POLLERS=${BENCH_POLLERS:-"0 200"}
N=${BENCH_RECORDS:-300000}
maxp=0; for p in $POLLERS; do [ "$p" -gt $maxp ] && maxp=$p; done
root=$(bash test/lib/pgcluster mktemp parked); d=$root/data
trap 'bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
use() { if [ "$1" = before ]; then install_so "$before_so" "$LIB/kafka_pg.so"; else install_so "$after_so" "$LIB/kafka_pg.so"; fi; }
use before
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
psql_ "SELECT kafka.create_topic('hot', 6)" >/dev/null
psql_ "SELECT kafka.create_topic('idle', $((maxp > 0 ? maxp : 1)))" >/dev/null
lcpu() { # summed utime+stime (ticks) of the listener processes
	local t=0 p
	for p in $(psql_ "SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'"); do
		t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat)))
	done
	echo $t
}
declare -A rate cpu
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
for r in $(seq 1 "$rounds"); do
	for b in before after; do
		for p in $POLLERS; do
			bash test/lib/pgcluster stop "$d" >/dev/null; use $b; bash test/lib/pgcluster start "$d" >/dev/null; sleep 3
			secs=120
			pout=$root/pollers.out
			: >"$pout"
			if [ "$p" -gt 0 ]; then
				python3 bench/fetchpath/pollers.py 127.0.0.1:$kport idle "$p" $secs >"$pout" 2>&1 &
				ppid=$!
				sleep 3
			fi
			c0=$(lcpu); t0=$(date +%s.%N)
			out=$("$K" cli kafka-producer-perf-test --topic hot --num-records "$N" --record-size 100 --throughput -1 \
				--producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false 2>&1 |
				grep -E "^$N records sent" | tail -1)
			c1=$(lcpu); t1=$(date +%s.%N)
			if [ "$p" -gt 0 ]; then kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null; fi
			rs=$(sed -nE 's/.* records sent, ([0-9.]+) records\/sec.*/\1/p' <<<"$out")
			cs=$(awk -v a=$c0 -v b=$c1 -v n=$N 'BEGIN { printf "%.3f", (b - a) / 100 * 100000 / n }')
			rate[$b,$p]+="${rs:-fail} "
			cpu[$b,$p]+="$cs "
			echo "round $r $b pollers=$p produce_rec_s=${rs:-fail} listener_cpu_s_per_100k=$cs wall_s=$(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.1f", b - a}') load=$(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
# one poller run of 10 s on the installed (AFTER) build, to show that nobody is answered early
if [ $maxp -gt 0 ]; then
	bash test/lib/pgcluster stop "$d" >/dev/null; use after; bash test/lib/pgcluster start "$d" >/dev/null; sleep 3
	echo "after, idle (no produce): $(python3 bench/fetchpath/pollers.py 127.0.0.1:$kport idle $maxp 10)"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| pollers | figure | before median (spread) | after median (spread) | after/before |"
echo "|---:|---|---:|---:|---:|"
for p in $POLLERS; do
	for f in rate cpu; do
		if [ $f = rate ]; then name="produce records/s"; bv=${rate[before,$p]}; av=${rate[after,$p]}
		else name="listener CPU s per 100k records"; bv=${cpu[before,$p]}; av=${cpu[after,$p]}; fi
		mb=$(median "$bv"); ma=$(median "$av")
		echo "| $p | $name | $mb ($(spread "$bv")) | $ma ($(spread "$av")) | $(awk -v a="$ma" -v b="$mb" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }') |"
	done
done
bash test/lib/pgcluster stop "$d" >/dev/null
install_so "$after_so" "$LIB/kafka_pg.so"
