#!/usr/bin/env python3
"""Broker configs on the wire: IncrementalAlterConfigs v1, AlterConfigs v2 and DescribeConfigs v4 of
the BROKER resource, against the broker at $KAFKA_BOOTSTRAP. Each expectation is what Apache Kafka
4.4 (single-node KRaft) answers; Kafka applies a change a moment after it answers, so DescribeConfigs
is polled:
  - a per-broker dynamic config (background.threads SET 9, as librdkafka's 0081 sets it): NONE, then
    described with value 9, source DYNAMIC_BROKER_CONFIG (2), not read-only, synonyms [9 (2), the
    default 10 (5)]; DELETE: back to the default (5);
  - log.cleanup.policy APPEND compact: "delete,compact" (the default plus compact), SUBTRACT compact:
    "delete" (still dynamic), DELETE: the default;
  - validate_only changes nothing; legacy AlterConfigs v2 (sasl.kerberos.min.time.before.relogin
    58000) sets it, and replaces the whole set: a dynamic config it does not name goes back to its
    default;
  - a name the broker does not know: kept (NONE), described with value null, read-only, source 2,
    type UNKNOWN (0), sensitive; APPEND to it INVALID_CONFIG (40) "Unknown config name: ..."; DELETE: NONE;
  - the cluster level (broker ""): background.threads SET 7 there, then DescribeConfigs of "" lists
    it with source DYNAMIC_DEFAULT_BROKER_CONFIG (3) and itself as its one synonym, and lists
    nothing that is not set at that level (no default, no static config); DELETE there: gone;
  - node.id SET: INVALID_REQUEST (42) "Cannot update these configs dynamically: [node.id]"; DELETE:
    NONE; a bad number: 42 "Invalid value abc for configuration background.threads: Not a number of
    type INT" / "... Value must be at least 1"; APPEND to a non-list: 40 "Config value append is not
    allowed for config key: background.threads"; a null SET value: 42 "Null value not supported for :
    ..."; a key twice: 42 "Error due to duplicate config keys"; another broker id: 42 "Unexpected
    broker id, expected N, but received 7"; an id with a sign or leading zeros is the same id (Kafka
    reads it with Integer.parseInt), one with spaces or letters, or beyond int32: 42 "Node id must be
    an integer, but it is: X" (DescribeConfigs: "Broker id must be ...").
The cleaner's, share groups', fetch sessions' and quotas' broker configs (log.cleaner.backoff.ms,
log.retention.check.interval.ms, group.share.record.lock.duration.ms, fetch.max.bytes, ...) are
described as numbers of Kafka's types, broker.rack unset as null; log.cleaner.backoff.ms SET (sarama's
functional suite adds 1 to it), described as DYNAMIC_BROKER_CONFIG, and DELETE (or SET, if it was
dynamic before) brings the old value back (kafka_pg: kafka.log_cleaner_backoff_ms, ALTER SYSTEM and a
reload).
The broker configs Kafka derives from another setting (log.retention.ms, log.roll.ms,
log.roll.jitter.ms, log.flush.interval.ms) are described with a null value; log.roll.ms SET: its
synonyms are itself and DEFAULT_CONFIG log.roll.hours=168; DELETE: null again.
Then a topic's synonyms with include_synonyms (kafkajs's describeConfigs spec): defaults list only
the broker default under the broker's name where Kafka's broker config has a default of its own
(segment.bytes: log.segment.bytes; not retention.ms, segment.ms, flush.ms, nor a config without a
broker synonym); an override lists itself (DYNAMIC_TOPIC_CONFIG) first; the topic configs new in
Kafka 4.4 (max.decompressed.message.bytes, errors.deadletterqueue.group.enable, remote.copy.lag.*,
remote.log.copy.disable, remote.log.delete.on.disable) are described with Kafka's defaults. An
empty key list describes every config, as a null one does. A topic's cleanup.policy is a list as
Kafka 4.4's: "" is allowed (no policy), a repeated element is dropped ("delete,delete" is "delete"),
an empty element is INVALID_CONFIG ("delete,,compact", ","), and SUBTRACT of its last element
leaves "".
One intended difference: num.partitions is read-only on Kafka (42 "Cannot update these configs
dynamically") and a PostgreSQL setting on kafka_pg (kafka.num_partitions, ALTER SYSTEM and a
reload): both answers are accepted, and on kafka_pg the new value must be described, a legacy
AlterConfigs that does not name it must reset it, and DELETE must bring back the old value.
Standard library only; shares describe_partitions.py's encoding. Prints "ok - ..." / "not ok - ..."
and "N passed, M failed".
"""
import socket
import sys
import time
import uuid

import describe_partitions as w
from describe_partitions import check, cstr, i8, uvarint

BROKER = 4
TOPIC = 2


def main():
    host, port = w.BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)

    def alter_response(r):
        r.i32()

        def one():
            x = (r.i16(), r.cstr())
            r.i8(), r.cstr()
            r.tags()
            return x
        return r.carray(one)[0]

    def incr(name, confs, validate=False, rtype=BROKER):
        body = uvarint(2) + i8(rtype) + cstr(name) + uvarint(len(confs) + 1)
        for k, op, v in confs:
            body += cstr(k) + i8(op) + cstr(v) + b"\0"
        body += b"\0" + i8(1 if validate else 0) + b"\0"
        return alter_response(w.call(s, 44, 1, body))

    def legacy(name, confs):
        body = uvarint(2) + i8(BROKER) + cstr(name) + uvarint(len(confs) + 1)
        for k, v in confs:
            body += cstr(k) + cstr(v) + b"\0"
        body += b"\0" + i8(0) + b"\0"
        return alter_response(w.call(s, 33, 2, body))

    def describe(name, keys, rtype=BROKER):
        body = uvarint(2) + i8(rtype) + cstr(name)
        body += uvarint(0) if keys is None else uvarint(len(keys) + 1) + b"".join(cstr(k) for k in keys)
        body += b"\0" + i8(1) + i8(0) + b"\0"
        r = w.call(s, 32, 4, body)
        r.i32()

        def syn():
            x = (r.cstr(), r.cstr(), r.i8())
            r.tags()
            return x

        def conf():
            x = {"name": r.cstr(), "value": r.cstr(), "ro": r.i8(), "src": r.i8(), "sens": r.i8(),
                 "syn": r.carray(syn), "type": r.i8(), "doc": r.cstr()}
            r.tags()
            return x

        def res():
            x = (r.i16(), r.cstr(), r.i8(), r.cstr(), r.carray(conf))
            r.tags()
            return x
        err, msg, _, _, confs = r.carray(res)[0]
        return {c["name"]: c for c in confs or []}

    def describe_error(name, rtype=BROKER):
        body = uvarint(2) + i8(rtype) + cstr(name) + uvarint(0) + b"\0" + i8(0) + i8(0) + b"\0"
        r = w.call(s, 32, 4, body)
        r.i32()
        r.uvarint()
        return r.i16(), r.cstr()

    def await_conf(key, pred, seconds=10):
        c = None
        deadline = time.time() + seconds
        while time.time() < deadline:
            c = describe(node, [key]).get(key)
            if c is not None and pred(c):
                return True, c
            time.sleep(0.2)
        return False, c

    # the broker's id, from DescribeCluster v0
    r = w.call(s, 60, 0, i8(0) + b"\0")
    r.i32(), r.i16(), r.cstr(), r.cstr(), r.i32()
    node = str(r.carray(lambda: (r.i32(), r.cstr(), r.i32(), r.cstr(), r.tags())[0])[0])
    c = describe(node, ["node.id"]).get("node.id")
    check("DescribeConfigs v4 of broker %s: node.id %s, read-only" % (node, node),
          c and c["value"] == node and c["ro"] == 1, c)

    # --- a per-broker dynamic config
    check("background.threads SET 9 with validate_only: NONE",
          incr(node, [("background.threads", 0, "9")], validate=True) == (0, None))
    time.sleep(1)
    c = describe(node, ["background.threads"]).get("background.threads")
    check("... and nothing changed: background.threads is its default (source 5)",
          c and c["src"] == 5, c)
    check("background.threads SET 9: NONE", incr(node, [("background.threads", 0, "9")]) == (0, None))
    good, c = await_conf("background.threads", lambda c: c["src"] == 2 and c["value"] == "9")
    check("background.threads described: 9, DYNAMIC_BROKER_CONFIG, not read-only, over the default 10",
          good and c["src"] == 2 and c["ro"] == 0 and c["type"] == 3
          and c["syn"] == [("background.threads", "9", 2), ("background.threads", "10", 5)], c)
    check("background.threads DELETE: NONE", incr(node, [("background.threads", 1, None)]) == (0, None))
    good, c = await_conf("background.threads", lambda c: c["src"] == 5 and c["value"] == "10")
    check("background.threads back to its default 10 (source 5)", good, c)

    # --- a list config: APPEND, SUBTRACT, DELETE
    check("log.cleanup.policy APPEND compact: NONE",
          incr(node, [("log.cleanup.policy", 2, "compact")]) == (0, None))
    good, c = await_conf("log.cleanup.policy", lambda c: c["src"] == 2 and c["value"] == "delete,compact")
    check("log.cleanup.policy described: delete,compact (source 2)", good and c["src"] == 2, c)
    check("log.cleanup.policy SUBTRACT compact: NONE",
          incr(node, [("log.cleanup.policy", 3, "compact")]) == (0, None))
    good, c = await_conf("log.cleanup.policy", lambda c: c["src"] == 2 and c["value"] == "delete")
    check("log.cleanup.policy described: delete, still dynamic (source 2)", good and c["src"] == 2, c)
    check("log.cleanup.policy DELETE: NONE", incr(node, [("log.cleanup.policy", 1, None)]) == (0, None))
    good, c = await_conf("log.cleanup.policy", lambda c: c["src"] == 5 and c["value"] == "delete")
    check("log.cleanup.policy back to its default (source 5)", good, c)

    # --- legacy AlterConfigs
    key = "sasl.kerberos.min.time.before.relogin"
    check("AlterConfigs v2 %s=58000: NONE" % key, legacy(node, [(key, "58000")]) == (0, None))
    good, c = await_conf(key, lambda c: c["src"] == 2 and c["value"] == "58000")
    check("%s described: 58000 (source 2) over the default 60000" % key,
          good and c["src"] == 2 and c["syn"] == [(key, "58000", 2), (key, "60000", 5)], c)
    check("%s DELETE: NONE" % key, incr(node, [(key, 1, None)]) == (0, None))
    good, c = await_conf(key, lambda c: c["src"] == 5 and c["value"] == "60000")
    check("%s back to its default" % key, good, c)

    # --- legacy AlterConfigs replaces the broker's whole set of dynamic configs
    check("background.threads SET 9 and max.connections SET 500: NONE",
          incr(node, [("background.threads", 0, "9"), ("max.connections", 0, "500")]) == (0, None))
    good, c = await_conf("max.connections", lambda c: c["src"] == 2 and c["value"] == "500")
    check("max.connections described: 500", good, c)
    check("AlterConfigs v2 max.connections=400 alone: NONE", legacy(node, [("max.connections", "400")]) == (0, None))
    good, c = await_conf("background.threads", lambda c: c["src"] == 5 and c["value"] == "10")
    check("... background.threads, not named, is back to its default", good, c)
    # each listener worker applies the reload on its own: wait, as for the others
    good, c = await_conf("max.connections", lambda c: c["src"] == 2 and c["value"] == "400")
    check("... max.connections is 400", good, c)
    check("max.connections DELETE: NONE", incr(node, [("max.connections", 1, None)]) == (0, None))

    # --- a name the broker does not know
    unknown = "kp.test.unknown." + uuid.uuid4().hex[:6]
    check("unknown config SET: NONE (kept, as Kafka keeps custom configs)",
          incr(node, [(unknown, 0, "1")]) == (0, None))
    good, c = await_conf(unknown, lambda c: True)
    check("unknown config described: value null, read-only, sensitive, source 2, type UNKNOWN",
          good and c["value"] is None and c["ro"] == 1 and c["sens"] == 1 and c["src"] == 2 and
          c["type"] == 0, c)
    check("unknown config APPEND: INVALID_CONFIG, Unknown config name",
          incr(node, [(unknown, 2, "x")]) == (40, "Unknown config name: " + unknown))
    check("unknown config DELETE: NONE", incr(node, [(unknown, 1, None)]) == (0, None))
    good, c = await_conf(unknown, lambda c: False, seconds=1)
    check("unknown config gone", c is None, c)

    # --- the cluster level (resource ""): only what is set there, as DYNAMIC_DEFAULT_BROKER_CONFIG (3)
    check("background.threads SET 7 on broker \"\" (the cluster default): NONE",
          incr("", [("background.threads", 0, "7")]) == (0, None))
    c = None
    deadline = time.time() + 10
    while time.time() < deadline:
        listed = describe("", None)
        c = listed.get("background.threads")
        if c is not None and c["value"] == "7":
            break
        time.sleep(0.2)
    check("DescribeConfigs of broker \"\": background.threads 7, source 3, its one synonym itself (3)",
          c is not None and c["value"] == "7" and c["src"] == 3 and c["syn"] == [("background.threads", "7", 3)],
          c)
    check("... and every config it lists is set at that level (source 3): none of the defaults",
          listed and all(x["src"] == 3 for x in listed.values()), sorted((k, x["src"]) for k, x in listed.items()))
    check("background.threads DELETE on broker \"\": NONE", incr("", [("background.threads", 1, None)]) == (0, None))
    deadline = time.time() + 10
    while time.time() < deadline and "background.threads" in describe("", None):
        time.sleep(0.2)
    check("... and broker \"\" no longer lists it", "background.threads" not in describe("", None))

    # --- refusals
    r = incr(node, [("node.id", 0, "5")])
    check("node.id SET: INVALID_REQUEST, Cannot update these configs dynamically",
          r == (42, "Cannot update these configs dynamically: [node.id]"), r)
    r = incr(node, [("node.id", 1, None)])
    check("node.id DELETE: NONE (nothing to delete)", r == (0, None), r)
    r = incr(node, [("background.threads", 0, "abc")])
    check("background.threads=abc: INVALID_REQUEST, not a number",
          r == (42, "Invalid value abc for configuration background.threads: Not a number of type INT"), r)
    r = incr(node, [("background.threads", 0, "0")])
    check("background.threads=0: INVALID_REQUEST, at least 1",
          r == (42, "Invalid value 0 for configuration background.threads: Value must be at least 1"), r)
    r = incr(node, [("background.threads", 2, "5")])
    check("background.threads APPEND: INVALID_CONFIG",
          r == (40, "Config value append is not allowed for config key: background.threads"), r)
    r = incr(node, [("background.threads", 0, None)])
    check("background.threads SET null: INVALID_REQUEST",
          r == (42, "Null value not supported for : background.threads"), r)
    r = legacy(node, [("background.threads", None)])
    check("AlterConfigs background.threads null: INVALID_REQUEST",
          r == (42, "Null value not supported for : background.threads"), r)
    r = incr(node, [("background.threads", 0, "9"), ("background.threads", 1, None)])
    check("a key twice: INVALID_REQUEST", r == (42, "Error due to duplicate config keys"), r)
    other = str(int(node) + 7)
    r = incr(other, [("background.threads", 0, "5")])
    check("another broker id: INVALID_REQUEST",
          r == (42, "Unexpected broker id, expected %s, but received %s" % (node, other)), r)
    # a broker id as Integer.parseInt reads it: a sign and leading zeros are the same number; spaces,
    # letters or one beyond int32 are not a number
    for name in ("+" + node, "0" + node):
        r = incr(name, [("background.threads", 0, "5")], validate=True)
        check("IncrementalAlterConfigs (validate_only) of broker %r: NONE (the same id)" % name, r == (0, None), r)
        r = describe(name, ["background.threads"])
        check("DescribeConfigs of broker %r: background.threads described" % name, "background.threads" in r, r)
    for name in ("abc", " " + node, node + " ", "99999999999"):
        r = incr(name, [("background.threads", 0, "5")], validate=True)
        check("IncrementalAlterConfigs of broker %r: INVALID_REQUEST \"Node id must be an integer, ...\"" % name,
              r == (42, "Node id must be an integer, but it is: %s" % name), r)
        r = describe_error(name)
        check("DescribeConfigs of broker %r: INVALID_REQUEST \"Broker id must be an integer, ...\"" % name,
              r == (42, "Broker id must be an integer, but it is: %s" % name), r)

    # --- num.partitions: read-only on Kafka, kafka.num_partitions on kafka_pg
    before = describe(node, ["num.partitions"]).get("num.partitions")
    new = "7" if before and before["value"] != "7" else "6"
    r = incr(node, [("num.partitions", 0, new)])
    if r == (42, "Cannot update these configs dynamically: [num.partitions]"):
        check("num.partitions SET: read-only (Kafka)", before is not None and before["ro"] == 1, before)
    else:
        check("num.partitions SET: NONE (kafka_pg: ALTER SYSTEM SET kafka.num_partitions)",
              r == (0, None) and before is not None and before["ro"] == 0, (r, before))
        good, c = await_conf("num.partitions", lambda c: c["src"] == 2 and c["value"] == new)
        check("num.partitions described: %s, DYNAMIC_BROKER_CONFIG" % new, good and c["src"] == 2, c)
        check("AlterConfigs v2 of another config: NONE", legacy(node, [("max.connections", "300")]) == (0, None))
        good, c = await_conf("num.partitions", lambda c: c["value"] == before["value"] and c["src"] == before["src"])
        check("... resets num.partitions, not named (ALTER SYSTEM RESET): back to %s" % before["value"],
              good and c["src"] == before["src"], c)
        check("max.connections DELETE: NONE", incr(node, [("max.connections", 1, None)]) == (0, None))
        check("num.partitions SET again: NONE", incr(node, [("num.partitions", 0, new)]) == (0, None))
        good, c = await_conf("num.partitions", lambda c: c["src"] == 2 and c["value"] == new)
        check("num.partitions described: %s again" % new, good, c)
        r = incr(node, [("num.partitions", 0, "abc")])
        check("num.partitions=abc: INVALID_REQUEST naming the config",
              r[0] == 42 and r[1].startswith("Invalid value abc for configuration num.partitions: "), r)
        check("num.partitions DELETE: NONE (ALTER SYSTEM RESET)",
              incr(node, [("num.partitions", 1, None)]) == (0, None))
        good, c = await_conf("num.partitions", lambda c: c["value"] == before["value"] and c["src"] == before["src"])
        check("num.partitions back to %s (source %d)" % (before["value"], before["src"]),
              good and c["src"] == before["src"], c)

    # the broker defaults Kafka derives from another setting: null, as Kafka describes them
    keys = ["log.retention.ms", "log.roll.ms", "log.roll.jitter.ms", "log.flush.interval.ms"]
    d = describe(node, keys)
    got = {k: (d[k]["value"], d[k]["src"], [(x[0], x[1], x[2]) for x in (d[k]["syn"] or [])]) for k in d}
    want = {k: (None, 5, []) for k in keys}
    check("log.retention.ms, log.roll.ms, log.roll.jitter.ms and log.flush.interval.ms are described "
          "with a null value (DEFAULT_CONFIG), as Kafka derives them from other settings", got == want, got)
    check("log.roll.ms SET 100000: NONE", incr(node, [("log.roll.ms", 0, "100000")]) == (0, None))
    good, c = await_conf("log.roll.ms", lambda c: c["value"] == "100000")
    syn = [(x[0], x[1], x[2]) for x in (c["syn"] or [])] if c else None
    check("log.roll.ms described: 100000 (DYNAMIC_BROKER_CONFIG), synonyms itself and DEFAULT_CONFIG "
          "log.roll.hours=168, what Kafka derives it from",
          good and c["src"] == 2 and syn == [("log.roll.ms", "100000", 2), ("log.roll.hours", "168", 5)],
          c)
    check("log.roll.ms DELETE: NONE", incr(node, [("log.roll.ms", 1, None)]) == (0, None))
    good, c = await_conf("log.roll.ms", lambda c: c["value"] is None and c["src"] == 5)
    check("log.roll.ms back to null (DEFAULT_CONFIG)", good, c)

    # broker configs that are kafka.* settings in kafka_pg: described with Kafka's types, a dynamic one
    # changed and reset (sarama's TestFuncAdminIncrementalAlterConfigs: log.cleaner.backoff.ms + 1)
    types = {"log.cleaner.backoff.ms": 5, "log.cleaner.threads": 3, "log.cleaner.dedupe.buffer.size": 5,
             "log.cleaner.io.max.bytes.per.second": 6, "log.retention.check.interval.ms": 5,
             "group.share.record.lock.duration.ms": 3, "group.share.delivery.count.limit": 3,
             "group.share.min.record.lock.duration.ms": 3, "group.share.max.record.lock.duration.ms": 3,
             "group.share.heartbeat.interval.ms": 3, "group.share.session.timeout.ms": 3,
             "fetch.max.bytes": 3, "max.incremental.fetch.session.cache.slots": 3,
             "connections.max.reauth.ms": 5, "quota.window.num": 3, "quota.window.size.seconds": 3}
    d = describe(node, list(types) + ["broker.rack"])
    got = {k: (d[k]["type"], float(d[k]["value"]) >= 0) if k in d and d[k]["value"] is not None else None
           for k in types}
    check("the cleaner's, the share groups', the fetch sessions' and the quotas' broker configs are described "
          "as numbers of Kafka's types", got == {k: (t, True) for k, t in types.items()}, got)
    c = d.get("broker.rack")
    check("broker.rack (unset) is described with a null value", c is not None and c["value"] is None, c)
    before = d.get("log.cleaner.backoff.ms")
    new = str(int(before["value"]) + 1) if before else "15001"
    check("log.cleaner.backoff.ms SET %s: NONE" % new, incr(node, [("log.cleaner.backoff.ms", 0, new)]) == (0, None))
    good, c = await_conf("log.cleaner.backoff.ms", lambda c: c["value"] == new and c["src"] == 2)
    check("log.cleaner.backoff.ms described: %s, DYNAMIC_BROKER_CONFIG, not read-only" % new,
          good and c["ro"] == 0, c)
    if before is not None and before["src"] == 2:
        # dynamic before (by ALTER SYSTEM, or a client's change, as on Kafka): set back, as DELETE
        # would drop the override (the suite's cluster has it in its file: static, DELETE below)
        check("log.cleaner.backoff.ms SET %s again: NONE" % before["value"],
              incr(node, [("log.cleaner.backoff.ms", 0, before["value"])]) == (0, None))
    else:
        check("log.cleaner.backoff.ms DELETE: NONE", incr(node, [("log.cleaner.backoff.ms", 1, None)]) == (0, None))
    good, c = await_conf("log.cleaner.backoff.ms",
                         lambda c: before is not None and c["value"] == before["value"] and c["src"] == before["src"])
    check("log.cleaner.backoff.ms back to %s" % (before or {}).get("value"), good, c)

    # a topic's synonyms (kafkajs's describeConfigs spec): an override, then the broker default it
    # replaces under the broker's name, where Kafka's broker config has a default of its own
    topic = "syn-" + uuid.uuid4().hex[:8]
    check("CreateTopics %s: NONE" % topic, w.create_topics(s, {topic: 1}) == {topic: 0})
    keys = ["retention.ms", "segment.ms", "segment.bytes", "flush.ms", "remote.storage.enable",
            "leader.replication.throttled.replicas"]
    deadline, d = time.time() + 10, {}
    while time.time() < deadline and len(d) < len(keys):   # Kafka: a moment after the create
        d = describe(topic, keys, TOPIC)
        time.sleep(0.2)
    syn = {k: [(x[0], x[2]) for x in (d[k]["syn"] or [])] for k in d}
    want = {"retention.ms": [], "segment.ms": [], "flush.ms": [], "remote.storage.enable": [],
            "leader.replication.throttled.replicas": [], "segment.bytes": [("log.segment.bytes", 5)]}
    check("topic defaults: only segment.bytes has a synonym (DEFAULT_CONFIG log.segment.bytes); "
          "retention.ms, segment.ms, flush.ms (broker defaults derived from other settings) and "
          "configs without a broker synonym have none", syn == want, syn)
    # the topic configs Kafka 4.4 added, listed with Kafka's defaults and synonyms
    news = {"max.decompressed.message.bytes": ("2147483639", [("max.decompressed.message.bytes", 5)]),
            "errors.deadletterqueue.group.enable": ("false", []),
            "remote.copy.lag.bytes": ("-1", [("log.remote.copy.lag.bytes", 5)]),
            "remote.copy.lag.ms": ("0", [("log.remote.copy.lag.ms", 5)]),
            "remote.log.copy.disable": ("false", []), "remote.log.delete.on.disable": ("false", [])}
    d = describe(topic, list(news), TOPIC)
    got = {k: (d[k]["value"], [(x[0], x[2]) for x in (d[k]["syn"] or [])]) for k in d}
    check("max.decompressed.message.bytes, errors.deadletterqueue.group.enable and the remote.* "
          "configs are described with Kafka 4.4's defaults and synonyms", got == news, got)
    r = incr(topic, [("retention.ms", 0, "100000"), ("segment.bytes", 0, "2000000"),
                     ("remote.storage.enable", 0, "false")], rtype=TOPIC)
    check("IncrementalAlterConfigs of the topic: NONE", r == (0, None), r)
    want = {"retention.ms": [("retention.ms", 1)], "remote.storage.enable": [("remote.storage.enable", 1)],
            "segment.bytes": [("segment.bytes", 1), ("log.segment.bytes", 5)]}
    deadline, syn = time.time() + 10, None
    while time.time() < deadline and syn != want:
        d = describe(topic, list(want), TOPIC)
        syn = {k: [(x[0], x[2]) for x in (d[k]["syn"] or [])] for k in d}
        time.sleep(0.2)
    check("overridden: the DYNAMIC_TOPIC_CONFIG entry, then DEFAULT_CONFIG log.segment.bytes for "
          "segment.bytes only", syn == want, syn)
    # cleanup.policy, a list (Kafka 4.4): empty (infinite retention), a repeat dropped, an empty
    # element refused; SUBTRACT of its last element leaves it empty
    for value, want_err, want_value in (("", 0, ""), ("delete,delete", 0, "delete"),
                                        ("delete,,compact", 40, "delete"), (",", 40, "delete")):
        r = incr(topic, [("cleanup.policy", 0, value)], rtype=TOPIC)
        good, c = r[0] == want_err, None
        deadline = time.time() + 10
        while good and time.time() < deadline:
            c = describe(topic, ["cleanup.policy"], TOPIC)["cleanup.policy"]["value"]
            if c == want_value:
                break
            time.sleep(0.2)
        check("cleanup.policy SET %r: %s, then described %r" % (value, "INVALID_CONFIG" if want_err else "NONE",
                                                                  want_value),
              good and c == want_value, (r, c))
    # (from a value set as "delete": Kafka keeps a set value as given, "delete,delete" described
    # "delete", and SUBTRACT takes one "delete" from that)
    incr(topic, [("cleanup.policy", 0, "delete")], rtype=TOPIC)
    r = incr(topic, [("cleanup.policy", 3, "delete")], rtype=TOPIC)
    deadline, c = time.time() + 10, None
    while r[0] == 0 and time.time() < deadline and c != "":
        c = describe(topic, ["cleanup.policy"], TOPIC)["cleanup.policy"]["value"]
        time.sleep(0.2)
    check("cleanup.policy SUBTRACT delete from \"delete\": NONE, then described \"\"", r[0] == 0 and c == "",
          repr((r, c)))
    # an empty key list asks for every config, as a null one does
    every, empty = describe(topic, None, TOPIC), describe(topic, [], TOPIC)
    check("DescribeConfigs of the topic with an empty key list: every config, as with a null list "
          "(%d)" % len(every), len(every) > 30 and sorted(empty) == sorted(every), (len(every), len(empty)))
    s.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


if __name__ == "__main__":
    sys.exit(main())
