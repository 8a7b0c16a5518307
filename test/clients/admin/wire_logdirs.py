#!/usr/bin/env python3
"""DescribeLogDirs (35) and AlterReplicaLogDirs (34) on the wire, against the broker at
$KAFKA_BOOTSTRAP. Each expectation is what Apache Kafka 4.4 (single-node KRaft, one log dir)
answers:
  - DescribeLogDirs v2-v5 with null topics: one log dir, error NONE (and NONE at the top from v3),
    an absolute path, every partition of a new topic with size 0 (nothing produced), offset lag 0,
    not a future log; v4+ the volume's total and usable bytes (usable <= total), v5 not cordoned;
  - named topics: only the asked partitions that exist; an unknown topic, and a topic asked with
    no partitions, are left out; an empty list describes nothing;
  - AlterReplicaLogDirs v2 to the log dir the partitions are in: NONE for each; to any other path
    (another absolute path, a relative one, the same path with a trailing slash): LOG_DIR_NOT_FOUND
    (57); an unknown topic or partition in the right dir: UNKNOWN_TOPIC_OR_PARTITION (3), in a wrong
    dir: LOG_DIR_NOT_FOUND (the dir is checked first); a partition named under two dirs gets one
    result, for the last dir; v1 (not flexible) answers as v2.
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


def i32(v):
    return struct.pack(">i", v)


def i64(r):
    return struct.unpack(">q", r.take(8))[0]


def main():
    host, port = w.BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    t = "ld-" + uuid.uuid4().hex[:8]
    made = w.create_topics(s, {t: 3})
    check("CreateTopics %s (3)" % t, made == {t: 0}, made)

    def describe(ver, topics):
        if topics is None:
            body = uvarint(0)
        else:
            body = uvarint(len(topics) + 1)
            for name, parts in topics:
                body += cstr(name) + uvarint(len(parts) + 1) + b"".join(i32(p) for p in parts) + b"\0"
        r = w.call(s, 35, ver, body + b"\0")
        r.i32()
        top = r.i16() if ver >= 3 else 0

        def part():
            p = (r.i32(), i64(r), i64(r), r.i8())
            r.tags()
            return p

        def topic():
            name = r.cstr()
            parts = r.carray(part)
            r.tags()
            return name, sorted(parts)

        def result():
            d = {"error": r.i16(), "dir": r.cstr(), "topics": dict(r.carray(topic))}
            if ver >= 4:
                d["total"], d["usable"] = i64(r), i64(r)
            if ver >= 5:
                d["cordoned"] = r.i8()
            r.tags()
            return d
        return top, r.carray(result)

    # a Kafka broker creates the partitions' logs a moment after CreateTopics answers
    for _ in range(50):
        top, dirs = describe(4, None)
        if dirs and t in dirs[0]["topics"]:
            break
        time.sleep(0.2)
    logdir = dirs[0]["dir"] if dirs else None
    for ver in (2, 3, 4, 5):
        top, dirs = describe(ver, None)
        d = dirs[0] if dirs else {}
        good = (top == 0 and len(dirs) == 1 and d["error"] == 0 and d["dir"].startswith("/")
                and d["topics"].get(t) == [(0, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 0)])
        if ver >= 4:
            good = good and 0 < d["usable"] <= d["total"]
        if ver >= 5:
            good = good and d["cordoned"] == 0
        check("DescribeLogDirs v%d, every topic: one log dir (%s), %s's 3 partitions, size 0, lag 0"
              % (ver, logdir, t), good, (top, dirs and {k: v for k, v in d.items() if k != "topics"},
                                         d.get("topics", {}).get(t)))

    top, dirs = describe(4, [(t, [2, 0, 7]), (t + "-missing", [0]), (t, [])])
    check("DescribeLogDirs v4, named: the asked partitions that exist; unknown topics left out",
          top == 0 and len(dirs) == 1 and dirs[0]["topics"] == {t: [(0, 0, 0, 0), (2, 0, 0, 0)]},
          dirs)
    top, dirs = describe(4, [])
    check("DescribeLogDirs v4, no topics: the log dir with no topics",
          top == 0 and len(dirs) == 1 and dirs[0]["topics"] == {} and dirs[0]["dir"] == logdir, dirs)

    def alter(ver, moves):
        body = b""
        if ver >= 2:
            body += uvarint(len(moves) + 1)
        else:
            body += i32(len(moves))
        for path, topics in moves:
            if ver >= 2:
                body += cstr(path) + uvarint(len(topics) + 1)
            else:
                body += struct.pack(">h", len(path.encode())) + path.encode() + i32(len(topics))
            for name, parts in topics:
                if ver >= 2:
                    body += cstr(name) + uvarint(len(parts) + 1)
                else:
                    body += struct.pack(">h", len(name.encode())) + name.encode() + i32(len(parts))
                body += b"".join(i32(p) for p in parts)
                if ver >= 2:
                    body += b"\0"
            if ver >= 2:
                body += b"\0"
        if ver >= 2:
            body += b"\0"
        r = w.call(s, 34, ver, body) if ver >= 2 else call_v1(s, body)
        r.i32()
        if ver >= 2:
            def part():
                p = (r.i32(), r.i16())
                r.tags()
                return p

            def topic():
                name = r.cstr()
                parts = r.carray(part)
                r.tags()
                return name, sorted(parts)
            return dict(r.carray(topic))
        out = {}
        for _ in range(r.i32()):
            name = r.take(r.i16()).decode()
            out[name] = sorted((r.i32(), r.i16()) for _ in range(r.i32()))
        return out

    res = alter(2, [(logdir, [(t, [0, 1, 2])])])
    check("AlterReplicaLogDirs v2 to the log dir the partitions are in: NONE for each",
          res == {t: [(0, 0), (1, 0), (2, 0)]}, res)
    res = alter(1, [(logdir, [(t, [1])])])
    check("AlterReplicaLogDirs v1 to the same log dir: NONE", res == {t: [(1, 0)]}, res)
    for other in ("/nonexistent/kafka-logs", "relative-dir", logdir + "/"):
        res = alter(2, [(other, [(t, [0])])])
        check("AlterReplicaLogDirs v2 to %r: LOG_DIR_NOT_FOUND" % other, res == {t: [(0, 57)]}, res)
    res = alter(2, [(logdir, [(t, [5]), (t + "-missing", [0])])])
    check("AlterReplicaLogDirs v2, unknown partition and topic: UNKNOWN_TOPIC_OR_PARTITION",
          res == {t: [(5, 3)], t + "-missing": [(0, 3)]}, res)
    res = alter(2, [("/nonexistent", [(t, [5]), (t + "-missing", [0])])])
    check("AlterReplicaLogDirs v2, unknown partition and topic in a wrong dir: LOG_DIR_NOT_FOUND",
          res == {t: [(5, 57)], t + "-missing": [(0, 57)]}, res)
    res = alter(2, [(logdir, [(t, [0])]), ("/other", [(t, [0])])])
    check("AlterReplicaLogDirs v2, one partition under two dirs: one result, for the last dir",
          res == {t: [(0, 57)]}, res)
    res = alter(2, [])
    check("AlterReplicaLogDirs v2, nothing asked: no results", res == {}, res)
    s.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


def call_v1(s, body):
    """A v1 (not flexible) request: header v1, response header v0."""
    w.corr += 1
    header = struct.pack(">hhi", 34, 1, w.corr) + struct.pack(">h", 5) + b"admin"
    msg = header + body
    s.sendall(struct.pack(">i", len(msg)) + msg)
    size = struct.unpack(">i", w.recv_exact(s, 4))[0]
    r = w.Reader(w.recv_exact(s, size))
    assert r.i32() == w.corr
    return r


if __name__ == "__main__":
    sys.exit(main())
