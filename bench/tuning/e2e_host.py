#!/usr/bin/env python3
"""bench/tuning/e2e_host.py DUMP SAMPLES: a WireBench e2e dump second by second, beside the host.

DUMP is what `WireBench e2e -Dwb.dump=FILE` writes (bench/wire/bench.sh with BENCH_E2E_DUMP): per
record its index, send time (System.nanoTime), send-to-acknowledgement and send-to-receive in ns.
SAMPLES is bench/tuning/hostsample.sh's output during the run, on the same clock.  Prints per
second since the first record was sent: the acknowledgements of 5 ms or more and the slowest, then
what the host did in that second: CPU in % of one CPU (user, system, idle, iowait, softirq; the
machine's CPUs together), pages scanned for reclaim by kswapd and directly, direct-reclaim stalls,
and at the second's end free memory, page cache, Dirty and Writeback.  Asserts nothing.
"""
import bisect
import collections
import os
import sys


def main():
    rows = [tuple(map(int, line.split())) for line in open(sys.argv[1]) if line.strip()]
    t0 = rows[0][1] / 1e9
    per = collections.defaultdict(lambda: [0, 0])
    for _, sent, ack, _e2e in rows:
        s = per[int(sent / 1e9 - t0)]
        s[0] += ack >= 5_000_000
        s[1] = max(s[1], ack)
    samples = [list(map(float, line.split())) for line in open(sys.argv[2]) if len(line.split()) == 15]
    times = [r[0] for r in samples]
    ncpu = os.cpu_count() or 1

    def at(t):  # the last sample at or before t
        i = bisect.bisect_right(times, t) - 1
        return samples[i] if i >= 0 else None

    for sec in range(0, max(per) + 1):
        a, b = at(t0 + sec), at(t0 + sec + 1)
        if not a or a is b:
            continue
        d = [y - x for x, y in zip(a[1:8], b[1:8])]
        tot = sum(d) or 1
        user, nice, system, idle, iowait, irq, soft = (100 * ncpu * x / tot for x in d)
        slow, slowest = per[sec]
        print(f"{sec:3d} s: acks >= 5 ms {slow:6d}, max {slowest / 1e6:6.1f} ms | user {user + nice:4.0f}% "
              f"sys {system + irq:4.0f}% idle {idle:4.0f}% iowait {iowait:4.0f}% softirq {soft:3.0f}% | "
              f"scanned kswapd {b[8] - a[8]:7.0f} direct {b[9] - a[9]:6.0f}, stalls {b[10] - a[10]:3.0f} | "
              f"free {b[11] / 1e6:5.1f} GB, cached {b[12] / 1e6:5.1f} GB, dirty {b[13] / 1e3:6.1f} MB, "
              f"writeback {b[14] / 1e3:5.1f} MB")


if __name__ == "__main__":
    main()
