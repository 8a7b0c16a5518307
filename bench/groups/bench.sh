#!/usr/bin/env bash
# Consumer-group benchmark: Apache Kafka 4.x (single-node KRaft on loopback, started and stopped by
# this script) beside kafka_pg at $KP_BOOTSTRAP, with the same Java client (kafka-clients 4.x,
# GroupBench.java) and the same settings, repetitions interleaved. Prints medians and the ratio
# kafka_pg/Kafka; asserts nothing.
#
#   KP_BOOTSTRAP=127.0.0.1:19092 bench/groups/bench.sh
#
# Figures:
#   consume    a group of 4 consumers (classic protocol, client defaults) on 8 partitions reads
#              N records of 100 B (written before by kafka-producer-perf-test) from the start:
#              records/s and MB/s from the first record to the last, and the total time including
#              the group's formation
#   rebalance  a stable group of 9 consumers on 20 partitions; a 10th joins: seconds until all 10
#              hold a non-empty assignment and every partition has exactly one owner, for
#              group.protocol=classic (eager range, client defaults: heartbeat.interval.ms 3000)
#              and group.protocol=consumer (server-side uniform assignor; the broker's heartbeat
#              interval decides: Kafka group.consumer.heartbeat.interval.ms = kafka_pg
#              kafka.group_consumer_heartbeat_interval_ms, both 5000 by default)
#
# Settings: KP_BOOTSTRAP (127.0.0.1:9092), BENCH_REPS (3), BENCH_RECORDS (3000000: at ~1M records/s a
# shorter read is too short to time),
# BENCH_KAFKA_PORT (39392; the controller takes the next port), BENCH_KAFKA_PROPS (extra broker
# lines, e.g. to match non-default kafka.group_* settings of the kafka_pg cluster; default
# group.initial.rebalance.delay.ms=3000, kafka_pg's and Kafka's default), BENCH_STEP_TIMEOUT (300 s).
# Raw output: bench/out/groups-<time>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
K=$repo/test/clients/kafka/kafka.sh
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-3000000}
KPORT=${BENCH_KAFKA_PORT:-39392}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-300}
mkdir -p "$repo/bench/out"
LOG=$repo/bench/out/groups-$(date +%Y%m%d-%H%M%S).log
work=$(mktemp -d)
export KAFKA_STATE_DIR=$work/kafka
say() { echo "$*" >&2; }
cleanup() { "$K" stop "$KPORT" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

jars=$("$repo/test/clients/kafka/fetch-kafka.sh") || { say "bench: cannot fetch the Kafka jars"; exit 1; }
mkdir -p "$work/classes"
javac -nowarn -cp "$jars/*" -d "$work/classes" "$here/GroupBench.java" || exit 1
gb() {
	timeout "$STEP_TIMEOUT" java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-tools.properties" \
		-cp "$work/classes:$jars/*" GroupBench "$@" 2>>"$LOG" | tee -a "$LOG" | tail -1
}
port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
port_open "$KP_BOOTSTRAP" || { say "bench: nothing listens at KP_BOOTSTRAP=$KP_BOOTSTRAP"; exit 1; }

say "bench: starting Apache Kafka on 127.0.0.1:$KPORT"
KAFKA_BROKER_PROPS=${BENCH_KAFKA_PROPS:-group.initial.rebalance.delay.ms=3000} "$K" start "$KPORT" >>"$LOG" 2>&1 ||
	{ say "bench: Kafka did not start (see $LOG)"; exit 1; }
KAFKA=127.0.0.1:$KPORT
run=$(date +%s)

declare -A R # R[figure,broker] = space-separated values
for b in kafka kp; do
	[ $b = kafka ] && bs=$KAFKA || bs=$KP_BOOTSTRAP
	say "bench: $b: topics and $N records"
	gb create "$bs" "gb-consume-$run" 8 >/dev/null || say "bench: $b: create failed"
	gb create "$bs" "gb-rebalance-$run" 20 >/dev/null || say "bench: $b: create failed"
	timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "gb-consume-$run" --num-records "$N" --record-size 100 \
		--throughput -1 --producer-props bootstrap.servers="$bs" acks=1 >>"$LOG" 2>&1 || say "bench: $b: produce failed"
done
for rep in $(seq 1 "$REPS"); do
	for b in kafka kp; do
		[ $b = kafka ] && bs=$KAFKA || bs=$KP_BOOTSTRAP
		say "bench: rep $rep $b consume"
		echo "== rep $rep $b consume" >>"$LOG"
		out=$(gb consume "$bs" "gb-consume-$run" "$N" 4 "gb-c-$run-$rep")
		say "  $out"
		for k in records_per_s mb_per_s total_s; do
			v=$(grep -o "$k=[0-9.]*" <<<"$out" | cut -d= -f2)
			R[$k,$b]="${R[$k,$b]:-} ${v:-nan}"
		done
		for proto in classic consumer; do
			say "bench: rep $rep $b rebalance $proto"
			echo "== rep $rep $b rebalance $proto" >>"$LOG"
			out=$(gb rebalance "$bs" "gb-rebalance-$run" $proto 10 "gb-r-$proto-$run-$rep")
			say "  $out"
			v=$(grep -o "rebalance_s=[0-9.]*" <<<"$out" | cut -d= -f2)
			R[reb_$proto,$b]="${R[reb_$proto,$b]:-} ${v:-nan}"
		done
	done
done

median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 == 0 || a == "nan" || b == "nan") print "n/a"; else printf "%.2f", b / a }'; }

echo "Consumer groups: Apache Kafka $(basename "$(ls "$jars"/kafka-clients-*.jar | head -1)" .jar | sed 's/kafka-clients-//') at $KAFKA vs kafka_pg at $KP_BOOTSTRAP, medians of $REPS ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "| figure | Kafka | kafka_pg | kafka_pg/Kafka | runs Kafka / kafka_pg |"
echo "|---|---|---|---|---|"
row() { # row LABEL KEY FORMAT
	local mk mp
	mk=$(median "${R[$2,kafka]:-}") mp=$(median "${R[$2,kp]:-}")
	printf "| %s | $3 | $3 | %s | %s / %s |\n" "$1" "$mk" "$mp" "$(ratio "$mk" "$mp")" "$(echo ${R[$2,kafka]:-})" "$(echo ${R[$2,kp]:-})"
}
row "consume, group of 4 on 8 partitions, $N x 100 B: records/s" records_per_s "%.0f"
row "consume: MB/s (values)" mb_per_s "%.1f"
row "consume: total s (incl. group formation)" total_s "%.2f"
row "rebalance 9 -> 10 members, classic: s" reb_classic "%.2f"
row "rebalance 9 -> 10 members, consumer (KIP-848): s" reb_consumer "%.2f"
echo
echo "raw output: ${LOG#$repo/}"
