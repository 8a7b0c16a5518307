"""Exactly-once through kill -9 with librdkafka (confluent-kafka), issue 8.

A consume-transform-produce process (this file with the argument "worker": a subscribed consumer
group with a static member, read_committed, one transaction per poll with the group's offsets
through send_offsets_to_transaction) is killed with SIGKILL at random points and restarted
KAFKA_EOS_KILLS times (default 3; the issue asks for 20), then left to finish. The group's offsets
must reach the input's end, no input record may be missing from the output, and the output read
with read_committed must hold each input record exactly once. KAFKA_EOS_RECORDS (default 3000)
input records. Last line: "N passed, M failed".
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import confluent_kafka
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")


def worker(inp, out, group, txn_id, instance):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "group.instance.id": instance,
                  "session.timeout.ms": 6000, "enable.auto.commit": False, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest"})
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": txn_id, "linger.ms": 5,
                  "transaction.timeout.ms": 20000})
    p.init_transactions(60)
    c.subscribe([inp])
    print("eos worker: started", flush=True)
    while True:
        msgs = [m for m in c.consume(10, 0.5) if not m.error()]
        if not msgs:
            continue
        p.begin_transaction()
        offsets = {}
        for m in msgs:
            p.produce(out, key=m.key(), value=m.value(), partition=m.partition())
            offsets[m.partition()] = m.offset() + 1
        # keep each transaction open a while, so that kills land inside some
        p.flush(30)
        time.sleep(0.06)
        try:
            p.send_offsets_to_transaction([TopicPartition(inp, k, v) for k, v in offsets.items()],
                                          c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
        except KafkaException as e:
            if not e.args[0].txn_requires_abort():
                raise
            print(f"eos worker: aborting: {e}", flush=True)
            p.abort_transaction(30)
            # start the aborted records again from the group's offsets
            for tp in c.committed(c.assignment(), 30):
                c.seek(TopicPartition(inp, tp.partition, tp.offset if tp.offset >= 0 else -2))


def main():
    records = int(os.environ.get("KAFKA_EOS_RECORDS", "3000"))
    kills = int(os.environ.get("KAFKA_EOS_KILLS", "3"))
    run = uuid.uuid4().hex[:8]
    inp, out = f"py-eos-in-{run}", f"py-eos-out-{run}"
    group, txn_id = inp + "-g", inp + "-tx"
    logs = tempfile.mkdtemp(prefix="eos-py-")
    v = confluent_kafka.version()
    print(f"confluent-kafka {v[0] if isinstance(v, tuple) else v} (librdkafka "
          f"{confluent_kafka.libversion()[0]}) against {BOOTSTRAP}: {records} records, {kills} kills, "
          f"worker logs in {logs}", flush=True)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("ok     " if ok else "FAILED ") + what, flush=True)
        if ok:
            passed += 1
        else:
            failed += 1

    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for f in admin.create_topics([NewTopic(inp, 2, 1), NewTopic(out, 2, 1)]).values():
        f.result(60)
    time.sleep(1)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True, "linger.ms": 5})
    for i in range(records):
        p.produce(inp, key=f"k{i}", value=f"v{i}", partition=i % 2)
        if i % 1000 == 999:
            p.poll(0)
    check(p.flush(60) == 0, f"{records} input records produced")
    end = {0: (records + 1) // 2, 1: records // 2}

    def start(n):
        log = open(os.path.join(logs, f"worker-{n}.log"), "w")
        return subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", inp, out, group, txn_id,
                                 inp + "-instance"], stdout=log, stderr=subprocess.STDOUT)

    def committed():
        try:
            r = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)])[group].result(20)
            return {tp.partition: tp.offset for tp in r.topic_partitions if tp.topic == inp}
        except Exception as e:  # noqa: BLE001 - a transient error is retried
            return {"error": str(e)}

    for k in range(kills):
        w = start(k)
        time.sleep(2 + random.random() * 3)
        os.kill(w.pid, signal.SIGKILL)
        w.wait()
        print(f"kill -9 #{k + 1} (exit {w.returncode}): committed {committed()} of {end}", flush=True)
    w = start(kills)
    deadline = time.time() + 180
    c = {}
    while time.time() < deadline and w.poll() is None:
        c = committed()
        if c.get(0) == end[0] and c.get(1) == end[1]:
            break
        time.sleep(0.5)
    check(w.poll() is None, "the last worker is still running")
    os.kill(w.pid, signal.SIGKILL)
    w.wait()
    check(c.get(0) == end[0] and c.get(1) == end[1], f"the group's offsets reach the end: {c}, want {end}")

    def read(level):
        cons = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"eos-py-reader-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "isolation.level": level})
        cons.assign([TopicPartition(out, 0, -2), TopicPartition(out, 1, -2)])
        seen = {}
        idle = time.time()
        while time.time() - idle < 3:
            for m in cons.consume(500, 0.5):
                if m.error():
                    continue
                seen[m.value()] = seen.get(m.value(), 0) + 1
                idle = time.time()
        cons.close()
        return seen

    seen = read("read_committed")
    every = read("read_uncommitted")
    want = [f"v{i}".encode() for i in range(records)]
    missing = [v.decode() for v in want if v not in seen]
    dups = [f"{v.decode()} x{seen[v]}" for v in want if seen.get(v, 0) > 1]
    total = sum(seen.values())
    print(f"output: {total} records read_committed, {sum(every.values())} read_uncommitted "
          f"(the aborted transactions' records)", flush=True)
    check(not missing, f"no record lost{'' if not missing else ': missing ' + str(missing[:10])}")
    check(not dups and total == records,
          f"each record once read_committed: {total} records for {records} inputs"
          f"{'' if not dups else '; duplicates ' + str(dups[:10])}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(*sys.argv[2:7])
    else:
        sys.exit(main())
