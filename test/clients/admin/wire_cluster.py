#!/usr/bin/env python3
"""The cluster-management APIs on the wire, where the Java admin client hides what the broker sent,
against the broker at $KAFKA_BOOTSTRAP. Each expectation is what Apache Kafka 4.4 (single-node
KRaft) answers:
  - ElectLeaders v2 with null partitions: every topic, each with no partition results; an unknown
    election type: INVALID_REQUEST (42) at the top and for every partition, "Unknown election type N";
  - AlterPartitionReassignments v1 to an empty replica list: INVALID_REPLICA_ASSIGNMENT (39), "The
    manual partition assignment includes an empty replica list."; AllowReplicationFactorChange echoed;
  - ListPartitionReassignments v0 of an unknown topic: empty, no error;
  - DescribeQuorum v2 of another partition: UNKNOWN_TOPIC_OR_PARTITION (3) per partition asked for,
    "This server does not host this topic-partition.", no nodes;
  - ListConfigResources v1 of type 3 (not a config resource type): UNSUPPORTED_VERSION (35); v0
    (client metrics only): empty; of groups (32): a group with a config set (IncrementalAlterConfigs
    of consumer.session.timeout.ms) is listed, and no longer once the config is deleted;
  - DescribeUserScramCredentials v0 naming a user twice: DUPLICATE_RESOURCE (92), once;
  - DescribeClientQuotas v1 of an unknown entity type: UNSUPPORTED_VERSION (35), "Unsupported entity
    type ...", entries null;
  - Metadata v12 naming a topic twice, or asking for an id twice (with the name null, or "" as the
    Java client sends it): answered once (Kafka makes a set); a request that asks for any id answered
    for its ids only (by id, whatever name is beside it); v10 and v11 with an id or a null name:
    INVALID_REQUEST (42) for each listing as given, no broker, no cluster id;
  - ApiVersions v3+ whose ClientSoftwareName or ClientSoftwareVersion is not as Kafka's pattern
    ([a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?: empty, a space, '_', '+', a leading or trailing
    '-', not ASCII): INVALID_REQUEST (42) and no APIs; v5 (KIP-1242) with a cluster id but node id
    -1, or node id but no cluster id: the same; with another cluster id, or another node id (-2
    too): REBOOTSTRAP_REQUIRED (129) and no APIs; with this cluster's id and this node's id, or
    neither: the APIs, ApiVersions up to 5. The connection stays open after each.
  - DescribeCluster v1+ with endpoint type 2 (a controller, the Java admin client's
    bootstrap.controllers): MISMATCHED_ENDPOINT_TYPE (114) in Kafka's words; another type but 1:
    UNSUPPORTED_ENDPOINT_TYPE (115), "Unsupported endpoint type N"; each with endpoint type 1, cluster
    id "", controller -1 and no broker.
Standard library only; shares describe_partitions.py's encoding. Prints "ok - ..." / "not ok - ..."
and "N passed, M failed".
"""
import socket
import struct
import sys
import time
import uuid

import describe_partitions as w
from describe_partitions import check, cstr, i8, i32, uvarint


def metadata_answer(s, topics, version=12):
    """Metadata v10-12 of [(topic id, name)], no auto-creation:
    (brokers, cluster id, controller id, [(error, name, id, partitions)])."""
    body = uvarint(len(topics) + 1) + b"".join(tid + cstr(n) + b"\0" for tid, n in topics) + i8(0)
    if version < 11:
        body += i8(0)       # IncludeClusterAuthorizedOperations
    r = w.call(s, 3, version, body + i8(0) + b"\0")
    r.i32()
    brokers = r.carray(lambda: (r.i32(), r.cstr(), r.i32(), r.cstr(), r.tags()))
    cluster_id, controller = r.cstr(), r.i32()

    def partition():
        r.i16(), r.i32(), r.i32(), r.i32(), r.carray(r.i32), r.carray(r.i32), r.carray(r.i32), r.tags()

    def topic():
        err, name, tid, _, parts, _ = r.i16(), r.cstr(), r.take(16), r.i8(), r.carray(partition), r.i32()
        r.tags()
        return err, name, tid, len(parts or [])
    return len(brokers or []), cluster_id, controller, r.carray(topic) or []


def metadata(s, topics):
    """Metadata v12 of [(topic id, name)], no auto-creation: [(error, name, id, partitions)]."""
    return metadata_answer(s, topics)[3]


def describe_cluster(s, version, endpoint_type):
    """DescribeCluster v1-2: (error, message, endpoint type, cluster id, controller id, brokers)."""
    body = i8(0) + i8(endpoint_type) + (i8(0) if version >= 2 else b"") + b"\0"
    r = w.call(s, 60, version, body)
    r.i32()
    err, msg, answered_type, cluster, controller = r.i16(), r.cstr(), r.i8(), r.cstr(), r.i32()
    brokers = r.carray(lambda: (r.i32(), r.cstr(), r.i32(), r.cstr()) + ((r.i8(),) if version >= 2 else ()) + (r.tags(),))
    return err, msg, answered_type, cluster, controller, len(brokers or [])


def api_versions(s, version, name="wc-test", software_version="1.0", cluster_id=None, node_id=-1):
    """ApiVersions (response header v0 at every version): (error, number of APIs, ApiVersions' max)."""
    body = b""
    if version >= 3:
        body = cstr(name) + cstr(software_version)
        if version >= 5:
            body += cstr(cluster_id) + i32(node_id)
        body += b"\0"
    w.corr += 1
    s.sendall(w.request(18, version, w.corr, body))
    size = struct.unpack(">i", w.recv_exact(s, 4))[0]
    r = w.Reader(w.recv_exact(s, size))
    assert r.i32() == w.corr
    err = r.i16()
    if version >= 3:
        keys = r.carray(lambda: (r.i16(), r.i16(), r.i16(), r.tags())[:3]) or []
    else:
        keys = [(r.i16(), r.i16(), r.i16()) for _ in range(r.i32())]
    own = [k[2] for k in keys if k[0] == 18]
    return err, len(keys), own[0] if own else None


def api_versions_checks(s, port):
    # this cluster's id and this node's id: DescribeCluster v0, the broker listening on our port
    r = w.call(s, 60, 0, i8(0) + b"\0")
    r.i32(), r.i16(), r.cstr()
    cluster_id = r.cstr()
    r.i32()
    brokers = r.carray(lambda: (r.i32(), r.cstr(), r.i32(), r.cstr(), r.tags())[:3])
    mine = [b[0] for b in brokers if b[2] == int(port)] or [b[0] for b in brokers]
    node_id = mine[0]
    for version in (3, 4):
        for name, software_version in (("", "1"), ("a", ""), ("a b", "1"), ("-a", "1"), ("a-", "1"),
                                       ("a_b", "1"), ("\u00e9", "1"), ("a", "1+x")):
            got = api_versions(s, version, name, software_version)
            check("ApiVersions v%d, software %r version %r: INVALID_REQUEST, no APIs" % (version, name, software_version),
                  got == (42, 0, None), got)
        got = api_versions(s, version, "a.b-c", "1.0-x")
        check("ApiVersions v%d, software 'a.b-c' version '1.0-x': answered" % version, got[0] == 0 and got[1] > 10, got)
    cases = [
        ("neither cluster id nor node id", None, -1, 0),
        ("this cluster's id and this node's id", cluster_id, node_id, 0),
        ("this cluster's id, node id -1", cluster_id, -1, 42),
        ("no cluster id, this node's id", None, node_id, 42),
        ("no cluster id, another node id", None, node_id + 7, 42),
        ("another cluster id, node id -1", "x", -1, 42),
        ("another cluster id, this node's id", "AAAAAAAAAAAAAAAAAAAAAA", node_id, 129),
        ("cluster id \"\", this node's id", "", node_id, 129),
        ("this cluster's id, another node id", cluster_id, node_id + 7, 129),
        ("this cluster's id, node id -2", cluster_id, -2, 129),
    ]
    for what, cid, nid, want in cases:
        got = api_versions(s, 5, cluster_id=cid, node_id=nid)
        expect = (want, 0, None) if want else got
        check("ApiVersions v5, %s: %s" % (what, {0: "the APIs, ApiVersions up to 5", 42: "INVALID_REQUEST, no APIs",
                                                 129: "REBOOTSTRAP_REQUIRED, no APIs"}[want]),
              got == expect and (want or (got[1] > 10 and got[2] == 5)), got)
    got = api_versions(s, 4)
    check("... and the connection still answers ApiVersions v4", got[0] == 0 and got[1] > 10, got)


def main():
    host, port = w.BS.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    tag = uuid.uuid4().hex[:8]
    t = "wc-" + tag
    made = w.create_topics(s, {t: 2})
    check("CreateTopics %s (2)" % t, made == {t: 0}, made)

    # --- ElectLeaders v2
    r = w.call(s, 43, 2, i8(0) + uvarint(0) + i32(10000) + b"\0")
    r.i32()
    err = r.i16()

    def topic_result():
        name = r.cstr()
        parts = r.carray(lambda: (r.i32(), r.i16(), r.cstr(), r.tags()))
        r.tags()
        return name, parts
    results = r.carray(topic_result)
    mine = [x for x in results if x[0] == t]
    check("ElectLeaders v2, every partition (null): every topic, no partition results",
          err == 0 and mine == [(t, [])] and all(p == [] for _, p in results), (err, mine, len(results)))

    r = w.call(s, 43, 2, i8(5) + uvarint(2) + cstr(t) + uvarint(2) + i32(1) + b"\0" + i32(10000) + b"\0")
    r.i32()
    err = r.i16()
    results = r.carray(topic_result)
    check("ElectLeaders v2, election type 5: INVALID_REQUEST at the top and for the partition",
          err == 42 and [(n, [(p[0], p[1], p[2]) for p in ps]) for n, ps in results]
          == [(t, [(1, 42, "Unknown election type 5")])], (err, results))

    # --- AlterPartitionReassignments v1: TimeoutMs, AllowReplicationFactorChange, Topics
    r = w.call(s, 45, 1, i32(10000) + i8(0) + uvarint(2) + cstr(t) + uvarint(2) + i32(0) + uvarint(1)
               + b"\0" + b"\0" + b"\0")
    r.i32()
    allow, err, msg = r.i8(), r.i16(), r.cstr()

    def reassign_result():
        name = r.cstr()
        parts = r.carray(lambda: (r.i32(), r.i16(), r.cstr(), r.tags())[:3])
        r.tags()
        return name, parts
    results = r.carray(reassign_result)
    check("AlterPartitionReassignments v1 to an empty replica list: INVALID_REPLICA_ASSIGNMENT",
          allow == 0 and err == 0 and msg is None and results ==
          [(t, [(0, 39, "The manual partition assignment includes an empty replica list.")])],
          (allow, err, msg, results))

    # --- ListPartitionReassignments v0: TimeoutMs, Topics (nullable)
    r = w.call(s, 46, 0, i32(10000) + uvarint(2) + cstr(t + "-missing") + uvarint(2) + i32(0) + b"\0" + b"\0")
    r.i32()
    err, msg, topics = r.i16(), r.cstr(), r.uvarint()
    check("ListPartitionReassignments v0 of an unknown topic: empty, no error",
          (err, msg, topics) == (0, None, 1), (err, msg, topics))

    # --- DescribeQuorum v2 of __cluster_metadata-1
    r = w.call(s, 55, 2, uvarint(2) + cstr("__cluster_metadata") + uvarint(2) + i32(1) + b"\0" + b"\0" + b"\0")
    err, msg = r.i16(), r.cstr()

    def quorum_partition():
        p = (r.i32(), r.i16(), r.cstr())
        r.i32(), r.i32(), r.take(8)
        voters = r.carray(lambda: None)
        observers = r.carray(lambda: None)
        r.tags()
        return p + (voters, observers)

    def quorum_topic():
        name = r.cstr()
        parts = r.carray(quorum_partition)
        r.tags()
        return name, parts
    topics = r.carray(quorum_topic)
    nodes = r.uvarint()
    check("DescribeQuorum v2 of __cluster_metadata-1: UNKNOWN_TOPIC_OR_PARTITION for it, no nodes",
          err == 0 and topics == [("__cluster_metadata",
                                   [(1, 3, "This server does not host this topic-partition.", [], [])])]
          and nodes == 1, (err, msg, topics, nodes))

    # --- ListConfigResources
    r = w.call(s, 74, 1, uvarint(2) + i8(3) + b"\0")
    r.i32()
    err, n = r.i16(), r.uvarint()
    check("ListConfigResources v1 of resource type 3: UNSUPPORTED_VERSION, nothing listed",
          (err, n) == (35, 1), (err, n))
    r = w.call(s, 74, 0, b"\0")
    r.i32()
    err, n = r.i16(), r.uvarint()
    check("ListConfigResources v0 (client-metrics resources): none", (err, n) == (0, 1), (err, n))

    # --- ListConfigResources v1 of groups: those with dynamic configs (a group config set, then deleted)
    g = "wc-group-" + tag

    def group_config(op, value):
        r = w.call(s, 44, 1, uvarint(2) + i8(32) + cstr(g) + uvarint(2) + cstr("consumer.session.timeout.ms")
                   + i8(op) + cstr(value) + b"\0" + b"\0" + i8(0) + b"\0")
        r.i32()
        return r.carray(lambda: (r.i16(), r.cstr(), r.i8(), r.cstr(), r.tags())[:2])

    def listed_groups():
        r = w.call(s, 74, 1, uvarint(2) + i8(32) + b"\0")
        r.i32()
        err = r.i16()
        return err, r.carray(lambda: (r.cstr(), r.i8(), r.tags())[:2])

    def await_groups(pred):
        for _ in range(50):
            err, res = listed_groups()
            if pred(err, res):
                return True, (err, res)
            time.sleep(0.2)
        return False, (err, res)
    done = group_config(0, "50000")
    ok, got = await_groups(lambda err, res: err == 0 and (g, 32) in res)
    check("ListConfigResources v1 of groups: a group with a config set is listed, only groups",
          done == [(0, None)] and ok and all(t == 32 for _, t in got[1]), (done, got))
    done = group_config(1, None)
    ok, got = await_groups(lambda err, res: err == 0 and (g, 32) not in res)
    check("ListConfigResources v1 of groups: not listed once its config is deleted",
          done == [(0, None)] and ok, (done, got))

    # --- DescribeUserScramCredentials v0 naming a user twice
    user = "wc-nobody-" + tag
    r = w.call(s, 50, 0, uvarint(3) + cstr(user) + b"\0" + cstr(user) + b"\0" + b"\0")
    r.i32()
    err, msg = r.i16(), r.cstr()

    def scram_result():
        x = (r.cstr(), r.i16(), r.cstr(), r.carray(lambda: (r.i8(), r.i32(), r.tags())))
        r.tags()
        return x
    results = r.carray(scram_result)
    check("DescribeUserScramCredentials v0 naming a user twice: DUPLICATE_RESOURCE, once",
          err == 0 and results == [(user, 92, "Cannot describe SCRAM credentials for the same user twice "
                                    "in a single request: " + user, [])], (err, msg, results))

    # --- DescribeClientQuotas v1: Components [EntityType, MatchType, Match], Strict
    r = w.call(s, 48, 1, uvarint(2) + cstr("bogus") + i8(2) + cstr(None) + b"\0" + i8(0) + b"\0")
    r.i32()
    err, msg, entries = r.i16(), r.cstr(), r.uvarint()
    check("DescribeClientQuotas v1 of entity type 'bogus': UNSUPPORTED_VERSION, entries null",
          (err, msg, entries) == (35, "Unsupported entity type bogus", 0), (err, msg, entries))
    r = w.call(s, 48, 1, uvarint(2) + cstr("user") + i8(1) + cstr(None) + b"\0" + i8(0) + b"\0")
    r.i32()
    err, msg, entries = r.i16(), r.cstr(), r.uvarint()
    check("DescribeClientQuotas v1 of the default user: no error, no entries",
          (err, entries) == (0, 1), (err, msg, entries))

    # --- Metadata v12: Kafka makes a set of the names (or the ids) asked for
    got = metadata(s, [(b"\0" * 16, t), (b"\0" * 16, t), (b"\0" * 16, "wc-nosuch-" + tag),
                       (b"\0" * 16, "wc-nosuch-" + tag)])
    check("Metadata v12 naming a topic twice and an unknown one twice: each answered once",
          sorted((e, n, p) for e, n, _, p in got) == [(0, t, 2), (3, "wc-nosuch-" + tag, 0)], got)
    tid = got[0][2] if got else b"\0" * 16
    got = metadata(s, [(tid, None), (tid, None), (b"\1" * 16, None), (b"\1" * 16, None)])
    check("Metadata v12 asking by id for a topic twice and an unknown id twice: each answered once "
          "(UNKNOWN_TOPIC_ID, 100)",
          sorted((e, n, p) for e, n, _, p in got) == [(0, t, 2), (100, None, 0)], got)
    # the Java client asks by id with the name "" (not null): ids, not names, say what repeats
    got = metadata(s, [(tid, ""), (b"\1" * 16, ""), (tid, "")])
    check("Metadata v12 asking by id with the name \"\" (as the Java client does) for a topic twice and an "
          "unknown id: each answered once",
          sorted((e, n, p) for e, n, _, p in got) == [(0, t, 2), (100, None, 0)], got)

    # a request asking by id is answered for its ids only (KafkaApis.handleTopicMetadataRequest)
    got = metadata(s, [(tid, ""), (b"\0" * 16, "wc-nosuch-" + tag), (b"\0" * 16, t)])
    check("Metadata v12 asking for an id and for names: the id answered, the names not",
          [(e, n, i, p) for e, n, i, p in got] == [(0, t, tid, 2)], got)
    got = metadata(s, [(b"\0" * 16, t), (b"\1" * 16, None)])
    check("Metadata v12 naming a topic and asking for an unknown id: the id answered "
          "(UNKNOWN_TOPIC_ID, 100), the name not", [(e, n, p) for e, n, _, p in got] == [(100, None, 0)], got)
    got = metadata(s, [(tid, "wc-nosuch-" + tag)])
    check("Metadata v12 asking for an id with another name beside it: answered for the id, with the "
          "topic's name", [(e, n, i, p) for e, n, i, p in got] == [(0, t, tid, 2)], got)
    # ids came in v10, served from v12: Kafka refuses the request, every listing INVALID_REQUEST
    for version in (10, 11):
        got = metadata_answer(s, [(b"\0" * 16, t), (tid, "wc-other-" + tag)], version)
        check("Metadata v%d with a topic id: INVALID_REQUEST (42) for each listing as given, no "
              "partitions, no broker, no cluster id, controller -1" % version,
              got[:3] == (0, None, -1) and [(e, n, i, p) for e, n, i, p in got[3]] ==
              [(42, t, b"\0" * 16, 0), (42, "wc-other-" + tag, tid, 0)], got)
        got = metadata_answer(s, [(b"\0" * 16, None), (b"\0" * 16, t)], version)
        check("Metadata v%d with a null name: INVALID_REQUEST (42) for each listing (the null as \"\")"
              % version, got[:3] == (0, None, -1) and [(e, n, p) for e, n, _, p in got[3]] ==
              [(42, "", 0), (42, t, 0)], got)
        got = metadata_answer(s, [(b"\0" * 16, t)], version)
        check("Metadata v%d by name: answered" % version,
              got[0] >= 1 and got[1] is not None and [(e, n, p) for e, n, _, p in got[3]] == [(0, t, 2)], got)

    # DescribeCluster v1+ names the endpoint type the client means to reach (KIP-919)
    for version, endpoint_type, want in (
            (1, 2, (114, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                         "CONTROLLER")),
            (2, 2, (114, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                         "CONTROLLER")),
            (1, 3, (115, "Unsupported endpoint type 3")), (1, 0, (115, "Unsupported endpoint type 0"))):
        got = describe_cluster(s, version, endpoint_type)
        check("DescribeCluster v%d, endpoint type %d: %s \"%s\", endpoint type 1, no cluster id, controller -1, "
              "no broker" % (version, endpoint_type, {114: "MISMATCHED_ENDPOINT_TYPE (114)",
                                                     115: "UNSUPPORTED_ENDPOINT_TYPE (115)"}[want[0]], want[1]),
              got == want + (1, "", -1, 0), got)
    got = describe_cluster(s, 2, 1)
    check("DescribeCluster v2, endpoint type 1 (broker): answered", got[:3] == (0, None, 1) and got[3] and got[5] >= 1,
          got)

    api_versions_checks(s, port)

    s.close()
    print("%d passed, %d failed" % (w.passed, w.failed))
    return 1 if w.failed else 0


if __name__ == "__main__":
    sys.exit(main())
