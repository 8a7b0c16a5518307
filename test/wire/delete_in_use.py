#!/usr/bin/env python3
"""DeleteTopics of a topic that open transactions use: the worker does not
wait for them (src/listener/handlers_topics.c, kp_handle_delete_topics).

A topic is deleted under AccessExclusiveLock, which waits for every
transaction that used the topic and is still open: here a SQL session that
ran kafka.produce in a transaction it keeps open.  Until 2026-12-05 the
listener worker that got the DeleteTopics waited there, in the lock, and so
answered none of its other connections meanwhile: another topic's Produce
on such a connection took as long as the SQL transaction stayed open (6.1 s
in a by-hand run).  Now the request tries the topics' locks without
waiting, parks, and tries again every 50 ms until its timeout_ms.

Checks, with librdkafka's AdminClient (confluent_kafka) and 8 raw
connections (ApiVersions and Metadata in turn), made before anything waits
so that they are spread over the workers and one at least shares the worker
of the admin's connection (a worker waiting in a lock accepts nothing):

- DeleteTopics of the busy topic and a free one, timeout 1.5 s: the busy one
  REQUEST_TIMED_OUT after about 1.5 s, the free one deleted; the busy one
  still exists;
- while a DeleteTopics of the busy topic waits (timeout 30 s), no listener
  worker waits on a lock (pg_stat_activity), and the 8 connections are each
  answered within 0.5 s;
- once the SQL transaction commits, that DeleteTopics succeeds within 2 s,
  and the topic is gone.

Usage: delete_in_use.py HOST:PORT (PGDATABASE etc. for psycopg2/psql).
Last line: "N passed, M failed".
"""
import os
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_flush import Pinger, check_pingers_served  # noqa: E402
from tap import check, finish  # noqa: E402

import psycopg2  # noqa: E402
from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

BOOT = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
RUN = uuid.uuid4().hex[:8]
BUSY, FREE, PING = f"delbusy-{RUN}", f"delfree-{RUN}", f"delping-{RUN}"


def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)


def topic_exists(name):
    return psql(f"SELECT count(*) FROM kafka.topics WHERE name = '{name}'").stdout.strip() == "1"


def lock_waiting_workers():
    r = psql("SELECT count(*) FROM pg_stat_activity "
             "WHERE backend_type = 'kafka_pg listener' AND wait_event_type = 'Lock'")
    return int(r.stdout.strip() or -1)


def delete(admin, names, timeout_s):
    """{name: None or the error} and the seconds it took."""
    t = time.time()
    out = {}
    for name, f in admin.delete_topics(names, operation_timeout=timeout_s, request_timeout=timeout_s + 15).items():
        try:
            f.result(timeout_s + 20)
            out[name] = None
        except KafkaException as e:
            out[name] = e.args[0]
    return out, time.time() - t


def main():
    for name in (BUSY, FREE, PING):
        r = psql(f"SELECT kafka.create_topic('{name}', 1)")
        check(f"topic {name} created", r.returncode == 0, r.stderr.strip())

    # connected first, while both workers accept: a worker waiting in a lock
    # accepts no new connection, so ones made later would all go elsewhere
    waiting, stop = threading.Event(), threading.Event()
    pingers = [Pinger(PING, waiting, stop) for _ in range(8)]
    for p in pingers:
        p.start()
    time.sleep(0.5)
    sql = psycopg2.connect("")
    cur = sql.cursor()
    cur.execute("BEGIN")
    cur.execute(f"SELECT count(*) FROM kafka.produce('{BUSY}', 'k', 'in an open transaction')")
    admin = AdminClient({"bootstrap.servers": BOOT})
    try:
        res, took = delete(admin, [BUSY, FREE], 1.5)
        err = res.get(BUSY)
        check("the busy topic: REQUEST_TIMED_OUT after its 1.5 s timeout",
              err is not None and err.name() == "REQUEST_TIMED_OUT" and 1.3 <= took < 10,
              f"({err}, {took:.2f} s)")
        check("the free topic of the same request: deleted", res.get(FREE) is None and not topic_exists(FREE),
              f"({res.get(FREE)})")
        check("the busy topic still exists", topic_exists(BUSY))

        result = {}

        def long_delete():
            result["res"], result["took"] = delete(admin, [BUSY], 30)
            result["at"] = time.time()
        deleter = threading.Thread(target=long_delete, daemon=True)
        deleter.start()
        time.sleep(0.5)
        waiting.set()
        samples = []
        for _ in range(10):
            samples.append(lock_waiting_workers())
            time.sleep(0.3)
        waiting.clear()
        check("while the DeleteTopics waits for the transaction, no listener worker waits on a lock",
              samples and max(samples) == 0, f"(workers waiting on a lock, sampled: {samples})")
        check_pingers_served(pingers, stop, "meanwhile 8 other connections are each answered within 0.5 s")
        check("the DeleteTopics is still waiting (not answered)", deleter.is_alive())
        committed_at = time.time()
        cur.execute("COMMIT")
        deleter.join(35)
        res = result.get("res", {})
        after = result.get("at", float("inf")) - committed_at
        check("after the COMMIT the waiting DeleteTopics succeeds within 2 s",
              BUSY in res and res[BUSY] is None and after < 2,
              f"({res}, {after:.2f} s after the commit)")
        check("the topic is gone", not topic_exists(BUSY))
    finally:
        stop.set()
        sql.rollback()
        sql.close()
        psql(f"SELECT kafka.delete_topic(name) FROM kafka.topics WHERE name IN ('{BUSY}', '{FREE}', '{PING}')")
    finish()


if __name__ == "__main__":
    main()
