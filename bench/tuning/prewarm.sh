#!/usr/bin/env bash
# bench/tuning/prewarm.sh: what the first minute after a restart costs the acks=all produce rows of
# bench/wire/bench.sh: the resolver's load of every partition and the first touch of shared buffers
# (docs/performance.md, "The first minute after a restart").  On the scripts/setup.sh cluster,
# repetitions interleaved, each turn restarts the server, then either runs bench/lib.sh's
# prewarm_buffers (waits for the load, touches every buffer once: "touched") or nothing ("fresh"),
# or waits BENCH_WAIT seconds (30: "waited"), runs a CHECKPOINT and a sync, and measures on a new
# topic of 6 partitions kafka-producer-perf-test with BENCH_RECORDS (2,000,000) records of 100 B
# and then BENCH_LARGE_RECORDS (400,000) of 1 KiB, acks=all (idempotent), batch.size
# BENCH_BATCH_SIZE (16384), linger.ms 5: about 0.6 GB of log, a tenth of the buffers.  Prints each
# turn (records/s, and the page faults the listener workers took per 1,000 records:
# /proc/PID/stat's minflt), then the medians (min-max) and the ratio of the last mode to the
# first.  The server is left running; run as root; asserts nothing.
#
#   bash bench/tuning/prewarm.sh
#
# Settings: BENCH_REPS (4), BENCH_MODES ("fresh touched"; any of fresh, touched, waited),
# BENCH_RECORDS, BENCH_LARGE_RECORDS, BENCH_BATCH_SIZE, KP_DATA (/var/lib/kafka_pg/data),
# BENCH_KP_PGPORT (5432), KP_BOOTSTRAP (127.0.0.1:9092).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
. "$repo/test/lib/cluster.sh"
K=$repo/test/clients/kafka/kafka.sh
REPS=${BENCH_REPS:-4}
N=${BENCH_RECORDS:-2000000}
NL=${BENCH_LARGE_RECORDS:-400000}
BATCH=${BENCH_BATCH_SIZE:-16384}
DATA=${KP_DATA:-/var/lib/kafka_pg/data}
PGPORT=${BENCH_KP_PGPORT:-5432}
BS=${KP_BOOTSTRAP:-127.0.0.1:9092}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
wb_build "$work/classes" || exit 1

# minor page faults of the pids given, summed (field 10 of /proc/PID/stat)
faults() { local p n=0; for p in "$@"; do n=$((n + $(awk '{ print $10 }' "/proc/$p/stat"))); done; echo "$n"; }

declare -A vals
echo "prewarm A/B on $DATA: $REPS repetitions; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
	for mode in ${BENCH_MODES:-fresh touched}; do
		restart_broker "$DATA" "$BS" || exit 1
		[ $mode = touched ] && { prewarm_buffers "$PGPORT" 2>/dev/null || exit 1; }
		[ $mode = waited ] && sleep "${BENCH_WAIT:-30}"
		topic=pw-$mode-$rep-$RANDOM
		wb create "$BS" 6 "$topic" >/dev/null 2>&1 || { echo "creating $topic failed"; exit 1; }
		psql -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -XAtq -c CHECKPOINT
		sync
		mapfile -t L < <(pgrep -f "postgres: kafka_pg listener")
		f0=$(faults "${L[@]}")
		small=$(perf_produce "$K" "$BS" "$topic" "$N" 100 all "$BATCH")
		f1=$(faults "${L[@]}")
		large=$(perf_produce "$K" "$BS" "$topic" "$NL" 1024 all "$BATCH")
		f2=$(faults "${L[@]}")
		wb delete "$BS" "$topic" >/dev/null 2>&1
		fs=$(awk -v a="$f0" -v b="$f1" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / (n / 1000) }')
		fl=$(awk -v a="$f1" -v b="$f2" -v n="$NL" 'BEGIN { printf "%.1f", (b - a) / (n / 1000) }')
		echo "rep $rep $mode: 100 B acks=all ${small:-fail} records/s ($fs faults per 1,000) | 1 KiB acks=all ${large:-fail} records/s ($fl faults per 1,000)"
		vals[$mode|small]+="$small "
		vals[$mode|large]+="$large "
	done
done
echo
read -r -a modes <<<"${BENCH_MODES:-fresh touched}"
for k in "small:100 B acks=all, records/s" "large:1 KiB acks=all, records/s"; do
	m=${k%%:*}
	line="${k#*:}:"
	for mode in "${modes[@]}"; do line+=" $mode $(median "${vals[$mode|$m]}") ($(spread "${vals[$mode|$m]}"))"; done
	a=$(median "${vals[${modes[0]}|$m]}")
	b=$(median "${vals[${modes[-1]}|$m]}")
	echo "$line, ${modes[-1]}/${modes[0]} $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
done
