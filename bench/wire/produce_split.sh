#!/usr/bin/env bash
# bench/wire/produce_split.sh: where the CPU of bench.sh's produce rows goes, client against
# broker, for issue 13's goal "produce 100 B and 1 KiB >= 1.3x Kafka at 64 KB batches".
#
# Runs kafka-producer-perf-test as bench.sh does (a new JVM per run, --throughput -1, 6 partitions,
# batch.size BENCH_BATCH_SIZE (65536), linger.ms 5, acks BENCH_ACKS (1)) against Apache Kafka
# (started here on BENCH_KAFKA_PORT, 39092) and kafka_pg at KP_BOOTSTRAP (127.0.0.1:9092, e.g. the
# scripts/setup.sh cluster, its SQL port BENCH_KP_PGPORT 5432 for a CHECKPOINT before each run),
# both warmed first with BENCH_WARMUP_RECORDS (3000000) records of 100 B as bench.sh does; then
# BENCH_REPS (3) rounds of BENCH_SMALL_RECORDS (1000000) x 100 B and BENCH_LARGE_RECORDS (200000)
# x 1 KiB on each broker, brokers alternating, `sync` (and kafka_pg's CHECKPOINT) before each run;
# kafka_pg's topics are deleted at the end.
# Beside each run bench/tuning/schedsample.py samples every Java and PostgreSQL thread every 0.2 s
# (it costs 5-8% of one CPU, in both brokers' runs alike) and bench/wire/produce_split.py splits
# the CPU over the producer's life into the client's (its JIT compilers, the thread that calls
# send(), the network thread, GC) and the broker's.
#
# Prints per broker and size the medians (min-max) of records/s and CPU microseconds per record,
# the cores in use, then per size: the measured ratio kafka_pg/Kafka; the ratio CPU alone predicts
# when the run is CPU-bound, (client + broker against Kafka) / (client + broker against kafka_pg);
# and the largest ratio a broker costing nothing could reach with this client, (client + broker
# against Kafka) / client against kafka_pg; both also with the client's JIT left out (its CPU
# taken as a fixed share of the machine rather than a cost per record).  Raw output in bench/out/produce_split-<time>.log.
# Asserts nothing.  As root (schedsample reads every process's /proc).
#
#   bash bench/wire/produce_split.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
KP_PGPORT=${BENCH_KP_PGPORT:-5432}
KPORT=${BENCH_KAFKA_PORT:-39092}
REPS=${BENCH_REPS:-3}
SMALL=${BENCH_SMALL_RECORDS:-1000000}
LARGE=${BENCH_LARGE_RECORDS:-200000}
BATCH=${BENCH_BATCH_SIZE:-65536}
ACKS=${BENCH_ACKS:-1}
WARMUP=${BENCH_WARMUP_RECORDS:-3000000}

bench_init produce_split
mkdir -p "$work/classes"
wb_build "$work/classes" || exit 1
say "produce_split: starting Apache Kafka on 127.0.0.1:$KPORT (log: $LOG)"
"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "Kafka did not start"; exit 1; }
kafka_pid=$(cat "$KAFKA_STATE_DIR/$KPORT/kafka.pid")
declare -A bs=([kafka]=127.0.0.1:$KPORT [kafka_pg]=$KP_BOOTSTRAP) bp=([kafka]=$kafka_pid [kafka_pg]=pg)
tag=ps$RANDOM
for b in kafka kafka_pg; do
	wb create "${bs[$b]}" 6 "$tag-warm" "$tag-100" "$tag-1024" >>"$LOG" 2>&1 || { say "cannot create topics on $b"; exit 1; }
	if [ "$WARMUP" -gt 0 ]; then
		say "produce_split: warming $b up ($WARMUP records, not measured)"
		perf_produce "$K" "${bs[$b]}" "$tag-warm" "$WARMUP" 100 1 "$BATCH" >>"$LOG"
		perf_produce "$K" "${bs[$b]}" "$tag-warm" "$WARMUP" 100 all "$BATCH" >>"$LOG"
	fi
done
checkpoint() { psql -h 127.0.0.1 -p "$KP_PGPORT" -U postgres -d postgres -XAtq -c CHECKPOINT >/dev/null 2>&1; }
# busy ticks and all ticks of the machine (/proc/stat's first line; idle and iowait are not busy)
ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

declare -A v
add() { v[$1]+="$2 "; }
for r in $(seq 1 "$REPS"); do
	for size in 100 1024; do
		n=$SMALL; [ $size = 1024 ] && n=$LARGE
		for b in kafka kafka_pg; do
			sync; checkpoint
			python3 "$repo/bench/tuning/schedsample.py" 0.2 >"$work/sched" & sp=$!
			read -r busy0 all0 < <(ticks)
			rps=$(perf_produce "$K" "${bs[$b]}" "$tag-$size" "$n" "$size" "$ACKS" "$BATCH")
			read -r busy1 all1 < <(ticks)
			kill $sp; wait $sp 2>/dev/null
			[ -n "$rps" ] || { say "round $r $b $size B: the perf test did not finish"; continue; }
			split=$(python3 "$repo/bench/wire/produce_split.py" "$work/sched" "${bp[$b]}" "$n")
			busy=$(awk -v b=$((busy1 - busy0)) -v a=$((all1 - all0)) -v c="$(nproc)" 'BEGIN { printf "%.2f", c * b / a }')
			echo "round $r $b size=$size records_per_s=$rps machine_busy_cores=$busy $split" | tee -a "$LOG"
			k="$b,$size"
			add "$k,rps" "$rps"; add "$k,busy" "$busy"
			for f in client_cores client_us jit_us app_us net_us gc_us broker_us broker_cores; do
				add "$k,$f" "$(sed -nE "s/.*(^| )${f}=([0-9.]+).*/\2/p" <<<"$split")"
			done
		done
	done
done

echo
echo "acks=$ACKS, batch.size $BATCH, linger.ms 5; medians (min-max) of $REPS; CPU in us per record over the producer's life"
echo
echo "| broker | record | records/s | machine busy, cores | client cores | client us/record | of which JIT | send() thread | network thread | GC | broker us/record |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
m() { local x=${v[$1]:-}; [ -n "$x" ] && echo "$(median "$x") ($(spread "$x"))" || echo "-"; }
for size in 100 1024; do
	for b in kafka kafka_pg; do
		k="$b,$size"
		echo "| $b | $size B | $(m "$k,rps") | $(median "${v[$k,busy]:-}") | $(median "${v[$k,client_cores]:-}") | $(m "$k,client_us") | $(median "${v[$k,jit_us]:-}") | $(median "${v[$k,app_us]:-}") | $(median "${v[$k,net_us]:-}") | $(median "${v[$k,gc_us]:-}") | $(m "$k,broker_us") |"
	done
done
echo
# The client's JIT counted two ways: per record (its CPU over the run divided by the records, as
# the rest), or as a fixed share of the CPUs that the run's rate does not change (its queue of
# work outlasts a short run), in which case only the client's other work and the broker divide
# what is left: the prediction and the ceiling then leave the JIT out.
for size in 100 1024; do
	awk -v s=$size -v rk="$(median "${v[kafka,$size,rps]:-}")" -v rp="$(median "${v[kafka_pg,$size,rps]:-}")" \
		-v ck="$(median "${v[kafka,$size,client_us]:-}")" -v bk="$(median "${v[kafka,$size,broker_us]:-}")" \
		-v cp="$(median "${v[kafka_pg,$size,client_us]:-}")" -v bq="$(median "${v[kafka_pg,$size,broker_us]:-}")" \
		-v jk="$(median "${v[kafka,$size,jit_us]:-}")" -v jp="$(median "${v[kafka_pg,$size,jit_us]:-}")" 'BEGIN {
		if (rk > 0 && cp > jp && bq + cp > 0)
			printf "%s B: measured kafka_pg/Kafka %.2f; CPU-bound prediction (client + broker) %.3f / %.3f us = %.2f, a broker costing nothing %.2f; the JIT as a fixed share: %.2f and %.2f\n",
				s, rp / rk, ck + bk, cp + bq, (ck + bk) / (cp + bq), (ck + bk) / cp,
				(ck - jk + bk) / (cp - jp + bq), (ck - jk + bk) / (cp - jp) }'
done | tee -a "$LOG"
wb delete "$KP_BOOTSTRAP" "$tag-warm" "$tag-100" "$tag-1024" >>"$LOG" 2>&1  # Kafka's go with its scratch folder
