#!/usr/bin/env python3
"""bench/wire/produce_split.py SCHED BROKER RECORDS: where the CPU of one kafka-producer-perf-test run went.

SCHED is bench/tuning/schedsample.py's output over the run; BROKER is the Kafka broker's JVM pid,
or "pg" for kafka_pg (every PostgreSQL process is the broker then); RECORDS the records the run
sent.  The client is the Java process with a producer network thread (comm "kafka-producer-"),
and the window is that thread's life, which is the producer's: from its creation to its close,
about what the perf test times.  Each thread's cumulative run time and run-queue wait
(schedstat) are read at the window's ends (interpolated between samples; a thread born inside the
window counts from zero), and summed by role:

    client   the perf test's JVM: jit (C1 and C2 compiler threads), app (the thread that calls
             send(): the JVM's "java" threads), net (the producer's network thread), gc (G1's
             threads) and the rest
    broker   the Kafka JVM, or every PostgreSQL process (listener workers, WAL writer, ...)
    other    any other Java process or sampled kernel thread

Prints one line of key=value: window_s, then each role's cores (CPU seconds per second of the
window) and CPU microseconds per record.  Asserts nothing.
"""
import bisect
import collections
import sys


def main():
    path, broker, records = sys.argv[1], sys.argv[2], int(sys.argv[3])
    series = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            p = line.split(None, 5)
            if len(p) < 6:
                continue
            series[(p[1], p[2], p[5].strip())].append((float(p[0]), int(p[3]), int(p[4])))
    net = [k for k in series if k[2].startswith("java:kafka-producer-") and k[0] != broker]
    if not net:
        print("window_s=0 error=no-producer-thread-sampled")
        return
    t0 = min(series[k][0][0] for k in net)
    t1 = max(series[k][-1][0] for k in net)
    client = net[0][0]
    wall = t1 - t0
    if wall <= 0:
        print("window_s=0 error=window-too-short")
        return

    def at(s, t):
        ts = [x[0] for x in s]
        j = bisect.bisect_left(ts, t)
        if j == 0:
            return 0 if t < ts[0] else s[0][1]
        if j >= len(s):
            return s[-1][1]
        a, b = s[j - 1], s[j]
        return a[1] + (b[1] - a[1]) * (t - a[0]) / (b[0] - a[0])

    ns = collections.Counter()
    for (pid, _tid, name), s in series.items():
        if pid == client:
            thread = name[len("java:"):]
            if thread.startswith(("C1 Compiler", "C2 Compiler")):
                role = "jit"
            elif thread == "java":
                role = "app"
            elif thread.startswith("kafka-producer-"):
                role = "net"
            elif thread.startswith(("GC Thread", "G1 ")):
                role = "gc"
            else:
                role = "client_rest"
            roles = ("client", role)
        elif pid == broker or (broker == "pg" and not name.startswith(("java:", "kernel:"))):
            roles = ("broker",)
        else:
            roles = ("other",)
        d = at(s, t1) - at(s, t0)
        for r in roles:
            ns[r] += d
    out = [f"window_s={wall:.3f}"]
    for r in ("client", "jit", "app", "net", "gc", "client_rest", "broker", "other"):
        out.append(f"{r}_cores={ns[r] / 1e9 / wall:.3f}")
        out.append(f"{r}_us={ns[r] / 1e3 / records:.3f}")
    print(" ".join(out))


if __name__ == "__main__":
    main()
