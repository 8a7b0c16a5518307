#!/usr/bin/env python3
"""Share groups (KIP-932, issue 12) on the wire, with nothing but sockets, so the same file runs
against kafka_pg and Apache Kafka 4.4 (test/clients/kafka/kafka.sh), both with the broker's least
record lock lowered to 1 s for the lock-expiry check (Kafka: group.share.min.record.lock.duration.ms=1000;
kafka_pg: kafka.group_share_min_record_lock_duration_ms = 1000, which test/run-tests sets):

1. A parked ShareFetch (MaxWaitMs > 0, nothing acquirable) is answered as soon as records become
   acquirable again, not only when new records are appended (Apache Kafka 4.4 does so for a lock
   that expires; for the others it answers at MaxWaitMs - its acknowledgement completes the
   delayed share fetches before the release is applied: against Kafka those answers are printed for
   reference, not checked):
   - another member releases a record (ShareAcknowledge, type release): the redelivery latency to
     the parked consumer is measured over 5 rounds and printed (median, min-max);
   - another member's acquisition lock expires (share.record.lock.duration.ms = 2000);
   - another member leaves the group (ShareGroupHeartbeat, epoch -1) with its share session open:
     its records stay held, as in Kafka (the client's last acknowledgements may come with the
     session's close), until the connection that opened its session closes;
   - another member closes its share session (ShareAcknowledge, epoch -1);
   - (kafka_pg) a SQL transaction that held the records (kafka.share_acquire) rolls back.
   Each parked fetch waits up to 10 s (5 s in the release rounds); it must get the records
   (delivery count 2) within 2 s of the event (the lock within 2 s of the lock's end).
2. A ShareFetch whose share session holds no partition is answered at once (MaxWaitMs 5 s).
2a. A parked ShareFetch gets a record produced with acks=1 within 1 s (MaxWaitMs 5 s), 3 rounds:
   kafka_pg's share-partitions read up to the high watermark, which an acks=1 append moves only at
   the next WAL flush; the listener flushes for parked ShareFetches as for parked Fetches.
3. (kafka_pg) A share session close (epoch -1) of a member whose session the broker dropped to
   make room when its session table was full (kafka.group_share_session_timeout_ms lowered to
   1 s for the fill) still releases the member's records.
4. (kafka_pg) A release wakes the parked fetches of the partitions whose records were released,
   not those of every share-partition of the group: a member holding records of partition 0 of a
   2-partition topic closes its share session; the wait bucket of partition 0 moves
   (kafka._fetch_wait_changes), that of partition 1 (a share-partition of the group too) does not.
6. A group's share.record.lock.duration.ms outside the broker's bounds
   (group.share.min/max.record.lock.duration.ms) is INVALID_CONFIG.
5. (kafka_pg) A ShareFetch that fails (an ERROR in its transaction: a trigger on
   kafka.share_partitions raises; its connection, not the one that opened the session, is
   closed) does not use up the session epoch: the same epoch is served next.

The kafka_pg-only parts need PGDATABASE (and PGHOST, PGPORT, PGUSER) to reach the same server
through SQL; without it they are skipped.  Usage: share_wake.py HOST:PORT.  Last line:
"N passed, M failed".
"""
import base64
import os
import socket
import statistics
import struct
import sys
import threading
import time
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402
from kwire import (TAGS, Reader, array, carray, cstring, i8, i16, i32, i64,  # noqa: E402,F401
                   nbytes, string, uvarint)

HOST, PORT = sys.argv[1].rsplit(":", 1)
PORT = int(PORT)
RUN = uuid.uuid4().hex[:8]
SQL = bool(os.environ.get("PGDATABASE"))

INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_NOT_FOUND = 122


# ---------------------------------------------------------------- encoding: kwire.py

class Conn:
    def __init__(self):
        self.s = socket.create_connection((HOST, PORT), timeout=30)
        self.corr = 0

    def send(self, api_key, version, body, flexible=True):
        self.corr += 1
        hdr = struct.pack(">hhi", api_key, version, self.corr) + string(b"share-wake")
        if flexible:
            hdr += TAGS
        msg = hdr + body
        self.s.sendall(i32(len(msg)) + msg)

    def recv(self, flexible=True, timeout=30):
        self.s.settimeout(timeout)
        head = self._exact(4)
        if head is None:
            return None
        body = self._exact(struct.unpack(">i", head)[0])
        if body is None:
            return None
        r = Reader(body)
        r.corr = r.i32()
        if flexible:
            r.tags()
        return r

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            try:
                chunk = self.s.recv(n - len(buf))
            except (ConnectionResetError, socket.timeout, OSError):
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def call(self, api_key, version, body, flexible=True, timeout=30):
        self.send(api_key, version, body, flexible)
        return self.recv(flexible, timeout)

    def close(self):
        self.s.close()


# ---------------------------------------------------------------- requests

def create_topic(c, name, partitions=1):
    """CreateTopics v7: the topic id (16 bytes), or None."""
    t = cstring(name) + i32(partitions) + i16(1) + carray([]) + carray([]) + TAGS
    r = c.call(19, 7, carray([t]) + i32(30000) + i8(0) + TAGS)
    r.i32()

    def topic():
        name, tid, err, msg = r.cstring(), r.uuid(), r.i16(), r.cstring()
        r.i32(), r.i16()
        r.carray(lambda: (r.cstring(), r.cstring(), r.i8(), r.i8(), r.i8(), r.tags()))
        r.tags()
        return tid, err, msg
    tid, err, msg = r.carray(topic)[0]
    return tid if err == 0 else None


def set_group_configs(c, group, configs, with_message=False):
    """IncrementalAlterConfigs v0 (SET) on a GROUP resource: the error code (and message)."""
    cfg = [string(k) + i8(0) + string(v) for k, v in configs.items()]
    r = c.call(44, 0, array([i8(32) + string(group) + array(cfg)]) + i8(0), flexible=False)
    r.i32()
    res = r.array(lambda: (r.i16(), r.string(), r.i8(), r.string()))
    return (res[0][0], res[0][1]) if with_message else res[0][0]


def build_batch(values):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    ts = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(c, topic, values, acks=-1):
    """Produce v8 of one batch to partition 0: the error code."""
    batch = build_batch(values)
    pd = i32(0) + i32(len(batch)) + batch
    r = c.call(0, 8, string(None) + i16(acks) + i32(30000) + array([string(topic) + array([pd])]),
               flexible=False)
    return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                            r.array(lambda: (r.i32(), r.string())),
                                                            r.string()))))[0][1][0][1]


def find_coordinator(c, group):
    """FindCoordinator v1: the error code."""
    r = c.call(10, 1, string(group) + i8(0), flexible=False)
    r.i32()
    return r.i16()


def member_id():
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def heartbeat(c, group, member, epoch, topics):
    """ShareGroupHeartbeat v1: (error, member epoch, assigned partitions or None)."""
    body = (cstring(group) + cstring(member) + i32(epoch) + cstring(None)
            + (carray([cstring(t) for t in topics]) if topics is not None else uvarint(0)) + TAGS)
    r = c.call(76, 1, body)
    r.i32()
    err, _ = r.i16(), r.cstring()
    r.cstring()
    mepoch, _ = r.i32(), r.i32()
    assigned = None
    if r.i8() >= 0:
        assigned = r.carray(lambda: (r.uuid(), r.carray(r.i32), r.tags()))
        r.tags()
    return err, mepoch, assigned


def ack_batches(acks):
    """acks: [(first, last, type)]"""
    return carray([i64(f) + i64(l) + carray([i8(t)]) + TAGS for f, l, t in acks])


def share_fetch_body(group, member, epoch, tid, max_wait_ms, acks=(), max_records=500):
    parts = carray([i32(0) + ack_batches(list(acks)) + TAGS])
    topics = carray([tid + parts + TAGS]) if tid is not None else carray([])
    return (cstring(group) + cstring(member) + i32(epoch) + i32(max_wait_ms) + i32(1)
            + i32(1 << 20) + i32(max_records) + i32(max_records) + topics + carray([]) + TAGS)


def read_share_fetch(r):
    """(top-level error, {offset: delivery count} acquired, acknowledge error, partition error)."""
    r.i32()
    err, _ = r.i16(), r.cstring()
    r.i32()
    got = {}
    ack_err = 0

    def part():
        nonlocal ack_err
        r.i32()
        perr, _ = r.i16(), r.cstring()
        aerr, _ = r.i16(), r.cstring()
        ack_err = ack_err or aerr
        r.i32(), r.i32(), r.tags()
        r.cbytes()
        for f, l, d, _ in r.carray(lambda: (r.i64(), r.i64(), r.i16(), r.tags())) or []:
            for o in range(f, l + 1):
                got[o] = d
        r.tags()
        return perr

    def topic():
        r.uuid()
        parts = r.carray(part)
        r.tags()
        return parts
    tops = r.carray(topic) or []
    perr = next((e for t in tops for e in (t or []) if e), 0)
    return err, got, ack_err, perr


def share_fetch(c, group, member, epoch, tid, max_wait_ms, acks=(), max_records=500):
    r = c.call(78, 1, share_fetch_body(group, member, epoch, tid, max_wait_ms, acks, max_records),
               timeout=max_wait_ms / 1000 + 30)
    if r is None:
        return None
    return read_share_fetch(r)


def share_ack(c, group, member, epoch, tid, acks):
    """ShareAcknowledge v1: (top-level error, partition error)."""
    parts = carray([i32(0) + ack_batches(acks) + TAGS]) if acks else carray([])
    topics = carray([tid + parts + TAGS]) if acks else carray([])
    r = c.call(79, 1, cstring(group) + cstring(member) + i32(epoch) + topics + TAGS)
    if r is None:
        return None, None
    r.i32()
    err, _ = r.i16(), r.cstring()
    perr = 0

    def part():
        nonlocal perr
        r.i32()
        e, _ = r.i16(), r.cstring()
        perr = perr or e
        r.i32(), r.i32(), r.tags()
        r.tags()
    r.carray(lambda: (r.uuid(), r.carray(part), r.tags()))
    return err, perr


class Member:
    """A share group member with a share session on a connection of its own."""

    def __init__(self, group, topic, tid):
        self.group, self.topic, self.tid = group, topic, tid
        self.id = member_id()
        self.c = Conn()
        self.epoch = 0          # the share session's next epoch
        self.mepoch = 0
        deadline = time.time() + 60
        while True:
            err, self.mepoch, self.assigned = heartbeat(self.c, group, self.id, 0, [topic])
            if err not in (14, 15, 16) or time.time() > deadline:
                break
            find_coordinator(self.c, group)    # Kafka: the group coordinator may still be loading
            time.sleep(0.5)
        if err != 0:
            raise RuntimeError(f"heartbeat error {err}")

    def wait_assigned(self, timeout=30):
        deadline = time.time() + timeout
        while not self.assigned and time.time() < deadline:
            time.sleep(0.3)
            err, self.mepoch, a = heartbeat(self.c, self.group, self.id, self.mepoch, None)
            if a:
                self.assigned = a
        return bool(self.assigned)

    def fetch(self, max_wait_ms, acks=(), max_records=500):
        res = share_fetch(self.c, self.group, self.id, self.epoch, self.tid, max_wait_ms, acks, max_records)
        if res is not None and res[0] == 0:
            self.epoch += 1
        return res

    def fetch_until(self, want, timeout=30):
        """Fetch until `want` records are held; {offset: delivery count}."""
        held = {}
        deadline = time.time() + timeout
        while len(held) < want and time.time() < deadline:
            res = self.fetch(1000)
            if res is None or res[0] != 0:
                time.sleep(0.3)
                continue
            held.update(res[1])
        return held

    def ack(self, acks, epoch=None):
        e = self.epoch if epoch is None else epoch
        res = share_ack(self.c, self.group, self.id, e, self.tid, acks)
        if res[0] == 0 and e > 0:
            self.epoch += 1
        return res

    def leave(self):
        try:
            heartbeat(self.c, self.group, self.id, -1, None)
        except Exception:
            pass

    def close(self):
        try:
            if self.epoch > 0:
                self.ack([], epoch=-1)
        except Exception:
            pass
        self.leave()
        self.c.close()


class Parked(threading.Thread):
    """A member's ShareFetch sent now (it parks); its answer and when it came, once joined."""

    def __init__(self, member, max_wait_ms):
        super().__init__()
        self.m = member
        self.max_wait_ms = max_wait_ms
        self.result = None
        self.at = None
        self.sent = time.time()
        self.start()

    def run(self):
        self.result = self.m.fetch(self.max_wait_ms)
        self.at = time.time()


def setup(tag, n, lock_ms=None):
    """A topic of n records and a group reading it from the start; (topic, id, group)."""
    c = Conn()
    topic, group = f"share-wake-{tag}-{RUN}", f"share-wake-{tag}-g-{RUN}"
    tid = create_topic(c, topic)
    cfg = {"share.auto.offset.reset": "earliest"}
    if lock_ms:
        cfg["share.record.lock.duration.ms"] = str(lock_ms)
    err = set_group_configs(c, group, cfg)
    perr = produce(c, topic, [b"r%d" % i for i in range(n)])
    c.close()
    if tid is None or err != 0 or perr != 0:
        raise RuntimeError(f"setup of {topic}: topic id {tid}, config error {err}, produce error {perr}")
    return topic, tid, group


def parked_gets(name, p, want, event_at, within=2.0, kafka_too=False):
    """Check that parked fetch p answered within `within` s of event_at with want (offsets,
    delivery count 2).  Against Apache Kafka (no PGDATABASE) only the checks it passes too
    (kafka_too) are made; of the others its answer is shown, for reference."""
    p.join(timeout=30)
    res = p.result
    took = None if p.at is None else p.at - event_at
    ok = (res is not None and res[0] == 0 and res[3] == 0 and set(res[1]) == set(want)
          and all(d == 2 for d in res[1].values()) and took is not None and took < within)
    detail = f"(result {res}, answered {took if took is None else round(took, 3)} s after the event)"
    if SQL or kafka_too:
        check(name, ok, detail)
    else:
        print(f"# reference only (Kafka 4.4 does not do this): {name}: {'yes' if ok else 'no'} {detail}")
    if took is not None:
        print(f"# answered {took * 1000:.1f} ms after the event")
    return took


def check_release_latency():
    topic, tid, group = setup("release", 10, lock_ms=60000)
    a, b = Member(group, topic, tid), Member(group, topic, tid)
    a.wait_assigned(), b.wait_assigned()
    held = a.fetch_until(10)
    check("member A acquires the 10 records", len(held) == 10, f"(held {sorted(held)})")
    lat = []
    for i in range(5):
        if i > 0:
            b.ack([(i - 1, i - 1, 1)])          # B accepts what it got last round
        p = Parked(b, 5000)
        time.sleep(0.5)                          # B's fetch is parked now
        t0 = time.time()
        err = a.ack([(i, i, 2)])                 # A releases offset i
        took = parked_gets(f"round {i + 1}: A releases offset {i}; B's parked ShareFetch gets it at once",
                           p, [i], t0)
        if err != (0, 0):
            check(f"round {i + 1}: A's release is taken", False, f"(errors {err})")
        if took is not None:
            lat.append(took * 1000)
    if lat:
        print(f"# redelivery latency of a released record to a parked consumer: median "
              f"{statistics.median(lat):.1f} ms (min {min(lat):.1f}, max {max(lat):.1f}, {len(lat)} rounds)")
    a.close()
    b.close()


def check_lock_expiry():
    topic, tid, group = setup("expiry", 3, lock_ms=2000)
    a, b = Member(group, topic, tid), Member(group, topic, tid)
    a.wait_assigned(), b.wait_assigned()
    t0 = time.time()
    held = a.fetch_until(3)
    lock_end = t0 + 2.0
    check("member A acquires the 3 records under a 2 s lock", len(held) == 3, f"(held {sorted(held)})")
    p = Parked(b, 10000)
    parked_gets("A's lock expires: B's parked ShareFetch gets the records within 2 s of the lock's end",
                p, [0, 1, 2], lock_end, kafka_too=True)
    a.close()
    b.close()


def check_leave():
    topic, tid, group = setup("leave", 4)
    a, b = Member(group, topic, tid), Member(group, topic, tid)
    a.wait_assigned(), b.wait_assigned()
    held = a.fetch_until(4)
    check("member A acquires the 4 records", len(held) == 4)
    p = Parked(b, 10000)
    time.sleep(0.5)
    a.leave()
    time.sleep(1.5)
    check("A leaves the group with its share session open: its records stay held (B still waits)",
          p.is_alive(), f"(B answered {p.result})")
    t0 = time.time()
    a.c.close()
    parked_gets("... until A's connection closes: then B's parked ShareFetch gets them at once",
                p, [0, 1, 2, 3], t0)
    b.close()


def check_session_close():
    topic, tid, group = setup("close", 4)
    a, b = Member(group, topic, tid), Member(group, topic, tid)
    a.wait_assigned(), b.wait_assigned()
    held = a.fetch_until(4)
    check("member A acquires the 4 records", len(held) == 4)
    p = Parked(b, 10000)
    time.sleep(0.5)
    t0 = time.time()
    err = a.ack([], epoch=-1)
    check("A closes its share session (ShareAcknowledge, epoch -1)", err[0] == 0, f"(errors {err})")
    parked_gets("... and B's parked ShareFetch gets A's records at once", p, [0, 1, 2, 3], t0)
    a.leave()
    a.c.close()
    b.close()


def pg():
    import psycopg2
    conn = psycopg2.connect("")
    conn.autocommit = True
    return conn


def check_sql_rollback():
    topic, tid, group = setup("rollback", 5)
    b = Member(group, topic, tid)
    b.wait_assigned()
    s = pg()
    s.autocommit = False
    cur = s.cursor()
    cur.execute("SELECT \"offset\" FROM kafka.share_acquire(%s, %s, 10)", (group, topic))
    got = sorted(o for (o,) in cur.fetchall())
    check("a SQL transaction holds the 5 records", got == [0, 1, 2, 3, 4], f"(got {got})")
    p = Parked(b, 10000)
    time.sleep(0.5)
    t0 = time.time()
    s.rollback()
    parked_gets("the SQL transaction rolls back: B's parked ShareFetch gets the records at once",
                p, [0, 1, 2, 3, 4], t0)
    s.close()
    b.close()


def check_close_after_eviction():
    """A member whose session was dropped to make room (the table full) closes: its records go back."""
    topic, tid, group = setup("evicted", 3)
    a = Member(group, topic, tid)
    a.wait_assigned()
    held = a.fetch_until(3)
    check("member A acquires the 3 records", len(held) == 3)
    s = pg()
    cur = s.cursor()
    cur.execute("ALTER SYSTEM SET kafka.group_share_session_timeout_ms = 1000")
    cur.execute("SELECT pg_reload_conf()")
    fill_group = f"share-wake-fill-{RUN}"
    fillers = [member_id() for _ in range(2010)]
    c = Conn()
    try:
        time.sleep(2.0)                          # A's session is older than the timeout now
        for k in range(0, len(fillers), 200):    # open 2010 sessions, pipelined
            for m in fillers[k:k + 200]:
                c.send(78, 1, share_fetch_body(fill_group, m, 0, None, 0))
            for _ in fillers[k:k + 200]:
                c.recv()
    finally:
        cur.execute("ALTER SYSTEM RESET kafka.group_share_session_timeout_ms")
        cur.execute("SELECT pg_reload_conf()")
    time.sleep(0.5)
    err = a.ack([], epoch=-1)
    check("A's session is gone (made room for 2010 others): its close answers SHARE_SESSION_NOT_FOUND",
          err[0] == SHARE_SESSION_NOT_FOUND, f"(errors {err})")
    cur.execute("SELECT acquired, available FROM kafka.share_group_status WHERE group_id = %s", (group,))
    row = cur.fetchone()
    check("... and A's 3 records are released all the same (available again, none acquired)",
          row == (0, 3), f"(acquired, available: {row})")
    for k in range(0, len(fillers), 200):        # close the fillers' sessions
        for m in fillers[k:k + 200]:
            c.send(79, 1, cstring(fill_group) + cstring(m) + i32(-1) + carray([]) + TAGS)
        for _ in fillers[k:k + 200]:
            c.recv()
    c.close()
    a.leave()
    a.c.close()
    s.close()


def check_release_wakes_its_partitions():
    """A release wakes the partitions whose records were released, not the whole group's."""
    c = Conn()
    topic, group = f"share-wake-scope-{RUN}", f"share-wake-scope-g-{RUN}"
    tid = create_topic(c, topic, 2)
    err = set_group_configs(c, group, {"share.auto.offset.reset": "earliest"})
    s = pg()
    cur = s.cursor()
    # both partitions become share-partitions of the group (nothing to acquire yet)
    cur.execute("SELECT count(*) FROM kafka.share_acquire(%s, %s, 10)", (group, topic))
    cur.execute("SELECT count(*) FROM kafka.share_group_status WHERE group_id = %s", (group,))
    (nsp,) = cur.fetchone()
    perr = produce(c, topic, [b"p0-%d" % i for i in range(3)])     # partition 0 only
    c.close()
    check("the group has share-partitions 0 and 1; 3 records produced to partition 0",
          tid is not None and err == 0 and perr == 0 and nsp == 2,
          f"(topic id {tid}, config error {err}, produce error {perr}, share-partitions {nsp})")
    a = Member(group, topic, tid)
    a.wait_assigned()
    held = a.fetch_until(3)
    check("member A acquires the 3 records of partition 0", sorted(held) == [0, 1, 2],
          f"(held {sorted(held)})")

    def changes():
        cur.execute("SELECT kafka._fetch_wait_changes(p.partition_id) FROM kafka.partitions p"
                    " JOIN kafka.topics t USING (topic_id) WHERE t.name = %s ORDER BY p.partition",
                    (topic,))
        return [n for (n,) in cur.fetchall()]
    before = changes()
    err = a.ack([], epoch=-1)
    time.sleep(0.2)
    after = changes()
    cur.execute("SELECT partition, available FROM kafka.share_group_status WHERE group_id = %s"
                " ORDER BY partition", (group,))
    avail = cur.fetchall()
    check("A closes its share session: its 3 records are released",
          err[0] == 0 and avail == [(0, 3), (1, 0)], f"(errors {err}, available {avail})")
    check("... the fetches parked on partition 0 are woken (its wait bucket moved)",
          len(after) == 2 and after[0] > before[0], f"(changes before {before}, after {after})")
    check("... and not those of partition 1, where nothing was released (its bucket did not move)",
          len(after) == 2 and after[1] == before[1], f"(changes before {before}, after {after})")
    a.leave()
    a.c.close()
    s.close()


def check_failed_fetch_keeps_epoch():
    topic, tid, group = setup("epoch", 6)
    a = Member(group, topic, tid)
    a.wait_assigned()
    held = a.fetch_until(6)
    check("A opens its session and acquires the 6 records", len(held) == 6 and a.epoch >= 1,
          f"(held {sorted(held)})")
    e = a.epoch
    s = pg()
    cur = s.cursor()
    fn = f"kafka_pg_test_fail_{RUN}"
    cur.execute(f"CREATE FUNCTION public.{fn}() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$BEGIN RAISE EXCEPTION 'share_wake.py: injected failure'; END$$")
    cur.execute(f"CREATE TRIGGER {fn} BEFORE UPDATE ON kafka.share_partitions FOR EACH ROW "
                f"WHEN (OLD.group_id = '{group}') EXECUTE FUNCTION public.{fn}()")
    other = Conn()       # not the connection that opened the session: closing it ends nothing
    try:
        res = share_fetch(other, group, a.id, e, tid, 0)
        check(f"a ShareFetch (epoch {e}, on another connection) whose transaction fails gets no answer "
              f"(the connection closes)", res is None, f"(result {res})")
    finally:
        cur.execute(f"DROP TRIGGER {fn} ON kafka.share_partitions")
        cur.execute(f"DROP FUNCTION public.{fn}()")
    other.close()
    res = share_fetch(a.c, group, a.id, e, tid, 0)
    check(f"the same epoch {e} is served (the failed request did not use it up)",
          res is not None and res[0] == 0 and res[3] == 0, f"(result {res})")
    res = share_fetch(a.c, group, a.id, e + 1, tid, 0)
    check(f"... and then epoch {e + 1}", res is not None and res[0] == 0, f"(result {res})")
    res = share_fetch(a.c, group, a.id, e + 1, tid, 0)
    check(f"... while epoch {e + 1} again is INVALID_SHARE_SESSION_EPOCH",
          res is not None and res[0] == INVALID_SHARE_SESSION_EPOCH, f"(result {res})")
    a.epoch = e + 2
    a.close()
    s.close()


def check_acks1():
    """A parked ShareFetch gets a record produced with acks=1 at once: the share-partition reads up
    to the high watermark, which moves when the WAL is flushed; the listener flushes for the parked
    ShareFetch as for a parked Fetch (before, the append woke it while the record was still above
    the high watermark, and nothing woke it again: it answered at MaxWaitMs)."""
    topic, tid, group = setup("acks1", 1)
    m = Member(group, topic, tid)
    m.wait_assigned()
    held = m.fetch_until(1)
    m.ack([(0, 0, 1)])
    lat = []
    c = Conn()
    for i in range(3):
        p = Parked(m, 5000)
        time.sleep(0.5)                          # the fetch is parked now
        t0 = time.time()
        err = produce(c, topic, [b"acks1-%d" % i], acks=1)
        p.join(timeout=30)
        res = p.result
        took = None if p.at is None else p.at - t0
        ok = (err == 0 and res is not None and res[0] == 0 and list(res[1]) == [i + 1]
              and took is not None and took < 1.0)
        check(f"round {i + 1}: a record produced with acks=1 reaches the parked ShareFetch within 1 s "
              f"(MaxWaitMs 5000)", ok, f"(produce error {err}, result {res}, after {took} s; held first {held})")
        if took is not None:
            lat.append(took * 1000)
        if res is not None and res[0] == 0 and res[1]:
            m.ack([(o, o, 1) for o in res[1]])
    if lat:
        print(f"# acks=1 record to a parked ShareFetch: median {statistics.median(lat):.1f} ms "
              f"(min {min(lat):.1f}, max {max(lat):.1f}, {len(lat)} rounds)")
    c.close()
    m.close()


def check_nothing_to_read():
    """A ShareFetch whose share session holds no partition (it listed none) has nothing to wait
    for: answered at once whatever its MaxWaitMs, as Kafka answers it."""
    topic, tid, group = setup("empty", 1)
    m = Member(group, topic, tid)
    m.wait_assigned()
    for epoch, what in ((0, "opening a session that lists no partition"),
                        (1, "the next one on that session of no partition")):
        t0 = time.time()
        res = share_fetch(m.c, group, m.id, epoch, None, 5000)
        took = time.time() - t0
        check(f"nothing: a ShareFetch {what}, MaxWaitMs 5000, is answered at once, empty",
              res is not None and res[0] == 0 and res[1] == {} and took < 2,
              f"got {res} after {took:.1f} s")
    m.leave()
    m.c.close()


def check_lock_bounds():
    """A group's share.record.lock.duration.ms must be at least 1000, and lie within the broker's
    group.share.min.record.lock.duration.ms (15 s by default, 1 s where this file runs) and
    group.share.max.record.lock.duration.ms (60 s): INVALID_CONFIG (40) "... must be in the range
    MIN to 60000 inclusive." (kafka_pg took 1 s to 1 h until 2026-12-07)."""
    c = Conn()
    group = f"sw-bounds-{uuid.uuid4().hex[:8]}"
    find_coordinator(c, group)
    got = [set_group_configs(c, group, {"share.record.lock.duration.ms": v}, with_message=True)
           for v in ("999", "60001", "60000")]
    msgs = [(g[1] or b"").decode() for g in got]
    ok = [g[0] for g in got] == [40, 40, 0] and msgs[0] == (
        "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000") \
        and msgs[1].startswith("share.record.lock.duration.ms must be in the range ") \
        and msgs[1].endswith(" to 60000 inclusive.")
    check("share.record.lock.duration.ms of 999: INVALID_CONFIG, below its least (1000); 60001: outside the "
          "broker's bounds; 60000 taken", ok, f"(got {got})")
    c.close()


def main():
    only = os.environ.get("KP_SHARE_WAKE_ONLY",
                          "bounds,release,expiry,leave,close,nothing,acks1,rollback,evicted,scope,epoch").split(",")
    for name, fn, needs_sql in (("bounds", check_lock_bounds, False),
                                ("nothing", check_nothing_to_read, False),
                                ("release", check_release_latency, False),
                                ("acks1", check_acks1, False),
                                ("expiry", check_lock_expiry, False),
                                ("leave", check_leave, False),
                                ("close", check_session_close, False),
                                ("rollback", check_sql_rollback, True),
                                ("evicted", check_close_after_eviction, True),
                                ("scope", check_release_wakes_its_partitions, True),
                                ("epoch", check_failed_fetch_keeps_epoch, True)):
        if name not in only:
            continue
        if needs_sql and not SQL:
            print(f"# {name}: skipped (kafka_pg only, needs PGDATABASE)")
            continue
        try:
            fn()
        except Exception as e:    # a check that cannot run fails
            check(f"{name}: runs", False, f"({type(e).__name__}: {e})")
    finish()


if __name__ == "__main__":
    main()
