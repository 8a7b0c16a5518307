#!/usr/bin/env python3
"""confluent-kafka's ShareConsumer (librdkafka's share consumer, KIP-932) against a broker:

1. two share consumers of one group (implicit acknowledgement) read a 2-partition topic of 200
   records: each record is delivered to exactly one of them, none is missing;
2. explicit acknowledgement: a released record comes back (delivery count 2), a rejected one
   never does, accepted ones never do;
3. a consumer that closes holding records it did not acknowledge: they go to another consumer
   of the group at once (delivery count 2), not after the acquisition lock (30 s);
4. acceptances still pending at close() are committed with it (librdkafka sends them with the
   share session's close and the group leave at the same time): none is delivered again;
5. an acceptance sent after the record's acquisition lock expired (a group whose
   share.record.lock.duration.ms is 15 s, Kafka's least): the commit's result for the partition is
   INVALID_RECORD_STATE, and the record is delivered again (delivery count 2);
6. a topic deleted and created again under its name while a consumer is subscribed: the consumer
   reads the new topic's records, each at delivery count 1, none of the old topic's.

Usage: confluent_share.py BOOTSTRAP GROUP, where GROUP has share.auto.offset.reset=earliest
(test/clients/share/run sets it with kafka-configs).  Each part uses a topic of its own.  Prints
"ok - ..." / "not ok - ..." per check and last "N passed, M failed".
"""
import sys
import time
import uuid

from confluent_kafka import AcknowledgeType, KafkaError, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

BS, GROUP = sys.argv[1], sys.argv[2]
RUN = uuid.uuid4().hex[:8]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"not ok - {name} {detail}")


def topic_with(name, n, partitions=2):
    admin = AdminClient({"bootstrap.servers": BS})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": BS})
    for i in range(n):
        p.produce(name, value=b"v%d" % i, partition=i % partitions)
    left = p.flush(30)
    if left:
        raise RuntimeError(f"{left} records not delivered")


def consumer(topic, explicit=False):
    c = ShareConsumer({"bootstrap.servers": BS, "group.id": GROUP,
                       "share.acknowledgement.mode": "explicit" if explicit else "implicit"})
    c.subscribe([topic])
    return c


def records(msgs):
    return [m for m in msgs if m.error() is None]


def part_each_once():
    topic = f"confluent-share-once-{RUN}"
    n = 200
    topic_with(topic, n)
    cs = [consumer(topic), consumer(topic)]
    got = [[], []]
    deadline = time.time() + 60
    while sum(map(len, got)) < n and time.time() < deadline:
        for k, c in enumerate(cs):
            got[k] += [m.value() for m in records(c.poll(0.5))]
    for c in cs:
        c.commit_sync(30)    # the last poll's records, accepted
        c.close()
    allv = got[0] + got[1]
    check(f"two ShareConsumers read the {n} records of a 2-partition topic, each once",
          len(allv) == n and set(allv) == {b"v%d" % i for i in range(n)},
          f"(got {len(allv)} records, {len(set(allv))} distinct; per consumer {[len(g) for g in got]})")


def part_explicit():
    topic = f"confluent-share-explicit-{RUN}"
    topic_with(topic, 6, partitions=1)
    c = consumer(topic, explicit=True)
    first = []
    deadline = time.time() + 60
    while len(first) < 6 and time.time() < deadline:
        batch = records(c.poll(0.5))
        for m in batch:
            o = m.offset()
            c.acknowledge(m, AcknowledgeType.RELEASE if o == 1 else
                          AcknowledgeType.REJECT if o == 2 else AcknowledgeType.ACCEPT)
            first.append((o, m.delivery_count()))
    c.commit_sync(30)
    check("explicit mode: the 6 records arrive once each, delivery count 1",
          sorted(first) == [(o, 1) for o in range(6)], f"(got {sorted(first)})")
    again = []
    deadline = time.time() + 20
    while time.time() < deadline and not again:
        for m in records(c.poll(0.5)):
            again.append((m.offset(), m.delivery_count()))
            c.acknowledge(m, AcknowledgeType.ACCEPT)
    c.commit_sync(30)
    # anything else would come in the same poll or soon after
    end = time.time() + 3
    while time.time() < end:
        for m in records(c.poll(0.5)):
            again.append((m.offset(), m.delivery_count()))
            c.acknowledge(m, AcknowledgeType.ACCEPT)
    c.close()
    check("the released record (offset 1) comes back with delivery count 2; the rejected and accepted ones do not",
          again == [(1, 2)], f"(got {again})")


def part_close_releases():
    topic = f"confluent-share-close-{RUN}"
    topic_with(topic, 5, partitions=1)
    a = consumer(topic, explicit=True)
    held = []
    deadline = time.time() + 60
    while len(held) < 5 and time.time() < deadline:
        held += [m.offset() for m in records(a.poll(0.5))]
    check("consumer A holds the 5 records", sorted(held) == list(range(5)), f"(held {held})")
    b = consumer(topic, explicit=True)
    t0 = time.time()
    a.close()            # without acknowledging: A's records go back
    got = []
    deadline = time.time() + 25
    while len(got) < 5 and time.time() < deadline:
        for m in records(b.poll(0.5)):
            got.append((m.offset(), m.delivery_count()))
            b.acknowledge(m, AcknowledgeType.ACCEPT)
    took = time.time() - t0
    b.commit_sync(30)
    b.close()
    check(f"A closes without acknowledging: B gets the 5 records (delivery count 2) within 10 s, not after "
          f"the 30 s lock (took {took:.1f} s)",
          sorted(got) == [(o, 2) for o in range(5)] and took < 10, f"(got {sorted(got)})")


def part_acks_on_close():
    topic = f"confluent-share-acks-on-close-{RUN}"
    topic_with(topic, 5, partitions=1)
    a = consumer(topic, explicit=True)
    got = []
    deadline = time.time() + 60
    while len(got) < 5 and time.time() < deadline:
        for m in records(a.poll(0.5)):
            got.append(m.offset())
            a.acknowledge(m, AcknowledgeType.ACCEPT)
    a.close()            # the pending acceptances go with the close (and the leave at the same time)
    b = consumer(topic)
    again = []
    end = time.time() + 5
    while time.time() < end:
        again += [(m.offset(), m.delivery_count()) for m in records(b.poll(0.5))]
    b.close()
    check("acceptances still pending at close() are committed with it (none delivered again to another consumer)",
          sorted(got) == list(range(5)) and again == [], f"(got {got}, then again {again})")


def part_ack_after_lock_expiry():
    topic = f"confluent-share-expiry-{RUN}"
    group = f"{GROUP}-expiry"
    admin = AdminClient({"bootstrap.servers": BS})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.record.lock.duration.ms", "15000", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(30)
    topic_with(topic, 1, partitions=1)
    c = ShareConsumer({"bootstrap.servers": BS, "group.id": group, "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    first = []
    deadline = time.time() + 60
    while not first and time.time() < deadline:
        first = records(c.poll(0.5))
    time.sleep(16)       # past the 15 s lock: the record is no longer this consumer's
    if first:
        c.acknowledge(first[0], AcknowledgeType.ACCEPT)
    result = c.commit_sync(30)
    codes = [e.args[0].code() for e in result.values() if e is not None]
    check("an acceptance after the record's lock expired: the commit's result is INVALID_RECORD_STATE",
          len(first) == 1 and codes == [KafkaError.INVALID_RECORD_STATE], f"(got {len(first)} records, {result})")
    again = []
    deadline = time.time() + 20
    while not again and time.time() < deadline:
        for m in records(c.poll(0.5)):
            again.append((m.offset(), m.delivery_count()))
            c.acknowledge(m, AcknowledgeType.ACCEPT)
    c.commit_sync(30)
    c.close()
    check("... and the record is delivered again, delivery count 2", again == [(0, 2)], f"(got {again})")


def part_topic_recreated():
    topic = f"confluent-share-recreate-{RUN}"
    admin = AdminClient({"bootstrap.servers": BS})
    fast = {"topic.metadata.refresh.interval.ms": 500, "topic.metadata.propagation.max.ms": 0}
    topic_with(topic, 3, partitions=1)
    c = ShareConsumer({"bootstrap.servers": BS, "group.id": GROUP, **fast})
    c.subscribe([topic])
    before = []
    deadline = time.time() + 60
    while len(before) < 3 and time.time() < deadline:
        before += [m.value() for m in records(c.poll(0.5))]
    c.commit_sync(30)
    for f in admin.delete_topics([topic]).values():
        f.result(30)
    deadline = time.time() + 30
    while topic in admin.list_topics(timeout=10).topics and time.time() < deadline:
        time.sleep(0.5)
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result(30)
    time.sleep(2)
    p = Producer({"bootstrap.servers": BS, **fast})
    for i in range(3):
        p.produce(topic, value=b"after-%d" % i, partition=0)
    p.flush(30)
    after = {}
    deadline = time.time() + 45
    while len(after) < 3 and time.time() < deadline:
        for m in records(c.poll(0.5)):
            after.setdefault(m.value(), m.delivery_count())
    c.close()
    check("a topic deleted and created again: the subscribed consumer reads the new topic's records, delivery "
          "count 1, none of the old topic's",
          len(before) == 3 and after == {b"after-%d" % i: 1 for i in range(3)}, f"(before {before}, after {after})")


for part in (part_each_once, part_explicit, part_close_releases, part_acks_on_close, part_ack_after_lock_expiry,
             part_topic_recreated):
    try:
        part()
    except Exception as e:
        check(f"{part.__name__} runs", False, f"({type(e).__name__}: {e})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
