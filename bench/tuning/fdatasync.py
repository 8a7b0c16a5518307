#!/usr/bin/env python3
"""bench/tuning/fdatasync.py [DIR [SIZE SECONDS [GAP_MS]]]: a WAL-like write + fdatasync on DIR's file system.

For each write size (8 KB, 64 KB, 160 KB, 512 KB), appends that many bytes to a 16 MB file and
calls fdatasync, 200 times or until the file is full (102 times at 160 KB), once on a sparse file
(as PostgreSQL creates a WAL segment with wal_init_zero = off) and once on a preallocated one
(wal_init_zero = on, or a recycled segment), and prints the median, 90th percentile and mean of
the fdatasync calls in ms: the baseline for the durations of the listener workers' fdatasync
calls that bench/wire/acks_all_bound.sh traces (docs/performance.md, "What bounds acks=all at
16 KB batches").  pg_test_fsync measures 8 kB writes and prints a mean rate; this measures the
flush sizes a listener makes and their distribution.  With SIZE and SECONDS: appends SIZE bytes
and calls fdatasync in a loop for SECONDS (a new sparse 16 MB file each time one is full) and
prints one line, "calls median p90 mean" (ms), for acks_all_bound.sh to run beside a broker under
load; with GAP_MS it sleeps that long after each call (a listener worker flushes every 4-5 ms, not
back to back).  DIR defaults to /tmp; the files are removed.  Asserts nothing.
"""
import os
import statistics
import sys
import time

SEGMENT = 16 << 20


def segment(path, preallocated):
    """A 16 MB file as PostgreSQL makes a WAL segment: sparse, or written full of zeros."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
    if preallocated:
        os.write(fd, b"\0" * SEGMENT)
    else:
        os.pwrite(fd, b"\0", SEGMENT - 1)
    os.fsync(fd)
    return fd


def write_and_sync(fd, buf, off, took):
    """Write buf at off, then fdatasync; its duration (ms) goes to took."""
    os.pwrite(fd, buf, off)
    t = time.perf_counter()
    os.fdatasync(fd)
    took.append((time.perf_counter() - t) * 1000)


def stats(took):
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.9)], statistics.mean(took)


def run(directory, size, preallocated, calls=None, seconds=None, gap=0.0):
    """Append size bytes and fdatasync, calls times in one segment or for seconds (a new sparse
    segment each time one is full, as PostgreSQL starts a new WAL file); the durations in ms."""
    path = os.path.join(directory, f"kp_fdatasync_{os.getpid()}_{size}")
    fd = segment(path, preallocated)
    took = []
    try:
        buf = os.urandom(size)
        off = 0
        end = time.monotonic() + (seconds or 0)
        while (len(took) < calls) if calls else (time.monotonic() < end):
            if off + size > SEGMENT:
                os.close(fd)
                fd = segment(path, False)
                off = 0
            write_and_sync(fd, buf, off, took)
            off += size
            if gap:
                time.sleep(gap)
    finally:
        os.close(fd)
        os.unlink(path)
    return took


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    if len(sys.argv) > 3:
        gap = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 0.0
        took = run(directory, int(sys.argv[2]), False, seconds=float(sys.argv[3]), gap=gap)
        print(len(took), " ".join(f"{x:.2f}" for x in stats(took)))
        return
    for size in (8192, 65536, 163840, 524288):
        for preallocated in (False, True):
            med, p90, mean = stats(run(directory, size, preallocated, calls=min(200, SEGMENT // size)))
            kind = "preallocated" if preallocated else "sparse"
            print(f"{size // 1024:4d} KB {kind:12s}: fdatasync median {med:.2f} ms, p90 {p90:.2f}, mean {mean:.2f}")


if __name__ == "__main__":
    main()
