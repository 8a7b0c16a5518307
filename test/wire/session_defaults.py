#!/usr/bin/env python3
"""The broker under a server's session defaults that would stop its writes
or change what its statements mean: default_transaction_read_only = on,
default_transaction_isolation = serializable, search_path = kp_trap,
pg_catalog, session_replication_role = replica, lock_timeout,
statement_timeout and idle_in_transaction_session_timeout of 1 ms and
exit_on_error = on set for the whole server (ALTER SYSTEM, reloaded), as a
DBA may to keep sessions from writing (the first two), as a schema on a
default path would (the third), as a logical-replication setup may (the
fourth: it turns off triggers, and with them foreign keys), to keep SQL
sessions from waiting (the timeouts) or to end a session at its first error
(the last).
kafka_pg's background workers set their own (src/main/kafka_pg.c,
kp_worker_connect, as autovacuum does), so the Kafka clients are served as
before, while SQL sessions get the defaults.
Schema kp_trap (test/lib/search_path_traps.sql) copies pg_catalog's
operators and functions, each logging WARNING "trap sprung" when called;
this script's own psql sessions keep pg_catalog alone (PGOPTIONS), so a
trap in the server log was sprung by a worker.

Until 2026-12-05 the workers took the server's: with read-only on, a Produce
was appended but every request that writes the catalog failed (JoinGroup:
"cannot execute INSERT in a read-only transaction", auto-created topics
"Unknown broker error"), and the resolver failed at once on every start
("cannot execute DELETE"), restarted by the postmaster each second.  And
they took the server's search_path: a trap was sprung by their statements
(as the bootstrap superuser) on every request touching the catalog.  Until
2026-12-07 they took the server's session_replication_role: under replica a
topic deleted on the wire left its partitions' and configs' rows behind (the
catalog's ON DELETE CASCADE foreign keys are triggers).  And they took its
lock_timeout: while a SQL session held a lock on kafka.topics for 3 s, a
Metadata request failed at once ("canceling statement due to lock timeout",
its connection closed; librdkafka's list_topics timed out) and the log
cleaner exited with that error, restarted by the postmaster.  (The other two
timeouts are PostgreSQL's for client sessions, which the workers are not;
they are set here as a DBA would set them beside lock_timeout.)  And they
took its exit_on_error: a CreateTopics of a topic that exists made the
listener worker serving it exit (FATAL "topic ... already exists", every
connection of that worker closed, the client's retries killing the restarted
workers in turn; kafka-topics timed out).

Checks, with librdkafka (confluent_kafka) after the reload:
- AdminClient CreateTopics; again: TOPIC_ALREADY_EXISTS; an idempotent
  acks=all producer delivers;
- a consumer of a group reads every record and commits its offsets (read
  back with committed());
- a transactional producer commits a transaction, and a read_committed
  consumer reads it;
- a topic with 2 partitions and a config override, deleted with
  DeleteTopics, leaves no row in kafka.partitions or
  kafka.topic_config_overrides;
- while a SQL session holds ACCESS EXCLUSIVE on kafka.topics for 3 s (its
  own lock_timeout 0), a Metadata request waits for it (at least 1.5 s)
  and then names the topic;
- no kafka_pg worker is restarted (each keeps its pid), and the server log
  shows no ERROR or FATAL from kafka_pg's workers and no sprung trap meanwhile;
- a SQL session gets the defaults: kafka.produce is refused with 25006.

Usage: session_defaults.py HOST:PORT (PGDATABASE etc. for psql; KP_SERVER_LOG,
set by test/run-tests, the server log).  Last line: "N passed, M failed".
"""
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import check, finish  # noqa: E402

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

BOOT = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
RUN = uuid.uuid4().hex[:8]
N = 200


# the server-wide settings this script's own sessions do without: they wait as long as they must
# and outlive their errors
OWN = "-c lock_timeout=0 -c statement_timeout=0 -c idle_in_transaction_session_timeout=0 -c exit_on_error=off"
# and they keep pg_catalog alone
ENV = dict(os.environ, PGOPTIONS=(os.environ.get("PGOPTIONS", "") + " -c search_path=pg_catalog " + OWN).strip())
TIMEOUTS = ("lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout")
TRAPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "search_path_traps.sql")


def psql(sql):
    return subprocess.run(["psql", "-X", "-At", "-c", sql], capture_output=True, text=True, timeout=60, env=ENV)


def reload_settings(on):
    if on:
        r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", TRAPS],
                           capture_output=True, text=True, timeout=120, env=ENV)
        if r.returncode != 0:
            raise SystemExit("cannot create the traps: %s" % r.stderr)
        psql("ALTER SYSTEM SET default_transaction_read_only = on")
        psql("ALTER SYSTEM SET default_transaction_isolation = 'serializable'")
        psql("ALTER SYSTEM SET search_path = kp_trap, pg_catalog")
        psql("ALTER SYSTEM SET session_replication_role = replica")
        for name in TIMEOUTS:
            psql("ALTER SYSTEM SET %s = '1ms'" % name)
        psql("ALTER SYSTEM SET exit_on_error = on")
    else:
        psql("ALTER SYSTEM RESET default_transaction_read_only")
        psql("ALTER SYSTEM RESET default_transaction_isolation")
        psql("ALTER SYSTEM RESET search_path")
        psql("ALTER SYSTEM RESET session_replication_role")
        for name in TIMEOUTS:
            psql("ALTER SYSTEM RESET %s" % name)
        psql("ALTER SYSTEM RESET exit_on_error")
    psql("SELECT pg_reload_conf()")
    time.sleep(2)  # every process reloads at its next wake-up (the workers' within 1 s)
    if not on:
        psql("DROP SCHEMA IF EXISTS kp_trap CASCADE")


def worker_pids():
    out = psql("SELECT backend_type || ' ' || pid FROM pg_stat_activity"
               " WHERE backend_type LIKE 'kafka_pg %'").stdout.splitlines()
    return sorted(out)


def log_size(path):
    return os.path.getsize(path) if path and os.path.exists(path) else 0


def worker_errors(path, since):
    if not path or not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        f.seek(since)
        lines = f.read().decode("utf-8", "replace").splitlines()
    return [ln for ln in lines if "trap sprung" in ln or
            ("kafka_pg" in ln and (" ERROR: " in ln or " FATAL: " in ln or "failed:" in ln))]


def produce(conf, topic, n, txn=False):
    p = Producer(dict(conf, **{"bootstrap.servers": BOOT, "acks": "all", "enable.idempotence": True,
                               "message.timeout.ms": 30000}))
    errors = []

    def cb(err, _msg):
        if err is not None:
            errors.append(err)
    if txn:
        p.init_transactions(30)
        p.begin_transaction()
    for i in range(n):
        p.produce(topic, key=b"k%d" % (i % 10), value=b"v%d" % i, on_delivery=cb)
    if txn:
        p.commit_transaction(30)
    left = p.flush(30)
    return errors, left


def consume(topic, group, n, isolation="read_uncommitted"):
    c = Consumer({"bootstrap.servers": BOOT, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "session.timeout.ms": 10000})
    c.subscribe([topic])
    got = []
    until = time.time() + 40
    while len(got) < n and time.time() < until:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    committed = None
    try:
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    except KafkaException as e:
        committed = "error %s" % e
    c.close()
    return got, committed


def main():
    log = os.environ.get("KP_SERVER_LOG")
    if not log:
        print("# KP_SERVER_LOG is not set (run by hand): the server log check is skipped")
    reload_settings(True)
    try:
        pids0 = worker_pids()
        # the server's search_path, not its other settings
        env = dict(os.environ, PGOPTIONS=OWN)
        live = subprocess.run(["psql", "-X", "-At", "-c", "SELECT 1 = 1"], capture_output=True, text=True,
                              timeout=60, env=env)
        check("the traps are live: a SQL session on the server's search_path springs one (integer = integer)",
              "trap sprung: operator integer = integer" in live.stderr, "(%r)" % live.stderr.strip()[:200])
        since = log_size(log)
        shown = psql("SHOW default_transaction_read_only").stdout.strip()
        check("a SQL session has the server's default: default_transaction_read_only on", shown == "on",
              "(%r)" % shown)

        topic, txn_topic = "sd-%s" % RUN, "sd-txn-%s" % RUN
        admin = AdminClient({"bootstrap.servers": BOOT})
        futs = admin.create_topics([NewTopic(topic, 1, 1), NewTopic(txn_topic, 1, 1)], operation_timeout=30)
        errs = []
        for f in futs.values():
            try:
                f.result(30)
            except Exception as e:  # noqa: BLE001 (any failure is the finding)
                errs.append(str(e))
        check("CreateTopics of two topics", not errs, "(%s)" % errs)
        try:
            admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30)[topic].result(60)
            again = "created"
        except KafkaException as e:
            again = e.args[0]
        check("CreateTopics of one of them again: TOPIC_ALREADY_EXISTS",
              getattr(again, "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS, "(%s)" % again)

        errors, left = produce({}, topic, N)
        check("an idempotent acks=all producer delivers %d records" % N, not errors and left == 0,
              "(%d errors, first %s; %d not delivered)" % (len(errors), errors[:1], left))
        got, committed = consume(topic, "sd-group-%s" % RUN, N)
        check("a group's consumer reads all %d and commits its offsets" % N, len(got) == N and committed == N,
              "(read %d, committed %r)" % (len(got), committed))

        try:
            errors, left = produce({"transactional.id": "sd-tx-%s" % RUN}, txn_topic, N, txn=True)
            txn_ok = not errors and left == 0
            detail = "(%d errors, first %s; %d not delivered)" % (len(errors), errors[:1], left)
        except KafkaException as e:
            txn_ok, detail = False, "(%s)" % e
        check("a transactional producer commits a transaction of %d records" % N, txn_ok, detail)
        got, committed = consume(txn_topic, "sd-txgroup-%s" % RUN, N, "read_committed")
        check("a read_committed consumer reads the transaction's %d records" % N, len(got) == N,
              "(read %d)" % len(got))

        # a topic deleted on the wire takes its partitions and configs with it (foreign keys ON DELETE
        # CASCADE: triggers, which session_replication_role = replica turns off)
        gone = "sd-gone-%s" % RUN
        try:
            admin.create_topics([NewTopic(gone, 2, 1, config={"retention.ms": "123456"})])[gone].result(30)
            admin.delete_topics([gone], operation_timeout=30)[gone].result(30)
            deleted = True
        except Exception as e:  # noqa: BLE001 (any failure is the finding)
            deleted = "(%s)" % e
        left = psql("SELECT (SELECT count(*) FROM kafka.partitions p WHERE NOT EXISTS"
                    " (SELECT 1 FROM kafka.topics t WHERE t.topic_id = p.topic_id)) +"
                    " (SELECT count(*) FROM kafka.topic_config_overrides o WHERE NOT EXISTS"
                    " (SELECT 1 FROM kafka.topics t WHERE t.topic_id = o.topic_id))").stdout.strip()
        check("DeleteTopics of a topic with 2 partitions and a config: no partition or config row is left",
              deleted is True and left == "0", "(deleted %s, rows left %r)" % (deleted, left))

        # a DBA's table lock on the catalog: the workers wait for it, whatever the server's lock_timeout
        holder = subprocess.Popen(["psql", "-X", "-At", "-c", "BEGIN; LOCK TABLE kafka.topics IN ACCESS EXCLUSIVE MODE;"
                                   " SELECT pg_sleep(3); COMMIT"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=ENV)
        until = time.time() + 10
        while time.time() < until and psql("SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock'"
                                           " AND relation = 'kafka.topics'::regclass AND granted").stdout.strip() != "1":
            time.sleep(0.05)
        started = time.time()
        try:
            md = admin.list_topics(topic, timeout=20)
            named = topic in md.topics and md.topics[topic].error is None
            detail = "" if named else "(%s)" % md.topics.get(topic)
        except KafkaException as e:
            named, detail = False, "(%s)" % e
        waited = time.time() - started
        holder_err = holder.communicate(timeout=30)[1]
        check("a Metadata request sent while a SQL session holds kafka.topics waits for it, then names the topic",
              named and waited >= 1.5 and holder.returncode == 0,
              "%s (answered after %.2f s; the lock holder: rc %s %s)" % (detail, waited, holder.returncode,
                                                                          holder_err.strip()[:200]))

        time.sleep(1.5)  # a worker failing would have been restarted by now
        pids1 = worker_pids()
        check("no kafka_pg worker was restarted", pids0 and pids0 == pids1, "(%s, then %s)" % (pids0, pids1))
        if log:
            bad = worker_errors(log, since)
            check("no ERROR or FATAL from kafka_pg's workers and no sprung trap in the server log meanwhile", not bad,
                  "(%d lines: %s)" % (len(bad), bad[:3]))

        r = psql("SELECT * FROM kafka.produce('%s', 'k'::bytea, 'v'::bytea)" % topic)
        check("a SQL session's kafka.produce is refused: cannot execute kafka.produce() in a read-only transaction",
              r.returncode != 0 and "cannot execute kafka.produce() in a read-only transaction" in r.stderr,
              "(rc %d: %s)" % (r.returncode, r.stderr.strip()))
    finally:
        reload_settings(False)
    finish()


if __name__ == "__main__":
    main()
