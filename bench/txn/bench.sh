#!/usr/bin/env bash
# Transactional produce: Apache Kafka 4.x (single-node KRaft on loopback, started and stopped by
# this script) beside kafka_pg at $KP_BOOTSTRAP, with Kafka's own ProducerPerformance
# (kafka-producer-perf-test --transactional-id ... --transaction-duration-ms 100, acks=all,
# idempotent), one broker after the other, after a warm-up of each, repetitions interleaved.
# Prints medians and min-max of records/s and of the record latency p50/p99 (send to
# acknowledgement, as ProducerPerformance measures it), and the ratio kafka_pg/Kafka of the
# medians. Asserts nothing: a benchmark, not a test.
#
#   KP_BOOTSTRAP=127.0.0.1:9092 bench/txn/bench.sh
#
# Settings: KP_BOOTSTRAP (127.0.0.1:9092), BENCH_REPS (3), BENCH_SMALL_RECORDS (500000, 100 B),
# BENCH_LARGE_RECORDS (100000, 1 KiB), BENCH_TXN_MS (100), BENCH_KAFKA_PORT (39192),
# BENCH_STEP_TIMEOUT (300 s), KAFKA_HEAP_OPTS (-Xmx1g -Xms1g). Raw output: bench/out/txn-<time>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
REPS=${BENCH_REPS:-3}
SMALL=${BENCH_SMALL_RECORDS:-500000}
LARGE=${BENCH_LARGE_RECORDS:-100000}
TXN_MS=${BENCH_TXN_MS:-100}
KPORT=${BENCH_KAFKA_PORT:-39192}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-300}

bench_init txn

say "bench: starting Apache Kafka on 127.0.0.1:$KPORT (log: $LOG)"
"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "bench: Kafka did not start"; tail -20 "$LOG" >&2; exit 1; }
targets=("kafka=127.0.0.1:$KPORT" "kafka_pg=$KP_BOOTSTRAP")

declare -A vals # "target|figure" -> space-separated values
record() { vals["$1|$2"]+="$3 "; }

# kafka-producer-perf-test's summary line:
# N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th,
# P95 ms 95th, P99 ms 99th, P999 ms 99.9th.
produce() { # produce TARGET BOOTSTRAP TOPIC RECORDS SIZE [warmup]
	local name=$1 bs=$2 topic=$3 n=$4 size=$5 out line key="${5} B"
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "$topic" --num-records "$n" \
		--record-size "$size" --throughput -1 \
		--transactional-id "bench-txn-$topic" --transaction-duration-ms "$TXN_MS" \
		--producer-props bootstrap.servers="$bs" acks=all enable.idempotence=true 2>&1)
	echo "== $name $topic $n x $size" >>"$LOG"
	echo "$out" >>"$LOG"
	[ "${6:-}" = warmup ] && return
	line=$(grep -E "^$n records sent" <<<"$out" | tail -1)
	if [ -n "$line" ]; then
		record "$name" "$key records/s" "$(sed -E 's/.* records sent, ([0-9.]+) records\/sec.*/\1/' <<<"$line")"
		record "$name" "$key latency p50 ms" "$(sed -E 's/.*, ([0-9]+) ms 50th.*/\1/' <<<"$line")"
		record "$name" "$key latency p99 ms" "$(sed -E 's/.*, ([0-9]+) ms 99th.*/\1/' <<<"$line")"
	else
		record "$name" "$key records/s" fail
		say "  $name: $key failed: $(grep -iE 'error|exception' <<<"$out" | head -2)"
	fi
}

run=$$
for t in "${targets[@]}"; do
	say "bench: warming up ${t%%=*}"
	produce "${t%%=*}" "${t#*=}" "bench-txn-warm-$run" "$SMALL" 100 warmup
done
for rep in $(seq 1 "$REPS"); do
	for t in "${targets[@]}"; do
		say "bench: repetition $rep, ${t%%=*}"
		produce "${t%%=*}" "${t#*=}" "bench-txn-s-$run-$rep" "$SMALL" 100
		produce "${t%%=*}" "${t#*=}" "bench-txn-l-$run-$rep" "$LARGE" 1024
	done
done

figures=("100 B records/s" "100 B latency p50 ms" "100 B latency p99 ms"
	"1024 B records/s" "1024 B latency p50 ms" "1024 B latency p99 ms")
printf '| %-24s | %-26s | %-26s | %-14s |\n' "figure (transactional)" "Kafka median (min-max)" "kafka_pg median (min-max)" "kafka_pg/Kafka"
printf '|%s|%s|%s|%s|\n' "--------------------------" "----------------------------" "----------------------------" "----------------"
for f in "${figures[@]}"; do
	k=${vals["kafka|$f"]:-}
	p=${vals["kafka_pg|$f"]:-}
	km=$(median "$k")
	pm=$(median "$p")
	ratio=$(awk -v a="$pm" -v b="$km" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }')
	printf '| %-24s | %-26s | %-26s | %-14s |\n' "$f" "$(fmt "$km") ($(spread "$k"))" "$(fmt "$pm") ($(spread "$p"))" "$ratio"
done
say "bench: raw output in $LOG"
