"""SQL transactions and wire transactions interleaved on one partition (issue 8), kafka_pg only.

Records are written to one partition by SQL sessions (kafka.produce inside BEGIN/COMMIT, ROLLBACK,
a savepoint rolled back, autocommit) and by librdkafka transactional producers (commit, abort, a
producer fenced by a second one with the same transactional.id), with transactions of both kinds
open at the same time. Then, and at a point where a SQL transaction is still open, a wire
read_committed consumer and SQL kafka.fetch_text(..., 'read_committed') must return the same
records at the same offsets: exactly the committed ones, and nothing past the first open
transaction (the last stable offset). Needs PGHOST/PGPORT/PGUSER/PGDATABASE of the kafka_pg
database and KAFKA_BOOTSTRAP. Last line: "N passed, M failed".
"""
import os
import sys
import time
import uuid

import psycopg2
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
RUN = uuid.uuid4().hex[:8]
TOPIC = f"mixed-txn-{RUN}"
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    print(("ok     " if ok else "FAILED ") + what + ("" if ok or not detail else "\n       " + detail), flush=True)
    if ok:
        passed += 1
    else:
        failed += 1


def session(autocommit=False):
    c = psycopg2.connect("")
    c.autocommit = autocommit
    return c


def sql_produce(conn, value):
    with conn.cursor() as cur:
        cur.execute("select \"offset\" from kafka.produce(%s, %s::text, %s::text, partition => 0)", (TOPIC, "k", value))
        return cur.fetchone()[0]


def txn_producer(txn_id):
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": txn_id, "linger.ms": 0})
    p.init_transactions(30)
    return p


def wire_send(p, *values):
    for v in values:
        p.produce(TOPIC, key=b"k", value=v.encode(), partition=0)
    p.flush(30)


def wire_read(level):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"mixed-reader-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "isolation.level": level, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, 0, -2)])
    out, idle = [], time.time()
    while time.time() - idle < 2.5:
        for m in c.consume(100, 0.3):
            if m.error():
                continue
            out.append((m.offset(), m.value().decode()))
            idle = time.time()
    c.close()
    return out


def sql_read(level):
    with session(True) as conn, conn.cursor() as cur:
        cur.execute("select \"offset\", value from kafka.fetch_text(%s, 0, 0, 100000, %s) order by 1", (TOPIC, level))
        return [(o, v) for o, v in cur.fetchall()]


def same_records(when, expect_values):
    wire = wire_read("read_committed")
    sql = sql_read("read_committed")
    check(wire == sql, f"{when}: wire read_committed and SQL fetch return the same records at the same offsets",
          f"wire {wire}\n       sql  {sql}")
    check([v for _, v in wire] == expect_values, f"{when}: they are the committed records, in order: {len(expect_values)}",
          f"want {expect_values}\n       got  {[v for _, v in wire]}")


def main():
    print(f"mixed SQL and wire transactions on {TOPIC} (broker {BOOTSTRAP}, database "
          f"{os.environ.get('PGDATABASE', '')} at {os.environ.get('PGHOST', '')}:{os.environ.get('PGPORT', '')})", flush=True)
    with session(True) as c, c.cursor() as cur:
        cur.execute("select kafka.create_topic(%s, 1)", (TOPIC,))
    a, b = session(), session()
    auto = session(True)
    w1 = txn_producer(f"mixed-w1-{RUN}")
    w2 = txn_producer(f"mixed-w2-{RUN}")

    # 1: SQL commit, wire commit, SQL rollback, wire abort, autocommit SQL, one after the other
    sql_produce(a, "s1a"); sql_produce(a, "s1b"); a.commit()
    w1.begin_transaction(); wire_send(w1, "w1a", "w1b"); w1.commit_transaction(30)
    sql_produce(a, "s2-rolled-back"); a.rollback()
    w1.begin_transaction(); wire_send(w1, "w2-aborted"); w1.abort_transaction(30)
    sql_produce(auto, "s-auto1")
    expect = ["s1a", "s1b", "w1a", "w1b", "s-auto1"]
    same_records("after sequential transactions", expect)

    # 2: open at once: SQL a (to roll back), wire w1 (commits), SQL b (commits), wire w2 (aborts)
    sql_produce(a, "s3-rolled-back")                      # a is open: the LSO stops here
    w1.begin_transaction(); wire_send(w1, "w3")
    sql_produce(b, "s4"); b.commit()
    w2.begin_transaction(); wire_send(w2, "w4-aborted")
    w1.commit_transaction(30)
    w2.abort_transaction(30)
    sql_produce(auto, "s-auto2")
    same_records("while a SQL transaction is open", expect)   # nothing past the open one's first record
    a.rollback()
    expect += ["w3", "s4", "s-auto2"]
    same_records("once it rolled back", expect)

    # 3: a wire transaction open across SQL commits and a rollback, then committed
    w2.begin_transaction(); wire_send(w2, "w5")
    sql_produce(a, "s5"); a.commit()
    sql_produce(b, "s6-rolled-back"); b.rollback()
    same_records("while a wire transaction is open", expect)
    w2.commit_transaction(30)
    expect += ["w5", "s5"]
    same_records("once it committed", expect)

    # 4: savepoints: the rolled-back subtransaction's record is hidden, the rest of the
    #    transaction committed
    with a.cursor() as cur:
        sql_produce(a, "s7")
        cur.execute("savepoint x")
        sql_produce(a, "s8-rolled-back-to-savepoint")
        cur.execute("rollback to savepoint x")
        sql_produce(a, "s9")
    a.commit()
    expect += ["s7", "s9"]
    same_records("after a savepoint rolled back", expect)

    # 5: a wire producer fenced by a second with the same transactional.id: its open transaction
    #    is aborted, the SQL transaction beside it commits
    tid = f"mixed-fenced-{RUN}"
    old = txn_producer(tid)
    old.begin_transaction(); wire_send(old, "w6-fenced")
    sql_produce(b, "s10")
    new = txn_producer(tid)                               # fences old, aborts w6
    b.commit()
    new.begin_transaction(); wire_send(new, "w7"); new.commit_transaction(30)
    try:
        old.commit_transaction(10)
        fenced = False
    except KafkaException as e:
        fenced = e.args[0].fatal() or "fenced" in str(e).lower()
    check(fenced, "the older producer with the same transactional.id is fenced")
    expect += ["s10", "w7"]
    same_records("after the fenced transaction", expect)

    # everything written, read_uncommitted: the hidden records are there
    every = [v for _, v in wire_read("read_uncommitted")]
    hidden = sorted(set(every) - set(expect))
    want_hidden = sorted(["s2-rolled-back", "w2-aborted", "s3-rolled-back", "w4-aborted", "s6-rolled-back",
                          "s8-rolled-back-to-savepoint", "w6-fenced"])
    check(hidden == want_hidden, "read_uncommitted shows the rolled-back and aborted records the others hide",
          f"hidden {hidden}, want {want_hidden}")
    sql_every = [v for _, v in sql_read("read_uncommitted")]
    check(sql_every == every, "SQL fetch read_uncommitted returns what the wire returns",
          f"wire {every}\n       sql  {sql_every}")

    with session(True) as c, c.cursor() as cur:
        cur.execute("select kafka.delete_topic(%s)", (TOPIC,))
    print(f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
