#!/usr/bin/env python3
"""The group coordinator (consumer and share groups) at its edges, on the wire, against the broker at
$KAFKA_BOOTSTRAP. Every expectation is what Apache Kafka 4.4 (single-node KRaft) answered on this
machine:
  - ConsumerGroupHeartbeat requests its coordinator refuses before it looks at the group
    (GroupCoordinatorService's checks, in its order and words), INVALID_REQUEST (42) with the
    message: from v1 the client makes its member id (KIP-1082), so an empty one ("MemberId can't be
    empty.", also blank after Java's trim) is refused at any epoch; at v0 only with an epoch above 0
    or -1. A blank group id, instance id or rack id; a join (epoch 0) without a rebalance timeout
    (-1), with TopicPartitions null or not empty, with neither topic names nor a pattern; epoch -2
    without an instance id; an epoch below -2.
  - ServerAssignor not served: UNSUPPORTED_ASSIGNOR (112), "ServerAssignor X is not supported.
    Supported assignors: uniform, range.".
  - A group that does not exist, by a member that is not joining: GROUP_ID_NOT_FOUND (69), "Group X
    not found." (leaving) / "Consumer group X not found." (heartbeat), and no group is made. A member
    the group does not have, leaving or heartbeating: UNKNOWN_MEMBER_ID (25), "Member M is not a
    member of group X." (a leave of a member that is gone changed the group before). An epoch above
    the member's: FENCED_MEMBER_EPOCH (110) in Kafka's words; an epoch below the member's too ("...
    smaller member epoch ..."), unless it is the member's previous epoch and the partitions it says it
    owns are among those it was given (then it gets its current epoch). A member that is not joining,
    to a classic group (one with committed offsets only too): GROUP_ID_NOT_FOUND, "Group X is not a
    consumer group."; joining it makes it a consumer group.
  - A partition moving from one member to another (CurrentAssignmentBuilder): the member that must
    give it up is sent what stays at the epoch it has, and keeps that epoch while it reports owning
    the partition (TopicPartitions null counts as owning it), so the same heartbeat sent again is
    answered; the member waiting for it is at the group's new epoch with nothing, and gets it at the
    heartbeat after the other reports it gone, when that one moves to the new epoch too;
    ConsumerGroupDescribe says Reconciling meanwhile, Stable after. A member that still owns it after
    its rebalance timeout is removed, heartbeating or not (UNKNOWN_MEMBER_ID at its next heartbeat).
  - A member that reports owning none of the partitions it was given, when the group's target
    moves on, is sent its new assignment (it differs from the one it was sent), and the partition it
    loses goes to the other member at once; an unchanged assignment is not sent again, but to a full
    request (rebalance timeout, topic names and owned partitions all given).
  - ConsumerGroupDescribe v1 gives each member's MemberType: 1, a consumer-protocol member; a member
    that subscribes by names has SubscribedTopicRegex "" (not null), at v0 too.
  - DeleteGroups v3 (ErrorMessage per group): null for every result Kafka gives here (deleted,
    NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND for an unknown group and for "").
  - Share groups: ShareGroupHeartbeat, ShareFetch and ShareAcknowledge with a member id that is
    empty or longer than 36 characters: INVALID_REQUEST with no message (Kafka's KafkaApis checks
    it after the group's authorization); ShareGroupHeartbeat's coordinator checks then, in order
    and in Kafka's words: a blank member id, group id or rack id; a join without topic names (null
    or none); an epoch below -1. A heartbeat or leave to a share group that does not exist:
    GROUP_ID_NOT_FOUND, "Share group X not found." / "Group X not found.", and no group is made; of
    a member the group does not have: UNKNOWN_MEMBER_ID, "Member M is not a member of group X."; an
    epoch above the member's: FENCED_MEMBER_EPOCH in Kafka's words. (ShareFetch and
    ShareAcknowledge of the group id "": Kafka serves them, kafka_pg refuses them, INVALID_REQUEST;
    not checked here.)
  - DescribeShareGroupOffsets v1: a group with no share state (it does not exist) is no error, with
    no topics when all are asked, start offset and lag -1 for each partition asked; a topic that does
    not exist in a share group: the zero id, start offset -1, no error.
  - OffsetCommit and OffsetFetch v10 (topics by id): an unknown id, or the zero id, UNKNOWN_TOPIC_ID
    (100) for each partition; a partition the topic does not have: UNKNOWN_TOPIC_OR_PARTITION (3) on
    a commit, no offset and no error on a fetch.
  - DescribeGroups describes classic groups only: a consumer group, a share group, a group that does
    not exist and "" are answered state Dead with no protocol and no members; from v6 (KIP-1043)
    with GROUP_ID_NOT_FOUND, "Group X is not a classic group." / "Group X not found.". A classic
    group with an offset only is Empty.
  - Every ConsumerGroupHeartbeat and ShareGroupHeartbeat answered with an error above: no member id,
    member epoch 0.
  - FindCoordinator: a v4+ coordinator's error message is "" (v3: "NONE"); share-partition keys (key
    type 2, "group:topicId:partition") from v6, read as SharePartitionKey reads them (the group may
    hold ':', not blank; the topic id base64url of 16 bytes, "==" allowed; the partition a Java int,
    signed; trailing ':' dropped), else INVALID_REQUEST with message ""; at v5 INVALID_REQUEST, at
    v3 with Errors.INVALID_REQUEST's text; key type 3: every key INVALID_REQUEST with that text.
Standard library only; shares describe_partitions.py's encoding. Prints "ok - ..." / "not ok - ..."
and "N passed, M failed".
"""
import base64
import socket
import struct
import sys
import time
import uuid

import describe_partitions as w
from describe_partitions import check, cstr, i8, i32, uvarint
from wire_cluster import metadata

INVALID_REQUEST = 42
# Errors.INVALID_REQUEST.message(), the text of a request Kafka refuses as a whole
REFUSED = ("This most likely occurs because of a request being malformed by the client library or the message "
           "was sent to an incompatible broker. See the broker logs for more details.")
# (API, error, member id, member epoch) of each heartbeat answered with an error: Kafka's carry no
# member id and epoch 0 (its error answers are the response's defaults)
ERROR_ANSWERS = []


def heartbeat(s, version, group, member, epoch, instance=None, rack=None, rebalance_timeout=30000,
              names=None, regex=None, assignor=None, owned=()):
    """ConsumerGroupHeartbeat; names/owned None send null. Returns (error, message, member epoch, the
    assignment sent: [(topic id, partitions)] or None, member id)."""
    body = cstr(group) + cstr(member) + i32(epoch) + cstr(instance) + cstr(rack) + i32(rebalance_timeout)
    body += uvarint(0) if names is None else uvarint(len(names) + 1) + b"".join(cstr(t) for t in names)
    if version >= 1:
        body += cstr(regex)
    body += cstr(assignor)
    if owned is None:
        body += uvarint(0)
    else:
        body += uvarint(len(owned) + 1) + b"".join(
            tid + uvarint(len(ps) + 1) + b"".join(i32(p) for p in ps) + b"\0" for tid, ps in owned)
    r = w.call(s, 68, version, body + b"\0")
    r.i32()
    err, msg = r.i16(), r.cstr()
    member_id = r.cstr()
    epoch = r.i32()
    r.i32()
    if err:
        ERROR_ANSWERS.append(("ConsumerGroupHeartbeat", err, member_id, epoch))
    assigned = None
    if r.i8() >= 0:
        assigned = [(tid, sorted(ps)) for tid, ps, _ in
                    r.carray(lambda: (r.take(16), r.carray(r.i32) or [], r.tags())) or []]
    return err, msg, epoch, assigned, member_id


def join_alone(s, group, member, topic, rebalance_timeout=30000):
    """member joins group, alone, subscribing to topic (2 partitions), with rebalance_timeout;
    heartbeats (rebalance timeout -1: unchanged) until it is given both (Kafka's coordinator may not
    see a topic made a moment ago yet). Returns the last answer."""
    got = heartbeat(s, 1, group, member, 0, names=[topic], rebalance_timeout=rebalance_timeout)
    deadline = time.time() + 20
    while got[0] == 0 and not (got[3] and sum(len(ps) for _, ps in got[3]) == 2) and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, group, member, got[2], rebalance_timeout=-1, owned=None)
    return got


def size(assignment):
    return sum(len(ps) for _, ps in assignment or [])


def move_checks(s, t, tag):
    """A partition moving from one member to another, as Kafka's CurrentAssignmentBuilder moves it: the
    member losing it stays at its epoch until it reports the partition gone (so the same heartbeat again,
    its answer lost, is answered); the member waiting for it moves to the group's epoch at once, and is
    given the partition once the other has let it go."""
    g = "wg-move-" + tag
    a, b = "wg-ma-" + tag, "wg-mb-" + tag
    w.find_coordinator(s, g)
    got = join_alone(s, g, a, t)
    a_epoch, a_parts = got[2], got[3]
    check("moving: %s joins %s alone: both partitions" % (a, g), got[0] == 0 and size(a_parts) == 2, got)
    got = heartbeat(s, 1, g, b, 0, names=[t])
    b_epoch = got[2]
    check("%s joins: nothing yet (a holds both)" % b, got[0] == 0 and got[3] is not None and size(got[3]) == 0,
          got)
    # (Kafka 4.4 may compute the new target a moment later: consumer.assignment.interval.ms)
    got = heartbeat(s, 1, g, a, a_epoch, owned=a_parts)
    deadline = time.time() + 20
    while got[0] == 0 and got[3] is None and got[2] == a_epoch and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, g, a, a_epoch, owned=a_parts)
    kept = got[3]
    check("%s, owning both, is told to give one up: sent one partition, at the epoch it has" % a,
          got[0] == 0 and got[2] == a_epoch and size(kept) == 1, got)
    got = heartbeat(s, 1, g, a, a_epoch, owned=a_parts)
    check("the same heartbeat again (as after a lost answer): answered at that epoch, nothing sent",
          got[:4] == (0, None, a_epoch, None), got)
    got = heartbeat(s, 1, g, a, a_epoch, owned=None)
    check("... with owned partitions null: the same (it is taken to own them still)",
          got[:4] == (0, None, a_epoch, None), got)
    got = heartbeat(s, 1, g, b, b_epoch, owned=[])
    b_epoch = got[2]
    check("%s, while a still owns the partition: nothing, at the group's new epoch" % b,
          got[0] == 0 and b_epoch > a_epoch and size(got[3]) == 0, got)
    got = describe(s, 1, [g])
    check("ConsumerGroupDescribe meanwhile: Reconciling, the members at epochs %d and %d" % (a_epoch, b_epoch),
          got and got[0][:3] == (0, g, "Reconciling") and sorted(m[0] for m in got[0][3]) == [a_epoch, b_epoch],
          got)
    got = heartbeat(s, 1, g, a, a_epoch, owned=kept)
    check("%s, owning only what it kept: moves to %s's epoch, nothing sent (unchanged)" % (a, b),
          got[:4] == (0, None, b_epoch, None), got)
    got = heartbeat(s, 1, g, b, b_epoch, owned=[])
    check("%s is given the other partition, at its epoch" % b, got[0] == 0 and got[2] == b_epoch and
          size(got[3]) == 1 and kept and got[3][0][1] != kept[0][1], (got, kept))
    got = heartbeat(s, 1, g, b, b_epoch, owned=got[3])
    got = describe(s, 1, [g])
    check("ConsumerGroupDescribe then: Stable, both at epoch %d" % b_epoch,
          got and got[0][:3] == (0, g, "Stable") and [m[0] for m in got[0][3]] == [b_epoch, b_epoch], got)
    for m in (a, b):
        heartbeat(s, 1, g, m, -1)


def revoke_timeout_checks(s, t, tag):
    """A member told to give a partition up that still owns it after its rebalance timeout (3 s here;
    a timeout in a later heartbeat would replace it, -1 keeps it) is removed, though it heartbeats:
    its next heartbeat gets UNKNOWN_MEMBER_ID, and the other member gets the partition."""
    g = "wg-revoke-" + tag
    a, b = "wg-ra-" + tag, "wg-rb-" + tag
    w.find_coordinator(s, g)
    got = join_alone(s, g, a, t, rebalance_timeout=3000)
    a_epoch, a_parts = got[2], got[3]
    check("rebalance timeout: %s joins %s alone with rebalance timeout 3000: both partitions" % (a, g),
          got[0] == 0 and size(a_parts) == 2, got)
    got = heartbeat(s, 1, g, b, 0, names=[t], rebalance_timeout=3000)
    b_epoch = got[2]
    got = heartbeat(s, 1, g, a, a_epoch, rebalance_timeout=-1, owned=a_parts)
    deadline = time.time() + 20
    while got[0] == 0 and got[3] is None and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, g, a, a_epoch, rebalance_timeout=-1, owned=a_parts)
    check("%s is told to give one up" % a, got[0] == 0 and size(got[3]) == 1, got)
    b_parts = []
    deadline = time.time() + 20
    while got[0] == 0 and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, g, a, a_epoch, rebalance_timeout=-1, owned=a_parts)
        gb = heartbeat(s, 1, g, b, b_epoch, rebalance_timeout=-1, owned=b_parts)
        b_epoch, b_parts = gb[2], gb[3] if gb[3] is not None else b_parts
    check("%s, heartbeating and owning both past its rebalance timeout, is removed: UNKNOWN_MEMBER_ID" % a,
          got[:2] == (25, "Member %s is not a member of group %s." % (a, g)), got)
    deadline = time.time() + 20
    while gb[0] == 0 and size(b_parts) != 2 and time.time() < deadline:
        time.sleep(0.5)
        gb = heartbeat(s, 1, g, b, b_epoch, rebalance_timeout=-1, owned=b_parts)
        b_epoch, b_parts = gb[2], gb[3] if gb[3] is not None else b_parts
    check("%s then gets both partitions, at a new epoch" % b,
          gb[0] == 0 and size(b_parts) == 2 and b_epoch > a_epoch, (gb, b_parts))
    heartbeat(s, 1, g, b, -1)


def describe(s, version, groups):
    """ConsumerGroupDescribe: [(error, group, state, [(member epoch, regex, member type)])]."""
    r = w.call(s, 69, version, uvarint(len(groups) + 1) + b"".join(cstr(g) for g in groups) + i8(0) + b"\0")
    r.i32()

    def assignment():
        r.carray(lambda: (r.take(16), r.cstr(), r.carray(r.i32), r.tags()))
        r.tags()

    def member():
        r.cstr(), r.cstr(), r.cstr()
        epoch = r.i32()
        r.cstr(), r.cstr(), r.carray(r.cstr)
        regex = r.cstr()
        assignment()
        assignment()
        kind = r.i8() if version >= 1 else None
        r.tags()
        return epoch, regex, kind

    def group():
        err = r.i16()
        r.cstr()
        gid, state = r.cstr(), r.cstr()
        r.i32(), r.i32(), r.cstr()
        members = r.carray(member)
        r.i32()
        r.tags()
        return err, gid, state, members
    return r.carray(group)


def delete_groups(s, version, groups):
    r = w.call(s, 42, version, uvarint(len(groups) + 1) + b"".join(cstr(g) for g in groups) + b"\0")
    r.i32()
    if version >= 3:
        return r.carray(lambda: (r.cstr(), r.i16(), r.cstr(), r.tags())[:3])
    return r.carray(lambda: (r.cstr(), r.i16(), r.tags())[:2])


def share_heartbeat(s, group, member, epoch, rack=None, names=()):
    """ShareGroupHeartbeat v1: (error, message, member epoch)."""
    body = cstr(group) + cstr(member) + i32(epoch) + cstr(rack)
    body += uvarint(0) if names is None else uvarint(len(names) + 1) + b"".join(cstr(t) for t in names)
    r = w.call(s, 76, 1, body + b"\0")
    r.i32()
    err, msg = r.i16(), r.cstr()
    member_id, epoch = r.cstr(), r.i32()
    if err:
        ERROR_ANSWERS.append(("ShareGroupHeartbeat", err, member_id, epoch))
    return err, msg, epoch


def share_fetch(s, group, member):
    """ShareFetch v1 of no partition (opening a session): (error, message)."""
    body = (cstr(group) + cstr(member) + i32(0) + i32(0) + i32(1) + i32(1000) + i32(10) + i32(10)
            + uvarint(1) + uvarint(1) + b"\0")
    r = w.call(s, 78, 1, body)
    r.i32()
    return r.i16(), r.cstr()


def share_acknowledge(s, group, member):
    """ShareAcknowledge v1 of nothing: (error, message)."""
    r = w.call(s, 79, 1, cstr(group) + cstr(member) + i32(1) + uvarint(1) + b"\0")
    r.i32()
    return r.i16(), r.cstr()


def describe_share_offsets(s, groups):
    """DescribeShareGroupOffsets v1; groups: [(group, None or [(topic, [partitions])])]. Returns
    [(group, error, message, [(topic, topic id, [(partition, start offset, lag, error, message)])])]."""
    def topics(ts):
        if ts is None:
            return uvarint(0)
        return uvarint(len(ts) + 1) + b"".join(
            cstr(t) + uvarint(len(ps) + 1) + b"".join(i32(p) for p in ps) + b"\0" for t, ps in ts)
    body = uvarint(len(groups) + 1) + b"".join(cstr(g) + topics(ts) + b"\0" for g, ts in groups) + b"\0"
    r = w.call(s, 90, 1, body)
    r.i32()

    def partition():
        index, start, _epoch = r.i32(), r.i64(), r.i32()
        lag, err, msg = r.i64(), r.i16(), r.cstr()
        r.tags()
        return index, start, lag, err, msg

    def topic():
        name, tid = r.cstr(), r.take(16)
        parts = r.carray(partition)
        r.tags()
        return name, tid, parts

    def group():
        gid, ts = r.cstr(), r.carray(topic)
        err, msg = r.i16(), r.cstr()
        r.tags()
        return gid, err, msg, ts
    return r.carray(group)


def find_coordinator(s, version, key_type, keys):
    """FindCoordinator v3-6 (flexible): [(error, message, node id)], one per key (v3: the one key)."""
    if version < 4:
        r = w.call(s, 10, version, cstr(keys[0]) + i8(key_type) + b"\0")
        r.i32()
        return [(r.i16(), r.cstr(), r.i32())]
    r = w.call(s, 10, version, i8(key_type) + uvarint(len(keys) + 1) + b"".join(cstr(k) for k in keys) + b"\0")
    r.i32()
    return [(e, m, n) for _, n, _, _, e, m, _ in
            r.carray(lambda: (r.cstr(), r.i32(), r.cstr(), r.i32(), r.i16(), r.cstr(), r.tags()))]


def find_coordinator_checks(s, g):
    """FindCoordinator's answers beyond a group's: KafkaApis.getCoordinator and SharePartitionKey."""
    got = find_coordinator(s, 4, 0, [g, g])
    check("FindCoordinator v4 of a group twice: each answered, with the message \"\" (v0-3 say \"NONE\")",
          [(e, m) for e, m, _ in got] == [(0, ""), (0, "")] and got[0][2] >= 0, got)
    got = find_coordinator(s, 3, 0, [g])
    check("FindCoordinator v3 of a group: \"NONE\"", [(e, m) for e, m, _ in got] == [(0, "NONE")], got)
    tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    # Kafka's share coordinator is not available until its state topic is made: wait for it
    deadline = time.time() + 30
    while find_coordinator(s, 6, 2, ["g:%s:0" % tid])[0][0] == 15 and time.time() < deadline:
        time.sleep(0.5)
    for key, ok in (("g:%s:0" % tid, True), ("g:%s==:0" % tid, True), ("g:%s:0:" % tid, True),
                    ("a:b:%s:3" % tid, True), ("g:%s:-1" % tid, True), ("g:%s:+5" % tid, True),
                    ("g:%s:-2147483648" % tid, True), ("g:%s:2147483648" % tid, False),
                    ("bad", False), ("g:%s:x" % tid, False), ("g:%s:" % tid, False), (":%s:0" % tid, False),
                    (" :%s:0" % tid, False), ("g:%s:0" % tid[:21], False), ("g:%s=:0" % tid, False),
                    ("g:%s+:0" % tid[:21], False), ("", False)):
        got = find_coordinator(s, 6, 2, [key])
        check("FindCoordinator v6, share key %r: %s" % (key.replace(tid, "<id>"), "answered" if ok else
              "INVALID_REQUEST (42), message \"\""),
              [(e, m) for e, m, _ in got] == [(0, "")] if ok else got == [(INVALID_REQUEST, "", -1)], got)
    got = find_coordinator(s, 5, 2, ["g:%s:0" % tid])
    check("FindCoordinator v5, share key: INVALID_REQUEST (share keys from v6)", got == [(INVALID_REQUEST, "", -1)], got)
    got = find_coordinator(s, 3, 2, ["g:%s:0" % tid])
    check("FindCoordinator v3, share key: INVALID_REQUEST with Kafka's text", got == [(INVALID_REQUEST, REFUSED, -1)], got)
    for version in (3, 6):
        got = find_coordinator(s, version, 3, ["x", "y"][:1 if version < 4 else 2])
        check("FindCoordinator v%d, key type 3: INVALID_REQUEST with Kafka's text for each key" % version,
              got == [(INVALID_REQUEST, REFUSED, -1)] * (1 if version < 4 else 2), got)


def offset_commit(s, group, topics):
    """OffsetCommit v10 (topic ids), no member (generation -1, member ""), of [(topic id, [(partition,
    offset)])]: [(topic id, [(partition, error)])]."""
    body = cstr(group) + i32(-1) + cstr("") + cstr(None) + uvarint(len(topics) + 1) + b"".join(
        tid + uvarint(len(ps) + 1) + b"".join(i32(p) + struct.pack(">q", o) + i32(-1) + cstr("") + b"\0"
                                              for p, o in ps) + b"\0" for tid, ps in topics) + b"\0"
    r = w.call(s, 8, 10, body)
    r.i32()
    # Kafka answers a topic's partitions in no set order
    return [(tid, sorted(ps)) for tid, ps, _ in r.carray(lambda: (r.take(16), r.carray(lambda: (r.i32(), r.i16(), r.tags())[:2]),
                                                                  r.tags()))]


def offset_fetch(s, group, topics):
    """OffsetFetch v10 (topic ids) of one group, [(topic id, [partition])] or None (all):
    ([(topic id, [(partition, offset, error)])], the group's error)."""
    listed = uvarint(0) if topics is None else uvarint(len(topics) + 1) + b"".join(
        tid + uvarint(len(ps) + 1) + b"".join(i32(p) for p in ps) + b"\0" for tid, ps in topics)
    r = w.call(s, 9, 10, uvarint(2) + cstr(group) + cstr(None) + i32(-1) + listed + b"\0" + i8(0) + b"\0")
    r.i32()

    def partition():
        p, o, _, _, e = r.i32(), struct.unpack(">q", r.take(8))[0], r.i32(), r.cstr(), r.i16()
        r.tags()
        return p, o, e

    def group_answer():
        r.cstr()
        ts = [(tid, sorted(ps)) for tid, ps, _ in r.carray(lambda: (r.take(16), r.carray(partition), r.tags()))]
        e = r.i16()
        r.tags()
        return ts, e
    return r.carray(group_answer)[0]


def offsets_by_id_checks(s, t, tag):
    """OffsetCommit and OffsetFetch v10 name topics by id (KIP-848's follow-up)."""
    g = "wg-offsets-" + tag
    w.find_coordinator(s, g)
    tid = topic_id(s, t)
    unknown, zero = uuid.uuid4().bytes, b"\0" * 16
    got = offset_commit(s, g, [(tid, [(0, 5), (1, 7), (9, 1)]), (unknown, [(0, 5)]), (zero, [(0, 5)])])
    check("OffsetCommit v10: the topic's partitions 0 and 1 committed, partition 9 UNKNOWN_TOPIC_OR_PARTITION, an "
          "unknown id and the zero id UNKNOWN_TOPIC_ID (100)",
          got == [(tid, [(0, 0), (1, 0), (9, 3)]), (unknown, [(0, 100)]), (zero, [(0, 100)])], got)
    got = offset_fetch(s, g, [(tid, [0, 1, 9]), (unknown, [0]), (zero, [0])])
    check("OffsetFetch v10: the topic's offsets (partition 9: none, no error); an unknown id and the zero id "
          "UNKNOWN_TOPIC_ID (100)",
          got == ([(tid, [(0, 5, 0), (1, 7, 0), (9, -1, 0)]), (unknown, [(0, -1, 100)]), (zero, [(0, -1, 100)])], 0),
          got)
    got = offset_fetch(s, g, None)
    check("OffsetFetch v10 of all topics: the topic, by id", got == ([(tid, [(0, 5, 0), (1, 7, 0)])], 0), got)


def describe_groups(s, version, group):
    """DescribeGroups v5-6 of one group: (error, message (v6), state, protocol type, protocol, members)."""
    r = w.call(s, 15, version, uvarint(2) + cstr(group) + i8(0) + b"\0")
    r.i32()

    def member():
        got = r.cstr(), r.cstr(), r.cstr(), r.cstr(), r.take(r.uvarint() - 1), r.take(r.uvarint() - 1)
        r.tags()
        return got[0]

    def described():
        err = r.i16()
        msg = r.cstr() if version >= 6 else None
        r.cstr()
        got = err, msg, r.cstr(), r.cstr(), r.cstr(), len(r.carray(member) or [])
        r.i32(), r.tags()
        return got
    return r.carray(described)[0]


def describe_groups_checks(s, t, tag):
    """DescribeGroups describes classic groups only (Kafka 4.4; v6: KIP-1043)."""
    cg, sg, og = "wg-dg-c-" + tag, "wg-dg-s-" + tag, "wg-dg-o-" + tag
    w.find_coordinator(s, cg)
    joined = heartbeat(s, 1, cg, "wg-dg-member-" + tag, 0, names=[t])[0]
    joined_share = share_heartbeat(s, sg, "wg-dg-share-" + tag, 0, None, [t])[0]
    tid = topic_id(s, t)
    committed = offset_commit(s, og, [(tid, [(0, 1)])])
    check("a consumer group, a share group and a classic group with an offset only are made",
          (joined, joined_share, committed) == (0, 0, [(tid, [(0, 0)])]), (joined, joined_share, committed))
    for what, g, v6 in (("a consumer group", cg, (69, "Group %s is not a classic group." % cg)),
                        ("a share group", sg, (69, "Group %s is not a classic group." % sg)),
                        ("a group that does not exist", "wg-dg-nosuch-" + tag,
                         (69, "Group wg-dg-nosuch-%s not found." % tag)),
                        ("the group \"\"", "", (69, "Group  not found."))):
        got = describe_groups(s, 5, g)
        check("DescribeGroups v5 of %s: no error, state Dead, no protocol, no member" % what,
              got == (0, None, "Dead", "", "", 0), got)
        got = describe_groups(s, 6, g)
        check("DescribeGroups v6 of %s: GROUP_ID_NOT_FOUND \"%s\", state Dead" % (what, v6[1].replace(tag, "X")),
              got == v6 + ("Dead", "", "", 0), got)
    for version in (5, 6):
        got = describe_groups(s, version, og)
        check("DescribeGroups v%d of a classic group with an offset only: Empty" % version,
              got == (0, None, "Empty", "", "", 0), got)


def topic_id(s, name, wait=30):
    """The topic's id from Metadata v12, once the broker has it (Kafka's brokers learn a topic made a
    moment ago from their controller a little later)."""
    deadline = time.time() + wait
    while True:
        got = metadata(s, [(b"\0" * 16, name)])
        if (got and got[0][0] == 0 and got[0][2] != b"\0" * 16) or time.time() > deadline:
            return got[0][2] if got else b"\0" * 16
        time.sleep(0.5)


def offset_delete(s, group, topics):
    """OffsetDelete v0 (not flexible: request header v1, response header v0) of [(topic, [partition])]:
    (error, [(topic, sorted [(partition, error)])])."""
    def string(x):
        b = x.encode()
        return struct.pack(">h", len(b)) + b
    body = string(group) + i32(len(topics)) + b"".join(
        string(n) + i32(len(ps)) + b"".join(i32(p) for p in ps) for n, ps in topics)
    w.corr += 1
    msg = struct.pack(">hhi", 47, 0, w.corr) + string("admin") + body
    s.sendall(struct.pack(">i", len(msg)) + msg)
    r = w.Reader(w.recv_exact(s, struct.unpack(">i", w.recv_exact(s, 4))[0]))
    r.i32()
    err = r.i16()
    r.i32()
    out = []
    for _ in range(r.i32()):
        name = r.take(r.i16()).decode()
        out.append((name, sorted((r.i32(), r.i16()) for _ in range(r.i32()))))
    return err, out


def classic_join(s, group, topics, protocol_type="consumer", version=0):
    """A classic member joins group (JoinGroup v9, again with the member id MEMBER_ID_REQUIRED hands
    out) subscribed to topics (a ConsumerProtocolSubscription v0's fields after the version given:
    from 1 it lacks the fields its version adds, as platformatic/kafka sends it), and takes an empty
    assignment (SyncGroup v5): (JoinGroup's error, SyncGroup's error)."""
    def string(x):
        b = x.encode()
        return struct.pack(">h", len(b)) + b
    sub = struct.pack(">h", version) + i32(len(topics)) + b"".join(string(x) for x in topics) + i32(-1)
    member = ""
    for _ in range(2):
        body = (cstr(group) + i32(30000) + i32(30000) + cstr(member) + cstr(None) + cstr(protocol_type)
                + uvarint(2) + cstr("range") + uvarint(len(sub) + 1) + sub + b"\0" + cstr(None) + b"\0")
        r = w.call(s, 11, 9, body)
        r.i32()
        err, generation = r.i16(), r.i32()
        r.cstr(), r.cstr(), r.cstr(), r.i8()
        member = r.cstr()
        if err != 79:       # MEMBER_ID_REQUIRED (KIP-394): join again with the id
            break
    if err:
        return err, None
    body = (cstr(group) + i32(generation) + cstr(member) + cstr(None) + cstr(protocol_type) + cstr("range")
            + uvarint(2) + cstr(member) + uvarint(1) + b"\0" + b"\0")
    r = w.call(s, 14, 5, body)
    r.i32()
    return err, r.i16()


def offset_delete_checks(s, t, tag):
    """OffsetDelete refuses only the topics a member subscribes to (Kafka's isSubscribedToTopic; a
    classic member's topics read as ConsumerProtocolSubscription v0, whatever its version says)."""
    t2 = t + "-other"
    made = w.create_topics(s, {t2: 1})
    check("CreateTopics %s (1)" % t2, made == {t2: 0}, made)
    ids = {n: topic_id(s, n) for n in (t, t2)}
    cg, kg, xg, og = ("wg-od-%s-%s" % (k, tag) for k in ("consumer", "classic", "connect", "offsets"))
    for g in (cg, kg, xg, og):
        w.find_coordinator(s, g)
    # offsets committed with no member (generation -1) while each group is empty, then the members join
    committed = [offset_commit(s, g, [(ids[t], [(0, 4)]), (ids[t2], [(0, 4)])]) for g in (cg, kg, og)]
    joined = (heartbeat(s, 1, cg, "wg-od-member-" + tag, 0, names=[t])[0], classic_join(s, kg, [t]),
              classic_join(s, xg, [t], "connect"))
    check("offsets committed; a consumer group's member subscribes to %s, a classic group's member too, a "
          "classic group of protocol type connect has a member" % t,
          joined == (0, (0, 0), (0, 0)) and committed == [[(ids[t], [(0, 0)]), (ids[t2], [(0, 0)])]] * 3,
          (joined, committed))
    # a subscription that says version 1 and ends after its user data: its topics are read as
    # version 0, the prefix of every version (Kafka's computeSubscribedTopics); kafka_pg could not
    # read it and took the group for subscribed to every topic (platformatic/kafka's
    # deleteConsumerGroupOffsets test)
    vg = "wg-od-classic-v1-" + tag
    w.find_coordinator(s, vg)
    committed = offset_commit(s, vg, [(ids[t], [(0, 4)]), (ids[t2], [(0, 4)])])
    joined = classic_join(s, vg, [t], version=1)
    check("a classic group's member subscribes to %s with a subscription that says version 1 and ends after "
          "its user data" % t, joined == (0, 0) and committed == [(ids[t], [(0, 0)]), (ids[t2], [(0, 0)])],
          (joined, committed))
    for what, g in (("a consumer group", cg), ("a classic group of protocol type consumer", kg),
                    ("that group", vg)):
        got = offset_delete(s, g, [(t, [0]), (t2, [0])])
        check("OffsetDelete, %s: the subscribed topic GROUP_SUBSCRIBED_TO_TOPIC (86), the other deleted" % what,
              got == (0, [(t, [(0, 86)]), (t2, [(0, 0)])]), got)
    got = offset_fetch(s, cg, [(ids[t], [0]), (ids[t2], [0])])
    check("... the consumer group keeps the subscribed topic's offset, the other's is gone",
          got == ([(ids[t], [(0, 4, 0)]), (ids[t2], [(0, -1, 0)])], 0), got)
    got = offset_delete(s, xg, [(t2, [0])])
    check("OffsetDelete, a classic group of another protocol type with a member: NON_EMPTY_GROUP (68), no topic",
          got == (68, []), got)
    got = offset_delete(s, og, [(t, [0, 1, 5, -1]), ("wg-od-nosuch-" + tag, [0])])
    check("OffsetDelete, a group with offsets only: deleted (a partition without one too); partitions 5 and -1 "
          "and an unknown topic UNKNOWN_TOPIC_OR_PARTITION (3)",
          got == (0, [(t, [(-1, 3), (0, 0), (1, 0), (5, 3)]), ("wg-od-nosuch-" + tag, [(0, 3)])]), got)
    got = offset_delete(s, "wg-od-nosuch-" + tag, [(t, [0])])
    check("OffsetDelete, a group that does not exist: GROUP_ID_NOT_FOUND (69), no topic", got == (69, []), got)


def share_checks(s, t, tag):
    sg = "wg-share-" + tag
    w.find_coordinator(s, sg)
    cases = [
        ("member id \"\"", (sg, "", 0, None, [t]), (INVALID_REQUEST, None)),
        ("member id of 37 characters", (sg, "m" * 37, 0, None, [t]), (INVALID_REQUEST, None)),
        ("member id \" \"", (sg, " ", 0, None, [t]), (INVALID_REQUEST, "MemberId can't be empty.")),
        ("group id \" \"", (" ", "m1", 0, None, [t]), (INVALID_REQUEST, "GroupId can't be empty.")),
        ("rack id \"\"", (sg, "m1", 0, "", [t]), (INVALID_REQUEST, "RackId can't be empty.")),
        ("rack id \" \"", (sg, "m1", 0, " ", [t]), (INVALID_REQUEST, "RackId can't be empty.")),
        ("joining with topic names null", (sg, "m1", 0, None, None),
         (INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")),
        ("joining with no topic names", (sg, "m1", 0, None, []),
         (INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")),
        ("epoch -2", (sg, "m1", -2), (INVALID_REQUEST, "MemberEpoch is invalid.")),
        ("epoch -5 with no topic names", (sg, "m1", -5, None, []), (INVALID_REQUEST, "MemberEpoch is invalid.")),
    ]
    for what, args, want in cases:
        got = share_heartbeat(s, *args)[:2]
        check("ShareGroupHeartbeat v1, %s: INVALID_REQUEST, %s" % (what, '"%s"' % want[1] if want[1] else "no message"),
              got == want, got)
    # a group that does not exist (none is made), a member the group does not have, an epoch above its
    for epoch, message in ((3, "Share group %s not found."), (-1, "Group %s not found.")):
        got = share_heartbeat(s, sg, "m1", epoch)[:2]
        check("ShareGroupHeartbeat, epoch %d to a group that does not exist: GROUP_ID_NOT_FOUND \"%s\""
              % (epoch, message % "X"), got == (69, message % sg), got)
    got = share_heartbeat(s, sg, "m1", 3)[:2]
    check("... and the first did not make it", got == (69, "Share group %s not found." % sg), got)
    member = "wg-share-member-" + tag
    got = share_heartbeat(s, sg, member, 0, None, [t])
    check("ShareGroupHeartbeat, %s joins" % member, got[0] == 0 and got[2] > 0, got)
    epoch = got[2]
    for epoch_sent in (3, -1):
        got = share_heartbeat(s, sg, "wg-nosuch", epoch_sent)[:2]
        check("ShareGroupHeartbeat, epoch %d of a member the group does not have: UNKNOWN_MEMBER_ID \"Member ... "
              "is not a member of group ...\"" % epoch_sent,
              got == (25, "Member wg-nosuch is not a member of group %s." % sg), got)
    got = share_heartbeat(s, sg, member, epoch + 50)[:2]
    check("ShareGroupHeartbeat, an epoch above the member's: FENCED_MEMBER_EPOCH in Kafka's words",
          got == (110, "The share group member has a greater member epoch (%d) than the one known by the group "
                       "coordinator (%d). The member must abandon all its partitions and rejoin." % (epoch + 50, epoch)),
          got)
    got = share_heartbeat(s, sg, member, -1)[:2]
    check("... the member leaves", got == (0, None), got)
    got = share_heartbeat(s, sg, member, -1)[:2]
    check("... and leaving again: UNKNOWN_MEMBER_ID",
          got == (25, "Member %s is not a member of group %s." % (member, sg)), got)

    # DescribeShareGroupOffsets (Admin.listShareGroupOffsets): absence of share state is no error
    tid = topic_id(s, t)
    nobody = "wg-share-nosuch-" + tag
    got = describe_share_offsets(s, [(nobody, None)])
    check("DescribeShareGroupOffsets v1, a group that does not exist, all topics: no error, no topic",
          got == [(nobody, 0, None, [])], got)
    got = describe_share_offsets(s, [(nobody, [(t, [0, 1])])])
    check("... that group, the topic's partitions: no error, start offset and lag -1 (none)",
          got == [(nobody, 0, None, [(t, tid, [(0, -1, -1, 0, None), (1, -1, -1, 0, None)])])], got)
    got = describe_share_offsets(s, [(sg, [("wg-nosuch-topic-" + tag, [0])])])
    check("... the share group, a topic that does not exist: the zero id, no error, start offset -1 (a "
          "partition the topic does not have is not asked: Kafka 4.4's share coordinator retries it until "
          "the request times out)",
          got == [(sg, 0, None, [("wg-nosuch-topic-" + tag, b"\0" * 16, [(0, -1, -1, 0, None)])])], got)

    for api, call in (("ShareFetch", share_fetch), ("ShareAcknowledge", share_acknowledge)):
        for what, member, want in (("\"\"", "", (INVALID_REQUEST, None)), ("of 37 characters", "m" * 37, (INVALID_REQUEST, None)),
                                   ("of 36 characters", "m" * 36, (0, None)), ("\" \"", " ", (0, None))):
            got = call(s, sg, member)
            check("%s v1, member id %s: %s" % (api, what, "INVALID_REQUEST, no message" if want[0] else "answered"),
                  got == want, got)


def main():
    host, port = w.BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    tag = uuid.uuid4().hex[:8]
    t = "wg-" + tag
    made = w.create_topics(s, {t: 2})
    check("CreateTopics %s (2)" % t, made == {t: 0}, made)
    g = "wg-group-" + tag
    check("FindCoordinator v4 of %s" % g, w.find_coordinator(s, g) == [0])

    # refused before the group is looked at: none of these makes the group
    z = b"\0" * 16
    refused = [
        ("v1, joining with member id \"\"", (1, g, "", 0), "MemberId can't be empty."),
        ("v1, joining with member id \"  \"", (1, g, "  ", 0), "MemberId can't be empty."),
        ("v0, epoch 5 with member id \"\"", (0, g, "", 5), "MemberId can't be empty."),
        ("v0, leaving (-1) with member id \"\"", (0, g, "", -1), "MemberId can't be empty."),
        ("group id \"\"", (1, "", "m1", 0), "GroupId can't be empty."),
        ("group id \" \"", (1, " ", "m1", 0), "GroupId can't be empty."),
        ("instance id \"\"", (1, g, "m1", 0, ""), "InstanceId can't be empty."),
        ("instance id \" \"", (1, g, "m1", 0, " "), "InstanceId can't be empty."),
        ("rack id \"\"", (1, g, "m1", 0, None, ""), "RackId can't be empty."),
        ("joining with rebalance timeout -1", (1, g, "m1", 0, None, None, -1),
         "RebalanceTimeoutMs must be provided in first request."),
        ("joining with a partition owned", (1, g, "m1", 0, None, None, 30000, [t], None, None, [(z, [0])]),
         "TopicPartitions must be empty when (re-)joining."),
        ("joining with TopicPartitions null", (1, g, "m1", 0, None, None, 30000, [t], None, None, None),
         "TopicPartitions must be empty when (re-)joining."),
        ("joining with neither topic names nor a pattern", (1, g, "m1", 0, None, None, 30000, None),
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        ("epoch -2 without an instance id", (1, g, "m1", -2), "InstanceId can't be null."),
        ("epoch -3", (1, g, "m1", -3), "MemberEpoch is invalid."),
        ("group id \"\" and member id \"\", epoch -3: the member id first", (1, "", "", -3),
         "MemberId can't be empty."),
    ]
    for what, args, message in refused:
        got = heartbeat(s, *args)[:2]
        check("ConsumerGroupHeartbeat v%d, %s: INVALID_REQUEST \"%s\"" % (args[0], what, message),
              got == (INVALID_REQUEST, message), got)
    got = heartbeat(s, 1, g, "m1", 0, assignor="bogus", names=[t])[:2]
    check("ConsumerGroupHeartbeat, ServerAssignor bogus: UNSUPPORTED_ASSIGNOR (112) in Kafka's words",
          got == (112, "ServerAssignor bogus is not supported. Supported assignors: uniform, range."), got)
    got = describe(s, 1, [g])
    check("... and none of them made %s: GROUP_ID_NOT_FOUND (69)" % g, [x[0] for x in got] == [69], got)

    # a group that does not exist, by a member that is not joining
    for epoch, message in ((-1, "Group %s not found."), (3, "Consumer group %s not found."),
                           (-2, "Group %s not found.")):
        got = heartbeat(s, 1, g, "m1", epoch, "i1" if epoch == -2 else None)[:2]
        check("ConsumerGroupHeartbeat, epoch %d to a group that does not exist: GROUP_ID_NOT_FOUND \"%s\""
              % (epoch, message % "X"), got == (69, message % g), got)
    got = describe(s, 1, [g])
    check("... and %s still does not exist" % g, [x[0] for x in got] == [69], got)

    # v0 still lets the coordinator make the member id
    got = heartbeat(s, 0, g, "", 0, names=[t])
    check("ConsumerGroupHeartbeat v0, joining with member id \"\": joined, with a member id the coordinator made "
          "as Kafka's Uuid.toString(): 22 characters of base64url, not starting with '-'",
          got[0] == 0 and got[2] > 0 and got[4] and len(got[4]) == 22 and got[4][0] != "-" and
          all(c.isascii() and (c.isalnum() or c in "-_") for c in got[4]), got)
    member = "wg-member-" + tag
    got = heartbeat(s, 1, g, member, 0, names=[t])
    check("ConsumerGroupHeartbeat v1, joining with member id %s: joined" % member, got[0] == 0 and got[2] > 0, got)
    epoch = got[2]
    got = heartbeat(s, 1, g, "wg-nosuch", -1)[:2]
    check("a member the group does not have, leaving: UNKNOWN_MEMBER_ID \"Member ... is not a member of "
          "group ...\"", got == (25, "Member wg-nosuch is not a member of group %s." % g), got)
    got = heartbeat(s, 1, g, "wg-nosuch", epoch)[:2]
    check("... heartbeating: the same", got == (25, "Member wg-nosuch is not a member of group %s." % g), got)
    got = heartbeat(s, 1, g, member, 99)[:2]
    check("an epoch above the member's: FENCED_MEMBER_EPOCH (110) in Kafka's words",
          got == (110, "The consumer group member has a greater member epoch (99) than the one known by the "
                       "group coordinator (%d). The member must abandon all its partitions and rejoin." % epoch),
          got)

    # an epoch below the member's: only its previous epoch, owning no more than it was given (the
    # answer that moved it on may have been lost), else FENCED_MEMBER_EPOCH
    fenced = "wg-fenced-" + tag
    a, b = "wg-a-" + tag, "wg-b-" + tag
    got = join_alone(s, fenced, a, t)
    a_epoch, a_parts = got[2], got[3]
    check("%s joins %s alone: both partitions" % (a, fenced), got[0] == 0 and a_parts and
          sum(len(ps) for _, ps in a_parts) == 2, got)
    got = heartbeat(s, 1, fenced, b, 0, names=[t])
    check("%s joins: nothing yet (a holds both)" % b, got[0] == 0, got)
    # a is told to give one up, then (owning what it kept) moves to the new epoch
    # (Kafka 4.4 may compute the new target a moment later: consumer.assignment.interval.ms)
    got = heartbeat(s, 1, fenced, a, a_epoch, owned=a_parts)
    kept = got[3] if got[3] is not None else a_parts
    deadline = time.time() + 20
    while got[0] == 0 and got[2] == a_epoch and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, fenced, a, a_epoch, owned=kept)
        kept = got[3] if got[3] is not None else kept
    new_epoch = got[2]
    check("%s gives up a partition and moves to a new epoch" % a,
          got[0] == 0 and new_epoch > a_epoch and sum(len(ps) for _, ps in kept) == 1, (got, kept))
    smaller = ("The consumer group member has a smaller member epoch (%d) than the one known by the group "
               "coordinator (%d). The member must abandon all its partitions and rejoin.")
    got = heartbeat(s, 1, fenced, a, a_epoch, owned=kept)[:3]
    check("its previous epoch again, owning what it kept: answered, with the new epoch",
          got == (0, None, new_epoch), got)
    got = heartbeat(s, 1, fenced, a, a_epoch, owned=None)[:2]
    check("its previous epoch, owned partitions null: FENCED_MEMBER_EPOCH \"... smaller member epoch ...\"",
          got == (110, smaller % (a_epoch, new_epoch)), got)
    got = heartbeat(s, 1, fenced, a, a_epoch, owned=a_parts)[:2]
    check("its previous epoch, owning more than it was given: FENCED_MEMBER_EPOCH",
          got == (110, smaller % (a_epoch, new_epoch)), got)
    got = heartbeat(s, 1, fenced, a, a_epoch, owned=kept + [(uuid.uuid4().bytes, [0])])[:2]
    check("its previous epoch, owning what it kept and a partition of a topic id no topic has: "
          "FENCED_MEMBER_EPOCH", got == (110, smaller % (a_epoch, new_epoch)), got)
    got = heartbeat(s, 1, fenced, a, a_epoch - 1, owned=kept)[:2]
    check("an epoch below its previous one: FENCED_MEMBER_EPOCH",
          got == (110, smaller % (a_epoch - 1, new_epoch)), got)
    for m in (a, b):
        heartbeat(s, 1, fenced, m, -1)
    move_checks(s, t, tag)
    revoke_timeout_checks(s, t, tag)

    # a member that says it owns none of what it was given (its client has not taken it yet) when the
    # target moves on: the partition it loses is free at once, and it is sent its new assignment,
    # which differs from the one it was sent (kafka_pg answered no assignment: the Java consumer then
    # took both partitions and held them at the new epoch while the other member waited for one)
    lag = "wg-lag-" + tag
    x, y = "wg-x-" + tag, "wg-y-" + tag
    got = join_alone(s, lag, x, t)
    x_epoch = got[2]
    check("%s joins %s alone: both partitions" % (x, lag), got[0] == 0 and got[3] and
          sum(len(ps) for _, ps in got[3]) == 2, got)
    got = heartbeat(s, 1, lag, y, 0, names=[t])
    y_epoch = got[2]
    check("%s joins: nothing yet" % y,
          got[0] == 0 and got[3] is not None and sum(len(ps) for _, ps in got[3]) == 0, got)
    got = heartbeat(s, 1, lag, x, x_epoch, rebalance_timeout=-1, owned=[])
    deadline = time.time() + 20
    while got[0] == 0 and got[3] is None and got[2] == x_epoch and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, lag, x, x_epoch, rebalance_timeout=-1, owned=[])
    x_parts = got[3]
    check("%s, owning neither yet, when the target moves on: sent its new assignment (one partition) with "
          "a new epoch" % x, got[0] == 0 and got[2] > x_epoch and x_parts is not None and
          sum(len(ps) for _, ps in x_parts) == 1, got)
    x_epoch = got[2]
    got = heartbeat(s, 1, lag, y, y_epoch, rebalance_timeout=-1, owned=[])
    deadline = time.time() + 20
    while got[0] == 0 and not got[3] and time.time() < deadline:
        time.sleep(0.5)
        got = heartbeat(s, 1, lag, y, got[2], rebalance_timeout=-1, owned=None)
    check("%s is given the other partition at once" % y, got[0] == 0 and x_parts and got[3] and
          sum(len(ps) for _, ps in got[3]) == 1 and got[3][0][1] != x_parts[0][1], (got, x_parts))
    got = heartbeat(s, 1, lag, x, x_epoch, rebalance_timeout=-1, owned=x_parts)
    check("%s acknowledges it: no assignment sent (unchanged)" % x,
          x_parts is not None and got[:4] == (0, None, x_epoch, None), got)
    got = heartbeat(s, 1, lag, x, x_epoch, names=[t], owned=x_parts)
    check("a full request (rebalance timeout, topic names and owned partitions, as a client that lost track "
          "sends): its assignment is sent again, unchanged",
          x_parts is not None and got[:4] == (0, None, x_epoch, x_parts), got)
    for m in (x, y):
        heartbeat(s, 1, lag, m, -1)

    # a classic group (here one with committed offsets only): not a consumer group but to a join
    classic = "wg-classic-" + tag
    w.find_coordinator(s, classic)
    r = w.call(s, 8, 8, cstr(classic) + i32(-1) + cstr("") + cstr(None) + uvarint(2) + cstr(t) + uvarint(2)
               + i32(0) + b"\0" * 8 + i32(-1) + cstr(None) + b"\0" + b"\0" + b"\0")
    r.i32()
    got = r.carray(lambda: (r.cstr(), r.carray(lambda: (r.i32(), r.i16(), r.tags())[:2]), r.tags())[:2])
    check("OffsetCommit v8 to %s with generation -1: a group with offsets only" % classic, got == [(t, [(0, 0)])], got)
    for what, args in (("leaving", ("m1", -1)), ("heartbeating", ("m1", 3)), ("leaving to come back", ("m1", -2, "i1"))):
        got = heartbeat(s, 1, classic, *args)[:2]
        check("ConsumerGroupHeartbeat %s in it: GROUP_ID_NOT_FOUND \"Group ... is not a consumer group.\"" % what,
              got == (69, "Group %s is not a consumer group." % classic), got)
    got = heartbeat(s, 1, classic, "wg-joiner-" + tag, 0, names=[t])
    check("... joining it: joined (an empty classic group becomes a consumer group)", got[0] == 0 and got[2] > 0, got)
    heartbeat(s, 1, classic, "wg-joiner-" + tag, -1)

    # ConsumerGroupDescribe: v1's MemberType; "" for a member without a pattern
    for version in (0, 1):
        got = describe(s, version, [g])
        members = got[0][3] if got else None
        check("ConsumerGroupDescribe v%d: two members, SubscribedTopicRegex \"\"%s" %
              (version, ", MemberType 1 (consumer)" if version else ", no MemberType"),
              got and got[0][0] == 0 and len(members) == 2 and
              all(m[1] == "" and m[2] == (1 if version else None) for m in members), got)

    # DeleteGroups v3: an ErrorMessage per group, null in each of these
    got = delete_groups(s, 3, [g, "wg-unknown-" + tag, ""])
    check("DeleteGroups v3 of a group with members, an unknown group and \"\": NON_EMPTY_GROUP (68), "
          "GROUP_ID_NOT_FOUND (69) twice, messages null",
          sorted(got) == sorted([(g, 68, None), ("wg-unknown-" + tag, 69, None), ("", 69, None)]), got)
    got = heartbeat(s, 1, g, member, -1)[:2]
    check("the member leaves", got == (0, None), got)
    got = heartbeat(s, 1, g, member, -1)[:2]
    check("... and leaving again: UNKNOWN_MEMBER_ID",
          got == (25, "Member %s is not a member of group %s." % (member, g)), got)

    share_checks(s, t, tag)
    find_coordinator_checks(s, g)
    offsets_by_id_checks(s, t, tag)
    describe_groups_checks(s, t, tag)
    offset_delete_checks(s, t, tag)

    wrong = [a for a in ERROR_ANSWERS if a[2:] != (None, 0)]
    check("every heartbeat answered with an error above (%d) has no member id and member epoch 0, as Kafka's"
          % len(ERROR_ANSWERS), len(ERROR_ANSWERS) > 30 and not wrong, wrong)

    s.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


if __name__ == "__main__":
    sys.exit(main())
