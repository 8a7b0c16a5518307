"""test/lib/kafka_clients.py: the librdkafka (confluent-kafka) load of the fault tests.

test/crash/fault_loop.py and test/ha/failover.py (and bench/failover) drive a broker with the same
clients, each run in a process of its own (multiprocessing) until `stop` is set, each writing one
JSON line per event to its file, which the checks of fault_loop.py read:

  producer_proc  an idempotent producer, acks=all, unlimited retries: values "<label>-<n>" (padded
                 with dots), keys spread over the partitions; per delivery report a line
                 {"t": "ack", "p", "o", "v", "ts"}, or "nack" / "fatal" with the error's message;
  consumer_proc  a consumer group member, auto commit off, read_committed, that processes each
                 record (a "proc" line, the file fsynced) before it commits synchronously, and notes
                 each commit the broker acknowledged ("commit") or refused ("commitfail").

"ts" is the client's wall clock in milliseconds when the report arrived (failover.py measures with
it).  A line cut by SIGKILL has no newline: readers skip it.
"""
import json
import os
import random
import time


def producer_proc(label, bootstrap, path, stop, topic, rate=None, conf=None):
    """Produce until stop is set, then flush.  rate: records/s, steady; None: bursts of 20 records
    50 ms apart (about 400 records/s).  conf: settings added to the producer's."""
    from confluent_kafka import Producer
    out = open(path, "a")
    p = Producer(dict({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                       "acks": "all", "linger.ms": 5, "message.timeout.ms": 600000,
                       "reconnect.backoff.max.ms": 1000, "retry.backoff.ms": 100}, **(conf or {})))

    def cb(err, msg):
        ts = int(time.time() * 1000)
        if err is None:
            out.write(json.dumps({"t": "ack", "p": msg.partition(), "o": msg.offset(),
                                  "v": msg.value().decode(), "ts": ts}) + "\n")
        elif err.fatal():
            out.write(json.dumps({"t": "fatal", "msg": str(err), "ts": ts}) + "\n")
        else:
            out.write(json.dumps({"t": "nack", "v": msg.value().decode(), "msg": str(err), "ts": ts}) + "\n")
        out.flush()

    n = 0
    rnd = random.Random(label)
    t0 = time.time()
    while not stop.is_set():
        n += 1
        v = "%s-%d" % (label, n)
        try:
            p.produce(topic, key=b"k%d" % rnd.randint(0, 999), value=v.encode() + b"." * rnd.randint(10, 400),
                      on_delivery=cb)
        except BufferError:
            n -= 1
            p.poll(0.1)
            continue
        p.poll(0)
        if rate is None:
            if n % 20 == 0:
                time.sleep(0.05)
        else:
            wait = t0 + n / float(rate) - time.time()
            if wait > 0:
                p.poll(wait)
    p.flush(120)
    out.close()


def consumer_proc(label, bootstrap, path, stop, topic, group, conf=None):
    """Consume, process (note + fsync), then commit synchronously, until stop is set.  conf:
    settings added to the consumer's."""
    from confluent_kafka import Consumer, KafkaException
    out = open(path, "a")
    c = Consumer(dict({"bootstrap.servers": bootstrap, "group.id": group,
                       "enable.auto.commit": False, "auto.offset.reset": "earliest",
                       "isolation.level": "read_committed", "session.timeout.ms": 10000,
                       "reconnect.backoff.max.ms": 1000}, **(conf or {})))
    c.subscribe([topic])
    while not stop.is_set():
        msgs = c.consume(200, 0.5)
        if not msgs:
            continue
        batch = []
        for m in msgs:
            if m.error():
                continue
            batch.append({"t": "proc", "p": m.partition(), "o": m.offset(),
                          "v": m.value().decode().rstrip(".")})
        for d in batch:
            out.write(json.dumps(d) + "\n")
        out.flush()
        os.fsync(out.fileno())
        try:
            res = c.commit(asynchronous=False)
            for tp in res or []:
                if tp.error is None and tp.offset >= 0:
                    out.write(json.dumps({"t": "commit", "p": tp.partition, "o": tp.offset}) + "\n")
            out.flush()
        except KafkaException as e:
            out.write(json.dumps({"t": "commitfail", "msg": str(e)}) + "\n")
            out.flush()
    try:
        c.close()
    except Exception:  # noqa: BLE001
        pass
    out.close()
