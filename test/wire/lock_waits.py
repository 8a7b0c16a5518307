#!/usr/bin/env python3
"""A listener worker waits for no topic, group or group-offset lock that a SQL
transaction still open holds (kp_topic_locks_nowait, kp_group_locks_nowait;
src/listener/README "Locks").

A worker serves all its connections from one loop, so a wait in a lock
stalls every one of them.  Until 2026-12-05 a worker waited, for as long as
the SQL transaction stayed open, when a request
- used a topic that the transaction deleted (AccessShareLock against its
  AccessExclusiveLock): Produce, Fetch, Metadata, ...;
- created a topic, of any name, while the transaction had created one (the
  creation lock, one creator at a time): CreateTopics, Metadata's
  auto-creation;
- changed a topic whose ShareUpdateExclusiveLock the transaction (or the log
  cleaner, compacting it) held: DeleteRecords, CreatePartitions,
  AlterConfigs, IncrementalAlterConfigs.
and when a wire OffsetCommit named a partition whose committed-offset row
the transaction had locked (kafka.consume, the exactly-once consumer, keeps
it to its COMMIT), or a group request needed a group whose lock it held or
whose creation it had not committed.  (By hand on the build
before: 3.95 s for the other connections of that worker, each time, while
the SQL transaction stayed open 4 s; the OffsetCommit 3.0 s.)

Now, checked with raw requests while such a transaction is open, and 8 raw
connections (ApiVersions and Metadata in turn) spread over the workers,
made before anything waits:

- a topic deleted by the open transaction: Produce and Metadata answer
  UNKNOWN_TOPIC_OR_PARTITION at once (as for a deleted topic); after its
  ROLLBACK the topic is back, with its record, and takes a Produce;
- a topic created by the open transaction: CreateTopics of another name,
  and CreatePartitions of another topic (partitions are counted against
  kafka.max_partitions one transaction at a time too), with timeout 1.5 s
  answer REQUEST_TIMED_OUT after about 1.5 s; one with
  timeout 30 s parks and succeeds within 2 s of the COMMIT; CreateTopics of
  a name that exists answers TOPIC_ALREADY_EXISTS at once; Metadata
  auto-creation answers LEADER_NOT_AVAILABLE at once (Kafka's answer for a
  topic being created);
- a topic whose configs the open transaction changed: DeleteRecords with
  timeout 1.5 s answers REQUEST_TIMED_OUT after about 1.5 s, its records
  kept; IncrementalAlterConfigs (no timeout of its own) answers
  REQUEST_TIMED_OUT after the default 5 s; CreatePartitions with timeout
  30 s succeeds within 2 s of the COMMIT;
- a group partition that an open SQL transaction consumed (kafka.consume
  holds its offset row): a wire OffsetCommit of it answers REQUEST_TIMED_OUT
  after the default 5 s (it has no timeout of its own); one sent while the
  transaction is open succeeds within 2 s of its COMMIT, and its offset is
  the one committed; a wire transaction's EndTxn (commit) with an offset of
  that partition (its TxnOffsetCommit sent before) answers
  COORDINATOR_LOAD_IN_PROGRESS after 5 s, one sent while the transaction is
  open succeeds within 2 s of its COMMIT, and the offset is the
  transaction's (until 2026-12-05 the worker waited in the offset's row);
- a group whose lock the open transaction holds (kafka.group_heartbeat run
  in it), and a group the open transaction created (its first
  kafka.consume): an OffsetCommit to either (of another topic), and a
  transaction's TxnOffsetCommit to the first as a member (which the group's
  fence checks), answer COORDINATOR_LOAD_IN_PROGRESS after 5 s (the request
  is rolled back and run again meanwhile); OffsetCommits sent while the
  transaction is open are answered within 2 s of its COMMIT;
- the resolver's group upkeep, with kafka.group_consumer_session_timeout_ms
  1 s: while an open transaction holds the lock of a group whose other
  member went silent (kafka.group_heartbeat in it), and while one holds
  the row of an offset past offsets.retention.minutes (kafka.consume), the
  resolver waits in no lock and a SQL produce committed meanwhile is
  read_committed-visible within 1.5 s (until 2026-12-05 the resolver
  waited, and wrote no markers: the last stable offset stayed put); after
  the COMMIT both silent members expire, and the consumed offset is kept;
  once no transaction holds it, an offset past the retention is dropped
  (and a recent one of the group kept);
- the log cleaner, checking retention every second: while an open
  transaction holds the lock of a topic (kafka.alter_topic_config) that sorts
  before another with segments past its retention.ms, it waits in no lock
  and deletes those segments within 10 s (until 2026-12-05 it waited, and
  no other topic was cleaned);
- an ACL an open transaction created (kafka.create_acl): CreateAcls of the
  same answers REQUEST_TIMED_OUT after 5 s, one sent meanwhile succeeds
  within 2 s of the COMMIT; one it deleted (kafka.delete_acls): DeleteAcls
  of it the same, and the one sent meanwhile then finds nothing to delete;
- a client quota, a group config and a broker config an open transaction
  inserted (plain DML, their SQL interface): AlterClientQuotas and
  IncrementalAlterConfigs of the same answer REQUEST_TIMED_OUT after 5 s,
  one sent meanwhile succeeds within 2 s of the COMMIT (until 2026-12-06
  the worker waited in the row's lock); an IncrementalAlterConfigs of a
  BROKER setting and a group config the transaction updated answers both
  REQUEST_TIMED_OUT and leaves the setting unchanged (its ALTER SYSTEM,
  outside the transaction, comes last, and never ran); so does one of two
  BROKER resources, the node's setting and the default's kept config the
  transaction updated (the request locks kafka.broker_configs before any
  ALTER SYSTEM; until 2026-12-07 the first resource's setting was changed
  and stayed changed);
- meanwhile no listener worker waits on a lock (pg_stat_activity; sampled
  until the ACL cases, whose requests each wait up to 1 ms, their
  lock_timeout, every time they run), and the 8 connections are each
  answered within 0.5 s.

Usage: lock_waits.py HOST:PORT (PGDATABASE etc. for psycopg2/psql).
Last line: "N passed, M failed".
"""
import os
import struct
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (its HOST:PORT is our argv[1] too)
from kwire import TAGS, array, carray, cstring, i8, i16, i32, i64, metadata_v4, string  # noqa: E402
from slow_flush import Pinger, check_pingers_served  # noqa: E402
from tap import check, finish  # noqa: E402
from transactions import add_offsets, end_txn, init_producer_id, txn_offset_commit  # noqa: E402

import psycopg2  # noqa: E402

RUN = uuid.uuid4().hex[:8]
DELETED, PING = f"tl-deleted-{RUN}", f"tl-ping-{RUN}"
NEW1, NEW2, NEW3, NEW4 = (f"tl-new{i}-{RUN}" for i in range(1, 5))
ALTERED = f"tl-altered-{RUN}"
CONSUMED, GROUP = f"tl-consumed-{RUN}", f"tl-group-{RUN}"
MEMBER_GROUP, NEW_GROUP = f"tl-member-group-{RUN}", f"tl-new-group-{RUN}"
UPKEEP_GROUP = f"tl-upkeep-group-{RUN}"
HELD, RETAINED = f"tl-cl-a-held-{RUN}", f"tl-cl-b-retained-{RUN}"
UNKNOWN, TIMED_OUT, EXISTS, LEADER_NA, LOAD_IN_PROGRESS, UNKNOWN_MEMBER = 3, 7, 36, 5, 14, 25


def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)


def lock_waiting_workers():
    r = psql("SELECT count(*) FROM pg_stat_activity "
             "WHERE backend_type = 'kafka_pg listener' AND wait_event_type = 'Lock'")
    return int(r.stdout.strip() or -1)


def timed(fn):
    t = time.time()
    r = fn()
    return r, time.time() - t


def metadata(c, name, auto_create):
    """Metadata v4 of one topic: its error code."""
    got = metadata_v4(c, name, auto_create)
    return None if got is None else got[0]


def create_topics(c, name, timeout_ms):
    """CreateTopics v4 of one topic: (error code, message)."""
    t = string(name) + i32(1) + i16(1) + array([]) + array([])
    r = c.call(19, 4, array([t]) + i32(timeout_ms) + i8(0), timeout=timeout_ms / 1000 + 30)
    if r is None:
        return None, None
    r.i32()
    res = r.array(lambda: (r.string(), r.i16(), r.string()))
    return res[0][1], res[0][2]


def incremental_alter(c, topic, key, value):
    """IncrementalAlterConfigs v0, SET of one topic config: (error code, message)."""
    res = i8(2) + string(topic) + array([string(key) + i8(0) + string(value)])
    r = c.call(44, 0, array([res]) + i8(0), timeout=40)
    if r is None:
        return None, None
    r.i32()
    out = r.array(lambda: (r.i16(), r.string(), r.i8(), r.string()))
    return out[0][0], out[0][1]


def create_partitions(c, topic, count, timeout_ms):
    """CreatePartitions v1: (error code, message)."""
    body = array([string(topic) + i32(count) + i32(-1)]) + i32(timeout_ms) + i8(0)
    r = c.call(37, 1, body, timeout=timeout_ms / 1000 + 30)
    if r is None:
        return None, None
    r.i32()
    res = r.array(lambda: (r.string(), r.i16(), r.string()))
    return res[0][1], res[0][2]


def waits_until_commit(sql, request, what, ok):
    """Send request() from a thread; check that it is still waiting 1 s later, then COMMIT sql
    and check that its result passes ok() within 2 s of the commit."""
    out = {}

    def run():
        out["res"] = request()
        out["at"] = time.time()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    time.sleep(1)
    check(f"... {what} is still waiting", th.is_alive())
    committed = time.time()
    sql.commit()
    th.join(35)
    after = out.get("at", float("inf")) - committed
    check(f"... and after the COMMIT {what} succeeds within 2 s", ok(out.get("res")) and after < 2,
          f"({out.get('res')}, {after:.2f} s after the commit)")


def check_deleted(c, sql):
    """A topic the open transaction deleted."""
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute(f"SELECT kafka.delete_topic('{DELETED}')")
    (err, _), took = timed(lambda: kc.produce(c, DELETED, kc.build_batch(0, [b"during"])))
    check("a topic an open transaction deleted: Produce answers UNKNOWN_TOPIC_OR_PARTITION at once",
          err == UNKNOWN and took < 1, f"({err}, {took:.2f} s)")
    (err, took) = timed(lambda: metadata(c, DELETED, False))
    check("... and Metadata too", err == UNKNOWN and took < 1, f"({err}, {took:.2f} s)")
    (err, took) = timed(lambda: metadata(c, DELETED, True))
    check("... and Metadata with auto-creation (the name is still taken)",
          err == UNKNOWN and took < 1, f"({err}, {took:.2f} s)")
    sql.rollback()
    err, base = kc.produce(c, DELETED, kc.build_batch(0, [b"after"]))
    check("after its ROLLBACK the topic is back and takes a Produce at offset 1",
          (err, base) == (0, 1), f"({err}, {base})")


def check_created(c, sql):
    """A topic the open transaction created."""
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute(f"SELECT kafka.create_topic('{NEW1}', 1)")
    (err, msg), took = timed(lambda: create_topics(c, NEW2, 1500))
    check("while an open transaction created a topic: CreateTopics of another name, timeout 1.5 s, "
          "REQUEST_TIMED_OUT after about 1.5 s", err == TIMED_OUT and 1.3 <= took < 5,
          f"({err} {msg}, {took:.2f} s)")
    (err, msg), took = timed(lambda: create_topics(c, DELETED, 1500))
    check("... CreateTopics of a name that exists: TOPIC_ALREADY_EXISTS at once",
          err == EXISTS and took < 1, f"({err} {msg}, {took:.2f} s)")
    err, took = timed(lambda: metadata(c, NEW4, True))
    check("... Metadata auto-creation: LEADER_NOT_AVAILABLE at once", err == LEADER_NA and took < 1,
          f"({err}, {took:.2f} s)")
    (err, msg), took = timed(lambda: create_partitions(c, DELETED, 2, 1500))
    check("... CreatePartitions of another topic (the limit on partitions is counted one "
          "transaction at a time), timeout 1.5 s: REQUEST_TIMED_OUT after about 1.5 s, saying why",
          err == TIMED_OUT and 1.3 <= took < 5 and msg and b"another transaction is creating" in msg,
          f"({err} {msg}, {took:.2f} s)")
    waits_until_commit(sql, lambda: create_topics(kc.Conn(), NEW3, 30000),
                       "a CreateTopics with timeout 30 s", lambda r: r is not None and r[0] == 0)
    r = psql(f"SELECT count(*) FROM kafka.topics WHERE name IN ('{NEW1}', '{NEW3}')")
    check("both topics exist", r.stdout.strip() == "2", r.stdout + r.stderr)


def check_altered(c, sql):
    """A topic whose ShareUpdateExclusiveLock the open transaction holds."""
    kc.produce(c, ALTERED, kc.build_batch(0, [b"a", b"b"]))
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute(f"SELECT kafka.alter_topic_config('{ALTERED}', '{{\"retention.ms\": \"3600000\"}}')")
    (err, low), took = timed(lambda: kc.delete_records(c, ALTERED, 1, 1500))
    check("while an open transaction changed a topic's configs: DeleteRecords, timeout 1.5 s, "
          "REQUEST_TIMED_OUT after about 1.5 s", err == TIMED_OUT and 1.3 <= took < 5,
          f"({err}, {took:.2f} s)")
    (err, msg), took = timed(lambda: incremental_alter(c, ALTERED, "retention.ms", "7200000"))
    check("... IncrementalAlterConfigs: REQUEST_TIMED_OUT after the default 5 s, saying why",
          err == TIMED_OUT and 4.8 <= took < 10 and msg and b"locked by another transaction" in msg,
          f"({err} {msg}, {took:.2f} s)")
    waits_until_commit(sql, lambda: create_partitions(kc.Conn(), ALTERED, 2, 30000),
                       "a CreatePartitions with timeout 30 s", lambda r: r is not None and r[0] == 0)
    r = psql(f"SELECT partition_count FROM kafka.topics WHERE name = '{ALTERED}'")
    check("the topic has 2 partitions", r.stdout.strip() == "2", r.stdout + r.stderr)
    err, low = kc.delete_records(c, ALTERED, 1)
    check("the records the timed-out DeleteRecords named are kept until one succeeds",
          (err, low) == (0, 1), f"({err}, {low})")


def check_consumed(c, sql):
    """A group partition whose offset the open transaction consumed (and so locked)."""
    kc.produce(c, CONSUMED, kc.build_batch(0, [b"a", b"b", b"c"]))
    cur = sql.cursor()
    cur.execute("SELECT count(*) FROM kafka.consume(%s, %s, 1, 'earliest')", (GROUP, CONSUMED))
    sql.commit()
    cur.execute("BEGIN")
    cur.execute("SELECT count(*) FROM kafka.consume(%s, %s, 1, 'earliest')", (GROUP, CONSUMED))
    got = cur.fetchone()[0]
    err, took = timed(lambda: kc.offset_commit(c, GROUP, CONSUMED, 3, "wire"))
    check("while an open transaction consumed a group's partition: OffsetCommit of it "
          "REQUEST_TIMED_OUT after the default 5 s", got == 1 and err == TIMED_OUT and 4.8 <= took < 10,
          f"({got} consumed; {err}, {took:.2f} s)")
    waits_until_commit(sql, lambda: kc.offset_commit(kc.Conn(), GROUP, CONSUMED, 3, "wire"),
                       "an OffsetCommit sent meanwhile", lambda r: r == 0)
    err, off, md = kc.offset_fetch(c, GROUP, CONSUMED)
    check("the group's offset is the wire's, committed after the SQL one", (err, off, md) == (0, 3, b"wire"),
          f"({err}, {off}, {md})")

    # a wire transaction's offset of that partition, written by its EndTxn (the COMMIT decision)
    kc.produce(c, CONSUMED, kc.build_batch(0, [b"d"]))
    tid = f"tl-eos-{RUN}"
    err, pid, epoch = init_producer_id(c, tid, 60000)
    ok = (err == 0 and add_offsets(c, tid, pid, epoch, GROUP) == 0
          and txn_offset_commit(c, tid, GROUP, pid, epoch, CONSUMED, 2) == 0)
    cur.execute("BEGIN")
    cur.execute("SELECT count(*) FROM kafka.consume(%s, %s, 1)", (GROUP, CONSUMED))
    got = cur.fetchone()[0]
    err, took = timed(lambda: end_txn_commit(kc.Conn(), tid, pid, epoch))
    check("while an open transaction consumed it again: a wire transaction's EndTxn (commit) with "
          "an offset of it COORDINATOR_LOAD_IN_PROGRESS after 5 s (the transaction stays open)",
          ok and got == 1 and err == LOAD_IN_PROGRESS and 4.8 <= took < 10,
          f"({ok}, {got} consumed; {err}, {took:.2f} s)")
    waits_until_commit(sql, lambda: end_txn_commit(kc.Conn(), tid, pid, epoch),
                       "an EndTxn sent meanwhile", lambda r: r == 0)
    err, off, md = kc.offset_fetch(c, GROUP, CONSUMED)
    check("the group's offset is the transaction's", (err, off, md) == (0, 2, b""),
          f"({err}, {off}, {md})")


def end_txn_commit(c, tid, pid, epoch):
    """EndTxn v1, commit: its error code, or None with no answer in 30 s."""
    r = c.call(26, 1, string(tid) + i64(pid) + i16(epoch) + i8(1), timeout=30)
    if r is None:
        return None
    r.i32()
    return r.i16()


def txn_offset_commit_as_member(c, tid, pid, epoch, group, topic):
    """TxnOffsetCommit v3 (flexible) of partition 0 by a member (generation 1), which the group's
    fence checks under the group lock: the partition's error code."""
    part = i32(0) + i64(1) + i32(-1) + cstring("") + TAGS
    body = (cstring(tid) + cstring(group) + i64(pid) + i16(epoch) + i32(1) + cstring("no-such-member")
            + cstring(None) + carray([cstring(topic) + carray([part]) + TAGS]) + TAGS)
    r = c.call_flex(28, 3, body, timeout=30)
    if r is None:
        return None
    r.i32()
    topics = r.carray(lambda: (r.cstring(), r.carray(lambda: (r.i32(), r.i16(), r.tags())), r.tags()))
    return topics[0][1][0][1]


def check_group_locked(c, sql):
    """A group whose row the open transaction locked (a SQL member's heartbeat in it), and a
    group the open transaction created (its first kafka.consume)."""
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute("SELECT count(*) FROM kafka.group_heartbeat(%s, NULL, 0, ARRAY[%s])", (MEMBER_GROUP, CONSUMED))
    err, took = timed(lambda: kc.offset_commit(c, MEMBER_GROUP, ALTERED, 1, "wire"))
    check("while an open transaction holds a group's lock (kafka.group_heartbeat in it): OffsetCommit "
          "COORDINATOR_LOAD_IN_PROGRESS after 5 s", err == LOAD_IN_PROGRESS and 4.8 <= took < 10,
          f"({err}, {took:.2f} s)")
    tid = f"tl-txn-{RUN}"
    err, pid, epoch = init_producer_id(c, tid, 60000)
    ok = err == 0 and add_offsets(c, tid, pid, epoch, MEMBER_GROUP) == 0
    # a connection of its own: on a build that waits, its answer would come late
    err, took = timed(lambda: txn_offset_commit_as_member(kc.Conn(), tid, pid, epoch, MEMBER_GROUP, ALTERED))
    check("... a transaction's TxnOffsetCommit to it, fenced by the group: "
          "COORDINATOR_LOAD_IN_PROGRESS after 5 s", ok and err == LOAD_IN_PROGRESS and 4.8 <= took < 10,
          f"({ok}; {err}, {took:.2f} s)")
    # after the COMMIT the group has a member (the SQL session): a commit without one is refused
    waits_until_commit(sql, lambda: kc.offset_commit(kc.Conn(), MEMBER_GROUP, ALTERED, 1, "wire"),
                       "an OffsetCommit sent meanwhile", lambda r: r == UNKNOWN_MEMBER)
    end_txn(c, 1, tid, pid, epoch, False)

    cur.execute("BEGIN")
    cur.execute("SELECT count(*) FROM kafka.consume(%s, %s, 1, 'earliest')", (NEW_GROUP, CONSUMED))
    err, took = timed(lambda: kc.offset_commit(c, NEW_GROUP, ALTERED, 1, "wire"))
    check("while an open transaction created a group (its first kafka.consume): OffsetCommit to it "
          "(another topic) COORDINATOR_LOAD_IN_PROGRESS after 5 s",
          err == LOAD_IN_PROGRESS and 4.8 <= took < 10, f"({err}, {took:.2f} s)")
    waits_until_commit(sql, lambda: kc.offset_commit(kc.Conn(), NEW_GROUP, ALTERED, 1, "wire"),
                       "an OffsetCommit to it sent meanwhile", lambda r: r == 0)


def list_stable(c, topic):
    """ListOffsets v4 LATEST, read_committed, partition 0: the last stable offset."""
    body = i32(-1) + i8(1) + array([string(topic) + array([i32(0) + i32(-1) + i64(-1)])])
    r = c.call(2, 4, body)
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i32()))))
    return res[0][1][0][3]


def resolver_waiting():
    r = psql("SELECT count(*) FROM pg_stat_activity "
             "WHERE backend_type = 'kafka_pg resolver' AND wait_event_type = 'Lock'")
    return r.stdout.strip()


def check_resolver_free(c, what):
    """While a SQL transaction holds what the resolver's upkeep would lock: the resolver waits in
    no lock, and a SQL transaction's produce, committed, is read_committed-visible within 1.5 s
    (the resolver writes its marker)."""
    time.sleep(1.5)     # the upkeep, once a second, has met the lock
    waiting = resolver_waiting()
    # the record goes at the log end; its commit marker, which the resolver writes, after it (the
    # log end read right after the produce may or may not count the marker yet)
    record = kc.list_latest(c, PING)[1]
    psql(f"SELECT count(*) FROM kafka.produce('{PING}', 'k', 'marker', partition => 0)")
    deadline = time.time() + 1.5
    while list_stable(c, PING) <= record and time.time() < deadline:
        time.sleep(0.1)
    stable = list_stable(c, PING)
    end = kc.list_latest(c, PING)[1]
    check(f"while {what}: the resolver waits in no lock, and a SQL produce committed meanwhile is "
          f"read_committed-visible within 1.5 s (its marker written)",
          waiting == "0" and record < stable == end,
          f"(resolver waiting: {waiting}; the record at {record}, last stable offset {stable}, log end {end})")


def check_upkeep(c, sql):
    """The resolver's group upkeep, with a group's lock or an offset's row held by a SQL
    transaction still open."""
    cur = sql.cursor()
    psql("ALTER SYSTEM SET kafka.group_consumer_session_timeout_ms = 1000")
    psql("SELECT pg_reload_conf()")
    try:
        # a member that goes silent, and one joining in the open transaction (its group lock)
        psql(f"SELECT count(*) FROM kafka.group_heartbeat('{UPKEEP_GROUP}', NULL, 0, ARRAY['{CONSUMED}'])")
        cur.execute("BEGIN")
        cur.execute("SELECT count(*) FROM kafka.group_heartbeat(%s, NULL, 0, ARRAY[%s])",
                    (UPKEEP_GROUP, CONSUMED))
        check_resolver_free(c, "an open transaction holds the lock of a group whose member's session "
                               "ended (kafka.group_heartbeat in it)")
        sql.commit()
        deadline = time.time() + 4
        while time.time() < deadline:
            left = psql(f"SELECT count(*) FROM kafka.consumer_group_members WHERE group_id = '{UPKEEP_GROUP}'")
            if left.stdout.strip() == "0":
                break
            time.sleep(0.2)
        check("... and after its COMMIT the upkeep expires both silent members within 4 s",
              left.stdout.strip() == "0", left.stdout + left.stderr)
    finally:
        psql("ALTER SYSTEM RESET kafka.group_consumer_session_timeout_ms")
        psql("SELECT pg_reload_conf()")

    # an offset past offsets.retention.minutes of an Empty group, whose row kafka.consume holds
    for _ in range(3):
        psql(f"UPDATE kafka.committed_offsets SET commit_time = now() - interval '30 days' "
             f"WHERE group_id = '{GROUP}'")
        cur.execute("BEGIN")
        cur.execute("SELECT count(*) FROM kafka.consume(%s, %s, 1)", (GROUP, CONSUMED))
        held = psql(f"SELECT count(*) FROM kafka.committed_offsets WHERE group_id = '{GROUP}'")
        if held.stdout.strip() == "1":
            break
        sql.rollback()      # expired before kafka.consume locked it: again
    check_resolver_free(c, "an open transaction holds the row of an offset past its retention "
                           "(kafka.consume)")
    sql.commit()
    err, off, _ = kc.offset_fetch(c, GROUP, CONSUMED)
    check("... and after its COMMIT the offset it committed is kept", err == 0 and off == 3,
          f"({err}, {off})")
    # and the expiry itself: an old offset of the Empty group goes, a recent one stays
    err = kc.offset_commit(c, GROUP, ALTERED, 1, "recent")
    psql(f"UPDATE kafka.committed_offsets SET commit_time = now() - interval '30 days' "
         f"WHERE group_id = '{GROUP}' AND topic = '{CONSUMED}'")
    deadline = time.time() + 4
    while kc.offset_fetch(c, GROUP, CONSUMED)[1] != -1 and time.time() < deadline:
        time.sleep(0.2)
    gone, kept = kc.offset_fetch(c, GROUP, CONSUMED), kc.offset_fetch(c, GROUP, ALTERED)
    check("once no transaction holds it, the offset past offsets.retention.minutes is dropped "
          "within 4 s, and the group's recent offset is kept",
          err == 0 and gone[1] == -1 and kept[:2] == (0, 1), f"({err}; {gone}, {kept})")


def acl_binding(name):
    """A TOPIC LITERAL READ ALLOW binding of User:alice on any host (the CreateAcls v1 creation and
    the DeleteAcls v1 filter have the same fields)."""
    return i8(2) + string(name) + i8(3) + string("User:alice") + string("*") + i8(3) + i8(3)


def create_acls(c, name):
    """CreateAcls v1 of one binding: (error code, message), None with no answer in 30 s."""
    r = c.call(30, 1, array([acl_binding(name)]), timeout=30)
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.i16(), r.string()))[0]


def delete_acls(c, name):
    """DeleteAcls v1 of one filter: (error code, message, bindings deleted)."""
    r = c.call(31, 1, array([acl_binding(name)]), timeout=30)
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.i16(), r.string(), len(r.array(
        lambda: (r.i16(), r.string(), r.i8(), r.string(), r.i8(), r.string(), r.string(), r.i8(), r.i8())))))[0]


def check_acls(c, sql):
    """ACL rows an open transaction inserted or deleted (kafka.create_acl, kafka.delete_acls)."""
    name = f"tl-acl-{RUN}"
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute("SELECT kafka.create_acl('User:alice', 'topic', %s, 'read', 'allow', 'literal', '*')", (name,))
    r, took = timed(lambda: create_acls(c, name))
    check("while an open transaction created an ACL: CreateAcls of the same REQUEST_TIMED_OUT after 5 s, "
          "saying why", r is not None and r[0] == TIMED_OUT and b"another transaction" in (r[1] or b"")
          and 4.8 <= took < 10, f"({r}, {took:.2f} s)")
    waits_until_commit(sql, lambda: create_acls(kc.Conn(), name), "a CreateAcls of it sent meanwhile",
                       lambda r: r == (0, None))
    cur.execute("BEGIN")
    cur.execute("SELECT count(*) FROM kafka.delete_acls('User:alice', 'topic', %s, 'read', 'allow', "
                "'literal', '*')", (name,))
    r, took = timed(lambda: delete_acls(c, name))
    check("while an open transaction deleted it: DeleteAcls of it REQUEST_TIMED_OUT after 5 s",
          r is not None and r[0] == TIMED_OUT and 4.8 <= took < 10, f"({r}, {took:.2f} s)")
    waits_until_commit(sql, lambda: delete_acls(kc.Conn(), name), "a DeleteAcls of it sent meanwhile",
                       lambda r: r == (0, None, 0))
    r = psql(f"SELECT count(*) FROM kafka.acls WHERE resource_name = '{name}'")
    check("... which found it deleted: no such ACL is left", r.stdout.strip() == "0", r.stdout + r.stderr)


def alter_client_quota(c, user, key, value):
    """AlterClientQuotas v0, one user entity, one op: (error code, message)."""
    entry = array([string("user") + string(user)]) + array([string(key) + struct.pack(">d", value) + i8(0)])
    r = c.call(49, 0, array([entry]) + i8(0), timeout=30)
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.i16(), r.string(), r.array(lambda: (r.string(), r.string()))))[0][:2]


def incremental_alter_resources(c, resources):
    """IncrementalAlterConfigs v0 of [(resource type, name, key, value)], each a SET: [(error code,
    message)] in the request's order."""
    body = array([i8(t) + string(n) + array([string(k) + i8(0) + string(v)]) for t, n, k, v in resources])
    r = c.call(44, 0, body + i8(0), timeout=30)
    if r is None:
        return None
    r.i32()
    return [x[:2] for x in r.array(lambda: (r.i16(), r.string(), r.i8(), r.string()))]


def check_rows(c, sql, what, dml, request, ok_after, final_sql, final_expected):
    """A catalog row an open transaction wrote with plain DML (the SQL interface of quotas, group and
    broker configs): the wire request changing it answers REQUEST_TIMED_OUT after 5 s, saying why;
    one sent meanwhile succeeds within 2 s of the COMMIT, and its change is what stays."""
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute(dml)
    r, took = timed(lambda: request(c))
    check(f"while an open transaction wrote {what}: the wire request changing it answers "
          f"REQUEST_TIMED_OUT after 5 s, saying why",
          r is not None and r[0] == TIMED_OUT and b"another transaction" in (r[1] or b"")
          and 4.8 <= took < 10, f"({r}, {took:.2f} s)")
    waits_until_commit(sql, lambda: request(kc.Conn()), "one sent meanwhile", ok_after)
    got = psql(final_sql).stdout.strip()
    check(f"... and its value is the one that stays ({final_expected})", got == final_expected, got)


def check_catalog_rows(c, sql):
    """Client quotas, group and broker configs that an open transaction wrote (plain DML): until
    2026-12-06 the worker waited in the row's lock for as long as the transaction stayed open."""
    user, group = f"tl-quota-{RUN}", f"tl-configs-{RUN}"
    check_rows(c, sql, "a client quota", f"INSERT INTO kafka.client_quotas (user_name, quota_key, value) "
               f"VALUES ('{user}', 'producer_byte_rate', 1000)",
               lambda c: alter_client_quota(c, user, "producer_byte_rate", 2000.0),
               lambda r: r == (0, None),
               f"SELECT value FROM kafka.client_quotas WHERE user_name = '{user}'", "2000")
    check_rows(c, sql, "a group config", f"INSERT INTO kafka.group_configs "
               f"VALUES ('{group}', 'consumer.session.timeout.ms', '50000')",
               lambda c: (incremental_alter_resources(c, [(32, group, "consumer.session.timeout.ms", "55000")])
                          or [None])[0],
               lambda r: r == (0, None),
               f"SELECT value FROM kafka.group_configs WHERE group_id = '{group}'", "55000")
    psql("DELETE FROM kafka.broker_configs WHERE name = 'background.threads'")
    check_rows(c, sql, "a broker config", "INSERT INTO kafka.broker_configs VALUES ('background.threads', '5')",
               lambda c: (incremental_alter_resources(c, [(4, "", "background.threads", "7")]) or [None])[0],
               lambda r: r == (0, None),
               "SELECT value FROM kafka.broker_configs WHERE name = 'background.threads'", "7")
    # a BROKER setting (ALTER SYSTEM: outside the transaction) before a locked group config
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute(f"UPDATE kafka.group_configs SET value = '56000' WHERE group_id = '{group}'")
    r, took = timed(lambda: incremental_alter_resources(
        c, [(4, "", "num.partitions", "3"), (32, group, "consumer.session.timeout.ms", "57000")]))
    sql.rollback()
    auto = psql("SELECT count(*) FROM pg_file_settings WHERE name = 'kafka.num_partitions' "
                "AND sourcefile LIKE '%postgresql.auto.conf'").stdout.strip()
    check("a BROKER setting and a locked group config in one IncrementalAlterConfigs: both answered "
          "REQUEST_TIMED_OUT after 5 s, and the setting was not changed (ALTER SYSTEM runs after every "
          "other resource's changes)",
          r is not None and [e[0] for e in r] == [TIMED_OUT, TIMED_OUT] and 4.8 <= took < 10 and auto == "0",
          f"({r}, {took:.2f} s, ALTER SYSTEM entries {auto})")
    psql("ALTER SYSTEM RESET kafka.num_partitions")
    psql("SELECT pg_reload_conf()")
    # two BROKER resources: the node's setting first, then a kept config the transaction updated
    node = psql("SHOW kafka.node_id").stdout.strip()
    psql("INSERT INTO kafka.broker_configs VALUES ('background.threads', '5') "
         "ON CONFLICT (name) DO UPDATE SET value = excluded.value")
    cur.execute("BEGIN")
    cur.execute("UPDATE kafka.broker_configs SET value = '6' WHERE name = 'background.threads'")
    r, took = timed(lambda: incremental_alter_resources(
        c, [(4, node, "num.partitions", "3"), (4, "", "background.threads", "9")]))
    sql.rollback()
    auto = psql("SELECT count(*) FROM pg_file_settings WHERE name = 'kafka.num_partitions' "
                "AND sourcefile LIKE '%postgresql.auto.conf'").stdout.strip()
    check("two BROKER resources, broker " + node + "'s setting and the default's kept config the "
          "transaction updated: both answered REQUEST_TIMED_OUT after 5 s, and the setting was not "
          "changed (the request locks kafka.broker_configs before any ALTER SYSTEM)",
          r is not None and [e[0] for e in r] == [TIMED_OUT, TIMED_OUT] and 4.8 <= took < 10 and auto == "0",
          f"({r}, {took:.2f} s, ALTER SYSTEM entries {auto})")
    psql("ALTER SYSTEM RESET kafka.num_partitions")
    psql("SELECT pg_reload_conf()")
    psql(f"DELETE FROM kafka.client_quotas WHERE user_name = '{user}'")
    psql(f"DELETE FROM kafka.group_configs WHERE group_id = '{group}'")
    psql("DELETE FROM kafka.broker_configs WHERE name = 'background.threads'")


def cleaner_waiting():
    r = psql("SELECT count(*) FROM pg_stat_activity "
             "WHERE backend_type = 'kafka_pg log cleaner' AND wait_event_type = 'Lock'")
    return r.stdout.strip()


def check_cleaner(sql):
    """The log cleaner worker, checking retention every second, while an open transaction holds
    the lock of a topic that sorts before another whose segments are past retention.ms."""
    psql("ALTER SYSTEM SET kafka.log_retention_check_interval_ms = 1000")
    psql("ALTER SYSTEM SET kafka.log_cleaner_backoff_ms = 1000")
    psql("SELECT pg_reload_conf()")
    cur = sql.cursor()
    try:
        psql(f"SELECT kafka.create_topic('{HELD}', 1)")
        psql(f"""SELECT kafka.create_topic('{RETAINED}', 1, '{{"segment.ms": "100", "retention.ms": "2000"}}')""")
        for v in ("a", "b", "c"):   # a segment each: segment.ms rolls on the next append
            psql(f"SELECT count(*) FROM kafka.produce('{RETAINED}', NULL::text, '{v}')")
            time.sleep(0.3)
        cur.execute("BEGIN")
        cur.execute(f"SELECT kafka.alter_topic_config('{HELD}', '{{\"retention.ms\": \"3600000\"}}')")
        deadline, start = time.time() + 10, "0"
        while time.time() < deadline:
            start = psql(f"SELECT log_start_offset FROM kafka.partition_status WHERE topic = '{RETAINED}'").stdout.strip()
            if start not in ("", "0"):
                break
            time.sleep(0.3)
        waiting = cleaner_waiting()
        check("while an open transaction changed a topic's configs: the log cleaner waits in no lock, and "
              "deletes another topic's segments past retention.ms within 10 s",
              start not in ("", "0") and waiting == "0", f"(log start offset {start}; cleaner waiting: {waiting})")
        sql.commit()
    finally:
        sql.rollback()
        psql("ALTER SYSTEM RESET kafka.log_retention_check_interval_ms")
        psql("ALTER SYSTEM RESET kafka.log_cleaner_backoff_ms")
        psql("SELECT pg_reload_conf()")


def main():
    # the resolver's offsets expiry (the upkeep checks) every second, not every 10 minutes
    psql("ALTER SYSTEM SET kafka.offsets_retention_check_interval_ms = 1000")
    psql("SELECT pg_reload_conf()")
    for name in (DELETED, PING, ALTERED, CONSUMED):
        r = psql(f"SELECT kafka.create_topic('{name}', 1)")
        check(f"topic {name} created", r.returncode == 0, r.stderr.strip())
    c = kc.Conn()
    err, base = kc.produce(c, DELETED, kc.build_batch(0, [b"before"]))
    check("a first record", (err, base) == (0, 0), f"({err}, {base})")

    # connected first, while both workers accept: a worker waiting in a lock
    # accepts no new connection, so ones made later would all go elsewhere
    waiting, stop = threading.Event(), threading.Event()
    pingers = [Pinger(PING, waiting, stop) for _ in range(8)]
    for p in pingers:
        p.start()
    time.sleep(0.5)
    samples = []
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            samples.append(lock_waiting_workers())
            time.sleep(0.3)
    sampler = threading.Thread(target=sample, daemon=True)
    sql = psycopg2.connect("")
    try:
        waiting.set()
        sampler.start()
        check_deleted(c, sql)
        check_created(c, sql)
        check_altered(c, sql)
        check_consumed(c, sql)
        check_group_locked(c, sql)
        check_upkeep(c, sql)
        check_cleaner(sql)
        sampling.set()
        sampler.join(10)
        check("meanwhile no listener worker waited on a lock",
              samples and max(samples) == 0,
              f"({sum(1 for s in samples if s)} of {len(samples)} samples had a worker waiting, "
              f"at most {max(samples or [0])})")
        # not sampled: each run of the requests that change catalog rows (CreateAcls, DeleteAcls,
        # AlterClientQuotas, IncrementalAlterConfigs) waits up to its 1 ms lock_timeout
        check_acls(c, sql)
        check_catalog_rows(c, sql)
        waiting.clear()
        check_pingers_served(pingers, stop, "meanwhile 8 other connections were each answered within 0.5 s")
    finally:
        stop.set()
        sampling.set()
        sql.rollback()
        sql.close()
        names = "', '".join((DELETED, PING, NEW1, NEW2, NEW3, NEW4, ALTERED, CONSUMED, HELD, RETAINED))
        psql(f"SELECT kafka.delete_topic(name) FROM kafka.topics WHERE name IN ('{names}')")
        psql("ALTER SYSTEM RESET kafka.offsets_retention_check_interval_ms")
        psql("SELECT pg_reload_conf()")
    finish()


if __name__ == "__main__":
    main()
