#!/usr/bin/env python3
"""Conformance checks from issue 14, with nothing but sockets, so the same file
runs against kafka_pg and against Apache Kafka 4.4 (test/clients/kafka/kafka.sh):

1. A parked Fetch answers at max_wait_ms after it arrived, however often the
   server is woken by other traffic (a producer to another topic every 300 ms
   used to push the deadline back on every wake-up).  Issue 13: fetches parked
   on a partition (two on it alone, one on it and another) are all answered
   promptly when it gets a record, one parked on another partition is not
   until that one does; a quiet one and one whose min_bytes is not reached
   answer at max_wait_ms; a partition whose parked fetches have all gone is
   watched again by the next.
2. A STRING with NUL bytes: OffsetCommit metadata with NUL (and other binary)
   bytes is committed (librdkafka's C API too) and OffsetFetch returns the
   exact bytes; a topic name or group id with a NUL byte is answered with an
   error per entry, the connection stays open; ill-formed UTF-8 in a name
   reads as U+FFFD, as Java reads it.
7. compression.type of a topic: a gzip batch produced to a zstd topic is
   stored (and fetched) as zstd; to a topic with compression.type=producer it
   stays gzip; the records read back are the ones produced.
9. Records without a key on a compacted topic (issue 9): Produce v8 answers
   INVALID_RECORD (87) with one record_errors entry per keyless record
   (batch_index, message), and nothing of the batch is stored.
13. Produce requests pipelined on one connection (issue 13: kafka_pg runs a
   connection's later Produce requests while earlier acks=all answers wait
   for the WAL flush): sent in one write, acks=all, acks=1, one refused
   (unknown partition) and an ApiVersions among them, every answer comes in
   request order with consecutive offsets per partition, and every record is
   stored once; a malformed Produce after three pipelined ones closes the
   connection only after their three answers.
14. Answered at once (kafkajs's own suite): records produced with acks=1 are
   in ListOffsets LATEST, and DeleteRecords up to them succeeds, as soon as
   the Produce is answered (kafka_pg's high watermark is the flushed WAL:
   ListOffsets flushes it); FindCoordinator v1 says "NONE" as its error
   message when there is no error, as Kafka does.
15. A member handed its id by MEMBER_ID_REQUIRED (KIP-394) holds up a join
   round, as in Kafka: a stable group's member and two new ones rejoining in
   turn all land in one generation (kafka_pg completed the round without the
   pending one, which then got UNKNOWN_MEMBER_ID).  And it stays pending, as
   in Kafka 4.4, until it joins, leaves or its session ends: a Heartbeat with
   its id is UNKNOWN_MEMBER_ID and it starts no rebalance; a round completed
   at its deadline without it keeps it, and its join with the id afterwards
   is taken (kafka_pg dropped it: UNKNOWN_MEMBER_ID); its session's end
   rebalances nothing (kafka_pg rebalanced), its LeaveGroup rebalances.
   A member of the generation joining again with the protocols it has is
   answered with the generation at once, and nothing rebalances: a follower
   of a Stable group, any member before the leader's SyncGroup (kafka_pg
   started a round, which at its deadline removed the leader); with other
   protocol metadata it starts a round.
16. KIP-848 static membership (librdkafka's 0102 do_test_fenced_member_consumer):
   a member joining with an instance id another member holds gets
   UNRELEASED_INSTANCE_ID and the holder is undisturbed; a heartbeat with it
   from another member id gets FENCED_INSTANCE_ID, with an instance id nobody
   holds UNKNOWN_MEMBER_ID; after the holder leaves with epoch -2 the
   newcomer takes over its partitions and the old member id is fenced
   (kafka_pg gave the newcomer the instance and fenced the holder).
17. max.decompressed.message.bytes (a topic config of Kafka 4.4): a gzip
   batch with a record whose length field is above the limit is
   INVALID_RECORD and nothing of it is stored, one at the limit is stored, an
   uncompressed batch is not checked; 0 and 2147483640 are INVALID_CONFIG.
18. A deleted topic's committed offsets go with it, as Kafka's group coordinator
   deletes them: OffsetFetch after DeleteTopics has none (-1, no error), and a
   topic made again under the name starts with none (kafka_pg kept them: the
   group resumed the new log at the old offset, skipping its first records);
   OffsetFetch v1, v3 and v5 of a topic that does not exist answer -1 with no
   error (kafka_pg: UNKNOWN_TOPIC_OR_PARTITION), OffsetCommit to it
   UNKNOWN_TOPIC_OR_PARTITION.
19. Classic static membership (KIP-345; sarama's functional
   TestFuncConsumerGroupStaticMembership_Fenced): a static member's id is its
   instance id, a dash and a UUID; after a newcomer with the instance id took
   it over, the old member id's JoinGroup with the instance id is
   FENCED_INSTANCE_ID, as its Heartbeat is (kafka_pg: UNKNOWN_MEMBER_ID,
   which sarama answers by joining afresh, fencing the newcomer in turn, back
   and forth); an instance id nobody holds with a member id is
   UNKNOWN_MEMBER_ID.  The same rule for a member that exists (Kafka's
   validateMember): its Heartbeat, SyncGroup or OffsetCommit with another
   member's instance id is FENCED_INSTANCE_ID, with an instance id nobody
   holds UNKNOWN_MEMBER_ID (kafka_pg answered NONE to both).
20. Kafka's internal topics (aiokafka's test_exclude_internal_topics asks
   for __consumer_offsets with auto-creation allowed): never a plain topic a
   client can write to. Metadata allowing auto-creation answers Kafka's
   internal topic (is_internal) or, on kafka_pg, which keeps committed
   offsets in its catalog, UNKNOWN_TOPIC_OR_PARTITION, making nothing
   (kafka_pg made a plain topic, and took a Produce to it); Produce to it
   is refused (Kafka: INVALID_TOPIC_EXCEPTION, kafka_pg: no such topic);
   CreateTopics of __consumer_offsets or __transaction_state makes nothing
   (Kafka: TOPIC_ALREADY_EXISTS, its own; kafka_pg: INVALID_REQUEST
   "Creation of internal topic ... is prohibited."), of __cluster_metadata
   INVALID_REQUEST in those words on both.
21. InitProducerId without a transactional id (platformatic/kafka's
   producer tests): a new producer id at epoch 0 every time, whatever id and
   epoch the request gives (kafka_pg gave the id back with its epoch bumped:
   every platformatic producer, which sends 0 and 0, was producer 0, and a
   second one's first batch was dropped as a duplicate); an id without an
   epoch, or an epoch without an id, INVALID_REQUEST, with a transactional
   id too.
22. OffsetCommit with a generation to a group that does not exist:
   ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9, no group made
   (kafka_pg made the group and answered UNKNOWN_MEMBER_ID).  A KIP-848
   member's OffsetCommit below v9: UNSUPPORTED_VERSION (kafka_pg took it).
   OffsetFetch v9 naming a member of a KIP-848 group: an unknown member
   UNKNOWN_MEMBER_ID, a stale epoch STALE_MEMBER_EPOCH (kafka_pg did not
   check).

Usage: conformance.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import re
import socket
import struct
import sys
import threading
import time
import uuid

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402
from kwire import (TAGS, Reader, array, carray, cstring, i8, i16, i32, i64,  # noqa: E402,F401
                   metadata_v4, nbytes, string, uvarint)

HOST, PORT = sys.argv[1].rsplit(":", 1)
PORT = int(PORT)
RUN = uuid.uuid4().hex[:8]


# ---------------------------------------------------------------- encoding: kwire.py

class Conn:
    """One connection; requests in non-flexible versions only (header v1)."""

    def __init__(self):
        self.s = socket.create_connection((HOST, PORT), timeout=30)
        self.corr = 0

    def send(self, api_key, version, body):
        self.corr += 1
        hdr = struct.pack(">hhi", api_key, version, self.corr) + string(b"conformance")
        msg = hdr + body
        self.s.sendall(i32(len(msg)) + msg)
        return self.corr

    def recv(self, timeout=30):
        self.s.settimeout(timeout)
        head = self._exact(4)
        if head is None:
            return None
        body = self._exact(struct.unpack(">i", head)[0])
        if body is None:
            return None
        r = Reader(body)
        r.corr = r.i32()
        return r

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.s.recv(n - len(buf))
            except (ConnectionResetError, socket.timeout):
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def call(self, api_key, version, body, timeout=30):
        """The response, or None if the server closed the connection (then reconnects)."""
        try:
            self.send(api_key, version, body)
            r = self.recv(timeout)
        except OSError:
            r = None
        if r is None:
            self.s.close()
            self.s = socket.create_connection((HOST, PORT), timeout=30)
        return r

    def call_flex(self, api_key, version, body, timeout=30):
        """A flexible request (header v2); the response after its header's tags."""
        self.corr += 1
        hdr = struct.pack(">hhi", api_key, version, self.corr) + string(b"conformance") + TAGS
        msg = hdr + body
        self.s.sendall(i32(len(msg)) + msg)
        r = self.recv(timeout)
        if r is not None:
            r.tags()
        return r

    def close(self):
        self.s.close()


# ---------------------------------------------------------------- requests

def create_topic(c, name, configs=None, partitions=1, with_message=False):
    """CreateTopics v4; returns the topic's error code (with_message: (error, message bytes))."""
    cfg = [string(k) + string(v) for k, v in (configs or {}).items()]
    t = string(name) + i32(partitions) + i16(1) + array([]) + array(cfg)
    r = c.call(19, 4, array([t]) + i32(30000) + i8(0))
    if r is None:
        return None
    r.i32()  # throttle
    res = r.array(lambda: (r.string(), r.i16(), r.string()))
    return res[0][1:] if with_message else res[0][1]


def produce(c, topic, batch, record_errors=None):
    """Produce v8 of one batch to partition 0; (error code, base offset).
    record_errors, a list, gets the response's (batch_index, message) pairs."""
    pd = i32(0) + nbytes(batch)
    body = string(None) + i16(-1) + i32(30000) + array([string(topic) + array([pd])])
    r = c.call(0, 8, body)
    if r is None:
        return None, None

    def part():
        idx, err, base = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        errs = r.array(lambda: (r.i32(), r.string()))
        r.string()
        if record_errors is not None:
            record_errors.extend(errs or [])
        return err, base
    res = r.array(lambda: (r.string(), r.array(part)))
    return res[0][1][0]


def fetch_body(topics, max_wait_ms, min_bytes=1):
    """Fetch v11 body; topics: [(name, offset)] for partition 0."""
    ts = [string(name) + array([i32(0) + i32(-1) + i64(off) + i64(-1) + i32(1 << 20)])
          for name, off in topics]
    return (i32(-1) + i32(max_wait_ms) + i32(min_bytes) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array(ts) + array([]) + string(""))


def read_fetch(r):
    """A Fetch v11 response: {topic: (error, records bytes)} of partition 0."""
    r.i32(), r.i16(), r.i32()
    out = {}

    def part():
        p, err = r.i32(), r.i16()
        r.i64(), r.i64(), r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        return p, err, r.nbytes()
    for name, parts in r.array(lambda: (r.string(), r.array(part))):
        out[name.decode()] = (parts[0][1], parts[0][2])
    return out


def fetch_until(c, topic, want, timeout=20):
    """Fetch from offset 0 until `want` records came back; the raw records bytes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = c.call(1, 11, fetch_body([(topic, 0)], 500))
        if r is None:
            return None
        err, recs = read_fetch(r)[topic]
        if err == 0 and recs and len(batches(recs)) >= want:
            return recs
        time.sleep(0.2)
    return None


def batches(data):
    """Split a records section into its batches (whole ones only)."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        length = struct.unpack(">i", data[pos + 8:pos + 12])[0]
        if pos + 12 + length > len(data):
            break
        out.append(data[pos:pos + 12 + length])
        pos += 12 + length
    return out


def build_batch(codec, values, pid=-1, epoch=-1, seq=-1, transactional=False):
    """A batch of these values (an idempotent producer's when pid, epoch and seq are given, a
    transactional one's if transactional)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(b.build())


def find_coordinator(c, group, timeout=30):
    """FindCoordinator v1 until the coordinator is available."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = c.call(10, 1, string(group) + i8(0))
        if r is None:
            return None
        r.i32()
        err = r.i16()
        if err == 0:
            return 0
        time.sleep(0.5)
    return err


def offset_commit(c, group, topic, offset, metadata, member="", generation=-1, instance=None):
    """OffsetCommit v5 of partition 0 (the generation given, -1 by default, and the member id given,
    none by default), v7 with a group instance id: partition 0's error."""
    if instance is None:
        version, head, epoch = 5, string(group) + i32(generation) + string(member), b""
    else:
        version, head, epoch = 7, string(group) + i32(generation) + string(member) + string(instance), i32(-1)
    body = head + array([string(topic) + array([i32(0) + i64(offset) + epoch + string(metadata)])])
    r = c.call(8, version, body)
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))
    return res[0][1][0][1]


def topic_id(c, topic):
    """The topic's id, from Metadata v12."""
    body = carray([bytes(16) + cstring(topic) + TAGS]) + i8(0) + i8(0) + TAGS
    r = c.call_flex(3, 12, body)
    r.i32()
    r.carray(lambda: (r.i32(), r.cstring(), r.i32(), r.cstring(), r.tags()))
    r.cstring()
    r.i32()
    n = r.uvarint() - 1
    assert n == 1
    r.i16()
    r.cstring()
    return r.uuid()


def offset_fetch(c, group, topic):
    """OffsetFetch v5 of partition 0: (error, offset, metadata bytes)."""
    r = c.call(9, 5, string(group) + array([string(topic) + array([i32(0)])]))
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i64(), r.i32(), r.string(), r.i16()))))
    _, off, _, md, err = res[0][1][0]
    return err, off, md


# ---------------------------------------------------------------- checks

def check_fetch_deadline():
    """Issue 14 item 1."""
    quiet, busy = f"conf-quiet-{RUN}", f"conf-busy-{RUN}"
    c = Conn()
    create_topic(c, quiet)
    create_topic(c, busy)
    # wait until both are served (a new topic may take a moment on Kafka)
    fetch_until_ready = time.time() + 20
    while time.time() < fetch_until_ready:
        r = c.call(1, 11, fetch_body([(quiet, 0)], 0))
        if r is not None and read_fetch(r)[quiet][0] == 0:
            break
        time.sleep(0.3)
    stop = threading.Event()

    def producer():
        p = Conn()
        while not stop.is_set():
            produce(p, busy, build_batch(0, [b"tick"]))
            stop.wait(0.3)
        p.close()
    t = threading.Thread(target=producer)
    t.start()
    time.sleep(0.5)
    try:
        start = time.time()
        r = c.call(1, 11, fetch_body([(quiet, 0)], 2000), timeout=30)
        took = time.time() - start
        ok = r is not None and read_fetch(r)[quiet][0] == 0
    finally:
        stop.set()
        t.join()
    check("a Fetch with max_wait_ms=2000 on a quiet topic answers after ~2 s while another topic is produced to every 300 ms",
          ok and 1.8 <= took <= 3.0, f"(took {took:.2f} s, response {'ok' if ok else 'missing'})")
    c.close()


def fetch_listing_body(listing, max_wait_ms, min_bytes=1, isolation=0):
    """Fetch v11 body; listing: [(topic, [(partition, offset)])]."""
    ts = [string(t) + array([i32(p) + i32(-1) + i64(o) + i64(-1) + i32(1 << 20) for p, o in parts])
          for t, parts in listing]
    return (i32(-1) + i32(max_wait_ms) + i32(min_bytes) + i32(1 << 20) + i8(isolation) + i32(0) + i32(-1)
            + array(ts) + array([]) + string(""))


def read_fetch_listing(r):
    """A Fetch v11 response: {(topic, partition): (error, records bytes)}."""
    r.i32(), r.i16(), r.i32()
    out = {}

    def part():
        p, err = r.i32(), r.i16()
        r.i64(), r.i64(), r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        return p, err, r.nbytes()
    for name, parts in r.array(lambda: (r.string(), r.array(part))):
        for p, err, recs in parts:
            out[(name.decode(), p)] = (err, recs or b"")
    return out


def produce_to(c, topic, partition, batch):
    """Produce v8 of one batch to one partition: its error code."""
    pd = i32(partition) + nbytes(batch)
    r = c.call(0, 8, string(None) + i16(-1) + i32(30000) + array([string(topic) + array([pd])]))
    if r is None:
        return None
    return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                            r.array(lambda: (r.i32(), r.string())),
                                                            r.string()))))[0][1][0][1]


class ParkedFetch(threading.Thread):
    """A Fetch v11 sent now on a connection of its own; its answer (read_fetch_listing) and
    how long it took once the thread ends."""

    def __init__(self, listing, max_wait_ms, min_bytes=1, isolation=0):
        super().__init__()
        self.c = Conn()
        self.took = None
        self.result = None
        self.sent = time.time()
        self.c.send(1, 11, fetch_listing_body(listing, max_wait_ms, min_bytes, isolation))
        self.start()

    def run(self):
        r = self.c.recv(timeout=60)
        self.took = time.time() - self.sent
        self.result = read_fetch_listing(r) if r is not None else None
        self.c.close()

    def answered_at(self):
        return self.sent + self.took if self.took is not None else None


def check_fetch_by_partition():
    """Issue 13: parked fetches are woken by their own partitions, and by nothing else."""
    topic, other = f"conf-keyed-{RUN}", f"conf-keyed-other-{RUN}"
    c = Conn()
    create_topic(c, topic, partitions=2)
    create_topic(c, other)
    ready = time.time() + 20
    while time.time() < ready:
        r = c.call(1, 11, fetch_listing_body([(topic, [(0, 0), (1, 0)]), (other, [(0, 0)])], 0))
        if r is not None and all(v[0] == 0 for v in read_fetch_listing(r).values()):
            break
        time.sleep(0.3)
    a = ParkedFetch([(topic, [(0, 0)])], 10000)
    b = ParkedFetch([(topic, [(0, 0)])], 10000)         # the same partition, another connection
    p1 = ParkedFetch([(topic, [(1, 0)])], 10000)        # the other partition
    both = ParkedFetch([(topic, [(0, 0), (1, 0)])], 10000)
    quiet = ParkedFetch([(other, [(0, 0)])], 3000)      # a partition nobody writes to
    big = ParkedFetch([(topic, [(0, 0)])], 5000, min_bytes=1 << 20)
    time.sleep(1.0)
    t0 = time.time()
    err = produce_to(c, topic, 0, build_batch(0, [b"to-p0"]))
    for f in (a, b, both):
        f.join(timeout=8)
    fast = [f.took is not None and f.answered_at() - t0 < 2.0 for f in (a, b, both)]
    check("three Fetches parked on partition 0 (two on it alone, one on 0 and 1) are answered within 2 s of a produce to it",
          err == 0 and all(fast), f"(produce error {err}, answered fast: {fast})")
    check("... with the record of partition 0, and nothing of partition 1",
          all(f.result is not None and len(batches(f.result[(topic, 0)][1])) == 1 for f in (a, b, both))
          and both.result is not None and both.result[(topic, 1)] == (0, b""))
    time.sleep(0.5)
    check("a Fetch parked on partition 1 still waits", p1.is_alive())
    t1 = time.time()
    err = produce_to(c, topic, 1, build_batch(0, [b"to-p1"]))
    p1.join(timeout=8)
    check("... and is answered within 2 s of a produce to partition 1, with its record",
          err == 0 and p1.took is not None and p1.answered_at() - t1 < 2.0 and p1.result is not None
          and len(batches(p1.result[(topic, 1)][1])) == 1,
          f"(produce error {err}, took {p1.took})")
    quiet.join(timeout=10)
    check("a Fetch parked on a quiet partition answers at its max_wait_ms (3 s), empty",
          quiet.took is not None and 2.8 <= quiet.took <= 4.5 and quiet.result is not None
          and quiet.result[(other, 0)] == (0, b""), f"(took {quiet.took})")
    big.join(timeout=10)
    check("a Fetch with min_bytes 1 MiB answers at its max_wait_ms (5 s) with the record it has",
          big.took is not None and 4.8 <= big.took <= 6.5 and big.result is not None
          and len(batches(big.result[(topic, 0)][1])) == 1, f"(took {big.took})")
    # the fetches parked on partition 1 are gone (their connections closed): park on it again
    again = ParkedFetch([(topic, [(1, 1)])], 10000)
    time.sleep(0.5)
    t2 = time.time()
    err = produce_to(c, topic, 1, build_batch(0, [b"again"]))
    again.join(timeout=8)
    check("after those answered, a new Fetch parked on partition 1 is woken by a produce to it",
          err == 0 and again.took is not None and again.answered_at() - t2 < 2.0
          and again.result is not None and len(batches(again.result[(topic, 1)][1])) == 1,
          f"(produce error {err}, took {again.took})")
    c.close()


def produce_frame(c, topic, partition, batch, acks):
    """A Produce v8 frame of one batch (not sent); its correlation id is c.corr after."""
    c.corr += 1
    body = string(None) + i16(acks) + i32(30000) + array([string(topic) + array([i32(partition) + nbytes(batch)])])
    msg = struct.pack(">hhi", 0, 8, c.corr) + string(b"conformance") + body
    return i32(len(msg)) + msg


def read_produce(r):
    """(error code, base offset) of the one partition of a Produce v8 response."""
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                          r.array(lambda: (r.i32(), r.string())),
                                                          r.string()))))
    _, err, base = res[0][1][0][:3]
    return err, base


def list_latest(c, topic, partition=0, isolation=0):
    """ListOffsets v4 LATEST of a partition (isolation 1, read_committed: the last stable
    offset): (error code, offset)."""
    body = i32(-1) + i8(isolation) + array([string(topic) + array([i32(partition) + i32(-1) + i64(-1)])])
    r = c.call(2, 4, body)
    if r is None:
        return None, None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i32()))))
    _, err, _, off, _ = res[0][1][0]
    return err, off


def delete_records(c, topic, offset, timeout_ms=30000):
    """DeleteRecords v1 of partition 0 up to offset: (error code, low watermark)."""
    r = c.call(21, 1, array([string(topic) + array([i32(0) + i64(offset)])]) + i32(timeout_ms),
               timeout=timeout_ms / 1000 + 30)
    if r is None:
        return None, None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i64(), r.i16()))))
    _, low, err = res[0][1][0]
    return err, low


def check_answered_at_once():
    """kafkajs's own suite: records produced with acks=1 are in ListOffsets LATEST, and DeleteRecords
    up to them succeeds, as soon as the Produce is answered; FindCoordinator's error message."""
    topic, group = f"conf-acks1-{RUN}", f"conf-acks1-group-{RUN}"
    c = Conn()
    create_topic(c, topic)
    ready = time.time() + 20
    while time.time() < ready and list_latest(c, topic)[0] != 0:
        time.sleep(0.3)
    bad = []
    end = 0
    for i in range(10):
        c.s.sendall(produce_frame(c, topic, 0, build_batch(0, [b"a", b"b", b"c"]), 1))
        err, base = read_produce(c.recv(timeout=30))
        end = base + 3 if err == 0 else end
        got = list_latest(c, topic)
        if err != 0 or got != (0, end):
            bad.append(f"round {i}: produce error {err} base {base}, LATEST {got}")
    check("ListOffsets LATEST right after an acks=1 Produce is answered gives the new log end (10 of 10)",
          not bad, f"({bad[:3]})")
    bad = []
    for i in range(5):
        c.s.sendall(produce_frame(c, topic, 0, build_batch(0, [b"d", b"e"]), 1))
        err, base = read_produce(c.recv(timeout=30))
        got = delete_records(c, topic, base + 2)
        if err != 0 or got != (0, base + 2):
            bad.append(f"round {i}: produce error {err} base {base}, DeleteRecords to {base + 2}: {got}")
    check("DeleteRecords up to the records of an acks=1 Produce just answered succeeds (5 of 5)",
          not bad, f"({bad[:3]})")
    find_coordinator(c, group)
    r = c.call(10, 1, string(group) + i8(0))
    got = None
    if r is not None:
        r.i32()
        got = (r.i16(), r.string())
    check("FindCoordinator v1 answers error message \"NONE\" with no error, as Kafka's", got == (0, b"NONE"),
          f"(got {got})")
    c.close()


RANGE_METADATA = b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"


def join_group(c, group, member, send_only=False, rebalance_ms=30000, session_ms=30000, metadata=RANGE_METADATA,
               instance=None):
    """JoinGroup v5 (session 30 s and rebalance 30 s unless given, protocol "range" with these
    metadata bytes, no group instance id unless given): sends it; unless send_only, returns
    (error, generation, member id)."""
    body = (string(group) + i32(session_ms) + i32(rebalance_ms) + string(member) + string(instance) + string("consumer")
            + array([string("range") + nbytes(metadata)]))
    c.send(11, 5, body)
    return None if send_only else read_join(c)


def read_join(c, timeout=30):
    r = c.recv(timeout)
    if r is None:
        return None
    r.i32()
    err, gen = r.i16(), r.i32()
    r.string(), r.string()
    return err, gen, (r.string() or b"").decode()


def check_pending_members():
    """Members handed an id by MEMBER_ID_REQUIRED (KIP-394) hold up the join round as Kafka's
    hasAllMembersJoined does: two new members of a stable group, and the one already there, land
    in one generation."""
    group = f"conf-pending-{RUN}"
    a, b, c = Conn(), Conn(), Conn()
    find_coordinator(a, group)
    err, _, ida = join_group(a, group, "")
    _, gen1, ida = join_group(a, group, ida) if err == 79 else (err, 0, ida)
    sync_group(a, group, gen1, ida)
    _, _, idb = join_group(b, group, "")
    _, _, idc = join_group(c, group, "")
    join_group(b, group, idb, send_only=True)   # starts a round; it waits for a
    time.sleep(0.3)
    join_group(a, group, ida, send_only=True)   # a is back: only c, still pending, is missing
    time.sleep(0.3)
    join_group(c, group, idc, send_only=True)
    got = [read_join(x) for x in (a, b, c)]
    ok = all(g is not None and g[0] == 0 for g in got) and len({g[1] for g in got}) == 1
    check("a member handed its id by MEMBER_ID_REQUIRED holds up the round: the member already there "
          "and two new ones land in one generation", ok, f"(generation {gen1}, then {got})")
    for x in (a, b, c):
        x.close()


def heartbeat(c, group, generation, member, instance=None):
    """Heartbeat v3 (no group instance id unless given): the error code, None if no answer."""
    r = c.call(12, 3, string(group) + i32(generation) + string(member) + string(instance))
    if r is None:
        return None
    r.i32()
    return r.i16()


def sync_group(c, group, generation, member, assignments=(), instance=None):
    """SyncGroup v3 (no group instance id unless given): the error code, None if no answer."""
    r = c.call(14, 3, string(group) + i32(generation) + string(member) + string(instance)
               + array([string(m) + nbytes(b"") for m in assignments]))
    if r is None:
        return None
    r.i32()
    return r.i16()


def leave_group(c, group, member):
    """LeaveGroup v3 of one member: (error, the member's error), None if no answer."""
    r = c.call(13, 3, string(group) + array([string(member) + string(None)]))
    if r is None:
        return None
    r.i32()
    err = r.i16()
    members = r.array(lambda: (r.string(), r.string(), r.i16()))
    return err, members[0][2] if members else None


def lone_leader(c, group, rebalance_ms):
    """c's member joins group alone (taking the id MEMBER_ID_REQUIRED hands it) and syncs, leading:
    returns (generation, member id)."""
    find_coordinator(c, group)
    err, _, mid = join_group(c, group, "", rebalance_ms=rebalance_ms)
    _, gen, mid = join_group(c, group, mid, rebalance_ms=rebalance_ms) if err == 79 else (err, 0, mid)
    sync_group(c, group, gen, mid, [mid])
    return gen, mid


def check_static_classic():
    """Classic static membership (KIP-345) as Kafka 4.4's coordinator: a static member's id is its
    instance id, a dash and a UUID; a newcomer with the instance id and no member id takes the
    instance over; the old member id joining again with the instance id is FENCED_INSTANCE_ID (as
    its heartbeat is), not UNKNOWN_MEMBER_ID, which told sarama's consumer to join afresh and
    fence the newcomer in turn, back and forth; an instance id nobody holds with a member id is
    UNKNOWN_MEMBER_ID."""
    group = f"conf-static-classic-{RUN}"
    inst = f"inst-{RUN}"
    a, b = Conn(), Conn()
    find_coordinator(a, group)
    got = join_group(a, group, "", rebalance_ms=3000, instance=inst)
    ida = got[2] if got else ""
    synced = sync_group(a, group, got[1], ida, [ida]) if got else None
    check("a static member joins alone (no MEMBER_ID_REQUIRED) with an id of its instance id, a dash "
          "and a UUID, as Kafka's", got is not None and got[0] == 0 and synced == 0 and
          re.fullmatch(re.escape(inst) + r"-[0-9a-f-]{36}", ida) is not None, f"(join {got}, sync {synced})")
    got_b = join_group(b, group, "", rebalance_ms=3000, instance=inst)
    idb = got_b[2] if got_b else ""
    check("a newcomer with the instance id and no member id takes the instance over with a new id",
          got_b is not None and got_b[0] == 0 and idb not in ("", ida) and idb.startswith(inst + "-"),
          f"(join {got_b})")
    hb = heartbeat(a, group, got[1] if got else -1, ida, inst)
    rejoin = join_group(a, group, ida, rebalance_ms=3000, instance=inst)
    check("the old member id then gets FENCED_INSTANCE_ID (82) from a heartbeat and from a JoinGroup "
          "with the instance id", hb == 82 and rejoin is not None and rejoin[0] == 82,
          f"(heartbeat {hb}, join {rejoin})")
    hb = heartbeat(b, group, got_b[1] if got_b else -1, idb, inst)
    other = join_group(a, group, ida, rebalance_ms=3000, instance=inst + "-nobody")
    check("the newcomer is undisturbed (heartbeat NONE); a member id with an instance id nobody holds "
          "is UNKNOWN_MEMBER_ID (25)", hb == 0 and other is not None and other[0] == 25,
          f"(heartbeat {hb}, join {other})")
    for x in (a, b):
        x.close()


def check_static_classic_existing():
    """Kafka 4.4's validateMember for a Heartbeat, SyncGroup and OffsetCommit from a member that
    exists: with a group instance id, the member holding that instance decides, whoever asks
    (another member: FENCED_INSTANCE_ID; nobody: UNKNOWN_MEMBER_ID); kafka_pg answered NONE to a
    member that sent an instance id other than its own."""
    group = f"conf-static-existing-{RUN}"
    inst_a, inst_b = f"inst-a-{RUN}", f"inst-b-{RUN}"
    topic = f"conf-static-existing-{RUN}"
    a, b = Conn(), Conn()
    find_coordinator(a, group)
    got = join_group(a, group, "", rebalance_ms=3000, instance=inst_a)
    ida = got[2] if got else ""
    sync_group(a, group, got[1] if got else -1, ida, [ida], instance=inst_a)
    join_group(b, group, "", rebalance_ms=3000, instance=inst_b, send_only=True)
    time.sleep(0.3)
    join_group(a, group, ida, rebalance_ms=3000, instance=inst_a, send_only=True)
    ja, jb = read_join(a), read_join(b)
    gen = ja[1] if ja else -1
    idb = jb[2] if jb else ""
    synced = (sync_group(a, group, gen, ida, [ida, idb], instance=inst_a),
              sync_group(b, group, gen, idb, instance=inst_b))
    check("two static members land in one generation", ja is not None and jb is not None and ja[0] == 0
          and jb[0] == 0 and ja[1] == jb[1] and synced == (0, 0), f"(joins {ja}, {jb}, syncs {synced})")
    hbs = (heartbeat(a, group, gen, ida, inst_b), heartbeat(a, group, gen, ida, inst_a + "-nobody"),
           heartbeat(a, group, gen, ida, inst_a))
    check("a member's heartbeat with another member's instance id is FENCED_INSTANCE_ID (82), with an "
          "instance id nobody holds UNKNOWN_MEMBER_ID (25), with its own NONE",
          hbs == (82, 25, 0), f"(heartbeats {hbs})")
    syncs = (sync_group(a, group, gen, ida, instance=inst_b),
             sync_group(a, group, gen, ida, instance=inst_a + "-nobody"))
    check("the same for its SyncGroup (82, 25)", syncs == (82, 25), f"(syncs {syncs})")

    create_topic(a, topic)
    commits = tuple(offset_commit(a, group, topic, 1, "", ida, gen, inst)
                    for inst in (inst_b, inst_a + "-nobody", inst_a))
    check("and for its OffsetCommit (82, 25, its own NONE)", commits == (82, 25, 0), f"(commits {commits})")
    for x in (a, b):
        x.close()


def check_pending_kept():
    """A pending member (KIP-394: handed its id by MEMBER_ID_REQUIRED, not yet joined with it) is
    kept as Kafka 4.4 keeps it, until it joins, leaves or its session ends: it is no member for a
    heartbeat (UNKNOWN_MEMBER_ID) and starts no rebalance; a join round it does not come back to
    waits for it until the round's deadline and completes without it, and keeps it; when it
    joins with its id afterwards it is taken (a new round), not UNKNOWN_MEMBER_ID; when its
    session ends it is gone (its id is UNKNOWN_MEMBER_ID) and nothing rebalances; when it leaves,
    NONE, and the group rebalances (Kafka 4.4 does)."""
    group = f"conf-pending-kept-{RUN}"
    a, p = Conn(), Conn()
    gen1, ida = lone_leader(a, group, 2000)
    err, _, idp = join_group(p, group, "", rebalance_ms=2000)
    got = (err, heartbeat(a, group, gen1, ida), heartbeat(p, group, gen1, idp))
    check("a member handed its id by MEMBER_ID_REQUIRED starts no rebalance, and is no member for a "
          "heartbeat (UNKNOWN_MEMBER_ID)", got == (79, 0, 25), f"(got {got})")
    t0 = time.time()
    got = join_group(a, group, ida, rebalance_ms=2000)    # the leader rejoins: a round
    took = time.time() - t0
    check("a round it does not come back to waits for it until the deadline (2 s), then completes "
          "without it", got is not None and got[0] == 0 and got[1] > gen1 and took >= 1.5,
          f"(got {got} after {took:.1f} s)")
    gen2 = got[1] if got else -1
    sync_group(a, group, gen2, ida, [ida])
    join_group(p, group, idp, send_only=True, rebalance_ms=2000)   # comes back with its id
    time.sleep(0.5)
    hb = heartbeat(a, group, gen2, ida)
    got_a = join_group(a, group, ida, rebalance_ms=2000) if hb == 27 else None
    got_p = read_join(p)
    check("when it joins with its id after that round, it is taken: a new round (the member there "
          "is told REBALANCE_IN_PROGRESS) and both land in it", hb == 27 and got_a is not None
          and got_p is not None and got_a[0] == 0 and got_p[0] == 0 and got_a[1] == got_p[1] > gen2,
          f"(heartbeat {hb}, joins {got_a}, {got_p})")
    gen3 = got_a[1] if got_a else -1
    leader = ida if got_a and sync_group(a, group, gen3, ida, [ida, idp]) == 0 else None
    sync_group(p, group, gen3, idp)
    q = Conn()
    err, _, idq = join_group(q, group, "", rebalance_ms=2000, session_ms=6000)
    hbs = []
    for _ in range(8):             # q's session (6 s) ends meanwhile
        time.sleep(1)
        hbs.append(heartbeat(a, group, gen3, ida))
        heartbeat(p, group, gen3, idp)
    got = join_group(q, group, idq, rebalance_ms=2000)
    check("when its session ends it is gone (its id is UNKNOWN_MEMBER_ID) and nothing rebalances",
          leader is not None and err == 79 and hbs == [0] * 8 and got is not None and got[0] == 25,
          f"(join {err}, heartbeats {hbs}, then join {got})")
    err, _, idq = join_group(q, group, "", rebalance_ms=2000)
    lv = leave_group(q, group, idq)
    hb = heartbeat(a, group, gen3, ida)
    check("a pending member that leaves is removed (NONE), and the group rebalances as Kafka 4.4's does",
          err == 79 and lv == (0, 0) and hb == 27, f"(join {err}, leave {lv}, heartbeat {hb})")
    for x in (a, p, q):
        x.close()


def check_rejoin_answered():
    """A member of the generation that joins again with the protocols it has (its JoinGroup answer
    was lost, say) is answered at once with the generation, and nothing rebalances, as Kafka 4.4's
    classicGroupJoinExistingMember: a follower of a Stable group; any member while the group waits
    for the leader's SyncGroup. A follower with other protocol metadata starts a round (the leader
    of a Stable group does too: check_pending_kept)."""
    group = f"conf-rejoin-{RUN}"
    a, b = Conn(), Conn()
    gen1, ida = lone_leader(a, group, 3000)
    err, _, idb = join_group(b, group, "", rebalance_ms=3000)
    join_group(b, group, idb, send_only=True, rebalance_ms=3000)
    time.sleep(0.3)
    hb = heartbeat(a, group, gen1, ida)
    got_a = join_group(a, group, ida, rebalance_ms=3000)
    got_b = read_join(b)
    gen2 = got_a[1] if got_a else -1
    synced = (sync_group(a, group, gen2, ida, [ida, idb]), sync_group(b, group, gen2, idb))
    check("two members, a leading, stable in one generation", err == 79 and hb == 27 and got_a and got_b
          and got_a[0] == got_b[0] == 0 and got_a[1] == got_b[1] > gen1 and synced == (0, 0),
          f"(join {err}, heartbeat {hb}, joins {got_a}, {got_b}, syncs {synced})")
    t0 = time.time()
    got = join_group(b, group, idb, rebalance_ms=3000)
    took = time.time() - t0
    hb = heartbeat(a, group, gen2, ida)
    check("the follower joins again with the protocols it has: answered at once with the generation, "
          "and the group does not rebalance (the leader's heartbeat NONE)",
          got == (0, gen2, idb) and took < 1.5 and hb == 0, f"(got {got} after {took:.1f} s, heartbeat {hb})")
    join_group(b, group, idb, send_only=True, rebalance_ms=3000, metadata=RANGE_METADATA + b"\x00")
    time.sleep(0.3)
    hb = heartbeat(a, group, gen2, ida)
    got_a = join_group(a, group, ida, rebalance_ms=3000)
    got_b = read_join(b)
    gen3 = got_a[1] if got_a else -1
    check("the follower joins again with other protocol metadata: a round (the leader's heartbeat "
          "REBALANCE_IN_PROGRESS), both in the next generation", hb == 27 and got_a and got_b and
          got_a[0] == got_b[0] == 0 and got_a[1] == got_b[1] > gen2, f"(heartbeat {hb}, joins {got_a}, {got_b})")
    t0 = time.time()
    got_b = join_group(b, group, idb, rebalance_ms=3000, metadata=RANGE_METADATA + b"\x00")
    got_a = join_group(a, group, ida, rebalance_ms=3000)
    took = time.time() - t0
    synced = (sync_group(a, group, gen3, ida, [ida, idb]), sync_group(b, group, gen3, idb))
    check("before the leader's SyncGroup, the follower and the leader join again with the protocols "
          "they have: each answered at once with the generation, which both then sync",
          got_b == (0, gen3, idb) and got_a == (0, gen3, ida) and took < 1.5 and synced == (0, 0),
          f"(joins {got_b}, {got_a} after {took:.1f} s, syncs {synced})")
    for x in (a, b):
        x.close()


def cg_heartbeat(c, group, member, epoch, instance, topics=None):
    """ConsumerGroupHeartbeat v1 (KIP-848); returns (error, member id, member epoch, partitions
    assigned or None)."""
    tops = carray([cstring(t) for t in topics]) if topics is not None else uvarint(0)
    body = (cstring(group) + cstring(member) + i32(epoch) + cstring(instance) + cstring(None)
            + i32(30000 if epoch == 0 else -1) + tops + cstring(None) + cstring(None)
            + (carray([]) if epoch == 0 else uvarint(0)) + TAGS)
    r = c.call_flex(68, 1, body)
    if r is None:
        return None
    r.i32()
    err, _msg = r.i16(), r.cstring()
    mid, mepoch, _interval = r.cstring(), r.i32(), r.i32()
    parts = None
    if r.i8() >= 0:   # Assignment: [TopicId, [partition]]
        parts = []
        for _ in range(r.uvarint() - 1):
            r.uuid()
            parts += r.carray(r.i32) or []
            r.tags()
    return err, (mid or b"").decode(), mepoch, parts


def check_static_consumer():
    """KIP-848 static membership as Kafka's coordinator checks it: while a member holds an instance
    id, another joining with it gets UNRELEASED_INSTANCE_ID (111) and the holder is not disturbed;
    a heartbeat with that instance id from another member id gets FENCED_INSTANCE_ID (82), with an
    instance id nobody holds UNKNOWN_MEMBER_ID (25); once the holder leaves with epoch -2 the
    newcomer takes its place and partitions, and the old member id is fenced."""
    group, topic, inst = f"conf-static-{RUN}", f"conf-static-{RUN}", f"inst-{RUN}"
    c = Conn()
    create_topic(c, topic, partitions=2)
    find_coordinator(c, group)
    a, b, x = (uuid.uuid4().hex[:22] for _ in range(3))
    got = cg_heartbeat(c, group, a, 0, inst, [topic])
    deadline = time.time() + 30
    while got is not None and got[0] == 0 and time.time() < deadline:
        if got[3] is not None and len(got[3]) == 2:   # Kafka may take a moment to assign
            break
        time.sleep(0.5)
        got = cg_heartbeat(c, group, a, got[2], inst)
    ok = got is not None and got[0] == 0 and got[2] > 0 and got[3] is not None and len(got[3]) == 2
    check("a static member joins (ConsumerGroupHeartbeat v1, epoch 0) and is given both partitions", ok, f"(got {got})")
    if not ok:
        c.close()
        return
    ea = got[2]
    got = cg_heartbeat(c, group, b, 0, inst, [topic])
    check("a second member joining with the held instance id gets UNRELEASED_INSTANCE_ID (111)",
          got is not None and got[0] == 111, f"(got {got})")
    got = cg_heartbeat(c, group, b, 1, inst)
    check("a heartbeat with the instance id from another member id gets FENCED_INSTANCE_ID (82)",
          got is not None and got[0] == 82, f"(got {got})")
    got = cg_heartbeat(c, group, x, 1, f"nobody-{RUN}")
    check("a heartbeat with an instance id nobody holds gets UNKNOWN_MEMBER_ID (25)",
          got is not None and got[0] == 25, f"(got {got})")
    got = cg_heartbeat(c, group, a, ea, inst)
    check("the holder's next heartbeat is answered as before, same epoch",
          got is not None and got[0] == 0 and got[2] == ea, f"(epoch {ea}, got {got})")
    got = cg_heartbeat(c, group, a, -2, inst)
    check("the holder leaves with epoch -2", got is not None and got[0] == 0 and got[2] == -2,
          f"(got {got})")
    got = cg_heartbeat(c, group, b, 0, inst, [topic])
    check("then the second member joins with the instance id and gets the holder's 2 partitions",
          got is not None and got[0] == 0 and got[2] > 0 and got[3] is not None and len(got[3]) == 2,
          f"(got {got})")
    got = cg_heartbeat(c, group, a, ea, inst)
    check("the old member id is then fenced: FENCED_INSTANCE_ID (82)", got is not None and got[0] == 82,
          f"(got {got})")
    c.close()


def check_max_decompressed():
    """max.decompressed.message.bytes (Kafka 4.4): a compressed batch carrying a record whose length
    field is above the topic's limit is INVALID_RECORD and not stored; at the limit it is stored;
    an uncompressed batch is not checked; the limit's range is 1 to 2147483639."""
    c = Conn()
    topic = f"conf-maxdec-{RUN}"
    err = create_topic(c, topic, {"max.decompressed.message.bytes": "100"})
    check("a topic with max.decompressed.message.bytes 100 is created", err == 0, f"(error {err})")

    def one(codec, value):
        pd = i32(0) + nbytes(build_batch(codec, [value]))
        r = c.call(0, 8, string(None) + i16(-1) + i32(30000) + array([string(topic) + array([pd])]))
        return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                                r.array(lambda: (r.i32(), r.string())),
                                                                r.string()))))[0][1][0][1]
    # a record with a null key, no headers and a value of 64 to 8191 bytes has a body of value + 7
    got = (one(1, b"a" * 93), one(1, b"b" * 94), one(0, b"c" * 500), one(1, b"d" * 10))
    check("gzip batches: a record of 100 bytes (its length field) is stored, one of 101 is "
          "INVALID_RECORD (87); an uncompressed 507-byte record is stored", got == (0, 87, 0, 0), f"(got {got})")
    vals = records_of(fetch_until(c, topic, 3) or b"")
    check("the partition holds the three accepted records in order, none of the refused batch",
          [len(v) for v in vals] == [93, 500, 10], f"(value sizes {[len(v) for v in vals]})")
    got = [create_topic(c, f"conf-maxdec-{v}-{RUN}", {"max.decompressed.message.bytes": v})
           for v in ("0", "1", "2147483639", "2147483640")]
    check("max.decompressed.message.bytes 0 and 2147483640 are INVALID_CONFIG (40), 1 and 2147483639 "
          "are accepted", got == [40, 0, 0, 40], f"(got {got})")
    c.close()


def check_pipelined_produce():
    """Issue 13: Produce requests pipelined on one connection are answered in order."""
    topic = f"conf-pipe-{RUN}"
    c = Conn()
    create_topic(c, topic, partitions=2)
    ready = time.time() + 20
    while time.time() < ready:
        r = c.call(1, 11, fetch_listing_body([(topic, [(0, 0), (1, 0)])], 0))
        if r is not None and all(v[0] == 0 for v in read_fetch_listing(r).values()):
            break
        time.sleep(0.3)
    # (partition, acks) per Produce; partition 7 does not exist; None: an ApiVersions v0
    plan = [(0, -1), (1, -1), (0, -1), (0, 1), (1, -1), (7, -1), None, (0, -1), (1, 1), (0, -1)]
    data, want = b"", []
    for i, p in enumerate(plan):
        if p is None:
            c.corr += 1
            msg = struct.pack(">hhi", 18, 0, c.corr) + string(b"conformance")
            data += i32(len(msg)) + msg
            want.append((c.corr, None))
        else:
            data += produce_frame(c, topic, p[0], build_batch(0, [b"pipelined-%d" % i]), p[1])
            want.append((c.corr, p[0]))
    c.s.sendall(data)
    got, order_ok, errs = [], True, []
    next_off = {0: 0, 1: 0}
    for corr, part in want:
        r = c.recv(timeout=30)
        if r is None:
            order_ok = False
            break
        if r.corr != corr:
            order_ok = False
        if part is None:
            got.append(("api_versions", r.i16()))
            continue
        err, base = read_produce(r)
        got.append((part, err, base))
        if part == 7:
            if err != 3:
                errs.append(f"partition 7: error {err}")
        elif err != 0 or base != next_off[part]:
            errs.append(f"partition {part}: error {err} offset {base}, wanted {next_off[part]}")
        else:
            next_off[part] += 1
    check("10 requests pipelined on one connection (Produce acks=all and acks=1 to two partitions, one to an unknown partition, an ApiVersions) are answered in request order",
          order_ok and len(got) == len(want), f"(got {got})")
    check("... every Produce with its own error code and consecutive offsets per partition",
          order_ok and not errs, f"({errs}; got {got})")
    stored = {}
    for p in (0, 1):
        r = c.call(1, 11, fetch_listing_body([(topic, [(p, 0)])], 0))
        stored[p] = len(batches(read_fetch_listing(r)[(topic, p)][1])) if r is not None else None
    check("... and every record is stored once (5 in partition 0, 3 in partition 1)",
          stored == {0: 5, 1: 3}, f"(batches stored: {stored})")
    c.close()

    c = Conn()
    data = b"".join(produce_frame(c, topic, 0, build_batch(0, [b"before-bad-%d" % i]), -1) for i in range(3))
    c.corr += 1
    bad = struct.pack(">hhi", 0, 8, c.corr) + string(b"conformance") + b"\xff\xff\x00"
    c.s.sendall(data + i32(len(bad)) + bad)
    answers = []
    for i in range(3):
        r = c.recv(timeout=30)
        if r is None:
            break
        answers.append((r.corr, read_produce(r)))
    tail = c.recv(timeout=30)
    check("three pipelined Produce acks=all then a malformed Produce: the three are answered, then the connection is closed",
          [a[0] for a in answers] == [1, 2, 3] and all(a[1][0] == 0 for a in answers) and tail is None,
          f"(answers {answers}, then {'EOF' if tail is None else 'a response'})")
    c.close()


def check_nul_strings():
    """Issue 14 item 2."""
    topic, group = f"conf-nul-{RUN}", f"conf-nul-group-{RUN}"
    c = Conn()
    create_topic(c, topic)
    check("FindCoordinator for the group", find_coordinator(c, group) == 0)
    # valid UTF-8 (Kafka decodes a STRING as UTF-8, so other bytes would not come back from it)
    for md in (b"a\x00b", b"\x00", "\x00\x01\x02 bin\u00e4ry \x00 tail".encode()):
        err = None
        for _ in range(20):
            err = offset_commit(c, group, topic, 42, md)
            if err not in (14, 15, 16):  # coordinator loading / not available / not coordinator
                break
            time.sleep(0.5)
        check(f"OffsetCommit with metadata {md!r} succeeds", err == 0, f"(error {err})")
        got = offset_fetch(c, group, topic)
        check(f"OffsetFetch returns metadata {md!r} byte for byte",
              got is not None and got[0] == 0 and got[1] == 42 and got[2] == md, f"(got {got})")
    # the client that commits binary metadata: librdkafka's C API (bindings such as
    # confluent-kafka's Python refuse a str with NUL before it reaches librdkafka)
    md = b"librdkafka\x00binary\x01\x00metadata"
    err = librdkafka_commit(topic, f"{group}-rdk", 7, md)
    check("librdkafka commits binary offset metadata", err == 0, f"(error {err})")
    # read back raw: librdkafka 2.0.2's rd_kafka_committed copies the metadata as a C string
    # (bytes after the first NUL come back garbled, from Kafka 4.4 just the same)
    got = offset_fetch(c, f"{group}-rdk", topic)
    check("OffsetFetch returns librdkafka's binary metadata byte for byte", got == (0, 7, md),
          f"(got {got})")
    # a topic name with a NUL byte: refused with a Kafka error, the connection stays open
    err = create_topic(c, b"bad\x00name-" + RUN.encode())
    check("CreateTopics of a name with a NUL byte is refused with a Kafka error, not a closed connection",
          err is not None and err != 0, f"(error {err})")
    r = c.call(10, 1, string(group) + i8(0))
    check("the connection still serves after that", r is not None)
    # other names: Kafka takes any group id (kafka_pg cannot store a NUL in text and answers
    # INVALID_REQUEST); a topic name with NUL is never valid.  Both answer, per entry.
    err = offset_commit(c, group + "\x00x", topic, 1, "m")
    check("OffsetCommit with a NUL in the group id is answered per partition, the connection kept",
          err is not None, f"(error {err})")
    # ill-formed UTF-8 in a name is read as Java reads it (U+FFFD), so a group id sent with a
    # 0xff byte is the group "\ufffd" on both brokers, and never invalid text in PostgreSQL
    bad = group.encode() + b"-\xff"
    err = None
    for _ in range(20):
        err = offset_commit(c, bad, topic, 5, "m")
        if err not in (14, 15, 16):
            break
        time.sleep(0.5)
    got = offset_fetch(c, (group + "-\ufffd").encode(), topic)
    check("a group id with ill-formed UTF-8 is the group with U+FFFD in its place, as in Kafka",
          err == 0 and got is not None and got[:2] == (0, 5), f"(commit {err}, fetch {got})")
    err, _ = produce(c, b"bad\x00topic-" + RUN.encode(), build_batch(0, [b"v"]))
    check("Produce to a topic name with a NUL byte gets a partition error, the connection kept",
          err is not None and err != 0, f"(error {err})")
    c.close()


def librdkafka_commit(topic, group, offset, metadata):
    """Commit (topic, 0, offset, metadata) with librdkafka's C API (ctypes over librdkafka.so.1,
    as a C client does); its error code."""
    import ctypes

    class TP(ctypes.Structure):
        _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32), ("offset", ctypes.c_int64),
                    ("metadata", ctypes.c_void_p), ("metadata_size", ctypes.c_size_t),
                    ("opaque", ctypes.c_void_p), ("err", ctypes.c_int), ("_private", ctypes.c_void_p)]

    class TPList(ctypes.Structure):
        _fields_ = [("cnt", ctypes.c_int), ("size", ctypes.c_int), ("elems", ctypes.POINTER(TP))]

    lib = ctypes.CDLL("librdkafka.so.1")
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_topic_partition_list_new.restype = ctypes.POINTER(TPList)
    lib.rd_kafka_topic_partition_list_add.restype = ctypes.POINTER(TP)
    lib.rd_kafka_topic_partition_list_add.argtypes = [ctypes.POINTER(TPList), ctypes.c_char_p, ctypes.c_int32]
    lib.rd_kafka_commit.argtypes = [ctypes.c_void_p, ctypes.POINTER(TPList), ctypes.c_int]
    lib.rd_kafka_consumer_close.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_topic_partition_list_destroy.argtypes = [ctypes.POINTER(TPList)]
    lib.rd_kafka_mem_malloc.restype = ctypes.c_void_p
    lib.rd_kafka_mem_malloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for k, v in (("bootstrap.servers", f"{HOST}:{PORT}"), ("group.id", group),
                 ("enable.auto.commit", "false"), ("broker.address.family", "v4")):
        if lib.rd_kafka_conf_set(conf, k.encode(), v.encode(), errstr, 512) != 0:
            return ("conf", errstr.value)
    rk = lib.rd_kafka_new(1, conf, errstr, 512)  # RD_KAFKA_CONSUMER
    if not rk:
        return ("new", errstr.value)
    offsets = lib.rd_kafka_topic_partition_list_new(1)
    tp = lib.rd_kafka_topic_partition_list_add(offsets, topic.encode(), 0)
    tp.contents.offset = offset
    buf = lib.rd_kafka_mem_malloc(rk, len(metadata))  # the list frees it
    ctypes.memmove(buf, metadata, len(metadata))
    tp.contents.metadata = buf
    tp.contents.metadata_size = len(metadata)
    err = lib.rd_kafka_commit(rk, offsets, 0)
    lib.rd_kafka_topic_partition_list_destroy(offsets)
    lib.rd_kafka_consumer_close(rk)
    lib.rd_kafka_destroy(rk)
    return err


def records_of(data):
    out = []
    for raw in batches(data):
        b = DefaultRecordBatch(raw)
        for rec in b:
            out.append(rec.value)
    return out


def check_topic_compression():
    """Issue 14 item 7."""
    c = Conn()
    values = [b"value %d " % i + b"x" * 200 for i in range(20)]
    for conf, want_codec, name in (("zstd", 4, "zstd"), ("producer", 1, "gzip"), ("lz4", 3, "lz4"),
                                   ("uncompressed", 0, "none")):
        topic = f"conf-comp-{conf}-{RUN}"
        err = create_topic(c, topic, {"compression.type": conf})
        check(f"create a topic with compression.type={conf}", err == 0, f"(error {err})")
        for _ in range(40):
            err, base = produce(c, topic, build_batch(1, values))  # gzip
            if err != 3:  # UNKNOWN_TOPIC_OR_PARTITION while the topic comes up
                break
            time.sleep(0.3)
        check(f"produce a gzip batch to the {conf} topic", err == 0 and base == 0, f"(error {err}, base {base})")
        recs = fetch_until(c, topic, 1)
        got = batches(recs) if recs else []
        codec = (struct.unpack(">h", got[0][21:23])[0] & 7) if got else None
        check(f"the batch is stored as {name} (compression.type={conf})", codec == want_codec,
              f"(stored codec {codec})")
        if got:
            base_offset, = struct.unpack(">q", got[0][0:8])
            delta, = struct.unpack(">i", got[0][23:27])
            pid, epoch, seq, count = struct.unpack(">qhii", got[0][43:61])
            check(f"the stored batch keeps offsets, producer fields and count (compression.type={conf})",
                  (base_offset, delta, pid, epoch, seq, count) == (0, len(values) - 1, -1, -1, -1, len(values)),
                  f"(got {(base_offset, delta, pid, epoch, seq, count)})")
        check(f"the records read back are those produced (compression.type={conf})",
              recs is not None and records_of(recs) == values)
        got = client_read(topic, len(values))
        check(f"librdkafka reads the records back (compression.type={conf})", got == values,
              f"(got {len(got)} records)")
        if os.environ.get("PGDATABASE"):
            import psycopg2
            with psycopg2.connect("") as pg, pg.cursor() as cur:
                cur.execute("SELECT compression, record_count, crc_valid FROM kafka.dump_log(%s, 0)", (topic,))
                rows = cur.fetchall()
            check(f"kafka.dump_log shows the stored batch as {name} (compression.type={conf})",
                  rows == [(name, len(values), True)], f"(got {rows})")
    c.close()


def client_read(topic, n, timeout=20):
    """The values of partition 0 of topic, read with librdkafka (confluent-kafka)."""
    from confluent_kafka import Consumer, TopicPartition
    cons = Consumer({"bootstrap.servers": f"{HOST}:{PORT}", "group.id": f"conf-{RUN}",
                     "enable.auto.commit": False, "broker.address.family": "v4"})
    cons.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = cons.poll(1.0)
        if m is not None and not m.error():
            out.append(m.value())
    cons.close()
    return out


def check_keyless_on_compacted():
    c = Conn()
    topic = f"compacted-{RUN}".encode()
    err = create_topic(c, topic, {"cleanup.policy": "compact"})
    check("create a compacted topic", err == 0, f"(error {err})")
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    now = int(time.time() * 1000)
    for i, key in enumerate((b"k1", None, b"k2", None)):
        b.append(i, timestamp=now, key=key, value=b"v%d" % i, headers=[])
    errs = []
    err, base = produce(c, topic, bytes(b.build()), errs)
    check("a batch with keyless records to a compacted topic is INVALID_RECORD (87)",
          err == 87, f"(error {err}, base {base})")
    check("record_errors names each keyless record by its index in the batch",
          [i for i, _ in errs] == [1, 3] and all(m for _, m in errs), f"({errs})")
    err, base = produce(c, topic, _keyed_batch(b"k", b"v"))
    check("a keyed record is accepted, at offset 0 (nothing of the refused batch was stored)",
          err == 0 and base == 0, f"(error {err}, base {base})")
    c.close()


def _keyed_batch(key, value):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    b.append(0, timestamp=int(time.time() * 1000), key=key, value=value, headers=[])
    return bytes(b.build())


def check_simple_commits():
    """A commit with generation -1 (admin client, assign() consumers) is taken while the group
    has no members, whatever member id it carries: librdkafka's consumer protocol sends its own
    random id (its tests 0014, 0030, 0051, 0099, 0130, 0140 in that mode). An unknown topic keeps
    its own error, not the group's."""
    c = Conn()
    topic = f"conf-simple-{RUN}"
    check("CreateTopics for the simple-commit checks", create_topic(c, topic) == 0)
    group = f"conf-simple-group-{RUN}"
    check("FindCoordinator for the group", find_coordinator(c, group) == 0)
    err = offset_commit(c, group, topic, 5, "", member="rdkafka-0a1b2c3d")
    check("OffsetCommit with generation -1 and a member id to an empty group is taken", err == 0,
          f"(error {err})")
    got = offset_fetch(c, group, topic)
    check("... and OffsetFetch returns it", got is not None and got[:2] == (0, 5), f"(got {got})")
    err = offset_commit(c, f"{group}-2", f"conf-no-such-topic-{RUN}", 5, "", member="rdkafka-0a1b2c3d")
    check("OffsetCommit to an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION, not the group's error",
          err == 3, f"(error {err})")
    # A member's commit (a generation) to a group that does not exist: Kafka's validateOffsetCommit
    # answers GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before, and makes no group
    # (kafka_pg made one and answered UNKNOWN_MEMBER_ID until 2026-12-07)
    tid = topic_id(c, topic)
    got = [offset_commit(c, f"{group}-none-5", topic, 1, "", member="m", generation=3)]
    got += [offset_commit_flex(c, v, f"{group}-none-{v}", topic, tid, 3, m) for v in (8, 9, 10)
            for m in ("m", "")]
    check("OffsetCommit with a generation to a group that does not exist: ILLEGAL_GENERATION (22) at v5 "
          "and v8, GROUP_ID_NOT_FOUND (69) at v9 and v10, with or without a member id",
          got == [22, 22, 22, 69, 69, 69, 69], f"(got {got})")
    got = offset_commit_flex(c, 9, f"{group}-none-9", topic, tid, 3, "m")
    check("... and no group was made: the same again", got == 69, f"(got {got})")
    c.close()


def check_member_commits():
    """A KIP-848 member commits with OffsetCommit v9+: an older version is UNSUPPORTED_VERSION (35)
    whatever its epoch, as Kafka's ConsumerGroup.validateOffsetCommit answers (kafka_pg took it until
    2026-12-07); at v9 and v10 its epoch NONE, a stale one STALE_MEMBER_EPOCH (113). OffsetFetch v9
    checks the member it names the same way."""
    c = Conn()
    topic, group = f"conf-848commit-{RUN}", f"conf-848commit-group-{RUN}"
    create_topic(c, topic)
    find_coordinator(c, group)
    got = cg_heartbeat(c, group, f"m-{RUN}", 0, None, [topic])
    check("a KIP-848 member joins", got is not None and got[0] == 0, f"(got {got})")
    _, member, epoch, _ = got
    tid = topic_id(c, topic)
    got = [offset_commit(c, group, topic, 1, "", member=member, generation=e) for e in (epoch, epoch + 3)]
    got += [offset_commit_flex(c, 8, group, topic, tid, e, member) for e in (epoch, epoch + 3)]
    check("its OffsetCommit v5 and v8, with its epoch or a stale one: UNSUPPORTED_VERSION (35)",
          got == [35] * 4, f"(got {got})")
    got = [offset_commit_flex(c, v, group, topic, tid, e, member) for v in (9, 10) for e in (epoch, epoch + 3)]
    check("... v9 and v10: NONE with its epoch, STALE_MEMBER_EPOCH (113) with a stale one",
          got == [0, 113] * 2, f"(got {got})")
    # OffsetFetch v9 names the member asking: checked as Kafka's ConsumerGroup.validateOffsetFetch
    # (kafka_pg did not check it until 2026-12-07)
    got = [offset_fetch_v9(c, group, topic, m, e) for m, e in
           ((member, epoch), (member, epoch + 3), ("nobody", epoch), ("", -1), (None, -1))]
    check("OffsetFetch v9 of the group by the member: its epoch the offset; a stale one "
          "STALE_MEMBER_EPOCH (113), an unknown member or an empty id UNKNOWN_MEMBER_ID (25), none "
          "(a null id, epoch -1) the offset",
          got == [(0, 1), (113, None), (25, None), (25, None), (0, 1)], f"(got {got})")
    got = offset_fetch_v9(c, f"{group}-none", topic, "nobody", 3)
    check("... of a group that does not exist: not checked, no offset", got == (0, -1), f"(got {got})")
    c.close()


def offset_fetch_v9(c, group, topic, member, epoch):
    """OffsetFetch v9 (the member asking) of partition 0 of one group: (group error, offset or None)."""
    body = carray([cstring(group) + cstring(member) + i32(epoch)
                   + carray([cstring(topic) + carray([i32(0)]) + TAGS]) + TAGS]) + i8(1) + TAGS
    r = c.call_flex(9, 9, body)
    if r is None:
        return None
    r.i32()
    part = (lambda: (r.i32(), r.i64(), r.i32(), r.cstring(), r.i16(), r.tags())[1])
    g = r.carray(lambda: (r.cstring(), r.carray(lambda: (r.cstring(), r.carray(part), r.tags())), r.i16(),
                          r.tags()))[0]
    offsets = [o for t in g[1] for o in t[1]]
    return g[2], (offsets[0] if offsets else None)


def offset_commit_flex(c, version, group, topic, tid, generation, member):
    """OffsetCommit v8-10 (v10 names the topic by its id) of partition 0: its error."""
    p = i32(0) + i64(1) + i32(-1) + cstring("") + TAGS
    t = (tid if version >= 10 else cstring(topic)) + carray([p]) + TAGS
    r = c.call_flex(8, version, cstring(group) + i32(generation) + cstring(member) + cstring(None)
                    + carray([t]) + TAGS)
    if r is None:
        return None
    r.i32()
    res = r.carray(lambda: ((r.uuid() if version >= 10 else r.cstring()),
                            r.carray(lambda: (r.i32(), r.i16(), r.tags())), r.tags()))
    return res[0][1][0][1]


def delete_topic(c, topic):
    """DeleteTopics v3: the topic's error code."""
    r = c.call(20, 3, array([string(topic)]) + i32(30000))
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.string(), r.i16()))[0][1]


def offset_fetch_v(c, version, group, topic):
    """OffsetFetch v1, v3 or v5 of partition 0: (error, offset)."""
    r = c.call(9, version, string(group) + array([string(topic) + array([i32(0)])]))
    if r is None:
        return None
    if version >= 3:
        r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i64(), r.i32() if version >= 5 else None,
                                                        r.string(), r.i16()))))
    _, off, _, _, err = res[0][1][0]
    return err, off


def check_internal_topics():
    """Part 20: Kafka's internal topics are never plain topics a client writes to."""
    c = Conn()
    got = metadata_v4(c, "__consumer_offsets", True)
    check("Metadata allowing auto-creation of __consumer_offsets: Kafka's internal topic, or (kafka_pg) "
          "UNKNOWN_TOPIC_OR_PARTITION, never a plain topic", got is not None and
          ((got[0] == 0 and got[1] == 1) or got[:2] == (3, 0)), f"(got {got})")
    err, _ = produce(c, "__consumer_offsets", build_batch(0, [b"x"]))
    check("Produce to __consumer_offsets: refused (Kafka INVALID_TOPIC_EXCEPTION, kafka_pg "
          "UNKNOWN_TOPIC_OR_PARTITION)", err in (17, 3), f"(error {err})")
    got = [create_topic(c, n) for n in ("__consumer_offsets", "__transaction_state")]
    check("CreateTopics of __consumer_offsets and __transaction_state makes nothing (Kafka: "
          "TOPIC_ALREADY_EXISTS, its own; kafka_pg: INVALID_REQUEST, prohibited)",
          got in ([36, 36], [42, 42]), f"(got {got})")
    got = create_topic(c, "__cluster_metadata", with_message=True)
    check("CreateTopics of __cluster_metadata: INVALID_REQUEST \"Creation of internal topic __cluster_metadata "
          "is prohibited.\"", got == (42, b"Creation of internal topic __cluster_metadata is prohibited."),
          f"(got {got})")
    c.close()


def check_deleted_topic_offsets():
    """Part 18: a deleted topic's committed offsets go with it."""
    c = Conn()
    topic, group = f"cf-del-{RUN}", f"cf-del-g-{RUN}"
    check("deleted topic: create a topic", create_topic(c, topic) == 0)
    time.sleep(1)
    find_coordinator(c, group)
    err = offset_commit(c, group, topic, 5, "m")
    got = offset_fetch(c, group, topic)
    check("deleted topic: an offset committed and fetched", err == 0 and got == (0, 5, b"m"), f"({err}, {got})")
    err = delete_topic(c, topic)
    check("deleted topic: DeleteTopics", err == 0, f"({err})")
    deadline = time.time() + 10
    while time.time() < deadline:
        got = offset_fetch(c, group, topic)
        if got and got[1] == -1:
            break
        time.sleep(0.2)
    check("deleted topic: OffsetFetch has no offset for it, and no error", got == (0, -1, b""), f"({got})")
    err = offset_commit(c, group, topic, 6, "m")
    check("deleted topic: OffsetCommit to it is UNKNOWN_TOPIC_OR_PARTITION", err == 3, f"({err})")
    check("deleted topic: made again under the name", create_topic(c, topic) == 0)
    time.sleep(1)
    got = offset_fetch(c, group, topic)
    check("deleted topic: ... the group has no offset for the new topic (not the old 5)", got == (0, -1, b""),
          f"({got})")
    for v in (1, 3, 5):
        got = offset_fetch_v(c, v, group, f"cf-no-such-{RUN}")
        check(f"OffsetFetch v{v} of a topic that does not exist: -1, no error", got == (0, -1), f"({got})")
    c.close()


def init_producer_id(c, txn_id=None, timeout_ms=60000, pid=None, epoch=None):
    """InitProducerId v1 (the transactional id and timeout), or v4 with a producer id and epoch (pid
    and epoch given): (error, producer id, epoch), None if no answer."""
    if pid is None:
        r = c.call(22, 1, string(txn_id) + i32(timeout_ms))
    else:
        r = c.call_flex(22, 4, cstring(txn_id) + i32(timeout_ms) + i64(pid) + i16(epoch) + TAGS)
    if r is None:
        return None
    r.i32()
    return r.i16(), r.i64(), r.i16()


def check_idempotent_ids():
    """Part 21: InitProducerId without a transactional id, as Kafka 4.4's coordinator answers it:
    always a new producer id at epoch 0, whatever id and epoch are given (kafka_pg gave the id back
    with its epoch bumped, so every platformatic/kafka producer, which sends 0 and 0, was producer 0
    and their sequences collided: a second producer's first batch was taken for a duplicate and
    dropped); an id without an epoch or an epoch without an id is INVALID_REQUEST, with a
    transactional id too."""
    c = Conn()
    first = init_producer_id(c, pid=-1, epoch=-1)
    again = init_producer_id(c, pid=first[1], epoch=first[2]) if first else None
    zeros = [init_producer_id(c, pid=0, epoch=0) for _ in range(2)]
    got = [first, again] + zeros
    ids = [g[1] for g in got if g]
    check("InitProducerId v4, no transactional id: a new producer id at epoch 0 each time, also when "
          "the producer gives its own id and epoch, or 0 and 0",
          all(g is not None and g[0] == 0 and g[2] == 0 for g in got) and len(set(ids)) == 4, f"(got {got})")
    topic = f"conf-idempotent-{RUN}"
    create_topic(c, topic)
    a, b = zeros
    sent = [produce(c, topic, build_batch(0, [v], p[1], p[2], 0)) for p, v in ((a, b"a"), (b, b"b"))]
    check("two producers given ids that way each append their first batch (sequence 0): offsets 0 and 1",
          sent == [(0, 0), (0, 1)], f"(got {sent})")
    bad = [init_producer_id(c, txn, pid=p, epoch=e) for txn in (None, f"conf-txn-{RUN}") for p, e in ((7, -1), (-1, 4))]
    check("an id without an epoch, or an epoch without an id: INVALID_REQUEST (42), with or without a "
          "transactional id", [g[0] if g else None for g in bad] == [42] * 4, f"(got {bad})")
    c.close()


def main():
    only = os.environ.get("KP_CONFORMANCE_ONLY", "fetch,nul,compression,commits,keyless,pipeline,atonce,pending,static,maxdec,deleted,internal,"
                          "idempotent").split(",")
    if "commits" in only:
        check_simple_commits()
        check_member_commits()
    if "fetch" in only:
        check_fetch_deadline()
        check_fetch_by_partition()
    if "nul" in only:
        check_nul_strings()
    if "compression" in only:
        check_topic_compression()
    if "keyless" in only:
        check_keyless_on_compacted()
    if "pipeline" in only:
        check_pipelined_produce()
    if "atonce" in only:
        check_answered_at_once()
    if "pending" in only:
        check_pending_members()
        check_pending_kept()
        check_rejoin_answered()
    if "static" in only:
        check_static_classic()
        check_static_classic_existing()
        check_static_consumer()
    if "maxdec" in only:
        check_max_decompressed()
    if "deleted" in only:
        check_deleted_topic_offsets()
    if "internal" in only:
        check_internal_topics()
    if "idempotent" in only:
        check_idempotent_ids()
    finish()


if __name__ == "__main__":
    main()
