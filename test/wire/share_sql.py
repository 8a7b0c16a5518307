#!/usr/bin/env python3
"""Share groups (KIP-932) in SQL beside the wire (issue 12): eight SQL sessions acquire records of
one share group with kafka.share_acquire, insert each into a table whose primary key is the
record's (partition, offset), acknowledge it and COMMIT - or, one transaction in three, ROLLBACK,
which must make its records available again.  Two kafka-console-share-consumer processes (the real
Java KafkaShareConsumer, when the Kafka tools can be fetched) read the same group meanwhile.  Every
record must be processed exactly once: in the table once (a second insert would violate the key)
or printed by a console consumer, never both, none missing.  Then the in-flight window is empty and
kafka.share_group_status shows no lag.

Before that, two checks of their own: several SQL sessions hold records of the same partition at
once (each acquires while the others' transactions are open, without waiting for them, and gets
other records; what the ones that roll back held comes back with its delivery counted), and a
poison record - one that makes every transaction that gets it roll back - is archived after
share.delivery.count.limit deliveries while the other records are processed.

kafka_pg only.  Usage: PGDATABASE=... share_sql.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import random
import subprocess
import sys
import threading
import time
import uuid

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402

N = int(os.environ.get("KP_SHARE_RECORDS", "3000"))
WORKERS = 8
HERE = os.path.dirname(os.path.abspath(__file__))
KAFKA_SH = os.path.join(HERE, "..", "clients", "kafka", "kafka.sh")


def connect():
    return psycopg2.connect("")    # PGHOST, PGPORT, PGUSER, PGDATABASE


def same_partition_at_once(cur, suffix):
    """Four SQL sessions with open transactions hold records of one partition at the same time."""
    topic = f"share-sql-one-{suffix}"
    group = f"share-sql-one-g-{suffix}"
    cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    cur.execute("SELECT count(*) FROM kafka.produce_batch(%s, NULL::text[],"
                " (SELECT array_agg('r' || i) FROM generate_series(0, 39) i))", (topic,))
    cur.execute("INSERT INTO kafka.group_configs VALUES (%s, 'share.auto.offset.reset', 'earliest')", (group,))
    sessions = [connect() for _ in range(4)]
    held = []
    slowest = 0.0
    for c in sessions:    # each transaction stays open while the next one acquires
        t0 = time.time()
        cu = c.cursor()
        cu.execute("SELECT partition, \"offset\", delivery_count FROM kafka.share_acquire(%s, %s, 5)", (group, topic))
        held.append(cu.fetchall())
        slowest = max(slowest, time.time() - t0)
    offsets = [o for rows in held for (_, o, _) in rows]
    check("4 open SQL transactions hold 5 records each of the same partition at once",
          all(len(rows) == 5 for rows in held) and all(p == 0 for rows in held for (p, _, _) in rows),
          f"got {[len(r) for r in held]}")
    check("no record held by two of them", len(offsets) == len(set(offsets)) == 20, f"{sorted(offsets)}")
    check(f"no acquisition waited for another's open transaction (slowest {slowest:.2f} s)", slowest < 5)
    cur.execute("SELECT acquired FROM kafka.share_group_status WHERE group_id = %s", (group,))
    check("the status view shows the 20 records acquired", cur.fetchone()[0] == 20)
    # two accept and commit, two roll back
    for k, c in enumerate(sessions):
        cu = c.cursor()
        if k < 2:
            for (p, o, _) in held[k]:
                cu.execute("SELECT kafka.share_acknowledge(%s, %s, %s, %s)", (group, topic, p, o))
            c.commit()
        else:
            c.rollback()
    c = sessions[0]
    cu = c.cursor()
    cu.execute("SELECT \"offset\", delivery_count FROM kafka.share_acquire(%s, %s, 10)", (group, topic))
    again = cu.fetchall()
    c.rollback()
    rolled_back = sorted(o for rows in held[2:] for (_, o, _) in rows)
    check("the rolled-back records come back first, their delivery counted",
          sorted(o for (o, _) in again) == rolled_back and all(d == 2 for (_, d) in again), f"{again}")
    for c in sessions:
        c.close()
    cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    cur.execute("DELETE FROM kafka.group_configs WHERE group_id = %s", (group,))


def poison_archived(cur, suffix):
    """A record that always makes its transaction roll back is archived after the delivery limit."""
    topic = f"share-sql-poison-{suffix}"
    group = f"share-sql-poison-g-{suffix}"
    table = f"share_poison_{suffix}"
    cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    cur.execute("SELECT count(*) FROM kafka.produce_batch(%s, NULL::text[],"
                " ARRAY['ok-0', 'ok-1', 'poison', 'ok-3', 'ok-4', 'ok-5'])", (topic,))
    cur.execute("INSERT INTO kafka.group_configs VALUES (%s, 'share.auto.offset.reset', 'earliest'),"
                " (%s, 'share.delivery.count.limit', '3')", (group, group))
    cur.execute(f"CREATE TABLE {table} (\"offset\" bigint PRIMARY KEY, value text)")
    seen = []
    errors = []

    def worker():
        try:
            c = connect()
            cu = c.cursor()
            idle = 0
            while idle < 20:
                cu.execute("SELECT \"offset\", delivery_count, convert_from(value, 'UTF8')"
                           " FROM kafka.share_acquire(%s, %s, 1)", (group, topic))
                rows = cu.fetchall()
                if not rows:
                    c.rollback()
                    idle += 1
                    time.sleep(0.05)
                    continue
                idle = 0
                (o, d, v) = rows[0]
                seen.append((o, d))
                cu.execute(f"INSERT INTO {table} VALUES (%s, %s)", (o, v))
                if v == "poison":
                    c.rollback()     # processing it fails, every time
                    continue
                cu.execute("SELECT kafka.share_acknowledge(%s, %s, 0, %s)", (group, topic, o))
                c.commit()
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    cur.execute(f"SELECT value FROM {table} ORDER BY \"offset\"")
    values = [r[0] for r in cur.fetchall()]
    check("poison: no SQL worker failed", not errors, "; ".join(errors[:3]))
    check("poison: the other records processed once", values == ["ok-0", "ok-1", "ok-3", "ok-4", "ok-5"],
          f"{values}")
    poison_deliveries = sorted(d for (o, d) in seen if o == 2)
    check("poison: delivered 3 times (share.delivery.count.limit), each rollback counted",
          poison_deliveries == [1, 2, 3], f"{poison_deliveries}")
    cur.execute("SELECT archived, acquired, available FROM kafka.share_group_status WHERE group_id = %s", (group,))
    row = cur.fetchone()
    check("poison: archived, nothing left in flight", row == (1, 0, 0), f"{row}")
    cur.execute(f"DROP TABLE {table}")
    cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    cur.execute("DELETE FROM kafka.group_configs WHERE group_id = %s", (group,))


def split_runs(cur, suffix):
    """Runs split by partial acknowledgements while other transactions hold runs of the same partition."""
    topic = f"share-sql-runs-{suffix}"
    group = f"share-sql-runs-g-{suffix}"
    cur.execute("SELECT kafka.create_topic(%s, 1)", (topic,))
    cur.execute("SELECT count(*) FROM kafka.produce_batch(%s, NULL::text[],"
                " (SELECT array_agg('r' || i) FROM generate_series(0, 19) i))", (topic,))
    cur.execute("INSERT INTO kafka.group_configs VALUES (%s, 'share.auto.offset.reset', 'earliest')", (group,))

    def runs():
        cur.execute("SELECT first_offset, last_offset, state, delivery_count FROM kafka.share_records"
                    " WHERE group_id = %s ORDER BY first_offset", (group,))
        return cur.fetchall()

    a, b, c = connect(), connect(), connect()
    c.autocommit = True
    ca, cb, cc = a.cursor(), b.cursor(), c.cursor()
    ca.execute("SELECT \"offset\" FROM kafka.share_acquire(%s, %s, 10)", (group, topic))
    got_a = [r[0] for r in ca.fetchall()]
    cb.execute("SELECT \"offset\" FROM kafka.share_acquire(%s, %s, 10)", (group, topic))
    got_b = [r[0] for r in cb.fetchall()]
    check("runs: two open transactions hold a run of 10 each", got_a == list(range(10)) and got_b == list(range(10, 20)),
          f"{got_a} {got_b}")
    check("runs: one row per run", runs() == [(0, 9, 1, 1), (10, 19, 1, 1)], f"{runs()}")
    # A accepts part of its run: the split is A's until it ends
    ca.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 2, 4)", (group, topic))
    check("runs: while A's split is open, others still see A's run whole", runs()[0] == (0, 9, 1, 1), f"{runs()}")
    # B cannot acknowledge a part of A's run (nor wait for A)
    t0 = time.time()
    cb.execute("SAVEPOINT s")
    try:
        cb.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 5)", (group, topic))
        refused = False
    except psycopg2.Error as e:
        refused = e.pgcode == "KP121"
    cb.execute("ROLLBACK TO SAVEPOINT s")
    check("runs: B acknowledging a part of A's run is INVALID_RECORD_STATE, without waiting",
          refused and time.time() - t0 < 5)
    # B accepts the first half of its own, releases the rest; a third session gets nothing held
    cb.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 10, 14)", (group, topic))
    cb.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 15, 19, 'release')", (group, topic))
    cc.execute("SELECT count(*) FROM kafka.share_acquire(%s, %s, 20)", (group, topic))
    check("runs: a third session gets nothing while A and B hold their runs", cc.fetchone()[0] == 0)
    a.commit()
    check("runs: A's commit makes its split", runs()[:3] == [(0, 1, 1, 1), (2, 4, 2, 1), (5, 9, 1, 1)], f"{runs()}")
    b.rollback()
    # B's rollback: its run whole again and available, delivered a second time to C
    cc.execute("SELECT \"offset\", delivery_count FROM kafka.share_acquire(%s, %s, 20)", (group, topic))
    again = cc.fetchall()
    check("runs: B's rolled-back run comes back whole, its delivery counted",
          again == [(o, 2) for o in range(10, 20)], f"{again}")
    # A (same session, later transaction) still holds its pieces and finishes them
    ca.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 0, 1)", (group, topic))
    ca.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 5, 9)", (group, topic))
    a.commit()
    cc.execute("SELECT kafka.share_acknowledge(%s, %s, 0, 10, 19)", (group, topic))
    cc.execute("SELECT count(*) FROM kafka.share_acquire(%s, %s, 20)", (group, topic))
    cc.execute("SELECT start_offset, acquired, available, lag FROM kafka.share_group_status WHERE group_id = %s",
               (group,))
    st = cc.fetchone()
    # 20 is the commit marker of the SQL transaction that produced 0-19: done too
    check("runs: all done, the window empty", st == (21, 0, 0, 0) and runs() == [], f"{st} {runs()}")
    for x in (a, b, c):
        x.close()
    cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    cur.execute("DELETE FROM kafka.group_configs WHERE group_id = %s", (group,))


def main():
    bootstrap = sys.argv[1]
    suffix = uuid.uuid4().hex[:8]
    topic = f"share-sql-{suffix}"
    group = f"share-sql-group-{suffix}"
    table = f"share_processed_{suffix}"

    admin = connect()
    admin.autocommit = True
    cur = admin.cursor()
    cur.execute("SELECT kafka.create_topic(%s, 2)", (topic,))
    cur.execute("SELECT count(*) FROM (SELECT kafka.produce(%s, NULL::text, 'v' || i, partition => i %% 2)"
                " FROM generate_series(0, %s - 1) i) x", (topic, N))
    cur.execute(f"CREATE TABLE {table} (partition int, \"offset\" bigint, value text, worker int,"
                " PRIMARY KEY (partition, \"offset\"))")
    # every rollback counts a delivery: with the largest limit, and no transaction rolled back
    # once one of its records was delivered 4 times, nothing is archived here
    cur.execute("INSERT INTO kafka.group_configs VALUES (%s, 'share.auto.offset.reset', 'earliest'),"
                " (%s, 'share.delivery.count.limit', '10')", (group, group))

    same_partition_at_once(cur, suffix)
    split_runs(cur, suffix)
    poison_archived(cur, suffix)

    # the Java share consumers, if the Kafka tools are there
    consoles = []
    if os.environ.get("KP_SHARE_NO_JAVA") != "1" and \
            subprocess.run(["bash", os.path.join(HERE, "..", "clients", "kafka", "fetch-kafka.sh")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        for k in range(2):
            out = open(f"/tmp/{table}-console{k}.out", "w")
            p = subprocess.Popen(["bash", KAFKA_SH, "cli", "kafka-console-share-consumer",
                                  "--bootstrap-server", bootstrap, "--topic", topic, "--group", group,
                                  "--timeout-ms", "20000",
                                  "--command-property", "max.poll.records=20"],
                                 stdout=out, stderr=subprocess.DEVNULL)
            consoles.append((p, out))
        # the JVMs take a few seconds to start: let them join before the SQL workers begin
        until = time.time() + 60
        while time.time() < until:
            cur.execute("SELECT count(*) FROM kafka.share_group_members WHERE group_id = %s", (group,))
            if cur.fetchone()[0] >= len(consoles):
                break
            time.sleep(0.5)

    errors = []
    stats = {"commits": 0, "rollbacks": 0, "duplicates": 0}
    lock = threading.Lock()
    stop = threading.Event()

    def worker(w):
        rnd = random.Random(w)
        try:
            c = connect()
            cu = c.cursor()
            idle_since = None
            while not stop.is_set():
                cu.execute("SELECT partition, \"offset\", convert_from(value, 'UTF8'), delivery_count"
                           " FROM kafka.share_acquire(%s, %s, 10)", (group, topic))
                rows = cu.fetchall()
                if not rows:
                    c.rollback()
                    idle_since = idle_since or time.time()
                    if time.time() - idle_since > 25:
                        return
                    time.sleep(0.05)
                    continue
                idle_since = None
                for (p, o, v, _) in rows:
                    cu.execute("SAVEPOINT s")
                    try:
                        cu.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", (p, o, v, w))
                        cu.execute("RELEASE SAVEPOINT s")
                    except psycopg2.errors.UniqueViolation:
                        cu.execute("ROLLBACK TO SAVEPOINT s")
                        with lock:
                            stats["duplicates"] += 1
                    cu.execute("SELECT kafka.share_acknowledge(%s, %s, %s, %s)", (group, topic, p, o))
                if rnd.random() < 1 / 3 and max(r[3] for r in rows) < 4:
                    c.rollback()
                    with lock:
                        stats["rollbacks"] += 1
                else:
                    c.commit()
                    with lock:
                        stats["commits"] += 1
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(f"worker {w}: {e!r}")

    started = time.time()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    deadline = time.time() + 240
    done_at = None
    while time.time() < deadline:
        cur.execute(f"SELECT count(*) FROM {table}")
        sql_count = cur.fetchone()[0]
        console_count = 0
        for (_, out) in consoles:
            out.flush()
            with open(out.name) as f:
                console_count += sum(1 for line in f if line.startswith("v"))
        if sql_count + console_count >= N:
            done_at = done_at or time.time()
            if time.time() - done_at > 3:   # anything delivered twice would show by now
                break
        if errors:
            break
        time.sleep(0.5)
    elapsed = time.time() - started
    stop.set()
    for t in threads:
        t.join(60)
    for (p, out) in consoles:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
        out.close()

    check("no SQL worker failed", not errors, "; ".join(errors[:3]))
    cur.execute(f"SELECT value, worker FROM {table}")
    sql_values = [r[0] for r in cur.fetchall()]
    console_values = []
    for (_, out) in consoles:
        with open(out.name) as f:
            console_values += [line.strip() for line in f if line.startswith("v")]
        if os.environ.get("KP_SHARE_KEEP") != "1":
            os.unlink(out.name)
    expected = {f"v{i}" for i in range(N)}
    both = set(sql_values) & set(console_values)
    missing = expected - set(sql_values) - set(console_values)
    check(f"every record processed ({N}: {len(sql_values)} in SQL, {len(console_values)} by Java share consumers)",
          not missing, f"{len(missing)} missing, e.g. {sorted(missing)[:5]}")
    check("no record processed twice in SQL (the primary key never refused an insert)",
          stats["duplicates"] == 0, f"{stats['duplicates']} duplicates")
    check("no record both processed in SQL and delivered to a Java consumer", not both,
          f"{len(both)}, e.g. {sorted(both)[:5]}")
    check("no Java consumer saw a record twice", len(console_values) == len(set(console_values)),
          f"{len(console_values) - len(set(console_values))} repeats")
    check(f"a third of the SQL transactions rolled back ({stats['rollbacks']} of "
          f"{stats['rollbacks'] + stats['commits']})", stats["rollbacks"] > 0)
    cur.execute("SELECT sum(acquired), sum(available), sum(lag) FROM kafka.share_group_status"
                " WHERE group_id = %s", (group,))
    acquired, available, lag = cur.fetchone()
    check("nothing left in flight, no lag", acquired == 0 and available == 0,
          f"acquired {acquired}, available {available}, lag {lag}")
    print(f"# {N} records in {elapsed:.1f} s with {WORKERS} SQL sessions"
          f"{' and 2 Java share consumers' if consoles else ''}")
    cur.execute(f"DROP TABLE {table}")
    cur.execute("SELECT kafka.delete_topic(%s)", (topic,))
    finish()


if __name__ == "__main__":
    main()
