#!/usr/bin/env bash
# bench/tuning/discard.sh: what freeing a large file costs kafka_pg's acks=all acknowledgements when
# the file system is mounted with `discard` (online discard: ext4 sends the freed blocks to the disk
# as discard requests when it commits its journal, and every fsync on that file system waits for the
# commit).  A broker frees files whenever it deletes a topic or retention deletes a segment, and so
# does anything else on the same file system (Apache Kafka beside it in bench/wire/bench.sh).
#
# Per repetition, two runs against kafka_pg at KP_BOOTSTRAP (default 127.0.0.1:9092, e.g. the
# scripts/setup.sh cluster), interleaved: WireBench e2e, 1 KiB records at 5,000/s, acks=all,
# linger.ms 0, 15 s unmeasured then 10 s measured, on a topic of 6 partitions; before each, a file
# of BENCH_FILE_MB (1500) MB of random bytes is written and synced next to the cluster's data
# directory (BENCH_DIR, default /var/lib/kafka_pg), and 20 s after the client starts (3-5 s into
# the measured part) it is removed ("rm") or left alone ("keep"; removed after the run).  Prints
# the file system's mount options, then per run: the acknowledgements of the measured records
# that took 5 ms or more, their p99 and max, and the rm's own duration.  Asserts nothing.  As root.
#
#   bench/tuning/discard.sh          # ~4 minutes
#
# Settings: KP_BOOTSTRAP, BENCH_REPS (2), BENCH_DIR, BENCH_FILE_MB.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
REPS=${BENCH_REPS:-2}
DIR=${BENCH_DIR:-/var/lib/kafka_pg}
MB=${BENCH_FILE_MB:-1500}
RATE=5000 WARM=15 SECS=10  # records/s, unmeasured seconds, measured seconds
work=$(mktemp -d)
big=$DIR/discard-bench-$$.bin
trap 'rm -rf "$work"; rm -f "$big"' EXIT
wb_build "$work" || exit 1
topic=discard-bench-$$
wb create "$KP_BOOTSTRAP" 6 "$topic" >/dev/null 2>&1 || { echo "kafka_pg does not answer at $KP_BOOTSTRAP" >&2; exit 1; }
echo "file system of $DIR: $(findmnt -no SOURCE,FSTYPE,OPTIONS -T "$DIR"); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
	for mode in keep rm; do
		dd if=/dev/urandom of="$big" bs=1M count="$MB" status=none && sync
		(
			sleep $((WARM + 5))
			if [ "$mode" = rm ]; then
				t0=$(date +%s%N); rm -f "$big"; echo "rm took $((($(date +%s%N) - t0) / 1000000)) ms" >"$work/rm.txt"
			fi
		) &
		timer=$!
		wb -Dwb.warmup_s=$WARM -Dwb.dump="$work/dump.txt" e2e "$KP_BOOTSTRAP" "$topic" 6 $RATE $SECS 1024 >"$work/e2e.out" 2>&1
		wait "$timer"
		rm -f "$big"
		[ -s "$work/dump.txt" ] || { echo "rep $rep $mode: WireBench e2e failed: $(tail -3 "$work/e2e.out")"; continue; }
		python3 - "$work/dump.txt" "rep $rep $mode" "$(cat "$work/rm.txt" 2>/dev/null)" $((RATE * WARM)) <<'PY'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
acks = sorted(r[2] for r in rows[int(sys.argv[4]):] if r[2] >= 0)   # after the unmeasured ones
slow = sum(a >= 5_000_000 for a in acks)
print(f"{sys.argv[2]:>10}: measured acknowledgements >= 5 ms {slow:5d} of {len(acks)}, "
      f"p99 {acks[int(len(acks) * 0.99)] / 1e6:6.1f} ms, max {acks[-1] / 1e6:6.1f} ms  {sys.argv[3]}")
PY
		rm -f "$work/rm.txt" "$work/dump.txt"
	done
done
wb delete "$KP_BOOTSTRAP" "$topic" >/dev/null 2>&1
