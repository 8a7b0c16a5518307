#!/usr/bin/env python3
"""What the controller's requests (and a few of the broker's admin requests) answer at their edges,
against the broker at $KAFKA_BOOTSTRAP.
Every expectation is what Apache Kafka 4.4 (single-node KRaft) answered on this machine.

  - No time to act. CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders and
    AlterPartitionReassignments carry a timeout_ms; Kafka's controller runs each against a deadline
    of its arrival plus that timeout, so one of 0 or less has passed before it looks at the
    request: every entry is REQUEST_TIMED_OUT (7) with no message (ElectLeaders and
    AlterPartitionReassignments at the top too), whatever the entry (a duplicate, an illegal name,
    an unknown topic, a bad election type), and nothing is done: the topic asked for is not
    created, the one named not deleted, the partitions not added. Found by segmentio/kafka-go's
    suite, whose ElectLeaders sends 0. The same requests with 30 s then act.
  - A repeated name (CreateTopics, CreatePartitions, DeleteTopics) or topic id (DeleteTopics) is
    answered once, INVALID_REQUEST "Duplicate topic name." / "Duplicate topic id.", not once per
    occurrence. Kafka shuffles DeleteTopics' answers, so they are compared as sets. A DeleteTopics
    entry with neither a name nor an id, or with both, is refused on its own and repeats nothing.
  - IncrementalAlterConfigs naming a resource twice: every listing INVALID_REQUEST, "Each resource
    must appear at most once." (Kafka 4.4 sends no answer at all to a legacy AlterConfigs that
    repeats a resource: its forwarding fails with IllegalStateException "Duplicate key", logged).
  - DeleteTopics naming a topic by name and by its id: one answer, the name and the id,
    INVALID_REQUEST "The provided topic name maps to an ID that was already supplied."; the topic
    is not deleted.
  - DeleteGroups (the group coordinator's) naming a group twice: deleted and answered once (Kafka
    keys the results by group). OffsetCommit answers no entry for a topic listed with no
    partitions. ConsumerGroupDescribe of a classic group, an unknown one and the empty id:
    GROUP_ID_NOT_FOUND in Kafka's words ("Group X is not a consumer group.", "Group X not found."),
    INVALID_GROUP_ID; no state. ShareGroupDescribe the same ("Group X is not a share group.").
  - Illegal topic names (CreateTopics, DescribeConfigs): INVALID_TOPIC_EXCEPTION (17) in Kafka's
    words, "Topic name is invalid: ..."; CreateTopics of an existing topic: "Topic 'X' already
    exists."; of a name that differs from an existing one only in '.' against '_':
    INVALID_TOPIC_EXCEPTION, "Topic 'a.b' collides with existing topic: a_b"; DescribeConfigs'
    message is "" (not null) when there is no error and for an unknown topic.
  - CreatePartitions of an unknown topic and cancelling a reassignment that is not in progress
    (NO_REASSIGNMENT_IN_PROGRESS, 85): no message.
  - UpdateFeatures (v0, v1, v2) of a feature the controller does not support fails the whole
    request at the top,
    INVALID_UPDATE_VERSION (95), in Kafka's words, with no per-feature results, checking the upgrade
    type first, then a level below 0, then a deletion (level 0) of a feature not finalized, then
    the level; validate_only and a 0 timeout the same; an empty request succeeds. Found by
    sarama's functional suite (TestFuncAdminUpdateFeatures), to which kafka_pg closed the
    connection, as for an API it does not serve. A finalized feature (group.version 1) set to the
    level it has succeeds and changes nothing (v0-1 list it NONE, message "NONE"); set above what the controller
    supports it is refused, "Local controller N only supports versions 0-1".
Standard library only; shares describe_partitions.py's encoding. Prints "ok - ..." / "not ok - ..."
and "N passed, M failed".
"""
import socket
import struct
import sys
import uuid

import describe_partitions as w
from describe_partitions import check, cstr, i8, i32, uvarint

TIMED_OUT = 7


def create_topics(s, names, timeout, validate_only=0):
    """CreateTopics v7, one partition each: [(name, error, message, partitions, rf, configs)]."""
    body = uvarint(len(names) + 1)
    for n in names:
        body += cstr(n) + struct.pack(">ih", 1, 1) + uvarint(1) + uvarint(1) + b"\0"
    body += i32(timeout) + i8(validate_only) + b"\0"
    r = w.call(s, 19, 7, body)
    r.i32()

    def topic():
        name = r.cstr()
        r.take(16)
        err, msg, parts, rf = r.i16(), r.cstr(), r.i32(), r.i16()
        configs = r.carray(lambda: (r.cstr(), r.cstr(), r.i8(), r.i8(), r.i8(), r.tags()))
        r.tags()
        return name, err, msg, parts, rf, configs
    return r.carray(topic)


def delete_topics(s, entries, timeout):
    """DeleteTopics v6 of [(name or None, 16-byte id)]: [(name, id, error, message)]."""
    body = uvarint(len(entries) + 1)
    for name, tid in entries:
        body += cstr(name) + tid + b"\0"
    r = w.call(s, 20, 6, body + i32(timeout) + b"\0")
    r.i32()

    def result():
        name, tid, err, msg = r.cstr(), r.take(16), r.i16(), r.cstr()
        r.tags()
        return name, tid, err, msg
    return r.carray(result)


def create_partitions(s, names, count, timeout):
    """CreatePartitions v3: [(name, error, message)]."""
    body = uvarint(len(names) + 1) + b"".join(cstr(n) + i32(count) + uvarint(0) + b"\0" for n in names)
    r = w.call(s, 37, 3, body + i32(timeout) + i8(0) + b"\0")
    r.i32()

    def result():
        name, err, msg = r.cstr(), r.i16(), r.cstr()
        r.tags()
        return name, err, msg
    return r.carray(result)


def partition_results(r):
    name = r.cstr()
    parts = r.carray(lambda: (r.i32(), r.i16(), r.cstr(), r.tags())[:3])
    r.tags()
    return name, parts


def elect_leaders(s, election_type, topics, timeout):
    """ElectLeaders v2 of {topic: [partitions]} (None: every partition): (error, results)."""
    if topics is None:
        body = uvarint(0)
    else:
        body = uvarint(len(topics) + 1)
        for t, ps in topics.items():
            body += cstr(t) + uvarint(len(ps) + 1) + b"".join(i32(p) for p in ps) + b"\0"
    r = w.call(s, 43, 2, i8(election_type) + body + i32(timeout) + b"\0")
    r.i32()
    err = r.i16()
    return err, r.carray(lambda: partition_results(r))


def cancel_reassignments(s, topics, timeout):
    """AlterPartitionReassignments v1 cancelling {topic: [partitions]}: (allow, error, message, results)."""
    body = i32(timeout) + i8(1) + uvarint(len(topics) + 1)
    for t, ps in topics.items():
        body += cstr(t) + uvarint(len(ps) + 1) + b"".join(i32(p) + uvarint(0) + b"\0" for p in ps) + b"\0"
    r = w.call(s, 45, 1, body + b"\0")
    r.i32()
    allow, err, msg = r.i8(), r.i16(), r.cstr()
    return allow, err, msg, r.carray(lambda: partition_results(r))


def update_features(s, version, updates, validate_only=0, timeout=60000):
    """UpdateFeatures: (error, message, results or None for v2) for [(feature, level, upgrade type)]
    (v0 sends allow_downgrade for an upgrade type above 1)."""
    body = i32(timeout) + uvarint(len(updates) + 1)
    for name, level, utype in updates:
        body += cstr(name) + struct.pack(">h", level) + (i8(1 if utype > 1 else 0) if version == 0 else i8(utype))
        body += b"\0"
    body += (i8(validate_only) if version >= 1 else b"") + b"\0"
    r = w.call(s, 57, version, body)
    r.i32()
    err, msg = r.i16(), r.cstr()
    results = None
    if version <= 1:
        results = r.carray(lambda: (r.cstr(), r.i16(), r.cstr(), r.tags())[:3])
    return err, msg, results


def topic_id(s, name):
    """Metadata v12 of one topic: (error, name, id, partition count)."""
    r = w.call(s, 3, 12, uvarint(2) + b"\0" * 16 + cstr(name) + b"\0" + i8(0) + i8(0) + b"\0")
    r.i32()
    r.carray(lambda: (r.i32(), r.cstr(), r.i32(), r.cstr(), r.tags()))
    r.cstr()
    r.i32()

    def topic():
        err, n, tid = r.i16(), r.cstr(), r.take(16)
        r.i8()
        parts = r.carray(lambda: (r.i16(), r.i32(), r.i32(), r.i32(), r.carray(r.i32), r.carray(r.i32),
                                  r.carray(r.i32), r.tags()))
        r.i32()
        r.tags()
        return err, n, tid, len(parts or [])
    return r.carray(topic)[0]


def main():
    host, port = w.BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    tag = uuid.uuid4().hex[:8]
    have = "dl-" + tag
    made = w.create_topics(s, {have: 1})
    check("CreateTopics %s (1 partition)" % have, made == {have: 0}, made)
    err, _, have_id, nparts = topic_id(s, have)
    check("Metadata v12 of %s: its id, 1 partition" % have, err == 0 and have_id != b"\0" * 16 and nparts == 1,
          (err, nparts))
    unknown = "dl-unknown-" + tag

    for timeout in (0, -1):
        new = "dl-new%d-%s" % (timeout, tag)
        dup = "dl-dup%d-%s" % (timeout, tag)

        got = create_topics(s, [new, dup, dup, "bad/name", have], timeout)
        check("CreateTopics timeout %d: every entry REQUEST_TIMED_OUT, no message, -1 partitions and "
              "replication factor, no configs (a duplicate, an illegal name, an existing topic alike)" % timeout,
              got == [(n, TIMED_OUT, None, -1, -1, []) for n in (new, dup, dup, "bad/name", have)], got)
        got = create_topics(s, [new], timeout, validate_only=1)
        check("CreateTopics timeout %d, validate_only: REQUEST_TIMED_OUT" % timeout,
              got == [(new, TIMED_OUT, None, -1, -1, [])], got)
        got = create_topics(s, [new], 30000, validate_only=1)
        check("CreateTopics timeout %d created nothing: the same name validates with 30 s" % timeout,
              [g[:3] for g in got] == [(new, 0, None)], got)

        zero = b"\0" * 16
        got = delete_topics(s, [(have, zero), (unknown, zero), (None, have_id), (dup, zero), (dup, zero)], timeout)
        check("DeleteTopics timeout %d: every entry REQUEST_TIMED_OUT, no message, the name and id as sent" % timeout,
              got == [(have, zero, TIMED_OUT, None), (unknown, zero, TIMED_OUT, None),
                      (None, have_id, TIMED_OUT, None), (dup, zero, TIMED_OUT, None),
                      (dup, zero, TIMED_OUT, None)], got)

        got = create_partitions(s, [have, unknown, dup, dup], 3, timeout)
        check("CreatePartitions timeout %d: every entry REQUEST_TIMED_OUT, no message" % timeout,
              got == [(n, TIMED_OUT, None) for n in (have, unknown, dup, dup)], got)
        err, name, _, nparts = topic_id(s, have)
        check("after both, timeout %d: %s still there with 1 partition" % (timeout, have),
              (err, name, nparts) == (0, have, 1), (err, name, nparts))

        got = elect_leaders(s, 0, {have: [0, 5], unknown: [0]}, timeout)
        check("ElectLeaders timeout %d: REQUEST_TIMED_OUT at the top and for every partition, no message" % timeout,
              got == (TIMED_OUT, [(have, [(0, TIMED_OUT, None), (5, TIMED_OUT, None)]),
                                  (unknown, [(0, TIMED_OUT, None)])]), got)
        got = elect_leaders(s, 0, None, timeout)
        check("ElectLeaders timeout %d, every partition (null): REQUEST_TIMED_OUT, no topics" % timeout,
              got == (TIMED_OUT, []), got)
        got = elect_leaders(s, 7, {have: [0]}, timeout)
        check("ElectLeaders timeout %d, election type 7: REQUEST_TIMED_OUT, not INVALID_REQUEST" % timeout,
              got == (TIMED_OUT, [(have, [(0, TIMED_OUT, None)])]), got)

        got = cancel_reassignments(s, {have: [0, 9], unknown: [0]}, timeout)
        check("AlterPartitionReassignments timeout %d: REQUEST_TIMED_OUT at the top and for every partition, "
              "no message, AllowReplicationFactorChange echoed" % timeout,
              got == (1, TIMED_OUT, None, [(have, [(0, TIMED_OUT, None), (9, TIMED_OUT, None)]),
                                           (unknown, [(0, TIMED_OUT, None)])]), got)

    # repeated names and ids: one answer each
    dup, new, unknown_id = "dl-dup-" + tag, "dl-new-" + tag, bytes(range(1, 17))
    got = create_topics(s, [dup, new, dup, dup], 30000)
    check("CreateTopics of a name three times: answered once, Duplicate topic name.; the other created",
          sorted(g[:3] for g in got) == sorted([(dup, 42, "Duplicate topic name."), (new, 0, None)]), got)
    got = create_partitions(s, [dup, new, dup, unknown], 2, 30000)
    check("CreatePartitions of a name twice: answered once; an unknown topic: no message",
          sorted(got) == sorted([(dup, 42, "Duplicate topic name."), (new, 0, None), (unknown, 3, None)]), got)
    _, _, new_id, _ = topic_id(s, new)
    zero = b"\0" * 16
    got = delete_topics(s, [(dup, zero), (dup, zero), (unknown, zero), (None, new_id), (None, new_id),
                            (None, unknown_id)], 30000)
    check("DeleteTopics of a name twice and an id twice: each answered once",
          sorted(got, key=repr) == sorted([(dup, zero, 42, "Duplicate topic name."),
                                           (unknown, zero, 3, "This server does not host this topic-partition."),
                                           (None, new_id, 42, "Duplicate topic id."),
                                           (None, unknown_id, 100, "This server does not host this topic ID.")],
                                          key=repr), got)

    # IncrementalAlterConfigs v1 of a resource twice: here Kafka answers every listing
    def resource(name):
        return (i8(2) + cstr(name) + uvarint(2) + cstr("retention.ms") + i8(0) + cstr("1000000") + b"\0"
                + b"\0")
    r = w.call(s, 44, 1, uvarint(4) + resource(new) + resource(new) + resource(unknown) + i8(0) + b"\0")
    r.i32()
    got = r.carray(lambda: (r.i16(), r.cstr(), r.i8(), r.cstr(), r.tags())[:4])
    once = "Each resource must appear at most once."
    check("IncrementalAlterConfigs of a topic twice: each listing INVALID_REQUEST, \"%s\"" % once,
          got == [(42, once, 2, new), (42, once, 2, new), (3, "The topic '%s' does not exist." % unknown, 2, unknown)],
          got)

    # a topic by its name and by its id, in either order
    for entries in ([(new, zero), (None, new_id)], [(None, new_id), (new, zero)]):
        got = delete_topics(s, entries, 30000)
        check("DeleteTopics of %s by %s: one answer, INVALID_REQUEST, the name and the id"
              % (new, " then by ".join("name" if e[0] else "id" for e in entries)),
              got == [(new, new_id, 42, "The provided topic name maps to an ID that was already supplied.")], got)
        err, name, _, nparts = topic_id(s, new)
        check("... and %s is not deleted" % new, (err, name) == (0, new), (err, name))
    # entries refused on their own repeat nothing
    got = delete_topics(s, [(None, zero), (None, zero)], 30000)
    neither = "Neither topic name nor id were specified."
    check("DeleteTopics of two entries with neither name nor id: each answered", got ==
          [(None, zero, 42, neither), (None, zero, 42, neither)], got)
    other = "dl-other-" + tag
    made = w.create_topics(s, {other: 1})
    check("CreateTopics %s" % other, made == {other: 0}, made)
    _, _, other_id, _ = topic_id(s, other)
    got = delete_topics(s, [(other, other_id), (other, zero)], 30000)
    check("DeleteTopics of %s with its id, then by name alone: the first refused, the second deleted" % other,
          sorted(got, key=repr) == sorted([(other, other_id, 42, "You may not specify both topic name and topic id."),
                                           (other, other_id, 0, None)], key=repr), got)

    got = delete_topics(s, [(None, new_id)], 30000)
    check("DeleteTopics of %s by id alone: deleted, answered with its name" % new, got == [(new, new_id, 0, None)], got)

    # DeleteGroups (the group coordinator's; Kafka keys its results by group) of a group twice
    group = "dl-group-" + tag
    found = w.find_coordinator(s, group)
    check("FindCoordinator v4 of %s" % group, found == [0], found)
    # a topic listed with no partitions gets no answer (Kafka answers by partition)
    body = (cstr(group) + i32(-1) + cstr("") + cstr(None) + uvarint(3) + cstr(have) + uvarint(1) + b"\0"
            + cstr(have) + uvarint(2) + i32(0) + struct.pack(">q", 0) + i32(-1) + cstr(None) + b"\0" + b"\0"
            + b"\0")
    r = w.call(s, 8, 8, body)
    r.i32()
    got = r.carray(lambda: (r.cstr(), r.carray(lambda: (r.i32(), r.i16(), r.tags())[:2]), r.tags())[:2])
    check("OffsetCommit v8 of %s to %s (the group exists); the topic's listing with no partitions not answered"
          % (group, have), got == [(have, [(0, 0)])], got)
    # ConsumerGroupDescribe v0 and ShareGroupDescribe v1 of that (classic) group, an unknown one and
    # the empty id (Kafka answers the empty id first)
    unknown_group = "dl-nogroup-" + tag

    def described():
        got = (r.i16(), r.cstr(), r.cstr(), r.cstr(), r.i32(), r.i32(), r.cstr())
        r.carray(lambda: None)      # no members in any of them
        r.i32(), r.tags()
        return got
    for api, version, kind in ((69, 0, "ConsumerGroupDescribe"), (77, 1, "ShareGroupDescribe")):
        r = w.call(s, api, version, uvarint(4) + cstr(group) + cstr(unknown_group) + cstr("") + i8(0) + b"\0")
        r.i32()
        got = r.carray(described)
        what = kind[:-len("GroupDescribe")].lower()
        check("%s v%d: the classic group GROUP_ID_NOT_FOUND \"Group ... is not a %s group.\", the unknown one "
              "\"Group ... not found.\", the empty id INVALID_GROUP_ID; no state, no assignor" % (kind, version, what),
              sorted(got, key=repr) == sorted([(69, "Group %s is not a %s group." % (group, what), group, "", 0, 0, ""),
                                               (69, "Group %s not found." % unknown_group, unknown_group, "", 0, 0, ""),
                                               (24, None, "", "", 0, 0, "")], key=repr), got)
    r = w.call(s, 42, 2, uvarint(4) + cstr(group) + cstr(group) + cstr("dl-nogroup-" + tag) + b"\0")
    r.i32()
    got = r.carray(lambda: (r.cstr(), r.i16(), r.tags())[:2])
    check("DeleteGroups of a group twice and an unknown one: the group deleted and answered once, the other "
          "GROUP_ID_NOT_FOUND (69)", sorted(got) == sorted([(group, 0), ("dl-nogroup-" + tag, 69)]), got)

    # topic names Kafka refuses, in its words: CreateTopics, and DescribeConfigs (answered by the broker)
    long_name = "n" * 250
    refused = {
        "": "Topic name is invalid: the empty string is not allowed",
        ".": "Topic name is invalid: '.' is not allowed",
        "..": "Topic name is invalid: '..' is not allowed",
        long_name: "Topic name is invalid: the length of '%s' is longer than the max allowed length 249" % long_name,
        "bad/x": "Topic name is invalid: 'bad/x' contains one or more characters other than ASCII alphanumerics, "
                 "'.', '_' and '-'",
    }
    got = create_topics(s, list(refused) + [have], 30000)
    check("CreateTopics of illegal names: INVALID_TOPIC_EXCEPTION (17) in Kafka's words; an existing topic: "
          "TOPIC_ALREADY_EXISTS (36), \"Topic '...' already exists.\"",
          [g[:3] for g in got] == [(n, 17, m) for n, m in refused.items()]
          + [(have, 36, "Topic '%s' already exists." % have)], [g[:3] for g in got])
    under = "dl_c_" + tag
    got = create_topics(s, [under], 30000)
    check("CreateTopics %s" % under, [g[:3] for g in got] == [(under, 0, None)], got)
    colliding = ["dl.c." + tag, "dl.c_" + tag]
    got = create_topics(s, colliding, 30000)
    check("CreateTopics of names differing from an existing topic's only in '.' against '_': "
          "INVALID_TOPIC_EXCEPTION, \"Topic '...' collides with existing topic: ...\"",
          [g[:3] for g in got] == [(n, 17, "Topic '%s' collides with existing topic: %s" % (n, under))
                                   for n in colliding], [g[:3] for g in got])
    got = delete_topics(s, [(under, b"\0" * 16)], 30000)
    check("DeleteTopics %s" % under, [g[2:] for g in got] == [(0, None)], got)
    names = list(refused) + [have, unknown]
    body = uvarint(len(names) + 2) + b"".join(i8(2) + cstr(n) + uvarint(0) + b"\0" for n in names)
    body += i8(4) + cstr("") + uvarint(2) + cstr("log.retention.ms") + b"\0" + i8(0) + i8(0) + b"\0"
    r = w.call(s, 32, 4, body)
    r.i32()

    def config_result():
        err, msg, rtype, rname = r.i16(), r.cstr(), r.i8(), r.cstr()
        r.carray(lambda: (r.cstr(), r.cstr(), r.i8(), r.i8(), r.i8(), r.carray(lambda: (r.cstr(), r.cstr(), r.i8(), r.tags())),
                          r.i8(), r.cstr(), r.tags()))
        r.tags()
        return err, msg, rtype, rname
    got = r.carray(config_result)
    check("DescribeConfigs v4: illegal names INVALID_TOPIC_EXCEPTION in Kafka's words; a topic and the broker "
          "answered with the message \"\" (not null); an unknown topic UNKNOWN_TOPIC_OR_PARTITION, message \"\"",
          got == [(17, m, 2, n) for n, m in refused.items()] + [(0, "", 2, have), (3, "", 2, unknown), (0, "", 4, "")],
          got)

    # the same with time to act
    got = elect_leaders(s, 0, {have: [0]}, 30000)
    check("ElectLeaders timeout 30000: ELECTION_NOT_NEEDED (84)",
          got == (0, [(have, [(0, 84, "Leader election not needed for topic partition.")])]), got)
    got = cancel_reassignments(s, {have: [0]}, 30000)
    check("AlterPartitionReassignments timeout 30000, cancelling: NO_REASSIGNMENT_IN_PROGRESS (85), no message",
          got == (1, 0, None, [(have, [(0, 85, None)])]), got)
    got = create_partitions(s, [have], 2, 30000)
    check("CreatePartitions timeout 30000: %s to 2 partitions" % have, got == [(have, 0, None)], got)
    got = delete_topics(s, [(have, b"\0" * 16)], 30000)
    check("DeleteTopics timeout 30000: %s deleted" % have, [g[2:] for g in got] == [(0, None)], got)

    # UpdateFeatures of a feature the controller does not support, in Kafka's words
    r = w.call(s, 60, 0, i8(0) + b"\0")
    r.i32(), r.i16(), r.cstr(), r.cstr(), r.i32()
    node = r.carray(lambda: (r.i32(), r.cstr(), r.i32(), r.cstr(), r.tags())[0])[0]
    lead = "The update failed for all features since the following feature had an error: "
    feature = "kafka_pg.test." + tag
    unsupported = lead + "Invalid update version 1 for feature %s. Local controller %d does not support this " \
        "feature." % (feature, node)
    for version in (0, 1, 2):
        got = update_features(s, version, [(feature, 1, 1)])
        check("UpdateFeatures v%d of an unsupported feature: INVALID_UPDATE_VERSION (95) at the top, in Kafka's "
              "words, no results" % version, got == (95, unsupported, [] if version < 2 else None), got)
    got = update_features(s, 1, [(feature, 1, 1), ("group.version", 1, 1)], validate_only=1, timeout=0)
    check("... the same with a second update, validate_only and a 0 timeout", got == (95, unsupported, []), got)
    cases = [((0, 7), "Invalid update version 0 for feature %s. The controller does not support the given upgrade "
              "type." % feature),
             ((-1, 1), "Invalid update version -1 for feature %s. A feature version cannot be less than 0." % feature),
             ((0, 2), "Invalid update version 0 for feature %s. Feature %s not found." % (feature, feature)),
             ((5, 3), "Invalid update version 5 for feature %s. Local controller %d does not support this feature."
              % (feature, node))]
    got = [update_features(s, 1, [(feature, level, utype)]) for (level, utype), _ in cases]
    check("UpdateFeatures checks the upgrade type, then a level below 0, then a deletion (0) of a feature not "
          "finalized, then the level", got == [(95, lead + m, []) for _, m in cases], got)
    got = update_features(s, 1, [])
    check("UpdateFeatures of nothing: NONE, no message", got == (0, None, []), got)
    got = [update_features(s, version, [("group.version", 1, 1)]) for version in (0, 1, 2)]
    check("UpdateFeatures v0, v1, v2 of group.version to the level it has (1): NONE, v0-1 listing it NONE",
          got == [(0, None, [("group.version", 0, "NONE")])] * 2 + [(0, None, None)], got)
    got = update_features(s, 1, [("group.version", 2, 1)])
    check("UpdateFeatures of group.version to 2: refused, the controller supports 0-1",
          got == (95, lead + "Invalid update version 2 for feature group.version. Local controller %d only "
                  "supports versions 0-1" % node, []), got)
    s.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


if __name__ == "__main__":
    sys.exit(main())
