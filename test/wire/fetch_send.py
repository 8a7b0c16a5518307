#!/usr/bin/env python3
"""Issue 13: Fetch responses whose records the listener sends by reference (src/listener/README,
"A Fetch's records ...") arrive byte-exact, with the limits of the request applied.

A topic of 24 partitions gets batches of 40 B to 150 KB (some copied into the response, some
sent by reference, some crossing store pages), several MB in all.  One connection with a small
receive buffer pipelines ten Fetch requests (two of them of the whole topic, more than the
kernel's send buffer holds) (v11, whose records end each partition and can end the frame, and
v12, flexible, with tagged fields after them) with different max_bytes, partition_max_bytes and
fetch offsets, waits so that the server's sends back up mid-record, then reads the answers 1 to 16 KB
at a time.  Each answer must parse to its frame's end, and each partition's records
must be exactly the whole batches a Fetch returns: from the fetch offset, as many as fit in the
partition's and the response's bytes left, the first of the response even if larger (KIP-74).
Another connection that closes with its answers unsent must leave the server serving.

Usage: fetch_send.py HOST:PORT (kafka_pg: Kafka may return a partial batch at the end).
Last line: "N passed, M failed".
"""
import os
import random
import socket
import struct
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (its HOST:PORT is our argv[1] too)
from kwire import TAGS, Reader, array, carray, cstring, i8, i32, i64, string  # noqa: E402
from tap import check, finish  # noqa: E402

RUN = uuid.uuid4().hex[:8]
PARTS = 24


def fetch_request(version, corr, topic, offsets, max_bytes, part_max):
    """A framed Fetch request of version 11 or 12 for the partitions' offsets."""
    if version >= 12:
        parts = [i32(p) + i32(-1) + i64(o) + i32(-1) + i64(-1) + i32(part_max) + TAGS
                 for p, o in offsets]
        body = (i32(-1) + i32(0) + i32(1) + i32(max_bytes) + i8(0) + i32(0) + i32(-1)
                + carray([cstring(topic) + carray(parts) + TAGS]) + carray([]) + cstring("") + TAGS)
        hdr = struct.pack(">hhi", 1, version, corr) + string(b"fetch_send") + TAGS
    else:
        parts = [i32(p) + i32(-1) + i64(o) + i64(-1) + i32(part_max) for p, o in offsets]
        body = (i32(-1) + i32(0) + i32(1) + i32(max_bytes) + i8(0) + i32(0) + i32(-1)
                + array([string(topic) + array(parts)]) + array([]) + string(""))
        hdr = struct.pack(">hhi", 1, version, corr) + string(b"fetch_send")
    return i32(len(hdr) + len(body)) + hdr + body


def read_response(version, body):
    """(correlation id, [(partition, error, records)]) of a Fetch v11/v12 response; raises
    if the body does not parse to its end."""
    r = Reader(body)
    corr = r.i32()
    flex = version >= 12
    if flex:
        r.tags()
    r.i32(), r.i16(), r.i32()
    out = []

    def part():
        p, err = r.i32(), r.i16()
        r.i64(), r.i64(), r.i64()
        if flex:
            r.carray(lambda: (r.i64(), r.i64(), r.tags()))
        else:
            r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        recs = r.cbytes() if flex else r.nbytes()
        if flex:
            r.tags()
        return p, err, recs or b""

    def topic():
        name = r.cstring() if flex else r.string()
        ps = r.carray(part) if flex else r.array(part)
        if flex:
            r.tags()
        return name, ps
    topics = r.carray(topic) if flex else r.array(topic)
    if flex:
        r.tags()
    if r.p != len(body):
        raise ValueError(f"{len(body) - r.p} bytes after the response")
    return corr, [x for _, ps in topics for x in ps]


def expected(stored, offsets, max_bytes, part_max):
    """{partition: [(base offset, batch)]} a Fetch returns: whole batches from the offset."""
    left, any_, out = max_bytes, False, {}
    for p, off in offsets:
        got, plen = [], part_max
        for base, n, b in stored[p]:
            if base + n <= off:
                continue
            if any_ or got:
                if len(b) > min(plen, left):
                    break
            got.append((base, b))
            plen -= len(b)
            left -= len(b)
            if plen <= 0 or left <= 0:
                break
        if got:
            any_ = True
        out[p] = got
    return out


def same_batches(recs, want):
    """recs holds exactly want's batches: the same bytes but for the leader epoch stamped."""
    if sum(len(b) for _, b in want) != len(recs):
        return False
    pos = 0
    for base, b in want:
        got = recs[pos:pos + len(b)]
        if struct.unpack(">q", got[:8])[0] != base or got[8:12] != b[8:12] or got[16:] != b[16:]:
            return False
        pos += len(b)
    return True


def recv_exact(s, n, chunk):
    buf = b""
    while len(buf) < n:
        d = s.recv(min(chunk, n - len(buf)))
        if not d:
            raise ConnectionError("closed")
        buf += d
    return buf


def main():
    topic = f"fetch-send-{RUN}"
    c = kc.Conn()
    check("the topic is created", kc.create_topic(c, topic, partitions=PARTS) == 0)
    rnd = random.Random(13)
    stored = {p: [] for p in range(PARTS)}
    ok = True
    for p in range(PARTS):
        off = 0
        for k in range(6):
            size = rnd.choice([40, 300, 1500, 4000, 9000, 30000])
            n = rnd.randint(1, 5)
            batch = kc.build_batch(0, [bytes([65 + (p + i) % 26]) * size for i in range(n)])
            if kc.produce_to(c, topic, p, batch) != 0:
                ok = False
            stored[p].append((off, n, batch))
            off += n
    check("the batches are produced", ok)
    # the batches as stored: their base offsets (the CRC does not cover them)
    stored = {p: [(base, n, struct.pack(">q", base) + b[8:]) for base, n, b in bs] for p, bs in stored.items()}
    c.close()

    plans = []
    for k in range(8):
        version = 11 if k % 2 == 0 else 12
        offsets = [(p, rnd.choice([0, 0, 1, 3, 5])) for p in rnd.sample(range(PARTS), rnd.randint(8, PARTS))]
        max_bytes = rnd.choice([1, 30000, 150000, 1 << 20, 50 << 20])
        part_max = rnd.choice([1, 5000, 20000, 1 << 20])
        plans.append((version, offsets, max_bytes, part_max))
    # and the whole topic twice: several MB pipelined, more than the kernel's send buffer holds
    # (tcp_wmem's 4 MB), so sends stop mid-piece and resume
    for version in (11, 12):
        plans.insert(2, (version, [(p, 0) for p in range(PARTS)], 50 << 20, 1 << 20))

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect((kc.HOST, kc.PORT))
    for k, (version, offsets, max_bytes, part_max) in enumerate(plans):
        s.sendall(fetch_request(version, 100 + k, topic, offsets, max_bytes, part_max))
    time.sleep(1.0)  # the server's sends back up: it must resume mid-piece
    for k, (version, offsets, max_bytes, part_max) in enumerate(plans):
        try:
            size = struct.unpack(">i", recv_exact(s, 4, 4))[0]
            body = recv_exact(s, size, rnd.choice([997, 4096, 16384]))
            corr, parts = read_response(version, body)
        except (ValueError, ConnectionError, socket.timeout) as e:
            check(f"fetch {k} (v{version}) parses", False, repr(e))
            break
        want = expected(stored, offsets, max_bytes, part_max)
        bad = [p for p, err, recs in parts if err != 0 or not same_batches(recs, want.get(p, []))]
        check(f"fetch {k} (v{version}, max_bytes {max_bytes}, partition_max_bytes {part_max}, "
              f"{len(offsets)} partitions, {sum(len(b) for w in want.values() for _, b in w)} bytes) "
              "is answered byte-exact",
              corr == 100 + k and not bad and [p for p, _, _ in parts] == [p for p, _ in offsets],
              f"corr {corr}, partitions wrong: {bad}")
    s.close()

    # a client that goes away with its answers unsent
    for _ in range(3):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((kc.HOST, kc.PORT))
        offsets = [(p, 0) for p in range(PARTS)]
        for k in range(4):
            s.sendall(fetch_request(11, k, topic, offsets, 50 << 20, 1 << 20))
        time.sleep(0.3)
        s.close()
    c = kc.Conn()
    r = c.call(1, 11, kc.fetch_listing_body([(topic, [(p, 0) for p in range(PARTS)])], 0))
    got = kc.read_fetch_listing(r) if r is not None else {}
    want = expected(stored, [(p, 0) for p in range(PARTS)], 1 << 20, 1 << 20)
    check("after clients left with answers unsent, a Fetch is answered byte-exact",
          len(got) == PARTS and all(got[(topic, p)][0] == 0 and same_batches(got[(topic, p)][1], want[p])
                                    for p in range(PARTS)))
    c.close()
    finish()


if __name__ == "__main__":
    main()
