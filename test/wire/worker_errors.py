#!/usr/bin/env python3
"""An ERROR outside a request's handler closes that request's connection, not the listener worker.

A listener worker serves many connections from one loop.  Until 2026-12-07 an ERROR raised outside
the handler's own transaction ended the worker (the postmaster started it again later) and with it
every connection it served: an answer too large to encode, and pg_cancel_backend() on the worker,
were two ways to get there.

1. Eight idle connections (ApiVersions answered), and the pids of the listener workers.
2. pg_cancel_backend() of every listener worker while they wait for work: the workers keep their
   pids, the eight connections still answer.
3. A DescribeConfigs v4 of the BROKER resource "0" listed 115,000 times with documentation and
   synonyms (a 575 KB request; its answer would pass 1 GB, more than a PostgreSQL buffer holds):
   that connection is closed without an answer, the server log says why, the workers keep their
   pids, the eight connections still answer.  (Kafka 4.4 answers it: its buffers are not bounded
   so; kafka_pg refuses this one request.)
4. A Metadata v4 for a topic named with 20,000 bytes of 0xFF: the name comes back as 60,000 bytes
   (U+FFFD for each), which no int16 length can give: the connection is closed, as Kafka 4.4
   closes it ("'name' field is too long to be serialized"); until 2026-12-07 it was answered with
   the length cut to int16, a malformed frame.  The workers keep their pids.  The same for a
   Produce acks=all naming such a topic beside one that exists, whose answer the worker's loop
   encodes once the in-sync replicas have the batch (there, an ERROR would still end the worker).

Usage: PGDATABASE=... PGHOST=... PGPORT=... worker_errors.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import socket
import struct
import sys
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (reads HOST:PORT from argv at import)
from kwire import TAGS, array, cstring, i8, i16, i32, nbytes, string, uvarint  # noqa: E402
from tap import check, finish, server_log  # noqa: E402


def sql(query):
    c = psycopg2.connect("")
    c.autocommit = True
    cur = c.cursor()
    cur.execute(query)
    rows = cur.fetchall()
    c.close()
    return rows


def worker_pids():
    return sorted(r[0] for r in sql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'"))


def alive(conns):
    """How many of conns answer ApiVersions v0."""
    n = 0
    for c in conns:
        r = c.call(18, 0, b"", timeout=30)
        if r is not None and r.i16() == 0:
            n += 1
    return n


def workers_kept(conns, pids):
    """Whether the listener workers kept their pids and every connection of conns answers, and what
    was seen."""
    after = worker_pids()
    n = alive(conns)
    return after == pids and n == len(conns), f"pids {pids} -> {after}, answering {n}"


def describe_configs_huge(n):
    """DescribeConfigs v4 (flexible) of BROKER "0" listed n times, documentation and synonyms on:
    the answer, or None when the connection was closed without one."""
    s = socket.create_connection((kc.HOST, kc.PORT), timeout=30)
    body = (i16(32) + i16(4) + i32(7) + string(b"worker-errors") + TAGS
            + uvarint(n + 1) + (i8(4) + cstring(b"0") + uvarint(0) + TAGS) * n + i8(1) + i8(1) + TAGS)
    s.sendall(i32(len(body)) + body)
    s.settimeout(600)
    try:
        head = s.recv(4)
        if len(head) < 4:
            return None
        size = struct.unpack(">i", head)[0]
        got = 0
        while got < size:
            chunk = s.recv(min(1 << 20, size - got))
            if not chunk:
                return None
            got += len(chunk)
        return size
    except OSError:
        return None
    finally:
        s.close()


def main():
    conns = [kc.Conn() for _ in range(8)]
    pids = worker_pids()
    check("eight idle connections answer; the listener workers are running",
          alive(conns) == 8 and len(pids) >= 1, f"(workers {pids})")

    cancelled = sum(r[0] for r in sql("SELECT count(pg_cancel_backend(pid))::int FROM pg_stat_activity "
                                      "WHERE backend_type = 'kafka_pg listener'"))
    time.sleep(1.5)
    kept, seen = workers_kept(conns, pids)
    check("pg_cancel_backend() of every listener worker between requests: the workers keep their pids "
          "and all eight connections answer", cancelled == len(pids) and kept,
          f"(cancelled {cancelled}, {seen})")

    t = time.time()
    answer = describe_configs_huge(115000)
    took = time.time() - t
    kept, seen = workers_kept(conns, pids)
    check("a DescribeConfigs whose answer would pass 1 GB: its connection closed without an answer, "
          "the workers keep their pids, all eight connections answer",
          answer is None and kept, f"(answer {answer}, {seen}, {took:.1f} s)")
    # Metadata v4 (int16 string lengths) for a topic named with 20,000 bytes of 0xFF: the name comes
    # back with each byte read as U+FFFD, 60,000 bytes, more than an int16 length gives
    c = kc.Conn()
    r = c.call(3, 4, array([string(b"\xff" * 20000)]) + i8(0), timeout=30)
    detail = None
    if r is not None:
        r.i32()
        r.array(lambda: (r.i32(), r.string(), r.i32(), r.string()))
        r.string()
        r.i32()
        r.i32()
        r.i16()
        detail = struct.unpack(">h", r.d[r.p:r.p + 2])[0]
    c.close()
    kept, seen = workers_kept(conns, pids)
    check("a Metadata v4 whose answer would carry a name longer than an int16 length: its connection "
          "closed, not answered with a malformed frame; the workers keep their pids, all eight answer",
          r is None and kept, f"(name length prefix {detail}, {seen})")
    # the same in an answer that waits for the in-sync replicas (a Produce acks=all, encoded later by
    # the worker's loop, outside the request's dispatch): a topic that exists and one so named
    sql("SELECT kafka.create_topic('worker-errors', 1) WHERE NOT EXISTS "
        "(SELECT 1 FROM kafka.topics WHERE name = 'worker-errors')")
    batch = kc.build_batch(0, [b"acks-all"])
    c = kc.Conn()
    r = c.call(0, 8, string(None) + i16(-1) + i32(30000)
               + array([string(b"worker-errors") + array([i32(0) + nbytes(batch)]),
                        string(b"\xff" * 20000) + array([i32(0) + nbytes(batch)])]), timeout=30)
    c.close()
    kept, seen = workers_kept(conns, pids)
    check("a Produce acks=all naming such a topic beside one that exists: its connection closed "
          "when the answer is due; the workers keep their pids, all eight answer",
          r is None and kept, f"(answered {r is not None}, {seen})")
    log = server_log()
    if log is not None:
        check("the server log says why that connection was closed", "closing connection from" in log)
    for c in conns:
        c.close()
    finish()


if __name__ == "__main__":
    main()
