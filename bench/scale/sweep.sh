#!/bin/bash
# bench/scale/sweep.sh: is the cost per record flat as the log grows and with many partitions?
# (issue 13's goal "1 GB vs 20 GB of log, 1, 100 and 1,000 partitions"), for kafka_pg and, with
# BENCH_KAFKA=1, for Apache Kafka 4.4 beside it, and with batches as the producer makes them or
# with batches of equal size at every partition count.
#
# One throwaway cluster with scripts/broker-tuning.sh's settings (shared_buffers
# BENCH_SHARED_BUFFERS, 1GB); with BENCH_KAFKA=1 also a Kafka broker (test/clients/kafka/kafka.sh,
# its state under the cluster's scratch folder, port BENCH_KAFKA_PORT).  Before the first
# measurement each broker gets an unmeasured produce and consume of BENCH_WARMUP_RECORDS 100 B
# records (6 partitions), as bench/wire/bench.sh warms its brokers, and one batch in every
# partition of the measured topics, so that no measurement carries a partition's first append.
# Topic s1 (1 partition) is the log that grows: before each size point of BENCH_SIZES_GB it is
# filled (unmeasured, 1 KiB records, large batches) on every broker until it holds that many GB of
# record values; the other topics grow only by what the measurements add.  At each size point, BENCH_REPS times, for each
# batching of BENCH_BATCHING and P in BENCH_PARTITIONS, on each broker (interleaved; the brokers'
# order swaps every repetition): BENCH_RECORDS records of 1 KiB produced with acks=1, then the same
# number read back from the tail (WireBench consume -Dwb.tail=true: the last RECORDS/P of each
# partition, all of one that got fewer).  Batchings:
#   default  kafka-producer-perf-test with client defaults (batch.size 16 KB, linger.ms 5, the
#            default partitioner) to topic sP: the batches are whatever the producer makes
#   equal    WireBench produce to topic eP: RECORDS/P records to partition 0, then to partition 1,
#            ... (batch.size 16 KB, linger.ms 1000), so every batch is full (15 records of 1 KiB)
#            at every partition count; with RECORDS/P a multiple of 15 there is no partial batch
#   spread   kafka-producer-perf-test as default, but with the RoundRobinPartitioner to topic rP:
#            record after record to the next partition (it still made 10-14 records per batch at
#            1,000 partitions, against the default's 15: not small batches at this rate)
# The default partitioner switches partitions after a full batch (KIP-794), so "default" writes
# full batches at every partition count too (14.7-15.0 records per batch measured).
# Each measurement gives records/s and the broker's CPU time per record (microseconds; the run
# time of every thread from /proc/PID/task/*/schedstat, so nanosecond counts rather than /proc's
# 10 ms ticks): for kafka_pg all the cluster's processes, and for the consume also the listener
# workers alone; for Kafka its JVM (its /proc/PID/stat utime+stime is printed beside as a check).
# And the records per batch the produce wrote: for kafka_pg counted in the store
# (kafka.dump_log from each partition's log end offset before the produce), for Kafka estimated
# from the producer's own batch-size-avg metric (bytes per batch - 61 B of batch header, over the
# bytes of one record: 1,033 for 1 KiB values without key or headers).  The consume CPU of
# kafka_pg's "all processes" includes the background writer and checkpointer writing out what the
# produce just wrote (docs/performance.md); Kafka leaves that to the kernel, so compare Kafka's
# JVM with the listener column too.
#
# Prints every measurement, then per broker, batching and point the median (spread) and the ratio
# of the medians to that broker's and batching's first point (smallest size, first partition
# count) measured in the same run; with Kafka, per batching and point the ratios kafka_pg/Kafka.
# Asserts nothing.  As root.  Removes its cluster (and Kafka) at the end.
#
#   bench/scale/sweep.sh                                 # 1 and 5 GB; ~15 minutes
#   BENCH_SIZES_GB="1 20" BENCH_RECORDS=100000 bench/scale/sweep.sh
#                            # ~25 minutes, ~35 GB of disk (log + WAL); docs/performance.md's run
#   BENCH_SIZES_GB=1 BENCH_RECORDS=105000 BENCH_KAFKA=1 BENCH_BATCHING="default equal spread" bench/scale/sweep.sh
#                            # both brokers, all batchings; ~10 minutes; docs/performance.md's runs
#                            # ("Beside Apache Kafka, and per batch or per partition")
#
# Settings: BENCH_SIZES_GB ("1 5"), BENCH_PARTITIONS ("1 100 1000"), BENCH_REPS (3),
# BENCH_RECORDS (200000), BENCH_SHARED_BUFFERS (1GB), BENCH_STEP_TIMEOUT (600 s),
# BENCH_BATCHING ("default"; any of "default equal spread"), BENCH_KAFKA (0; 1: Kafka beside kafka_pg),
# BENCH_KAFKA_PORT (KAFKA_TEST_PORT + 30, or 19122; the controller takes the next port),
# BENCH_WARMUP_RECORDS (300000; 0: none).  Ports of kafka_pg: KP_TEST_PORT, KAFKA_TEST_PORT.
set -u
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
. scripts/broker-tuning.sh
K=$PWD/test/clients/kafka/kafka.sh
SIZES=${BENCH_SIZES_GB:-"1 5"}
PARTS=${BENCH_PARTITIONS:-"1 100 1000"}
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-200000}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-600}
MODES=${BENCH_BATCHING:-default}
WARMUP=${BENCH_WARMUP_RECORDS:-300000}
export KP_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-1GB}
for mode in $MODES; do
	case $mode in default | equal | spread) ;; *) echo "sweep.sh: BENCH_BATCHING: unknown batching '$mode' (default, equal, spread)" >&2; exit 2 ;; esac
done
brokers=(kafka_pg)
kafka_pid=""
[ "${BENCH_KAFKA:-0}" = 1 ] && brokers+=(kafka)

jars=$(test/clients/kafka/fetch-kafka.sh) || exit 1
root=$(bash test/lib/pgcluster mktemp scale); d=$root/data
export KAFKA_STATE_DIR=$root/kafka
cls=$root/classes; mkdir -p "$cls"
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
kafka_port=${BENCH_KAFKA_PORT:-$((${KAFKA_TEST_PORT:-19092} + 30))}
trap '[ ${#brokers[@]} = 2 ] && "$K" stop "$kafka_port" >/dev/null 2>&1; bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
javac -nowarn -cp "$jars/*" -d "$cls" bench/wire/WireBench.java || exit 1
wb() { timeout "$STEP_TIMEOUT" java -Xmx1g -XX:+UseG1GC "$@"; }
wbargs=(-Dlog4j2.configurationFile=$PWD/test/clients/kafka/log4j2-tools.properties -cp "$cls:$jars/*")
KP_EXTRA_CONF="$(kp_broker_tuning)" bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
pm=$(bash test/lib/pgcluster postmaster-pid "$d")
declare -A bs=([kafka_pg]=127.0.0.1:$kport [kafka]=127.0.0.1:$kafka_port)
prefix() { case $1 in equal) echo e ;; spread) echo r ;; *) echo s ;; esac; }
for p in $PARTS; do
	for mode in $MODES; do psql_ "SELECT kafka.create_topic('$(prefix "$mode")$p', $p)" >/dev/null || exit 1; done
done
psql_ "SELECT kafka.create_topic('s1', 1) WHERE NOT EXISTS (SELECT FROM kafka.topic_list WHERE topic = 's1')" >/dev/null || exit 1
if [ ${#brokers[@]} = 2 ]; then
	"$K" start "$kafka_port" >"$root/kafka-start.log" 2>&1 || { cat "$root/kafka-start.log"; exit 1; }
	kafka_pid=$(cat "$KAFKA_STATE_DIR/$kafka_port/kafka.pid")
	for p in $PARTS; do
		topics=()
		for mode in $MODES; do [ "$(prefix "$mode")$p" = s1 ] || topics+=("$(prefix "$mode")$p"); done
		[ ${#topics[@]} = 0 ] || wb "${wbargs[@]}" WireBench create "${bs[kafka]}" "$p" "${topics[@]}" >/dev/null 2>&1 ||
			{ echo "sweep.sh: cannot create ${topics[*]} on Kafka"; exit 1; }
	done
	wb "${wbargs[@]}" WireBench create "${bs[kafka]}" 1 s1 >/dev/null 2>&1 || { echo "sweep.sh: cannot create s1 on Kafka"; exit 1; }
fi

# the run time in ns of every thread of the given processes (schedstat's first field)
runtime_ns() { local p; for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk '{ s += $1 } END { printf "%.0f", s }'; }
stat_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; } # utime+stime
minflt() { awk '{ print $10 }' "/proc/$1/stat" 2>/dev/null || echo 0; }            # minor page faults
kp_pids() { echo "$pm" $(ps -o pid= --ppid "$pm"); }
listener_pids() { ps -o pid=,args= --ppid "$pm" | awk '/kafka_pg listener/ { print $1 }'; }
us_per_rec() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { if (n > 0) printf "%.3f", (b - a) / 1e3 / n; else print "fail" }'; }
HZ=$(getconf CLK_TCK)
# the bytes one record of SIZE bytes takes in a batch (v2, no key, no headers, deltas < 64)
rec_bytes() { awk -v s="$1" 'function vl(x, n) { x = 2 * x; n = 1; while (x >= 128) { x = int(x / 128); n++ } return n }
	BEGIN { b = 5 + vl(s) + s + 1; print b + vl(b) }'; }
RB=$(rec_bytes 1024)

# warm-up: the JIT of each broker's paths and the page cache, unmeasured (as bench/wire/bench.sh)
if [ "$WARMUP" -gt 0 ]; then
	for b in "${brokers[@]}"; do
		wb "${wbargs[@]}" WireBench create "${bs[$b]}" 6 warmup >/dev/null 2>&1 &&
			"$K" cli kafka-producer-perf-test --topic warmup --num-records "$WARMUP" --record-size 100 --throughput -1 \
				--producer-props bootstrap.servers="${bs[$b]}" acks=1 enable.idempotence=false >/dev/null 2>&1 &&
			wb "${wbargs[@]}" WireBench consume "${bs[$b]}" warmup 6 "$WARMUP" "$STEP_TIMEOUT" >/dev/null 2>&1 &&
			wb "${wbargs[@]}" WireBench delete "${bs[$b]}" warmup >/dev/null 2>&1 || echo "warm-up of $b failed"
		# a first batch in every partition of the measured topics: a partition's first append
		# opens its log (Kafka: its segment and indexes), which is not what is measured
		for p in $PARTS; do
			for mode in $MODES; do
				[ "$(prefix "$mode")$p" = s1 ] && continue
				wb "${wbargs[@]}" WireBench produce "${bs[$b]}" "$(prefix "$mode")$p" "$p" $((15 * p)) 1024 >/dev/null 2>&1 ||
					echo "warm-up of $b: $(prefix "$mode")$p failed"
			done
		done
	done
fi

# measure BROKER BATCHING P: one produce and one consume; sets rs pu rpb rpr cs cu lu kt
measure() {
	local b=$1 mode=$2 p=$3 topic bp lp c0 c1 c2 l1 l2 t0 t1 t2 f0 f1 out got n bsa
	topic=$(prefix "$mode")$p
	if [ "$b" = kafka ]; then bp=$kafka_pid; lp=""; else bp=$(kp_pids); lp=$(listener_pids); fi
	[ "$b" = kafka_pg ] && psql_ "DROP TABLE IF EXISTS bench_mark; CREATE TABLE bench_mark AS SELECT partition, log_end_offset FROM kafka.partition_status WHERE topic = '$topic'" >/dev/null
	c0=$(runtime_ns $bp); t0=$(stat_ticks "$kafka_pid"); f0=$(minflt "$kafka_pid")
	if [ "$mode" != equal ]; then
		local rr=()
		[ "$mode" = spread ] && rr=(partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner)
		out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "$topic" --num-records "$N" --record-size 1024 --throughput -1 \
			--producer-props bootstrap.servers="${bs[$b]}" acks=1 enable.idempotence=false "${rr[@]}" --print-metrics 2>&1)
		rs=$(sed -nE "s/^$N records sent, ([0-9.]+) records\/sec.*/\1/p" <<<"$out" | tail -1)
		n=$N
		bsa=$(sed -nE 's/^producer-metrics:batch-size-avg:\{[^}]*\} *: *([0-9.]+).*/\1/p' <<<"$out" | head -1)
		rpr=$(sed -nE 's/^producer-metrics:records-per-request-avg:\{[^}]*\} *: *([0-9.]+).*/\1/p' <<<"$out" | head -1)
	else
		out=$(wb "${wbargs[@]}" WireBench produce "${bs[$b]}" "$topic" "$p" "$N" 1024 2>&1 | grep '^produce')
		grep -q ' errors=0 ' <<<"$out" && rs=$(sed -nE 's/.*records_per_sec=([0-9.]+).*/\1/p' <<<"$out") || rs=""
		n=$(sed -nE 's/.* records=([0-9]+).*/\1/p' <<<"$out")
		bsa=$(sed -nE 's/.*batch_size_avg=([0-9.]+).*/\1/p' <<<"$out")
		rpr=$(sed -nE 's/.*records_per_request_avg=([0-9.]+).*/\1/p' <<<"$out")
	fi
	c1=$(runtime_ns $bp); l1=$(runtime_ns $lp); t1=$(stat_ticks "$kafka_pid"); f1=$(minflt "$kafka_pid")
	out=$(wb -Dwb.tail=true "${wbargs[@]}" WireBench consume "${bs[$b]}" "$topic" "$p" "$N" "$STEP_TIMEOUT" 2>&1 | grep '^consume')
	c2=$(runtime_ns $bp); l2=$(runtime_ns $lp); t2=$(stat_ticks "$kafka_pid")
	cs=$(sed -nE 's/.*records_per_sec=([0-9.]+).*/\1/p' <<<"$out")
	got=$(sed -nE 's/.* records=([0-9]+).*/\1/p' <<<"$out")
	grep -q complete=true <<<"$out" || cs=fail
	[ -n "$rs" ] || rs=fail
	pu=$(us_per_rec "$c0" "$c1" "${n:-0}"); cu=$(us_per_rec "$c1" "$c2" "${got:-$N}"); lu=-
	[ -n "$lp" ] && lu=$(us_per_rec "$l1" "$l2" "${got:-$N}")
	# records per batch: Kafka's from the producer's metric, kafka_pg's counted in its store
	rpr=${rpr:--}; kt=""
	rpb=$(awk -v b="$bsa" -v r="$RB" 'BEGIN { if (b > 61) printf "%.1f", (b - 61) / r; else print "-" }')
	if [ "$b" = kafka_pg ]; then
		rpb="$(psql_ "SELECT round(sum(d.record_count)::numeric / count(*), 1) FROM bench_mark m
			CROSS JOIN LATERAL kafka.dump_log('$topic', m.partition, m.log_end_offset, 1000000) d
			WHERE d.base_offset >= m.log_end_offset") (metric $rpb)"
	else
		kt=" (/proc/stat: produce $(awk -v a="$t0" -v b="$t1" -v n="${n:-0}" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.3f", (b - a) / hz * 1e6 / n }'), consume $(awk -v a="$t1" -v b="$t2" -v n="${got:-$N}" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.3f", (b - a) / hz * 1e6 / n }'); JVM page faults per record produced $(awk -v a="$f0" -v b="$f1" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.2f", (b - a) / n }'))"
	fi
}

# what each broker costs doing nothing (timers, the background writer, KRaft), for reading the rest
for b in "${brokers[@]}"; do
	if [ "$b" = kafka ]; then bp=$kafka_pid; else bp=$(kp_pids); fi
	c0=$(runtime_ns $bp); sleep 10; c1=$(runtime_ns $bp)
	echo "idle: $b used $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.1f", (b - a) / 1e6 / 10 }') ms of CPU per second over 10 s"
done

declare -A v
points=()
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; shared_buffers $KP_SHARED_BUFFERS; $N records of 1 KiB per measurement; brokers ${brokers[*]}; batching $MODES; kafka_pg $(git rev-parse --short HEAD 2>/dev/null)"
for gb in $SIZES; do
	want=$((gb * 1024 * 1024)) # records of 1 KiB
	have=$(psql_ "SELECT log_end_offset FROM kafka.partition_status WHERE topic = 's1'")
	if [ "$have" -lt $want ]; then
		for b in "${brokers[@]}"; do
			t0=$SECONDS
			"$K" cli kafka-producer-perf-test --topic s1 --num-records $((want - have)) --record-size 1024 --throughput -1 \
				--producer-props bootstrap.servers="${bs[$b]}" acks=1 enable.idempotence=false \
				batch.size=524288 linger.ms=20 >/dev/null 2>&1
			echo "filled s1 on $b to ~$gb GB of record values in $((SECONDS - t0)) s; store: $(if [ "$b" = kafka ]; then du -sh "$KAFKA_STATE_DIR/$kafka_port/data" | cut -f1; else psql_ "SELECT pg_size_pretty(sum(size_bytes)::bigint) FROM kafka.partition_status" 2>/dev/null; fi); disk free: $(df -h --output=avail "$root" | tail -1 | tr -d ' ')"
		done
	fi
	for rep in $(seq 1 "$REPS"); do
		order=("${brokers[@]}")
		[ $((rep % 2)) = 0 ] && [ ${#brokers[@]} = 2 ] && order=(kafka kafka_pg)
		for mode in $MODES; do
			for p in $PARTS; do
				pt="${gb}GB/${p}p"
				for b in "${order[@]}"; do
					measure "$b" "$mode" "$p"
					k="$b|$mode|$pt"
					v[$k,prod]+="$rs "; v[$k,pcpu]+="$pu "; v[$k,cons]+="$cs "; v[$k,ccpu]+="$cu "; v[$k,lcpu]+="$lu "; v[$k,rpb]+="${rpb%% *} "
					echo "$(date -u +%T) $b $mode $pt rep $rep: produce $rs rec/s, $pu us CPU/rec, $rpb records/batch, $rpr records/request; consume tail $cs rec/s, $cu us CPU/rec (listener $lu)$kt; load $(cut -d' ' -f1 /proc/loadavg)"
				done
			done
		done
	done
	for p in $PARTS; do points+=("${gb}GB/${p}p"); done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); store: $(psql_ "SELECT pg_size_pretty(sum(size_bytes)::bigint) FROM kafka.partition_status" 2>/dev/null)"
echo
rnd() { if [[ $1 =~ ^[0-9.]+$ ]]; then printf '%.0f' "$1"; else printf '%s' "$1"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'; }
echo "| broker | batching | log / partitions | produce rec/s | produce CPU us/rec | records/batch | consume rec/s | consume CPU us/rec | of which the listener's | ratios to the first point (produce rate, CPU; consume rate, CPU, listener CPU) |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|"
for b in "${brokers[@]}"; do
	for mode in $MODES; do
		base="$b|$mode|${points[0]}"
		for pt in "${points[@]}"; do
			k="$b|$mode|$pt"
			row="| $b | $mode | $pt |"
			ratios=""
			for f in prod pcpu rpb cons ccpu lcpu; do
				m=$(median "${v[$k,$f]}")
				if [ $f = prod ] || [ $f = cons ]; then
					row+=" $(rnd "$m") ($(spread "$(for x in ${v[$k,$f]}; do rnd "$x"; echo; done)")) |"
				else
					row+=" $m ($(spread "${v[$k,$f]}")) |"
				fi
				[ $f = rpb ] || ratios+="$(ratio "$m" "$(median "${v[$base,$f]}")") "
			done
			echo "$row $ratios|"
		done
	done
done
echo
echo "Rates: higher is better; CPU per record (kafka_pg: all the cluster's processes; Kafka: its JVM): lower is better."
echo "Records/batch: kafka_pg's counted in its store, Kafka's from the producer's batch-size-avg."
if [ ${#brokers[@]} = 2 ]; then
	echo
	echo "| batching | log / partitions | kafka_pg/Kafka: produce CPU | consume CPU (all processes) | consume CPU (listener only) | produce rate | consume rate |"
	echo "|---|---|---:|---:|---:|---:|---:|"
	for mode in $MODES; do
		for pt in "${points[@]}"; do
			row="| $mode | $pt |"
			for f in pcpu ccpu lcpu:ccpu prod cons; do
				row+=" $(ratio "$(median "${v[kafka_pg|$mode|$pt,${f%%:*}]}")" "$(median "${v[kafka|$mode|$pt,${f##*:}]}")") |"
			done
			echo "$row"
		done
	done
	echo
	echo "CPU ratios: below 1 kafka_pg uses less CPU per record than Kafka; rate ratios: above 1 kafka_pg is faster."
fi
