#!/usr/bin/env python3
"""DescribeTopicPartitions v0 (API 75) on the wire: its cursor paging, byte-level answers that the
Java admin client hides (it follows NextCursor itself), against the broker at $KAFKA_BOOTSTRAP.

Creates two topics (A with 5 partitions, B with 3) through the Kafka CLI-free CreateTopics API,
then checks, as Apache Kafka 4.4's DescribeTopicPartitionsRequestHandler answers:
  - named topics are answered in name order; ResponsePartitionLimit cuts a page inside a topic
    (NextCursor = that topic and the next partition) or at a topic boundary (NextCursor = the next
    topic, partition 0); following NextCursor gives every partition once;
  - a limit of 0 counts as 1, one above 2000 as 2000;
  - a cursor whose topic is not among the named topics, or whose partition is negative, is
    INVALID_REQUEST (42) for every named topic;
  - a cursor past a topic's last partition gives the topic with no partitions and no NextCursor;
  - an unknown topic is UNKNOWN_TOPIC_OR_PARTITION (3), an invalid name INVALID_TOPIC_EXCEPTION (17);
  - every partition: leader = the broker, replicas = ISR = [broker], ELR and last known ELR empty
    (not null), no offline replicas; topic authorized operations 3576 (every topic operation);
  - asked for every topic (empty list), A's and B's partitions come once each, in order.
Standard library only. Prints "ok - ..." / "not ok - ..." and "N passed, M failed".
"""
import os
import socket
import struct
import sys
import time
import uuid

BS = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - " + name)
        if detail:
            print("#   " + str(detail)[:2000])


# --- encoding (flexible versions: compact strings and arrays, tagged fields) ---------------------

def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstr(s):
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def i8(v):
    return struct.pack(">b", v)


def i32(v):
    return struct.pack(">i", v)


def request(api_key, version, corr, body):
    header = struct.pack(">hhi", api_key, version, corr) + struct.pack(">h", 5) + b"admin" + b"\x00"
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


class Reader:
    def __init__(self, data):
        self.d = data
        self.i = 0

    def take(self, n):
        v = self.d[self.i:self.i + n]
        if len(v) != n:
            raise ValueError("short response")
        self.i += n
        return v

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = n = 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def cstr(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def carray(self, elem):
        n = self.uvarint()
        return None if n == 0 else [elem() for _ in range(n - 1)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        c = s.recv(n - len(buf))
        if not c:
            raise ConnectionError("connection closed")
        buf += c
    return buf


corr = 0


def call(s, api_key, version, body):
    global corr
    corr += 1
    s.sendall(request(api_key, version, corr, body))
    size = struct.unpack(">i", recv_exact(s, 4))[0]
    r = Reader(recv_exact(s, size))
    assert r.i32() == corr
    r.tags()    # response header v1
    return r


def find_coordinator(s, group, wait=30):
    """FindCoordinator v4 of group until it answers with no error, at most wait seconds (a Kafka that
    never had a group answers COORDINATOR_NOT_AVAILABLE until its offsets topic is made): the error
    codes of its last answer."""
    deadline = time.time() + wait
    while True:
        r = call(s, 10, 4, i8(0) + uvarint(2) + cstr(group) + b"\0")
        r.i32()
        found = r.carray(lambda: (r.cstr(), r.i32(), r.cstr(), r.i32(), r.i16(), r.cstr(), r.tags())[4])
        if found == [0] or time.time() > deadline:
            return found
        time.sleep(0.5)


def create_topics(s, topics):
    """CreateTopics v7: {name: partitions}; returns {name: error code}."""
    body = uvarint(len(topics) + 1)
    for name, n in topics.items():
        body += cstr(name) + struct.pack(">ih", n, 1) + uvarint(1) + uvarint(1) + b"\x00"
    body += struct.pack(">ib", 30000, 0) + b"\x00"
    r = call(s, 19, 7, body)
    r.i32()

    def topic():
        name = r.cstr()
        r.take(16)
        err = r.i16()
        r.cstr()
        r.i32()
        r.i16()
        r.carray(lambda: (r.cstr(), r.cstr(), r.i8(), r.i8(), r.i8(), r.tags()))
        r.tags()
        return name, err
    return dict(r.carray(topic))


def describe(s, names, limit=2000, cursor=None):
    body = uvarint(len(names) + 1) + b"".join(cstr(n) + b"\x00" for n in names)
    body += struct.pack(">i", limit)
    if cursor is None:
        body += struct.pack(">b", -1)
    else:
        body += struct.pack(">b", 1) + cstr(cursor[0]) + struct.pack(">i", cursor[1]) + b"\x00"
    body += b"\x00"
    r = call(s, 75, 0, body)
    r.i32()

    def ints():
        return r.carray(r.i32)

    def partition():
        p = dict(error=r.i16(), index=r.i32(), leader=r.i32(), epoch=r.i32(), replicas=ints(),
                 isr=ints(), elr=ints(), last_known_elr=ints(), offline=ints())
        r.tags()
        return p

    def topic():
        t = dict(error=r.i16(), name=r.cstr(), id=r.take(16), internal=r.i8(),
                 partitions=r.carray(partition), ops=r.i32())
        r.tags()
        return t
    topics = r.carray(topic)
    nc = r.i8()
    next_cursor = None
    if nc >= 0:
        next_cursor = (r.cstr(), r.i32())
        r.tags()
    r.tags()
    return topics, next_cursor


def shape(topics):
    """(name, error, [partition indexes]) per topic."""
    return [(t["name"], t["error"], [p["index"] for p in t["partitions"] or []]) for t in topics]


def main():
    host, port = BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    tag = uuid.uuid4().hex[:8]
    a, b = "dtp-a-" + tag, "dtp-b-" + tag
    made = create_topics(s, {a: 5, b: 3})
    check("CreateTopics %s (5) and %s (3)" % (a, b), made == {a: 0, b: 0}, made)

    # the node id, from the first full answer
    topics, nc = describe(s, [b, a])
    check("both topics in name order, every partition, no NextCursor",
          shape(topics) == [(a, 0, [0, 1, 2, 3, 4]), (b, 0, [0, 1, 2])] and nc is None, (shape(topics), nc))
    node = topics[0]["partitions"][0]["leader"] if topics and topics[0]["partitions"] else None
    parts = [p for t in topics for p in t["partitions"] or []]
    check("every partition: leader, replicas = ISR = [leader], ELR and last known ELR empty, none offline",
          parts and all(p["error"] == 0 and p["leader"] == node and p["replicas"] == [node]
                        and p["isr"] == [node] and p["elr"] == [] and p["last_known_elr"] == []
                        and p["offline"] == [] for p in parts), parts[:2])
    check("topics: not internal, a topic id, authorized operations 3576",
          all(t["internal"] == 0 and t["id"] != bytes(16) and t["ops"] == 3576 for t in topics),
          [(t["name"], t["internal"], t["ops"]) for t in topics])

    topics, nc = describe(s, [a, b], limit=2)
    check("limit 2: the page ends inside the first topic, NextCursor = (A, 2)",
          shape(topics) == [(a, 0, [0, 1])] and nc == (a, 2), (shape(topics), nc))
    topics, nc = describe(s, [a, b], limit=3, cursor=(a, 4))
    check("from (A, 4) with limit 3: A's last partition, then B's first two, NextCursor = (B, 2)",
          shape(topics) == [(a, 0, [4]), (b, 0, [0, 1])] and nc == (b, 2), (shape(topics), nc))
    topics, nc = describe(s, [a, b], limit=5)
    check("limit 5 = A's partitions: the page ends at the topic boundary, NextCursor = (B, 0)",
          shape(topics) == [(a, 0, [0, 1, 2, 3, 4])] and nc == (b, 0), (shape(topics), nc))

    seen, cursor, pages = [], None, 0
    while pages < 20:
        topics, cursor = describe(s, [a, b], limit=2, cursor=cursor)
        pages += 1
        seen += [(t["name"], p["index"]) for t in topics for p in t["partitions"] or []]
        if cursor is None:
            break
    check("following NextCursor with limit 2: every partition once, in 4 pages",
          seen == [(a, i) for i in range(5)] + [(b, i) for i in range(3)] and pages == 4, (seen, pages))

    topics, nc = describe(s, [a, b], limit=0)
    check("limit 0 counts as 1", shape(topics) == [(a, 0, [0])] and nc == (a, 1), (shape(topics), nc))
    topics, nc = describe(s, [a], limit=100000)
    check("limit above 2000 is accepted (capped)", shape(topics) == [(a, 0, [0, 1, 2, 3, 4])] and nc is None,
          (shape(topics), nc))
    topics, nc = describe(s, [a, b], cursor=(b, 7))
    check("a cursor past the topic's last partition: the topic with no partitions, no NextCursor",
          shape(topics) == [(b, 0, [])] and nc is None, (shape(topics), nc))

    other = "dtp-zz-" + tag
    topics, nc = describe(s, [a, b], cursor=(other, 0))
    check("a cursor topic that is not requested: INVALID_REQUEST for every named topic",
          sorted(shape(topics)) == [(a, 42, []), (b, 42, [])] and nc is None, (shape(topics), nc))
    topics, nc = describe(s, [a], cursor=(a, -1))
    check("a negative cursor partition: INVALID_REQUEST", shape(topics) == [(a, 42, [])], shape(topics))

    missing = "dtp-missing-" + tag
    topics, nc = describe(s, [missing, "bad name!", a], limit=2)
    # "bad name!" sorts first (space < letters), then A (2 partitions fill the page)
    check("an invalid name: INVALID_TOPIC_EXCEPTION; an unknown topic: UNKNOWN_TOPIC_OR_PARTITION",
          shape(topics)[0] == ("bad name!", 17, []) and shape(topics)[1] == (a, 0, [0, 1])
          and nc == (a, 2), (shape(topics), nc))
    topics, nc = describe(s, [missing])
    check("an unknown topic alone: UNKNOWN_TOPIC_OR_PARTITION with a zero topic id",
          shape(topics) == [(missing, 3, [])] and topics[0]["id"] == bytes(16) and nc is None,
          (shape(topics), nc))

    seen, cursor, pages = [], (a, 0), 0
    while pages < 10000:
        topics, cursor = describe(s, [], limit=3, cursor=cursor)
        pages += 1
        seen += [(t["name"], p["index"]) for t in topics for p in t["partitions"] or []]
        if cursor is None:
            break
    mine = [x for x in seen if x[0] in (a, b)]
    check("every topic (empty list) from cursor (A, 0): A's and B's partitions once each, in order",
          mine == [(a, i) for i in range(5)] + [(b, i) for i in range(3)], mine)

    s.close()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
