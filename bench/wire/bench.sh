#!/usr/bin/env bash
# Wire-protocol benchmark: Apache Kafka 4.x (single-node KRaft on loopback, started and stopped by
# this script) beside kafka_pg at $KP_BOOTSTRAP, measured with the same Java client and the same
# settings, one broker after the other, repetitions interleaved. Prints the median of each figure
# and the ratio kafka_pg/Kafka; asserts nothing.
#
#   bench/wire/bench.sh                           # kafka_pg at 127.0.0.1:9092 if it answers
#   KP_BOOTSTRAP=127.0.0.1:19092 bench/wire/bench.sh
#
# Figures:
#   produce   kafka-producer-perf-test, --throughput -1, N records of 100 B and of 1 KiB, 6
#             partitions, acks=1 (idempotence off) and acks=all (idempotent), client defaults
#             otherwise: records/s and MB/s; and N ~100 B JSON-like text records compressed with
#             lz4 and with zstd (acks=all)
#   consume   from the start of the log just written, every partition, without a consumer group
#             (WireBench consume: assign + seekToBeginning; kafka_pg has no groups yet), and
#             kafka-consumer-perf-test (a group; "n/a" where groups are missing): records/s, MB/s
#   latency   WireBench e2e: 100 B and 1 KiB records at a fixed rate (5000/s for 10 s, after 15 s
#             at that rate unmeasured, acks=all, and 1 KiB at half the broker's saturated acks=all
#             1 KiB rate so far, its "50% of saturation, records/s" row; linger.ms=0) read by a
#             waiting consumer: end-to-end and acknowledgement p50/p99; a CHECKPOINT of kafka_pg
#             and `sync` before each latency run and each broker's turn (settle below)
#
# Settings: KP_BOOTSTRAP, BENCH_REPS (3), BENCH_SMALL_RECORDS (1000000, 100 B),
# BENCH_LARGE_RECORDS (200000, 1 KiB), BENCH_PARTITIONS (6), BENCH_E2E_RATE (5000),
# BENCH_E2E_SECONDS (10), BENCH_E2E_WARMUP_SECONDS (15: each latency run first sends at its rate for
# that long, unmeasured, while the client JVM's JIT compiler, which takes most of a CPU for its
# first ~13 s, finishes; 1 until run 11), BENCH_KAFKA_PORT (39092; the controller takes the next
# port),
# BENCH_STEP_TIMEOUT (seconds per measurement, 300), KAFKA_HEAP_OPTS (-Xmx1g -Xms1g),
# BENCH_BATCH_SIZE (16384: the producer's batch.size; issue 13 also compares 65536),
# BENCH_KP_PGPORT (5432: kafka_pg's SQL port, for the CHECKPOINT of settle below; user postgres
# without a password from 127.0.0.1, as the scripts/setup.sh cluster; used only if its kafka.port is
# KP_BOOTSTRAP's port), BENCH_CHECKPOINT (1; 0: no CHECKPOINT, as until run 15), BENCH_PREWARM (0;
# 1: before anything else, bench/lib.sh's prewarm_buffers on that cluster: the resolver's load of
# every partition waited for, every shared buffer touched once; for a cluster just restarted),
# BENCH_LINGER_MS (5: linger.ms, Kafka 4's default), BENCH_ONLY (empty; "consume": only the acks=1 produces that fill the logs and the two
# consume rows, for work on the fetch path; "acks": only the acks=all produces of 100 B and 1 KiB
# and the latency rows, for work on the acknowledgement path; the other rows print "-"),
# BENCH_E2E_DUMP (empty; a directory: every latency run writes each record's send time and
# latencies there, e2e-<broker>-<size>B-<rate>-<n>.txt, WireBench's -Dwb.dump),
# BENCH_WARMUP_RECORDS (3000000; 0: none): before the first repetition each broker gets an unmeasured
# produce (acks=1 and acks=all) and consume of that many 100 B records, so that the JVM's JIT
# and page cache are warm for Kafka's first measured repetition as they are for the later ones
# (without it Kafka's first repetition ran 30-45% slower, which flattered kafka_pg; with 300,000,
# the default until run 9, a fresh Kafka's acks=all rate was still rising through its third
# million records: docs/performance.md, run 9).
# The raw output of every step goes to bench/out/wire-<time>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
REPS=${BENCH_REPS:-3}
SMALL=${BENCH_SMALL_RECORDS:-1000000}
LARGE=${BENCH_LARGE_RECORDS:-200000}
PARTS=${BENCH_PARTITIONS:-6}
RATE=${BENCH_E2E_RATE:-5000}
E2E_S=${BENCH_E2E_SECONDS:-10}
E2E_WARM=${BENCH_E2E_WARMUP_SECONDS:-15}
KPORT=${BENCH_KAFKA_PORT:-39092}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-300}
ONLY=${BENCH_ONLY:-}
BATCH=${BENCH_BATCH_SIZE:-16384}
LINGER=${BENCH_LINGER_MS:-5}

bench_init wire

mkdir -p "$work/classes"
wb_build "$work/classes" || exit 1  # and wb (bench/lib.sh), each run at most STEP_TIMEOUT seconds
WB_TIMEOUT=$STEP_TIMEOUT
port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

say "bench: starting Apache Kafka on 127.0.0.1:$KPORT (log: $LOG)"
"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "bench: Kafka did not start"; tail -20 "$LOG" >&2; exit 1; }
targets=("kafka=127.0.0.1:$KPORT")
if port_open "$KP_BOOTSTRAP" && wb create "$KP_BOOTSTRAP" 1 "wb-probe-$$" >>"$LOG" 2>&1; then
	wb delete "$KP_BOOTSTRAP" "wb-probe-$$" >>"$LOG" 2>&1
	targets+=("kafka_pg=$KP_BOOTSTRAP")
	have_kp=1
else
	have_kp=0
	say "kafka_pg: not available at $KP_BOOTSTRAP"
fi

declare -A vals  # "target|metric" -> space-separated values

record() { vals["$1|$2"]+="$3 "; }

# kafka-producer-perf-test's summary line:
# N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th, ...
produce() { # produce TARGET BOOTSTRAP TOPIC RECORDS SIZE ACKS [CODEC]
	local name=$1 bs=$2 topic=$3 n=$4 size=$5 acks=$6 codec=${7:-none} idem=true out line
	[ "$acks" = all ] || idem=false
	# --payload-file: compressible text records (the default payload is random letters)
	local sizeargs=(--record-size "$size")
	[ "$codec" = none ] || sizeargs=(--payload-file "$work/payload.txt")
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "$topic" --num-records "$n" \
		"${sizeargs[@]}" --throughput -1 \
		--producer-props bootstrap.servers="$bs" acks="$acks" enable.idempotence=$idem compression.type="$codec" \
		batch.size="$BATCH" linger.ms="$LINGER" 2>&1)
	echo "$out" >>"$LOG"
	line=$(grep -E "^$n records sent" <<<"$out" | tail -1)
	local key="produce ${size}B acks=$acks"
	[ "$codec" = none ] || key="produce ~${size}B text $codec acks=$acks"
	if [ -n "$line" ]; then
		record "$name" "$key records/s" "$(sed -E 's/.* records sent, ([0-9.]+) records\/sec.*/\1/' <<<"$line")"
		record "$name" "$key MB/s" "$(sed -E 's/.*records\/sec \(([0-9.]+) MB\/sec\).*/\1/' <<<"$line")"
	else
		record "$name" "$key records/s" fail
		record "$name" "$key MB/s" fail
		say "  $name: $key failed: $(grep -iE 'error|exception' <<<"$out" | head -2)"
	fi
}

consume() { # consume TARGET BOOTSTRAP TOPIC RECORDS SIZE
	local name=$1 bs=$2 topic=$3 n=$4 size=$5 out key="consume ${5}B (no group)"
	out=$(wb consume "$bs" "$topic" "$PARTS" "$n" "$STEP_TIMEOUT" 2>&1)
	echo "$out" >>"$LOG"
	if grep -q "complete=true" <<<"$out"; then
		record "$name" "$key records/s" "$(sed -nE 's/.*records_per_sec=([0-9.]+).*/\1/p' <<<"$out")"
		record "$name" "$key MB/s" "$(sed -nE 's/.*mb_per_sec=([0-9.]+).*/\1/p' <<<"$out")"
	else
		record "$name" "$key records/s" fail
		record "$name" "$key MB/s" fail
		say "  $name: $key failed: $(tail -2 <<<"$out")"
	fi
}

# kafka-consumer-perf-test: a header line, then
# start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
# rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec (fetch.*: without the group join)
consume_group() { # consume_group TARGET BOOTSTRAP TOPIC RECORDS SIZE
	local name=$1 bs=$2 topic=$3 n=$4 size=$5 out line key="consume ${5}B (consumer-perf-test, group)"
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-consumer-perf-test --bootstrap-server "$bs" --topic "$topic" \
		--messages "$n" --timeout 30000 2>&1)
	echo "$out" >>"$LOG"
	line=$(grep -E '^[0-9]{4}-' <<<"$out" | tail -1)
	if [ -n "$line" ] && [ "$(awk -F', *' '{ print $5 }' <<<"$line")" -ge "$n" ] 2>/dev/null; then
		record "$name" "$key records/s" "$(awk -F', *' '{ print $10 }' <<<"$line")"
		record "$name" "$key MB/s" "$(awk -F', *' '{ print $9 }' <<<"$line")"
	else
		record "$name" "$key records/s" n/a
		record "$name" "$key MB/s" n/a
		say "  $name: $key: $(grep -iE 'error|exception' <<<"$out" | head -2)"
	fi
}

# Write what both brokers have pending to disk before a broker's turn and before each latency run:
# kafka_pg's dirty shared buffers (a CHECKPOINT, through its SQL port BENCH_KP_PGPORT, when the
# cluster there is the one listening on KP_BOOTSTRAP's port), then every dirty page in the page cache (`sync`), where Kafka's pending writes are.
# Without the sync the kernel writes back the other broker's data (up to 1 GB from Kafka's last
# latency run, which does not fsync) 30 s after it was written, during kafka_pg's turn, and
# kafka_pg's WAL flushes wait for the disk behind it: thousands of acknowledgements of 5-30 ms in a
# second (docs/performance.md, runs 11-14).  The sync also writes out Kafka's own earlier rows
# before its latency runs; kafka_pg's earlier rows wait in shared buffers instead, where a sync does
# not reach, and its checkpointer wrote them out during its latency run at 50% of saturation at up
# to twice that run's rate (docs/performance.md, run 15), hence the CHECKPOINT.  Each broker still
# meets the write-back of what it writes during the run.
KP_PGPORT=${BENCH_KP_PGPORT:-5432}
kp_sql() { psql -h 127.0.0.1 -p "$KP_PGPORT" -U postgres -d postgres -XAtq -c "$1" 2>>"$LOG"; }
# only the cluster whose listener is KP_BOOTSTRAP's port
if [ "${BENCH_CHECKPOINT:-1}" = 1 ] && [ "$(kp_sql "SHOW kafka.port")" = "${KP_BOOTSTRAP##*:}" ]; then
	settle() { kp_sql CHECKPOINT; sync; }
	settle_what="CHECKPOINT on kafka_pg (SQL port $KP_PGPORT), then sync"
else
	settle() { sync; }
	settle_what="sync only (no kafka_pg listening on ${KP_BOOTSTRAP##*:} answers SQL at port $KP_PGPORT, or BENCH_CHECKPOINT=0)"
fi
say "bench: before each broker's turn and each latency run: $settle_what"
# BENCH_PREWARM=1: first wait for that cluster's resolver to load every partition and touch every
# shared buffer once, as a broker that has run a while has (after a start both cost the listener:
# docs/performance.md, "The first minute after a restart")
if [ "${BENCH_PREWARM:-0}" = 1 ]; then
	if [ "$(kp_sql "SHOW kafka.port")" = "${KP_BOOTSTRAP##*:}" ]; then
		say "bench: waiting for kafka_pg's partitions to load, then touching its shared buffers once (bench/lib.sh's prewarm_buffers)"
		if prewarm_buffers "$KP_PGPORT" 2>>"$LOG"; then
			prewarm_what=" Before anything, kafka_pg's partitions loaded and its shared buffers touched once (BENCH_PREWARM=1)."
		else
			say "bench: prewarm_buffers failed (see $LOG)"
		fi
	else
		say "bench: BENCH_PREWARM=1, but no kafka_pg listening on ${KP_BOOTSTRAP##*:} answers SQL at port $KP_PGPORT: not done"
	fi
fi

# Topics are deleted after the last measurement, not after each broker's turn: a deleted topic's
# files are freed (Kafka removes them file.delete.delay.ms, 60 s, later; kafka_pg when the deleting
# transaction commits, as PostgreSQL drops a table), and on a file system mounted with `discard`
# (this machine's) freeing 1.5 GB held every fsync on it for 0.1-0.3 s, in the other broker's turn
# (docs/performance.md, runs 11-14, and bench/tuning/discard.sh).
deletes=()
later_delete() { deletes+=("$*"); }

E2E_DUMP=${BENCH_E2E_DUMP:-}
e2e_runs=0
e2e() { # e2e TARGET BOOTSTRAP TOPIC [SIZE RATE LABEL]
	local name=$1 bs=$2 topic=$3 size=${4:-100} rate=${5:-$RATE} label=${6:-${RATE}/s} out m dump=()
	local key="latency ${size}B @${label} acks=all"
	e2e_runs=$((e2e_runs + 1))
	settle
	[ -z "$E2E_DUMP" ] || dump=("-Dwb.dump=$E2E_DUMP/e2e-$name-${size}B-$rate-$e2e_runs.txt")
	out=$(wb "${dump[@]}" -Dwb.warmup_s="$E2E_WARM" e2e "$bs" "$topic" "$PARTS" "$rate" "$E2E_S" "$size" 2>&1)
	echo "$out" >>"$LOG"
	if grep -q "^e2e " <<<"$out"; then
		for m in e2e_p50 e2e_p99 ack_p50 ack_p99; do
			record "$name" "$key ${m/_/ } ms" "$(sed -nE "s/.*${m}_ms=([0-9.]+|NaN).*/\1/p" <<<"$out")"
		done
		grep -q "received=$((rate * (E2E_WARM + E2E_S))) " <<<"$out" || say "  $name: $key: not every record was received: $out"
	else
		for m in e2e_p50 e2e_p99 ack_p50 ack_p99; do record "$name" "$key ${m/_/ } ms" fail; done
		say "  $name: $key failed: $(tail -2 <<<"$out")"
	fi
}

# about 100-byte JSON-like lines for the compressed runs
for i in $(seq 1 2000); do
	printf '{"id":%d,"user":"user-%d","event":"page_view","path":"/products/%d","ms":%d}\n' \
		"$i" $((i % 97)) $((i % 313)) $((1700000000000 + i * 37))
done >"$work/payload.txt"

metrics=()
for size in 100 1024; do
	for acks in 1 all; do metrics+=("produce ${size}B acks=$acks records/s" "produce ${size}B acks=$acks MB/s"); done
done
for codec in lz4 zstd; do metrics+=("produce ~100B text $codec acks=all records/s" "produce ~100B text $codec acks=all MB/s"); done
for size in 100 1024; do metrics+=("consume ${size}B (no group) records/s" "consume ${size}B (no group) MB/s"); done
metrics+=("consume 100B (consumer-perf-test, group) records/s" "consume 100B (consumer-perf-test, group) MB/s")
for m in "e2e p50" "e2e p99" "ack p50" "ack p99"; do metrics+=("latency 100B @${RATE}/s acks=all $m ms"); done
for m in "e2e p50" "e2e p99" "ack p50" "ack p99"; do metrics+=("latency 1024B @${RATE}/s acks=all $m ms"); done
for m in "e2e p50" "e2e p99" "ack p50" "ack p99"; do metrics+=("latency 1024B @50% of saturation acks=all $m ms"); done
metrics+=("50% of saturation, records/s")

WARMUP=${BENCH_WARMUP_RECORDS:-3000000}
if [ "$WARMUP" -gt 0 ]; then
	for tg in "${targets[@]}"; do
		name=${tg%%=*}
		bs=${tg#*=}
		tag=warm-$RANDOM
		say "bench: warming $name up ($WARMUP records each way, not measured)"
		if wb create "$bs" "$PARTS" "wb-$tag-1" "wb-$tag-all" >>"$LOG" 2>&1; then
			# recorded under "warmup-<target>", which the table never prints
			produce "warmup-$name" "$bs" "wb-$tag-1" "$WARMUP" 100 1
			produce "warmup-$name" "$bs" "wb-$tag-all" "$WARMUP" 100 all
			consume "warmup-$name" "$bs" "wb-$tag-1" "$WARMUP" 100
			later_delete "$bs" "wb-$tag-1" "wb-$tag-all"
		fi
	done
fi

t_start=$SECONDS
for rep in $(seq 1 "$REPS"); do
	for tg in "${targets[@]}"; do
		name=${tg%%=*}
		bs=${tg#*=}
		tag=r$rep-$RANDOM
		topics=(wb-100-1-$tag wb-100-all-$tag wb-1024-1-$tag wb-1024-all-$tag wb-e2e-$tag wb-lz4-$tag wb-zstd-$tag)
		say "bench: repetition $rep/$REPS, $name at $bs ($((SECONDS - t_start)) s so far)"
		settle
		if ! wb create "$bs" "$PARTS" "${topics[@]}" >>"$LOG" 2>&1; then
			say "  $name: creating topics failed (see $LOG)"
			continue
		fi
		[ "$ONLY" = acks ] || produce "$name" "$bs" "wb-100-1-$tag" "$SMALL" 100 1
		[ "$ONLY" = consume ] || produce "$name" "$bs" "wb-100-all-$tag" "$SMALL" 100 all
		[ "$ONLY" = acks ] || produce "$name" "$bs" "wb-1024-1-$tag" "$LARGE" 1024 1
		if [ "$ONLY" != consume ]; then
			produce "$name" "$bs" "wb-1024-all-$tag" "$LARGE" 1024 all
			if [ "$ONLY" != acks ]; then
				produce "$name" "$bs" "wb-lz4-$tag" "$SMALL" 100 all lz4
				produce "$name" "$bs" "wb-zstd-$tag" "$SMALL" 100 all zstd
			fi
		fi
		if [ "$ONLY" != acks ]; then
			consume "$name" "$bs" "wb-100-1-$tag" "$SMALL" 100
			consume "$name" "$bs" "wb-1024-1-$tag" "$LARGE" 1024
		fi
		if [ "$ONLY" != consume ]; then
			[ "$ONLY" = acks ] || consume_group "$name" "$bs" "wb-100-all-$tag" "$SMALL" 100
			e2e "$name" "$bs" "wb-e2e-$tag"
			e2e "$name" "$bs" "wb-e2e-$tag" 1024 "$RATE" "${RATE}/s"
			# half of this broker's saturated acks=all 1 KiB rate, as measured so far
			sat=$(median "${vals["$name|produce 1024B acks=all records/s"]:-}")
			if [[ $sat =~ ^[0-9.]+$ ]]; then
				half=$(awk -v r="$sat" 'BEGIN { printf "%d", r / 2 }')
				record "$name" "50% of saturation, records/s" "$half"
				e2e "$name" "$bs" "wb-e2e-$tag" 1024 "$half" "50% of saturation"
			fi
		fi
		later_delete "$bs" "${topics[@]}"
	done
done
for d in "${deletes[@]}"; do
	# shellcheck disable=SC2086
	wb delete $d >>"$LOG" 2>&1 || say "  deleting topics failed: $d"
done



echo
echo "## Wire benchmark: Apache Kafka $(basename "$jars" | sed 's/kafka-jars-//') vs kafka_pg ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
echo
echo "Medians of $REPS repetitions. $PARTS partitions; $SMALL records of 100 B, $LARGE of 1 KiB; producer batch.size $BATCH, linger.ms $LINGER; same Java client"
echo "(kafka-clients $(basename "$jars" | sed 's/kafka-jars-//')) and settings for both. Kafka: $KAFKA_STATE_DIR, heap ${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g}."
echo "Before each broker's turn and each latency run: $settle_what.${prewarm_what:-}"
[ $have_kp = 1 ] || echo "kafka_pg: not available at $KP_BOOTSTRAP"
echo
printf '| %-52s | %12s | %12s | %14s |\n' "figure" "Kafka" "kafka_pg" "kafka_pg/Kafka"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..16})"
for m in "${metrics[@]}"; do
	k=$(median "${vals["kafka|$m"]:-}")
	if [ $have_kp = 1 ]; then
		p=$(median "${vals["kafka_pg|$m"]:-}")
		ratio=$(awk -v a="$p" -v b="$k" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else print "-" }')
	else
		p=-
		ratio=-
	fi
	printf '| %-52s | %12s | %12s | %14s |\n' "$m" "$(fmt "${k:--}")" "$(fmt "${p:--}")" "$ratio"
done
echo
echo "Spread (min-max of the repetitions):"
for m in "${metrics[@]}"; do
	[ -n "${vals["kafka|$m"]:-}${vals["kafka_pg|$m"]:-}" ] || continue
	echo "- $m: Kafka $(spread "${vals["kafka|$m"]:-}"), kafka_pg $(spread "${vals["kafka_pg|$m"]:-}")"
done
echo
echo "Throughput: higher is better; latency (ms): lower is better. Raw output: $LOG ($((SECONDS - t_start)) s)."
