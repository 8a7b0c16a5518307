"""confluent-kafka-python (librdkafka) against the broker at $KAFKA_BOOTSTRAP.

Runs under Debian's /usr/bin/python3 (confluent-kafka 1.7.0 on librdkafka 2.0.2) and under a
virtualenv with the current PyPI release. Features a version lacks are skipped, not failed.
The Consumer always has a group.id (confluent-kafka requires one) but only uses assign() with
explicit offsets and never commits, so it needs no group coordination.
"""
import time

import confluent_kafka
from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, TIMESTAMP_CREATE_TIME, Consumer,
                             KafkaError, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from harness import BOOTSTRAP, RUN_ID, check, eq, main, skip, test, topic_name, wait_until

_v = confluent_kafka.version()
VERSION_STR = _v[0] if isinstance(_v, tuple) else str(_v)
VERSION = tuple(int(x) for x in VERSION_STR.split(".")[:2])
_lv = confluent_kafka.libversion()
LIBVERSION_STR = _lv[0] if isinstance(_lv, tuple) else str(_lv)
COMMON = {"bootstrap.servers": BOOTSTRAP, "socket.timeout.ms": 20000}


_admin = []


def drop_admin():
    _admin.clear()


def admin():
    """One AdminClient for the run: a futures' client must outlive the futures."""
    if not _admin:
        _admin.append(AdminClient(dict(COMMON)))
    return _admin[0]


def result(futures, timeout=30):
    """Wait for a dict of futures; return {key: result}, raising the first error."""
    return {k: f.result(timeout=timeout) for k, f in futures.items()}


def create_topic(name, partitions=1, config=None):
    result(admin().create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                           config=config or {})], operation_timeout=20))
    wait_until(f"metadata of {name}", lambda: len(partitions_of(name)) == partitions)
    return name


def partitions_of(name):
    md = admin().list_topics(topic=name, timeout=10)
    t = md.topics.get(name)
    if t is None or t.error is not None:
        return {}
    return t.partitions


def producer(**conf):
    return Producer({**COMMON, "linger.ms": 5, **conf})


def produce_all(p, records):
    """records: list of dicts of produce() kwargs. Returns delivery reports in produce order."""
    reports = [None] * len(records)

    def cb(i):
        def report(err, msg):
            reports[i] = (err, msg)
        return report

    for i, r in enumerate(records):
        p.produce(on_delivery=cb(i), **r)
        p.poll(0)
    left = p.flush(30)
    eq("messages still in queue after flush", 0, left)
    for i, (err, msg) in enumerate(reports):
        check(err is None, f"delivery report {i}: {err}")
    return [msg for _, msg in reports]


def consumer(**conf):
    return Consumer({**COMMON, "group.id": f"cg-{RUN_ID}", "enable.auto.commit": False,
                     "enable.auto.offset.store": False, "auto.offset.reset": "error",
                     "enable.partition.eof": True, **conf})


def consume_assigned(tps, count=None, timeout=30, **conf):
    """Assign the TopicPartitions (with offsets) and read until every partition reached EOF
    (and at least count messages, if given)."""
    c = consumer(**conf)
    try:
        c.assign(tps)
        eof = set()
        out = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            for m in c.consume(500, 1.0):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add((m.topic(), m.partition()))
                        continue
                    raise AssertionError(f"consume error: {m.error()}")
                out.append(m)
                eof.discard((m.topic(), m.partition()))
            if len(eof) == len(tps) and (count is None or len(out) >= count):
                return out
        raise AssertionError(f"timed out: {len(out)} messages, EOF on {sorted(eof)} of {len(tps)}")
    finally:
        c.close()


def view(m):
    return (m.partition(), m.offset(), m.key(), m.value(), [tuple(h) for h in (m.headers() or [])])


# --- admin ------------------------------------------------------------------------------------

@test
def test_admin_create_list_delete_topics():
    a = admin()
    t1, t2 = topic_name("ck-admin"), topic_name("ck-admin")
    fs = a.create_topics([NewTopic(t1, num_partitions=3, replication_factor=1),
                          NewTopic(t2, num_partitions=1, replication_factor=1,
                                   config={"retention.ms": "7200000"})], operation_timeout=20)
    eq("create results", {t1: None, t2: None}, result(fs))
    wait_until("both topics in metadata",
               lambda: len(partitions_of(t1)) == 3 and len(partitions_of(t2)) == 1)
    md = a.list_topics(timeout=10)
    check(t1 in md.topics and t2 in md.topics, "list_topics() lacks the new topics")
    eq("partition ids", [0, 1, 2], sorted(md.topics[t1].partitions))
    for p in md.topics[t1].partitions.values():
        check(p.leader in md.brokers, f"leader {p.leader} not among brokers {list(md.brokers)}")
        eq("replicas", [p.leader], list(p.replicas))
        eq("isrs", [p.leader], list(p.isrs))
    # creating it again fails with TOPIC_ALREADY_EXISTS
    try:
        result(a.create_topics([NewTopic(t1, num_partitions=1, replication_factor=1)]))
        raise AssertionError("creating an existing topic succeeded")
    except confluent_kafka.KafkaException as e:
        eq("error code", KafkaError.TOPIC_ALREADY_EXISTS, e.args[0].code())
    eq("delete results", {t1: None, t2: None}, result(a.delete_topics([t1, t2], operation_timeout=20)))
    wait_until("topics gone from metadata",
               lambda: t1 not in a.list_topics(timeout=10).topics and t2 not in a.list_topics(timeout=10).topics)
    try:
        result(a.delete_topics([t1]))
        raise AssertionError("deleting a deleted topic succeeded")
    except confluent_kafka.KafkaException as e:
        eq("error code", KafkaError.UNKNOWN_TOPIC_OR_PART, e.args[0].code())


@test
def test_admin_create_validate_only_and_errors():
    a = admin()
    t = topic_name("ck-validate")
    eq("validate_only", {t: None}, result(a.create_topics(
        [NewTopic(t, num_partitions=2, replication_factor=1)], validate_only=True)))
    time.sleep(1)
    check(t not in a.list_topics(timeout=10).topics, "validate_only created the topic")
    bad = topic_name("ck-bad")
    try:
        result(a.create_topics([NewTopic(bad, num_partitions=1, replication_factor=1,
                                          config={"no.such.config": "1"})]))
        raise AssertionError("an unknown topic config was accepted")
    except confluent_kafka.KafkaException as e:
        eq("error code", KafkaError.INVALID_CONFIG, e.args[0].code())


@test
def test_admin_create_partitions():
    a = admin()
    t = create_topic(topic_name("ck-parts"), 1)
    eq("create_partitions", {t: None}, result(a.create_partitions([NewPartitions(t, 4)], operation_timeout=20)))
    wait_until("4 partitions in metadata", lambda: len(partitions_of(t)) == 4)
    msgs = produce_all(producer(), [{"topic": t, "partition": 3, "value": b"in new partition"}])
    eq("partition/offset", (3, 0), (msgs[0].partition(), msgs[0].offset()))
    got = consume_assigned([TopicPartition(t, 3, OFFSET_BEGINNING)])
    eq("consumed", [(3, 0, None, b"in new partition", [])], [view(m) for m in got])
    # shrinking is refused
    try:
        result(a.create_partitions([NewPartitions(t, 2)]))
        raise AssertionError("reducing the partition count succeeded")
    except confluent_kafka.KafkaException as e:
        eq("error code", KafkaError.INVALID_PARTITIONS, e.args[0].code())


def describe_topic_configs(a, t):
    res = ConfigResource("topic", t) if VERSION < (2, 0) else ConfigResource(
        confluent_kafka.admin.ResourceType.TOPIC if hasattr(confluent_kafka.admin, "ResourceType")
        else "topic", t)
    return list(result(a.describe_configs([res])).values())[0]


@test
def test_admin_describe_configs():
    a = admin()
    t = create_topic(topic_name("ck-cfg"), 1, {"retention.ms": "3600000", "cleanup.policy": "delete"})
    cfg = describe_topic_configs(a, t)
    eq("retention.ms", "3600000", cfg["retention.ms"].value)
    eq("cleanup.policy", "delete", cfg["cleanup.policy"].value)
    check(not cfg["retention.ms"].is_default, "retention.ms set at creation reported as default")
    for name in ("segment.bytes", "max.message.bytes", "compression.type", "message.timestamp.type"):
        check(name in cfg, f"{name} missing from DescribeConfigs")
    eq("compression.type", "producer", cfg["compression.type"].value)
    eq("message.timestamp.type", "CreateTime", cfg["message.timestamp.type"].value)


@test
def test_admin_describe_broker_configs():
    a = admin()
    md = a.list_topics(timeout=10)
    broker = str(next(iter(md.brokers)))
    res = ConfigResource("broker", broker)
    cfg = list(result(a.describe_configs([res])).values())[0]
    check(len(cfg) > 0, "no broker configs")


@test
def test_admin_alter_configs():
    a = admin()
    t = create_topic(topic_name("ck-alter"), 1)
    res = ConfigResource("topic", t, set_config={"retention.ms": "123456789"})
    eq("alter_configs", [None], list(result(a.alter_configs([res])).values()))
    wait_until("retention.ms altered", lambda: describe_topic_configs(a, t)["retention.ms"].value == "123456789")


@test
def test_admin_incremental_alter_configs():
    a = admin()
    if not hasattr(a, "incremental_alter_configs"):
        skip(f"confluent-kafka {VERSION_STR} has no incremental_alter_configs")
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ResourceType
    t = create_topic(topic_name("ck-incr"), 1, {"cleanup.policy": "delete"})
    res = ConfigResource(ResourceType.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.ms", "987654", incremental_operation=AlterConfigOpType.SET)])
    result(a.incremental_alter_configs([res]))
    cfg = wait_until("retention.ms set", lambda: (lambda c: c if c["retention.ms"].value == "987654" else None)(
        describe_topic_configs(a, t)))
    eq("cleanup.policy kept", "delete", cfg["cleanup.policy"].value)


@test
def test_admin_describe_cluster():
    a = admin()
    if not hasattr(a, "describe_cluster"):
        skip(f"confluent-kafka {VERSION_STR} has no describe_cluster")
    d = a.describe_cluster().result(30)
    check(len(d.nodes) >= 1, f"nodes: {d.nodes}")
    host, port = BOOTSTRAP.rsplit(":", 1)
    check(any(n.host == host and n.port == int(port) for n in d.nodes), f"no node at {BOOTSTRAP}: {d.nodes}")
    check(d.cluster_id, "empty cluster id")


@test
def test_admin_list_offsets():
    a = admin()
    if not hasattr(a, "list_offsets"):
        skip(f"confluent-kafka {VERSION_STR} has no AdminClient.list_offsets")
    from confluent_kafka.admin import OffsetSpec
    t = create_topic(topic_name("ck-listoff"), 1)
    base = 1_700_000_000_000
    produce_all(producer(), [{"topic": t, "partition": 0, "value": b"%d" % i, "timestamp": base + i * 1000}
                             for i in range(5)])
    tp = TopicPartition(t, 0)
    for spec, want in ((OffsetSpec.earliest(), 0), (OffsetSpec.latest(), 5),
                       (OffsetSpec.for_timestamp(base + 2500), 3), (OffsetSpec.max_timestamp(), 4)):
        got = a.list_offsets({tp: spec})[tp].result(30)
        eq(f"list_offsets {spec}", want, got.offset)


@test
def test_admin_delete_records():
    a = admin()
    if not hasattr(a, "delete_records"):
        skip(f"confluent-kafka {VERSION_STR} has no AdminClient.delete_records")
    t = create_topic(topic_name("ck-delrec"), 1)
    produce_all(producer(), [{"topic": t, "partition": 0, "value": b"%d" % i} for i in range(10)])
    tp = TopicPartition(t, 0, 4)
    res = a.delete_records([tp])[tp].result(30)
    eq("low watermark", 4, res.low_watermark)
    c = consumer()
    try:
        eq("watermarks", (4, 10), c.get_watermark_offsets(TopicPartition(t, 0), timeout=10, cached=False))
    finally:
        c.close()
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)])
    eq("records left", [(0, o, None, b"%d" % o, []) for o in range(4, 10)], [view(m) for m in got])


# --- produce / consume ------------------------------------------------------------------------

def produce_consume(codec):
    t = create_topic(topic_name(f"ck-{codec}"), 1)
    p = producer(**{"compression.type": codec})
    records = []
    for i in range(200):
        r = {"topic": t, "partition": 0, "value": (b"value-%d-" % i) * (i % 7 + 1)}
        if i % 3:
            r["key"] = b"key-%d" % i
        if i % 4 == 0:
            r["headers"] = [("h", b"v%d" % i), ("empty", b""), ("h", b"dup")]
        records.append(r)
    records.append({"topic": t, "partition": 0, "key": b"tombstone", "value": None})
    records.append({"topic": t, "partition": 0, "key": b"", "value": b""})
    msgs = produce_all(p, records)
    eq("delivery offsets", list(range(len(records))), [m.offset() for m in msgs])
    eq("delivery partitions", {0}, {m.partition() for m in msgs})
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)])
    expected = [(0, i, r.get("key"), r["value"], [(k, v) for k, v in r.get("headers", [])])
                for i, r in enumerate(records)]
    eq("consumed records", expected, [view(m) for m in got])
    now = time.time() * 1000
    for m in got:
        ttype, ts = m.timestamp()
        eq("timestamp type", TIMESTAMP_CREATE_TIME, ttype)
        check(now - 120000 < ts <= now + 1000, f"timestamp {ts} not recent")


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
def test_keyed_partitioning_across_partitions():
    t = create_topic(topic_name("ck-keyed"), 3)
    records = [{"topic": t, "key": b"user-%d" % (i % 10), "value": b"%d" % i} for i in range(60)]
    msgs = produce_all(producer(**{"compression.type": "lz4"}), records)
    by_key = {}
    for m in msgs:
        by_key.setdefault(m.key(), set()).add(m.partition())
    check(all(len(s) == 1 for s in by_key.values()), f"a key went to several partitions: {by_key}")
    check(len({m.partition() for m in msgs}) > 1, "all keys in one partition")
    got = consume_assigned([TopicPartition(t, p, OFFSET_BEGINNING) for p in range(3)], count=60)
    eq("consumed (partition, offset, key, value)",
       sorted((m.partition(), m.offset(), m.key(), m.value()) for m in msgs),
       sorted((m.partition(), m.offset(), m.key(), m.value()) for m in got))


@test
def test_idempotent_producer():
    t = create_topic(topic_name("ck-idem"), 2)
    p = producer(**{"enable.idempotence": True, "compression.type": "zstd"})
    msgs = produce_all(p, [{"topic": t, "partition": i % 2, "value": b"%d" % i} for i in range(100)])
    for part in (0, 1):
        eq(f"offsets of partition {part}", list(range(50)), [m.offset() for m in msgs if m.partition() == part])
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING), TopicPartition(t, 1, OFFSET_BEGINNING)])
    eq("values", sorted(b"%d" % i for i in range(100)), sorted(m.value() for m in got))


@test
def test_large_message():
    t = create_topic(topic_name("ck-large"), 1)
    import os
    big = os.urandom(700_000)
    msgs = produce_all(producer(**{"compression.type": "gzip"}), [
        {"topic": t, "partition": 0, "value": b"small"}, {"topic": t, "partition": 0, "value": big},
        {"topic": t, "partition": 0, "value": b"after"}])
    eq("offsets", [0, 1, 2], [m.offset() for m in msgs])
    # fetch limits far below the message size: the broker must still return it (KIP-74)
    got = consume_assigned([TopicPartition(t, 0, 1)], **{"fetch.max.bytes": 100_000, "message.max.bytes": 100_000,
                                                         "max.partition.fetch.bytes": 100_000})
    eq("values", [big, b"after"], [m.value() for m in got])


@test
def test_consume_from_offsets_and_watermarks():
    t = create_topic(topic_name("ck-offsets"), 1)
    p = producer()
    produce_all(p, [{"topic": t, "partition": 0, "value": b"a%d" % i} for i in range(10)])
    produce_all(p, [{"topic": t, "partition": 0, "value": b"b%d" % i} for i in range(10, 15)])
    got = consume_assigned([TopicPartition(t, 0, 7)])
    eq("from offset 7", [(o, b"a%d" % o if o < 10 else b"b%d" % o) for o in range(7, 15)],
       [(m.offset(), m.value()) for m in got])
    got = consume_assigned([TopicPartition(t, 0, 12)])
    eq("from offset 12", [12, 13, 14], [m.offset() for m in got])
    c = consumer()
    try:
        eq("watermarks", (0, 15), c.get_watermark_offsets(TopicPartition(t, 0), timeout=10, cached=False))
    finally:
        c.close()
    # OFFSET_END: nothing until something new is produced
    c = consumer()
    try:
        c.assign([TopicPartition(t, 0, OFFSET_END)])
        wait_until("EOF at end", lambda: any(m.error() and m.error().code() == KafkaError._PARTITION_EOF
                                             for m in c.consume(10, 0.5)))
        produce_all(p, [{"topic": t, "partition": 0, "value": b"new"}])
        new = wait_until("the new message", lambda: [m for m in c.consume(10, 0.5) if not m.error()])
        eq("new message", [(15, b"new")], [(m.offset(), m.value()) for m in new])
    finally:
        c.close()


@test
def test_offsets_for_times():
    t = create_topic(topic_name("ck-times"), 2)
    base = 1_600_000_000_000
    produce_all(producer(), [{"topic": t, "partition": p, "value": b"%d" % i, "timestamp": base + i * 1000}
                             for p in (0, 1) for i in range(5)])
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)])
    eq("timestamps", [(TIMESTAMP_CREATE_TIME, base + i * 1000) for i in range(5)], [m.timestamp() for m in got])
    c = consumer()
    try:
        res = c.offsets_for_times([TopicPartition(t, 0, base + 2000), TopicPartition(t, 1, base + 2001)],
                                  timeout=15)
        eq("offsets for times", [(0, 2), (1, 3)], [(r.partition, r.offset) for r in res])
        for r in res:
            check(r.error is None, f"error {r.error}")
        res = c.offsets_for_times([TopicPartition(t, 0, 0)], timeout=15)
        eq("offset for time 0", 0, res[0].offset)
        res = c.offsets_for_times([TopicPartition(t, 0, base + 99_000)], timeout=15)
        eq("after the last timestamp", OFFSET_END, res[0].offset)
    finally:
        c.close()


@test
def test_isolation_levels_see_plain_data():
    t = create_topic(topic_name("ck-iso"), 1)
    produce_all(producer(), [{"topic": t, "partition": 0, "value": b"%d" % i} for i in range(5)])
    for level in ("read_committed", "read_uncommitted"):
        got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)], **{"isolation.level": level})
        eq(level, [b"%d" % i for i in range(5)], [m.value() for m in got])


@test
def test_metadata_unknown_topic_autocreated():
    t = topic_name("ck-auto")
    p = producer()
    produce_all(p, [{"topic": t, "value": b"auto"}])
    check(len(partitions_of(t)) >= 1, "auto-created topic missing from metadata")
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)])
    eq("auto-created topic", [b"auto"], [m.value() for m in got])


@test(tags=("txn",))
def test_transactions_commit_and_abort():
    t = create_topic(topic_name("ck-txn"), 1)
    p = producer(**{"transactional.id": f"ck-txn-{RUN_ID}"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(t, value=b"c%d" % i, partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(2):
        p.produce(t, value=b"a%d" % i, partition=0)
    p.flush(30)
    p.abort_transaction(30)
    produce_all(producer(), [{"topic": t, "partition": 0, "value": b"plain"}])
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)], **{"isolation.level": "read_committed"})
    eq("read_committed", [b"c0", b"c1", b"c2", b"plain"], [m.value() for m in got])
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)], **{"isolation.level": "read_uncommitted"})
    eq("read_uncommitted", [b"c0", b"c1", b"c2", b"a0", b"a1", b"plain"], [m.value() for m in got])


@test(tags=("txn",))
def test_transactions_send_offsets():
    """Consume-transform-produce: the group's offsets commit with the output (sendOffsetsToTransaction)."""
    src = create_topic(topic_name("ck-txin"), 1)
    dst = create_topic(topic_name("ck-txout"), 1)
    group = f"ck-txg-{RUN_ID}"
    produce_all(producer(), [{"topic": src, "partition": 0, "value": b"v%d" % i} for i in range(6)])
    p = producer(**{"transactional.id": f"ck-txo-{RUN_ID}"})
    p.init_transactions(30)
    c = Consumer({**COMMON, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    try:
        c.subscribe([src])
        copied = 0
        deadline = time.time() + 40
        while copied < 6 and time.time() < deadline:
            msgs = [m for m in c.consume(10, 1.0) if not m.error()]
            if not msgs:
                continue
            p.begin_transaction()
            for m in msgs:
                p.produce(dst, value=b"out-" + m.value(), partition=0)
            p.send_offsets_to_transaction([TopicPartition(src, 0, msgs[-1].offset() + 1)],
                                          c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
            copied += len(msgs)
        eq("copied", 6, copied)
        committed = c.committed([TopicPartition(src, 0)], timeout=15)
        eq("committed offset", 6, committed[0].offset)
    finally:
        c.close()
    got = consume_assigned([TopicPartition(dst, 0, OFFSET_BEGINNING)], **{"isolation.level": "read_committed"})
    eq("output", [b"out-v%d" % i for i in range(6)], [m.value() for m in got])


@test(tags=("txn",))
def test_transactions_fencing():
    """A second producer with the same transactional.id fences the first: its commit fails fatally."""
    t = create_topic(topic_name("ck-txfence"), 1)
    tid = f"ck-txf-{RUN_ID}"
    old = producer(**{"transactional.id": tid})
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(t, value=b"zombie", partition=0)
    old.flush(30)
    new = producer(**{"transactional.id": tid})
    new.init_transactions(30)
    new.begin_transaction()
    new.produce(t, value=b"fresh", partition=0)
    new.commit_transaction(30)
    try:
        old.commit_transaction(30)
        check(False, "the fenced producer committed")
    except confluent_kafka.KafkaException as e:
        err = e.args[0]
        check(err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                            KafkaError.INVALID_PRODUCER_EPOCH),
              f"expected a fencing error, got {err}")
    got = consume_assigned([TopicPartition(t, 0, OFFSET_BEGINNING)], **{"isolation.level": "read_uncommitted"})
    eq("read_uncommitted", [b"zombie", b"fresh"], [m.value() for m in got])


@test(tags=("groups",))
def test_group_subscribe_commit():
    t = create_topic(topic_name("ck-group"), 2)
    produce_all(producer(), [{"topic": t, "partition": i % 2, "value": b"%d" % i} for i in range(10)])
    group = f"ck-group-{RUN_ID}"
    c = Consumer({**COMMON, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([t])
        got = []
        deadline = time.time() + 40
        while len(got) < 10 and time.time() < deadline:
            got += [m for m in c.consume(10, 1.0) if not m.error()]
        eq("values", sorted(b"%d" % i for i in range(10)), sorted(m.value() for m in got))
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(t, 0), TopicPartition(t, 1)], timeout=15)
        eq("committed", [5, 5], [tp.offset for tp in committed])
    finally:
        c.close()


if __name__ == "__main__":
    main(f"confluent-kafka {VERSION_STR} (librdkafka {LIBVERSION_STR})", on_failure=drop_admin, client_id=f"confluent-kafka-{VERSION_STR}")
