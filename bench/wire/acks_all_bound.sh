#!/usr/bin/env bash
# bench/wire/acks_all_bound.sh: what bounds an acks=all producer at 16 KB batches on a quiet machine.
# One producer (kafka-producer-perf-test, N records of 100 B, acks=all, idempotent, batch.size
# 16384, linger.ms 5, max.in.flight 5, --print-metrics) against Apache Kafka 4.4 (KRaft on
# loopback) and against a throwaway kafka_pg cluster with the broker tuning of
# scripts/broker-tuning.sh, in three variants switched by a reload between runs: "tuned"
# (as scripts/setup.sh makes it), "zero" (wal_init_zero = on: new WAL segments written full of
# zeros before use) and "nobgw" (bgwriter_lru_maxpages = 0: no background writer writing segment
# pages back while the WAL is flushed); "kafka-acks1" and "tuned-acks1" are Kafka and "tuned" with
# acks=1 (idempotence off), to compare the request latency without the acks=all wait.
# Repetitions interleaved.  Prints per variant the medians
# (and spread) of records/s, the producer's request-latency-avg and -max (ms) and
# records-per-request-avg, and for kafka_pg the listener workers' own fdatasync calls per 1,000
# records and their mean duration (ms) from `perf trace -s` ("-" without perf), and the WAL
# bytes written per record (pg_current_wal_lsn before and after).  Before the
# first repetition Kafka and "tuned" get an unmeasured run of BENCH_WARMUP_RECORDS (300000).
# Where throughput = in flight x records per request / request latency, the producer is bound by
# the broker's time per request, not by CPU.  Asserts nothing.  As root.
#
#   bash bench/wire/acks_all_bound.sh
#
# Settings: BENCH_REPS (3), BENCH_RECORDS (1000000), KP_TEST_PORT (55432), KAFKA_TEST_PORT (19092:
# kafka_pg's listener), BENCH_KAFKA_PORT (39092: Apache Kafka), BENCH_VARIANTS ("kafka tuned zero
# nobgw kafka-acks1 tuned-acks1").
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
KPORT=${BENCH_KAFKA_PORT:-39092}
bench_init acks_all_bound
. "$repo/scripts/broker-tuning.sh"
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-1000000}
VARIANTS=${BENCH_VARIANTS:-kafka tuned zero nobgw kafka-acks1 tuned-acks1}
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
perf trace -s -e fdatasync -- true >/dev/null 2>&1 && have_perf=1
say "acks_all_bound: kafka_pg 127.0.0.1:$kp (PostgreSQL $port), Kafka 127.0.0.1:$KPORT; $N x 100 B, $REPS reps; load $(cut -d' ' -f1-3 /proc/loadavg); raw output in $LOG"

# set_variant V: the kafka_pg settings of variant V, by ALTER SYSTEM and a reload
set_variant() {
	local z=off b=1000
	[ "$1" = zero ] && z=on
	[ "$1" = nobgw ] && b=0
	q "ALTER SYSTEM SET wal_init_zero = $z" >/dev/null
	q "ALTER SYSTEM SET bgwriter_lru_maxpages = $b" >/dev/null
	q "SELECT pg_reload_conf()" >/dev/null
	sleep 1
}

# run_once V REP [RECORDS]: one producer run; prints "records/s lat_avg lat_max rec_per_req
# fds_per_1k fds_ms wal_bytes_per_record"
run_once() {
	local v=$1 n=${3:-$N} bs=127.0.0.1:$kp topic="b_$1_$2" out pids tr="$work/trace.$1.$2" tpid="" fds=- fdms=- wb=- l0
	local acks="acks=all enable.idempotence=true"
	[ "${v%-acks1}" != "$v" ] && acks="acks=1 enable.idempotence=false"
	v=${v%-acks1}
	[ "$v" = kafka ] && bs=127.0.0.1:$KPORT
	"$K" cli kafka-topics --bootstrap-server "$bs" --create --topic "$topic" --partitions 6 >>"$LOG" 2>&1
	if [ "$v" != kafka ]; then
		set_variant "$v"
		l0=$(q "SELECT pg_current_wal_lsn()")
		pids=$(q "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
		if [ "$have_perf" = 1 ] && [ -n "$pids" ]; then
			perf trace -s -e fdatasync -p "$pids" -o "$tr" >/dev/null 2>&1 &
			tpid=$!
			sleep 1
		fi
	fi
	out=$("$K" cli kafka-producer-perf-test --topic "$topic" --num-records "$n" --record-size 100 --throughput -1 \
		--print-metrics --producer-props bootstrap.servers="$bs" $acks \
		batch.size=16384 linger.ms=5 max.in.flight.requests.per.connection=5 2>&1)
	echo "== $v rep $2" >>"$LOG"
	echo "$out" >>"$LOG"
	if [ "$v" != kafka ]; then
		wb=$(q "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$l0') / $n)")
		if [ -n "$tpid" ]; then
			kill -INT "$tpid" 2>/dev/null
			wait "$tpid" 2>/dev/null
			cat "$tr" >>"$LOG"
			# perf trace -s: per thread "fdatasync  CALLS  ERRORS  TOTAL  MIN  AVG  ..." (ms)
			read -r fds fdms < <(awk -v n="$n" '$1 == "fdatasync" { c += $2; t += $4 } END { if (c) printf "%.2f %.2f\n", c * 1000 / n, t / c; else print "0 -" }' "$tr")
		fi
	fi
	echo "$out" | awk -v fds="$fds" -v fdms="$fdms" -v wb="$wb" '
		/records sent/ && !r { for (i = 1; i <= NF; i++) if ($(i) ~ /^records\/sec/) { r = $(i - 1); gsub(/[(,]/, "", r) } }
		/^producer-metrics:request-latency-avg:/ { la = $NF }
		/^producer-metrics:request-latency-max:/ { lm = $NF }
		/^producer-metrics:records-per-request-avg:/ { rr = $NF }
		END { printf "%.0f %.2f %.1f %.0f %s %s %s\n", r, la, lm, rr, fds, fdms, wb }'
}

declare -A col
for v in $VARIANTS; do
	case $v in kafka | tuned) say "warm-up $v: $(run_once "$v" 0 "${BENCH_WARMUP_RECORDS:-300000}")" ;; esac
done
for rep in $(seq 1 "$REPS"); do
	for v in $VARIANTS; do
		res=$(run_once "$v" "$rep")
		say "rep $rep $v: records/s lat_avg_ms lat_max_ms rec_per_req fdatasync_per_1k fdatasync_ms wal_bytes_per_record = $res"
		read -r a b c d e f g <<<"$res"
		col[$v,0]+="$a "; col[$v,1]+="$b "; col[$v,2]+="$c "; col[$v,3]+="$d "
		col[$v,4]+="$e "; col[$v,5]+="$f "; col[$v,6]+="$g "
	done
done
printf '\n| variant | records/s | request-latency-avg ms | request-latency-max ms | records/request | listener fdatasync /1k records | its mean ms | WAL bytes/record |\n|---|---:|---:|---:|---:|---:|---:|---:|\n'
for v in $VARIANTS; do
	printf '| %s |' "$v"
	for i in 0 1 2 3 4 5 6; do
		printf ' %s (%s) |' "$(median "${col[$v,$i]}")" "$(spread "${col[$v,$i]}")"
	done
	echo
done
