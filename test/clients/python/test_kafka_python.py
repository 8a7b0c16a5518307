"""kafka-python (pure Python) against the broker at $KAFKA_BOOTSTRAP.

Runs under Debian's /usr/bin/python3 (kafka-python 2.0.2) and virtualenvs with PyPI releases (the
last 2.x and the current one). The consumer never joins a group: group_id=None, assign() and seek().
The admin API's return values changed between 2.x (raw responses) and 3.x (dicts); the helpers
below read both.
"""
import os
import time

import kafka
import kafka.errors as Errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

from harness import BOOTSTRAP, RUN_ID, check, eq, main, skip, test, topic_name, wait_until

VERSION = tuple(int(x) for x in kafka.__version__.split(".")[:2])
COMMON = {"bootstrap_servers": BOOTSTRAP, "request_timeout_ms": 30000}

_admin = []


def drop_admin():
    """A failed admin call can leave kafka-python's client broken; start the next test afresh."""
    while _admin:
        a = _admin.pop()
        try:
            a.close()
        except Exception:  # noqa: BLE001
            pass


def admin():
    if not _admin:
        _admin.append(KafkaAdminClient(**COMMON))
    return _admin[0]


def response_errors(resp):
    """{topic name: error code} from a CreateTopics/DeleteTopics/CreatePartitions result of any
    kafka-python version."""
    if isinstance(resp, dict):
        return {t["name"]: t["error_code"] for t in resp.get("topics", resp.get("results", []))}
    for attr in ("topic_errors", "topic_error_codes", "results"):
        items = getattr(resp, attr, None)
        if items is not None:
            out = {}
            for it in items:
                if hasattr(it, "name"):
                    out[it.name] = it.error_code
                else:
                    out[it[0]] = it[1]
            return out
    raise AssertionError(f"cannot read {resp!r}")


def admin_call(fn, *args, **kw):
    """Run an admin call; return {topic: error class name or None}."""
    try:
        codes = response_errors(fn(*args, **kw))
    except Errors.KafkaError as e:
        return {"*": type(e).__name__}
    return {t: (None if c == 0 else Errors.for_code(c).__name__) for t, c in codes.items()}


def create_topic(name, partitions=1, configs=None):
    eq(f"create {name}", {name: None},
       admin_call(admin().create_topics, [NewTopic(name, partitions, 1, topic_configs=configs or {})]))
    wait_until(f"metadata of {name}", lambda: partition_count(name) == partitions)
    return name


def partition_count(name):
    p = KafkaConsumer(**COMMON)
    try:
        parts = p.partitions_for_topic(name)
        return len(parts) if parts else 0
    finally:
        p.close()


def topic_configs(name):
    a = admin()
    res = ConfigResource(ConfigResourceType.TOPIC, name)
    if VERSION >= (3, 0):
        r = a.describe_configs([res], config_filter="all")
        return {k: v["value"] for k, v in r["topic"][name].items()}
    r = a.describe_configs([res])
    resource = r[0].resources[0]
    check(resource[0] == 0, f"describe_configs error {resource}")
    return {e[0]: e[1] for e in resource[4]}


def producer(**conf):
    return KafkaProducer(**COMMON, linger_ms=5, **conf)


def send_all(p, records):
    futures = [p.send(**r) for r in records]
    p.flush(30)
    return [f.get(30) for f in futures]


def consumer(**conf):
    return KafkaConsumer(**COMMON, group_id=None, enable_auto_commit=False, **conf)


def read(tps_offsets, count, timeout=30, **conf):
    """Assign the partitions, seek to the given offsets ('begin' for the start) and read count records."""
    c = consumer(**conf)
    try:
        tps = list(tps_offsets)
        c.assign(tps)
        for tp, off in tps_offsets.items():
            if off == "begin":
                c.seek_to_beginning(tp)
            else:
                c.seek(tp, off)
        out = []
        deadline = time.time() + timeout
        while len(out) < count and time.time() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out += recs
        check(len(out) >= count, f"read {len(out)} of {count} records in {timeout}s")
        # nothing more arrives
        extra = []
        for recs in c.poll(timeout_ms=500).values():
            extra += recs
        eq("records after the expected ones", [], [(r.partition, r.offset) for r in extra])
        return out
    finally:
        c.close()


def view(r):
    return (r.partition, r.offset, r.key, r.value, [(k, v) for k, v in (r.headers or [])])


# --- admin ------------------------------------------------------------------------------------

@test
def test_admin_create_list_delete_topics():
    a = admin()
    t1, t2 = topic_name("kp-admin"), topic_name("kp-admin")
    eq("create", {t1: None, t2: None}, admin_call(a.create_topics, [
        NewTopic(t1, 3, 1), NewTopic(t2, 1, 1, topic_configs={"retention.ms": "7200000"})]))
    wait_until("topics listed", lambda: {t1, t2} <= set(a.list_topics()))
    wait_until("3 partitions", lambda: partition_count(t1) == 3)
    err = admin_call(a.create_topics, [NewTopic(t1, 1, 1)])
    check(list(err.values()) == ["TopicAlreadyExistsError"], f"creating again: {err}")
    eq("delete", {t1: None, t2: None}, admin_call(a.delete_topics, [t1, t2]))
    wait_until("topics gone", lambda: not ({t1, t2} & set(a.list_topics())))
    err = admin_call(a.delete_topics, [t1])
    check(list(err.values()) == ["UnknownTopicOrPartitionError"], f"deleting again: {err}")


@test
def test_admin_create_partitions():
    a = admin()
    t = create_topic(topic_name("kp-parts"), 1)
    eq("create_partitions", {t: None}, admin_call(a.create_partitions, {t: NewPartitions(3)}))
    wait_until("3 partitions", lambda: partition_count(t) == 3)
    md = send_all(producer(), [{"topic": t, "partition": 2, "value": b"p2"}])
    eq("partition/offset", (2, 0), (md[0].partition, md[0].offset))
    eq("read", [(2, 0, None, b"p2", [])], [view(r) for r in read({TopicPartition(t, 2): "begin"}, 1)])


@test
def test_admin_describe_configs():
    t = create_topic(topic_name("kp-cfg"), 1, {"retention.ms": "3600000"})
    cfg = topic_configs(t)
    eq("retention.ms", "3600000", cfg.get("retention.ms"))
    eq("cleanup.policy", "delete", cfg.get("cleanup.policy"))
    eq("compression.type", "producer", cfg.get("compression.type"))


@test
def test_admin_alter_configs():
    t = create_topic(topic_name("kp-alter"), 1)
    res = ConfigResource(ConfigResourceType.TOPIC, t, configs={"retention.ms": "55555555"})
    try:
        admin().alter_configs([res])
    except Errors.KafkaError as e:
        raise AssertionError(f"alter_configs: {e!r}")
    wait_until("altered", lambda: topic_configs(t).get("retention.ms") == "55555555")


@test
def test_admin_delete_records():
    a = admin()
    if not hasattr(a, "delete_records"):
        skip(f"kafka-python {kafka.__version__} has no delete_records")
    t = create_topic(topic_name("kp-delrec"), 1)
    send_all(producer(), [{"topic": t, "partition": 0, "value": b"%d" % i} for i in range(10)])
    tp = TopicPartition(t, 0)
    r = a.delete_records({tp: 6})
    eq("low watermark", 6, r[tp]["low_watermark"])
    c = consumer()
    try:
        eq("beginning", {tp: 6}, c.beginning_offsets([tp]))
        eq("end", {tp: 10}, c.end_offsets([tp]))
    finally:
        c.close()
    eq("remaining", [(0, o, None, b"%d" % o, []) for o in range(6, 10)],
       [view(r) for r in read({tp: "begin"}, 4)])


@test
def test_admin_describe_cluster():
    d = admin().describe_cluster()
    host, port = BOOTSTRAP.rsplit(":", 1)
    check(any(b["host"] == host and b["port"] == int(port) for b in d["brokers"]), f"brokers: {d['brokers']}")
    check(d.get("controller_id") is not None, f"controller: {d}")


# --- produce / consume ------------------------------------------------------------------------

def produce_consume(codec):
    if codec != "none":
        try:
            p = producer(compression_type=codec)
        except (AssertionError, ValueError, Errors.KafkaError) as e:
            raise AssertionError(f"kafka-python {kafka.__version__} cannot use {codec}: {e!r}")
    else:
        p = producer()
    t = create_topic(topic_name(f"kp-{codec}"), 1)
    records = []
    for i in range(150):
        r = {"topic": t, "partition": 0, "value": (b"value-%d-" % i) * (i % 5 + 1)}
        if i % 3:
            r["key"] = b"key-%d" % i
        if i % 4 == 0:
            r["headers"] = [("h", b"v%d" % i), ("empty", b""), ("h", b"dup")]
        records.append(r)
    records.append({"topic": t, "partition": 0, "key": b"tombstone", "value": None})
    records.append({"topic": t, "partition": 0, "key": b"", "value": b""})
    md = send_all(p, records)
    p.close()
    eq("offsets", list(range(len(records))), [m.offset for m in md])
    got = read({TopicPartition(t, 0): "begin"}, len(records))
    eq("records", [(0, i, r.get("key"), r["value"], r.get("headers", [])) for i, r in enumerate(records)],
       [view(r) for r in got])
    now = time.time() * 1000
    for r in got:
        eq("timestamp type (0 = CreateTime)", 0, r.timestamp_type)
        check(now - 120000 < r.timestamp <= now + 1000, f"timestamp {r.timestamp}")


@test
def test_produce_consume_none():
    produce_consume("none")


@test
def test_produce_consume_gzip():
    produce_consume("gzip")


@test
def test_produce_consume_snappy():
    produce_consume("snappy")


@test
def test_produce_consume_lz4():
    produce_consume("lz4")


@test
def test_produce_consume_zstd():
    produce_consume("zstd")


@test
def test_seek_and_offsets():
    t = create_topic(topic_name("kp-seek"), 2)
    base = 1_650_000_000_000
    p = producer()
    send_all(p, [{"topic": t, "partition": 0, "value": b"a%d" % i, "timestamp_ms": base + i * 1000} for i in range(10)])
    send_all(p, [{"topic": t, "partition": 0, "value": b"b%d" % i, "timestamp_ms": base + i * 1000} for i in range(10, 15)])
    send_all(p, [{"topic": t, "partition": 1, "value": b"x", "timestamp_ms": base}])
    tp0, tp1 = TopicPartition(t, 0), TopicPartition(t, 1)
    got = read({tp0: 8}, 7)
    eq("from offset 8", [(o, (b"a%d" if o < 10 else b"b%d") % o) for o in range(8, 15)],
       [(r.offset, r.value) for r in got])
    got = read({tp0: 12, tp1: 0}, 4)
    eq("from offset 12 and partition 1", [(0, 12), (0, 13), (0, 14), (1, 0)],
       sorted((r.partition, r.offset) for r in got))
    eq("timestamps", [base + i * 1000 for i in range(12, 15)], [r.timestamp for r in got if r.partition == 0])
    c = consumer()
    try:
        eq("beginning_offsets", {tp0: 0, tp1: 0}, c.beginning_offsets([tp0, tp1]))
        eq("end_offsets", {tp0: 15, tp1: 1}, c.end_offsets([tp0, tp1]))
        r = c.offsets_for_times({tp0: base + 4500, tp1: base})
        eq("offsets_for_times", {tp0: (5, base + 5000), tp1: (0, base)},
           {tp: (v.offset, v.timestamp) for tp, v in r.items()})
        r = c.offsets_for_times({tp0: base + 100_000})
        eq("offsets_for_times past the end", {tp0: None}, r)
    finally:
        c.close()


@test
def test_keyed_partitioning():
    t = create_topic(topic_name("kp-keyed"), 4)
    md = send_all(producer(compression_type="gzip"),
                  [{"topic": t, "key": b"k%d" % (i % 8), "value": b"%d" % i} for i in range(40)])
    from kafka.partitioner.default import murmur2
    for m, i in zip(md, range(40)):
        eq("partition of key", (murmur2(b"k%d" % (i % 8)) & 0x7fffffff) % 4, m.partition)
    got = read({TopicPartition(t, p): "begin" for p in range(4)}, 40)
    eq("records", sorted((m.partition, m.offset, b"%d" % i) for i, m in enumerate(md)),
       sorted((r.partition, r.offset, r.value) for r in got))


@test
def test_large_message():
    t = create_topic(topic_name("kp-large"), 1)
    big = os.urandom(700_000)
    md = send_all(producer(), [{"topic": t, "partition": 0, "value": b"s"},
                               {"topic": t, "partition": 0, "value": big},
                               {"topic": t, "partition": 0, "value": b"after"}])
    eq("offsets", [0, 1, 2], [m.offset for m in md])
    # limits below the record size: the broker must still return it (KIP-74)
    got = read({TopicPartition(t, 0): 1}, 2, max_partition_fetch_bytes=65536, fetch_max_bytes=65536)
    eq("values", [big, b"after"], [r.value for r in got])


@test
def test_idempotent_producer():
    if "enable_idempotence" not in KafkaProducer.DEFAULT_CONFIG:
        skip(f"kafka-python {kafka.__version__} has no idempotent producer")
    t = create_topic(topic_name("kp-idem"), 1)
    p = producer(enable_idempotence=True, acks="all")
    md = send_all(p, [{"topic": t, "partition": 0, "value": b"%d" % i} for i in range(50)])
    eq("offsets", list(range(50)), [m.offset for m in md])
    eq("values", [b"%d" % i for i in range(50)], [r.value for r in read({TopicPartition(t, 0): "begin"}, 50)])


@test
def test_autocreate_on_metadata():
    t = topic_name("kp-auto")
    md = send_all(producer(), [{"topic": t, "value": b"auto"}])
    eq("offset", 0, md[0].offset)
    eq("read", [b"auto"], [r.value for r in read({TopicPartition(t, md[0].partition): "begin"}, 1)])


@test(tags=("txn",))
def test_transactions():
    if "transactional_id" not in KafkaProducer.DEFAULT_CONFIG:
        skip(f"kafka-python {kafka.__version__} has no transactions")
    t = create_topic(topic_name("kp-txn"), 1)
    p = producer(transactional_id=f"kp-txn-{RUN_ID}-{VERSION}")
    p.init_transactions()
    p.begin_transaction()
    for i in range(3):
        p.send(t, value=b"c%d" % i, partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.send(t, value=b"aborted", partition=0)
    p.flush()
    p.abort_transaction()
    p.close()
    got = read({TopicPartition(t, 0): "begin"}, 3, isolation_level="read_committed")
    eq("read_committed", [b"c0", b"c1", b"c2"], [r.value for r in got])


@test(tags=("groups",))
def test_group_subscribe_commit():
    t = create_topic(topic_name("kp-group"), 2)
    send_all(producer(), [{"topic": t, "partition": i % 2, "value": b"%d" % i} for i in range(10)])
    c = KafkaConsumer(t, **COMMON, group_id=f"kp-group-{RUN_ID}-{VERSION}", auto_offset_reset="earliest",
                      enable_auto_commit=False)
    try:
        got = []
        deadline = time.time() + 40
        while len(got) < 10 and time.time() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                got += recs
        eq("values", sorted(b"%d" % i for i in range(10)), sorted(r.value for r in got))
        c.commit()
        eq("committed", [5, 5], [c.committed(TopicPartition(t, p)) for p in (0, 1)])
    finally:
        c.close()


if __name__ == "__main__":
    main(f"kafka-python {kafka.__version__}", on_failure=drop_admin, client_id=f"kafka-python-{kafka.__version__}")
