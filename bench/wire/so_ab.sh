#!/usr/bin/env bash
# bench/wire/so_ab.sh BASE.so NEW.so: two builds of kafka_pg.so on the scripts/setup.sh cluster
# (its broker tuning, its 6 GB of shared buffers), one after the other, repetitions interleaved.
# For each turn the build's kafka_pg.so is installed in place of the installed one and the server restarted;
# then bench/lib.sh's prewarm_buffers waits for the resolver to load every partition and touches
# every shared buffer once (after a start both cost the listener: docs/performance.md, "The first
# minute after a restart"); then a CHECKPOINT and a sync.  Measured per turn, on a new topic of 6
# partitions:
#   - kafka-producer-perf-test, BENCH_RECORDS (1,000,000) records of 100 B, acks=all (idempotent),
#     batch.size BENCH_BATCH_SIZE (16384), linger.ms 5: records/s (bench/wire/bench.sh's row);
#   - WireBench e2e: 1 KiB records, acks=all, at BENCH_RATE (42,000) records/s, 15 s unmeasured then
#     10 s: acknowledgement and end-to-end p99 (bench.sh's row at 50% of saturation);
#   - during the produce, per 1,000 records: the CPU ms and the times run (schedstat) of the WAL
#     writer and of the listener workers together.
# Prints each turn, then per build the medians (min-max) and the ratios NEW/BASE.  The installed
# kafka_pg.so is put back and the server restarted at the end.  Run as root; asserts nothing.
#
#   make && cp kafka_pg.so /tmp/new.so; git stash; make && cp kafka_pg.so /tmp/base.so; git stash pop
#   bash bench/wire/so_ab.sh /tmp/base.so /tmp/new.so
#
# Settings: BENCH_REPS (4), BENCH_RECORDS, BENCH_BATCH_SIZE, BENCH_RATE, KP_DATA
# (/var/lib/kafka_pg/data), BENCH_KP_PGPORT (5432), KP_BOOTSTRAP (127.0.0.1:9092).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/bench/lib.sh"
. "$repo/test/lib/cluster.sh"
K=$repo/test/clients/kafka/kafka.sh
[ $# -eq 2 ] && [ -f "$1" ] && [ -f "$2" ] || { echo "usage: $0 BASE.so NEW.so" >&2; exit 2; }
declare -A so=([base]=$1 [new]=$2)
REPS=${BENCH_REPS:-4}
N=${BENCH_RECORDS:-1000000}
BATCH=${BENCH_BATCH_SIZE:-16384}
RATE=${BENCH_RATE:-42000}
DATA=${KP_DATA:-/var/lib/kafka_pg/data}
PGPORT=${BENCH_KP_PGPORT:-5432}
BS=${KP_BOOTSTRAP:-127.0.0.1:9092}
installed=$(pg_config --pkglibdir)/kafka_pg.so
sql() { psql -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -XAtq -c "$1"; }

work=$(mktemp -d)
cp "$installed" "$work/installed.so"
restore() {
	install_so "$work/installed.so" "$installed"
	restart_broker "$DATA" "$BS"
	rm -rf "$work"
}
trap restore EXIT
trap 'exit 130' INT TERM
wb_build "$work/classes" || exit 1

# schedstat: cpu ns and times run, of the pids given, summed
sched() { local p c=0 r=0 a b; for p in "$@"; do read -r a _ b <"/proc/$p/schedstat" && c=$((c + a)) && r=$((r + b)); done; echo "$c $r"; }

# per_thousand "CPU_NS RUNS" "CPU_NS RUNS": the CPU ms and the runs between two sched() readings, per
# 1,000 of the N records
per_thousand() {
	awk -v a="$1" -v b="$2" -v n="$N" 'BEGIN { split(a, x, " "); split(b, y, " ");
		printf "%.2f %.2f\n", (y[1] - x[1]) / 1e6 / (n / 1000), (y[2] - x[2]) / (n / 1000) }'
}

declare -A vals
add() { vals["$1|$2"]+="$3 "; }
echo "kafka_pg.so A/B on $DATA: base $1, new $2; $REPS repetitions; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
	for b in base new; do
		install_so "${so[$b]}" "$installed"  # a new file: the running server keeps its own (bench/lib.sh)
		restart_broker "$DATA" "$BS" || exit 1
		prewarm_buffers "$PGPORT" || exit 1
		topic=ab-$b-$rep-$RANDOM
		wb create "$BS" 6 "$topic" >/dev/null 2>&1 || { echo "creating $topic failed"; exit 1; }
		sql "CHECKPOINT"
		sync
		ww=$(pgrep -f "postgres: walwriter" | head -1)
		mapfile -t L < <(pgrep -f "postgres: kafka_pg listener")
		w0=$(sched "$ww")
		l0=$(sched "${L[@]}")
		rps=$(perf_produce "$K" "$BS" "$topic" "$N" 100 all "$BATCH")
		w1=$(sched "$ww")
		l1=$(sched "${L[@]}")
		read -r wc wr < <(per_thousand "$w0" "$w1")
		read -r lc lr < <(per_thousand "$l0" "$l1")
		sql "CHECKPOINT"
		sync
		e=$(wb -Dwb.batch_size="$BATCH" -Dwb.warmup_s=15 e2e "$BS" "$topic" 6 "$RATE" 10 1024 2>&1 | grep "^e2e ")
		ack=$(sed -nE 's/.*ack_p99_ms=([0-9.]+).*/\1/p' <<<"$e")
		e2e=$(sed -nE 's/.*e2e_p99_ms=([0-9.]+).*/\1/p' <<<"$e")
		wb delete "$BS" "$topic" >/dev/null 2>&1
		echo "rep $rep $b: produce 100 B acks=all ${rps:-fail} records/s | WAL writer ${wc} ms CPU, run ${wr}x per 1,000 records | listener ${lc} ms CPU, run ${lr}x | 1 KiB at ${RATE}/s ack p99 ${ack:-fail} ms, e2e p99 ${e2e:-fail} ms"
		add "$b" rps "$rps"
		add "$b" wwcpu "$wc"
		add "$b" wwrun "$wr"
		add "$b" lcpu "$lc"
		add "$b" ack "$ack"
		add "$b" e2e "$e2e"
	done
done

echo
printf '| %-52s | %-24s | %-24s | %-9s |\n' "figure (medians, min-max)" base new new/base
for m in "rps:produce 100 B acks=all, records/s" "wwcpu:WAL writer CPU ms per 1,000 records" "wwrun:WAL writer times run per 1,000 records" \
	"lcpu:listener CPU ms per 1,000 records" "ack:ack p99 ms, 1 KiB at the rate" "e2e:e2e p99 ms, 1 KiB at the rate"; do
	k=${m%%:*}
	mb=$(median "${vals[base|$k]}")
	mn=$(median "${vals[new|$k]}")
	r=$(awk -v a="$mb" -v b="$mn" 'BEGIN { if (a + 0 > 0) printf "%.2f", b / a; else print "-" }')
	printf '| %-52s | %-24s | %-24s | %-9s |\n' "${m#*:}" "$mb ($(spread "${vals[base|$k]}"))" "$mn ($(spread "${vals[new|$k]}"))" "$r"
done
