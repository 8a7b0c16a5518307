#!/usr/bin/env python3
"""Records cross the two front doors byte for byte.

- produced over the wire (confluent-kafka / librdkafka, every codec, keys,
  null and empty values, headers with duplicates and null values) and read
  with kafka.fetch in SQL;
- produced with kafka.produce / kafka.produce_batch in SQL (headers,
  explicit timestamps, binary keys) and read over the wire;
- keyed records from SQL land on the partition librdkafka's murmur2
  partitioner (the Java client's default) picks for the same key;
- interleaved SQL transactions, one rolled back: read_committed wire readers
  get only the committed records, read_uncommitted ones all of them;
- a compressed batch whose payload does not inflate (CRC right) is refused
  with CORRUPT_MESSAGE and nothing of it is readable from SQL.

Usage: interop.py HOST:PORT (env PGHOST/PGPORT/PGUSER/PGDATABASE for SQL).
Last line: "N passed, M failed".
"""
import os
import socket
import struct
import sys
import time
import uuid

import psycopg2
from kafka.record.util import calc_crc32c
from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402

BOOTSTRAP = sys.argv[1]


def sql():
    c = psycopg2.connect("")
    c.autocommit = True
    return c


def read_wire(topic, partition, n, timeout=30, isolation="read_committed"):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "interop-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "isolation.level": isolation})
    c.assign([TopicPartition(topic, partition, 0)])
    out = []
    t0 = time.time()
    while len(out) < n and time.time() - t0 < timeout:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append((m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()[1]))
    c.close()
    return out


def raw_produce(topic, batch):
    """Produce v3 of one batch to partition 0 over a plain socket; the partition's error code."""
    name = topic.encode()
    body = (struct.pack(">hih", -1, -1, 10000) + struct.pack(">i", 1) + struct.pack(">h", len(name)) + name
            + struct.pack(">ii", 1, 0) + struct.pack(">i", len(batch)) + batch)
    client = b"interop"
    req = struct.pack(">hhih", 0, 3, 77, len(client)) + client + body
    host, port = BOOTSTRAP.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                return None
            data += chunk
    # correlation id, topics[1]: name, partitions[1]: index, error_code, ...
    pos = 8 + 4
    nlen = struct.unpack(">h", data[pos:pos + 2])[0]
    pos += 2 + nlen + 4 + 4
    return struct.unpack(">h", data[pos:pos + 2])[0]


def batch_v2(codec, payload, count=1):
    """A record batch whose CRC is right, with payload as its records section."""
    ts = int(time.time() * 1000)
    after_crc = (struct.pack(">hiqqqhii", codec, count - 1, ts, ts, -1, -1, -1, count) + payload)
    crc = calc_crc32c(after_crc)
    rest = struct.pack(">ib", 0, 2) + struct.pack(">I", crc) + after_crc
    return struct.pack(">qi", 0, len(rest)) + rest


def main():
    run = uuid.uuid4().hex[:8]
    db = sql()
    cur = db.cursor()

    # 1. wire -> SQL, every codec
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        topic = f"interop-{codec}-{run}"
        cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
        p = Producer({"bootstrap.servers": BOOTSTRAP, "compression.codec": codec, "linger.ms": 5})
        sent = []
        for i in range(50):
            key = None if i % 7 == 0 else f"k{i}".encode()
            value = None if i % 11 == 0 else (b"" if i % 13 == 0 else bytes([i % 256]) * (i * 3))
            headers = [("h", b"1"), ("h", b"2"), ("empty", b""), ("none", None)] if i % 5 == 0 else []
            p.produce(topic, key=key, value=value, headers=headers, partition=0)
            sent.append((key, value, headers))
        left = p.flush(20)
        check(f"{codec}: 50 records produced over the wire", left == 0, f"({left} left)")
        cur.execute("SELECT key, value, headers FROM kafka.fetch(%s, 0, 0, 1000) ORDER BY \"offset\"", (topic,))
        rows = cur.fetchall()
        got = []
        for k, v, h in rows:
            hs = []
            if h:
                # kafka.header[] comes back as text: parse "(key,\\x..)" pairs via SQL instead
                pass
            got.append((bytes(k) if k is not None else None, bytes(v) if v is not None else None))
        want = [(k, v) for k, v, _ in sent]
        check(f"{codec}: kafka.fetch returns the same keys and values, in order", got == want,
              f"(first difference at {next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(got))}; {len(got)} rows)")
        cur.execute("SELECT (h).key, (h).value FROM kafka.fetch(%s, 0, 0, 1) f, unnest(f.headers) h", (topic,))
        hrows = [(k, bytes(v) if v is not None else None) for k, v in cur.fetchall()]
        check(f"{codec}: headers keep order, duplicates, empty and null values",
              hrows == [("h", b"1"), ("h", b"2"), ("empty", b""), ("none", None)], str(hrows))

    # 2. SQL -> wire
    topic = f"interop-sql-{run}"
    cur.execute("SELECT kafka.create_topic(%s, 1, '{\"compression.type\": \"zstd\"}')", (topic,))
    cur.execute("""SELECT * FROM kafka.produce(%s, '\\x00ff'::bytea, 'binary \\000 value'::bytea,
                       headers => ARRAY[('trace', 'abc')::kafka.header, ('trace', NULL)::kafka.header],
                       partition => 0, "timestamp" => '2026-01-02 03:04:05.678+00')""", (topic,))
    cur.execute("SELECT * FROM kafka.produce_batch(%s, ARRAY['a', 'b', NULL], ARRAY['1', NULL, '3'], partition => 0)",
                (topic,))
    msgs = read_wire(topic, 0, 4)
    check("SQL -> wire: 4 records arrive", len(msgs) == 4, str(len(msgs)))
    if len(msgs) == 4:
        o, k, v, h, ts = msgs[0]
        check("SQL -> wire: binary key and value byte for byte", k == b"\x00\xff" and v == b"binary \x00 value", repr((k, v)))
        check("SQL -> wire: headers in order, null value kept", h == [("trace", b"abc"), ("trace", None)], repr(h))
        check("SQL -> wire: the timestamp given in SQL", ts == 1767323045678, str(ts))
        check("SQL -> wire: batch records, null key and null value (tombstone)",
              [(m[1], m[2]) for m in msgs[1:]] == [(b"a", b"1"), (b"b", None), (None, b"3")],
              repr([(m[1], m[2]) for m in msgs[1:]]))

    # 3. keyed records from SQL land where librdkafka's murmur2 partitioner
    #    (the Java client's default) puts the same keys
    topic = f"interop-keys-{run}"
    cur.execute("SELECT kafka.create_topic(%s, 7)", (topic,))
    keys = [f"key-{g}" for g in range(1, 201)] + ["", "\u00e9t\u00e9", "x" * 300]
    cur.execute("SELECT k, (kafka.produce(%s, k, 'v')).partition FROM unnest(%s::text[]) k", (topic, keys))
    sql_part = dict(cur.fetchall())
    wire_part = {}
    p = Producer({"bootstrap.servers": BOOTSTRAP, "partitioner": "murmur2_random"})
    for k in keys:
        p.produce(topic, key=k.encode(), value=b"w",
                  on_delivery=lambda err, m: err is None and wire_part.__setitem__(m.key().decode(), m.partition()))
    p.flush(30)
    diff = [k for k in keys if sql_part.get(k) != wire_part.get(k)]
    check(f"{len(keys)} keys: kafka.produce picks the partition librdkafka's murmur2 partitioner picks",
          len(wire_part) == len(keys) and not diff, repr(diff[:5]))
    # 4. SQL transactions interleaved on one partition, one rolled back:
    #    read_committed wire readers skip the aborted batches, read_uncommitted
    #    ones see them
    topic = f"interop-txn-{run}"
    cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    a, b = psycopg2.connect(""), psycopg2.connect("")
    ca, cb = a.cursor(), b.cursor()
    ca.execute("SELECT kafka.produce(%s, 'a', 'a1', partition => 0)", (topic,))
    cb.execute("SELECT kafka.produce(%s, 'b', 'b1', partition => 0)", (topic,))
    ca.execute("SELECT kafka.produce(%s, 'a', 'a2', partition => 0)", (topic,))
    cb.execute("SELECT kafka.produce(%s, 'b', 'b2', partition => 0)", (topic,))
    a.rollback()
    b.commit()
    a.close()
    b.close()
    got = [m[2] for m in read_wire(topic, 0, 2)]
    check("read_committed over the wire: only the committed transaction's records", got == [b"b1", b"b2"], repr(got))
    got = [m[2] for m in read_wire(topic, 0, 4, isolation="read_uncommitted")]
    check("read_uncommitted over the wire: every record, aborted ones too", got == [b"a1", b"b1", b"a2", b"b2"], repr(got))

    # 5. a compressed batch whose payload does not inflate (CRC right) is
    #    refused with CORRUPT_MESSAGE and nothing is stored
    topic = f"interop-corrupt-{run}"
    cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    junk = bytes((i * 37 + 11) & 0xff for i in range(40))
    for codec, cname in ((1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")):
        code = raw_produce(topic, batch_v2(codec, junk))
        check(f"{cname} batch with a payload that does not inflate: CORRUPT_MESSAGE (2)", code == 2, str(code))
    cur.execute("SELECT \"offset\" FROM kafka.list_offsets(%s, 0, -1::bigint)", (topic,))
    end = cur.fetchone()[0]
    check("nothing was stored from the corrupt batches", end == 0, str(end))
    finish()


if __name__ == "__main__":
    main()
