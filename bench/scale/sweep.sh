#!/bin/bash
# bench/scale/sweep.sh: is the cost per record flat as the log grows and with many partitions?
# (issue 13's goal "1 GB vs 20 GB of log, 1, 100 and 1,000 partitions").
#
# One throwaway cluster with scripts/broker-tuning.sh's settings (shared_buffers
# BENCH_SHARED_BUFFERS, 1GB).  Topic s1 (1 partition) is the log that grows: before each size
# point of BENCH_SIZES_GB it is filled (unmeasured, 1 KiB records, large batches) until it holds
# that many GB of record values; topics s100 and s1000 (100 and 1,000 partitions) grow only by
# what the measurements add.  At each size point, BENCH_REPS times, for P in BENCH_PARTITIONS
# (interleaved): BENCH_RECORDS records of 1 KiB produced to sP (kafka-producer-perf-test,
# acks=1, client defaults), then the same number read back from the tail (WireBench consume
# -Dwb.tail=true: the last RECORDS/P of each partition, all of one that got fewer).  Each
# measurement gives records/s and the CPU time of all the cluster's processes per record
# (utime+stime from /proc, microseconds; less noisy than rates on a shared machine), and for the consume that of
# the listener workers alone.  Prints every measurement, then per point the
# median (spread) and the ratio of the medians to the first point (smallest size, 1 partition),
# measured in the same run.  Asserts nothing.  As root.  Removes its cluster at the end.
#
#   bench/scale/sweep.sh                                 # 1 and 5 GB; ~15 minutes
#   BENCH_SIZES_GB="1 20" BENCH_RECORDS=100000 bench/scale/sweep.sh
#                            # ~25 minutes, ~35 GB of disk (log + WAL); docs/performance.md's run
#
# Settings: BENCH_SIZES_GB ("1 5"), BENCH_PARTITIONS ("1 100 1000"), BENCH_REPS (3),
# BENCH_RECORDS (200000), BENCH_SHARED_BUFFERS (1GB), BENCH_STEP_TIMEOUT (600 s).
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
export KP_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-1GB}

jars=$(test/clients/kafka/fetch-kafka.sh) || exit 1
root=$(bash test/lib/pgcluster mktemp scale); d=$root/data
cls=$root/classes; mkdir -p "$cls"
trap 'bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
javac -nowarn -cp "$jars/*" -d "$cls" bench/wire/WireBench.java || exit 1
wb() { timeout "$STEP_TIMEOUT" java -Xmx1g -XX:+UseG1GC "$@"; }
wbargs=(-Dlog4j2.configurationFile=$PWD/test/clients/kafka/log4j2-tools.properties -cp "$cls:$jars/*")
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
KP_EXTRA_CONF="$(kp_broker_tuning)" bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
for p in $PARTS; do psql_ "SELECT kafka.create_topic('s$p', $p)" >/dev/null || exit 1; done

ccpu() { # utime+stime (ticks) of every process of the cluster
	local pm t=0 p
	pm=$(bash test/lib/pgcluster postmaster-pid "$d")
	for p in $pm $(ps -o pid= --ppid "$pm"); do
		t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)))
	done
	echo $t
}
lcpu() { # utime+stime (ticks) of the listener workers
	local t=0 p
	for p in $(psql_ "SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'"); do
		t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)))
	done
	echo $t
}
us_per_rec() { awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }'; }

filled=0 # records of s1 written by the fills
declare -A v
points=()
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; shared_buffers $KP_SHARED_BUFFERS; $N records of 1 KiB per measurement"
for gb in $SIZES; do
	want=$((gb * 1024 * 1024))           # records of 1 KiB
	have=$((filled + N * REPS * ${#points[@]}))
	if [ $have -lt $want ]; then
		t0=$SECONDS
		"$K" cli kafka-producer-perf-test --topic s1 --num-records $((want - have)) --record-size 1024 --throughput -1 \
			--producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false \
			batch.size=524288 linger.ms=20 >/dev/null 2>&1
		filled=$((filled + want - have))
		echo "filled s1 to ~$gb GB of record values in $((SECONDS - t0)) s; store: $(psql_ "SELECT pg_size_pretty(sum(size_bytes)::bigint) FROM kafka.partition_status" 2>/dev/null); disk free: $(df -h --output=avail "$root" | tail -1 | tr -d ' ')"
	fi
	for rep in $(seq 1 "$REPS"); do
		for p in $PARTS; do
			pt="${gb}GB/${p}p"
			c0=$(ccpu)
			rs=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic s$p --num-records "$N" --record-size 1024 --throughput -1 \
				--producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false 2>&1 |
				sed -nE "s/^$N records sent, ([0-9.]+) records\/sec.*/\1/p" | tail -1)
			c1=$(ccpu); l1=$(lcpu)
			out=$(wb -Dwb.tail=true "${wbargs[@]}" WireBench consume 127.0.0.1:$kport s$p "$p" "$N" "$STEP_TIMEOUT" 2>&1 | grep '^consume')
			c2=$(ccpu); l2=$(lcpu)
			cs=$(sed -nE 's/.*records_per_sec=([0-9.]+).*/\1/p' <<<"$out")
			got=$(sed -nE 's/.*records=([0-9]+).*/\1/p' <<<"$out")
			grep -q complete=true <<<"$out" || cs=fail
			pu=$(us_per_rec "$c0" "$c1" "$N"); cu=$(us_per_rec "$c1" "$c2" "${got:-$N}"); lu=$(us_per_rec "$l1" "$l2" "${got:-$N}")
			v[$pt,prod]+="${rs:-fail} "; v[$pt,pcpu]+="$pu "; v[$pt,cons]+="$cs "; v[$pt,ccpu]+="$cu "; v[$pt,lcpu]+="$lu "
			echo "$pt rep $rep: produce ${rs:-fail} rec/s, ${pu} us CPU/rec; consume tail ${cs} rec/s, ${cu} us CPU/rec (listener ${lu}); load $(cut -d' ' -f1 /proc/loadavg)"
		done
	done
	for p in $PARTS; do points+=("${gb}GB/${p}p"); done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); store: $(psql_ "SELECT pg_size_pretty(sum(size_bytes)::bigint) FROM kafka.partition_status" 2>/dev/null)"
echo
base=${points[0]}
echo "| log / partitions | produce rec/s | produce CPU us/rec | consume rec/s | consume CPU us/rec | of which the listener's | ratios to $base (produce rate, CPU; consume rate, CPU, listener CPU) |"
echo "|---|---:|---:|---:|---:|---:|---|"
for pt in "${points[@]}"; do
	row="| $pt |"
	ratios=""
	for f in prod pcpu cons ccpu lcpu; do
		m=$(median "${v[$pt,$f]}"); b=$(median "${v[$base,$f]}")
		row+=" $m ($(spread "${v[$pt,$f]}")) |"
		ratios+="$(awk -v a="$m" -v b="$b" 'BEGIN { if (a ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }') "
	done
	echo "$row $ratios|"
done
echo
echo "Rates: higher is better; CPU per record (all the cluster's processes): lower is better."
