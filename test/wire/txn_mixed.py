#!/usr/bin/env python3
"""SQL transactions and wire transactions interleaved on one partition (issue 8, "Mixed"): some
committed, some rolled back or aborted, read by a wire read_committed consumer (librdkafka) and by
kafka.fetch: both must return the same records, those of the committed transactions only, in offset
order.

kafka_pg only (the SQL front door has no Kafka counterpart). Both read paths go through the store's
one read_committed cursor; the aborted WIRE transaction is hidden by the store's
aborted-transaction index (the visibility layer of issue 8). Part of test/run-tests' wire part.

Usage: PGDATABASE=... PGHOST=... PGPORT=... txn_mixed.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import sys
import time
import uuid

import psycopg2
from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402

BOOTSTRAP = sys.argv[1]
RUN = uuid.uuid4().hex[:8]


def sql(autocommit=True):
    c = psycopg2.connect("")
    c.autocommit = autocommit
    return c


def sql_produce(conn, topic, value):
    with conn.cursor() as cur:
        cur.execute("SELECT \"offset\" FROM kafka.produce(%s, NULL::text, %s::text, partition => 0)", (topic, value))
        return cur.fetchone()[0]


def wire_read(topic, isolation):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "mixed-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.time() + 30
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            continue
        out.append(m.value().decode())
    c.close()
    return out


def main():
    topic = f"mixed-{RUN}"
    admin = sql()
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": f"mixed-{RUN}", "linger.ms": 5})
    p.init_transactions(30)

    a = sql(False)
    sql_produce(a, topic, "sql-a")                  # SQL A: committed below
    p.begin_transaction()
    p.produce(topic, value=b"wire-1", partition=0)  # wire 1: committed below
    p.flush(30)
    b = sql(False)
    sql_produce(b, topic, "sql-b")                  # SQL B: rolled back
    a.commit()
    b.rollback()
    p.commit_transaction(30)
    c = sql(False)
    sql_produce(c, topic, "sql-c")                  # SQL C: committed after wire 2 began
    p.begin_transaction()
    p.produce(topic, value=b"wire-2", partition=0)  # wire 2: aborted
    p.flush(30)
    s = sql(False)
    with s.cursor() as cur:
        cur.execute("SAVEPOINT sp")
    sql_produce(s, topic, "sql-savepoint")          # rolled back to the savepoint
    with s.cursor() as cur:
        cur.execute("ROLLBACK TO SAVEPOINT sp")
    sql_produce(s, topic, "sql-d")                  # SQL D: committed
    c.commit()
    p.abort_transaction(30)
    s.commit()
    p.begin_transaction()
    p.produce(topic, value=b"wire-3", partition=0)  # wire 3: committed
    p.commit_transaction(30)
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.flush_markers()")

    want = ["sql-a", "wire-1", "sql-c", "sql-d", "wire-3"]
    with admin.cursor() as cur:
        cur.execute("SELECT value FROM kafka.fetch_text(%s, 0, 0, 100) ORDER BY \"offset\"", (topic,))
        via_sql = [r[0] for r in cur.fetchall()]
    via_wire = wire_read(topic, "read_committed")
    everything = wire_read(topic, "read_uncommitted")
    check("read_uncommitted sees every record", sorted(everything) ==
          sorted(["sql-a", "wire-1", "sql-b", "sql-c", "wire-2", "sql-savepoint", "sql-d", "wire-3"]),
          f"got {everything}")
    check("kafka.fetch and a wire read_committed consumer return the same records", via_sql == via_wire,
          f"SQL {via_sql}, wire {via_wire}")
    check("the rolled-back SQL transaction and savepoint are hidden from both",
          "sql-b" not in via_sql + via_wire and "sql-savepoint" not in via_sql + via_wire,
          f"SQL {via_sql}, wire {via_wire}")
    check("only the committed transactions' records, in offset order (the aborted wire "
          "transaction hidden by the store's aborted-transaction index)",
          via_sql == want and via_wire == want, f"SQL {via_sql}, wire {via_wire}")
    check_open_limit(admin)
    finish()


def check_open_limit(admin):
    """A partition holds at most 64 open transactions: a 65th SQL transaction's produce is refused
    (53400) before its record is written.  Refused after it (until 2026-12-07), the record stayed
    in the log with no open transaction to decide it, and read_committed readers saw it once the
    last stable offset passed it, although its transaction had rolled back."""
    topic = f"txn-limit-{RUN}"
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    holders = []
    try:
        for i in range(64):
            c = sql(autocommit=False)
            sql_produce(c, topic, f"open-{i}")
            holders.append(c)
        late = sql(autocommit=False)
        try:
            sql_produce(late, topic, "refused")
            state = "accepted"
        except psycopg2.Error as e:
            state = e.pgcode
        late.rollback()
        late.close()
        with admin.cursor() as cur:
            cur.execute("SELECT log_end_offset FROM kafka.partition_status WHERE topic = %s", (topic,))
            end = cur.fetchone()[0]
        check("a 65th transaction open on one partition: its produce is refused (53400) and writes "
              "nothing (log end 64)", state == "53400" and end == 64, f"({state}, log end {end})")
    finally:
        for c in holders:
            c.rollback()
            c.close()
    with admin.cursor() as cur:
        cur.execute("SELECT kafka.flush_markers()")
        cur.execute("SELECT count(*) FROM kafka.fetch_text(%s, 0, 0, 1000, 'read_committed')", (topic,))
        n_committed = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM kafka.fetch_text(%s, 0, 0, 1000, 'read_uncommitted') "
                    "WHERE value = 'refused'", (topic,))
        n_refused = cur.fetchone()[0]
        cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    check("all 65 rolled back: read_committed reads none of their records, and the refused one is "
          "not in the log at all", n_committed == 0 and n_refused == 0,
          f"(read_committed {n_committed}, refused record present {n_refused})")


if __name__ == "__main__":
    main()
