#!/usr/bin/env python3
"""bench/fetchpath/pollers.py HOST:PORT TOPIC N SECONDS [MAX_WAIT_MS]: N idle long-polling consumers.

Connection i sends Fetch v4 (max_wait_ms MAX_WAIT_MS, default 500; min_bytes 1) for partition i of
TOPIC from offset 0 and sends it again as soon as it is answered, for SECONDS.  TOPIC is meant to
be empty, so every answer should come at its deadline.  Prints one line: how many answers came,
how many came before 80% of max_wait_ms (woken by data, or early), and how many had records.
Plain sockets, no client library, so the pollers cost little CPU beside the broker's.
"""
import selectors
import socket
import struct
import sys
import time

host, port = sys.argv[1].rsplit(":", 1)
topic = sys.argv[2].encode()
n = int(sys.argv[3])
seconds = float(sys.argv[4])
max_wait = int(sys.argv[5]) if len(sys.argv) > 5 else 500


def fetch_request(corr, partition):
    client = b"pollers"
    hdr = struct.pack(">hhih", 1, 4, corr, len(client)) + client
    body = struct.pack(">iiiib", -1, max_wait, 1, 1 << 20, 0)
    body += struct.pack(">ih", 1, len(topic)) + topic
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, 0, 1 << 20)
    msg = hdr + body
    return struct.pack(">i", len(msg)) + msg


sel = selectors.DefaultSelector()
state = {}
for i in range(n):
    s = socket.create_connection((host, int(port)))
    s.setblocking(False)
    state[s] = {"p": i, "buf": b"", "sent": time.monotonic(), "corr": 1}
    s.sendall(fetch_request(1, i))
    sel.register(s, selectors.EVENT_READ)

answers = early = with_records = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for key, _ in sel.select(timeout=0.2):
        s = key.fileobj
        st = state[s]
        try:
            data = s.recv(1 << 20)
        except BlockingIOError:
            continue
        if not data:
            sys.exit("pollers: connection closed by the broker")
        st["buf"] += data
        while len(st["buf"]) >= 4:
            size = struct.unpack(">i", st["buf"][:4])[0]
            if len(st["buf"]) < 4 + size:
                break
            resp, st["buf"] = st["buf"][4:4 + size], st["buf"][4 + size:]
            now = time.monotonic()
            answers += 1
            if (now - st["sent"]) * 1000 < 0.8 * max_wait:
                early += 1
            # v4: corr, throttle, [topic: name, [partition, error, hw, lso, aborted[], records]]
            if len(resp) > 48 + len(topic):
                with_records += 1
            st["corr"] += 1
            st["sent"] = now
            s.sendall(fetch_request(st["corr"], st["p"]))
print("pollers=%d seconds=%.0f answers=%d early=%d with_records=%d" % (n, seconds, answers, early, with_records))
