#!/usr/bin/python3
"""bench/builds/ab.py: two builds of kafka_pg side by side, on the store's append and read paths.

A change to the store is measured against the build before it in the same run, on the same
machine, alternating which goes first (a shared machine's noise falls on both).  Each build runs
on a cluster of its own (test/lib/pgcluster, shared_buffers 512MB, synchronous_commit off, so the
append path and not the WAL flush is timed); each round produces RECORDS records of VALUE_BYTES
bytes into one partition with kafka.produce (one statement) and reads them back with kafka.fetch;
then a librdkafka producer (confluent_kafka, linger.ms 5, acks=all) sends WIRE_RECORDS records of
that size over the wire to a topic of 4 partitions, and the CPU time the listener workers spent on it
(/proc/PID/stat) is taken: records per CPU second, which a shared machine's noise blurs less than
a throughput.  Round 0 is a warm-up and dropped; the medians of the others, their ranges, and the
ratio candidate/base are printed (above 1: the candidate is faster).

Usage: bench/builds/ab.py BASE_BINDIR CAND_BINDIR [ROUNDS [RECORDS [VALUE_BYTES [WIRE_RECORDS]]]]
  BINDIR: a PostgreSQL bin directory whose tree has that build installed, e.g. /usr/lib/postgresql/15/bin
  and, for the other, a copy of the tree (cp -a /usr/lib/postgresql/15 /usr/share/postgresql/15
  under /opt/pgr/X/usr/{lib,share}/postgresql/, then make install DESTDIR=/opt/pgr/X):
  /opt/pgr/X/usr/lib/postgresql/15/bin.  Defaults: 7 rounds, 100,000 records of 1,000 bytes,
  1,000,000 over the wire (the CPU time is counted in clock ticks of 10 ms: enough records that a
  round takes seconds of it).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
PGCLUSTER = os.path.join(HERE, "..", "..", "test", "lib", "pgcluster")


def pgcluster(bindir, *args, env=None):
    e = dict(os.environ, PG_BINDIR=bindir, **(env or {}))
    return subprocess.run([PGCLUSTER] + [str(a) for a in args], env=e, check=True,
                          capture_output=True, text=True).stdout.strip()


class Build:
    def __init__(self, name, bindir, port, kport):
        self.name, self.bindir = name, bindir
        self.root = tempfile.mkdtemp(prefix="kafka_pg_ab_%s." % name)
        os.chmod(self.root, 0o777)
        self.data = os.path.join(self.root, "data")
        self.port = int(pgcluster(bindir, "free-port", port))
        self.kport = int(pgcluster(bindir, "free-port", kport, self.port))
        pgcluster(bindir, "init", self.data, self.port, self.kport,
                  env={"KP_KAFKA_DB": "postgres",
                       "KP_EXTRA_CONF": "shared_buffers = 512MB\nsynchronous_commit = off"})
        pgcluster(bindir, "start", self.data)
        pgcluster(bindir, "create-extension", self.port, "postgres")
        self.conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres")
        self.conn.autocommit = True
        self.cur = self.conn.cursor()
        self.cur.execute("SELECT kafka.create_topic('b', 1)")
        self.cur.execute("SELECT kafka.create_topic('w', 4)")
        self.next_offset = 0
        self.produce, self.fetch, self.wire = [], [], []

    def listener_cpu(self):
        """The CPU seconds the listener workers used so far."""
        self.cur.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
        ticks = 0
        for (pid,) in self.cur.fetchall():
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")

    def wire_round(self, records, value_bytes):
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": "127.0.0.1:%d" % self.kport, "linger.ms": 5, "acks": "all"})
        value = b"x" * value_bytes
        before = self.listener_cpu()
        for i in range(records):
            while True:
                try:
                    p.produce("w", value, partition=i % 4)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(120)
        return records / max(self.listener_cpu() - before, 1e-3)

    def round(self, records, value_bytes):
        t = time.perf_counter()
        self.cur.execute("SELECT count(*) FROM (SELECT kafka.produce('b', NULL::bytea, v, partition => 0) "
                         "FROM (SELECT convert_to(repeat('x', %s), 'UTF8') AS v) c, generate_series(1, %s)) s",
                         (value_bytes, records))
        produced = time.perf_counter() - t
        # each SQL produce commits with a marker after its records: the next round starts past it
        t = time.perf_counter()
        self.cur.execute("SELECT count(*) FROM kafka.fetch('b', 0, %s, %s)", (self.next_offset, records))
        n = self.cur.fetchone()[0]
        fetched = time.perf_counter() - t
        if n != records:
            raise SystemExit("%s: fetched %d records of %d" % (self.name, n, records))
        self.cur.execute("SELECT log_end_offset FROM kafka.partition_status WHERE topic = 'b'")
        self.next_offset = self.cur.fetchone()[0]
        return records / produced, records / fetched

    def close(self):
        self.conn.close()
        pgcluster(self.bindir, "stop", self.data)
        shutil.rmtree(self.root, ignore_errors=True)


def summary(label, base, cand):
    mb, mc = statistics.median(base), statistics.median(cand)
    print("%-8s base %12.0f records/s (%.0f-%.0f)   candidate %12.0f records/s (%.0f-%.0f)   ratio %.3f"
          % (label, mb, min(base), max(base), mc, min(cand), max(cand), mc / mb))


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    records = int(sys.argv[4]) if len(sys.argv) > 4 else 100000
    value_bytes = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    wire_records = int(sys.argv[6]) if len(sys.argv) > 6 else 1000000
    builds = [Build("base", sys.argv[1], 58950, 49650)]
    builds.append(Build("cand", sys.argv[2], builds[0].port + 1, builds[0].kport + 1))
    try:
        for r in range(rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for b in order:
                p, f = b.round(records, value_bytes)
                w = b.wire_round(wire_records, value_bytes)
                if r > 0:
                    b.produce.append(p)
                    b.fetch.append(f)
                    b.wire.append(w)
                print("round %d %-4s produce %9.0f  fetch %10.0f  wire %10.0f" % (r, b.name, p, f, w), flush=True)
        print("%d rounds (the first a warm-up, dropped) of %d records of %d bytes; medians (ranges):"
              % (rounds, records, value_bytes))
        summary("produce", builds[0].produce, builds[1].produce)
        summary("fetch", builds[0].fetch, builds[1].fetch)
        summary("wire", builds[0].wire, builds[1].wire)
        print("(wire: %d records produced by librdkafka, acks=all, per CPU second of the listener workers)"
              % wire_records)
    finally:
        for b in builds:
            b.close()


if __name__ == "__main__":
    main()
