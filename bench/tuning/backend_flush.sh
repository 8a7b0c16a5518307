#!/usr/bin/env bash
# bench/tuning/backend_flush.sh: does `backend_flush_after` change kafka_pg's acks=all
# acknowledgement tail once shared buffers are full?
#
# A server process that needs a buffer and finds only dirty ones writes one out itself (a "backend"
# write in pg_stat_bgwriter).  The background writer and the checkpointer follow their writes with
# a write-back request every bgwriter_flush_after / checkpoint_flush_after (512kB / 256kB by
# default); a backend only with backend_flush_after, 0 by default.  The listener's evicted pages then
# stay dirty in the page cache until the kernel writes them back, ~30 s later
# (vm.dirty_expire_centisecs) and all at once, and a WAL fdatasync issued meanwhile waits behind
# that burst (docs/performance.md, "The acknowledgement tail near saturation").
#
# Against kafka_pg at KP_BOOTSTRAP (default 127.0.0.1:9092) whose SQL port is KP_PGPORT (5432),
# e.g. the scripts/setup.sh cluster, as root: first an unmeasured acks=1 produce of 1 KiB records
# (kafka-producer-perf-test) larger than shared_buffers, so that from then on every produced page
# takes a buffer from the clock sweep rather than the free list, as on a broker that has been up a
# while; then per repetition two runs, interleaved: backend_flush_after 0 (PostgreSQL's default)
# and BENCH_BFA (256kB) set by ALTER SYSTEM and a reload, `sync`, then WireBench e2e: 1 KiB records
# at BENCH_RATE records/s, acks=all, linger.ms 0, 15 s unmeasured then BENCH_SECONDS measured, on a
# topic of 6 partitions.  Per run it prints the measured acknowledgements of 5 ms and of 50 ms or
# more, their p99 and max, the pages written by backends / the background writer / checkpoints
# meanwhile (pg_stat_bgwriter), and the most Dirty and Writeback memory /proc/meminfo showed
# (bench/tuning/hostsample.sh every 0.2 s).  Resets backend_flush_after at the end.  Asserts nothing.
#
#   bash bench/tuning/backend_flush.sh      # ~10 minutes with a 6 GB shared_buffers
#
# Settings: KP_BOOTSTRAP, KP_PGPORT, BENCH_REPS (3), BENCH_RATE (28000: about half of what this
# machine's kafka_pg saturates at for this producer), BENCH_SECONDS (40: longer than the 30 s a
# dirty page waits for write-back), BENCH_BFA (256kB), BENCH_MODES ("0 $BENCH_BFA": the order within a
# repetition), BENCH_FILL_MB (shared_buffers + 1024; 0: no fill, when the buffers are full already).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib.sh"
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
PGPORT_=${KP_PGPORT:-5432}
REPS=${BENCH_REPS:-3}
RATE=${BENCH_RATE:-28000}
SECS=${BENCH_SECONDS:-40}
BFA=${BENCH_BFA:-256kB}
WARM=15
K=$repo/test/clients/kafka/kafka.sh
work=$(mktemp -d)
psql_() { runuser -u postgres -- psql -p "$PGPORT_" -d postgres -XAtq -c "$1"; }
trap 'psql_ "ALTER SYSTEM RESET backend_flush_after" >/dev/null; psql_ "SELECT pg_reload_conf()" >/dev/null; rm -rf "$work"' EXIT
wb_build "$work" || exit 1
sb_mb=$(psql_ "SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'") ||
	{ echo "no PostgreSQL at port $PGPORT_" >&2; exit 1; }
FILL_MB=${BENCH_FILL_MB:-$((sb_mb + 1024))}
topic=bfa-bench-$$ fill=bfa-fill-$$
wb create "$KP_BOOTSTRAP" 6 "$topic" >/dev/null 2>&1 && wb create "$KP_BOOTSTRAP" 6 "$fill" >/dev/null 2>&1 ||
	{ echo "kafka_pg does not answer at $KP_BOOTSTRAP" >&2; exit 1; }
echo "shared_buffers ${sb_mb} MB; filling with $FILL_MB MB of 1 KiB records (acks=1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$FILL_MB" -gt 0 ] && "$K" cli kafka-producer-perf-test --topic "$fill" --num-records $((FILL_MB * 1024)) --record-size 1024 \
	--throughput -1 --producer-props bootstrap.servers="$KP_BOOTSTRAP" acks=1 enable.idempotence=false 2>&1 | tail -1
bgw() { psql_ "SELECT buffers_backend || ' ' || buffers_clean || ' ' || buffers_checkpoint || ' ' || checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"; }
for rep in $(seq 1 "$REPS"); do
	for mode in ${BENCH_MODES:-0 $BFA}; do
		psql_ "ALTER SYSTEM SET backend_flush_after = '$mode'" && psql_ "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		sync
		before=$(bgw)
		bash "$here/hostsample.sh" 0.2 >"$work/host.txt" &
		sampler=$!
		wb -Dwb.warmup_s=$WARM -Dwb.dump="$work/dump.txt" e2e "$KP_BOOTSTRAP" "$topic" 6 "$RATE" "$SECS" 1024 >"$work/e2e.out" 2>&1
		kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
		after=$(bgw)
		[ -s "$work/dump.txt" ] || { echo "rep $rep bfa=$mode: WireBench e2e failed: $(tail -3 "$work/e2e.out")"; continue; }
		python3 - "$work/dump.txt" "rep $rep backend_flush_after=$mode" $((RATE * WARM)) "$before" "$after" "$work/host.txt" <<'PY'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
acks = sorted(r[2] for r in rows[int(sys.argv[3]):] if r[2] >= 0)   # after the unmeasured ones
b, a = list(map(int, sys.argv[4].split())), list(map(int, sys.argv[5].split()))
d = [y - x for x, y in zip(b, a)]
host = [line.split() for line in open(sys.argv[6]) if len(line.split()) == 15]  # hostsample.sh's lines
md, mw = (max((int(h[i]) for h in host), default=0) // 1024 for i in (13, 14))  # Dirty, Writeback kB
print(f"{sys.argv[2]:>32}: acks >= 5 ms {sum(x >= 5_000_000 for x in acks):6d}, >= 50 ms {sum(x >= 50_000_000 for x in acks):5d} "
      f"of {len(acks)}; p99 {acks[int(len(acks) * 0.99)] / 1e6:6.1f} ms, max {acks[-1] / 1e6:6.1f} ms; "
      f"pages written: backend {d[0]}, bgwriter {d[1]}, checkpoint {d[2]} ({d[3]} checkpoints); "
      f"max Dirty {md} MB, Writeback {mw} MB")
PY
		rm -f "$work/dump.txt"
	done
done
wb delete "$KP_BOOTSTRAP" "$topic" >/dev/null 2>&1
wb delete "$KP_BOOTSTRAP" "$fill" >/dev/null 2>&1
