#!/usr/bin/env python3
"""Committed offsets expire as Kafka's group coordinator expires them (offsets.retention.minutes,
kafka.offsets_retention_minutes; Kafka's OffsetExpirationCondition of ClassicGroup and
ConsumerGroup), the resolver checking every kafka.offsets_retention_check_interval_ms (set to
1 s here).

- a classic group whose member subscribes to one of two topics it committed: while Stable, the
  other topic's offset expires from its commit, the subscribed one's is kept (until 2026-12-06 a
  group with members kept all); once Empty, its offsets expire together, once the group has been
  empty for the retention, however long ago each was committed (until 2026-12-06 kafka_pg
  counted from each offset's commit, so a group that had just become empty lost the offsets of
  partitions it had not committed for a week: its consumers then started over from
  auto.offset.reset);
- a group no member ever joined (offsets committed with generation -1: `assign()` consumers,
  kafka.consume): each offset from its own commit;
- a consumer group (KIP-848) with a member: the offsets of topics no member subscribes to, from
  their commit; a subscribed topic's are kept (until 2026-12-06 a group with members kept all).

The clock is moved by setting commit_time and state_changed_at back in the catalog (the
retention is at least a minute); what expires is decided by the resolver, on its own.

Usage: offset_retention.py HOST:PORT (PGDATABASE etc. for psql).
Last line: "N passed, M failed".
"""
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (its HOST:PORT is our argv[1] too)
from kwire import array, i16, i32, i64, nbytes, string  # noqa: E402
from tap import check, finish  # noqa: E402

RUN = uuid.uuid4().hex[:8]
T1, T2 = f"or-one-{RUN}", f"or-two-{RUN}"
CLASSIC, STANDALONE, CONSUMER = f"or-classic-{RUN}", f"or-standalone-{RUN}", f"or-consumer-{RUN}"


def psql(sql):
    r = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() if r.returncode == 0 else "ERROR: " + r.stderr.strip()


def offsets(group):
    """The group's committed topics, sorted."""
    return psql(f"SELECT string_agg(topic, ',' ORDER BY topic) FROM kafka.committed_offsets "
                f"WHERE group_id = '{group}'")


def age_commits(group, topic=None):
    where = f" AND topic = '{topic}'" if topic else ""
    psql(f"UPDATE kafka.committed_offsets SET commit_time = now() - interval '30 days' "
         f"WHERE group_id = '{group}'{where}")


def settles(group, want, seconds):
    """Poll the group's offsets until they are want or seconds pass; what they were last."""
    deadline = time.time() + seconds
    got = offsets(group)
    while got != want and time.time() < deadline:
        time.sleep(0.2)
        got = offsets(group)
    return got


def stays(group, want, seconds=3):
    """The group's offsets are want throughout seconds (the resolver checks every second)."""
    deadline = time.time() + seconds
    got = offsets(group)
    while got == want and time.time() < deadline:
        time.sleep(0.2)
        got = offsets(group)
    return got


def commit(c, group, generation, member, topic, offset):
    """OffsetCommit v5 of partition 0 with a generation and member id: its error."""
    body = (string(group) + i32(generation) + string(member)
            + array([string(topic) + array([i32(0) + i64(offset) + string("")])]))
    r = c.call(8, 5, body)
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16()))))[0][1][0][1]


def join(c, group, member, topics):
    """JoinGroup v5, protocol "range" with a ConsumerProtocolSubscription v0 of topics: (error,
    generation, member id)."""
    sub = i16(0) + array([string(t) for t in topics]) + nbytes(None)
    body = (string(group) + i32(30000) + i32(30000) + string(member) + string(None) + string("consumer")
            + array([string("range") + nbytes(sub)]))
    c.send(11, 5, body)
    return kc.read_join(c)


def check_classic():
    c = kc.Conn()
    kc.find_coordinator(c, CLASSIC)
    err, gen, mid = join(c, CLASSIC, "", [T1])
    if err == 79:   # MEMBER_ID_REQUIRED (KIP-394)
        err, gen, mid = join(c, CLASSIC, mid, [T1])
    sync = kc.sync_group(c, CLASSIC, gen, mid, [mid])
    errs = [commit(c, CLASSIC, gen, mid, t, 5) for t in (T1, T2)]
    check("a classic group: a member subscribed to the first topic joins and commits both",
          err == 0 and sync == 0 and errs == [0, 0], f"(join {err}, sync {sync}, commits {errs})")
    age_commits(CLASSIC)
    got = settles(CLASSIC, T1, 4)
    check("... Stable, committed 30 days ago: the unsubscribed topic's offset is dropped within 4 s, "
          "the subscribed topic's kept (as Kafka's ClassicGroup)", got == T1, got)
    got = stays(CLASSIC, T1)
    check("... and stays while the member subscribes to it", got == T1, got)
    left = kc.leave_group(c, CLASSIC, mid)
    state = psql(f"SELECT state FROM kafka.consumer_groups WHERE group_id = '{CLASSIC}'")
    check("... the member leaves: the group is Empty", left is not None and left[0] == 0 and state == "Empty",
          f"({left}, {state})")
    got = stays(CLASSIC, T1)
    check("... just emptied, its offset committed 30 days ago is kept (the retention counts from "
          "when the group became empty, as Kafka's)", got == T1, got)
    psql(f"UPDATE kafka.consumer_groups SET state_changed_at = now() - interval '6 days 23 hours' "
         f"WHERE group_id = '{CLASSIC}'")
    got = stays(CLASSIC, T1)
    check("... empty for less than offsets.retention.minutes (7 days): kept", got == T1, got)
    psql(f"UPDATE kafka.consumer_groups SET state_changed_at = now() - interval '7 days 1 minute' "
         f"WHERE group_id = '{CLASSIC}'")
    got = settles(CLASSIC, "", 4)
    check("... empty for longer: its offsets are dropped within 4 s", got == "", got)
    c.s.close()


def check_standalone():
    c = kc.Conn()
    kc.find_coordinator(c, STANDALONE)
    errs = [kc.offset_commit(c, STANDALONE, t, 7, "") for t in (T1, T2)]
    check("a group no member joined: offsets of two topics committed with generation -1", errs == [0, 0], errs)
    age_commits(STANDALONE, T1)
    got = settles(STANDALONE, T2, 4)
    check("... the offset committed 30 days ago is dropped within 4 s, the recent one kept "
          "(each from its own commit, as Kafka's standalone consumers)", got == T2, got)
    c.s.close()


def check_consumer():
    c = kc.Conn()
    kc.find_coordinator(c, CONSUMER)
    errs = [kc.offset_commit(c, CONSUMER, t, 9, "") for t in (T1, T2)]
    hb = kc.cg_heartbeat(c, CONSUMER, str(uuid.uuid4()), 0, None, [T1])
    gtype = psql(f"SELECT group_type || ' ' || state FROM kafka.consumer_groups WHERE group_id = '{CONSUMER}'")
    check("a consumer group (KIP-848): offsets of two topics, then a member subscribed to the first",
          errs == [0, 0] and hb is not None and hb[0] == 0 and gtype == "consumer Stable", f"({errs}, {hb}, {gtype})")
    age_commits(CONSUMER)
    got = settles(CONSUMER, T1, 4)
    check("... committed 30 days ago: the unsubscribed topic's offset is dropped within 4 s, the "
          "subscribed topic's kept (as Kafka's ConsumerGroup)", got == T1, got)
    got = stays(CONSUMER, T1, 2)
    check("... and stays while a member subscribes to it", got == T1, got)
    c.s.close()


def main():
    psql("ALTER SYSTEM SET kafka.offsets_retention_check_interval_ms = 1000")
    psql("SELECT pg_reload_conf()")
    for t in (T1, T2):
        r = psql(f"SELECT kafka.create_topic('{t}', 1)")
        check(f"topic {t} created", not r.startswith("ERROR"), r)
    try:
        check_classic()
        check_standalone()
        check_consumer()
    finally:
        psql(f"SELECT kafka.delete_topic('{T1}'), kafka.delete_topic('{T2}')")
        psql(f"DELETE FROM kafka.consumer_groups WHERE group_id IN ('{CLASSIC}', '{STANDALONE}', '{CONSUMER}')")
        psql("ALTER SYSTEM RESET kafka.offsets_retention_check_interval_ms")
        psql("SELECT pg_reload_conf()")
    finish()


if __name__ == "__main__":
    main()
