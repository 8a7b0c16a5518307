#!/usr/bin/python3
"""Authorization: Kafka ACLs with real clients, the same checks on Apache Kafka and kafka_pg.

    test_acls.py HOST:PORT [--kafka_pg PGPORT PGDB]

The broker is SASL_PLAINTEXT with PLAIN users admin (allowed everything: Kafka's super.users,
kafka_pg's kafka_admin role), alice and dan (no rights of their own).  admin grants ACLs with
the admin client (CreateAcls); alice's and dan's requests are then allowed or denied with
Kafka's error codes: Produce, Fetch, consumer groups, Metadata (only what one may describe),
CreateTopics, DeleteTopics, DescribeConfigs, InitProducerId (idempotent and transactional),
CreateAcls; a KIP-848 regex subscription matches only topics the member may describe; DENY beats
ALLOW; DeleteAcls takes a right away at once.

With --kafka_pg (psql on PGPORT, database PGDB, as postgres) also what only PostgreSQL has: a
grant to a group role covers its members, and taking the membership away takes the right away
on the same connection; ACLs on DELEGATION_TOKEN are refused with INVALID_REQUEST.
Prints "ok"/"not ok" lines and "N passed, M failed".
"""
import struct
import subprocess
import sys
import time
import uuid

import kraw

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, ConfigResource, NewTopic, ResourcePatternType,
                                   ResourceType)

bootstrap = sys.argv[1]
is_pg = "--kafka_pg" in sys.argv
if is_pg:
    pg_port, pg_db = sys.argv[sys.argv.index("--kafka_pg") + 1:sys.argv.index("--kafka_pg") + 3]

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - %s %s" % (name, detail))


def conf(user, **extra):
    d = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
         "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": user + "-secret"}
    d.update(extra)
    return d


def psql(sql):
    return subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                           "-p", pg_port, "-U", "postgres", "-d", pg_db, "-c", sql],
                          capture_output=True, text=True, check=True).stdout


def code_of(exc):
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].code()
    return None


def future_code(f, timeout=20):
    try:
        f.result(timeout)
        return 0
    except KafkaException as e:
        return code_of(e)


def produce(user, topic, **extra):
    """The delivery error code of one record (0: delivered)."""
    res = []
    p = Producer(conf(user, **{"message.timeout.ms": 8000}, **extra))
    p.produce(topic, b"v-" + user.encode(), on_delivery=lambda err, msg: res.append(err))
    p.flush(15)
    if not res:
        return "no delivery report"
    return res[0].code() if res[0] else 0


def consume(user, group, topic):
    """(values, first error code) reading topic from the start as a member of group."""
    c = Consumer(conf(user, **{"group.id": group, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False}))
    c.subscribe([topic])
    got, err = [], None
    deadline = time.time() + 20
    while time.time() < deadline and not got and err is None:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                err = m.error().code()
        else:
            got.append(m.value())
    if got:
        try:
            c.commit(asynchronous=False)
        except KafkaException as e:
            err = code_of(e)
    c.close()
    return got, err


def raw_login(user):
    """A raw connection (kraw) logged in with PLAIN."""
    host, port = bootstrap.rsplit(":", 1)
    c = kraw.Conn(int(port), host)
    c.handshake("PLAIN")
    err = c.authenticate(b"\0" + user.encode() + b"\0" + user.encode() + b"-secret")[0]
    assert err == 0, err
    return c


def raw_init_producer_id(user):
    """InitProducerId v1 without a transactional id: its error code."""
    c = raw_login(user)
    c.send(22, 1, struct.pack(">hi", -1, 60000))
    body = c.recv()[1]
    c.close()
    return struct.unpack(">h", body[4:6])[0]


def raw_create_acl(user, rtype, name, op):
    """CreateAcls v1 with one LITERAL ALLOW ACL for User:alice on host *: its error code."""
    def s(x):
        return struct.pack(">h", len(x)) + x.encode()
    c = raw_login(user)
    c.send(30, 1, struct.pack(">i", 1) + struct.pack(">b", rtype) + s(name) + struct.pack(">b", 3) +
           s("User:alice") + s("*") + struct.pack(">bb", op, 3))
    body = c.recv()[1]
    c.close()
    return struct.unpack(">h", body[8:10])[0]


def raw_fetch_code(user, topic, replica_id):
    """Fetch v4 of partition 0 from offset 0: its error code."""
    c = raw_login(user)
    t = topic.encode()
    c.send(1, 4, struct.pack(">iiiib", replica_id, 0, 1, 1 << 20, 0) + struct.pack(">ih", 1, len(t)) + t +
           struct.pack(">iiqi", 1, 0, 0, 1 << 20))
    body = c.recv()[1]
    c.close()
    p = 8 + 2 + struct.unpack(">h", body[8:10])[0]
    return struct.unpack(">h", body[p + 8:p + 10])[0]


def raw_list_offsets(user, topics):
    """ListOffsets v1 (LATEST) of [(topic, [partition])]: [(topic, [(partition, error code)])] as answered."""
    c = raw_login(user)
    body = struct.pack(">ii", -1, len(topics))
    for t, parts in topics:
        body += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(parts))
        body += b"".join(struct.pack(">iq", p, -1) for p in parts)
    c.send(2, 1, body)
    r = c.recv()[1]
    c.close()
    out, i = [], 4
    for _ in range(struct.unpack(">i", r[0:4])[0]):
        n = struct.unpack(">h", r[i:i + 2])[0]
        name, i = r[i + 2:i + 2 + n].decode(), i + 2 + n
        parts, count, i = [], struct.unpack(">i", r[i:i + 4])[0], i + 4
        for _ in range(count):
            parts.append(struct.unpack(">ih", r[i:i + 6]))
            i += 22     # partition, error code, timestamp, offset
        out.append((name, parts))
    return out


def raw_share_heartbeat_code(user, group, topic):
    """ShareGroupHeartbeat v1 (flexible) joining group, subscribed to topic: its error code."""
    def cs(x):
        return bytes([len(x) + 1]) + x.encode()
    c = raw_login(user)
    c.send(76, 1, b"\0" + cs(group) + cs(uuid.uuid4().hex[:22]) + struct.pack(">i", 0) + b"\0" +
           bytes([2]) + cs(topic) + b"\0")
    body = c.recv()[1]
    # leave again, so that the group can go
    c.close()
    return struct.unpack(">h", body[5:7])[0]


def acl(principal, rtype, name, op, perm=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL):
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


TOPIC_AUTH, GROUP_AUTH = KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED
CLUSTER_AUTH = KafkaError.CLUSTER_AUTHORIZATION_FAILED
TXN_AUTH = KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

run = uuid.uuid4().hex[:6]
ta, tb, tc = "acl-a-" + run, "acl-b-" + run, "other-c-" + run
ga = "g-alice-" + run
admin = AdminClient(conf("admin"))
fs = admin.create_topics([NewTopic(t, 1, 1) for t in (ta, tb, tc)])
check("admin creates topics", all(future_code(f) == 0 for f in fs.values()))
time.sleep(1)
check("admin produces to a topic no ACL names", produce("admin", tc) == 0)

# what alice may do
bindings = [
    acl("User:alice", ResourceType.TOPIC, "acl-", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
    acl("User:alice", ResourceType.TOPIC, ta, AclOperation.READ),
    acl("User:alice", ResourceType.GROUP, ga, AclOperation.READ),
    acl("User:*", ResourceType.TOPIC, tb, AclOperation.READ),
    acl("User:alice", ResourceType.TOPIC, tb, AclOperation.READ, perm=AclPermissionType.DENY),
    acl("User:alice", ResourceType.TRANSACTIONAL_ID, "tx-alice-" + run, AclOperation.WRITE),
]
fs = admin.create_acls(bindings)
check("admin creates ACLs (CreateAcls)", all(future_code(f) == 0 for f in fs.values()),
      [future_code(f) for f in fs.values()])
time.sleep(1)  # Kafka applies ACLs through its metadata log
f = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,
                                         "User:alice", None, AclOperation.ANY, AclPermissionType.ANY))
listed = f.result(20)
check("DescribeAcls lists alice's five ACLs", len(listed) == 5, listed)

check("alice: Produce to a topic of her prefixed WRITE ACL", produce("alice", ta) == 0)
check("alice: Produce to another topic is TOPIC_AUTHORIZATION_FAILED", produce("alice", tc) == TOPIC_AUTH)
check("dan (no ACL): Produce is TOPIC_AUTHORIZATION_FAILED", produce("dan", ta) == TOPIC_AUTH)

got, err = consume("alice", ga, ta)
check("alice: consume with her group and her READ ACL", got and err is None, (got, err))
check("alice: a raw Fetch of her topic is allowed", raw_fetch_code("alice", ta, -1) == 0)
code = raw_fetch_code("alice", ta, 0)
check("alice: a Fetch as a follower (replica id 0) without CLUSTER_ACTION is TOPIC_AUTHORIZATION_FAILED",
      code == TOPIC_AUTH, code)
# Kafka answers the partitions of topics one may describe once each (a repeated one INVALID_REQUEST,
# a topic listed twice in one entry), the others as listed, after them
got = raw_list_offsets("alice", [(tc, [0, 0]), (ta, [0]), (tc, [0])])
check("alice: ListOffsets of a topic she may not describe, listed twice, and of hers: her topic answered, "
      "then each listing of the other, TOPIC_AUTHORIZATION_FAILED per partition",
      got == [(ta, [(0, 0)]), (tc, [(0, TOPIC_AUTH), (0, TOPIC_AUTH)]), (tc, [(0, TOPIC_AUTH)])], got)
got, err = consume("alice", "g-other-" + run, ta)
check("alice: another group is GROUP_AUTHORIZATION_FAILED", err == GROUP_AUTH and not got, (got, err))
# share groups (KIP-932): GROUP READ and TOPIC DESCRIBE, as a consumer group
code = raw_share_heartbeat_code("alice", "share-" + ga, ta)
check("alice: ShareGroupHeartbeat to a share group outside her group ACL is GROUP_AUTHORIZATION_FAILED",
      code == GROUP_AUTH, code)
code = raw_share_heartbeat_code("dan", ga, ta)
check("dan: ShareGroupHeartbeat is GROUP_AUTHORIZATION_FAILED", code == GROUP_AUTH, code)
got, err = consume("alice", ga, tb)
check("alice: DENY READ beats the ALLOW READ for User:* (TOPIC_AUTHORIZATION_FAILED)",
      err == TOPIC_AUTH and not got, (got, err))

aa = AdminClient(conf("alice"))
md = aa.list_topics(timeout=10)
check("alice: Metadata lists only the topics she may describe", ta in md.topics and tb in md.topics and
      tc not in md.topics, sorted(md.topics))
md = aa.list_topics(topic=tc, timeout=10)
check("alice: Metadata for a topic she may not describe is TOPIC_AUTHORIZATION_FAILED",
      md.topics[tc].error is not None and md.topics[tc].error.code() == TOPIC_AUTH, md.topics[tc].error)
try:
    d = aa.describe_topics(TopicCollection([ta]), include_authorized_operations=True)[ta].result(20)
    ops = sorted(str(o).split(".")[-1] for o in (d.authorized_operations or []))
except KafkaException as e:
    ops = e
check("alice: the topic's authorized operations are READ, WRITE and DESCRIBE",
      ops == ["DESCRIBE", "READ", "WRITE"], ops)
try:
    d = aa.describe_cluster(include_authorized_operations=True).result(20)
    ops = d.authorized_operations
except KafkaException as e:
    ops = e
check("alice: no authorized operations on the cluster", not ops, ops)
fs = aa.create_topics([NewTopic("acl-new-" + run, 1, 1)])
check("alice: CreateTopics without CREATE is TOPIC_AUTHORIZATION_FAILED",
      future_code(list(fs.values())[0]) == TOPIC_AUTH)
fs = aa.delete_topics([ta])
check("alice: DeleteTopics without DELETE is TOPIC_AUTHORIZATION_FAILED",
      future_code(list(fs.values())[0]) == TOPIC_AUTH)
fs = aa.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, ta)])
check("alice: DescribeConfigs without DESCRIBE_CONFIGS is TOPIC_AUTHORIZATION_FAILED",
      future_code(list(fs.values())[0]) == TOPIC_AUTH)
fs = aa.create_acls([acl("User:alice", ResourceType.TOPIC, tc, AclOperation.ALL)])
check("alice: CreateAcls without CLUSTER ALTER is CLUSTER_AUTHORIZATION_FAILED",
      future_code(list(fs.values())[0]) == CLUSTER_AUTH)

# idempotent and transactional producers (InitProducerId)
check("alice: an idempotent producer (WRITE on some topic suffices, KIP-679)",
      produce("alice", ta, **{"enable.idempotence": True}) == 0)
check("alice: InitProducerId without a transactional id is allowed", raw_init_producer_id("alice") == 0)
code = raw_init_producer_id("dan")
check("dan (no WRITE anywhere): InitProducerId without a transactional id is CLUSTER_AUTHORIZATION_FAILED",
      code == CLUSTER_AUTH, code)
for tid, want in (("tx-alice-" + run, 0), ("tx-other-" + run, TXN_AUTH)):
    p = Producer(conf("alice", **{"transactional.id": tid}))
    try:
        p.init_transactions(15)
        code = 0
    except KafkaException as e:
        code = code_of(e)
    check("alice: InitProducerId for %s is %s" % (tid.split("-")[1], want or "allowed"), code == want, code)

# KIP-848 regex subscriptions: the pattern matches only topics the member may DESCRIBE (Kafka's
# GroupMetadataManager filters the resolved topics by the member's DESCRIBE authorization)
def regex_assignment(user, group, pattern):
    """The topics assigned to a consumer-protocol member subscribed to pattern, once settled."""
    c = Consumer(conf(user, **{"group.id": group, "group.protocol": "consumer",
                               "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    c.subscribe([pattern])
    topics, err, settled = set(), None, 0
    deadline = time.time() + 40
    while time.time() < deadline and settled < 6:
        m = c.poll(0.5)
        if m is not None and m.error() and m.error().code() != KafkaError._PARTITION_EOF:
            err = m.error().code()
        now = {tp.topic for tp in c.assignment()}
        # settled: the same non-empty assignment for 3 s (a later heartbeat could add a topic)
        settled = settled + 1 if now and now == topics else 0
        topics = now
    # kafka_pg: the pattern reached the coordinator (SubscribedTopicRegex), not topic names the
    # client resolved itself from Metadata (which would not show what the check is about)
    regex = psql("SELECT subscribed_regex FROM kafka.group_members WHERE group_id = '%s'" % group).strip() \
        if is_pg else pattern
    c.close()
    return topics, err, regex


rx_ok, rx_no = "rx-%s-ok" % run, "rx-%s-no" % run
fs = admin.create_topics([NewTopic(t, 1, 1) for t in (rx_ok, rx_no)])
check("admin creates two topics matching one pattern", all(future_code(f) == 0 for f in fs.values()))
fs = admin.create_acls([acl("User:alice", ResourceType.TOPIC, rx_ok, AclOperation.READ),
                        acl("User:alice", ResourceType.GROUP, "g-rx-", AclOperation.READ,
                            pattern=ResourcePatternType.PREFIXED)])
check("admin grants alice READ on one of them", all(future_code(f) == 0 for f in fs.values()))
time.sleep(1)
topics, err, regex = regex_assignment("admin", "g-rx-admin-" + run, "^rx-%s-.*" % run)
check("admin: a regex subscription (group.protocol=consumer) gets both matching topics",
      topics == {rx_ok, rx_no} and regex, (topics, err, regex))
topics, err, regex = regex_assignment("alice", "g-rx-alice-" + run, "^rx-%s-.*" % run)
check("alice: the same regex gets only the topic she may describe (no topic name leaks)",
      topics == {rx_ok} and regex, (topics, err, regex))

# DeleteAcls takes the right away
fs = admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "acl-", ResourcePatternType.PREFIXED,
                                         "User:alice", None, AclOperation.WRITE, AclPermissionType.ALLOW)])
deleted = list(fs.values())[0].result(20)
check("admin: DeleteAcls deletes the prefixed WRITE ACL", len(deleted) == 1, deleted)
time.sleep(1)
check("alice: Produce after DeleteAcls is TOPIC_AUTHORIZATION_FAILED", produce("alice", ta) == TOPIC_AUTH)

if is_pg:
    # role membership: an ACL on a group role covers its members, until the membership goes
    psql("CREATE ROLE team_%s NOLOGIN; GRANT team_%s TO dan;" % (run, run))
    fs = admin.create_acls([acl("User:team_" + run, ResourceType.TOPIC, tc, AclOperation.DESCRIBE)])
    check("ACL for a group role created", future_code(list(fs.values())[0]) == 0)
    bb = AdminClient(conf("dan"))
    md = bb.list_topics(timeout=10)
    check("dan: the group role's DESCRIBE ACL covers its member", tc in md.topics, sorted(md.topics))
    psql("REVOKE team_%s FROM dan" % run)
    md = bb.list_topics(timeout=10)
    check("dan: after REVOKE, the same connection no longer sees the topic", tc not in md.topics,
          sorted(md.topics))
    code = raw_create_acl("admin", 6, "tok", 8)
    check("an ACL on DELEGATION_TOKEN is refused with INVALID_REQUEST", code == KafkaError.INVALID_REQUEST, code)
    check("the SQL front door sees the same ACLs",
          psql("SELECT kafka.authorized('TOPIC', '%s', 'READ', 'alice'), "
               "kafka.authorized('TOPIC', '%s', 'READ', 'alice'), "
               "kafka.authorized('TOPIC', '%s', 'WRITE', 'alice')" % (ta, tb, ta)).strip() == "t|f|f")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
