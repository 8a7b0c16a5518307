#!/usr/bin/env python3
"""Ids longer than a catalog key can hold are answered INVALID_REQUEST, on an open connection.

Group, transactional, member and group instance ids, and ACL resource names, are keys of kafka_pg's
catalog tables, whose btree indexes hold at most about 2,700 bytes a key (less what the key's other
columns take; text that compresses may be longer).  Kafka takes such strings up to 32,767 bytes
(Apache Kafka 4.4, by hand: ids of 30,000 random letters joined groups, committed, began
transactions).  Until 2026-12-07 a request that wrote one failed in PostgreSQL ("index row size
3016 exceeds btree version 4 maximum 2704") and its connection was closed, which clients took for
a broken connection and retried for ever (librdkafka: "Disconnected", then "Local: Broker transport
failure").  Now every entry is answered INVALID_REQUEST with PostgreSQL's message, as for a NUL
byte in a name; nothing is written; the connection answers the next request.

Ids of 2,000 random letters are accepted by each request here, 3,000 are refused by each.

Member ids longer than 127 bytes: a JoinGroup that waits for its group's join phase parks, and
kept its member id for its next run in a buffer of 128 bytes; a longer one (the broker makes it
from the client id, or a static member's instance id, and a UUID) came back cut, and the join never
completed: a static member was fenced (FENCED_INSTANCE_ID) at once; a dynamic one's join went
astray (by hand: librdkafka with a client.id of 120 bytes waited until its JoinGroup timed out in
two runs, and read nothing in 20 s; the Java console consumer with such a client.id read nothing
in 30 s; Kafka 4.4 served both at once; the librdkafka check below passed once on that build all
the same, so it is the static members' checks that show the defect every time).  Until
2026-12-07.  Here: static members with instance ids of 200 and 2,000 bytes join (generation 1),
and a librdkafka consumer with a client.id of 120 bytes joins and reads its record.

Usage: PGDATABASE=... PGHOST=... PGPORT=... long_ids.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import random
import string as strings
import sys
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as cf  # noqa: E402  (reads HOST:PORT from argv at import)
from kwire import array, i8, i16, i32, i64, string  # noqa: E402
from tap import check, finish  # noqa: E402

INVALID_REQUEST = 42


def rid(n):
    """n random letters: text that does not compress, as an index key."""
    return "".join(random.choice(strings.ascii_letters) for _ in range(n))


def join(c, group, instance):
    """JoinGroup v5, a second time with the member id MEMBER_ID_REQUIRED hands out: the error."""
    x = cf.join_group(c, group, "", instance=instance, rebalance_ms=1000, session_ms=10000)
    if x is not None and x[0] == 79:
        x = cf.join_group(c, group, x[2], instance=instance, rebalance_ms=1000, session_ms=10000)
    return None if x is None else x[0]


def init_pid(c, txn_id):
    x = cf.init_producer_id(c, txn_id, 60000)
    return None if x is None else x[0]


def add_offsets(c, txn_id, group):
    x = cf.init_producer_id(c, txn_id, 60000)
    if x is None or x[0] != 0:
        return ("InitProducerId", x)
    r = c.call(25, 1, string(txn_id) + i64(x[1]) + i16(x[2]) + string(group))
    if r is None:
        return None
    r.i32()
    return r.i16()


def create_acl(c, name):
    body = array([i8(3) + string(name) + i8(3) + string("User:long-ids") + string("*") + i8(3) + i8(3)])
    r = c.call(30, 1, body)
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.i16(), r.string()))[0][0]


def cg_heartbeat(c, group, member, instance, topic):
    x = cf.cg_heartbeat(c, group, member, 0, instance, topics=[topic])
    return None if x is None else x[0]


def librdkafka_join(topic, client_id):
    """Produce one record, then a consumer of a new group with this client.id: what it reads in
    20 s."""
    from confluent_kafka import Consumer, Producer
    p = Producer({"bootstrap.servers": f"{cf.HOST}:{cf.PORT}"})
    p.produce(topic, b"long client")
    p.flush(10)
    cons = Consumer({"bootstrap.servers": f"{cf.HOST}:{cf.PORT}", "group.id": "lidr-" + cf.RUN, "client.id": client_id,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    cons.subscribe([topic])
    got, deadline = [], time.time() + 20
    while not got and time.time() < deadline:
        m = cons.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    cons.close()
    return got


def main():
    run = cf.RUN
    c = cf.Conn()
    topic = f"long-ids-{run}"
    check("create topic", cf.create_topic(c, topic) == 0)
    cases = [
        ("JoinGroup, group id", lambda n: join(c, rid(n), None)),
        ("JoinGroup, group instance id", lambda n: join(c, f"lid-{run}-{n}", rid(n))),
        ("OffsetCommit (simple), group id", lambda n: cf.offset_commit(c, rid(n), topic, 5, "m")),
        ("InitProducerId, transactional id", lambda n: init_pid(c, rid(n))),
        ("ConsumerGroupHeartbeat, group id", lambda n: cg_heartbeat(c, rid(n), rid(22), None, topic)),
        ("ConsumerGroupHeartbeat, member id", lambda n: cg_heartbeat(c, f"lidc-{run}-{n}", rid(n), None, topic)),
        ("ConsumerGroupHeartbeat, group instance id",
         lambda n: cg_heartbeat(c, f"lidi-{run}-{n}", rid(22), rid(n), topic)),
        ("AddOffsetsToTxn, group id", lambda n: add_offsets(c, f"lidt-{run}-{n}", rid(n))),
        ("CreateAcls, a group's name", lambda n: create_acl(c, rid(n))),
    ]
    def attempt(fn, n):
        """fn(n), or what it raised (a connection closed under a send: then a new one)."""
        nonlocal c
        try:
            return fn(n)
        except OSError as e:
            c = cf.Conn()
            return f"{type(e).__name__}: {e}"

    for name, fn in cases:
        ok, refused = attempt(fn, 2000), attempt(fn, 3000)
        check(f"{name}: 2,000 bytes accepted, 3,000 answered INVALID_REQUEST on the same connection",
              ok == 0 and refused == INVALID_REQUEST, f"(2,000: {ok}; 3,000: {refused})")
    r = c.call(18, 0, b"")
    check("the connection answers the next request", r is not None and r.i16() == 0)

    for n in (200, 2000):
        x = cf.join_group(c, f"lids-{run}-{n}", "", instance=rid(n), rebalance_ms=1000, session_ms=10000)
        check(f"a static member with an instance id of {n:,} bytes joins (its member id past 127 bytes)",
              x is not None and x[:2] == (0, 1) and len(x[2]) == n + 37, f"({x and (x[0], x[1], len(x[2]))})")
    got = librdkafka_join(topic, "c" * 120)
    check("a librdkafka consumer with a client.id of 120 bytes joins its group and reads its record",
          got == [b"long client"], f"({got})")
    c.close()
    conn = psycopg2.connect("")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM kafka.consumer_groups WHERE length(group_id) > 2500")
        n = cur.fetchone()[0]
        cur.execute("DELETE FROM kafka.acls WHERE principal = 'User:long-ids'")
    conn.close()
    check("no group with a refused id was left in the catalog", n == 0, f"({n})")
    finish()


if __name__ == "__main__":
    main()
