#!/usr/bin/env python3
"""ListOffsets and DeleteRecords at their edges, against the broker at $KAFKA_BOOTSTRAP.
Every expectation is what Apache Kafka 4.4 (single-node KRaft) answered on this machine.

  - Kafka's broker keys its answers by partition: a partition a request lists twice (in one
    listing of its topic or in two) is answered once, INVALID_REQUEST (42) with no offset,
    timestamp or epoch (-1), an unknown topic's too; a topic listed twice is answered in one
    entry; a topic listed with no partitions is not answered at all. Kafka orders its answers by
    hash, so they are compared as sets.
  - The special timestamps each need a version: -3 (MAX_TIMESTAMP) v7, -4 (EARLIEST_LOCAL) v8,
    -5 (LATEST_TIERED) v9, -6 (EARLIEST_PENDING_UPLOAD) v11; below that, and for any other
    negative timestamp at any version, UNSUPPORTED_VERSION (35), an unknown topic's too.
  - -5 and -6 on a topic without tiered storage: no error, offset -1, timestamp -1, epoch -1;
    -4 the log start, as -2.
  - DeleteRecords is keyed by partition too: a topic listed twice is one entry, a partition
    listed twice is answered once and moved to the offset of its last listing (Kafka keeps the
    last in a map), an unknown topic's once; a topic listed with no partitions is not answered.
A topic the client may not describe is answered as listed by ListOffsets, TOPIC_AUTHORIZATION_FAILED
for each partition (Kafka's KafkaApis.handleListOffsetRequest; test/clients/security/test_acls.py).
Standard library only; shares describe_partitions.py's encoding. Prints "ok - ..." / "not ok - ..."
and "N passed, M failed".
"""
import socket
import struct
import sys
import time
import uuid

import describe_partitions as w
from describe_partitions import check, cstr, uvarint
from wire_controller import delete_topics

INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
UNKNOWN = 3
NO_ANSWER = (-1, -1, -1)     # timestamp, offset, epoch


def list_offsets(s, topics, version=11):
    """ListOffsets (v6+) of [(name, [(partition, timestamp)])], read_uncommitted:
    {name: sorted [(partition, error, timestamp, offset, epoch)]} and the number of topic entries."""
    body = struct.pack(">ib", -1, 0) + uvarint(len(topics) + 1)
    for name, parts in topics:
        body += cstr(name) + uvarint(len(parts) + 1)
        body += b"".join(struct.pack(">iiq", p, -1, ts) + b"\0" for p, ts in parts) + b"\0"
    if version >= 10:
        body += struct.pack(">i", 30000)
    r = w.call(s, 2, version, body + b"\0")
    return by_topic(r, lambda: (r.i32(), r.i16()) + struct.unpack(">qqi", r.take(20)))


def by_topic(r, partition):
    """A response of topic entries, each of partition answers (partition() reads one, before its
    tags): {name: sorted answers} and the number of entries."""
    r.i32()

    def answer():
        got = partition()
        r.tags()
        return got

    def topic():
        name, parts = r.cstr(), r.carray(answer)
        r.tags()
        return name, sorted(parts or [])
    entries = r.carray(topic) or []
    return dict(entries), len(entries)


def delete_records(s, topics):
    """DeleteRecords v2 of [(name, [(partition, offset)])]: {name: sorted [(partition, low watermark,
    error)]} and the number of topic entries."""
    body = uvarint(len(topics) + 1)
    for name, parts in topics:
        body += cstr(name) + uvarint(len(parts) + 1)
        body += b"".join(struct.pack(">iq", p, o) + b"\0" for p, o in parts) + b"\0"
    r = w.call(s, 21, 2, body + struct.pack(">i", 30000) + b"\0")
    return by_topic(r, lambda: (r.i32(), struct.unpack(">q", r.take(8))[0], r.i16()))


def main():
    host, port = w.BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    tag = uuid.uuid4().hex[:8]
    t = "lo-" + tag
    made = w.create_topics(s, {t: 2})
    check("CreateTopics %s (2 partitions)" % t, made == {t: 0}, made)
    unknown = "lo-unknown-" + tag
    # Kafka answers LEADER_NOT_AVAILABLE until the new topic's leaders reach its metadata cache
    deadline = time.time() + 30
    while time.time() < deadline:
        got = list_offsets(s, [(t, [(0, -1), (1, -1)])])
        if [p[:2] for p in got[0].get(t, [])] == [(0, 0), (1, 0)]:
            break
        time.sleep(0.2)
    check("ListOffsets LATEST of both partitions: 0", [p[:2] + p[3:4] for p in got[0].get(t, [])] == [(0, 0, 0), (1, 0, 0)],
          got)

    got = list_offsets(s, [(t, [(0, -1), (0, -1), (1, -1)])])
    check("a partition listed twice in one listing: answered once, INVALID_REQUEST, no offset; "
          "the other answered",
          got[1] == 1 and [p[:2] for p in got[0].get(t, [])] == [(0, INVALID_REQUEST), (1, 0)]
          and got[0][t][0][2:] == NO_ANSWER and got[0][t][1][3] == 0, got)
    got = list_offsets(s, [(t, [(0, -1)]), (t, [(1, -2)])])
    check("a topic listed twice, other partitions: one entry answering both",
          got[1] == 1 and [p[:2] + p[3:4] for p in got[0].get(t, [])] == [(0, 0, 0), (1, 0, 0)], got)
    got = list_offsets(s, [(t, [(0, -1)]), (t, [(0, -2), (1, -1)])])
    check("a topic listed twice, a partition in both: one entry, that partition INVALID_REQUEST once",
          got[1] == 1 and [p[:2] for p in got[0].get(t, [])] == [(0, INVALID_REQUEST), (1, 0)], got)
    got = list_offsets(s, [(unknown, [(0, -1), (0, -1), (1, -1)])])
    check("an unknown topic: its repeated partition INVALID_REQUEST once, the other UNKNOWN_TOPIC_OR_PARTITION",
          got == ({unknown: [(0, INVALID_REQUEST) + NO_ANSWER, (1, UNKNOWN) + NO_ANSWER]}, 1), got)
    got = list_offsets(s, [(t, []), (unknown, [])])
    check("topics listed with no partitions: not answered", got == ({}, 0), got)
    got = list_offsets(s, [(t, []), (t, [(1, -1)])])
    check("a topic listed with no partitions and again with one: one entry, that partition",
          got[1] == 1 and [p[:2] for p in got[0].get(t, [])] == [(1, 0)], got)

    for version, ts in ((6, -3), (7, -4), (8, -5), (10, -6)):
        got = list_offsets(s, [(t, [(0, ts)]), (unknown, [(0, ts)])], version)
        check("v%d timestamp %d: UNSUPPORTED_VERSION, an unknown topic's too" % (version, ts),
              got == ({t: [(0, UNSUPPORTED_VERSION) + NO_ANSWER], unknown: [(0, UNSUPPORTED_VERSION) + NO_ANSWER]}, 2),
              got)
    for ts in (-7, -100):
        got = list_offsets(s, [(t, [(0, ts)])])
        check("v11 timestamp %d: UNSUPPORTED_VERSION" % ts, got == ({t: [(0, UNSUPPORTED_VERSION) + NO_ANSWER]}, 1),
              got)
    for version, ts in ((9, -5), (11, -5), (11, -6)):
        got = list_offsets(s, [(t, [(0, ts), (1, ts)])], version)
        check("v%d timestamp %d: no error, no offset, timestamp or epoch (no tiered storage)" % (version, ts),
              got == ({t: [(0, 0) + NO_ANSWER, (1, 0) + NO_ANSWER]}, 1), got)
    got = list_offsets(s, [(t, [(0, -4)])], 8)
    check("v8 timestamp -4 (EARLIEST_LOCAL): the log start, 0",
          got[1] == 1 and [p[:2] + p[3:4] for p in got[0].get(t, [])] == [(0, 0, 0)], got)
    got = list_offsets(s, [(t, [(0, -3)])], 7)
    check("v7 timestamp -3 (MAX_TIMESTAMP) of an empty partition: no error, no offset",
          got == ({t: [(0, 0) + NO_ANSWER]}, 1), got)
    got = list_offsets(s, [(t, [(-1, -1), (2, -1)])])
    check("partitions -1 and 2 of a 2-partition topic: UNKNOWN_TOPIC_OR_PARTITION",
          got == ({t: [(-1, UNKNOWN) + NO_ANSWER, (2, UNKNOWN) + NO_ANSWER]}, 1), got)

    got = delete_records(s, [(t, [(0, 0), (0, 0), (1, 0)])])
    check("DeleteRecords of a partition listed twice in one listing: answered once; the other too",
          got == ({t: [(0, 0, 0), (1, 0, 0)]}, 1), got)
    got = delete_records(s, [(t, [(0, 5)]), (t, [(0, 0), (1, 0)])])
    check("DeleteRecords of a topic listed twice, a partition in both (offsets 5, then 0): one entry, "
          "the partition at its last listing's offset, 0 (5 is above the high watermark)",
          got == ({t: [(0, 0, 0), (1, 0, 0)]}, 1), got)
    got = delete_records(s, [(t, [(0, 0)]), (t, [(0, 5)])])
    check("DeleteRecords of a partition listed with offsets 0, then 5: OFFSET_OUT_OF_RANGE (1), no low watermark",
          got == ({t: [(0, -1, 1)]}, 1), got)
    got = delete_records(s, [(unknown, [(0, 0), (0, 0)])])
    check("DeleteRecords of an unknown topic's partition listed twice: answered once, UNKNOWN_TOPIC_OR_PARTITION",
          got == ({unknown: [(0, -1, UNKNOWN)]}, 1), got)
    got = delete_records(s, [(t, []), (unknown, [])])
    check("DeleteRecords of topics listed with no partitions: not answered", got == ({}, 0), got)
    got = delete_topics(s, [(t, b"\0" * 16)], 30000)
    check("DeleteTopics %s" % t, [g[2:] for g in got] == [(0, None)], got)
    s.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


if __name__ == "__main__":
    sys.exit(main())
