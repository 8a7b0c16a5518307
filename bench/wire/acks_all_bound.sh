#!/usr/bin/env bash
# bench/wire/acks_all_bound.sh: what bounds an acks=all producer at 16 KB batches on a quiet machine.
# One producer (kafka-producer-perf-test, N records of 100 B, batch.size 16384, linger.ms 5,
# max.in.flight 5, --print-metrics) against Apache Kafka 4.4 (KRaft on loopback) and against a
# throwaway kafka_pg cluster with the broker tuning of scripts/broker-tuning.sh, acks=all
# (idempotent) unless the variant ends in "-acks1" (acks=1, idempotence off).  Variants, one run
# each per repetition, repetitions interleaved:
#   kafka, kafka-acks1    Apache Kafka
#   tuned, tuned-acks1    kafka_pg as scripts/setup.sh makes it
#   zero                  kafka_pg with wal_init_zero = on (new WAL segments written full of zeros
#                         before use, so no flush allocates blocks), set by a reload
#   nice                  kafka_pg with its listener workers reniced to -10 for the run (a larger
#                         share of the CPUs, not an earlier turn after a wake-up: see "slice")
#   flusher               kafka_pg with kafka.wal_flusher = on (the WAL flusher makes the flushes,
#                         not the listener workers; their fdatasync columns then read 0), by a reload
#   slice                 kafka_pg with its listener workers given a 0.1 ms scheduler slice for the
#                         run (bench/tuning/sched_slice.py; Linux 6.12+): woken, they run sooner
# Prints per variant the medians (and spread) of records/s, the producer's request-latency-avg and
# -max (ms) and records-per-request-avg; for kafka_pg the WAL bytes written per record
# (pg_current_wal_lsn before and after) and, from a system-wide `perf record` of the scheduler
# events and fdatasync calls during the run ("-" without perf), the listener workers' own
# fdatasync calls per 1,000 records, the median, 90th percentile and mean of their durations
# (ms), and the median and mean of the part of each call the worker spent runnable, waiting for a
# CPU, and asleep (the I/O): bench/wire/sched_split.py, which also writes to the log who had the
# CPUs (the listener, the client's JIT compiler threads, idle, ...).  Where throughput = in flight
# x records per request / request latency, the producer is bound by the broker's time per
# request, not by CPU.
# With BENCH_BESIDE=1, during each kafka_pg run bench/tuning/fdatasync.py also appends 160 KB and
# calls fdatasync in a loop in the cluster's directory for 2 s (from 1 s after the producer
# starts) and its median/mean (ms) are printed: the same call under the same traffic, outside the
# server (it adds its own load to the disk: leave it off for the throughput figures).
# BENCH_BESIDE_GAP_MS (0) paces that loop: a sleep after each call, as a listener worker flushes
# every few ms rather than back to back.  At the end it prints what the background writer,
# checkpoints and backends wrote (pg_stat_bgwriter).  Before the first repetition Kafka and
# "tuned" get an unmeasured run of BENCH_WARMUP_RECORDS (3000000: a fresh Kafka's acks=all rate
# on the 2-core machine rose from about 200k to 280k-370k records/s over its first 3,000,000
# records; 300,000 left it cold: docs/performance.md, run 9).
# Asserts nothing.  As root.
#
#   bash bench/wire/acks_all_bound.sh
#   BENCH_BESIDE=1 BENCH_VARIANTS="tuned tuned-acks1" bash bench/wire/acks_all_bound.sh
#
# Settings: BENCH_REPS (3), BENCH_RECORDS (1000000), KP_TEST_PORT (55432), KAFKA_TEST_PORT (19092:
# kafka_pg's listener), BENCH_KAFKA_PORT (39092: Apache Kafka), BENCH_VARIANTS ("kafka tuned zero
# nice kafka-acks1 tuned-acks1"; "flusher" and "slice" are left out unless named), BENCH_BESIDE (0),
# BENCH_BESIDE_GAP_MS (0).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
KPORT=${BENCH_KAFKA_PORT:-39092}
bench_init acks_all_bound
. "$repo/scripts/broker-tuning.sh"
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-1000000}
VARIANTS=${BENCH_VARIANTS:-kafka tuned zero nice kafka-acks1 tuned-acks1}
pgc() { bash "$repo/test/lib/pgcluster" "$@"; }

root=$(pgc mktemp acks_bound) || exit 1
bench_cleanup() {
	"$K" stop "$KPORT" >/dev/null 2>&1 || true
	pgc stop "$root/data" immediate >/dev/null 2>&1
	rm -rf "$work" "$root"
}
port=$(pgc free-port "${KP_TEST_PORT:-55432}")
kp=$(pgc free-port "${KAFKA_TEST_PORT:-19092}" "$port")
KP_EXTRA_CONF="$(kp_broker_tuning)" pgc init "$root/data" "$port" "$kp" >>"$LOG" 2>&1 || { say "init failed"; exit 1; }
pgc start "$root/data" >>"$LOG" 2>&1 || { say "start failed"; exit 1; }
pgc create-extension "$port" postgres >>"$LOG" 2>&1 || exit 1
q() { psql -X -At -h 127.0.0.1 -p "$port" -U postgres -c "$1"; }
case " $VARIANTS " in *" kafka"*)
	"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "Kafka did not start"; tail -20 "$LOG" >&2; exit 1; } ;;
esac
have_perf=0
perf_events=(-e sched:sched_switch -e sched:sched_wakeup -e syscalls:sys_enter_fdatasync -e syscalls:sys_exit_fdatasync)
perf record -a -o "$work/perf.check" "${perf_events[@]}" -- true >/dev/null 2>&1 && have_perf=1
say "acks_all_bound: kafka_pg 127.0.0.1:$kp (PostgreSQL $port), Kafka 127.0.0.1:$KPORT; $N x 100 B, $REPS reps; load $(cut -d' ' -f1-3 /proc/loadavg); raw output in $LOG"

# listener_pids: the listener workers' pids, comma-separated
listener_pids() { q "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'"; }

# run_once V REP [RECORDS]: one producer run; prints "records/s lat_avg lat_max rec_per_req
# wal_bytes_per_record fds_per_1k fds_median fds_p90 fds_mean runnable_median runnable_mean
# asleep_median asleep_mean beside"
run_once() {
	local v=$1 n=${3:-$N} bs=127.0.0.1:$kp topic="b_$1_$2" out pids tr="$work/trace.$1.$2" tpid="" wb=- l0
	local fd="- - - - - - - -" bpid="" beside=- acks="acks=all enable.idempotence=true"
	[ "${v%-acks1}" != "$v" ] && acks="acks=1 enable.idempotence=false"
	v=${v%-acks1}
	[ "$v" = kafka ] && bs=127.0.0.1:$KPORT
	"$K" cli kafka-topics --bootstrap-server "$bs" --create --topic "$topic" --partitions 6 >>"$LOG" 2>&1
	if [ "$v" != kafka ]; then
		q "ALTER SYSTEM SET wal_init_zero = $([ "$v" = zero ] && echo on || echo off)" >/dev/null
		q "ALTER SYSTEM SET kafka.wal_flusher = $([ "$v" = flusher ] && echo on || echo off)" >/dev/null
		q "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		pids=$(listener_pids)
		[ "$v" = nice ] && renice -n -10 -p ${pids//,/ } >/dev/null
		if [ "$v" = slice ] && ! python3 "$repo/bench/tuning/sched_slice.py" 100000 ${pids//,/ } >>"$LOG" 2>&1; then
			say "slice: sched_setattr failed (Linux 6.12+ needed); this run has the default slice"
		fi
		l0=$(q "SELECT pg_current_wal_lsn()")
		if [ "$have_perf" = 1 ] && [ -n "$pids" ]; then
			perf record -a -o "$tr" "${perf_events[@]}" >/dev/null 2>&1 &
			tpid=$!
			sleep 1
		fi
		if [ "${BENCH_BESIDE:-0}" = 1 ]; then
			(sleep 1; python3 "$repo/bench/tuning/fdatasync.py" "$root" 163840 2 "${BENCH_BESIDE_GAP_MS:-0}" >"$work/beside") &
			bpid=$!
		fi
	fi
	out=$("$K" cli kafka-producer-perf-test --topic "$topic" --num-records "$n" --record-size 100 --throughput -1 \
		--print-metrics --producer-props bootstrap.servers="$bs" $acks \
		batch.size=16384 linger.ms=5 max.in.flight.requests.per.connection=5 2>&1)
	echo "== $1 rep $2" >>"$LOG"
	echo "$out" >>"$LOG"
	if [ "$v" != kafka ]; then
		wb=$(q "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$l0') / $n)")
		[ "$v" = nice ] && renice -n 0 -p ${pids//,/ } >/dev/null
		[ "$v" = slice ] && python3 "$repo/bench/tuning/sched_slice.py" 0 ${pids//,/ } >>"$LOG" 2>&1
		if [ -n "$bpid" ]; then
			wait "$bpid"
			beside=$(awk '{ printf "%s/%s", $2, $4 }' "$work/beside")
		fi
		if [ -n "$tpid" ]; then
			kill -INT "$tpid" 2>/dev/null
			wait "$tpid" 2>/dev/null
			perf script -i "$tr" 2>/dev/null >"$tr.txt"
			python3 "$repo/bench/wire/sched_split.py" "$tr.txt" "$pids" "$n" >"$tr.split"
			fd=$(head -1 "$tr.split")
			{ echo "== $1 rep $2: the listener's fdatasync calls and the CPUs"; tail -n +2 "$tr.split"; } >>"$LOG"
			rm -f "$tr" "$tr.txt"
		fi
	fi
	echo "$out" | awk -v wb="$wb" -v fd="$fd" -v beside="$beside" '
		/records sent/ && !r { for (i = 1; i <= NF; i++) if ($(i) ~ /^records\/sec/) { r = $(i - 1); gsub(/[(,]/, "", r) } }
		/^producer-metrics:request-latency-avg:/ { la = $NF }
		/^producer-metrics:request-latency-max:/ { lm = $NF }
		/^producer-metrics:records-per-request-avg:/ { rr = $NF }
		END { printf "%.0f %.2f %.1f %.0f %s %s %s\n", r, la, lm, rr, wb, fd, beside }'
}

declare -A col
for v in $VARIANTS; do
	case $v in kafka | tuned) say "warm-up $v: $(run_once "$v" 0 "${BENCH_WARMUP_RECORDS:-3000000}")" ;; esac
done
names=(records/s request-latency-avg_ms request-latency-max_ms records/request WAL_bytes/record
	listener_fdatasync/1k_records fdatasync_median_ms fdatasync_p90_ms fdatasync_mean_ms
	runnable_in_it_median_ms runnable_in_it_mean_ms asleep_in_it_median_ms asleep_in_it_mean_ms)
for rep in $(seq 1 "$REPS"); do
	for v in $VARIANTS; do
		res=$(run_once "$v" "$rep")
		say "rep $rep $v: ${names[*]} beside_median/mean = $res"
		read -r -a f <<<"$res"
		for i in "${!names[@]}"; do col[$v,$i]+="${f[$i]} "; done
		col[$v,b]+="${f[13]} "
	done
done
printf '\n| variant |'
printf ' %s |' "${names[@]//_/ }" "beside: fdatasync median/mean ms"
printf '\n|---|'
for i in "${!names[@]}"; do printf -- '---:|'; done
printf -- '---|\n'
for v in $VARIANTS; do
	printf '| %s |' "$v"
	for i in "${!names[@]}"; do
		printf ' %s (%s) |' "$(median "${col[$v,$i]}")" "$(spread "${col[$v,$i]}")"
	done
	printf ' %s|\n' "${col[$v,b]}"
done
echo
q "SELECT 'written during the whole run: by the background writer ' || buffers_clean || ' buffers, by ' || checkpoints_timed + checkpoints_req || ' checkpoints ' || buffers_checkpoint || ', by backends ' || buffers_backend FROM pg_stat_bgwriter"
