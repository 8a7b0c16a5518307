#!/bin/bash
# bench/fetchpath/ceiling.sh: how fast the Java consumer can consume at all, and what each broker's
# CPU costs it.  Issue 13's goal rows "consume 100 B / 1 KiB (no group) >= 1.3x Kafka" ask the
# same client to go 1.3x faster against kafka_pg than against Kafka; on a 2-core machine the client
# and the broker share the CPU, so this measures where the client's own limit is.
#
# Starts Apache Kafka (test/clients/kafka/kafka.sh, port BENCH_KAFKA_PORT, default
# KAFKA_TEST_PORT + 10 or 58810) and a kafka_pg test cluster (test/lib/pgcluster, ports
# KP_TEST_PORT / KAFKA_TEST_PORT, shared_buffers BENCH_SHARED_BUFFERS (1GB) and the rest of
# scripts/broker-tuning.sh), fills on each a 6-partition topic with BENCH_SMALL (1000000) records
# of 100 B and one with BENCH_LARGE (200000) of 1 KiB (kafka-producer-perf-test, acks=1,
# batch.size BENCH_BATCH_SIZE (65536), linger.ms 5), then per round consumes each topic from
# each broker (WireBench consume, no group, client defaults), Kafka and kafka_pg alternating.
# Per consume it records: the rate; the client's CPU over the measured interval (WireBench:
# the whole JVM, and the thread that polls, which fetches, checks CRCs and parses every record
# in the classic consumer); the broker's CPU over the consume (the sum of its threads' /
# processes' run time in /proc/<pid>/task/*/schedstat: the Kafka JVM; every process of the
# PostgreSQL cluster, and the listener workers alone).
#
# Prints per broker and topic the medians (spread) of: records/s, client CPU us/record (JVM,
# poll thread), the poll thread's busy share of the wall time, broker CPU us/record, and the
# client's ceiling in records/s: min(1 / poll-thread CPU per record, cores / client CPU per
# record), the rate it would reach against a broker that cost nothing on an otherwise idle
# machine.  Then per topic the ratios that hold when the consume is CPU-bound (the client alone
# keeps 2 idle cores busy): kafka_pg/Kafka = (client + Kafka CPU) / (client + kafka_pg CPU) per
# record, and (client + Kafka CPU) / client CPU, the largest kafka_pg/Kafka ratio any broker
# could reach with this client on this machine.  CPU per record is inflated on a loaded machine
# (caches shared with other work), for both brokers alike; the records/s are then the load's,
# not the brokers'.  Asserts nothing.  As root.
#
# BENCH_CEILING="consume produce" (the default) also measures the producer the same way: per round
# and broker, WireBench send (acks=1, batch.size BENCH_BATCH_SIZE, linger.ms 5, null keys, a
# warm-up of a fifth unmeasured in the same JVM) of BENCH_SMALL records of 100 B to topic p100 and
# BENCH_LARGE of 1 KiB to p1k (6 partitions each), with the client's CPU (the JVM; its busiest
# thread: the sending thread or the producer's network thread) and the broker's, for the goal
# rows "produce 100 B / 1 KiB >= 1.3x Kafka"; each broker first gets BENCH_PRODUCE_WARMUP (3000000)
# records of 100 B, unmeasured (0: none, as until 2026-12-03).  BENCH_CEILING=consume or =produce
# runs one half.  bench/wire/produce_split.sh splits the CPU of bench.sh's own produce rows
# (kafka-producer-perf-test, a new JVM per run) the same way.
#
#   bench/fetchpath/ceiling.sh [ROUNDS]          # default 3
set -u
rounds=${1:-3}
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
K=$PWD/test/clients/kafka/kafka.sh
BATCH=${BENCH_BATCH_SIZE:-65536}
SMALL=${BENCH_SMALL:-1000000}
LARGE=${BENCH_LARGE:-200000}
PWARM=${BENCH_PRODUCE_WARMUP:-3000000}
PARTS=6
KINDS=${BENCH_CEILING:-consume produce}
TOPICS=""
[[ " $KINDS " == *" consume "* ]] && TOPICS="c100 c1k"
[[ " $KINDS " == *" produce "* ]] && TOPICS="$TOPICS p100 p1k"
jars=$(test/clients/kafka/fetch-kafka.sh) || exit 1
root=$(bash test/lib/pgcluster mktemp ceiling); d=$root/data
export KAFKA_STATE_DIR=$root/kafka
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432})
kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
kafka_port=${BENCH_KAFKA_PORT:-$((${KAFKA_TEST_PORT:-58800} + 10))}
trap '"$K" stop "$kafka_port" >/dev/null 2>&1; bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
cls=$root/classes; mkdir -p "$cls"
javac -nowarn -cp "$jars/*" -d "$cls" bench/wire/WireBench.java || exit 1
wb() { java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile=$PWD/test/clients/kafka/log4j2-tools.properties -cp "$cls:$jars/*" WireBench "$@"; }

KP_EXTRA_CONF=$(KP_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-1GB} scripts/broker-tuning.sh) \
	bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension "$port" postgres || exit 1
"$K" start "$kafka_port" >"$root/kafka-start.log" 2>&1 || { cat "$root/kafka-start.log"; exit 1; }
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
pm=$(bash test/lib/pgcluster postmaster-pid "$d")
kafka_pid=$(cat "$KAFKA_STATE_DIR/$kafka_port/kafka.pid")

declare -A bs=([kafka]=127.0.0.1:$kafka_port [kafka_pg]=127.0.0.1:$kport)
fill() { # bootstrap topic records size
	"$K" cli kafka-producer-perf-test --topic "$2" --num-records "$3" --record-size "$4" --throughput -1 \
		--producer-props bootstrap.servers="$1" acks=1 enable.idempotence=false \
		batch.size="$BATCH" linger.ms=5 2>&1 | grep "records sent" | tail -1
}
for b in kafka kafka_pg; do
	wb create "${bs[$b]}" $PARTS c100 c1k p100 p1k >/dev/null 2>&1 || { echo "cannot create the topics on $b"; exit 1; }
	# the produce half: the broker warmed first (a fresh Kafka's JVM costs twice its warm CPU per
	# record: docs/performance.md, "Producing at 64 KB batches"), as bench.sh warms both
	if [[ " $KINDS " == *" produce "* ]] && [ "$PWARM" -gt 0 ]; then
		echo "$b warm-up p100: $(fill "${bs[$b]}" p100 "$PWARM" 100)"
	fi
	[[ " $KINDS " == *" consume "* ]] || continue
	echo "$b fill c100: $(fill "${bs[$b]}" c100 "$SMALL" 100)"
	echo "$b fill c1k:  $(fill "${bs[$b]}" c1k "$LARGE" 1024)"
done
psql_ "CHECKPOINT" >/dev/null

# run time in ns of every thread of the given processes (schedstat's first field)
runtime_ns() { local p; for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk '{ s += $1 } END { printf "%.0f", s }'; }
kp_pids() { echo "$pm" $(ps -o pid= --ppid "$pm"); }
listener_pids() { ps -o pid=,args= --ppid "$pm" | awk '/kafka_pg listener/ { print $1 }'; }
cores=$(nproc)
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $cores cores; batch.size $BATCH"

declare -A v
add() { v[$1]+="$2 "; }
f() { awk "BEGIN { printf \"%.3f\", $1 }"; }
# one measured consume or produce: measure ROUND BROKER KIND TOPIC RECORDS [SIZE]
measure() {
	local r=$1 b=$2 kind=$3 topic=$4 n=$5 size=${6:-} bp lp b0 b1 l0 l1 out got rps secs ccpu tcpu key
	if [ $b = kafka ]; then bp="$kafka_pid"; lp=""; else bp=$(kp_pids); lp=$(listener_pids); fi
	b0=$(runtime_ns $bp); l0=$(runtime_ns $lp)
	if [ $kind = consume ]; then
		out=$(wb consume "${bs[$b]}" "$topic" $PARTS "$n" 300 2>&1 | grep "^consume")
	else
		out=$(wb send "${bs[$b]}" "$topic" "$n" "$size" 1 "$BATCH" 5 2>&1 | grep "^send")
	fi
	b1=$(runtime_ns $bp); l1=$(runtime_ns $lp)
	got=$(sed -nE 's/.* records=([0-9]+).*/\1/p' <<<"$out")
	grep -q complete=true <<<"$out" || { echo "round $r $b $kind $topic: incomplete: $out"; return; }
	rps=$(sed -nE 's/.*records_per_sec=([0-9.]+).*/\1/p' <<<"$out")
	secs=$(sed -nE 's/.*seconds=([0-9.]+).*/\1/p' <<<"$out")
	ccpu=$(sed -nE 's/.*client_cpu_s=([0-9.]+).*/\1/p' <<<"$out")
	# the client's busiest thread: the consumer's poll thread; the producer's sending thread or
	# its network thread, whichever worked more
	if [ $kind = consume ]; then
		tcpu=$(sed -nE 's/.*poll_thread_cpu_s=([0-9.]+).*/\1/p' <<<"$out")
	else
		tcpu=$(awk -v a="$(sed -nE 's/.*app_thread_cpu_s=([0-9.]+).*/\1/p' <<<"$out")" \
			-v i="$(sed -nE 's/.*io_thread_cpu_s=([0-9.]+).*/\1/p' <<<"$out")" 'BEGIN { print (a > i ? a : i) }')
	fi
	key="$b,$topic"
	add "$key,rps" "$rps"
	add "$key,client" "$(f "$ccpu * 1e6 / $got")"
	add "$key,poll" "$(f "$tcpu * 1e6 / $got")"
	add "$key,busy" "$(f "$tcpu / $secs")"
	add "$key,broker" "$(f "($b1 - $b0) / 1e3 / $got")"
	[ $b = kafka_pg ] && add "$key,listener" "$(f "($l1 - $l0) / 1e3 / $got")"
	add "$key,ceiling" "$(awk -v n="$got" -v p="$tcpu" -v c="$ccpu" -v k="$cores" 'BEGIN {
		a = n / p; b = k * n / c; printf "%.0f", (a < b ? a : b) }')"
	echo "round $r $b $kind: $out broker_cpu_s=$(f "($b1 - $b0) / 1e9") listener_cpu_s=$(f "($l1 - $l0) / 1e9") load $(cut -d' ' -f1 /proc/loadavg)"
}
for r in $(seq 1 "$rounds"); do
	for b in kafka kafka_pg; do
		if [[ " $KINDS " == *" consume "* ]]; then
			wb consume "${bs[$b]}" c100 $PARTS 200000 120 >/dev/null 2>&1 # warm the broker's path
			measure "$r" $b consume c100 "$SMALL"
			measure "$r" $b consume c1k "$LARGE"
		fi
		if [[ " $KINDS " == *" produce "* ]]; then
			measure "$r" $b produce p100 "$SMALL" 100
			measure "$r" $b produce p1k "$LARGE" 1024
		fi
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| broker | topic | records/s | client CPU us/record: JVM | busiest thread | busiest thread busy | broker CPU us/record | of which listener | client ceiling records/s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for t in $TOPICS; do
	for b in kafka kafka_pg; do
		m() { local x=${v[$b,$t,$1]:-}; [ -n "$x" ] && echo "$(median "$x") ($(spread "$x"))" || echo "-"; }
		echo "| $b | $t | $(m rps) | $(m client) | $(m poll) | $(m busy) | $(m broker) | $(m listener) | $(m ceiling) |"
	done
done
echo
# The consume (and the produce) is CPU-bound on the machine when client and broker keep the cores
# busy (on 2 cores they do: see docs/performance.md), so the rates go as the inverse of the CPU per record of
# client and broker together, whatever the load: kafka_pg/Kafka = (client + Kafka) / (client +
# kafka_pg), and a broker costing nothing would reach (client + Kafka) / client.
for t in $TOPICS; do
	ck=$(median "${v[kafka,$t,client]:-}"); bk=$(median "${v[kafka,$t,broker]:-}")
	cp=$(median "${v[kafka_pg,$t,client]:-}"); bp=$(median "${v[kafka_pg,$t,broker]:-}")
	k=$(median "${v[kafka,$t,rps]:-}"); p=$(median "${v[kafka_pg,$t,rps]:-}")
	awk -v t=$t -v ck="$ck" -v bk="$bk" -v cp="$cp" -v bp="$bp" -v k="$k" -v p="$p" 'BEGIN {
		if (ck > 0 && cp > 0 && k > 0)
			printf "%s: CPU us/record, client + broker: Kafka %.3f, kafka_pg %.3f; CPU-bound kafka_pg/Kafka %.2f; with a broker costing nothing %.2f (client against Kafka) / %.2f (client against kafka_pg); measured rates kafka_pg/Kafka %.2f\n",
				t, ck + bk, cp + bp, (ck + bk) / (cp + bp), (ck + bk) / ck, (ck + bk) / cp, p / k }'
done
