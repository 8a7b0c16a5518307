#!/usr/bin/env bash
# acks=all produce, two kafka_pg builds side by side (issue 11's and issue 13's group commit): a
# baseline and a candidate, each a PostgreSQL installation with its kafka_pg (e.g. made with
# `source /work/pgr-env.sh NAME; make install` from two trees), each in its own throwaway cluster
# with ONE listener worker, measured one after the other with repetitions interleaved. P
# kafka-producer-perf-test processes at once (P connections on the one worker), acks=all,
# idempotent, N records of 100 B each, a topic of 6 partitions. Prints per build the median and
# spread of the summed records/s, and the ratio candidate/baseline; asserts nothing.  Per run it
# also prints the WAL syncs (pg_stat_wal.wal_sync: every fdatasync of the WAL, whoever made it) per
# 1,000 records, and, where `perf` can count syscalls, the fdatasync calls the listener worker made
# itself and the seconds it spent in them (the time its event loop stood still; with the WAL
# flusher the flusher makes them).
#
#   BASE_BINDIR=/opt/pgr/a/usr/lib/postgresql/15/bin NEW_BINDIR=/opt/pgr/b/usr/lib/postgresql/15/bin \
#       bench/wire/acks_all_ab.sh
#
# Settings: BENCH_REPS (3), BENCH_PRODUCERS (4), BENCH_RECORDS (100000 per producer),
# BENCH_PORT (first PostgreSQL port, 56460), BENCH_KAFKA_PORT (first listener port, 29460),
# BENCH_SYNC_STANDBY (0; 1: each cluster gets a synchronous standby, synchronous_standby_names
# 'FIRST 1 (s1)'), BENCH_LATENCY_RATE (0: none; else each rep also runs WireBench e2e on each build:
# 1 KiB records, acks=all, at that many records/s for BENCH_LATENCY_SECONDS (10) on the 6
# partitions, and prints the acknowledgement and end-to-end p50/p99 medians).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
K=$repo/test/clients/kafka/kafka.sh
REPS=${BENCH_REPS:-3}
P=${BENCH_PRODUCERS:-4}
N=${BENCH_RECORDS:-100000}
SYNC=${BENCH_SYNC_STANDBY:-0}
# a synchronous standby 's1' of the build's cluster, on the next free port (ab_clusters' hook)
sync_standby() {
	local bindir=${bindirs[$1]} sport
	sport=$(ab_pgc "$bindir" free-port $((ab_port + 1)))
	ab_pgc "$bindir" basebackup "$ab_port" "$work/$1/standby" || return 1
	KP_EXTRA_CONF="cluster_name = 's1'" ab_pgc "$bindir" write-conf "$work/$1/standby" "$sport" 0 "$work/$1" || return 1
	ab_pgc "$bindir" start "$work/$1/standby" || return 1
	"$bindir/psql" -X -q -h 127.0.0.1 -p "$ab_port" -U postgres -c "ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (s1)'" -c "SELECT pg_reload_conf()" >/dev/null
	# measure only once commits wait for it
	wait_sync_standby "$bindir/psql" "$ab_port" s1 || { say "acks_all_ab: $1's standby did not become synchronous"; return 1; }
	ab_port=$sport
}
hook=""
[ "$SYNC" = 1 ] && hook=sync_standby
ab_clusters acks_ab "${BENCH_PORT:-56460}" "${BENCH_KAFKA_PORT:-29460}" "kafka.listener_workers = 1" $hook
say "acks_all_ab: baseline on 127.0.0.1:${kport[base]}, candidate on 127.0.0.1:${kport[new]}; $P producers x $N records, $REPS reps$([ "$SYNC" = 1 ] && echo ", synchronous standby")"

q() { "${bindirs[$1]}/psql" -X -At -h 127.0.0.1 -p "${pgport[$1]}" -U postgres -c "$2"; }
have_perf=0
perf stat -e 'syscalls:sys_enter_fdatasync' -- true >/dev/null 2>&1 && have_perf=1

# one run of a build: P perf-test processes at once; prints "records/s syncs/1000 worker_fdatasyncs
# worker_fdatasync_s" (the sum of their records/s, WAL syncs per 1,000 records, the listener
# worker's own fdatasync calls and seconds in them, "-" without perf)
run_once() {
	local build=$1 bs=127.0.0.1:${kport[$1]} i out total=0 s0 s1 wpid ppid="" wcalls=- wsecs=- pids=()
	s0=$(q "$build" "SELECT wal_sync FROM pg_stat_wal")
	wpid=$(q "$build" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener' LIMIT 1")
	if [ "$have_perf" = 1 ] && [ -n "$wpid" ]; then
		perf trace -s -e fdatasync -p "$wpid" -o "$work/ptrace.$build" >/dev/null 2>&1 &
		ppid=$!
		sleep 0.5
	fi
	for i in $(seq 1 "$P"); do
		"$K" cli kafka-producer-perf-test --topic ab --num-records "$N" --record-size 100 --throughput -1 \
			--producer-props bootstrap.servers="$bs" acks=all enable.idempotence=true >"$work/out.$i" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	s1=$(q "$build" "SELECT wal_sync FROM pg_stat_wal")
	if [ -n "$ppid" ]; then
		kill -INT "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
		# perf trace -s: "fdatasync  CALLS  ERRORS  TOTAL(msec) ..."
		read -r wcalls wsecs < <(awk '$1 == "fdatasync" { c += $2; t += $4 } END { printf "%d %.3f\n", c, t / 1000 }' "$work/ptrace.$build" 2>/dev/null)
		[ -n "$wcalls" ] || { wcalls=0; wsecs=0; }
	fi
	for i in $(seq 1 "$P"); do
		out=$(grep -E 'records sent, .* records/sec' "$work/out.$i" | tail -1 | sed -E 's/.*records sent, ([0-9.]+) records\/sec.*/\1/')
		[[ $out =~ ^[0-9.]+$ ]] || { echo "fail - $wcalls $wsecs"; return; }
		total=$(awk -v a="$total" -v b="$out" 'BEGIN { printf "%.0f", a + b }')
	done
	echo "$total $(awk -v a="$s0" -v b="$s1" -v n=$((P * N)) 'BEGIN { printf "%.2f", (b - a) * 1000 / n }') $wcalls $wsecs"
}

LRATE=${BENCH_LATENCY_RATE:-0}
LSECS=${BENCH_LATENCY_SECONDS:-10}
if [ "$LRATE" != 0 ]; then
	jars=$("$repo/test/clients/kafka/fetch-kafka.sh") || exit 1
	mkdir -p "$work/classes"
	javac -nowarn -cp "$jars/*" -d "$work/classes" "$here/WireBench.java" || exit 1
fi
# one latency run of a build: "ack_p50 ack_p99 e2e_p50 e2e_p99" (ms)
latency_once() {
	local out m r=""
	out=$(java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-tools.properties" \
		-cp "$work/classes:$jars/*" WireBench e2e "127.0.0.1:${kport[$1]}" ab 6 "$LRATE" "$LSECS" 1024 2>&1 | grep '^e2e ')
	for m in ack_p50 ack_p99 e2e_p50 e2e_p99; do
		r="$r $(sed -nE "s/.*${m}_ms=([0-9.]+|NaN).*/\1/p" <<<"$out")"
	done
	echo "$r"
}

declare -A vals syncs lat
for rep in $(seq 1 "$REPS"); do
	for build in base new; do
		read -r v sy wc ws < <(run_once "$build")
		vals[$build]="${vals[$build]:-} $v"
		syncs[$build]="${syncs[$build]:-} $sy"
		say "rep $rep $build: $v records/s, $sy WAL syncs per 1,000 records, listener worker: $wc fdatasync calls, $ws s in them"
	done
	if [ "$LRATE" != 0 ]; then
		for build in base new; do
			read -r a50 a99 e50 e99 < <(latency_once "$build")
			for m in a50 a99 e50 e99; do lat[$build.$m]="${lat[$build.$m]:-} ${!m}"; done
			say "rep $rep $build: 1 KiB acks=all at $LRATE/s: ack p50/p99 $a50/$a99 ms, end to end p50/p99 $e50/$e99 ms"
		done
	fi
done
b=$(median "${vals[base]}")
n=$(median "${vals[new]}")
printf '%-10s %12s %20s %16s\n' build "median r/s" "spread" "syncs/1000 rec"
printf '%-10s %12s %20s %16s\n' baseline "$b" "$(spread "${vals[base]}")" "$(median "${syncs[base]}")"
printf '%-10s %12s %20s %16s\n' candidate "$n" "$(spread "${vals[new]}")" "$(median "${syncs[new]}")"
if [ "$LRATE" != 0 ]; then
	for m in a50 a99 e50 e99; do
		lb=$(median "${lat[base.$m]}")
		ln=$(median "${lat[new.$m]}")
		printf '1 KiB at %s/s %s (ms): baseline %s (%s), candidate %s (%s), candidate/baseline %s\n' "$LRATE" \
			"$(sed 's/a/ack p/; s/e/end-to-end p/' <<<"$m")" "$lb" "$(spread "${lat[base.$m]}")" "$ln" "$(spread "${lat[new.$m]}")" \
			"$(awk -v a="$ln" -v b="$lb" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
	done
fi
if [[ $b =~ ^[0-9.]+$ && $n =~ ^[0-9.]+$ ]]; then
	echo "candidate/baseline: $(awk -v a="$n" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
fi
