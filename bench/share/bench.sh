#!/usr/bin/env bash
# Share-group benchmark (KIP-932, issue 12): Apache Kafka 4.x (single-node KRaft on loopback, started
# and stopped by this script) beside kafka_pg at $KP_BOOTSTRAP, with Kafka's own tool
# kafka-share-consumer-perf-test (ShareConsumerPerformance: N KafkaShareConsumers in one JVM,
# implicit acknowledgement), repetitions interleaved. Prints medians, spreads and the ratio
# kafka_pg/Kafka; asserts nothing.
#
#   KP_BOOTSTRAP=127.0.0.1:19092 bench/share/bench.sh
#
# Figure: a share group of BENCH_CONSUMERS (8) consumers on a 2-partition topic reads N records of
# 100 B (written before by kafka-producer-perf-test) from the start (share.auto.offset.reset =
# earliest, set on each new group with kafka-configs): records/s as the tool reports it (from its
# start to the last record, the group's formation included).
#
# Settings: KP_BOOTSTRAP (127.0.0.1:9092), BENCH_REPS (3), BENCH_RECORDS (200000), BENCH_CONSUMERS (8),
# BENCH_KAFKA_PORT (39492; the controller takes the next port), BENCH_STEP_TIMEOUT (300 s).
# Raw output: bench/out/share-<time>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-200000}
C=${BENCH_CONSUMERS:-8}
KPORT=${BENCH_KAFKA_PORT:-39492}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-300}
. "$here/../lib.sh"
bench_init share
port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
port_open "$KP_BOOTSTRAP" || { say "bench: nothing listens at KP_BOOTSTRAP=$KP_BOOTSTRAP"; exit 1; }

say "bench: starting Apache Kafka on 127.0.0.1:$KPORT"
"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "bench: Kafka did not start (see $LOG)"; exit 1; }
KAFKA=127.0.0.1:$KPORT
run=$(date +%s)
T=sb-$run

declare -A R
for b in kafka kp; do
	[ $b = kafka ] && bs=$KAFKA || bs=$KP_BOOTSTRAP
	say "bench: $b: topic and $N records"
	timeout "$STEP_TIMEOUT" "$K" cli kafka-topics --bootstrap-server "$bs" --create --topic "$T" --partitions 2 >>"$LOG" 2>&1
	timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "$T" --num-records "$N" --record-size 100 \
		--throughput -1 --producer-props bootstrap.servers="$bs" acks=1 >>"$LOG" 2>&1 || say "bench: $b: produce failed"
done
for rep in $(seq 1 "$REPS"); do
	for b in kafka kp; do
		[ $b = kafka ] && bs=$KAFKA || bs=$KP_BOOTSTRAP
		g=sb-g-$run-$rep
		echo "== rep $rep $b" >>"$LOG"
		timeout "$STEP_TIMEOUT" "$K" cli kafka-configs --bootstrap-server "$bs" --entity-type groups --entity-name "$g" \
			--alter --add-config share.auto.offset.reset=earliest >>"$LOG" 2>&1
		# start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec (after the MB/s: records, records/s, ...)
		line=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-share-consumer-perf-test --bootstrap-server "$bs" --topic "$T" \
			--group "$g" --num-records "$N" --threads "$C" --timeout 30000 --hide-header 2>>"$LOG" | tee -a "$LOG" |
			grep -E '^[0-9]{4}-' | tail -1)
		v=$(awk -F', *' '{ print $5 }' <<<"$line")
		n=$(awk -F', *' '{ print $6 }' <<<"$line")
		[ "$n" = "$N" ] || v=fail
		say "bench: rep $rep $b: ${v:-fail} records/s"
		R[$b]="${R[$b]:-} ${v:-fail}"
	done
done

mk=$(median "${R[kafka]}")
mp=$(median "${R[kp]}")
echo "Share groups: Apache Kafka at $KAFKA vs kafka_pg at $KP_BOOTSTRAP, medians of $REPS ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "| figure | Kafka | kafka_pg | kafka_pg/Kafka | runs Kafka / kafka_pg |"
echo "|---|---|---|---|---|"
printf "| %d share consumers on 2 partitions, %d x 100 B: records/s | %s (%s) | %s (%s) | %s | %s / %s |\n" "$C" "$N" \
	"$(fmt "$mk")" "$(spread "${R[kafka]}")" "$(fmt "$mp")" "$(spread "${R[kp]}")" \
	"$(awk -v a="$mk" -v b="$mp" 'BEGIN { if (a+0 == 0 || b+0 == 0) print "n/a"; else printf "%.2f", b / a }')" \
	"$(echo ${R[kafka]})" "$(echo ${R[kp]})"
echo
echo "raw output: ${LOG#$repo/}"
