#!/usr/bin/env python3
"""bench/wire/sched_split.py SCRIPT PIDS RECORDS: where a listener worker's fdatasync time goes.

SCRIPT is the text `perf script` prints of a system-wide `perf record -a -e sched:sched_switch -e
sched:sched_wakeup -e syscalls:sys_enter_fdatasync -e syscalls:sys_exit_fdatasync` (as
bench/wire/acks_all_bound.sh records it), PIDS the listener workers' pids (comma-separated) and
RECORDS how many records the producer sent meanwhile.  Each fdatasync call of those pids, from
its entry to its exit, is split by the scheduler events in between into the time the worker was
on a CPU, asleep (waiting for the I/O, or a lock) and runnable but waiting for a CPU (woken, or
preempted, and not yet running again).

Prints one line for acks_all_bound.sh's table,

    calls_per_1k_records median p90 mean runnable_median runnable_mean asleep_median asleep_mean

(durations in ms; "0 - - - - - - -" without a call), then, for its log, the same split as
median / p90 / mean and who had the CPUs over the recording: the listener workers, the rest of
PostgreSQL, the JVM's JIT compiler threads (C1/C2, of the client: nothing else here runs a JVM
while kafka_pg is measured), the other tasks, and idle, each in % of one CPU.  Asserts nothing.
"""
import collections
import re
import statistics
import sys

EVENT = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$")
PREV = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+)")
NEXT = re.compile(r"next_comm=(.*?) next_pid=(\d+)")
WOKEN = re.compile(r"(?:^| )pid=(\d+)")


def stats(v):
    v = sorted(v)
    return statistics.median(v), v[min(len(v) - 1, int(len(v) * 0.9))], statistics.mean(v)


def main():
    path, pids, records = sys.argv[1], {int(p) for p in sys.argv[2].split(",") if p}, int(sys.argv[3])
    state = {}      # pid -> (what it is doing: cpu / asleep / runnable, since when, ms)
    calls = {}      # pid -> the fdatasync in progress: its start and time per state
    done = []       # (total, cpu, asleep, runnable) per call
    running = {}    # cpu -> (category, since)
    share = collections.Counter()
    first = last = None

    def move(pid, t, to):
        was = state.get(pid)
        if pid in calls and was:
            calls[pid][was[0]] += t - was[1]
        state[pid] = (to, t)

    def category(comm, pid):
        if pid in pids:
            return "listener workers"
        if pid == 0 or comm.startswith("swapper"):
            return "idle"
        if comm == "postgres":
            return "other PostgreSQL processes"
        if comm.startswith(("C1 CompilerThre", "C2 CompilerThre")):
            return "JVM JIT compiler threads (the client's)"
        return "other tasks (the client's other threads, perf, the kernel)"

    with open(path, errors="replace") as f:
        for line in f:
            m = EVENT.match(line)
            if not m:
                continue
            _, pid, cpu, t, name, rest = m.groups()
            pid, cpu, t = int(pid), int(cpu), float(t) * 1000
            first = t if first is None else first
            last = t
            if name == "sched:sched_switch":
                p, n = PREV.search(rest), NEXT.search(rest)
                if not p or not n:
                    continue
                prev, nxt = int(p.group(2)), int(n.group(2))
                if prev in pids:
                    move(prev, t, "runnable" if p.group(3).startswith("R") else "asleep")
                if nxt in pids:
                    move(nxt, t, "cpu")
                if cpu in running:
                    share[running[cpu][0]] += t - running[cpu][1]
                running[cpu] = (category(n.group(1), nxt), t)
            elif name == "sched:sched_wakeup":
                w = WOKEN.search(rest)
                if w and int(w.group(1)) in pids:
                    move(int(w.group(1)), t, "runnable")
            elif name == "syscalls:sys_enter_fdatasync" and pid in pids:
                state[pid] = ("cpu", t)
                calls[pid] = {"start": t, "cpu": 0.0, "asleep": 0.0, "runnable": 0.0}
            elif name == "syscalls:sys_exit_fdatasync" and pid in calls:
                move(pid, t, "cpu")
                c = calls.pop(pid)
                done.append((t - c["start"], c["cpu"], c["asleep"], c["runnable"]))
    if not done:
        print("0 - - - - - - -")
    else:
        med, p90, mean = stats([d[0] for d in done])
        rq, sl = stats([d[3] for d in done]), stats([d[2] for d in done])
        print(f"{len(done) * 1000 / records:.2f} {med:.2f} {p90:.2f} {mean:.2f} "
              f"{rq[0]:.2f} {rq[2]:.2f} {sl[0]:.2f} {sl[2]:.2f}")
        for i, what in enumerate(("the whole call", "on a CPU", "asleep (the I/O, a lock)",
                                  "runnable, waiting for a CPU")):
            print("  fdatasync, %-28s median %.2f p90 %.2f mean %.2f ms" % ((what,) + stats([d[i] for d in done])))
    span = (last - first) if first is not None and last > first else 0
    if span:
        for what, ms in share.most_common():
            print("  CPU over %.1f s: %-58s %5.1f%% of one CPU" % (span / 1000, what, 100 * ms / span))


if __name__ == "__main__":
    main()
