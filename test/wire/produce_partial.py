#!/usr/bin/env python3
"""A Produce whose append fails for one partition is answered per partition: that partition
KAFKA_STORAGE_ERROR (56), the others appended once; the connection stays open.

An append is not undone when the request's transaction aborts: the batch stays in the log.  Until
2026-12-07 an append that failed part way through a Produce (the disk full, an I/O error, the
partition's open-transaction limit) failed the whole request and closed its connection: the
partitions appended before it were in the log but not answered, and a client without idempotence
that retried them appended them twice.  Now the dispatcher runs the request again: partitions the
first run appended are answered as then (not appended again), the rest each in a subtransaction
(src/listener/handlers_produce.c).

The failure used here is a real one, not injected: a partition holds at most 64 open transactions
(docs/transactions.md, "Limits"), and 64 SQL transactions hold partition 0 of a two-partition
topic while a wire transactional producer writes to both partitions (Kafka has no such limit; a
disk that fills between the Produce's room check and its append, and an I/O error, take the same
path, answered the same way, but cannot be made to happen here):

1. Produce v8 acks=all listing partition 1, then 0: partition 1 appended (base offset 0), partition
   0 answered 56 with the limit's message; the same connection answers the next request.
2. Listing partition 0, then 1 (the first run failed before appending anything): 56 and base
   offset 1.
3. A Produce with no transaction to partition 0 is appended (the limit is on transactions).
4. The 64 SQL transactions roll back; the producer's retry of its batch for partition 0 (the same
   sequence) is appended; EndTxn commits; a read_committed Fetch reads partition 1's two records
   and partition 0's two, each once, and none of the 64 rolled-back ones.
5. The server log: one WARNING naming the partition, no "request ... failed" line, and the
   listener workers kept their pids.
6. Transactions version 2: a Produce v12 of another transactional id adds its partitions itself.
   Listing partition 1, then 0 (held): partition 1 appended, partition 0 56.  The adds are
   committed before anything is appended, so partition 1 stays in the transaction although the
   request's first run was rolled back: the EndTxn v5 abort writes its ABORT marker, and partition
   1's last stable offset moves past the batch (until 2026-12-07, in the first build of version 2,
   the add was rolled back with the first run and the batch held the last stable offset for good).

Usage: PGDATABASE=... PGHOST=... PGPORT=... [KP_SERVER_LOG=...] produce_partial.py HOST:PORT.
Last line: "N passed, M failed".
"""
import os
import struct
import sys

import psycopg2
from kafka.record.default_records import DefaultRecordBatch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as cf  # noqa: E402  (reads HOST:PORT from argv at import)
from kwire import array, i8, i16, i32, i64, string  # noqa: E402
from tap import check, finish, server_log  # noqa: E402
from transactions import end_txn  # noqa: E402
from txn_v2 import end_txn as end_txn_v5, produce_parts  # noqa: E402

KAFKA_STORAGE_ERROR = 56


def sql_conn(autocommit=True):
    c = psycopg2.connect("")
    c.autocommit = autocommit
    return c


def worker_pids():
    c = sql_conn()
    with c.cursor() as cur:
        cur.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
        pids = sorted(r[0] for r in cur.fetchall())
    c.close()
    return pids


def batch(values, pid, epoch, seq, transactional):
    return cf.build_batch(0, values, pid, epoch, seq, transactional)


def produce(c, txn_id, topic, parts, acks=-1):
    """Produce v8 (txn_v2.produce_parts); parts: [(partition, batch)]."""
    return produce_parts(c, txn_id, topic, parts, acks, version=8)


def add_partitions(c, txn_id, pid, epoch, topic, partitions):
    """AddPartitionsToTxn v2: the partitions' error codes."""
    r = c.call(24, 2, string(txn_id) + i64(pid) + i16(epoch) +
               array([string(topic) + array([i32(p) for p in partitions])]))
    r.i32()
    return [e for _, ps in r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))
            for _, e in ps]


def read_committed(c, topic, partition):
    """The values of a read_committed Fetch v11 of the partition from offset 0, up to the last
    stable offset (the aborted transactions' batches left out, as a client leaves them out)."""
    ts = [string(topic) + array([i32(partition) + i32(-1) + i64(0) + i64(-1) + i32(1 << 20)])]
    r = c.call(1, 11, i32(-1) + i32(100) + i32(1) + i32(1 << 20) + i8(1) + i32(0) + i32(-1)
               + array(ts) + array([]) + string(""))
    r.i32(), r.i16(), r.i32()
    got = []

    def part():
        r.i32(), r.i16(), r.i64(), r.i64(), r.i64()
        aborted = r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        got.append((aborted, r.nbytes() or b""))
    r.array(lambda: (r.string(), r.array(part)))
    aborted, recs = got[0]
    aborted_pids = {p for p, _ in aborted}
    values = []
    for b in cf.batches(recs):
        attrs = struct.unpack(">h", b[21:23])[0]
        pid = struct.unpack(">q", b[43:51])[0]
        if attrs & 0x20 or (attrs & 0x10 and pid in aborted_pids):
            continue  # a control batch, or an aborted transaction's batch
        values += [v for v in decode_values(b)]
    return values


def decode_values(b):
    return [r.value for r in DefaultRecordBatch(b)]


def main():
    run = cf.RUN
    topic = f"partial-{run}"
    tid = f"partial-{run}"
    tid2 = f"partial-v2-{run}"
    admin = sql_conn()
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.create_topic(%s, 2)", (topic,))
    pids = worker_pids()
    log_before = len(server_log() or "")

    holders = []
    for i in range(64):
        h = sql_conn(autocommit=False)
        with h.cursor() as cur:
            cur.execute("SELECT \"offset\" FROM kafka.produce(%s, NULL::text, %s::text, partition => 0)",
                        (topic, f"held-{i}"))
        holders.append(h)

    c = cf.Conn()
    try:
        err, pid, epoch = cf.init_producer_id(c, tid, 60000)
        check("InitProducerId", err == 0, f"got {err}")
        errs = add_partitions(c, tid, pid, epoch, topic, [0, 1])
        check("AddPartitionsToTxn of partitions 0 and 1", errs == [0, 0], f"got {errs}")

        got = produce(c, tid, topic, [(1, batch([b"p1-a"], pid, epoch, 0, True)),
                                      (0, batch([b"p0-a"], pid, epoch, 0, True))])
        check("Produce listing partition 1, then 0 (64 transactions open on 0): partition 1 "
              "appended at 0, partition 0 KAFKA_STORAGE_ERROR with the limit's message",
              got is not None and got[1][:2] == (0, 0) and got[0][0] == KAFKA_STORAGE_ERROR
              and "too many transactions" in (got[0][2] or ""), f"got {got}")

        got = produce(c, tid, topic, [(0, batch([b"p0-a"], pid, epoch, 0, True)),
                                      (1, batch([b"p1-b"], pid, epoch, 1, True))])
        check("on the same connection, listing partition 0, then 1: KAFKA_STORAGE_ERROR, and "
              "partition 1 appended at 1", got is not None and got[0][0] == KAFKA_STORAGE_ERROR
              and got[1][:2] == (0, 1), f"got {got}")

        got = produce(c, "", topic, [(0, batch([b"plain"], -1, -1, -1, False))], acks=1)
        check("a Produce with no transaction to partition 0 is appended (at 64)",
              got is not None and got[0][:2] == (0, 64), f"got {got}")

        err, pid2, epoch2 = cf.init_producer_id(c, tid2, 60000)
        got = produce_parts(c, tid2, topic, [(1, batch([b"v2-p1"], pid2, epoch2, 0, True)),
                                             (0, batch([b"v2-p0"], pid2, epoch2, 0, True))])
        check("transactions version 2, Produce v12 listing partition 1, then 0, neither added: "
              "partition 1 appended at 2, partition 0 KAFKA_STORAGE_ERROR",
              err == 0 and got is not None and got[1][:2] == (0, 2)
              and got[0][0] == KAFKA_STORAGE_ERROR, f"got {err} {got}")
    finally:
        for h in holders:
            h.rollback()
            h.close()

    got = produce(c, tid, topic, [(0, batch([b"p0-a"], pid, epoch, 0, True))])
    check("the 64 transactions rolled back: the retry of partition 0's batch (sequence 0) is "
          "appended", got is not None and got[0][0] == 0, f"got {got}")
    err = end_txn(c, 2, tid, pid, epoch, True)
    check("EndTxn commits", err == 0, f"got {err}")
    got = end_txn_v5(c, tid2, pid2, epoch2, False)
    check("the version 2 transaction: EndTxn v5 aborts it", got == (0, pid2, epoch2 + 1), f"got {got}")
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.flush_markers()")
    lso, end = cf.list_latest(c, topic, 1, 1)[1], cf.list_latest(c, topic, 1, 0)[1]
    check("... partition 1 got its ABORT marker: the last stable offset is the log end (5: two "
          "records, the version 2 batch, two markers)", lso == end == 5, f"last stable {lso}, end {end}")
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.flush_markers()")
    p1 = read_committed(c, topic, 1)
    p0 = read_committed(c, topic, 0)
    check("read_committed: partition 1 holds p1-a and p1-b once each",
          p1 == [b"p1-a", b"p1-b"], f"got {p1}")
    check("read_committed: partition 0 holds the plain record and p0-a once each, none of the 64 "
          "rolled back", p0 == [b"plain", b"p0-a"], f"got {p0}")

    check("the listener workers kept their pids", worker_pids() == pids,
          f"{pids} then {worker_pids()}")
    text = server_log()
    if text is not None:
        text = text[log_before:]
        n_warn = text.count(f"cannot append to {topic}-0")
        check("the server log: one WARNING naming the partition (at most one a minute), no failed "
              "Produce", n_warn == 1 and "Produce v8 request" not in text,
              f"{n_warn} warnings; failed lines: "
              f"{[ln for ln in text.splitlines() if 'Produce v8 request' in ln][:2]}")
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    c.close()
    admin.close()
    finish()


if __name__ == "__main__":
    main()
