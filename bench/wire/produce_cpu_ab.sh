#!/usr/bin/env bash
# What a produced record costs the broker, two kafka_pg builds side by side (issue 13): a baseline
# and a candidate, each a PostgreSQL installation with its kafka_pg (e.g. made with
# `source /work/pgr-env.sh NAME; make install` from two trees), each in its own throwaway cluster
# with scripts/broker-tuning.sh's settings, measured one after the other with repetitions
# interleaved.  Each measurement: kafka-producer-perf-test, N records of SIZE bytes, --throughput
# -1, acks=1 without idempotence, batch.size BATCH, linger.ms LINGER, to a topic of 6 partitions;
# it gives the records/s and the CPU time (/proc/PID/schedstat, nanoseconds) per record of the listener
# workers and of all the cluster's processes (WAL writer, background writer, checkpointer...).
# CPU per record is far less noisy than a rate on a shared machine.  Prints every measurement,
# then per build the median and spread of each figure and the ratios candidate/baseline; asserts
# nothing.  As root.
#
#   BASE_BINDIR=/opt/pgr/a/usr/lib/postgresql/15/bin NEW_BINDIR=/opt/pgr/b/usr/lib/postgresql/15/bin \
#       bench/wire/produce_cpu_ab.sh
#
# Settings: BENCH_REPS (5), BENCH_RECORDS (200000: of 1 KiB; of SIZE bytes, that volume),
# BENCH_RECORD_SIZES ("1024 100"), BENCH_BATCH_SIZE (65536), BENCH_LINGER_MS (5),
# BENCH_SHARED_BUFFERS (256MB),
# BENCH_PORT (first PostgreSQL port, 56480), BENCH_KAFKA_PORT (first listener port, 29480).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
. "$repo/scripts/broker-tuning.sh"
K=$repo/test/clients/kafka/kafka.sh
REPS=${BENCH_REPS:-5}
N=${BENCH_RECORDS:-200000}
SIZES=${BENCH_RECORD_SIZES:-"1024 100"}
BATCH=${BENCH_BATCH_SIZE:-65536}
LINGER=${BENCH_LINGER_MS:-5}
export KP_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-256MB}
ab_clusters produce_ab "${BENCH_PORT:-56480}" "${BENCH_KAFKA_PORT:-29480}" "$(kp_broker_tuning)"

cputime() { # cputime PID...: the nanoseconds they have run on a CPU (/proc/PID/schedstat)
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{print $1}' "/proc/$p/schedstat" 2>/dev/null || echo 0)))
	done
	echo $t
}
cluster_pids() { # every process of a build's cluster
	local pm
	pm=$(ab_pgc "${bindirs[$1]}" postmaster-pid "$work/$1/data")
	echo "$pm" $(ps -o pid= --ppid "$pm")
}
listener_pids() {
	"${bindirs[$1]}/psql" -h 127.0.0.1 -p "${pgport[$1]}" -U postgres -d postgres -XAtq \
		-c "SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'"
}
us_per_rec() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.3f", (b - a) / 1e3 / n }'; }

say "produce_cpu_ab: baseline on 127.0.0.1:${kport[base]}, candidate on 127.0.0.1:${kport[new]}; $N KiB per run, sizes $SIZES, batch.size $BATCH, linger.ms $LINGER, $REPS reps; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

declare -A vals
for size in $SIZES; do
	n=$((N * 1024 / size))
	# unmeasured: every worker's first touch of shared buffers, the JIT, the page cache
	for build in base new; do
		"$K" cli kafka-producer-perf-test --topic ab --num-records $((3 * n)) --record-size "$size" --throughput -1 \
			--producer-props bootstrap.servers="127.0.0.1:${kport[$build]}" acks=1 enable.idempotence=false \
			batch.size="$BATCH" linger.ms="$LINGER" >/dev/null 2>&1
	done
	for rep in $(seq 1 "$REPS"); do
		for build in base new; do
			read -r -a lp <<<"$(listener_pids $build | tr '\n' ' ')"
			read -r -a cp <<<"$(cluster_pids $build)"
			l0=$(cputime "${lp[@]}"); c0=$(cputime "${cp[@]}")
			rs=$("$K" cli kafka-producer-perf-test --topic ab --num-records "$n" --record-size "$size" --throughput -1 \
				--producer-props bootstrap.servers="127.0.0.1:${kport[$build]}" acks=1 enable.idempotence=false \
				batch.size="$BATCH" linger.ms="$LINGER" 2>&1 |
				sed -nE "s/^$n records sent, ([0-9.]+) records\/sec.*/\1/p" | tail -1)
			l1=$(cputime "${lp[@]}"); c1=$(cputime "${cp[@]}")
			lu=$(us_per_rec "$l0" "$l1" "$n"); cu=$(us_per_rec "$c0" "$c1" "$n")
			vals[$size,$build,rate]+="${rs:-fail} "
			vals[$size,$build,lcpu]+="$lu "
			vals[$size,$build,ccpu]+="$cu "
			say "$size B rep $rep $build: ${rs:-fail} records/s, listener $lu us/record, cluster $cu us/record; load $(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| record size | figure | baseline median (spread) | candidate median (spread) | candidate/baseline |"
echo "|---|---|---:|---:|---:|"
for size in $SIZES; do
	for f in rate lcpu ccpu; do
		case $f in
		rate) name="records/s" ;;
		lcpu) name="listener CPU us/record" ;;
		ccpu) name="cluster CPU us/record" ;;
		esac
		b=$(median "${vals[$size,base,$f]}")
		n=$(median "${vals[$size,new,$f]}")
		r=$(awk -v a="$n" -v b="$b" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }')
		echo "| $size B | $name | $b ($(spread "${vals[$size,base,$f]}")) | $n ($(spread "${vals[$size,new,$f]}")) | $r |"
	done
done
