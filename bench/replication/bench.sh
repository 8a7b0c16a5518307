#!/usr/bin/env bash
# bench/replication/bench.sh: acks=all produce with one synchronous replica (issue 11, "Measured"):
# kafka_pg with one synchronous standby beside Apache Kafka 4.4 with two brokers, on this machine,
# in one run, repetitions interleaved.  Asserts nothing; prints medians, spreads and ratios.
#
#   bench/replication/bench.sh                   # needs kafka_pg installed (make install) and Java
#
# kafka_pg: a throwaway primary (test/lib/pgcluster, default settings: fsync on, synchronous_commit
# on, kafka.listener_workers 2) and a standby made with pg_basebackup streaming as s1, with
# synchronous_standby_names = 'FIRST 1 (s1)' and kafka.replica_nodes naming s1 (so the topic has
# two replicas), a topic of P partitions with min.insync.replicas=2: acks=all is answered once the
# standby has flushed the records' WAL.
# Kafka: two KRaft nodes on loopback (node 1 broker and controller, node 2 broker), Kafka's defaults
# otherwise (it does not fsync: acks=all is answered once the follower has fetched the records into
# its page cache), a topic of P partitions with replication factor 2 and min.insync.replicas=2.
# Both: kafka-producer-perf-test (kafka-clients 4.4), acks=all, idempotent, 100 B records,
#   - throughput: --throughput -1, BENCH_RECORDS records; records/s and p99 latency;
#   - latency: --throughput BENCH_RATE records/s for BENCH_RATE_SECONDS; p50 and p99 latency
#     (perf-test's latency is send -> acknowledgement).
# Each repetition runs kafka_pg then Kafka (the order alternates); the load average is printed
# before each. Raw output: bench/out/replication-<time>.log.
# kafka_pg's listener CPU (its workers' user+system time, /proc/PID/stat), kafka_pg alone:
#   - per record during the BENCH_RATE runs (microseconds of listener CPU per record);
#   - idle for BENCH_IDLE_SECONDS (10) with the synchronous standby attached and no client;
#   - while one acks=all record (to a topic of min.insync.replicas=1) waits BENCH_IDLE_SECONDS
#     for a synchronous standby that is stopped (the standby is stopped for this last step,
#     after every run).
#
# Settings: BENCH_REPS (5), BENCH_RECORDS (500000), BENCH_PARTITIONS (6), BENCH_RATE (5000),
# BENCH_RATE_SECONDS (15), BENCH_PORT (first PostgreSQL port, 56640), BENCH_KP_KAFKA_PORT
# (kafka_pg's listener, 19640), BENCH_KAFKA_PORT (first of Kafka's four ports, 39640).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
K=$repo/test/clients/kafka/kafka.sh
REPS=${BENCH_REPS:-5}
N=${BENCH_RECORDS:-500000}
PARTS=${BENCH_PARTITIONS:-6}
RATE=${BENCH_RATE:-5000}
RATE_S=${BENCH_RATE_SECONDS:-15}
IDLE_S=${BENCH_IDLE_SECONDS:-10}
mkdir -p "$repo/bench/out"
LOG=$repo/bench/out/replication-$(date +%Y%m%d-%H%M%S).log

pgc() { bash "$repo/test/lib/pgcluster" "$@"; }
work=$(pgc mktemp replication_bench) || exit 1
kpids=()
cleanup() {
	local p d
	for p in "${kpids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${kpids[@]}"; do
		for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
		kill -9 "$p" 2>/dev/null
	done
	for d in "$work/standby" "$work/primary"; do
		[ -d "$d" ] && pgc stop "$d" immediate
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- kafka_pg, primary and standby
port=$(pgc free-port "${BENCH_PORT:-56640}")
sport=$(pgc free-port $((port + 1)) "$port")
kp=$(pgc free-port "${BENCH_KP_KAFKA_PORT:-19640}" "$port" "$sport")
kp2=$(pgc free-port $((kp + 1)) "$port" "$sport" "$kp")
KP_EXTRA_CONF="kafka.replica_nodes = 's1=1@127.0.0.1:$kp2'" pgc init "$work/primary" "$port" "$kp" >/dev/null || exit 1
pgc start "$work/primary" || exit 1
pgc create-extension "$port" postgres >/dev/null || exit 1
pgc basebackup "$port" "$work/standby" >/dev/null || exit 1
KP_EXTRA_CONF="cluster_name = 's1'
kafka.node_id = 1
kafka.replica_nodes = 's1=1@127.0.0.1:$kp2'" pgc write-conf "$work/standby" "$sport" "$kp2" "$work" || exit 1
pgc start "$work/standby" || exit 1
psql_p() { psql -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
psql_p -c "ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (s1)'" -c "SELECT pg_reload_conf()" >/dev/null || exit 1
wait_sync_standby psql "$port" s1 || { say "the standby did not become synchronous"; exit 1; }
psql_p -c "SELECT kafka.create_topic('repl', $PARTS, '{\"min.insync.replicas\": \"2\"}')" >/dev/null || exit 1
# for the CPU measure while an acks=all waits for the stopped standby: min.insync.replicas=1, so
# that it is appended and waits rather than being refused with NOT_ENOUGH_REPLICAS
psql_p -c "SELECT kafka.create_topic('repl_wait', 1)" >/dev/null || exit 1
KP_BS=127.0.0.1:$kp

# ---------------------------------------------------------------- Apache Kafka, two brokers
kbase=${BENCH_KAFKA_PORT:-39640}
kports=("$kbase" $((kbase + 1)))
cport=$((kbase + 2))
jars=$("$K" classpath) || exit 1
cid=$(java -cp "$jars" kafka.tools.StorageTool random-uuid 2>/dev/null) || exit 1
for i in 1 2; do
	d=$work/kafka$i
	mkdir -p "$d/data"
	{
		if [ $i = 1 ]; then
			echo "process.roles=broker,controller"
			echo "listeners=PLAINTEXT://127.0.0.1:${kports[0]},CONTROLLER://127.0.0.1:$cport"
		else
			echo "process.roles=broker"
			echo "listeners=PLAINTEXT://127.0.0.1:${kports[1]}"
		fi
		echo "node.id=$i"
		echo "controller.quorum.voters=1@127.0.0.1:$cport"
		echo "advertised.listeners=PLAINTEXT://127.0.0.1:${kports[$((i - 1))]}"
		echo "controller.listener.names=CONTROLLER"
		echo "inter.broker.listener.name=PLAINTEXT"
		echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
		echo "log.dirs=$d/data"
		echo "default.replication.factor=2"
		echo "min.insync.replicas=2"
		echo "auto.create.topics.enable=false"
		echo "offsets.topic.replication.factor=2"
		echo "offsets.topic.num.partitions=4"
		echo "transaction.state.log.replication.factor=2"
		echo "transaction.state.log.min.isr=2"
		echo "transaction.state.log.num.partitions=4"
		echo "share.coordinator.state.topic.replication.factor=2"
		echo "share.coordinator.state.topic.min.isr=2"
		echo "group.initial.rebalance.delay.ms=0"
	} >"$d/server.properties"
	java -Xmx256m -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-tools.properties" \
		-cp "$jars" kafka.tools.StorageTool format -t "$cid" -c "$d/server.properties" >"$d/format.log" 2>&1 ||
		{ cat "$d/format.log" >&2; exit 1; }
	# shellcheck disable=SC2086
	setsid java ${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g} -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-broker.properties" \
		-cp "$jars" kafka.Kafka "$d/server.properties" >"$d/server.log" 2>&1 </dev/null &
	kpids+=($!)
done
for i in 1 2; do
	for _ in $(seq 1 180); do
		grep -q "Kafka Server started" "$work/kafka$i/server.log" && break
		kill -0 "${kpids[$((i - 1))]}" 2>/dev/null || { tail -30 "$work/kafka$i/server.log" >&2; exit 1; }
		sleep 0.5
	done
	grep -q "Kafka Server started" "$work/kafka$i/server.log" || { say "Kafka broker $i did not start"; exit 1; }
done
K_BS=127.0.0.1:${kports[0]},127.0.0.1:${kports[1]}
"$K" cli kafka-topics --bootstrap-server "$K_BS" --create --topic repl --partitions "$PARTS" \
	--replication-factor 2 --config min.insync.replicas=2 >>"$LOG" 2>&1 || { say "creating Kafka's topic failed"; exit 1; }
# every partition with both replicas in sync
for _ in $(seq 1 60); do
	"$K" cli kafka-topics --bootstrap-server "$K_BS" --describe --topic repl 2>/dev/null |
		grep -E 'Isr: [0-9]+,[0-9]+' -c | grep -qx "$PARTS" && break
	sleep 1
done

# ---------------------------------------------------------------- the runs
# lcpu: the CPU time of the primary's listener workers so far, in clock ticks
lcpu() {
	local pm p t=0
	pm=$(head -1 "$work/primary/postmaster.pid")
	for p in $(pgrep -P "$pm" -f 'kafka_pg listener'); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
HZ=$(getconf CLK_TCK)
# perf BOOTSTRAP NUM THROUGHPUT: "records/s p50 p99" of one kafka-producer-perf-test
perf() {
	local out line
	out=$("$K" cli kafka-producer-perf-test --topic repl --num-records "$2" --record-size 100 --throughput "$3" \
		--producer-props bootstrap.servers="$1" acks=all enable.idempotence=true 2>&1)
	echo "$out" >>"$LOG"
	line=$(grep -E 'records sent, .* records/sec' <<<"$out" | tail -1)
	[ -n "$line" ] || { echo "fail fail fail"; return; }
	sed -E 's/.*records sent, ([0-9.]+) records\/sec.* ([0-9]+) ms 50th, ([0-9]+) ms 95th, ([0-9]+) ms 99th.*/\1 \2 \4/' <<<"$line" |
		awk '{ printf "%.0f %s %s\n", $1, $2, $3 }'
}

declare -A tput p99 lp50 lp99
loads=""
say "replication bench: kafka_pg (standby s1 synchronous) on $KP_BS, Kafka (2 brokers) on $K_BS; $PARTS partitions, $N records x 100 B, then $RATE records/s for ${RATE_S}s; $REPS reps; log $LOG"
for rep in $(seq 1 "$REPS"); do
	order="kafka_pg kafka"
	[ $((rep % 2)) = 0 ] && order="kafka kafka_pg"
	for side in $order; do
		bs=$KP_BS
		[ $side = kafka ] && bs=$K_BS
		load=$(cut -d' ' -f1 /proc/loadavg)
		loads="$loads $load"
		read -r t _ q <<<"$(perf "$bs" "$N" -1)"
		c0=$(lcpu)
		read -r _ l50 l99 <<<"$(perf "$bs" $((RATE * RATE_S)) "$RATE")"
		if [ $side = kafka_pg ]; then
			# listener CPU per record at BENCH_RATE, microseconds
			us=$(awk -v d=$(($(lcpu) - c0)) -v hz="$HZ" -v n=$((RATE * RATE_S)) 'BEGIN { printf "%.1f", d / hz * 1e6 / n }')
			cpurec="${cpurec:-} $us"
			say "rep $rep kafka_pg: listener CPU at $RATE/s: $us us/record"
			echo "rep $rep kafka_pg listener CPU at $RATE/s: $us us/record" >>"$LOG"
		fi
		tput[$side]="${tput[$side]:-} $t"
		p99[$side]="${p99[$side]:-} $q"
		lp50[$side]="${lp50[$side]:-} $l50"
		lp99[$side]="${lp99[$side]:-} $l99"
		say "rep $rep $side (load $load): $t records/s, p99 $q ms; at $RATE/s p50 $l50 ms, p99 $l99 ms"
		echo "rep $rep $side load $load: $t records/s p99 $q ms; at $RATE/s p50 $l50 p99 $l99" >>"$LOG"
	done
done

# listener CPU, idle with the standby attached, then while an acks=all record waits for it stopped
c0=$(lcpu)
sleep "$IDLE_S"
idle_pct=$(awk -v d=$(($(lcpu) - c0)) -v hz="$HZ" -v s="$IDLE_S" 'BEGIN { printf "%.2f", d / hz * 100 / s }')
pgc stop "$work/standby" fast >/dev/null 2>&1
sleep 1
"$K" cli kafka-producer-perf-test --topic repl_wait --num-records 1 --record-size 100 --throughput -1 \
	--producer-props bootstrap.servers="$KP_BS" acks=all enable.idempotence=true \
	request.timeout.ms=$(((IDLE_S + 15) * 1000)) delivery.timeout.ms=$(((IDLE_S + 17) * 1000)) >>"$LOG" 2>&1 &
wpid=$!
sleep 8                         # the JVM starts and sends
c0=$(lcpu)
sleep "$IDLE_S"
wait_pct=$(awk -v d=$(($(lcpu) - c0)) -v hz="$HZ" -v s="$IDLE_S" 'BEGIN { printf "%.2f", d / hz * 100 / s }')
wait "$wpid"
echo "listener CPU idle with the standby: $idle_pct %; while an acks=all waits for the stopped standby: $wait_pct %" >>"$LOG"

ratio() { if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]] && [ "$(awk -v b="$2" 'BEGIN { print (b > 0) }')" = 1 ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo -; fi; }
row() {
	local name=$1 arr=$2 a b
	local -n ref=$arr
	a=$(median "${ref[kafka_pg]}")
	b=$(median "${ref[kafka]}")
	printf '%-38s %9s %-17s %9s %-17s %6s\n' "$name" "$a" "($(spread "${ref[kafka_pg]}"))" "$b" "($(spread "${ref[kafka]}"))" "$(ratio "$a" "$b")"
}
{
	echo
	echo "acks=all produce, one synchronous replica: kafka_pg + 1 sync standby vs Apache Kafka 4.4, 2 brokers, RF 2, min.insync.replicas=2"
	echo "($(date -u +%Y-%m-%dT%H:%MZ), $REPS reps interleaved, $PARTS partitions, 100 B records, idempotent; load average at each run:$loads; $(nproc) cores)"
	printf '%-38s %9s %-17s %9s %-17s %6s\n' "" kafka_pg "(min-max)" Kafka "(min-max)" ratio
	row "throughput, records/s (max rate)" tput
	row "  p99 latency at max rate, ms" p99
	row "p50 latency at $RATE records/s, ms" lp50
	row "p99 latency at $RATE records/s, ms" lp99
	echo "ratio = kafka_pg / Kafka (throughput: higher is better; latency: lower is better)"
	echo "kafka_pg listener CPU (all workers): $(median "${cpurec:-}") us/record at $RATE records/s ($(spread "${cpurec:-}")); idle with the synchronous standby attached: $idle_pct % of a core over ${IDLE_S}s; while one acks=all waits for the stopped standby: $wait_pct % over ${IDLE_S}s"
} | tee -a "$LOG"
