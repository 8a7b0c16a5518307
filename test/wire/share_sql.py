#!/usr/bin/env python3
"""Share groups (KIP-932) in SQL beside the wire (issue 12): eight SQL sessions acquire records of
one share group with kafka.share_acquire, insert each into a table whose primary key is the
record's (partition, offset), acknowledge it and COMMIT - or, one transaction in three, ROLLBACK,
which must make its records available again.  Two kafka-console-share-consumer processes (the real
Java KafkaShareConsumer, when the Kafka tools can be fetched) read the same group meanwhile.  Every
record must be processed exactly once: in the table once (a second insert would violate the key)
or printed by a console consumer, never both, none missing.  Then the in-flight window is empty and
kafka.share_group_status shows no lag.

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
    cur.execute("INSERT INTO kafka.group_configs VALUES (%s, 'share.auto.offset.reset', 'earliest')", (group,))

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
                cu.execute("SELECT partition, \"offset\", convert_from(value, 'UTF8')"
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
                for (p, o, v) in rows:
                    cu.execute("SAVEPOINT s")
                    try:
                        cu.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", (p, o, v, w))
                        cu.execute("RELEASE SAVEPOINT s")
                    except psycopg2.errors.UniqueViolation:
                        cu.execute("ROLLBACK TO SAVEPOINT s")
                        with lock:
                            stats["duplicates"] += 1
                    cu.execute("SELECT kafka.share_acknowledge(%s, %s, %s, %s)", (group, topic, p, o))
                if rnd.random() < 1 / 3:
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
