#!/usr/bin/env python3
"""Kafka Connect 4.4 in distributed mode against BOOTSTRAP: two workers of one Connect cluster
(group cx-RUN), exactly.once.source.support=enabled, the connectors of this folder
(src/main/java/kafkapg/connect) on their classpath.

What Connect needs of a broker here: its three internal topics created compacted (the worker
refuses a config topic that is not: DescribeConfigs), the "connect" group protocol (incremental
cooperative assignment, a member's death noticed by its session timeout), a transactional leader
writing the config topic, source tasks writing records and source offsets in one transaction each
poll, their producers fenced when the task count changes (Admin.fenceProducers: InitProducerId for
each old transactional id), read_committed readers of the offsets topic, the sink's consumer group
and its committed offsets, and the REST operations that alter them.

Checks:
- both workers serve their REST API; a source connector with exactly.once.support=required (2
  tasks, N records each) and a sink connector (2 tasks, read_committed) reach RUNNING;
- worker 2 is killed with kill -9 while records flow: worker 1 runs every task of both within 60 s;
- worker 2 comes back; the source is reconfigured to 3 tasks (the old generation fenced) and
  its 3 tasks reach RUNNING;
- the sink's files hold every one of the 3 N records (a sink is at least once: duplicates are
  counted, not failed);
- the topic, read read_committed, holds each record exactly once (a task killed mid-transaction
  left nothing visible, and its successor resumed from the committed source offset);
- pause, resume, restart with tasks, GET offsets of both connectors (the source's says N for
  each task), stop the sink, DELETE its offsets (then its group has no committed offset), and
  DELETE both connectors.

Usage: check.py BOOTSTRAP (CONNECT_CLASSPATH: the workers' classpath; CONNECT_WORKDIR: a new
folder for their configs, logs and the sink's files; CONNECT_N: records per task, default 20000).
Last line: "N passed, M failed".
"""
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

from confluent_kafka import Consumer, TopicPartition

BOOT = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
CP = os.environ["CONNECT_CLASSPATH"]
WORK = os.environ["CONNECT_WORKDIR"]
N = int(os.environ.get("CONNECT_N", "20000"))
RUN = uuid.uuid4().hex[:8]
GROUP, SRC, SINK, TOPIC = "cx-" + RUN, "src-" + RUN, "sink-" + RUN, "cx-data-" + RUN
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else " " + str(detail)[:1500]), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORTS = {1: free_port(), 2: free_port()}


def start_worker(i):
    props = os.path.join(WORK, "w%d.properties" % i)
    with open(props, "w") as f:
        f.write("\n".join([
            "bootstrap.servers=" + BOOT,
            "group.id=" + GROUP,
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic=%s-configs" % GROUP,
            "offset.storage.topic=%s-offsets" % GROUP,
            "status.storage.topic=%s-status" % GROUP,
            "config.storage.replication.factor=1",
            "offset.storage.replication.factor=1",
            "status.storage.replication.factor=1",
            "offset.storage.partitions=5",
            "listeners=http://127.0.0.1:%d" % PORTS[i],
            "rest.advertised.host.name=127.0.0.1",
            "exactly.once.source.support=enabled",
            "offset.flush.interval.ms=1000",
            # a dead worker's tasks go to the others after 5 s (default 5 min)
            "scheduled.rebalance.max.delay.ms=5000",
            "session.timeout.ms=10000",
            "heartbeat.interval.ms=1000",
            ""]))
    out = open(os.path.join(WORK, "w%d.out" % i), "a")
    return subprocess.Popen(["java", "-Xmx384m", "-Dconnect.log=%s/w%d.log" % (WORK, i), "-cp", CP,
                             "org.apache.kafka.connect.cli.ConnectDistributed", props],
                            stdout=out, stderr=subprocess.STDOUT)


def rest(i, method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (PORTS[i], path), method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
            return r.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")[:500]
    except OSError as e:
        return None, str(e)


def wait(cond, seconds):
    until = time.time() + seconds
    while time.time() < until:
        if cond():
            return True
        time.sleep(0.5)
    return False


def status(name):
    s, b = rest(1, "GET", "/connectors/%s/status" % name)
    return b if s == 200 else None


def state(name):
    return ((status(name) or {}).get("connector") or {}).get("state")


def running(name, tasks, on=None):
    st = status(name)
    return st is not None and st["connector"]["state"] == "RUNNING" and len(st["tasks"]) == tasks and \
        all(t["state"] == "RUNNING" and (on is None or t["worker_id"].endswith(":%d" % PORTS[on]))
            for t in st["tasks"])


def sink_values():
    """The values of the sink's lines; a line without its newline is left out (kill -9 can cut the
    last line of the killed worker's file: a torn "0-" once read as a record never sent)."""
    values = []
    for name in glob.glob(os.path.join(WORK, "sink.*")):
        with open(name) as f:
            values += [parts[3] for parts in (line.split() for line in f if line.endswith("\n"))
                       if len(parts) == 4]
    return values


def source_config(tasks):
    return {"connector.class": "kafkapg.connect.SeqSource", "tasks.max": str(tasks), "topic": TOPIC,
            "count": str(N), "exactly.once.support": "required", "transaction.boundary": "poll",
            "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "4"}


def read_committed(want):
    c = Consumer({"bootstrap.servers": BOOT, "group.id": "cx-verify-" + RUN, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got, until, quiet = [], time.time() + 90, None
    while time.time() < until:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
            quiet = None
        elif len(got) >= want:
            quiet = quiet or time.time()
            if time.time() - quiet > 3:  # anything beyond want (a duplicate) has had time to arrive
                break
    c.close()
    return got


def committed_offsets(group):
    c = Consumer({"bootstrap.servers": BOOT, "group.id": group, "enable.auto.commit": False})
    try:
        return [tp for tp in c.committed([TopicPartition(TOPIC, p) for p in range(4)], timeout=30)
                if tp.offset >= 0]
    finally:
        c.close()


def main():
    os.makedirs(WORK, exist_ok=True)
    t0 = time.time()
    workers = {1: start_worker(1), 2: start_worker(2)}
    try:
        for i in (1, 2):
            check("worker %d serves its REST API" % i, wait(lambda: rest(i, "GET", "/connectors")[0] == 200, 180),
                  rest(i, "GET", "/connectors"))
        s, b = rest(1, "PUT", "/connectors/%s/config" % SRC, source_config(2))
        check("PUT a source connector with exactly.once.support=required, 2 tasks", s in (200, 201), (s, b))
        s, b = rest(2, "PUT", "/connectors/%s/config" % SINK,
                    {"connector.class": "kafkapg.connect.LineSink", "tasks.max": "2", "topics": TOPIC,
                     "file": os.path.join(WORK, "sink"), "consumer.override.isolation.level": "read_committed"})
        check("PUT a sink connector, 2 tasks, read_committed", s in (200, 201), (s, b))
        check("the source connector and its 2 tasks are RUNNING", wait(lambda: running(SRC, 2), 90), status(SRC))
        check("the sink connector and its 2 tasks are RUNNING", wait(lambda: running(SINK, 2), 90), status(SINK))

        wait(lambda: len(sink_values()) >= N // 4, 60)
        workers[2].send_signal(signal.SIGKILL)
        workers[2].wait()
        print("# worker 2 killed with kill -9 at %.1f s, %d records in the sink" % (time.time() - t0,
                                                                                   len(sink_values())))
        check("after worker 2's death worker 1 runs every task of both connectors (within 60 s)",
              wait(lambda: running(SRC, 2, on=1) and running(SINK, 2, on=1), 60), (status(SRC), status(SINK)))
        workers[2] = start_worker(2)
        check("worker 2 serves again", wait(lambda: rest(2, "GET", "/connectors")[0] == 200, 180))

        s, b = rest(2, "PUT", "/connectors/%s/config" % SRC, source_config(3))
        check("PUT the source again with 3 tasks (the old tasks' producers fenced)", s in (200, 201), (s, b))
        check("its 3 tasks are RUNNING", wait(lambda: running(SRC, 3), 90), status(SRC))

        want = set("%d-%d" % (t, i) for t in range(3) for i in range(N))
        wait(lambda: len(set(sink_values())) >= len(want), 240)
        values = sink_values()
        check("the sink's files hold every one of the %d records" % len(want), set(values) == want,
              "(%d distinct, %d missing, %d not sent)" % (len(set(values)), len(want - set(values)),
                                                          len(set(values) - want)))
        print("# the sink wrote %d lines, %d of them again (at least once)" % (len(values),
                                                                            len(values) - len(set(values))))
        got = read_committed(len(want))
        check("the topic read read_committed holds each record exactly once", len(got) == len(want) and set(got) == want,
              "(%d records, %d distinct, %d missing)" % (len(got), len(set(got)), len(want - set(got))))

        s, b = rest(1, "PUT", "/connectors/%s/pause" % SRC)
        check("pause the source", s == 202 and wait(lambda: state(SRC) == "PAUSED", 30), (s, b, status(SRC)))
        s, b = rest(1, "PUT", "/connectors/%s/resume" % SRC)
        check("resume it", s == 202 and wait(lambda: running(SRC, 3), 60), (s, b, status(SRC)))
        s, b = rest(2, "POST", "/connectors/%s/restart?includeTasks=true" % SINK)
        check("restart the sink with its tasks", s in (200, 202, 204) and wait(lambda: running(SINK, 2), 60),
              (s, b, status(SINK)))
        s, b = rest(1, "GET", "/connectors/%s/offsets" % SRC)
        offsets = sorted((o["partition"]["task"], o["offset"]["pos"]) for o in (b or {}).get("offsets", [])) \
            if s == 200 else b
        check("GET the source's offsets: %d for each of its 3 tasks" % N,
              offsets == [(str(t), N) for t in range(3)], (s, offsets))
        s, b = rest(1, "GET", "/connectors/%s/offsets" % SINK)
        check("GET the sink's offsets", s == 200 and len(b.get("offsets", [])) > 0, (s, b))
        s, b = rest(1, "PUT", "/connectors/%s/stop" % SINK)
        check("stop the sink", s in (202, 204) and wait(lambda: state(SINK) == "STOPPED", 30), (s, b, status(SINK)))
        tries = 0
        while True:  # Connect answers 500 while the stopped tasks' consumers are still leaving: retry
            tries += 1
            s, b = rest(1, "DELETE", "/connectors/%s/offsets" % SINK)
            if s == 200 or tries == 15:
                break
            time.sleep(2)
        left = committed_offsets("connect-" + SINK)
        check("DELETE the stopped sink's offsets: its group has no committed offset left",
              s == 200 and not left, (s, b, tries, left))
        for i, name in ((1, SRC), (2, SINK)):
            s, b = rest(i, "DELETE", "/connectors/" + name)
            check("DELETE " + name.split("-")[0], s == 204, (s, b))
    finally:
        for w in workers.values():
            if w.poll() is None:
                w.terminate()
        for w in workers.values():
            try:
                w.wait(30)
            except subprocess.TimeoutExpired:
                w.kill()
    if False in results:
        for i in (1, 2):
            path = os.path.join(WORK, "w%d.log" % i)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    errors = [ln.rstrip() for ln in f if " ERROR " in ln]
                print("# worker %d's ERROR lines (%d), the last 10:" % (i, len(errors)))
                for ln in errors[-10:]:
                    print("#   " + ln[:300])
    print("# %.0f s" % (time.time() - t0))
    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    sys.exit(0 if False not in results else 1)


if __name__ == "__main__":
    main()
