#!/usr/bin/env python3
"""A transactional Produce that waited while its transaction was aborted (issue 8, the produce
check of KIP-890 part 1): it must be refused, not appended after the abort's markers.

An EndTxn (abort) takes its producer's lock, then waits for a SQL session that holds
kafka.transaction_groups (LOCK TABLE); a Produce of the transaction, sent meanwhile on another
connection, begins its handler and waits for the producer's lock.  Once the SQL session rolls
back, the EndTxn aborts the transaction and writes its markers; the Produce then reaches the
coordinator's check: it must see the aborted transaction (INVALID_TXN_STATE), not the snapshot its
request began with (which still showed the transaction Ongoing), and the partition must hold the
first batch and the ABORT marker only.  (Until 2026-12-05 the Produce waited instead for the lock
of a topic that the SQL session had deleted and kept open; a listener worker no longer waits for a
topic's lock: test/wire/lock_waits.py.)

The two connections must be served by different listener workers (kafka.listener_workers >= 2):
the Produce's connection is opened once the EndTxn waits, so the worker that is not waiting
accepts it (the workers share one accept queue, and one waiting in a lock accepts nothing).

Second: a Produce whose transactional batch waits for its producer's lock (an EndTxn holds it,
blocked by a SQL session, then cancelled) while a topic is created elsewhere: the check that
follows processes the topic-cache invalidation, and the rest of the request (another partition of
the same topic) must still be appended where it was sent (the listener keeps a copy of the topic,
not the cache entry the invalidation frees).  Before that fix this failed reliably only where freed
memory is overwritten at once (a CLOBBER_FREED_MEMORY build, or a clobbering topic_cache_reset):
elsewhere the freed entry often still held the old values, and was overwritten only under load.

kafka_pg only.  Usage: PGDATABASE=... txn_race.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import struct
import sys
import time

import psycopg2
from kafka.record.default_records import DefaultRecordBatchBuilder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as cf  # noqa: E402
from conformance import Conn, array, i16, i32, nbytes, string  # noqa: E402
from tap import check, finish  # noqa: E402
from transactions import (INVALID_TXN_STATE, add_partitions, end_txn, init_producer_id,  # noqa: E402
                          produce, txn_batch, wait_batches)


def plain_batch(values):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(b.build())


def stored_in(c, topic, partition):
    """The record counts of the batches of one partition."""
    t = string(topic) + array([i32(partition) + i32(-1) + cf.i64(0) + cf.i64(-1) + i32(1 << 20)])
    r = c.call(1, 11, i32(-1) + i32(100) + i32(1) + i32(1 << 20) + cf.i8(0) + i32(0) + i32(-1)
               + array([t]) + array([]) + string(""))
    _, recs = cf.read_fetch(r)[topic]
    return [struct.unpack(">i", b[57:61])[0] for b in cf.batches(recs or b"")]


def waiter(db, where, timeout=10):
    """The pid of a backend waiting for a lock (where: a pg_locks condition), or None."""
    deadline = time.time() + timeout
    with db.cursor() as cur:
        while time.time() < deadline:
            cur.execute("SELECT pid FROM pg_locks WHERE NOT granted AND " + where)
            row = cur.fetchone()
            if row:
                return row[0]
            time.sleep(0.05)
    return None


def aborted_while_waiting():
    """(EndTxn's error, the Produce's error, the partition's batches), or a string if the race
    could not be set up."""
    run = cf.RUN
    setup = Conn()
    topic, tid = f"wtr-{run}", f"wtr-id-{run}"
    if cf.create_topic(setup, topic) != 0:
        return "create topic failed"
    err, pid, epoch = init_producer_id(setup, tid, 60000)
    if err != 0:
        return f"InitProducerId: {err}"
    if add_partitions(setup, 1, tid, pid, epoch, topic) != 0:
        return "AddPartitionsToTxn failed"
    err = produce(setup, tid, topic, txn_batch(pid, epoch, 0, [b"in"]))
    if err != 0:
        return f"first Produce: {err}"
    setup.close()

    db = psycopg2.connect("")
    with db.cursor() as cur:
        cur.execute("LOCK TABLE kafka.transaction_groups IN ACCESS EXCLUSIVE MODE")
    coord = Conn()
    coord.send(26, 1, string(tid) + cf.i64(pid) + i16(epoch) + cf.i8(0))
    if waiter(db, "relation = 'kafka.transaction_groups'::regclass") is None:
        db.rollback()
        return "the EndTxn did not wait for the SQL session"
    prod = Conn()   # accepted by the other worker: the EndTxn's waits
    pd = i32(0) + nbytes(txn_batch(pid, epoch, 1, [b"late"]))
    prod.send(0, 8, string(tid) + i16(-1) + i32(30000) + array([string(topic) + array([pd])]))
    if waiter(db, "locktype = 'advisory'") is None:
        db.rollback()
        return "the Produce did not wait for the producer's lock"
    db.rollback()
    r = coord.recv(timeout=30)
    end_err = None
    if r is not None:
        r.i32()
        end_err = r.i16()
    r = prod.recv(timeout=30)
    codes = read_produce_two_partitions(r) if r is not None else None
    db.close()
    return (end_err, codes, wait_batches(Conn(), topic, 3, timeout=3))


def invalidation_mid_request():
    run = cf.RUN
    setup = Conn()
    topic, tid = f"wtr-inv-{run}", f"wtr-inv-id-{run}"
    check("invalidation: create a topic of 2 partitions", cf.create_topic(setup, topic, partitions=2) == 0)
    err, pid, epoch = init_producer_id(setup, tid, 60000)
    ok = err == 0 and add_partitions(setup, 1, tid, pid, epoch, topic) == 0
    ok = ok and produce(setup, tid, topic, txn_batch(pid, epoch, 0, [b"first"])) == 0
    check("invalidation: a transaction with partition 0 and a batch", ok)

    held = psycopg2.connect("")
    with held.cursor() as cur:
        cur.execute("LOCK TABLE kafka.transaction_groups IN ACCESS EXCLUSIVE MODE")
    coord = Conn()
    coord.send(26, 1, string(tid) + cf.i64(pid) + i16(epoch) + cf.i8(0))
    end_pid = waiter(held, "relation = 'kafka.transaction_groups'::regclass")
    check("invalidation: EndTxn holds the producer's lock, waiting for the SQL session", end_pid is not None)

    prod = Conn()   # accepted by the other worker: the EndTxn's waits
    pd0 = i32(0) + nbytes(txn_batch(pid, epoch, 1, [b"second"]))
    pd1 = i32(1) + nbytes(plain_batch([b"plain"]))
    prod.send(0, 8, string(tid) + i16(-1) + i32(30000) + array([string(topic) + array([pd0, pd1])]))
    check("invalidation: the Produce waits for the producer's lock",
          waiter(held, "locktype = 'advisory'") is not None)

    other = psycopg2.connect("")
    other.autocommit = True
    with other.cursor() as cur:
        cur.execute("SELECT kafka.create_topic(%s)", (f"wtr-inv-other-{run}",))
    with held.cursor() as cur:
        cur.execute("SELECT pg_cancel_backend(%s)", (end_pid,))
    held.rollback()
    r = prod.recv(timeout=30)
    codes = read_produce_two_partitions(r) if r is not None else None
    check("invalidation: both partitions of the Produce are stored", codes == [0, 0], f"got {codes}")
    c = Conn()
    got = stored_in(c, topic, 1)
    check("invalidation: partition 1 holds the plain batch", got == [1], f"got {got}")
    got = stored_in(c, topic, 0)
    check("invalidation: partition 0 holds both transactional batches", got == [1, 1], f"got {got}")
    err = end_txn(c, 1, tid, pid, epoch, False)
    check("invalidation: EndTxn abort afterwards", err == 0, f"got {err}")
    for x in (held, other):
        x.close()
    for x in (setup, coord, prod, c):
        x.close()


def read_produce_two_partitions(r):
    """The error codes of the partitions of the one topic."""
    def part():
        _, err, _ = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        r.array(lambda: (r.i32(), r.string()))
        r.string()
        return err
    return r.array(lambda: (r.string(), r.array(part)))[0][1]


def main():
    invalidation_mid_request()
    result = aborted_while_waiting()
    if not isinstance(result, tuple):
        check("the race was set up (EndTxn waiting for the SQL session, the Produce for the producer's lock)",
              False, f"got {result}")
        finish()
    end_err, codes, got = result
    check("EndTxn abort while a Produce of the transaction waits", end_err == 0, f"got {end_err}")
    check("the waiting Produce is refused once it reaches the check: INVALID_TXN_STATE",
          codes == [INVALID_TXN_STATE], f"got {codes}")
    check("the partition holds the first batch and the ABORT marker, nothing after",
          len(got) == 2 and not got[0][0] & 0x20 and got[1][0] & 0x20, f"got {got}")
    finish()


if __name__ == "__main__":
    main()
