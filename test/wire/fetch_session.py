#!/usr/bin/env python3
"""Incremental fetch sessions (KIP-227), driven by hand with nothing but sockets, so the same
file runs against kafka_pg and against Apache Kafka 4.4 (test/clients/kafka/kafka.sh):

- a full Fetch with session epoch 0 is answered every partition and a new nonzero session id;
- an incremental Fetch (that id, epoch 1, 2, ...) that lists nothing is answered no partition
  while nothing changed; a record produced to one partition makes that one partition appear,
  with its records; a partition listed with a new fetch offset and nothing new stays out;
- a forgotten partition drops out of the session: records produced to it later are not
  answered, while a produce to another partition of the session is;
- a partition added by an incremental Fetch is answered at once (its state was never sent);
- a stale or future epoch is INVALID_FETCH_SESSION_EPOCH (71), an unknown session id
  FETCH_SESSION_ID_NOT_FOUND (70), both with session id 0 and no partitions, and the session
  still serves its right epoch afterwards;
- epoch -1 is a full fetch without a session (session id 0), and closes a session it names:
  that id is then FETCH_SESSION_ID_NOT_FOUND; forgetting every partition of a session closes
  it too (answered sessionless);
- a fetch with nothing to read (listing nothing without a session; a session's close, epoch -1
  and nothing listed, as the Java consumer's close() sends; forgetting a session's last
  partition) is answered at once even with a max_wait_ms of 5 s;
- an incremental Fetch that parks (max_wait_ms) and is woken by a produce answers that
  partition, and its epoch stepped once: the next epoch is accepted; one that times out
  answers nothing and steps once too;
- a session created by Fetch v13 (topic ids) used by Fetch v11 (names) is
  FETCH_SESSION_TOPIC_ID_ERROR (106), and a v13 session works by topic id.

With PGPORT set (the run-tests cluster), what is kafka_pg's own: a session dies with its
connection (its id on a new connection is FETCH_SESSION_ID_NOT_FOUND; Kafka keeps sessions
across connections), and with kafka.max_incremental_fetch_session_cache_slots 0 a full Fetch is
answered session id 0 and full fetches keep working; with one slot a worker a consumer's full
fetch gets no session while another's young one holds the slot, and a replica's fetch
(privileged, as Kafka's followers) evicts it.

Usage: fetch_session.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (its HOST:PORT is our argv[1] too)
from kwire import (TAGS, Reader, array, carray, cstring, i8, i16, i32, i64,  # noqa: E402
                   string)
from tap import check, finish  # noqa: E402

RUN = uuid.uuid4().hex[:8]
NOT_FOUND, BAD_EPOCH, TOPIC_ID_ERROR = 70, 71, 106


def fetch_v11(c, session_id, epoch, listing, forgotten=(), max_wait_ms=0, send_only=False, replica=-1):
    """Fetch v11; listing [(topic, [(partition, offset)])], forgotten [(topic, [partitions])].
    Returns (error, session_id, {(topic, partition): (error, hw, [batch base offsets])})."""
    ts = [string(t) + array([i32(p) + i32(-1) + i64(o) + i64(-1) + i32(1 << 20) for p, o in parts])
          for t, parts in listing]
    fs = [string(t) + array([i32(p) for p in parts]) for t, parts in forgotten]
    body = (i32(replica) + i32(max_wait_ms) + i32(1) + i32(1 << 30) + i8(0) + i32(session_id) + i32(epoch)
            + array(ts) + array(fs) + string(""))
    if send_only:
        c.send(1, 11, body)
        return None
    return read_v11(c.call(1, 11, body, timeout=60))


def read_v11(r):
    if r is None:
        return None
    r.i32()
    err, sid = r.i16(), r.i32()
    out = {}

    def part():
        idx, perr, hw = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        recs = r.nbytes() or b""
        return idx, perr, hw, [struct.unpack(">q", b[:8])[0] for b in kc.batches(recs)]
    for name, parts in r.array(lambda: (r.string(), r.array(part))):
        for idx, perr, hw, bases in parts:
            out[(name.decode(), idx)] = (perr, hw, bases)
    return err, sid, out


def fetch_v13(c, session_id, epoch, listing, max_wait_ms=0):
    """Fetch v13 by topic id; listing [(topic_id, [(partition, offset)])].
    Returns (error, session_id, {(topic_id, partition): (error, hw, nbytes)})."""
    ts = [tid + carray([i32(p) + i32(-1) + i64(o) + i32(-1) + i64(-1) + i32(1 << 20) + TAGS
                        for p, o in parts]) + TAGS for tid, parts in listing]
    body = (i32(-1) + i32(max_wait_ms) + i32(1) + i32(1 << 30) + i8(0) + i32(session_id) + i32(epoch)
            + carray(ts) + carray([]) + cstring("") + TAGS)
    r = c.call_flex(1, 13, body, timeout=60)
    if r is None:
        return None
    r.i32()
    err, sid = r.i16(), r.i32()
    out = {}

    def part():
        idx, perr, hw = r.i32(), r.i16(), r.i64()
        r.i64(), r.i64()
        r.carray(lambda: (r.i64(), r.i64(), r.tags()))
        r.i32()
        recs = r.cbytes() or b""
        r.tags()
        return idx, perr, hw, len(recs)

    def topic():
        tid = r.uuid()
        parts = r.carray(part) or []
        r.tags()
        return tid, parts
    for tid, parts in r.carray(topic) or []:
        for idx, perr, hw, n in parts:
            out[(tid, idx)] = (perr, hw, n)
    r.tags()
    return err, sid, out


def rec(c, topic, partition, value=b"x"):
    return kc.produce_to(c, topic, partition, kc.build_batch(0, [value]))


def check_session(topic):
    c = kc.Conn()
    prod = kc.Conn()
    check("a record in partition 0", rec(prod, topic, 0) == 0)
    all3 = [(topic, [(0, 0), (1, 0), (2, 0)])]
    err, sid, parts = fetch_v11(c, 0, 0, all3)
    check("full fetch (epoch 0): no error, a new nonzero session id", err == 0 and sid > 0,
          f"got {err} {sid}")
    check("... every partition answered, partition 0 with its record",
          sorted(parts) == [(topic, 0), (topic, 1), (topic, 2)] and parts[(topic, 0)][2] == [0],
          f"{parts}")

    err, sid2, parts = fetch_v11(c, sid, 1, [(topic, [(0, 1)])])
    check("incremental (epoch 1), partition 0 at its new offset, nothing new: no partition answered",
          (err, sid2, parts) == (0, sid, {}), f"got {err} {sid2} {parts}")
    err, sid2, parts = fetch_v11(c, sid, 2, [])
    check("incremental (epoch 2) listing nothing: still none", (err, sid2, parts) == (0, sid, {}),
          f"got {err} {sid2} {parts}")

    check("a record in partition 1", rec(prod, topic, 1) == 0)
    err, sid2, parts = fetch_v11(c, sid, 3, [])
    check("incremental (epoch 3): partition 1 alone, with its record and new high watermark",
          err == 0 and sid2 == sid and list(parts) == [(topic, 1)] and parts[(topic, 1)] == (0, 1, [0]),
          f"got {err} {sid2} {parts}")

    err, _, parts = fetch_v11(c, sid, 4, [(topic, [(1, 1)])], forgotten=[(topic, [2])])
    check("incremental (epoch 4): partition 1 moved on, partition 2 forgotten: nothing answered",
          (err, parts) == (0, {}), f"got {err} {parts}")
    check("records in partitions 2 and 0", rec(prod, topic, 2) == 0 and rec(prod, topic, 0) == 0)
    err, _, parts = fetch_v11(c, sid, 5, [])
    check("incremental (epoch 5): partition 0 with its record, the forgotten partition 2 not",
          err == 0 and list(parts) == [(topic, 0)] and parts[(topic, 0)][2] == [1], f"got {err} {parts}")

    err, _, parts = fetch_v11(c, sid, 6, [(topic, [(0, 2), (2, 0)])])
    check("incremental (epoch 6) adding partition 2 back: it is answered with its record",
          err == 0 and list(parts) == [(topic, 2)] and parts[(topic, 2)] == (0, 1, [0]),
          f"got {err} {parts}")

    for bad in (3, 6, 8):
        err, sid2, parts = fetch_v11(c, sid, bad, [])
        check(f"epoch {bad} when 7 is due: INVALID_FETCH_SESSION_EPOCH, session id 0, no partitions",
              (err, sid2, parts) == (BAD_EPOCH, 0, {}), f"got {err} {sid2} {parts}")
    err, sid2, parts = fetch_v11(c, sid, 7, [(topic, [(2, 1)])])
    check("the right epoch (7) still served", (err, sid2, parts) == (0, sid, {}),
          f"got {err} {sid2} {parts}")

    other = sid + 1 if sid < 0x7fffffff else sid - 1
    err, sid2, parts = fetch_v11(c, other, 1, [])
    check("an unknown session id: FETCH_SESSION_ID_NOT_FOUND, session id 0, no partitions",
          (err, sid2, parts) == (NOT_FOUND, 0, {}), f"got {err} {sid2} {parts}")
    err, sid2, parts = fetch_v11(c, 0, 1, [])
    check("session id 0 with epoch 1: FETCH_SESSION_ID_NOT_FOUND", err == NOT_FOUND and sid2 == 0,
          f"got {err} {sid2}")

    # parked incremental fetches: woken by a produce, and timed out; each steps the epoch once
    fetch_v11(c, sid, 8, [], max_wait_ms=10000, send_only=True)
    time.sleep(0.5)
    t0 = time.time()
    check("a record in partition 1 while an incremental fetch (epoch 8) is parked",
          rec(prod, topic, 1) == 0)
    res = read_v11(c.recv(timeout=30))
    took = time.time() - t0
    check("the parked incremental fetch answers partition 1 alone, promptly",
          res is not None and res[0] == 0 and list(res[2]) == [(topic, 1)] and took < 5,
          f"got {res} after {took:.1f} s")
    t0 = time.time()
    err, _, parts = fetch_v11(c, sid, 9, [(topic, [(1, 2)])], max_wait_ms=1500)
    took = time.time() - t0
    check("epoch 9 is next (the parked one stepped once); nothing new: answered at max_wait_ms, empty",
          (err, parts) == (0, {}) and 1.2 < took < 6, f"got {err} {parts} after {took:.1f} s")
    err, _, parts = fetch_v11(c, sid, 10, [])
    check("after the timed-out park, epoch 10 is next", (err, parts) == (0, {}), f"got {err} {parts}")

    err, sid2, parts = fetch_v11(c, sid, -1, all3)
    check("epoch -1 naming the session: answered in full, sessionless (session id 0)",
          err == 0 and sid2 == 0 and len(parts) == 3, f"got {err} {sid2} {sorted(parts)}")
    err, sid2, _ = fetch_v11(c, sid, 11, [])
    check("... and the session is closed: FETCH_SESSION_ID_NOT_FOUND", err == NOT_FOUND,
          f"got {err} {sid2}")
    err, sid2, parts = fetch_v11(c, 0, -1, all3)
    check("epoch -1, session id 0: full and sessionless", err == 0 and sid2 == 0 and len(parts) == 3,
          f"got {err} {sid2}")

    err, sid, _ = fetch_v11(c, 0, 0, [(topic, [(0, 0)])])
    err2, sid2, parts = fetch_v11(c, sid, 1, [], forgotten=[(topic, [0])])
    check("forgetting every partition of a session: answered sessionless (session id 0)",
          err == 0 and sid > 0 and (err2, sid2, parts) == (0, 0, {}), f"got {err} {sid} {err2} {sid2}")
    err, _, _ = fetch_v11(c, sid, 2, [])
    check("... and the session is closed", err == NOT_FOUND, f"got {err}")

    # nothing to read is answered at once, whatever max_wait_ms says (Kafka's ReplicaManager
    # answers a fetch with no partitions without waiting); the Java consumer's close() sends
    # such a fetch (its session id, epoch -1) and waits for the answer
    t0 = time.time()
    res = fetch_v11(c, 0, -1, [], max_wait_ms=5000)
    took = time.time() - t0
    check("a sessionless fetch listing nothing, max_wait_ms 5000: answered at once, empty",
          res == (0, 0, {}) and took < 2, f"got {res} after {took:.1f} s")
    err, sid, _ = fetch_v11(c, 0, 0, [(topic, [(0, 0)])])
    t0 = time.time()
    res = fetch_v11(c, sid, -1, [], max_wait_ms=5000)
    took = time.time() - t0
    check("closing a session (its id, epoch -1, nothing listed; a consumer's close): answered at once",
          err == 0 and sid > 0 and res == (0, 0, {}) and took < 2, f"got {err} {sid} {res} after {took:.1f} s")
    err, sid, _ = fetch_v11(c, 0, 0, [(topic, [(0, 0)])])
    t0 = time.time()
    res = fetch_v11(c, sid, 1, [], forgotten=[(topic, [0])], max_wait_ms=5000)
    took = time.time() - t0
    check("forgetting every partition with max_wait_ms 5000: answered at once, sessionless, no error",
          err == 0 and sid > 0 and res == (0, 0, {}) and took < 2, f"got {err} {sid} {res} after {took:.1f} s")
    c.close()
    prod.close()


def check_topic_ids(topic):
    c = kc.Conn()
    tid = kc.topic_id(c, topic)
    check("the topic's id from Metadata v12", len(tid) == 16 and tid != bytes(16))
    err, sid, parts = fetch_v13(c, 0, 0, [(tid, [(0, 0), (1, 0)])])
    check("full Fetch v13 by topic id: a session, both partitions",
          err == 0 and sid > 0 and sorted(p for _, p in parts) == [0, 1], f"got {err} {sid} {parts}")
    err, sid2, parts = fetch_v13(c, sid, 1, [])
    check("incremental v13, nothing new: no partition", (err, sid2, parts) == (0, sid, {}),
          f"got {err} {sid2} {parts}")
    check("a record in partition 1", rec(c, topic, 1) == 0)
    err, _, parts = fetch_v13(c, sid, 2, [])
    check("incremental v13: partition 1 alone", err == 0 and list(parts) == [(tid, 1)], f"got {err} {parts}")
    err, sid2, parts = fetch_v11(c, sid, 3, [])
    check("a topic-id session used by Fetch v11 (names): FETCH_SESSION_TOPIC_ID_ERROR",
          (err, sid2, parts) == (TOPIC_ID_ERROR, 0, {}), f"got {err} {sid2} {parts}")
    err, sid2, parts = fetch_v13(c, sid, 3, [])
    check("... the session still serves v13 at that epoch", (err, sid2) == (0, sid), f"got {err} {sid2}")
    c.close()


# ---------------------------------------------------------------- kafka_pg only

def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)


def set_slots(v):
    sql = (f"ALTER SYSTEM SET kafka.max_incremental_fetch_session_cache_slots = {v}" if v is not None
           else "ALTER SYSTEM RESET kafka.max_incremental_fetch_session_cache_slots")
    r = psql(sql)
    if r.returncode != 0:
        print(r.stderr)
    psql("SELECT pg_reload_conf()")
    time.sleep(2)  # the workers reload at their next wake-up (at most 1 s)


def check_kafka_pg_only(topic):
    c = kc.Conn()
    err, sid, _ = fetch_v11(c, 0, 0, [(topic, [(0, 0)])])
    check("a session", err == 0 and sid > 0, f"got {err} {sid}")
    c.close()
    c = kc.Conn()
    err, sid2, _ = fetch_v11(c, sid, 1, [])
    check("kafka_pg: a session dies with its connection (FETCH_SESSION_ID_NOT_FOUND on a new one)",
          (err, sid2) == (NOT_FOUND, 0), f"got {err} {sid2}")

    set_slots(0)
    err, sid, parts = fetch_v11(c, 0, 0, [(topic, [(0, 0), (1, 0)])])
    check("no cache slots: a full fetch (epoch 0) is answered session id 0, in full",
          err == 0 and sid == 0 and len(parts) == 2 and parts[(topic, 0)][2][:1] == [0],
          f"got {err} {sid} {parts}")
    err, sid, parts = fetch_v11(c, 0, 0, [(topic, [(0, 0), (1, 0)])])
    check("... and again: full fetches go on working", err == 0 and sid == 0 and len(parts) == 2,
          f"got {err} {sid}")
    # one slot a worker: the first consumer session on each worker holds it, later ones get 0;
    # a replica's fetch (privileged, as Kafka's followers) evicts a consumer's session at once
    set_slots(1)
    conns = [kc.Conn() for _ in range(6)]
    got = [fetch_v11(x, 0, 0, [(topic, [(0, 0)])])[1] for x in conns]
    holders = [(x, sid) for x, sid in zip(conns, got) if sid != 0]
    others = [x for x, sid in zip(conns, got) if sid == 0]
    check("one slot a worker: 1 or 2 of 6 connections get a session, the others session id 0",
          1 <= len(holders) <= 2 and len(others) == 6 - len(holders), f"got {got}")
    if others:
        err, again, _ = fetch_v11(others[0], 0, 0, [(topic, [(0, 0), (1, 0)])])
        check("a consumer's full fetch does not evict a young session: session id 0 again",
              (err, again) == (0, 0), f"got {err} {again}")
        err, rsid, _ = fetch_v11(others[0], 0, 0, [(topic, [(0, 0)])], replica=1)
        check("a replica's full fetch evicts a consumer's session and gets one", err == 0 and rsid > 0,
              f"got {err} {rsid}")
        lost = [fetch_v11(x, sid, 1, [])[0] for x, sid in holders]
        check("... the evicted session's id is FETCH_SESSION_ID_NOT_FOUND, another worker's session lives",
              sorted(lost) == sorted([NOT_FOUND] + [0] * (len(holders) - 1)), f"got {lost}")
    for x in conns:
        x.close()
    set_slots(None)
    err, sid, _ = fetch_v11(c, 0, 0, [(topic, [(0, 0)])])
    check("slots back to the default: a session again", err == 0 and sid > 0, f"got {err} {sid}")
    c.close()


def main():
    c = kc.Conn()
    topic = f"fsess-{RUN}"
    check("create a topic of 3 partitions", kc.create_topic(c, topic, partitions=3) == 0)
    tid_topic = f"fsess-id-{RUN}"
    check("create a topic of 2 partitions", kc.create_topic(c, tid_topic, partitions=2) == 0)
    c.close()
    time.sleep(1)
    check_session(topic)
    check_topic_ids(tid_topic)
    if os.environ.get("PGPORT"):
        check_kafka_pg_only(topic)
    finish()


if __name__ == "__main__":
    main()
