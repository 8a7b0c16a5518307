#!/usr/bin/env python3
"""Transactions version 2 (KIP-890 part 2) on the wire, with nothing but sockets, so the same file
runs against kafka_pg and against Apache Kafka 4.4 (test/clients/kafka/kafka.sh; its transaction
timeouts are checked every 10 s, so that part waits up to 30 s) and the answers are compared code
for code:

- ApiVersions finalizes transaction.version 2 (what turns Kafka 4.x clients to the requests below),
  and group.version 1 and share.version (1 here, 2 on Kafka 4.4);
- Produce v11 of a transactional batch to a partition not added: TRANSACTION_ABORTABLE (v11 knows
  it), nothing stored; Produce v12 adds the partition itself (no AddPartitionsToTxn), and
  TxnOffsetCommit v5 its group (no AddOffsetsToTxn); TxnOffsetCommit v6 names its topics by id
  (KIP-1319), an unknown id UNKNOWN_TOPIC_ID;
- EndTxn v5 bumps the epoch and answers the producer id and epoch to go on with; Kafka's table of
  retries (the epoch before the current one) and current requests in Empty, CompleteCommit and
  CompleteAbort: a retry of the end that was done is answered NONE with the new epoch, an abort with
  nothing under way bumps the epoch, the rest INVALID_TXN_STATE or PRODUCER_FENCED;
- the markers carry the bumped epoch, which the partitions' producer state takes (DescribeProducers:
  the epoch, no sequence); a batch of the old epoch after the bump: INVALID_PRODUCER_EPOCH, nothing
  stored; a version 1 end (EndTxn v4) keeps the epoch and the sequence;
- EndTxn v4 (transactions version 1) of a transaction Produce v12 began: ended with no bump;
- AddPartitionsToTxn v4 VerifyOnly (KIP-890 part 1's broker check): a partition not in the
  transaction is TRANSACTION_ABORTABLE;
- TxnOffsetCommit's group errors by version (KIP-890 part 1, KIP-848, KIP-1319): a group not in the
  transaction, a KIP-848 member's stale epoch, a group that does not exist;
- a transaction past its timeout is aborted with the epoch bumped; its producer's next batch is
  INVALID_PRODUCER_EPOCH, and its EndTxn v5 abort (the old epoch) is a retry answered NONE with the
  new epoch: the producer goes on (transactions version 1 fences it for good);
- (kafka_pg, through SQL) an EndTxn v5 at the last epoch (32766) moves the producer to a new
  producer id at epoch 0: the markers carry the old id, a retry of that EndTxn is answered with the
  new id, and the new id's transactions work; UpdateFeatures of transaction.version is refused.

Usage: [PGDATABASE=... PGHOST=... PGPORT=...] txn_v2.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import struct
import time

import conformance as cf
from conformance import Conn, array, check, i8, i16, i32, i64, nbytes, string
from kwire import TAGS, Reader, carray, cstring, describe_producers, uvarint
from tap import finish
from transactions import find_txn_coordinator, stored, txn_batch

NONE, NOT_ENOUGH_REPLICAS, OUT_OF_ORDER, CONCURRENT = 0, 19, 45, 51
INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING = 47, 48, 49
PRODUCER_FENCED, UNKNOWN_TOPIC_ID, STALE_MEMBER_EPOCH, TRANSACTION_ABORTABLE = 90, 100, 113, 120
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND = 22, 25, 69
COMMIT_MARKER, DATA = 48, 16  # a stored batch's attributes: control + transactional, transactional


def retry(fn, codes=(14, 15, CONCURRENT)):
    """fn() again while its (first) code is retriable: coordinator loading, a transaction ending."""
    for _ in range(150):
        v = fn()
        if (v[0] if isinstance(v, tuple) else v) not in codes:
            return v
        time.sleep(0.2)
    return v


def features(c):
    """ApiVersions v3: the finalized features, {name: (min, max)}."""
    c.corr += 1
    hdr = struct.pack(">hhi", 18, 3, c.corr) + string(b"conformance") + TAGS
    msg = hdr + cstring("txn-v2") + cstring("1") + TAGS
    c.s.sendall(i32(len(msg)) + msg)
    r = c.recv()
    r.i16()
    r.carray(lambda: (r.i16(), r.i16(), r.i16(), r.tags()))
    r.i32()
    out = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        data = r.take(r.uvarint())
        if tag == 2:
            t = Reader(data)
            for name, hi, lo, _ in t.carray(lambda: (t.cstring(), t.i16(), t.i16(), t.tags())):
                out[name.decode()] = (lo, hi)
    return out


def init_producer_id(c, txn_id, timeout_ms):
    return retry(lambda: cf.init_producer_id(c, txn_id, timeout_ms))


def produce_parts(c, txn_id, topic, parts, acks=-1, version=12):
    """Produce v8, or v9+ (flexible); parts: [(partition, batch)].  {partition: (error, base
    offset, message)}, or None if the connection was closed."""
    flex = version >= 9
    s, arr, tags = (cstring, carray, TAGS) if flex else (string, array, b"")
    data = (lambda b: uvarint(len(b) + 1) + b) if flex else nbytes
    pds = [i32(p) + data(b) + tags for p, b in parts]
    body = s(txn_id) + i16(acks) + i32(30000) + arr([s(topic) + arr(pds) + tags]) + tags
    r = c.call_flex(0, version, body) if flex else c.call(0, version, body)
    if r is None:
        return None
    rs, rarr = (r.cstring, r.carray) if flex else (r.string, r.array)
    rtags = r.tags if flex else (lambda: None)
    out = {}

    def part():
        p, err, base = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        rarr(lambda: (r.i32(), rs(), rtags()))
        msg = rs()
        rtags()
        out[p] = (err, base, msg.decode() if msg else None)
    rarr(lambda: (rs(), rarr(part), rtags()))
    return out


def produce(c, txn_id, topic, partition, batch, version=12):
    """Produce v11+ of one batch: (error code, base offset)."""
    return produce_parts(c, txn_id, topic, [(partition, batch)], version=version)[partition][:2]


def end_txn(c, txn_id, pid, epoch, commit, version=5):
    """EndTxn v4/v5: (error, producer id, epoch) - v4 answers no id (-1, -1); waits out
    CONCURRENT_TRANSACTIONS (Kafka writes the markers after answering)."""
    def once():
        r = c.call_flex(26, version, cstring(txn_id) + i64(pid) + i16(epoch) + i8(1 if commit else 0) + TAGS)
        r.i32()
        err = r.i16()
        return (err, r.i64(), r.i16()) if version >= 5 else (err, -1, -1)
    return retry(once, (CONCURRENT,))


def txn_offset_commit(c, txn_id, group, pid, epoch, topic, offset, version=5, generation=-1, member=""):
    """TxnOffsetCommit v3+ (flexible) of partition 0, the topic by name, or from v6 by id (KIP-1319):
    (the topic answered, its error), or (None, the reason) if the connection was closed."""
    p = i32(0) + i64(offset) + i32(-1) + cstring("") + TAGS
    body = (cstring(txn_id) + cstring(group) + i64(pid) + i16(epoch) + i32(generation) + cstring(member)
            + cstring(None) + carray([(topic if version >= 6 else cstring(topic)) + carray([p]) + TAGS])
            + TAGS)
    r = c.call_flex(28, version, body)
    if r is None:
        return None, "the connection was closed"
    r.i32()
    got = r.carray(lambda: ((r.uuid() if version >= 6 else r.cstring()),
                            r.carray(lambda: (r.i32(), r.i16(), r.tags())), r.tags()))[0]
    return got[0], got[1][0][1]


def verify_partitions(c, txn_id, pid, epoch, topic, partitions):
    """AddPartitionsToTxn v4 with VerifyOnly: {partition: error}."""
    t = (cstring(txn_id) + i64(pid) + i16(epoch) + i8(1)
         + carray([cstring(topic) + carray([i32(p) for p in partitions]) + TAGS]) + TAGS)
    r = c.call_flex(24, 4, carray([t]) + TAGS)
    r.i32(), r.i16()
    res = r.carray(lambda: (r.cstring(), r.carray(lambda: (r.cstring(), r.carray(
        lambda: (r.i32(), r.i16(), r.tags())), r.tags())), r.tags()))
    return {p: e for p, e, _ in res[0][1][0][1]}


def describe_state(c, txn_id):
    """DescribeTransactions v0: the transactional id's state."""
    r = c.call_flex(65, 0, carray([cstring(txn_id)]) + TAGS)
    r.i32()

    def one():
        r.i16(), r.cstring()
        state = r.cstring()
        r.i32(), r.i64(), r.i64(), r.i16()
        r.carray(lambda: (r.cstring(), r.carray(r.i32), r.tags()))
        r.tags()
        return state
    return r.carray(one)[0].decode()


def attrs(c, topic):
    """The attributes of the batches stored in partition 0 (DATA, COMMIT_MARKER, ...)."""
    return [a for a, _, _ in stored(c, topic)]


def main():
    run = cf.RUN
    c = Conn()
    topic = f"tv2-{run}"
    tid = f"tv2-id-{run}"
    group = f"tv2-group-{run}"
    check("ApiVersions v3 finalizes transaction.version 2",
          features(c).get("transaction.version") == (2, 2), f"got {features(c)}")
    # and the group and share protocols' features (Kafka 4.4 finalizes share.version 2: its
    # dead-letter queue, KIP-1191, which kafka_pg does not have)
    check("ApiVersions v3 finalizes group.version 1 and share.version 1 or more",
          features(c).get("group.version") == (1, 1) and features(c).get("share.version", (0, 0))[1] >= 1,
          f"got {features(c)}")
    check("create a topic of two partitions", cf.create_topic(c, topic, partitions=2) == 0)
    time.sleep(2)  # Kafka: the new partitions' leader
    check("FindCoordinator of the transactional id", retry(lambda: find_txn_coordinator(c, tid)) == 0)
    err, pid, e = init_producer_id(c, tid, 60000)
    check("InitProducerId", err == 0 and pid >= 0, f"got {err}")

    # KIP-890 part 1 at v11, part 2 at v12
    got = produce(c, tid, topic, 0, txn_batch(pid, e, 0, [b"early"]), version=11)
    check("Produce v11 to a partition not added: TRANSACTION_ABORTABLE",
          got[0] == TRANSACTION_ABORTABLE, f"got {got}")
    check("... nothing stored", stored(c, topic) == [], f"got {stored(c, topic)}")
    got0 = produce(c, tid, topic, 0, txn_batch(pid, e, 0, [b"a"]))
    got1 = produce(c, tid, topic, 1, txn_batch(pid, e, 0, [b"b"]))
    check("Produce v12 adds its partitions to the transaction itself",
          got0 == (NONE, 0) and got1 == (NONE, 0), f"got {got0} {got1}")
    cf.find_coordinator(c, group)
    err = retry(lambda: txn_offset_commit(c, tid, group, pid, e, topic, 7)[1])
    check("TxnOffsetCommit v5 adds its group itself", err == NONE, f"got {err}")
    tid_uuid = cf.topic_id(c, topic)
    got = txn_offset_commit(c, tid, group, pid, e, tid_uuid, 8, version=6)
    check("TxnOffsetCommit v6 names the topic by id (KIP-1319): NONE, the id answered",
          got == (tid_uuid, NONE), f"got {got}")
    unknown = bytes(range(1, 17))
    got = txn_offset_commit(c, tid, group, pid, e, unknown, 9, version=6)
    check("... an unknown topic id: UNKNOWN_TOPIC_ID", got == (unknown, UNKNOWN_TOPIC_ID), f"got {got}")

    got = end_txn(c, tid, pid, e, True)
    check("EndTxn v5 commit: NONE, the same producer id, the epoch bumped", got == (NONE, pid, e + 1),
          f"got {got}, producer {pid} epoch {e}")
    deadline = time.time() + 10  # Kafka writes the markers after answering
    while time.time() < deadline and (attrs(c, topic) != [DATA, COMMIT_MARKER] or
                                      cf.offset_fetch(c, group, topic)[1] != 8):
        time.sleep(0.2)
    check("... the commit marker follows the batch", attrs(c, topic) == [DATA, COMMIT_MARKER],
          f"got {attrs(c, topic)}")
    check("... and the offset is committed, v6's", cf.offset_fetch(c, group, topic)[1] == 8,
          f"got {cf.offset_fetch(c, group, topic)}")
    # the marker carries the bumped epoch, which the partition's producer state takes, its
    # sequence starting again (Kafka's ProducerStateManager; kafka_pg since 2026-12-07)
    got = [describe_producers(c, topic, p).get(pid) for p in (0, 1)]
    check("DescribeProducers after the commit: the producer at the bumped epoch, no sequence, no "
          "transaction, in both partitions", got == [(e + 1, -1, -1)] * 2, f"got {got}, epoch {e}")

    # Kafka's table: retries (epoch e) and current requests (e + 1) after the commit
    got = end_txn(c, tid, pid, e, True)
    check("EndTxn v5 commit again, the old epoch: a retry, NONE with the new epoch",
          got == (NONE, pid, e + 1), f"got {got}")
    got = end_txn(c, tid, pid, e, False)
    check("EndTxn v5 abort, the old epoch, after a commit: INVALID_TXN_STATE",
          got[0] == INVALID_TXN_STATE, f"got {got}")
    got = end_txn(c, tid, pid, e + 1, True)
    check("EndTxn v5 commit, the new epoch, nothing under way: INVALID_TXN_STATE",
          got[0] == INVALID_TXN_STATE, f"got {got}")
    got = produce(c, tid, topic, 0, txn_batch(pid, e, 1, [b"zombie"]))
    check("Produce v12 of the old epoch: INVALID_PRODUCER_EPOCH", got[0] == INVALID_PRODUCER_EPOCH,
          f"got {got}")
    check("... nothing stored", attrs(c, topic) == [DATA, COMMIT_MARKER], f"got {attrs(c, topic)}")
    got = end_txn(c, tid, pid, e + 1, False)
    check("EndTxn v5 abort with nothing under way: NONE, the epoch bumped", got == (NONE, pid, e + 2),
          f"got {got}")
    got = end_txn(c, tid, pid, e + 2, False)
    check("... and again (CompleteAbort, the current epoch): bumped again", got == (NONE, pid, e + 3),
          f"got {got}")
    got = end_txn(c, tid, pid, e + 2, False)
    check("EndTxn v5 abort, the old epoch, after an abort: a retry, NONE with the new epoch",
          got == (NONE, pid, e + 3), f"got {got}")
    got = end_txn(c, tid, pid, e + 2, True)
    check("EndTxn v5 commit, the old epoch, after an abort: INVALID_TXN_STATE",
          got[0] == INVALID_TXN_STATE, f"got {got}")
    got = end_txn(c, tid, pid, e + 9, False)
    check("EndTxn v5 of a later epoch: PRODUCER_FENCED", got[0] == PRODUCER_FENCED, f"got {got}")
    got = end_txn(c, tid, pid + 1000, e + 3, False)
    check("EndTxn v5 of another producer id: INVALID_PRODUCER_ID_MAPPING",
          got[0] == INVALID_PRODUCER_ID_MAPPING, f"got {got}")
    check("no marker written for the aborts of nothing", attrs(c, topic) == [DATA, COMMIT_MARKER],
          f"got {attrs(c, topic)}")

    e += 3
    got = produce(c, tid, topic, 0, txn_batch(pid, e, 0, [b"c"]))
    check("a transaction at the new epoch: Produce v12 appended", got == (NONE, 2), f"got {got}")
    got = end_txn(c, tid, pid, e, True, version=4)
    check("EndTxn v4 (transactions version 1) commits it", got[0] == NONE, f"got {got}")
    deadline = time.time() + 10
    while time.time() < deadline and describe_producers(c, topic, 0).get(pid, (0, 0, 0))[2] != -1:
        time.sleep(0.2)
    got = describe_producers(c, topic, 0).get(pid)
    check("... its marker keeps the epoch: DescribeProducers shows the epoch and the batch's sequence",
          got == (e, 0, -1), f"got {got}, epoch {e}")
    got = end_txn(c, tid, pid, e, False)
    check("... with no bump: an EndTxn v5 abort of the same epoch bumps it",
          got == (NONE, pid, e + 1), f"got {got}")
    e += 1
    got = produce(c, tid, topic, 0, txn_batch(pid, e, 0, [b"d"]))
    errs = verify_partitions(c, tid, pid, e, topic, [0, 1])
    check("AddPartitionsToTxn v4 VerifyOnly: the partition added NONE, the other TRANSACTION_ABORTABLE",
          got[0] == NONE and errs == {0: NONE, 1: TRANSACTION_ABORTABLE}, f"got {got} {errs}")
    got = end_txn(c, tid, pid, e, False)
    check("... EndTxn v5 aborts it", got == (NONE, pid, e + 1), f"got {got}")
    # the partition itself fences the old epoch now: an idempotent (not transactional) batch of the
    # producer id at the epoch before the abort's marker, next in sequence for that epoch, is
    # INVALID_PRODUCER_EPOCH (kafka_pg appended it before 2026-12-07: only the coordinator knew)
    deadline = time.time() + 10
    while time.time() < deadline and describe_producers(c, topic, 0).get(pid, (0,))[0] != e + 1:
        time.sleep(0.2)
    before = attrs(c, topic)
    got = produce(c, None, topic, 0, cf.build_batch(0, [b"zombie"], pid, e, 1))
    check("an idempotent batch of the epoch the abort's marker bumped: INVALID_PRODUCER_EPOCH, "
          "nothing stored", got[0] == INVALID_PRODUCER_EPOCH and attrs(c, topic) == before,
          f"got {got}, {attrs(c, topic)}")
    got = produce(c, tid, topic, 0, txn_batch(pid, e + 1, 1, [b"gap"]))
    check("a transactional batch of the bumped epoch not at sequence 0: OUT_OF_ORDER_SEQUENCE_NUMBER",
          got[0] == OUT_OF_ORDER, f"got {got}")
    got = end_txn(c, tid, pid, e + 1, False)
    check("... EndTxn v5 aborts the transaction it began", got == (NONE, pid, e + 2), f"got {got}")

    check_timeout(c, run, topic)
    check_offset_errors(c, run, topic)
    check_new_producer_id(c, run, topic)
    check_update_refused(c)
    finish()


def check_update_refused(c):
    """(kafka_pg) UpdateFeatures of transaction.version is refused: Kafka would change the cluster."""
    if not os.environ.get("PGDATABASE"):
        return
    body = i32(30000) + carray([cstring("transaction.version") + i16(1) + i8(2) + TAGS]) + i8(1) + TAGS
    r = c.call_flex(57, 1, body)
    r.i32()
    err, msg = r.i16(), r.cstring()
    check("UpdateFeatures of transaction.version: INVALID_UPDATE_VERSION, kept at 2",
          err == 95 and b"kafka_pg finalizes transaction.version 2 and does not change it" in (msg or b"")
          and features(c).get("transaction.version") == (2, 2), f"got {err} {msg}")


def check_timeout(c, run, topic):
    """A transaction past its timeout: aborted with a bump, and its producer goes on."""
    tid = f"tv2-timeout-{run}"
    retry(lambda: find_txn_coordinator(c, tid))
    err, pid, e = init_producer_id(c, tid, 1000)
    got = produce(c, tid, topic, 1, txn_batch(pid, e, 0, [b"t"]))
    check("a transaction with a timeout of 1 s", err == NONE and got[0] == NONE, f"got {err} {got}")
    deadline = time.time() + 30
    while time.time() < deadline and describe_state(c, tid) != "CompleteAbort":
        time.sleep(0.5)
    check("... aborted once past its timeout", describe_state(c, tid) == "CompleteAbort",
          f"state {describe_state(c, tid)}")
    got = produce(c, tid, topic, 1, txn_batch(pid, e, 1, [b"u"]))
    check("... its next batch: INVALID_PRODUCER_EPOCH", got[0] == INVALID_PRODUCER_EPOCH, f"got {got}")
    got = describe_producers(c, topic, 1).get(pid)
    check("... its ABORT marker carries the bumped epoch: DescribeProducers shows it, no sequence",
          got == (e + 1, -1, -1), f"got {got}, epoch {e}")
    got = end_txn(c, tid, pid, e, False)
    check("... its EndTxn v5 abort: NONE with the bumped epoch (the producer goes on)",
          got == (NONE, pid, e + 1), f"got {got}")
    got = end_txn(c, tid, pid, e, True)
    check("... an EndTxn v5 commit instead: INVALID_TXN_STATE", got[0] == INVALID_TXN_STATE, f"got {got}")


def check_offset_errors(c, run, topic):
    """TxnOffsetCommit's group errors by version, as Kafka 4.4 answers them: a group not in the
    transaction is INVALID_TXN_STATE to v3 and TRANSACTION_ABORTABLE from v4 (v5 adds it); a KIP-848
    member's stale epoch is ILLEGAL_GENERATION before v6 and STALE_MEMBER_EPOCH at v6; a member's
    commit to a group that does not exist is ILLEGAL_GENERATION before v6 and GROUP_ID_NOT_FOUND at
    v6, and makes no group; a commit without a member makes the group."""
    group, tid = f"tv2-member-{run}", f"tv2-offsets-{run}"
    cf.find_coordinator(c, group)
    got = cf.cg_heartbeat(c, group, f"m-{run}", 0, None, [topic])
    member, epoch = (got[1], got[2]) if got else (None, None)
    check("a KIP-848 member joins", got is not None and got[0] == NONE and epoch > 0, f"got {got}")
    retry(lambda: find_txn_coordinator(c, tid))
    err, pid, e = init_producer_id(c, tid, 60000)
    got = [txn_offset_commit(c, tid, group, pid, e, topic, 1, version=v, generation=epoch,
                             member=member)[1] for v in (3, 4)]
    check("TxnOffsetCommit of a group not in the transaction: INVALID_TXN_STATE at v3, "
          "TRANSACTION_ABORTABLE at v4", err == NONE and got == [INVALID_TXN_STATE, TRANSACTION_ABORTABLE],
          f"got {err} {got}")
    tuuid = cf.topic_id(c, topic)
    got = [txn_offset_commit(c, tid, group, pid, e, t, 2, version=v, generation=epoch + 5, member=member)[1]
           for v, t in ((5, topic), (6, tuuid))]
    got += [txn_offset_commit(c, tid, group, pid, e, topic, 2, generation=epoch, member=member)[1]]
    check("... a member's stale epoch: ILLEGAL_GENERATION at v5, STALE_MEMBER_EPOCH at v6; its epoch NONE",
          got == [ILLEGAL_GENERATION, STALE_MEMBER_EPOCH, NONE], f"got {got}")
    got = [txn_offset_commit(c, tid, f"{group}-none-{v}", pid, e, t, 3, version=v, generation=3,
                             member="m")[1] for v, t in ((5, topic), (6, tuuid), (6, tuuid))]
    check("... a member's commit to a group that does not exist: ILLEGAL_GENERATION at v5, "
          "GROUP_ID_NOT_FOUND at v6, and no group made",
          got == [ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND, GROUP_ID_NOT_FOUND], f"got {got}")
    got = [txn_offset_commit(c, tid, f"{group}-simple", pid, e, topic, 4)[1],
           txn_offset_commit(c, tid, f"{group}-simple", pid, e, tuuid, 4, version=6, generation=3,
                             member="m")[1]]
    check("... a commit without a member makes the group: a member's then is UNKNOWN_MEMBER_ID",
          got == [NONE, UNKNOWN_MEMBER_ID], f"got {got}")
    got = end_txn(c, tid, pid, e, False)
    check("... EndTxn v5 aborts it", got == (NONE, pid, e + 1), f"got {got}")


def check_new_producer_id(c, run, topic):
    """(kafka_pg) The last epoch's end moves the producer to a new producer id."""
    if not os.environ.get("PGDATABASE"):
        print("# PGDATABASE not set: the epoch-exhaustion part is kafka_pg only, skipped")
        return
    import psycopg2
    tid = f"tv2-exhaust-{run}"
    retry(lambda: find_txn_coordinator(c, tid))
    err, pid, _ = init_producer_id(c, tid, 60000)
    db = psycopg2.connect("")
    db.autocommit = True
    with db.cursor() as cur:
        cur.execute("UPDATE kafka.transactions SET producer_epoch = 32766 WHERE transactional_id = %s",
                    (tid,))
    last = 32766
    got = produce(c, tid, topic, 0, txn_batch(pid, last, 0, [b"last"]))
    check("a transaction at the last epoch (32766)", err == NONE and got[0] == NONE, f"got {err} {got}")
    got = end_txn(c, tid, pid, last, True)
    check("... EndTxn v5 commit: NONE, a new producer id at epoch 0",
          got[0] == NONE and got[1] not in (pid, -1) and got[2] == 0, f"got {got}")
    new_pid = got[1]
    batches = stored(c, topic)
    check("... the commit marker carries the old producer id",
          bool(batches) and batches[-1][0] == COMMIT_MARKER and batches[-1][1] == pid,
          f"got {batches[-2:]}")
    got = end_txn(c, tid, pid, last, True)
    check("... a retry of that EndTxn (old id, 32766): NONE with the new id",
          got == (NONE, new_pid, 0), f"got {got}")
    got = produce(c, tid, topic, 0, txn_batch(new_pid, 0, 0, [b"next"]))
    got_end = end_txn(c, tid, new_pid, 0, True)
    check("... the new id's transaction: appended, committed, epoch 1",
          got[0] == NONE and got_end == (NONE, new_pid, 1), f"got {got} {got_end}")
    got = produce(c, tid, topic, 0, txn_batch(pid, last, 1, [b"zombie"]))
    check("... the old id's batch: INVALID_PRODUCER_ID_MAPPING", got[0] == INVALID_PRODUCER_ID_MAPPING,
          f"got {got}")
    with db.cursor() as cur:
        cur.execute("SELECT producer_id, producer_epoch, previous_producer_id, next_producer_id "
                    "FROM kafka.transactions WHERE transactional_id = %s", (tid,))
        row = cur.fetchone()
    check("... kafka.transactions: the new id, epoch 1, the old id kept as previous",
          row == (new_pid, 1, pid, None), f"got {row}")
    db.close()


if __name__ == "__main__":
    main()
