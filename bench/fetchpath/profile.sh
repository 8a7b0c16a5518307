#!/bin/bash
# bench/fetchpath/profile.sh [ROUNDS]: where the listener's CPU goes when consuming the topics of
# bench/fetchpath/cost.sh, topic by topic: `perf record -g` on the listener workers during ROUNDS
# (3) consumes of each topic from the start (no group), then `perf report` of each topic's
# samples, by symbol with children (inclusive) and without (self).  The kafka_pg.so installed in
# the PostgreSQL that pg_config names is the one profiled.  Same cluster, fill and settings as
# cost.sh (BENCH_BATCH_SIZE, BENCH_SMALL, BENCH_WIDE); BENCH_TOPICS="w1 w1000" picks topics.
# Writes the reports to bench/out/fetchprofile-<time>-<topic>.{children,self}.txt and keeps
# the perf data beside them.  As root (perf).
#
#   bench/fetchpath/profile.sh 3
set -u
rounds=${1:-3}
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
K=$PWD/test/clients/kafka/kafka.sh
want=${BENCH_TOPICS:-"c100 w1 w1000"}
. bench/fetchpath/topics.sh
fp_cluster fetchprof
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
fp_fill
# batches per topic: how small the 1,000-partition topic's batches are (partitions 0-9 of it)
for t in c100:6 w1:1 w1000:10; do
	echo "${t%%:*}: $(psql_ "SELECT count(*) || ' batches, ' || round(avg(record_count), 1) || ' records and ' || round(avg(size_bytes)) || ' bytes each' FROM generate_series(0, ${t#*:} - 1) p, kafka.dump_log('${t%%:*}', p, 0, 1000000)")"
done
mkdir -p bench/out
stamp=$(date +%Y%m%d-%H%M%S)
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; batch.size $BATCH"
wb consume 127.0.0.1:$kport c100 6 100000 120 >/dev/null 2>&1 # warm the path a little
for t in c100:6:$SMALL w1:1:$WIDE w1000:1000:$WIDE; do
	IFS=: read -r topic parts n <<<"$t"
	case " $want " in *" $topic "*) ;; *) continue ;; esac
	out=bench/out/fetchprofile-$stamp-$topic
	pids=$(psql_ "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'")
	perf record -q -F 1999 -g -p "$pids" -o "$out.data" 2>/dev/null &
	pr=$!
	sleep 0.5
	for r in $(seq 1 "$rounds"); do
		wb consume 127.0.0.1:$kport "$topic" "$parts" "$n" 300 2>&1 | grep "^consume"
	done
	kill -INT $pr; wait $pr 2>/dev/null
	perf report -i "$out.data" --children --no-demangle --percent-limit 0.5 --stdio -g none 2>/dev/null >"$out.children.txt"
	perf report -i "$out.data" --no-children --no-demangle --percent-limit 0.3 --stdio -g none 2>/dev/null >"$out.self.txt"
	echo "$topic: $out.{children,self}.txt; load $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
