#!/bin/bash
# bench/fetchpath/cost.sh BEFORE.so AFTER.so [ROUNDS]: the listener's CPU per record consumed, for
# two builds of kafka_pg.so alternating on one cluster and one log (the PostgreSQL that pg_config
# names; its kafka_pg.so is overwritten, AFTER.so is left installed).
#
# Fills three topics once (kafka-producer-perf-test, acks=1, linger.ms 5, batch.size
# BENCH_BATCH_SIZE): c100, 6 partitions, BENCH_SMALL (500000) records of 100 B; w1, 1 partition,
# and w1000, 1,000 partitions, BENCH_WIDE (100000) records of 1 KiB each (the 1- and
# 1,000-partition points of bench/scale/sweep.sh: ~100 records per partition; at the default
# batch.size both get batches of 15 records, ~15.5 KB: bench/fetchpath/profile.sh prints them).
# Then per round and
# build: restart the server with that build, one unmeasured consume, then WireBench consume of
# each topic from the start (no group) while `perf stat` counts the listener processes'
# task-clock and page faults.  Prints every consume, then per build and topic the median (spread)
# of the listener CPU in microseconds per record, the ratio AFTER/BEFORE of the medians, and per
# build the ratio w1000/w1 (what 1,000 partitions cost per record against one).  Also counts the
# listener's file system calls per consume (open, lseek and close; pread, the reads of pages not
# in shared buffers), a count that the load on the machine does not blur.  Records/s are
# printed too but are the Java consumer's rate on a shared machine: read the CPU.  Asserts
# nothing.  As root (perf, the library directory).
#
# Every round starts with empty shared buffers (the restart), so every page a consume reads comes
# from the kernel (pread) and each worker's fetch buffers are faulted in afresh.  BENCH_WARM=1
# consumes every topic once more, unmeasured, after each restart, so that what is measured is a
# running broker's consume: with shared buffers that hold the three topics (the cluster's default
# is 128 MB) every page is then a buffer hit, and with one listener worker the measured consume
# runs on the worker that the warm-up faulted in (with two, a connection lands on either, and a
# consume on the other one counts ~13,000 page faults of its fetch buffers):
#   BENCH_WARM=1 KP_EXTRA_CONF=$'shared_buffers = 1GB\nkafka.listener_workers = 1' \
#       bench/fetchpath/cost.sh /tmp/before.so /tmp/after.so 5
#
#   bench/fetchpath/cost.sh /tmp/before.so /tmp/after.so 3
#   BENCH_BATCH_SIZE=65536 bench/fetchpath/cost.sh /tmp/before.so /tmp/after.so 3
#
# BENCH_AFTER_SETTING=NAME=VALUE: a PostgreSQL setting for the "after" turns (ALTER SYSTEM before
# each of their restarts, RESET before each "before" turn), to compare a setting with the same
# build as both, e.g. huge pages (the harness's clusters have them off; the kernel's pool needs
# room for shared_buffers):
#   BENCH_WARM=1 BENCH_AFTER_SETTING=huge_pages=on KP_EXTRA_CONF=$'shared_buffers = 1GB\nkafka.listener_workers = 1' \
#       bench/fetchpath/cost.sh /tmp/kp.so /tmp/kp.so 5
set -u
before_so=$(readlink -f "$1"); after_so=$(readlink -f "$2"); rounds=${3:-3}
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
K=$PWD/test/clients/kafka/kafka.sh
LIB=$(pg_config --pkglibdir)
. bench/fetchpath/topics.sh
fp_cluster fetchcost
use() { if [ "$1" = before ]; then install_so "$before_so" "$LIB/kafka_pg.so"; else install_so "$after_so" "$LIB/kafka_pg.so"; fi; }
use before
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
fp_fill
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; batch.size $BATCH"

declare -A v
topics="c100:6:$SMALL w1:1:$WIDE w1000:1000:$WIDE"
for r in $(seq 1 "$rounds"); do
	for b in before after; do
		if [ -n "${BENCH_AFTER_SETTING:-}" ]; then
			if [ $b = after ]; then
				psql_ "ALTER SYSTEM SET ${BENCH_AFTER_SETTING%%=*} = '${BENCH_AFTER_SETTING#*=}'" >/dev/null || exit 1
			else
				psql_ "ALTER SYSTEM RESET ${BENCH_AFTER_SETTING%%=*}" >/dev/null || exit 1
			fi
		fi
		bash test/lib/pgcluster stop "$d" >/dev/null; use $b; bash test/lib/pgcluster start "$d" >/dev/null || exit 1; sleep 3
		[ -z "${BENCH_AFTER_SETTING:-}" ] || echo "round $r $b: ${BENCH_AFTER_SETTING%%=*} = $(psql_ "SHOW ${BENCH_AFTER_SETTING%%=*}")"
		wb consume 127.0.0.1:$kport c100 6 100000 120 >/dev/null 2>&1 # warm the path a little
		if [ "${BENCH_WARM:-0}" = 1 ]; then
			for t in $topics; do
				IFS=: read -r topic parts n <<<"$t"
				wb consume 127.0.0.1:$kport "$topic" "$parts" "$n" 300 >/dev/null 2>&1
			done
		fi
		for t in $topics; do
			IFS=: read -r topic parts n <<<"$t"
			pids=$(psql_ "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'")
			perf stat -x, -e task-clock,page-faults,syscalls:sys_enter_openat,syscalls:sys_enter_lseek,syscalls:sys_enter_close,syscalls:sys_enter_pread64 -p "$pids" -o "$root/pstat" &
			ps_pid=$!
			sleep 0.5
			out=$(wb consume 127.0.0.1:$kport "$topic" "$parts" "$n" 300 2>&1 | grep "^consume")
			kill -INT $ps_pid; wait $ps_pid 2>/dev/null
			ms=$(awk -F, '$3 == "task-clock" { print $1 }' "$root/pstat")
			pf=$(awk -F, '$3 == "page-faults" { print $1 }' "$root/pstat")
			fc=$(awk -F, '$3 ~ /sys_enter_(openat|lseek|close)$/ { n += $1 } END { print n + 0 }' "$root/pstat")
			pr=$(awk -F, '$3 ~ /sys_enter_pread64$/ { print $1 }' "$root/pstat")
			got=$(sed -nE 's/.*records=([0-9]+).*/\1/p' <<<"$out")
			rps=$(sed -nE 's/.*records_per_sec=([0-9.]+).*/\1/p' <<<"$out")
			grep -q complete=true <<<"$out" || rps=fail
			us=$(awk -v ms="$ms" -v n="${got:-0}" 'BEGIN { if (n > 0) printf "%.3f", ms * 1000 / n; else print "fail" }')
			pfr=$(awk -v p="$pf" -v n="${got:-0}" 'BEGIN { if (n > 0) printf "%.4f", p / n; else print "fail" }')
			v[$b,$topic,us]+="$us "; v[$b,$topic,rps]+="$rps "; v[$b,$topic,pf]+="$pfr "
			v[$b,$topic,fc]+="$fc "; v[$b,$topic,pr]+="$pr "
			echo "round $r $b $topic: listener ${ms} ms = ${us} us/record, ${pfr} page faults/record, $fc open+lseek+close, $pr pread; $rps records/s; load $(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| topic | listener CPU us/record, before | after | after/before | page faults/record, before | after | records/s, before | after |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for t in $topics; do
	topic=${t%%:*}
	mb=$(median "${v[before,$topic,us]}"); ma=$(median "${v[after,$topic,us]}")
	echo "| $topic | $mb ($(spread "${v[before,$topic,us]}")) | $ma ($(spread "${v[after,$topic,us]}")) | $(awk -v a="$ma" -v b="$mb" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }') | $(median "${v[before,$topic,pf]}") | $(median "${v[after,$topic,pf]}") | $(median "${v[before,$topic,rps]}") | $(median "${v[after,$topic,rps]}") |"
done
echo
echo "| topic | open+lseek+close per consume, before | after | pread per consume, before | after |"
echo "|---|---:|---:|---:|---:|"
for t in $topics; do
	topic=${t%%:*}
	echo "| $topic | $(median "${v[before,$topic,fc]}") | $(median "${v[after,$topic,fc]}") | $(median "${v[before,$topic,pr]}") | $(median "${v[after,$topic,pr]}") |"
done
echo
for b in before after; do
	echo "$b: w1000/w1 listener CPU per record $(awk -v a="$(median "${v[$b,w1000,us]}")" -v b="$(median "${v[$b,w1,us]}")" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
done
bash test/lib/pgcluster stop "$d" >/dev/null
install_so "$after_so" "$LIB/kafka_pg.so"
