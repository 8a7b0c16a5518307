#!/usr/bin/env python3
"""The transaction coordinator on the wire (issue 8), with nothing but sockets and the request
versions a transactions-version-1 client uses, so the same file runs against kafka_pg and against
Apache Kafka 4.4 (test/clients/kafka/kafka.sh) and the answers are compared code for code:

- FindCoordinator key type 1 answers; InitProducerId refuses a timeout above
  transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT);
- Produce of a transactional batch to a partition the transaction has not added is refused
  (KIP-890 part 1) and nothing is stored; after AddPartitionsToTxn it is appended;
- a second InitProducerId fences the first producer: its AddPartitionsToTxn / EndTxn get
  INVALID_PRODUCER_EPOCH before version 2 and PRODUCER_FENCED from it, its Produce
  INVALID_PRODUCER_EPOCH; the fenced transaction was aborted (an ABORT marker follows its batch);
- EndTxn of a transactional id with no transaction is INVALID_TXN_STATE; an unknown
  transactional id is INVALID_PRODUCER_ID_MAPPING;
- TxnOffsetCommit needs AddOffsetsToTxn first;
- a read_committed Fetch parked at the last stable offset is answered when the transaction
  commits (issue 13: parked fetches are woken by their partitions' changes, markers included);
- a topic deleted while a transaction that wrote to it (and committed offsets of it) is under way:
  EndTxn commit writes the COMMIT marker to the other topic, the deleted topic's pending offset is
  not committed (nor there once the topic is made again), and the next InitProducerId is answered
  at once (kafka_pg kept the transaction in PrepareCommit for ever: its marker could not be
  written, and InitProducerId answered CONCURRENT_TRANSACTIONS);
- TxnOffsetCommit of a known partition and an unknown topic's: the unknown one is refused, the
  known one committed with the transaction; a topic listed with no partitions is not answered.

Usage: transactions.py HOST:PORT.  Last line: "N passed, M failed".
"""
import struct
import sys
import time

from kafka.record.default_records import DefaultRecordBatchBuilder

import conformance as cf
from conformance import Conn, array, check, i8, i16, i32, i64, nbytes, string
from tap import finish

INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING = 47, 48, 49
INVALID_TRANSACTION_TIMEOUT, PRODUCER_FENCED = 50, 90


def txn_batch(pid, epoch, seq, values):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(c, txn_id, topic, batch):
    """Produce v8 with a transactional id, partition 0: the partition's error code."""
    pd = i32(0) + nbytes(batch)
    r = c.call(0, 8, string(txn_id) + i16(-1) + i32(30000) + array([string(topic) + array([pd])]))

    def part():
        _, err, _ = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        r.array(lambda: (r.i32(), r.string()))
        r.string()
        return err
    return r.array(lambda: (r.string(), r.array(part)))[0][1][0]


def find_txn_coordinator(c, txn_id):
    r = c.call(10, 1, string(txn_id) + i8(1))
    r.i32()
    return r.i16()


def init_producer_id(c, txn_id, timeout_ms):
    """InitProducerId v1 (conformance.py's): (error, producer id, epoch); retries
    CONCURRENT_TRANSACTIONS."""
    for _ in range(50):
        err, pid, epoch = cf.init_producer_id(c, txn_id, timeout_ms)
        if err != 51:
            return err, pid, epoch
        time.sleep(0.2)
    return err, pid, epoch


def add_partitions(c, version, txn_id, pid, epoch, topic):
    """AddPartitionsToTxn v0-2 of partition 0: its error code."""
    r = c.call(24, version, string(txn_id) + i64(pid) + i16(epoch) + array([string(topic) + array([i32(0)])]))
    r.i32()
    return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))[0][1][0][1]


def add_offsets(c, txn_id, pid, epoch, group):
    r = c.call(25, 1, string(txn_id) + i64(pid) + i16(epoch) + string(group))
    r.i32()
    return r.i16()


def txn_offset_commit(c, txn_id, group, pid, epoch, topic, offset):
    """TxnOffsetCommit v2 of partition 0: its error code."""
    p = i32(0) + i64(offset) + i32(-1) + string("")
    r = c.call(28, 2, string(txn_id) + string(group) + i64(pid) + i16(epoch) + array([string(topic) + array([p])]))
    r.i32()
    return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))[0][1][0][1]


def end_txn(c, version, txn_id, pid, epoch, commit):
    """EndTxn v0-2: its error code; retries CONCURRENT_TRANSACTIONS."""
    for _ in range(50):
        r = c.call(26, version, string(txn_id) + i64(pid) + i16(epoch) + i8(1 if commit else 0))
        r.i32()
        err = r.i16()
        if err != 51:
            return err
        time.sleep(0.2)
    return err


def stored(c, topic):
    """The batches of partition 0 as (attributes, producer id, record count)."""
    r = c.call(1, 11, cf.fetch_body([(topic, 0)], 100))
    _, recs = cf.read_fetch(r)[topic]
    out = []
    for b in cf.batches(recs or b""):
        attrs = struct.unpack(">h", b[21:23])[0]
        pid = struct.unpack(">q", b[43:51])[0]
        count = struct.unpack(">i", b[57:61])[0]
        out.append((attrs, pid, count))
    return out


def wait_batches(c, topic, n, timeout=20):
    deadline = time.time() + timeout
    got = []
    while time.time() < deadline:
        got = stored(c, topic)
        if len(got) >= n:
            return got
        time.sleep(0.2)
    return got


def main():
    run = cf.RUN
    c = Conn()
    topic = f"wtx-{run}"
    other = f"wtx-other-{run}"
    tid = f"wtx-id-{run}"
    check("create topics", cf.create_topic(c, topic) == 0 and cf.create_topic(c, other) == 0)

    check("FindCoordinator key type 1 answers", find_txn_coordinator(c, tid) == 0)
    err, _, _ = init_producer_id(c, f"{tid}-big", 900001)
    check("InitProducerId with transaction.timeout.ms 900001: INVALID_TRANSACTION_TIMEOUT",
          err == INVALID_TRANSACTION_TIMEOUT, f"got {err}")
    err, pid, epoch = init_producer_id(c, tid, 60000)
    check("InitProducerId with a transactional id", err == 0 and pid >= 0 and epoch >= 0, f"got {err}")

    # KIP-890 part 1: a partition not added is refused, and nothing is stored
    err = produce(c, tid, topic, txn_batch(pid, epoch, 0, [b"early"]))
    check("Produce to a partition not in the transaction is refused", err == INVALID_TXN_STATE, f"got {err}")
    check("... and nothing is stored", stored(c, topic) == [])

    err = add_partitions(c, 1, tid, pid, epoch, topic)
    check("AddPartitionsToTxn v1", err == 0, f"got {err}")
    err = produce(c, tid, topic, txn_batch(pid, epoch, 0, [b"a", b"b"]))
    check("Produce after AddPartitionsToTxn", err == 0, f"got {err}")
    err = produce(c, tid, other, txn_batch(pid, epoch, 0, [b"x"]))
    check("Produce to another partition not added is refused", err == INVALID_TXN_STATE, f"got {err}")

    group = f"wtx-g-{run}"
    cf.find_coordinator(c, group)
    err = txn_offset_commit(c, tid, group, pid, epoch, topic, 1)
    check("TxnOffsetCommit before AddOffsetsToTxn is refused", err != 0, f"got {err}")

    # a second producer with the same id fences the first and aborts its transaction
    err, pid2, epoch2 = init_producer_id(c, tid, 60000)
    check("InitProducerId again: same producer id, a newer epoch", err == 0 and pid2 == pid and epoch2 > epoch,
          f"got {err} {pid2} {epoch2} (was {pid} {epoch})")
    got = wait_batches(c, topic, 2)
    check("the fenced transaction was aborted: its batch, then a control batch",
          len(got) == 2 and got[0][1] == pid and got[1][0] & 0x20 and got[1][1] == pid, f"got {got}")
    err = add_partitions(c, 1, tid, pid, epoch, topic)
    check("AddPartitionsToTxn v1 with the old epoch: INVALID_PRODUCER_EPOCH", err == INVALID_PRODUCER_EPOCH, f"got {err}")
    err = add_partitions(c, 2, tid, pid, epoch, topic)
    check("AddPartitionsToTxn v2 with the old epoch: PRODUCER_FENCED", err == PRODUCER_FENCED, f"got {err}")
    err = end_txn(c, 1, tid, pid, epoch, True)
    check("EndTxn v1 with the old epoch: INVALID_PRODUCER_EPOCH", err == INVALID_PRODUCER_EPOCH, f"got {err}")
    err = end_txn(c, 2, tid, pid, epoch, True)
    check("EndTxn v2 with the old epoch: PRODUCER_FENCED", err == PRODUCER_FENCED, f"got {err}")
    err = produce(c, tid, topic, txn_batch(pid, epoch, 1, [b"late"]))
    check("Produce with the old epoch: INVALID_PRODUCER_EPOCH", err == INVALID_PRODUCER_EPOCH, f"got {err}")

    err = end_txn(c, 1, tid, pid2, epoch2, False)
    check("EndTxn with no transaction under way: INVALID_TXN_STATE", err == INVALID_TXN_STATE, f"got {err}")
    err = end_txn(c, 1, f"{tid}-unknown", pid2, epoch2, True)
    check("EndTxn of an unknown transactional id: INVALID_PRODUCER_ID_MAPPING",
          err == INVALID_PRODUCER_ID_MAPPING, f"got {err}")

    # the new producer commits: offsets and records together
    ok = (add_partitions(c, 1, tid, pid2, epoch2, topic) == 0 and add_offsets(c, tid, pid2, epoch2, group) == 0
          and produce(c, tid, topic, txn_batch(pid2, epoch2, 0, [b"c"])) == 0
          and txn_offset_commit(c, tid, group, pid2, epoch2, topic, 3) == 0)
    check("the new producer: AddPartitionsToTxn, AddOffsetsToTxn, Produce, TxnOffsetCommit", ok)
    err = end_txn(c, 1, tid, pid2, epoch2, True)
    check("EndTxn commit", err == 0, f"got {err}")
    got = wait_batches(c, topic, 4)
    check("a COMMIT marker follows the new batch", len(got) == 4 and got[3][0] & 0x20, f"got {got}")
    deadline = time.time() + 20
    res = None
    while time.time() < deadline:
        res = cf.offset_fetch(c, group, topic)
        if res and res[0] == 0 and res[1] == 3:
            break
        time.sleep(0.2)
    check("the transaction's offset is committed", res is not None and res[0] == 0 and res[1] == 3, f"got {res}")
    err = end_txn(c, 1, tid, pid2, epoch2, True)
    check("EndTxn commit again (a retry): no error", err == 0, f"got {err}")
    err = end_txn(c, 1, tid, pid2, epoch2, False)
    check("EndTxn abort after a commit: INVALID_TXN_STATE", err == INVALID_TXN_STATE, f"got {err}")
    check_read_committed_wakes(c, run)
    check_deleted_topic(c, run)
    check_offsets_of_unknown_topic(c, run)
    c.close()
    finish()


def check_read_committed_wakes(c, run):
    """Issue 13: a read_committed Fetch parked at the last stable offset is answered when the
    transaction commits (its marker moves the last stable offset), not at its max_wait_ms."""
    topic, tid = f"wtx-rc-{run}", f"wtx-rc-id-{run}"
    check("create a topic for read_committed", cf.create_topic(c, topic) == 0)
    time.sleep(1)  # Apache Kafka: the new partition's leader, for AddPartitionsToTxn
    err, pid, epoch = init_producer_id(c, tid, 60000)
    ok = (err == 0 and add_partitions(c, 1, tid, pid, epoch, topic) == 0
          and produce(c, tid, topic, txn_batch(pid, epoch, 0, [b"p", b"q"])) == 0)
    check("a transaction produces 2 records", ok)
    waiting = cf.ParkedFetch([(topic, [(0, 0)])], 15000, isolation=1)
    time.sleep(1.5)
    check("a read_committed Fetch from offset 0 waits while the transaction is open", waiting.is_alive())
    t0 = time.time()
    err = end_txn(c, 1, tid, pid, epoch, True)
    waiting.join(timeout=20)
    recs = waiting.result[(topic, 0)][1] if waiting.result else b""
    check("... and is answered within 3 s of EndTxn commit, with the batch and its marker",
          err == 0 and waiting.took is not None and waiting.answered_at() - t0 < 3.0
          and len(cf.batches(recs)) >= 1,
          f"(EndTxn {err}, took {waiting.took}, {len(cf.batches(recs))} batches)")


def check_deleted_topic(c, run):
    """A topic deleted while a transaction that wrote to it is under way: the transaction commits
    (the deleted topic's partition gets no marker, as Kafka's coordinator skips it) and the
    transactional id is usable at once."""
    gone, kept = f"wtx-gone-{run}", f"wtx-kept-{run}"
    tid, group = f"wtx-gone-id-{run}", f"wtx-gone-g-{run}"
    check("deleted topic: create two topics", cf.create_topic(c, gone) == 0 and cf.create_topic(c, kept) == 0)
    time.sleep(1)
    err, pid, epoch = init_producer_id(c, tid, 60000)
    cf.find_coordinator(c, group)
    ok = (err == 0 and add_partitions(c, 1, tid, pid, epoch, gone) == 0
          and add_partitions(c, 1, tid, pid, epoch, kept) == 0 and add_offsets(c, tid, pid, epoch, group) == 0
          and produce(c, tid, gone, txn_batch(pid, epoch, 0, [b"g"])) == 0
          and produce(c, tid, kept, txn_batch(pid, epoch, 0, [b"k1", b"k2"])) == 0
          and txn_offset_commit(c, tid, group, pid, epoch, gone, 1) == 0
          and txn_offset_commit(c, tid, group, pid, epoch, kept, 2) == 0)
    check("deleted topic: a transaction writes to both and commits offsets of both", ok)
    err = cf.delete_topic(c, gone)
    check("deleted topic: DeleteTopics of one while the transaction is under way", err == 0, f"({err})")
    time.sleep(1)
    err = end_txn(c, 1, tid, pid, epoch, True)
    check("deleted topic: EndTxn commit", err == 0, f"got {err}")
    got = wait_batches(c, kept, 2)
    check("deleted topic: ... the other topic gets its COMMIT marker",
          len(got) == 2 and got[0][1] == pid and got[1][0] & 0x20 and got[1][1] == pid, f"got {got}")
    res = cf.offset_fetch(c, group, kept)
    check("deleted topic: ... its offset of the other topic is committed", res == (0, 2, b""), f"got {res}")
    res = cf.offset_fetch(c, group, gone)
    check("deleted topic: ... none of the deleted topic", res == (0, -1, b""), f"got {res}")
    t0 = time.time()
    err, pid2, epoch2 = init_producer_id(c, tid, 60000)
    check("deleted topic: InitProducerId of the transactional id is answered at once, a newer epoch",
          err == 0 and pid2 == pid and epoch2 == epoch + 1 and time.time() - t0 < 2,
          f"got {err} {pid2} {epoch2} after {time.time() - t0:.1f}s")
    check("deleted topic: made again under the name", cf.create_topic(c, gone) == 0)
    time.sleep(1)
    res = cf.offset_fetch(c, group, gone)
    check("deleted topic: ... the transaction's offset of the old topic is not there", res == (0, -1, b""),
          f"got {res}")


def check_offsets_of_unknown_topic(c, run):
    """TxnOffsetCommit of a known topic's partition, an unknown topic's and a topic listed with no
    partitions: Kafka 4.4 answers the unknown one UNKNOWN_TOPIC_OR_PARTITION, commits the known one
    with the transaction and answers nothing for the empty listing (kafka_pg refused the whole
    request, OPERATION_NOT_ATTEMPTED for the known partition, until 2026-12-06)."""
    topic, unknown = f"wtx-part-{run}", f"wtx-part-unknown-{run}"
    tid, group = f"wtx-part-id-{run}", f"wtx-part-g-{run}"
    check("offsets of an unknown topic: create a topic", cf.create_topic(c, topic) == 0)
    time.sleep(1)
    err, pid, epoch = init_producer_id(c, tid, 60000)
    cf.find_coordinator(c, group)
    check("offsets of an unknown topic: InitProducerId, AddOffsetsToTxn",
          err == 0 and add_offsets(c, tid, pid, epoch, group) == 0)
    p = i32(0) + i64(7) + i32(-1) + string("")
    r = c.call(28, 2, string(tid) + string(group) + i64(pid) + i16(epoch)
               + array([string(topic) + array([p]), string(unknown) + array([p]), string(topic) + array([])]))
    r.i32()
    got = sorted((t.decode(), ps) for t, ps in r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16())))))
    check("offsets of an unknown topic: TxnOffsetCommit answers the known partition NONE, the unknown "
          "topic's UNKNOWN_TOPIC_OR_PARTITION, the listing with no partitions nothing",
          got == sorted([(topic, [(0, 0)]), (unknown, [(0, 3)])]), f"got {got}")
    err = end_txn(c, 1, tid, pid, epoch, True)
    check("offsets of an unknown topic: EndTxn commit", err == 0, f"got {err}")
    deadline, res = time.time() + 10, None
    while time.time() < deadline and res != (0, 7, b""):
        res = cf.offset_fetch(c, group, topic)
        time.sleep(0.2)
    check("offsets of an unknown topic: ... the known partition's offset is committed", res == (0, 7, b""),
          f"got {res}")


if __name__ == "__main__":
    main()
