#!/usr/bin/env python3
"""bench/tuning/schedsample.py [INTERVAL]: every thread's CPU time and run-queue wait, until killed.

Every INTERVAL seconds (0.1) reads /proc/PID/task/TID/schedstat of every thread of the PostgreSQL
and Java processes on the machine, and of the kernel's memory threads (kdamond, the DAMON monitor
some virtual machines run; kswapd), and prints one line per thread:

    TIME PID TID ON_CPU_NS RUNQUEUE_WAIT_NS NAME

TIME is CLOCK_MONOTONIC in seconds (the clock of a WireBench dump's send times and of the JVM's
`-Xlog` decorator `timenanos`).  ON_CPU_NS and RUNQUEUE_WAIT_NS are the kernel's cumulative
figures (schedstat's first two fields): time spent running, and time spent runnable but waiting
for a CPU.  NAME is a PostgreSQL process's title (`postgres: kafka_pg listener 0`, `postgres:
walwriter`, ...), `java:` and the thread's name (`java:kafka-producer-network-thread`), or
`kernel:` and the kernel thread's name (`kernel:kdamond.0`).  bench/tuning/e2e_sched.py lines
this up with a WireBench e2e dump, second by second.  A sample costs 10-15 ms of CPU (5-8% of a
CPU at 0.2 s); it asserts nothing.

    python3 bench/tuning/schedsample.py > SCHED & BENCH_E2E_DUMP=DIR bash bench/wire/bench.sh; kill %1
"""
import os
import sys
import time

names = {}


def title(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")
        if cmd == [b""]:  # a kernel thread: the memory ones that take a CPU from the others
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            return "kernel:" + comm if comm.startswith(("kdamond", "kswapd")) else None
    except OSError:
        return None
    exe = os.path.basename(cmd[0].decode(errors="replace").split(" ")[0]) if cmd and cmd[0] else ""
    if exe == "java":
        return "java"
    if cmd[0].startswith(b"postgres:") or exe in ("postgres", "postmaster"):
        return cmd[0].decode(errors="replace").strip()
    return None


def name(pid, tid):
    t = names[(pid, None)]
    if t == "java":  # read each time: a Java thread names itself after it starts
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                t = "java:" + f.read().strip()
        except OSError:
            t = None
    return t


def main():
    interval = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
    out = sys.stdout
    while True:
        now = time.clock_gettime(time.CLOCK_MONOTONIC)
        lines = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            if (pid, None) not in names:  # only found ones are kept: a forked child may exec java later
                t = title(pid)
                if t is None:
                    continue
                names[(pid, None)] = t
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                n = name(pid, tid)
                if n is None:
                    continue
                try:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        run, wait, _ = f.read().split()
                except (OSError, ValueError):
                    continue
                lines.append(f"{now:.4f} {pid} {tid} {run} {wait} {n}\n")
        out.write("".join(lines))
        out.flush()
        time.sleep(interval)


if __name__ == "__main__":
    main()
