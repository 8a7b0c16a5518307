#!/usr/bin/env python3
"""Records produced by COPY into a topic's foreign table (kafka_pg_fdw, issue 13) read by Kafka
clients over the wire, byte for byte.

- COPY ... FROM STDIN in text and in binary format, and INSERT ... SELECT, into a foreign table
  of a 3-partition topic (keys, null keys, null values, headers, explicit partitions) in one
  transaction, and kafka.produce_agg over a table in another;
- kafka-python (the Java client's protocol in Python) reads every record: same keys, values and
  headers, in the order they were sent within each partition, keyed ones on the partition its
  murmur2 partitioner (the Java client's default) picks;
- a COPY that is rolled back is never seen by a read_committed consumer (librdkafka), and the
  records committed after it are.

Usage: PGDATABASE=... bulk_copy.py HOST:PORT.  Last line: "N passed, M failed".
"""
import io
import os
import struct
import sys
import time
import uuid

import psycopg2
from confluent_kafka import Consumer, TopicPartition as CTopicPartition
from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402

BOOTSTRAP = sys.argv[1]
PARTS = 3


def sql():
    c = psycopg2.connect("")    # PGHOST, PGPORT, PGUSER, PGDATABASE
    return c


def java_partition(key):
    return (murmur2(key) & 0x7fffffff) % PARTS


def binary_copy(rows):
    """PGCOPY binary stream of (key bytea|None, value bytea|None, partition int|None)."""
    out = io.BytesIO()
    out.write(b"PGCOPY\n\xff\r\n\0" + struct.pack(">ii", 0, 0))
    for key, value, partition in rows:
        out.write(struct.pack(">h", 3))
        for f in (key, value):
            if f is None:
                out.write(struct.pack(">i", -1))
            else:
                out.write(struct.pack(">i", len(f)) + f)
        if partition is None:
            out.write(struct.pack(">i", -1))
        else:
            out.write(struct.pack(">ii", 4, partition))
    out.write(struct.pack(">h", -1))
    out.seek(0)
    return out


# A COMMIT marker's record (key: version 0, type 1; value: version 0, coordinator epoch 0).
# kafka-python 2.0.2 (Debian's) hands the records of control batches to the application as if
# they were data (its fetcher never looks at the control bit; 2.1 skips them), so the markers
# the SQL transactions end with show up here: they are dropped by their exact form, which no
# record this test produces has.
COMMIT_MARKER = (b"\x00\x00\x00\x01", b"\x00" * 6)


def read_kafka_python(topic, n, timeout=60):
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False,
                      consumer_timeout_ms=2000)
    tps = [TopicPartition(topic, p) for p in range(PARTS)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    out = []
    t0 = time.time()
    while len(out) < n and time.time() - t0 < timeout:
        for m in c.poll(timeout_ms=500).values():
            out.extend(r for r in m if (r.key, r.value) != COMMIT_MARKER)
    c.close()
    return out


def read_committed(topic, n, timeout=60):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "bulk-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.assign([CTopicPartition(topic, p, 0) for p in range(PARTS)])
    out = []
    t0 = time.time()
    while len(out) < n and time.time() - t0 < timeout:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append(m)
    # a little longer: nothing more may come
    t1 = time.time()
    while time.time() - t1 < 2:
        m = c.poll(0.2)
        if m is not None and not m.error():
            out.append(m)
    c.close()
    return out


def main():
    suffix = uuid.uuid4().hex[:8]
    topic = f"bulk-wire-{suffix}"
    table = f"bulk_wire_{suffix}"
    conn = sql()
    cur = conn.cursor()
    cur.execute("SELECT kafka.create_topic(%s, %s)", (topic, PARTS))
    cur.execute(f'CREATE FOREIGN TABLE {table} (key bytea, value bytea, partition integer, '
                f'headers kafka.header[]) SERVER kafka_pg OPTIONS (topic %s)', (topic,))
    conn.commit()

    # what each partition must hold, in order
    expected = {p: [] for p in range(PARTS)}

    explicit = set()    # (key, value) of the records sent with a partition

    def expect(key, value, partition=None, headers=()):
        if partition is not None:
            explicit.add((key, value))
        p = partition if partition is not None else (java_partition(key) if key is not None else None)
        expected.setdefault(p, []).append((key, value, list(headers)))

    # 1. text COPY: keys, a null value, headers, explicit partitions
    text = io.StringIO()
    for i in range(2000):
        key = f"key-{i % 97}".encode()
        value = f"text-{i}".encode()
        if i % 250 == 0:
            text.write(f"{key.decode()}\t\\N\t\\N\t{{\"(trace,t{i})\"}}\n")
            expect(key, None, headers=[("trace", f"t{i}".encode())])
        elif i % 101 == 0:
            text.write(f"{key.decode()}\t{value.decode()}\t{i % PARTS}\t\\N\n")
            expect(key, value, partition=i % PARTS)
        else:
            text.write(f"{key.decode()}\t{value.decode()}\t\\N\t\\N\n")
            expect(key, value)
    text.seek(0)
    cur.copy_expert(f"COPY {table} (key, value, partition, headers) FROM STDIN", text)
    # 2. binary COPY: any bytes, empty values, explicit partitions
    rows = []
    for i in range(3000):
        key = bytes([i % 256, 0, 255, (i * 7) % 256])
        value = bytes((i + j) % 256 for j in range(i % 300))
        part = 2 if i % 10 == 0 else None
        rows.append((key, value, part))
        expect(key, value, partition=part)
    cur.copy_expert(f"COPY {table} (key, value, partition) FROM STDIN (FORMAT binary)",
                    binary_copy(rows))
    # 3. INSERT ... SELECT
    cur.execute(f"INSERT INTO {table} (key, value) SELECT convert_to('ins-' || g, 'UTF8'), "
                f"convert_to('insert-' || g, 'UTF8') FROM generate_series(1, 500) g")
    for g in range(1, 501):
        expect(f"ins-{g}".encode(), f"insert-{g}".encode())
    conn.commit()
    # 4. kafka.produce_agg over a table, in its own transaction
    cur.execute("CREATE TEMP TABLE bulk_wire_src AS SELECT g, convert_to('agg-' || g, 'UTF8') AS k, "
                "convert_to('aggregated-' || g, 'UTF8') AS v FROM generate_series(1, 1500) g")
    cur.execute("SELECT kafka.produce_agg(%s, k, v) FROM (SELECT * FROM bulk_wire_src ORDER BY g) s",
                (topic,))
    check("produce_agg returns the records it produced", cur.fetchone()[0] == 1500)
    for g in range(1, 1501):
        expect(f"agg-{g}".encode(), f"aggregated-{g}".encode())
    conn.commit()
    total = sum(len(v) for v in expected.values())

    got = read_kafka_python(topic, total)
    check("kafka-python reads every record COPY, INSERT and produce_agg produced",
          len(got) == total, f"({len(got)} of {total})")
    by_part = {p: [] for p in range(PARTS)}
    for m in sorted(got, key=lambda m: (m.partition, m.offset)):
        by_part[m.partition].append((m.key, m.value, [(k, v) for k, v in (m.headers or [])]))
    for p in range(PARTS):
        first = next((i for i, (a, b) in enumerate(zip(by_part[p], expected[p])) if a != b), None)
        check(f"partition {p}: keys, values and headers in the order sent",
              by_part[p] == expected[p],
              f"({len(by_part[p])} vs {len(expected[p])} records; first difference at {first}: "
              f"{by_part[p][first] if first is not None else None} vs "
              f"{expected[p][first] if first is not None else None})")
    bad = [m for m in got
           if m.key is not None and (m.key, m.value) not in explicit
           and m.partition != java_partition(m.key)]
    check("keyed records without an explicit partition are where murmur2 puts them", not bad,
          f"({len(bad)} elsewhere, e.g. {[(m.partition, m.key, m.value) for m in bad[:3]]})")
    ts_ok = all(m.timestamp > 0 for m in got)
    check("every record has a CreateTime timestamp", ts_ok)

    # 5. a rolled-back COPY is invisible to read_committed; what commits after it is seen
    text = io.StringIO("".join(f"rb-{i}\trolled-back-{i}\t\\N\t\\N\n" for i in range(300)))
    cur.copy_expert(f"COPY {table} (key, value, partition, headers) FROM STDIN", text)
    conn.rollback()
    cur.copy_expert(f"COPY {table} (key, value, partition, headers) FROM STDIN",
                    io.StringIO("after\tcommitted-after\t0\t\\N\n"))
    conn.commit()
    msgs = read_committed(topic, total + 1)
    values = [m.value() for m in msgs]
    check("read_committed: no record of the rolled-back COPY",
          not any(v and v.startswith(b"rolled-back-") for v in values))
    check("read_committed: every committed record, including the one after the rollback",
          len(msgs) == total + 1 and b"committed-after" in values, f"({len(msgs)} of {total + 1})")

    cur.execute(f"DROP FOREIGN TABLE {table}")
    cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    conn.commit()
    conn.close()
    finish()


if __name__ == "__main__":
    main()
