#!/usr/bin/env python3
"""Contention on a group's lock: N librdkafka consumers (confluent_kafka, classic protocol), each
on its own connection (so spread over the listener workers), join one new group on a topic of 2N
partitions; the script prints the time until every one has an assignment, then each commits its
partitions synchronously every 20 ms for 8 s, and prints the commit latencies (p50, p99, max) and
errors.  Every commit takes the group's lock, so commits from different workers contend for it.
Run it against two clusters (two builds) to compare them (docs/performance.md, "Consumer groups").

Usage: commit_latency.py BOOTSTRAP PGPORT N   (psql as postgres on 127.0.0.1:PGPORT creates the topic)
"""
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, TopicPartition


def main():
    boot, pgport, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    run = uuid.uuid4().hex[:6]
    topic, group = f"commitlat-{run}", f"commitlat-{run}"
    subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", pgport, "-U", "postgres", "-Atqc",
                    f"SELECT kafka.create_topic('{topic}', {2 * n})", "postgres"], check=True)
    assigned = [None] * n
    lat = [[] for _ in range(n)]
    errors = [0] * n
    start = time.time()

    def consumer(i):
        c = Consumer({"bootstrap.servers": boot, "group.id": group, "session.timeout.ms": 10000,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})

        def on_assign(_, parts):
            if parts and assigned[i] is None:
                assigned[i] = time.time() - start
        c.subscribe([topic], on_assign=on_assign)
        deadline = time.time() + 60
        while not all(a is not None for a in assigned) and time.time() < deadline:
            c.poll(0.1)
        until = time.time() + 8
        while time.time() < until:
            c.poll(0)
            parts = c.assignment()
            if parts:
                t = time.time()
                try:
                    c.commit(offsets=[TopicPartition(topic, p.partition, 0) for p in parts],
                             asynchronous=False)
                    lat[i].append((time.time() - t) * 1000)
                except Exception:
                    errors[i] += 1
            time.sleep(0.02)
        c.close()

    threads = [threading.Thread(target=consumer, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    all_lat = sorted(x for one in lat for x in one)
    if not all_lat or any(a is None for a in assigned):
        print(f"failed: assigned {assigned}, {len(all_lat)} commits, errors {sum(errors)}")
        sys.exit(1)

    def q(p):
        return all_lat[min(len(all_lat) - 1, int(p * len(all_lat)))]
    print(f"{n} consumers: all assigned after {max(assigned):.2f} s; {len(all_lat)} commits, "
          f"p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {all_lat[-1]:.1f} ms; errors {sum(errors)}")


if __name__ == "__main__":
    main()
