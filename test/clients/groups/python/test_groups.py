"""Consumer-group tests for the Python clients against $KAFKA_BOOTSTRAP.

    python3 test_groups.py confluent            confluent-kafka, group.protocol=classic
    python3 test_groups.py confluent-consumer   confluent-kafka >= 2.4 (KIP-848), group.protocol=consumer
    python3 test_groups.py kafka-python         kafka-python
    python3 test_groups.py SUITE NAME...        only these tests of the suite (e.g. session_expires_on_time)

Topics are created and filled with confluent-kafka's producer (both Debian's python3 and the
virtualenv have it). Last line: "N passed, M failed".
"""
import os
import sys
import threading
import time
import traceback
import uuid

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
RUN = uuid.uuid4().hex[:8]
SETTLE = 40.0
TEST_TIMEOUT = 150.0  # a test still running then (a client call that never returns) fails the suite

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(name, partitions):
    a = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for f in a.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    deadline = time.time() + 30
    while time.time() < deadline:
        md = a.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions and \
                all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {name} not ready")


def produce(name, partitions, n, prefix="k"):
    p = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "linger.ms": 5})
    for i in range(n):
        p.produce(name, key=f"{prefix}{i}".encode(), value=f"value-{i}".encode(), partition=i % partitions)
    left = p.flush(30)
    assert left == 0, f"{left} records not delivered"


class Member(threading.Thread):
    """A group member polling in its own thread. client.make() gives an object with
    poll() -> [(key, partition, offset)], commit(), assignment() -> set of partitions, close()."""

    def __init__(self, client, group, topic, commit=True, stop_after=None):
        super().__init__(daemon=True)
        self.client, self.group, self.topic = client, group, topic
        self.commit, self.stop_after = commit, stop_after
        self.assignment = set()
        self.records = []
        self.error = None
        self.running = True
        self.start()

    def run(self):
        try:
            c = self.client.make(self.group, self.topic)
            try:
                while self.running:
                    recs = c.poll()
                    self.records.extend(recs)
                    if self.commit and recs:
                        c.commit()
                    self.assignment = c.assignment()
                    if self.stop_after is not None and len(self.records) >= self.stop_after:
                        break
            finally:
                c.close()
        except Exception as e:  # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"
            traceback.print_exc()

    def stop(self):
        self.running = False
        self.join(60)

    def __repr__(self):
        return f"{{parts={sorted(self.assignment)} recs={len(self.records)}{' error=' + self.error if self.error else ''}}}"


def wait_for(what, cond, state, timeout=SETTLE):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; now: {state()}")
        time.sleep(0.05)


# ---- clients


class Confluent:
    def __init__(self, protocol):
        self.protocol = protocol

    def make(self, group, topic):
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": BOOTSTRAP, "group.id": group, "auto.offset.reset": "earliest",
                "enable.auto.commit": False}
        if self.protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
        c = Consumer(conf)
        c.subscribe([topic])

        class W:
            def poll(self_):
                msgs = c.consume(50, 0.1)
                out = []
                for m in msgs:
                    if m.error():
                        if m.error().code() == -191:  # _PARTITION_EOF
                            continue
                        raise RuntimeError(str(m.error()))
                    out.append((m.key().decode(), m.partition(), m.offset()))
                return out

            def commit(self_):
                c.commit(asynchronous=False)

            def assignment(self_):
                return {tp.partition for tp in c.assignment()}

            def close(self_):
                c.close()
        return W()


class KafkaPython:
    def make(self, group, topic):
        from kafka import KafkaConsumer
        c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=1000,
                          max_poll_records=50)
        c.subscribe([topic])

        class W:
            def poll(self_):
                out = []
                for recs in c.poll(timeout_ms=100).values():
                    out.extend((r.key.decode(), r.partition, r.offset) for r in recs)
                return out

            def commit(self_):
                c.commit()

            def assignment(self_):
                return {tp.partition for tp in c.assignment()}

            def close(self_):
                c.close()
        return W()


# ---- tests


def t_split(client, name):
    """3 members on 6 partitions (2 members on 4 for kafka-python's group of 2) split evenly."""
    n, parts = (2, 4) if isinstance(client, KafkaPython) else (3, 6)
    topic = f"grp-py-split-{name}-{RUN}"
    create_topic(topic, parts)
    ms = [Member(client, f"g-{topic}", topic, commit=False) for _ in range(n)]

    def even():
        sets = [m.assignment for m in ms]
        return all(len(s) == parts // n for s in sets) and len(set().union(*sets)) == parts
    try:
        wait_for(f"{parts // n} partitions each", even, lambda: ms)
        time.sleep(2)
        assert even(), f"still even two seconds later: {ms}"
        assert not any(m.error for m in ms), f"errors: {ms}"
    finally:
        for m in ms:
            m.stop()


def t_resume(client, name):
    """A consumer commits after each poll and stops at ~150 of 300 records; a second one of the group
    resumes: every key read exactly once."""
    topic = f"grp-py-resume-{name}-{RUN}"
    create_topic(topic, 3)
    produce(topic, 3, 300)
    group = f"g-{topic}"
    first = Member(client, group, topic, stop_after=150)
    first.join(SETTLE)
    assert not first.is_alive(), f"first consumer did not stop: {first}"
    assert first.error is None, f"first consumer: {first.error}"
    n1 = len(first.records)
    assert 150 <= n1 < 300, f"first read {n1}"
    second = Member(client, group, topic)
    try:
        wait_for("the rest of 300", lambda: n1 + len(second.records) >= 300, lambda: second)
        time.sleep(2)
    finally:
        second.stop()
    assert second.error is None, f"second consumer: {second.error}"
    counts = {}
    for k, _, _ in first.records + second.records:
        counts[k] = counts.get(k, 0) + 1
    dup = sorted(k for k, c in counts.items() if c != 1)
    assert not dup, f"read more than once (first {n1}, second {len(second.records)}): {dup[:10]}"
    assert len(counts) == 300, f"{len(counts)} distinct keys read"


def t_group_of_two_commits_and_resumes(client, name):
    """Two members share 4 partitions, read and commit all 200 records and close; a new member of
    the group finds nothing left, and reads exactly the 50 produced afterwards."""
    topic = f"grp-py-two-{name}-{RUN}"
    create_topic(topic, 4)
    produce(topic, 4, 200)
    group = f"g-{topic}"
    ms = [Member(client, group, topic) for _ in range(2)]
    try:
        wait_for("200 records", lambda: sum(len(m.records) for m in ms) >= 200, lambda: ms)
        wait_for("2/2 split", lambda: all(len(m.assignment) == 2 for m in ms), lambda: ms)
        time.sleep(1)
    finally:
        for m in ms:
            m.stop()
    keys = [r[0] for m in ms for r in m.records]
    assert len(keys) == 200 and len(set(keys)) == 200, f"{len(keys)} records, {len(set(keys))} keys"
    assert all(m.records for m in ms), f"both members read: {ms}"
    produce(topic, 4, 50, prefix="late")
    m = Member(client, group, topic)
    try:
        wait_for("the 50 new records", lambda: len(m.records) >= 50, lambda: m)
        time.sleep(2)
    finally:
        m.stop()
    keys = sorted(r[0] for r in m.records)
    assert keys == sorted(f"late{i}" for i in range(50)), f"resumed with {len(keys)} records: {keys[:5]}..."


SESSION_MEMBER = """
import sys, time
from kafka import KafkaConsumer
c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2], auto_offset_reset="earliest",
                  enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=100)
c.subscribe([sys.argv[3]])
while True:
    c.poll(timeout_ms=100)
    if c.assignment():
        print("ASSIGNED", flush=True)
        break
while True:
    c.poll(timeout_ms=100)
"""


def group_members(admin, groups):
    """The members of each group, with kafka-python 2 (describe_consumer_groups) or 3 (describe_groups)."""
    if hasattr(admin, "describe_consumer_groups"):
        return [d.members for d in admin.describe_consumer_groups(groups)]
    r = admin.describe_groups(groups)
    return [r[g]["members"] for g in groups]


def t_session_expires_on_time(client, name):
    """A member that stops heartbeating (kill -9) is gone from its group at its session timeout
    (6 s), not up to a second later: three members of three groups, killed a third of a second
    apart so that a once-a-second sweep would be late for at least one of them by 2/3 s, each
    leave their group empty within 6 s + 0.4 s (they heartbeat every 100 ms)."""
    import signal
    import subprocess
    from kafka.admin import KafkaAdminClient
    session_ms, margin_ms = 6000, 400
    topic = f"grp-py-expiry-{name}-{RUN}"
    create_topic(topic, 1)
    groups = [f"g-{topic}-{i}" for i in range(3)]
    procs = [subprocess.Popen([sys.executable, "-c", SESSION_MEMBER, BOOTSTRAP, g, topic],
                              stdout=subprocess.PIPE, text=True) for g in groups]
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ASSIGNED", "a member did not get its partition"
        killed = []
        for p in procs:
            p.send_signal(signal.SIGKILL)
            killed.append(time.time())
            time.sleep(0.333)
        gone = [None] * len(groups)
        deadline = time.time() + session_ms / 1000 + 10
        while None in gone and time.time() < deadline:
            for i, members in enumerate(group_members(admin, groups)):
                if gone[i] is None and not members:
                    gone[i] = time.time()
            time.sleep(0.02)
        took = [round((g - k) * 1000) if g else None for g, k in zip(gone, killed)]
        print(f"  session {session_ms} ms: members gone {took} ms after kill -9", flush=True)
        assert None not in took, f"a member was never removed: {took}"
        assert all(session_ms - 300 <= t <= session_ms + margin_ms for t in took), \
            f"removed {took} ms after kill -9, not within {session_ms} ms + {margin_ms} ms"
    finally:
        for p in procs:
            p.kill()
            p.wait()
        admin.close()


SUITES = {
    "confluent": (lambda: Confluent("classic"), [t_split, t_resume]),
    "confluent-consumer": (lambda: Confluent("consumer"), [t_split, t_resume]),
    "kafka-python": (KafkaPython, [t_split, t_resume, t_group_of_two_commits_and_resumes,
                                   t_session_expires_on_time]),
}


def main():
    suite = sys.argv[1]
    make, tests = SUITES[suite]
    if len(sys.argv) > 2:
        tests = [t for t in tests if t.__name__[2:] in sys.argv[2:]]
    if suite == "confluent-consumer":
        import confluent_kafka
        v = tuple(int(x) for x in confluent_kafka.libversion()[0].split(".")[:2])
        if v < (2, 4):
            print(f"librdkafka {confluent_kafka.libversion()[0]} has no group.protocol=consumer")
            print("0 passed, 0 failed", flush=True)
            os._exit(0)
    client = make()
    passed = failed = 0
    for i, t in enumerate(tests):
        t0 = time.time()
        result = []

        def body():
            try:
                t(client, suite.replace("-", ""))
                result.append(None)
            except Exception as e:  # noqa: BLE001
                result.append(f"{type(e).__name__}: {e}")
        th = threading.Thread(target=body, daemon=True)
        th.start()
        th.join(TEST_TIMEOUT)
        if not result:
            print(f"FAIL {suite} {t.__name__[2:]}: still running after {TEST_TIMEOUT:.0f}s; not running the rest", flush=True)
            print(f"{passed} passed, {failed + len(tests) - i} failed", flush=True)
            os._exit(1)
        if result[0] is None:
            passed += 1
            print(f"ok   {suite} {t.__name__[2:]} ({time.time() - t0:.1f}s)", flush=True)
        else:
            failed += 1
            print(f"FAIL {suite} {t.__name__[2:]} ({time.time() - t0:.1f}s): {result[0]}", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    os._exit(1 if failed else 0)  # not sys.exit: a consumer left open must not hang the interpreter's exit


if __name__ == "__main__":
    main()
