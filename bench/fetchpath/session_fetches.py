#!/usr/bin/env python3
"""bench/fetchpath/session_fetches.py HOST:PORT TOPIC PARTITIONS N MODE: N Fetch v11 requests of
every partition of TOPIC at offset OFFSET (env, default 1: the end of a partition holding one
record), max_wait_ms 0, one after the other on one connection: what a caught-up consumer's polls
cost the broker.  MODE full: each request lists every partition (session epoch -1, no session);
MODE session: a full Fetch with epoch 0 first, then incremental ones (epochs 1, 2, ...) listing
nothing (KIP-227).  Prints one line: requests, the partitions answered over all of them, and the
response bytes.  Plain sockets, requests built once, so the client costs little beside the broker.
"""
import os
import socket
import struct
import sys

host, port = sys.argv[1].rsplit(":", 1)
topic = sys.argv[2].encode()
nparts = int(sys.argv[3])
n = int(sys.argv[4])
mode = sys.argv[5]
offset = int(os.environ.get("OFFSET", "1"))
s = socket.create_connection((host, int(port)))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def body(session_id, epoch, parts):
    b = struct.pack(">iiiibii", -1, 0, 1, 1 << 30, 0, session_id, epoch)
    if parts:
        b += struct.pack(">ih", 1, len(topic)) + topic + struct.pack(">i", nparts)
        b += b"".join(struct.pack(">iiqqi", p, -1, offset, -1, 1 << 20) for p in range(nparts))
    else:
        b += struct.pack(">i", 0)
    return b + struct.pack(">ih", 0, 0)


def exact(k):
    buf = bytearray()
    while len(buf) < k:
        chunk = s.recv(k - len(buf))
        if not chunk:
            sys.exit("connection closed")
        buf += chunk
    return bytes(buf)


def call(corr, b):
    hdr = struct.pack(">hhih", 1, 11, corr, 7) + b"fetches"
    msg = hdr + b
    s.sendall(struct.pack(">i", len(msg)) + msg)
    size = struct.unpack(">i", exact(4))[0]
    resp = exact(size)
    # correlation id, throttle, error, session id, then the topics
    err, sid = struct.unpack(">hi", resp[8:14])
    ntopics = struct.unpack(">i", resp[14:18])[0]
    answered = 0
    if ntopics > 0:
        tlen = struct.unpack(">h", resp[18:20])[0]
        answered = struct.unpack(">i", resp[20 + tlen:24 + tlen])[0]
    if err != 0:
        sys.exit(f"error {err}")
    return sid, answered, size


full = body(0, -1, True)
total = nbytes = 0
if mode == "session":
    sid, answered, size = call(1, body(0, 0, True))
    if sid == 0:
        sys.exit("no session")
    for i in range(n):
        _, answered, size = call(i + 2, body(sid, i + 1, False))
        total += answered
        nbytes += size
else:
    for i in range(n):
        _, answered, size = call(i + 1, full)
        total += answered
        nbytes += size
print(f"requests={n} partitions_answered={total} response_bytes={nbytes}")
