#!/usr/bin/env python3
"""bench/wire/e2e_seconds.py DUMP [SCRIPT]: a WireBench e2e run, second by second.

DUMP is what `WireBench e2e` writes with -Dwb.dump=FILE (bench/wire/bench.sh with
BENCH_E2E_DUMP=DIR): per record its index, send time (System.nanoTime, CLOCK_MONOTONIC on Linux)
and its send-to-acknowledgement and send-to-receive latencies in ns.  SCRIPT, if given, is the
text `perf script -F comm,pid,cpu,time,event,trace` prints of a system-wide
`perf record -k CLOCK_MONOTONIC -a -e sched:sched_switch` made during the run (-k: the same clock
as the dump, so the two line up).

Prints, per second since the first record was sent: how many records were acknowledged 5 ms or
more after they were sent, the slowest acknowledgement and the slowest end-to-end latency, and
with SCRIPT who had the two CPUs in that second, in % of one CPU: the JVM's C2 and C1 JIT
compiler threads (of the client: nothing else runs a JVM while kafka_pg is measured), PostgreSQL's
processes, idle, and everything else.  Then the p50/p99/max of the acknowledgement latency of the
records sent from each of a few starting seconds on, to show how much of a run's p99 is its
start.  Asserts nothing.
"""
import collections
import sys

from sched_split import EVENT, NEXT  # the same `perf script` lines, parsed the same way


def group(comm):
    if comm.startswith("C2 Compiler"):
        return "C2"
    if comm.startswith("C1 Compiler"):
        return "C1"
    if comm.startswith("postgres"):
        return "postgres"
    if comm.startswith("swapper"):
        return "idle"
    return "other"


def pct(v, q):
    return v[min(len(v) - 1, int(len(v) * q / 100))] / 1e6 if v else float("nan")


def main():
    rows = [tuple(map(int, line.split())) for line in open(sys.argv[1]) if line.strip()]
    t0 = rows[0][1]
    per = collections.defaultdict(lambda: [0, 0, 0])  # second -> slow acks, max ack, max e2e
    for _, sent, ack, e2e in rows:
        s = per[(sent - t0) // 1_000_000_000]
        s[0] += ack >= 5_000_000
        s[1] = max(s[1], ack)
        s[2] = max(s[2], e2e)
    cpu = collections.defaultdict(lambda: collections.defaultdict(float))
    if len(sys.argv) > 2:
        running, since = {}, {}
        base = t0 / 1e9
        for line in open(sys.argv[2]):
            m = EVENT.match(line)
            if not m or m.group(5) != "sched:sched_switch":
                continue
            c, t = m.group(3), float(m.group(4))
            if c in running and t >= base:
                cpu[int(t - base)][group(running[c])] += t - since[c]
            n = NEXT.search(m.group(6))
            running[c], since[c] = n.group(1), t
    last = max(per)
    for s in range(0, last + 1):
        slow, mack, me2e = per.get(s, [0, 0, 0])
        line = f"{s:3d} s: acks >= 5 ms {slow:6d}, max ack {mack / 1e6:7.1f} ms, max e2e {me2e / 1e6:7.1f} ms"
        if cpu:
            line += " | " + " ".join(f"{g} {100 * cpu[s].get(g, 0):3.0f}%"
                                     for g in ("C2", "C1", "postgres", "idle", "other"))
        print(line)
    for start in sorted({1, 3, 5, 10, 15, 20} & set(range(0, last))):
        acks = sorted(r[2] for r in rows if r[1] - t0 >= start * 1_000_000_000 and r[2] >= 0)
        print(f"acknowledgements of records sent from {start:2d} s on: p50 {pct(acks, 50):.1f} ms, "
              f"p99 {pct(acks, 99):.1f} ms, max {acks[-1] / 1e6 if acks else 0:.1f} ms ({len(acks)} records)")


if __name__ == "__main__":
    main()
