#!/usr/bin/env python3
"""bench/tuning/sched_slice.py NS PID...: set the scheduler time slice the kernel gives PIDs.

Linux 6.12 and later (EEVDF) take a per-task slice for normal (SCHED_OTHER) tasks from
sched_setattr's sched_runtime: a task with a shorter slice gets an earlier deadline, so when it
wakes it runs sooner, before tasks with the default slice (about 0.75 ms x (1 + log2 CPUs)).  NS
is the slice in nanoseconds (the kernel keeps it within 0.1-100 ms); 0 gives the default back.
The policy stays SCHED_OTHER and the nice value 0 (as the listener workers run).  Used by
bench/wire/acks_all_bound.sh's "slice" variant: does a listener worker wait for a CPU after its
fdatasync returns, and does the producer go faster when it does not?  Prints the slice each pid
then has (/proc/PID/sched); exits 1 if a call fails.  Changes no setting of kafka_pg.
"""
import ctypes
import struct
import sys

SYS_SCHED_SETATTR = 314     # x86_64
SCHED_OTHER = 0


def set_slice(pid, ns):
    libc = ctypes.CDLL(None, use_errno=True)
    # struct sched_attr, first version (48 bytes): size, policy, flags, nice, priority,
    # runtime, deadline, period
    attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQ", 48, SCHED_OTHER, 0, 0, 0, ns, 0, 0))
    if libc.syscall(SYS_SCHED_SETATTR, pid, attr, 0) != 0:
        raise OSError(ctypes.get_errno(), f"sched_setattr({pid})")


def main():
    ns, ok = int(sys.argv[1]), True
    for pid in (int(p) for p in sys.argv[2:]):
        try:
            set_slice(pid, ns)
            with open(f"/proc/{pid}/sched") as f:
                slice_ns = next((line.split()[-1] for line in f if line.startswith("se.slice")), "?")
            print(f"pid {pid}: slice {slice_ns} ns")
        except OSError as e:
            print(f"pid {pid}: {e}", file=sys.stderr)
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
