#!/usr/bin/python3
"""test/recovery/async_commit.py: what the listener answered stays committed on a server set to
synchronous_commit = off.

A DBA may set synchronous_commit = off for the whole server (their SQL sessions accept losing the
last commits in a crash).  The listener's own commits are the broker's acknowledgements: an
OffsetCommit, an EndTxn, a ShareAcknowledge answered while its commit record was still in the WAL
buffers would be lost by a crash of any process (which restarts the server and drops the buffers).
Until 2026-12-07 the listener committed as the server said, so they were; now its commits flush
the WAL up to their commit record before the request is answered, whatever the server's
synchronous_commit (src/listener/dispatch.c, xact_callback), while SQL sessions keep the server's
setting.

The cluster runs with synchronous_commit = off and wal_writer_delay = 10 s, so nothing but a
commit that flushes writes the WAL out between an answer and the crash that follows it at once
(the postmaster killed with SIGKILL: its children exit without flushing).

1. A group's OffsetCommit (librdkafka commit(), synchronous), then the crash: after the restart the
   group's committed offset is the one answered.
2. A transaction (a record produced with acks=all, then commit_transaction()), then the crash:
   after the restart a read_committed consumer reads the record (the commit's markers came back
   with the commit; had the commit been lost, the transaction would be open until its timeout
   and then aborted).
3. Both again, to see that the first was not luck of the WAL writer's timing.
4. A SQL session keeps the server's setting: SHOW synchronous_commit says off.

Last line: "N passed, M failed".
"""

import os
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafkapg  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

tap = kafkapg.Tap()
check = tap.check


def committed(boot, group, topic):
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False})
    try:
        deadline = time.time() + 30
        while True:
            try:
                return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
            except Exception:  # noqa: BLE001 (the coordinator is loading after the restart)
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def read_committed(boot, topic, want, seconds=30):
    """The values a read_committed consumer reads from the start of partition 0 (until it has want
    of them, or seconds pass)."""
    c = Consumer({"bootstrap.servers": boot, "group.id": "ac-reader-" + uuid.uuid4().hex[:6],
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    got = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.time() + seconds
        while len(got) < want and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def offset_commit_then_crash(cluster, boot, topic, group, offset, label):
    c = Consumer({"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()
    cluster.restart(crash=True)
    got = committed(boot, group, topic)
    check("%s: the OffsetCommit answered before the crash is the group's committed offset after it"
          % label, got == offset, "(committed %s, answered %d)" % (got, offset))


def txn_then_crash(cluster, boot, topic, value, label, expect):
    p = Producer({"bootstrap.servers": boot, "transactional.id": "ac-" + uuid.uuid4().hex[:8],
                  "acks": "all", "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=value, partition=0)
    p.commit_transaction(30)
    del p                # closed before the crash: no reconnect noise on stderr
    cluster.restart(crash=True)
    got = read_committed(boot, topic, len(expect))
    check("%s: the transaction committed before the crash is read by read_committed after it" % label,
          got == expect, "(read %s)" % got)


def run():
    cluster = kafkapg.ScratchCluster("async_commit", 58660, 49320)
    boot = "127.0.0.1:%d" % cluster.kport
    try:
        cluster.start("postgres", {"KP_KAFKA_DB": "postgres",
                                   "KP_EXTRA_CONF": "synchronous_commit = off\nwal_writer_delay = 10000ms\n"
                                                    "kafka.group_initial_rebalance_delay_ms = 0"})
        conn = kafkapg.connect(cluster.port)
        conn.cursor().execute("SET synchronous_commit = on")  # the seed is not what is tested
        conn.cursor().execute("SELECT kafka.create_topic('ac', 1)")
        conn.cursor().execute("SELECT kafka.produce('ac', NULL, 'seed'::bytea, \"partition\" => 0)")
        conn.close()

        offset_commit_then_crash(cluster, boot, "ac", "ac-group", 1, "1")
        txn_then_crash(cluster, boot, "ac", b"t1", "2", [b"seed", b"t1"])
        offset_commit_then_crash(cluster, boot, "ac", "ac-group", 2, "3")
        txn_then_crash(cluster, boot, "ac", b"t2", "3", [b"seed", b"t1", b"t2"])

        conn = kafkapg.connect(cluster.port)
        cur = conn.cursor()
        cur.execute("SHOW synchronous_commit")
        mode = cur.fetchone()[0]
        conn.close()
        check("4: a SQL session keeps the server's synchronous_commit (off)", mode == "off", "(%s)" % mode)
    finally:
        tap.cleanup(cluster)


tap.main(run)
