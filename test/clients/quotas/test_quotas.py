#!/usr/bin/env python3
"""Client quotas (issue 10), the same checks against Apache Kafka 4.4 and kafka_pg.

- kafka-configs.sh --alter / --describe of user, client-id, user+client-id and <default>
  quotas; --delete-config;
- AlterClientQuotas on the wire: validate_only changes nothing; an unknown key, a value <= 0, a
  fractional byte rate and an empty entity are INVALID_REQUEST (kafka_pg also refuses ip quotas,
  with a message saying so);
- controller_mutation_rate (KIP-599): CreateTopics v7 takes partitions from a token bucket (a burst
  beyond it goes ahead, the next topic is THROTTLING_QUOTA_EXCEEDED with the time until the bucket
  is back at zero); v4 is permissive (created, throttled); other client ids are not affected;
- DescribeClientQuotas filters: exact, default, any (specified), strict;
- a producer (librdkafka, client.id quota-p) under producer_byte_rate = 100 KB/s holds about that
  rate (measured after the first window burst, over 28 s: within [0.5x, 1.5x]) and is told
  (throttle_time_ms > 0 in librdkafka's statistics); a consumer under consumer_byte_rate likewise;
  clients without a quota (client.id free-*) beside them are not slowed (> 3x the quota) and see
  no throttle;
- KIP-219 muting: two Produce requests sent back to back by a client that ignores
  throttle_time_ms: the second is answered only after the first one's throttle time;
- request_percentage: Metadata answers to a client with a tiny one carry throttle times, at most
  one window.

Usage: test_quotas.py HOST:PORT [--kafka_pg].  Needs confluent_kafka and KAFKA_SH (the path of
test/clients/kafka/kafka.sh).  Last line: "N passed, M failed".
"""
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, Producer

BOOTSTRAP = sys.argv[1]
HOST, PORT = BOOTSTRAP.rsplit(":", 1)
PORT = int(PORT)
KAFKA_PG = "--kafka_pg" in sys.argv
KAFKA_SH = os.environ["KAFKA_SH"]
QUOTA = 102400  # bytes per second
RUN = uuid.uuid4().hex[:6]

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}", flush=True)
    else:
        failed += 1
        print(f"not ok - {name} {detail}", flush=True)
    return ok


def configs(*args):
    p = subprocess.run([KAFKA_SH, "cli", "kafka-configs", "--bootstrap-server", BOOTSTRAP] + list(args),
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


# ------------------------------------------------------------------ raw requests (v0, classic)

def s16(v): return struct.pack(">h", v)
def s32(v): return struct.pack(">i", v)


def string(v):
    if v is None:
        return s16(-1)
    b = v.encode()
    return s16(len(b)) + b


def array(items):
    return s32(len(items)) + b"".join(items)


class R:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        v = self.b[self.p:self.p + n].decode()
        self.p += n
        return v


class Conn:
    def __init__(self):
        self.s = socket.create_connection((HOST, PORT), timeout=60)
        self.corr = 0

    def send(self, key, version, body, client_id="quota-raw"):
        self.corr += 1
        msg = struct.pack(">hhi", key, version, self.corr) + string(client_id) + body
        self.s.sendall(s32(len(msg)) + msg)

    def recv(self):
        def exact(n):
            buf = b""
            while len(buf) < n:
                c = self.s.recv(n - len(buf))
                if not c:
                    raise EOFError
                buf += c
            return buf
        n = struct.unpack(">i", exact(4))[0]
        r = R(exact(n))
        r.take(">i")  # correlation id
        return r

    def call(self, key, version, body):
        self.send(key, version, body)
        return self.recv()

    def call_as(self, key, version, body, client_id):
        self.send(key, version, body, client_id)
        return self.recv()


def alter_quotas(entries, validate_only=False):
    """entries: [([(type, name)], [(key, value, remove)])] -> {((type, name), ...): (error_code, message)}"""
    body = array([array([string(t) + string(n) for t, n in ent]) +
                  array([string(k) + struct.pack(">d?", v, rm) for k, v, rm in ops])
                  for ent, ops in entries]) + struct.pack(">?", validate_only)
    r = Conn().call(49, 0, body)
    r.take(">i")
    out = {}
    for _ in range(r.take(">i")):
        code = r.take(">h")
        msg = r.string()
        ent = tuple(sorted((r.string(), r.string()) for _ in range(r.take(">i"))))
        out[ent] = (code, msg)
    return out


def describe_quotas(components, strict=False):
    """components: [(type, match_type, match)] -> (error, {((type, name), ...): {key: value}})"""
    body = array([string(t) + struct.pack(">b", mt) + string(m) for t, mt, m in components]) + \
        struct.pack(">?", strict)
    r = Conn().call(48, 0, body)
    r.take(">i")
    err = r.take(">h")
    r.string()
    n = r.take(">i")
    found = {}
    for _ in range(max(n, 0)):
        ent = tuple(sorted((r.string(), r.string()) for _ in range(r.take(">i"))))
        vals = {}
        for _ in range(r.take(">i")):
            k = r.string()
            vals[k] = r.take(">d")
        found[ent] = vals
    return err, found


def produce_body(topic, payload):
    """Produce v3-v8 (acks=1) of one uncompressed v2 batch with one record."""
    rec_body = b"\x00" + b"\x00" + b"\x00" + b"\x01" + zigzag(len(payload)) + payload + b"\x00"
    rec = zigzag(len(rec_body)) + rec_body
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, 0, now, now, -1, -1, -1, 1) + rec
    crc = crc32c(after_crc)
    batch = struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), 0, 2) + struct.pack(">I", crc) + after_crc
    return string(None) + struct.pack(">hi", 1, 30000) + array([
        string(topic) + array([s32(0) + s32(len(batch)) + batch])])


def zigzag(v):
    v = (v << 1) ^ (v >> 63)
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def crc32c(data):
    crc = 0xffffffff
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xffffffff


# ------------------------------------------------------------------ checks

def check_configs_cli():
    rc, out = configs("--alter", "--entity-type", "users", "--entity-name", "alice",
                      "--add-config", "producer_byte_rate=1024,request_percentage=50")
    check("kafka-configs --alter users alice producer_byte_rate, request_percentage", rc == 0, out[-300:])
    rc, out = configs("--describe", "--entity-type", "users", "--entity-name", "alice")
    check("kafka-configs --describe users alice shows both quotas",
          rc == 0 and "producer_byte_rate=1024.0" in out and "request_percentage=50.0" in out, out[-300:])
    rc, out = configs("--alter", "--entity-type", "users", "--entity-name", "alice",
                      "--entity-type", "clients", "--entity-name", "c1", "--add-config", "consumer_byte_rate=2048")
    check("kafka-configs --alter users alice clients c1", rc == 0, out[-300:])
    rc, out = configs("--describe", "--entity-type", "users", "--entity-name", "alice",
                      "--entity-type", "clients", "--entity-name", "c1")
    check("kafka-configs --describe users alice clients c1",
          rc == 0 and "consumer_byte_rate=2048.0" in out and "producer_byte_rate" not in out, out[-300:])
    rc, out = configs("--alter", "--entity-type", "clients", "--entity-default",
                      "--add-config", "request_percentage=400")
    rc2, out2 = configs("--describe", "--entity-type", "clients", "--entity-default")
    check("kafka-configs --alter/--describe clients --entity-default",
          rc == 0 and rc2 == 0 and "default client-id" in out2 and "request_percentage=400.0" in out2,
          (out + out2)[-300:])
    rc, out = configs("--alter", "--entity-type", "clients", "--entity-default",
                      "--delete-config", "request_percentage")
    rc2, out2 = configs("--describe", "--entity-type", "clients", "--entity-default")
    check("kafka-configs --delete-config removes the default",
          rc == 0 and rc2 == 0 and "request_percentage" not in out2, (out + out2)[-300:])
    rc, out = configs("--describe", "--entity-type", "users")
    check("kafka-configs --describe --entity-type users lists alice",
          rc == 0 and "'alice'" in out and "producer_byte_rate=1024.0" in out, out[-300:])


def check_wire_rules():
    err, found = describe_quotas([("user", 0, "alice")])
    check("DescribeClientQuotas exact user alice: both alice entities",
          err == 0 and (("user", "alice"),) in found and (("client-id", "c1"), ("user", "alice")) in found,
          repr(found))
    err, found = describe_quotas([("user", 0, "alice")], strict=True)
    check("... strict: only the user-only entity", err == 0 and list(found) == [(("user", "alice"),)],
          repr(found))
    err, found = describe_quotas([("user", 2, None), ("client-id", 2, None)])
    check("DescribeClientQuotas any user and any client id: alice/c1 with consumer_byte_rate 2048",
          err == 0 and found.get((("client-id", "c1"), ("user", "alice"))) == {"consumer_byte_rate": 2048.0},
          repr(found))
    err, found = describe_quotas([("user", 1, None)])
    check("DescribeClientQuotas default user: nothing set", err == 0 and found == {}, repr(found))
    err, _ = describe_quotas([("user", 0, None)])
    check("DescribeClientQuotas exact with a null match: INVALID_REQUEST", err == 42, str(err))
    err, _ = describe_quotas([("bogus", 2, None)])
    check("DescribeClientQuotas unknown entity type: UNSUPPORTED_VERSION", err == 35, str(err))

    res = alter_quotas([([("user", "vo-" + RUN)], [("producer_byte_rate", 500.0, False)])], validate_only=True)
    err, found = describe_quotas([("user", 0, "vo-" + RUN)])
    check("AlterClientQuotas validate_only: no error, nothing stored",
          list(res.values()) == [(0, None)] and found == {}, repr((res, found)))
    res = alter_quotas([
        ([("user", "k1")], [("no_such_quota", 1.0, False)]),
        ([("user", "k2")], [("producer_byte_rate", -1.0, False)]),
        ([("user", "k3")], [("producer_byte_rate", 1.5, False)]),
        ([], [("producer_byte_rate", 10.0, False)]),
        ([("user", "")], [("producer_byte_rate", 10.0, False)]),
        ([("user", "ok-" + RUN)], [("request_percentage", 12.5, False)]),
    ])
    codes = {e: c for e, (c, _) in res.items()}
    check("AlterClientQuotas: unknown key, value <= 0, fractional byte rate, empty entity, empty name "
          "are INVALID_REQUEST; a good entry beside them is applied",
          codes == {(("user", "k1"),): 42, (("user", "k2"),): 42, (("user", "k3"),): 42, (): 42,
                    (("user", ""),): 42, (("user", "ok-" + RUN),): 0}, repr(res))
    err, found = describe_quotas([("user", 0, "ok-" + RUN)])
    check("... and stored", found == {(("user", "ok-" + RUN),): {"request_percentage": 12.5}}, repr(found))
    res = alter_quotas([([("user", "dup-" + RUN)], [("producer_byte_rate", 10.0, False)]),
                        ([("user", "dup-" + RUN)], [("consumer_byte_rate", 10.0, False)])])
    err, found = describe_quotas([("user", 0, "dup-" + RUN)])
    check("AlterClientQuotas with one entity twice: one INVALID_REQUEST entry (Ignoring duplicate entity), "
          "the first applied, the second not (as Kafka's ControllerApis)",
          len(res) == 1 and list(res.values())[0][0] == 42 and
          "Ignoring duplicate entity" in (list(res.values())[0][1] or "") and
          found == {(("user", "dup-" + RUN),): {"producer_byte_rate": 10.0}}, repr((res, found)))
    alter_quotas([([("user", "dup-" + RUN)], [("producer_byte_rate", 0.0, True)])])
    alter_quotas([([("user", "ok-" + RUN)], [("request_percentage", 0.0, True)])])
    err, found = describe_quotas([("user", 0, "ok-" + RUN)])
    check("AlterClientQuotas remove: the entity is gone", found == {}, repr(found))
    if KAFKA_PG:
        res = alter_quotas([([("ip", "127.0.0.1")], [("connection_creation_rate", 10.0, False)])])
        check("kafka_pg: ip quotas (connection_creation_rate) are refused, saying why",
              len(res) == 1 and all(c == 42 and "does not enforce" in (m or "") for c, m in res.values()),
              repr(res))


def uvarint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstring(v):
    b = v.encode()
    return uvarint(len(b) + 1) + b


def create_topic(client_id, topic, partitions, version):
    """CreateTopics of one topic (v4: classic, permissive under KIP-599; v7: flexible, strict) on a
    connection of its own -> (throttle_time_ms, error_code, error_message)."""
    c = Conn()
    if version >= 5:
        body = uvarint(2) + cstring(topic) + struct.pack(">ih", partitions, 1) + uvarint(1) + uvarint(1) + \
            b"\0" + struct.pack(">i?", 30000, False) + b"\0"
        # request header v2: client id (classic string), then its tagged fields
        c.corr += 1
        msg = struct.pack(">hhi", 19, version, c.corr) + string(client_id) + b"\0" + body
        c.s.sendall(s32(len(msg)) + msg)
        r = c.recv()
        r.take(">b")  # response header v1 tagged fields
        throttle = r.take(">i")
        r.take(">b")  # one topic (compact array length 2)
        n = r.take(">b") - 1
        r.p += n  # name
        r.p += 16  # topic id
        code = r.take(">h")
        n = r.take(">b") - 1
        msg = r.b[r.p:r.p + n].decode() if n > 0 else None
    else:
        body = array([string(topic) + struct.pack(">ih", partitions, 1) + array([]) + array([])]) + \
            struct.pack(">i?", 30000, False)
        r = c.call_as(19, version, body, client_id)
        throttle = r.take(">i")
        r.take(">i")
        r.string()
        code = r.take(">h")
        msg = r.string()
    c.s.close()
    return throttle, code, msg


def check_mutation_rate():
    """controller_mutation_rate (KIP-599): a token bucket of rate x 11 windows x 1 s partitions."""
    client = "mut-" + RUN
    rc, out = configs("--alter", "--entity-type", "clients", "--entity-name", client,
                      "--add-config", "controller_mutation_rate=1")
    rc2, out2 = configs("--describe", "--entity-type", "clients", "--entity-name", client)
    check("kafka-configs --alter/--describe clients controller_mutation_rate=1",
          rc == 0 and rc2 == 0 and "controller_mutation_rate=1.0" in out2, (out + out2)[-300:])
    time.sleep(3)  # Kafka applies quotas through its metadata log
    # the bucket holds 11 tokens: 8 + 8 partitions go ahead (a burst may take it below zero) ...
    a = create_topic(client, "mut-a-" + RUN, 8, 7)
    b = create_topic(client, "mut-b-" + RUN, 8, 7)
    check("CreateTopics v7 under controller_mutation_rate=1: 8 then 8 partitions are created, "
          "no throttle", a[:2] == (0, 0) and b[:2] == (0, 0), repr((a, b)))
    # ... then, with the bucket about 5 below zero, the next topic is refused (strict since v6)
    c = create_topic(client, "mut-c-" + RUN, 1, 7)
    check("... the next topic is THROTTLING_QUOTA_EXCEEDED with a throttle time of ~5 s",
          c[1] == 89 and 3000 <= c[0] <= 6000 and c[2] is None,
          repr(c))
    # older versions are permissive: created, and told the throttle time it earned
    d = create_topic(client, "mut-d-" + RUN, 1, 4)
    check("CreateTopics v4 (before KIP-599) over the quota: created, with a throttle time",
          d[1] == 0 and d[0] >= 2000, repr(d))
    f = create_topic("free-" + RUN, "mut-f-" + RUN, 8, 7)
    check("a client id without the quota creates 8 partitions unthrottled", f[:2] == (0, 0), repr(f))
    configs("--alter", "--entity-type", "clients", "--entity-name", client,
            "--delete-config", "controller_mutation_rate")


def stats_throttle(box):
    def cb(js):
        d = json.loads(js)
        for b in d.get("brokers", {}).values():
            box[0] = max(box[0], b.get("throttle", {}).get("max", 0))
    return cb


def produce_for(client_id, topic, seconds, payload=b"x" * 1000, max_records=None, delay=0):
    """Produce as fast as the broker lets us for `seconds`; [(t, bytes)] of deliveries, max throttle."""
    time.sleep(delay)
    box = [0]
    done = []
    sent = 0
    p = Producer({"bootstrap.servers": BOOTSTRAP, "client.id": client_id, "acks": 1, "linger.ms": 5,
                  "statistics.interval.ms": 1000, "stats_cb": stats_throttle(box),
                  "queue.buffering.max.kbytes": 256, "message.timeout.ms": 120000})

    def dr(err, msg):
        if err is None:
            done.append((time.monotonic(), len(msg.value())))
    start = time.monotonic()
    while time.monotonic() - start < seconds and (max_records is None or sent < max_records):
        try:
            p.produce(topic, payload, callback=dr)
            sent += 1
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    if max_records is not None:
        p.flush(60)
    p.poll(2)
    p.purge()
    p.flush(5)
    return start, done, box[0]


def consume_for(client_id, topic, seconds):
    box = [0]
    got = []
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "client.id": client_id, "group.id": "g-" + client_id + RUN,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "statistics.interval.ms": 1000, "stats_cb": stats_throttle(box)})
    c.subscribe([topic])
    start = None
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        now = time.monotonic()
        if m is not None and m.error() is None:
            if start is None:
                start = now
            got.append((now, len(m.value())))
        if start is not None and now - start > seconds:
            break
    c.poll(1.5)  # one more statistics callback
    c.close()
    return start or time.monotonic(), got, box[0]


def rate(start, events, skip, until=None):
    """Bytes per second delivered from start+skip to the last event (or until)."""
    t0 = start + skip
    ev = [(t, n) for t, n in events if t >= t0 and (until is None or t <= until)]
    if not ev:
        return 0.0
    end = until if until is not None else ev[-1][0]
    return sum(n for _, n in ev) / max(end - t0, 0.001)


def check_enforcement():
    topic = "quota-" + RUN
    c = Conn()
    rc, out = configs("--alter", "--entity-type", "clients", "--entity-name", "quota-p",
                      "--add-config", f"producer_byte_rate={QUOTA}")
    rc2, out2 = configs("--alter", "--entity-type", "clients", "--entity-name", "quota-c",
                        "--add-config", f"consumer_byte_rate={QUOTA}")
    check("producer_byte_rate and consumer_byte_rate set for client ids quota-p, quota-c",
          rc == 0 and rc2 == 0, (out + out2)[-300:])
    subprocess.run([KAFKA_SH, "cli", "kafka-topics", "--bootstrap-server", BOOTSTRAP, "--create",
                    "--topic", topic, "--partitions", "1", "--replication-factor", "1"],
                   capture_output=True, timeout=120)
    time.sleep(2)

    # a producer without quota beside the throttled one
    free = {}
    t = threading.Thread(target=lambda: free.update(r=produce_for("free-p", topic, 20, max_records=20000,
                                                                  delay=15)))
    t.start()
    start, done, throttle = produce_for("quota-p", topic, 40)
    t.join()
    r = rate(start, done, 12)
    check(f"producer under producer_byte_rate={QUOTA}: {r / 1024:.0f} KB/s from 12 s to 40 s, "
          f"within [0.5x, 1.5x]", 0.5 * QUOTA <= r <= 1.5 * QUOTA, f"({len(done)} records)")
    check(f"... and told so: librdkafka's throttle max {throttle} ms > 0", throttle > 0)
    fstart, fdone, fthrottle = free["r"]
    fr = rate(fstart, fdone, 0)
    check(f"producer without quota beside it (20 MB): {fr / 1024:.0f} KB/s > 3x the quota, no throttle",
          fr > 3 * QUOTA and fthrottle == 0, f"(throttle {fthrottle})")

    free = {}
    t = threading.Thread(target=lambda: free.update(r=consume_for("free-c", topic, 10)))
    t.start()
    start, got, throttle = consume_for("quota-c", topic, 40)
    t.join()
    r = rate(start, got, 12)
    check(f"consumer under consumer_byte_rate={QUOTA}: {r / 1024:.0f} KB/s from 12 s to 40 s, "
          f"within [0.5x, 1.5x]", 0.5 * QUOTA <= r <= 1.5 * QUOTA, f"({len(got)} records)")
    check(f"... and told so: librdkafka's throttle max {throttle} ms > 0", throttle > 0)
    fstart, fgot, fthrottle = free["r"]
    fr = sum(n for _, n in fgot) / max((fgot[-1][0] - fstart) if fgot else 1, 0.001)
    check(f"consumer without quota beside it: {fr / 1024:.0f} KB/s > 3x the quota, no throttle",
          fr > 3 * QUOTA and fthrottle == 0, f"(throttle {fthrottle}, {len(fgot)} records)")

    # KIP-219 muting, seen by a client that ignores throttle_time_ms
    configs("--alter", "--entity-type", "clients", "--entity-name", "quota-raw",
            "--add-config", "producer_byte_rate=10240")
    time.sleep(1)
    body = produce_body(topic, b"y" * 60000)
    for _ in range(3):
        c.send(0, 7, body)
    arrivals = []
    ths = []
    for _ in range(3):
        r = c.recv()
        arrivals.append(time.monotonic())
        r.take(">i")  # one topic
        r.string()
        r.take(">i")  # one partition
        r.take(">i")
        err = r.take(">h")
        r.take(">q"), r.take(">q"), r.take(">q")
        ths.append((err, r.take(">i")))
    gap2 = 1000 * (arrivals[1] - arrivals[0])
    gap3 = 1000 * (arrivals[2] - arrivals[1])
    check(f"KIP-219: a Produce v7 over the quota is answered at once ({gap2:.0f} ms) with throttle_time_ms "
          f"{ths[1][1]} > 0", ths[1][0] == 0 and ths[1][1] > 0 and gap2 < min(500, 0.5 * ths[1][1]), repr(ths))
    check(f"... then the connection is muted: the next answer came {gap3:.0f} ms later "
          f"(>= 0.8 x the throttle time)", gap3 >= 0.8 * ths[1][1], repr(ths))

    # request_percentage: a tiny share of a request thread; Metadata v4 answers carry the
    # throttle time, bounded by one quota window (ClientRequestQuotaManager)
    configs("--alter", "--entity-type", "clients", "--entity-name", "quota-req",
            "--add-config", "request_percentage=0.0001")
    time.sleep(1)
    c2 = Conn()
    throttles = []
    for _ in range(4):
        r = c2.call_as(3, 4, s32(-1) + b"\x01", "quota-req")
        throttles.append(r.take(">i"))
    check(f"request_percentage=0.0001: Metadata answers carry throttle times {throttles}, > 0 and at most "
          f"one window (1000 ms)", max(throttles) > 0 and max(throttles) <= 1000, repr(throttles))
    configs("--alter", "--entity-type", "clients", "--entity-name", "quota-req",
            "--delete-config", "request_percentage")

    for cid in ("quota-p", "quota-c", "quota-raw"):
        configs("--alter", "--entity-type", "clients", "--entity-name", cid, "--delete-config",
                "producer_byte_rate" if cid != "quota-c" else "consumer_byte_rate")
    configs("--alter", "--entity-type", "users", "--entity-name", "alice",
            "--delete-config", "producer_byte_rate,request_percentage")
    configs("--alter", "--entity-type", "users", "--entity-name", "alice",
            "--entity-type", "clients", "--entity-name", "c1", "--delete-config", "consumer_byte_rate")


check_configs_cli()
check_wire_rules()
check_mutation_rate()
check_enforcement()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
