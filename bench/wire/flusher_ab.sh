#!/usr/bin/env bash
# The WAL flusher on and off, interleaved, on one throwaway cluster: the acknowledgement latency
# distribution of acks=all.  One kafka_pg build (the PostgreSQL installation at PG_BINDIR, e.g.
# after `source /work/pgr-env.sh NAME; make install`), a cluster with scripts/broker-tuning.sh's
# settings and the default two listener workers, a topic of 6 partitions; per repetition
# `WireBench e2e` (1 KiB records, acks=all, linger.ms=0, one producer and one consumer) at
# BENCH_RATE records/s for BENCH_SECONDS, once with `kafka.wal_flusher = off` and once `on`
# (ALTER SYSTEM and a reload; the order alternates between repetitions).  From every record's
# own acknowledgement latency (WireBench -Dwb.dump, the first second left out) it prints per run
# p50 / p99 / max and the count of acknowledgements over 10 ms, and per setting the medians.
# Asserts nothing.  Label what it prints with `uptime`: it is a latency measurement.
#
#   PG_BINDIR=/work/pgr/NAME/usr/lib/postgresql/15/bin BENCH_RATE=40000 bench/wire/flusher_ab.sh
#
# Settings: BENCH_REPS (3), BENCH_RATE (40000), BENCH_SECONDS (10), BENCH_SIZE (1024),
# BENCH_PORT (56320), BENCH_KAFKA_PORT (56321), BENCH_KEEP (empty; a folder to copy the server
# log and the dumps to: with a kafka_pg built with -DKP_TRACE_LATENCY the log holds the
# hand-off's trace, docs/performance.md).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
. "$repo/scripts/broker-tuning.sh"
: "${PG_BINDIR:?the PostgreSQL bin directory of the build to measure}"
export PG_BINDIR
REPS=${BENCH_REPS:-3}
RATE=${BENCH_RATE:-40000}
SECS=${BENCH_SECONDS:-10}
SIZE=${BENCH_SIZE:-1024}
KEEP=${BENCH_KEEP:-}
pgc() { bash "$repo/test/lib/pgcluster" "$@"; }

work=$(pgc mktemp flusher_ab)
cleanup() {
	[ -d "$work/data" ] && pgc stop "$work/data" immediate
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export KP_SHARED_BUFFERS=${KP_SHARED_BUFFERS:-1GB}
port=$(pgc free-port "${BENCH_PORT:-56320}")
kport=$(pgc free-port "${BENCH_KAFKA_PORT:-56321}" "$port")
KP_EXTRA_CONF="$(kp_broker_tuning)
log_min_messages = log" pgc init "$work/data" "$port" "$kport" >/dev/null || exit 1
pgc start "$work/data" || exit 1
pgc create-extension "$port" postgres >/dev/null || exit 1
q() { "$PG_BINDIR/psql" -X -At -h 127.0.0.1 -p "$port" -U postgres -c "$1"; }
q "SELECT kafka.create_topic('fab', 6)" >/dev/null || exit 1

jars=$("$repo/test/clients/kafka/fetch-kafka.sh") || exit 1
mkdir -p "$work/classes"
javac -nowarn -cp "$jars/*" -d "$work/classes" "$here/WireBench.java" || exit 1

# stats of one dump: "p50 p99 max over10ms n" of the acknowledgement latencies (ms)
stats() {
	awk -v warm="$RATE" '$1 >= warm && $3 >= 0 { print $3 / 1e6 }' "$1" | sort -g |
		awk '{ a[NR] = $1; if ($1 > 10) o++ }
			END { if (!NR) { print "- - - - 0"; exit }
				i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
				printf "%.2f %.2f %.1f %d %d\n", a[i50], a[i99], a[NR], o, NR }'
}

# the listener workers' and the flusher's scheduling so far: "wakeups runqueue_us cpu_us" summed
# over them (voluntary context switches, /proc/PID/status; time runnable but waiting for a CPU
# and time on a CPU, /proc/PID/schedstat), per backend type
sched() {
	local t pid w=0 r=0 c=0 out=""
	for t in "kafka_pg listener" "kafka_pg WAL flusher"; do
		w=0 r=0 c=0
		for pid in $(q "SELECT pid FROM pg_stat_activity WHERE backend_type = '$t'"); do
			w=$((w + $(awk '/^voluntary_ctxt_switches/ { print $2 }' /proc/"$pid"/status)))
			r=$((r + $(awk '{ printf "%d", $2 / 1000 }' /proc/"$pid"/schedstat)))
			c=$((c + $(awk '{ printf "%d", $1 / 1000 }' /proc/"$pid"/schedstat)))
		done
		out="$out $w $r $c"
	done
	echo "$out"
}

say "flusher_ab: 127.0.0.1:$kport, ${SIZE} B acks=all at $RATE/s for ${SECS} s, $REPS reps; load: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A p50 p99 mx over
for rep in $(seq 1 "$REPS"); do
	order="off on"
	[ $((rep % 2)) = 0 ] && order="on off"
	for mode in $order; do
		q "ALTER SYSTEM SET kafka.wal_flusher = $mode" >/dev/null
		q "SELECT pg_reload_conf()" >/dev/null
		sleep 2
		dump=$work/dump-$rep-$mode.txt
		read -r lw0 lr0 lc0 fw0 fr0 fc0 < <(sched)
		# the fdatasync calls the listener workers make themselves (perf, where it can count them)
		wpids=$(q "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
		perf stat -x, -e syscalls:sys_enter_fdatasync -p "$wpids" -o "$work/perf.$rep.$mode" >/dev/null 2>&1 &
		perfpid=$!
		out=$(java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-tools.properties" \
			-Dwb.dump="$dump" -cp "$work/classes:$jars/*" WireBench e2e "127.0.0.1:$kport" fab 6 "$RATE" "$SECS" "$SIZE" 2>&1 | grep '^e2e ')
		read -r lw1 lr1 lc1 fw1 fr1 fc1 < <(sched)
		kill -INT "$perfpid" 2>/dev/null
		wait "$perfpid" 2>/dev/null
		wsync=$(awk -F, '/fdatasync/ { print $1 }' "$work/perf.$rep.$mode" 2>/dev/null)
		read -r a b c d n < <(stats "$dump")
		p50[$mode]="${p50[$mode]:-} $a"
		p99[$mode]="${p99[$mode]:-} $b"
		mx[$mode]="${mx[$mode]:-} $c"
		over[$mode]="${over[$mode]:-} $d"
		say "rep $rep flusher $mode: ack p50 $a ms, p99 $b ms, max $c ms, $d of $n acks > 10 ms; load $(cut -d' ' -f1 /proc/loadavg); $(sed -nE 's/.*(e2e_p99_ms=[0-9.]+).*/\1/p' <<<"$out")"
		awk -v lw=$((lw1 - lw0)) -v lr=$((lr1 - lr0)) -v lc=$((lc1 - lc0)) -v fw=$((fw1 - fw0)) -v fr=$((fr1 - fr0)) -v fc=$((fc1 - fc0)) -v n="$((RATE * (SECS + 1)))" -v ws="${wsync:--}" 'BEGIN {
			printf "    per 1,000 records: listener workers %.1f wake-ups, %.2f ms on a CPU, %.2f ms waiting for one (%.0f us a wake-up); flusher %.1f wake-ups, %.2f ms on a CPU, %.2f ms waiting (%.0f us a wake-up); fdatasync calls by the listener workers: %s\n",
				lw * 1000 / n, lc / n, lr / n, lw ? lr / lw : 0, fw * 1000 / n, fc / n, fr / n, fw ? fr / fw : 0, ws }' >&2
		[ -n "$KEEP" ] && mkdir -p "$KEEP" && cp "$dump" "$KEEP/"
	done
done
printf '%-8s %10s %10s %10s %14s   (medians of %s; spread)\n' flusher "ack p50" "ack p99" "ack max" "acks > 10 ms" "$REPS"
for mode in off on; do
	printf '%-8s %10s %10s %10s %14s   p99 %s, max %s, >10ms %s\n' "$mode" "$(median "${p50[$mode]}")" "$(median "${p99[$mode]}")" \
		"$(median "${mx[$mode]}")" "$(median "${over[$mode]}")" "$(spread "${p99[$mode]}")" "$(spread "${mx[$mode]}")" "$(spread "${over[$mode]}")"
done
say "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$KEEP" ] && cp "$(pgc logfile "$work/data")" "$KEEP/server.log"
exit 0
