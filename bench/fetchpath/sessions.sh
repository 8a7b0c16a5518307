#!/bin/bash
# bench/fetchpath/sessions.sh [ROUNDS]: what a caught-up consumer's polls cost the listener with and
# without KIP-227 fetch sessions, on one cluster with the kafka_pg.so installed (the PostgreSQL
# that pg_config names).
#
# Topics p1 (1 partition) and p1000 (1,000 partitions), one record in each partition (and its SQL
# transaction's commit marker).  Per round,
# topic and mode, bench/fetchpath/session_fetches.py sends BENCH_FETCHES (2000) Fetch v11 requests
# of every partition at its end (max_wait_ms 0), one after the other on one connection, while
# `perf stat` counts the listener processes' task-clock: mode "full" lists every partition in
# every request (epoch -1, what the listener did for every client before sessions), mode
# "session" lists none after its first (incremental, epoch 1, 2, ...).  Prints every run, then
# per topic and mode the median (spread) of the listener CPU in microseconds per Fetch, and the
# ratios session/full and p1000/p1.  Asserts nothing.  As root (perf).
#
#   bench/fetchpath/sessions.sh 3
set -u
rounds=${1:-3}
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
N=${BENCH_FETCHES:-2000}
root=$(bash test/lib/pgcluster mktemp fetchsessions); d=$root/data
trap 'bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
psql_ "SELECT kafka.create_topic('p1', 1), kafka.create_topic('p1000', 1000)" >/dev/null || exit 1
# one record per partition (a function in FROM runs once per row)
psql_ "SELECT count(*) FROM (VALUES ('p1', 0)) v(t, n), LATERAL generate_series(0, n) g, LATERAL kafka.produce(t, NULL::bytea, 'x'::bytea, partition => g)" >/dev/null || exit 1
psql_ "SELECT count(*) FROM generate_series(0, 999) g, LATERAL kafka.produce('p1000', NULL::bytea, 'x'::bytea, partition => g)" >/dev/null || exit 1
# the end of every partition (a SQL produce also writes its transaction's commit marker)
ends=$(psql_ "SELECT min(log_end_offset) || ' ' || max(log_end_offset) FROM kafka.partition_status WHERE topic IN ('p1', 'p1000')")
read -r end_min end_max <<<"$ends"
[ "$end_min" = "$end_max" ] || { echo "the partitions end at different offsets: $ends"; exit 1; }
export OFFSET=$end_min
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; library md5 $(md5sum "$(pg_config --pkglibdir)/kafka_pg.so" | cut -c1-12)"
declare -A v
for r in $(seq 1 "$rounds"); do
	for t in p1:1 p1000:1000; do
		IFS=: read -r topic parts <<<"$t"
		for m in full session; do
			pids=$(psql_ "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'")
			perf stat -x, -e task-clock -p "$pids" -o "$root/pstat" &
			ps_pid=$!
			sleep 0.5
			out=$(python3 bench/fetchpath/session_fetches.py 127.0.0.1:$kport "$topic" "$parts" "$N" $m 2>&1)
			kill -INT $ps_pid; wait $ps_pid 2>/dev/null
			ms=$(awk -F, '$3 == "task-clock" { print $1 }' "$root/pstat")
			us=$(awk -v ms="$ms" -v n="$N" 'BEGIN { printf "%.1f", ms * 1000 / n }')
			grep -q "^requests=" <<<"$out" || us=fail
			v[$topic,$m]+="$us "
			echo "round $r $topic $m: listener ${ms} ms = ${us} us/Fetch; $out; load $(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| topic | listener CPU us/Fetch, full (no session) | session (incremental) | session/full |"
echo "|---|---:|---:|---:|"
for topic in p1 p1000; do
	mf=$(median "${v[$topic,full]}"); ms=$(median "${v[$topic,session]}")
	echo "| $topic | $mf ($(spread "${v[$topic,full]}")) | $ms ($(spread "${v[$topic,session]}")) | $(awk -v a="$ms" -v b="$mf" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }') |"
done
for m in full session; do
	echo "$m: p1000/p1 listener CPU per Fetch $(awk -v a="$(median "${v[p1000,$m]}")" -v b="$(median "${v[p1,$m]}")" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
done
