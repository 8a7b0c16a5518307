#!/usr/bin/python3
"""bench/builds/extend.py: what extending a file 1 MB at a time costs, by ftruncate (holes) and by
posix_fallocate (allocated blocks), the two ways src/store/segment.c's preextend has done it, then
writing its 128 pages of 8 kB and fsync: the system calls alone, on the file system of DIR.

Usage: bench/builds/extend.py [DIR [MEGABYTES [ROUNDS]]]   (defaults: /var/tmp, 300, 3)
"""
import os
import sys
import time


def run(directory, mode, megabytes):
    path = os.path.join(directory, "kafka_pg_extend_bench")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    size, extend, write = 0, 0.0, 0.0
    page = b"x" * 8192
    try:
        for _ in range(megabytes):
            t = time.perf_counter()
            if mode == "fallocate":
                os.posix_fallocate(fd, size, 1 << 20)
            else:
                os.ftruncate(fd, size + (1 << 20))
            extend += time.perf_counter() - t
            t = time.perf_counter()
            for b in range(128):
                os.pwrite(fd, page, size + b * 8192)
            write += time.perf_counter() - t
            size += 1 << 20
        t = time.perf_counter()
        os.fsync(fd)
        sync = time.perf_counter() - t
    finally:
        os.close(fd)
        os.unlink(path)
    return extend / megabytes * 1e6, write / megabytes * 1e6, sync * 1e3


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp"
    megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for _ in range(rounds):
        for mode in ("ftruncate", "fallocate"):
            e, w, s = run(directory, mode, megabytes)
            print("%-9s extend %6.1f us/MB   write its 128 pages %7.1f us/MB   fsync %d MB %7.1f ms"
                  % (mode, e, w, megabytes, s))


if __name__ == "__main__":
    main()
