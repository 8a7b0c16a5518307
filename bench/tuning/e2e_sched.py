#!/usr/bin/env python3
"""bench/tuning/e2e_sched.py DUMP SCHED [GCLOG...]: a WireBench e2e dump second by second, beside
what each process and thread did with the CPUs.

DUMP is what `WireBench e2e -Dwb.dump=FILE` writes (per record: index, send time on
CLOCK_MONOTONIC, send-to-acknowledgement and send-to-receive in ns).  SCHED is
bench/tuning/schedsample.py's output during the run.  GCLOG, optional, are the client JVMs' logs
written with `-Xlog:gc:file=F:timenanos` (bench/lib.sh's wb passes WB_JAVA_OPTS to the JVM); the
pauses are counted in the second their line was logged (when the pause ended).

Prints per second since the first record was sent: the acknowledgements of 5 ms or more and the
slowest; then, in ms of that second, the CPU time and the run-queue wait (runnable, no CPU) of:
the kafka_pg listener workers together (L), the other PostgreSQL processes together (PG, and the
busiest of them), the client JVM's sending thread (main), its producer I/O thread (io), its other
application threads (app: the consumer's reader), its garbage collector threads (gc), its JIT
compilers (jit), any other JVM on the machine (Apache Kafka's broker beside it, jvm), the
kernel's memory threads (kern: kdamond, kswapd), and the client's GC pauses that ended in the
second (count, longest ms).  Asserts nothing.
"""
import bisect
import collections
import re
import sys


def group(name, client):
    if name.startswith("kernel:"):
        return "kern"
    if name.startswith("java:"):
        if not client:
            return "jvm"
        t = name[5:]
        if t == "java":
            return "main"
        if t.startswith("kafka-producer"):
            return "io"
        if t.startswith(("GC Thread", "G1 ")):
            return "gc"
        if t.startswith(("C1 Compiler", "C2 Compiler")):
            return "jit"
        if t.startswith("Thread-"):
            return "app"
        return "jvmo"
    return "L" if "kafka_pg listener" in name else "PG"


def main():
    rows = [tuple(map(int, line.split())) for line in open(sys.argv[1]) if line.strip()]
    t0 = rows[0][1] / 1e9
    t1 = max(r[1] for r in rows) / 1e9 + 5
    per = collections.defaultdict(lambda: [0, 0])
    for _, sent, ack, _e2e in rows:
        s = per[int(sent / 1e9 - t0)]
        s[0] += ack >= 5_000_000
        s[1] = max(s[1], ack)

    # samples in and around the run: per time, per thread (pid, tid, name): run, wait
    samples = collections.OrderedDict()
    producer_pids = collections.Counter()
    for line in open(sys.argv[2]):
        f = line.rstrip("\n").split(" ", 5)
        if len(f) != 6:
            continue
        t = float(f[0])
        if t < t0 - 2 or t > t1:
            continue
        samples.setdefault(t, {})[(f[1], f[2])] = (int(f[3]), int(f[4]), f[5])
        if f[5].startswith("java:kafka-producer"):
            producer_pids[f[1]] += 1
    client = producer_pids.most_common(1)[0][0] if producer_pids else None
    times = list(samples)

    gc = collections.defaultdict(list)
    for path in sys.argv[3:]:
        for line in open(path):
            m = re.match(r"\[(\d+)ns\].*Pause.* ([0-9.]+)ms$", line.strip())
            if m:
                gc[int(int(m.group(1)) / 1e9 - t0)].append(float(m.group(2)))

    def at(t):  # the last sample at or before t
        i = bisect.bisect_right(times, t) - 1
        return times[i] if i >= 0 else None

    order = ["L", "PG", "main", "io", "app", "gc", "jit", "jvm", "kern"]
    print("sec: acks>=5ms max_ms | " + " | ".join(f"{g} cpu/wait" for g in order) + " | busiest PG | gc pauses")
    for sec in range(0, max(per) + 1):
        a, b = at(t0 + sec), at(t0 + sec + 1)
        if a is None or b is None or a == b:
            continue
        scale = 1.0 / (b - a)  # per second
        cpu = collections.Counter()
        wait = collections.Counter()
        pg = collections.Counter()
        for key, (run1, wait1, name) in samples[b].items():
            run0, wait0, _ = samples[a].get(key, (0, 0, name))  # a thread born in the second: all of it
            g = group(name, key[0] == client)
            cpu[g] += (run1 - run0) / 1e6 * scale
            wait[g] += (wait1 - wait0) / 1e6 * scale
            if g == "PG":
                pg[name.replace("postgres: ", "")] += (run1 - run0) / 1e6 * scale
        top = pg.most_common(1)[0] if pg else ("-", 0)
        slow, slowest = per[sec]
        pauses = gc.get(sec, [])
        print(f"{sec:3d}: {slow:6d} {slowest / 1e6:6.1f} | "
              + " | ".join(f"{cpu[g]:4.0f}/{wait[g]:4.0f}" for g in order)
              + f" | {top[0][:22]} {top[1]:.0f} | {len(pauses)} {max(pauses, default=0):.1f}")


if __name__ == "__main__":
    main()
