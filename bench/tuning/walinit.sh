#!/bin/bash
# bench/tuning/walinit.sh: what a new WAL segment costs the acks=all path, with wal_init_zero on
# (PostgreSQL's default: a new segment is written full of zeros and fsynced by whoever flushes
# across its start, a listener worker answering acks=all among them) and off (scripts/broker-tuning.sh).
# Per configuration and repetition, a fresh cluster (fresh, so that every segment is new, as on a
# broker until its first checkpoints recycle old ones): kafka-producer-perf-test, 1 KiB records,
# acks=all, linger.ms=0, 100,000 at 5,000/s, then 200,000 as fast as it goes.  The listener's
# flushes come from its own trace (the server log), so kafka_pg must be built with
#   make clean && make COPT=-DKP_TRACE_LATENCY && make install
# (src/listener/server.c: every flush of 2 ms or more, or across a segment, and a histogram of all
# of them every 10 s).  Prints per run the producer's summaries, the flushes that crossed into a
# new segment (count, median, max) and the share of all flushes by duration.  Asserts nothing.
# As root.  Settings: BENCH_REPS (2), KP_TEST_PORT, KAFKA_TEST_PORT.
set -u
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
K=$PWD/test/clients/kafka/kafka.sh
REPS=${BENCH_REPS:-2}
root=$(bash test/lib/pgcluster mktemp walinit)
trap 'bash test/lib/pgcluster stop "$root/data" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432})
kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
for rep in $(seq 1 "$REPS"); do
	for zero in on off; do
		d=$root/data
		bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1
		rm -rf "$d" "$(bash test/lib/pgcluster logfile "$d")"
		KP_EXTRA_CONF="wal_init_zero = $zero" bash test/lib/pgcluster init "$d" "$port" "$kport" >/dev/null || exit 1
		bash test/lib/pgcluster start "$d" >/dev/null || exit 1
		bash test/lib/pgcluster create-extension "$port" postgres >/dev/null || exit 1
		"$K" cli kafka-topics --bootstrap-server 127.0.0.1:$kport --create --topic w --partitions 6 >/dev/null 2>&1
		for run in "100000 5000" "200000 -1"; do
			set -- $run
			echo "rep $rep wal_init_zero=$zero $($K cli kafka-producer-perf-test --topic w --num-records $1 --record-size 1024 \
				--throughput $2 --producer-props bootstrap.servers=127.0.0.1:$kport acks=all linger.ms=0 2>&1 |
				grep 'records sent' | tail -1)"
		done
		/usr/bin/python3 - "$(bash test/lib/pgcluster logfile "$d")" "rep $rep wal_init_zero=$zero" <<'PY'
import re, sys
seg, hist = [], [0] * 8
for line in open(sys.argv[1]):
    m = re.search(r"kp_trace flush \w+ at \d+ dur_us (\d+) bytes -?\d+ seg (\w+)->(\w+)", line)
    if m and m.group(2) != m.group(3):
        seg.append(int(m.group(1)) / 1000)
    m = re.search(r"kp_trace flush_hist <250us (\d+) <500 (\d+) <1ms (\d+) <2 (\d+) <5 (\d+) <10 (\d+) <50 (\d+) >=50ms (\d+)", line)
    if m:
        hist = [a + int(b) for a, b in zip(hist, m.groups())]
if not seg and not sum(hist):
    sys.exit(print(f"{sys.argv[2]}: no kp_trace lines: is kafka_pg built with -DKP_TRACE_LATENCY?"))
seg.sort()
tot = max(sum(hist), 1)
print(f"{sys.argv[2]}: flushes across a new segment: {len(seg)}, median {seg[len(seg) // 2] if seg else 0:.1f} ms, "
      f"max {seg[-1] if seg else 0:.1f} ms; all {sum(hist)} flushes: <1 ms {100 * sum(hist[:3]) / tot:.0f}%, "
      f"1-5 ms {100 * sum(hist[3:5]) / tot:.0f}%, 5-10 ms {100 * hist[5] / tot:.1f}%, >=10 ms {100 * sum(hist[6:]) / tot:.2f}%")
PY
	done
done
