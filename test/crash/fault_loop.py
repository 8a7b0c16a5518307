#!/usr/bin/python3
"""test/crash/fault_loop.py: faults under real Kafka client load, nothing lost.

A throwaway cluster with the wire listener, one topic (3 partitions, small
segments so they roll), and real librdkafka clients (confluent-kafka) on the
wire, each in its own process:

  - PRODUCERS idempotent producers, acks=all, unlimited retries; every record
    the broker acknowledged is noted (partition, offset, value) by the
    delivery callback;
  - CONSUMERS members of one consumer group (rebalancing as members are
    killed and replaced), auto commit off, each "processing" each record
    (noting it, flushed to disk) and then committing synchronously, noting
    each commit the broker acknowledged.

Then, for KP_FAULT_CYCLES cycles (default 20; the suite runs 4), one fault
chosen at random, each at a random moment of the load:

  postmaster    kill -9 of the postmaster; the test restarts it (as systemd or
                Patroni would) and nothing else
  listener      kill -9 of one "kafka_pg listener" worker (the postmaster
                restarts every backend by itself)
  resolver      kill -9 of the "kafka_pg resolver" worker (same)
  client        kill -9 of the producer or consumer process, started again
                with a fresh client (its in-flight records are in doubt)
  sockets       every client TCP connection to the listener cut (ss -K)
  flusher       the "kafka_pg WAL flusher" killed with SIGKILL (the postmaster
                restarts every backend) or SIGTERM (it exits cleanly and is
                restarted 1 s later; the listener workers flush themselves
                meanwhile)

After each cycle, once the server accepts a produce again by itself (no
manual step other than the postmaster restart), and the clients have had time
to recover:

  - every acknowledged record is in the log exactly once, at the offset it was
    acknowledged with, with its value; no value is in the log twice (the
    idempotent producer's retries after a fault are not stored again);
  - per producer and partition, acknowledged records are in the log in the
    order they were sent;
  - every record the consumer processed is in the log at that offset with
    that value (no consumer saw a record that was later lost);
  - the group's committed offset per partition never went backwards, and
    never got ahead of processing: every record below it was processed;
  - the server log has no PANIC, assertion failure or crash other than our
    SIGKILLs.

It prints the counts per cycle.  Last line: "fault loop: PASSED" or "FAILED".
Environment: KP_FAULT_CYCLES (20), KP_FAULT_SECONDS (budget, 900), KP_FAULT_PRODUCERS (2),
KP_FAULT_CONSUMERS (2),
KP_FAULT_TAMPER=1 (forges an acknowledgement: the test must then fail).
"""
import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import kafka_clients  # noqa: E402
import kafkapg  # noqa: E402

DB = "postgres"
TOPIC = "fault_t"
GROUP = "fault_g"
PARTS = 3
PRODUCERS = int(os.environ.get("KP_FAULT_PRODUCERS", "2"))
CONSUMERS = int(os.environ.get("KP_FAULT_CONSUMERS", "2"))
FAULTS = ["postmaster", "listener", "resolver", "client", "sockets", "flusher"]
failures = kafkapg.Failures()
fail = failures.fail


def info(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# client processes (test/lib/kafka_clients.py)


def producer_proc(label, kport, path, stop):
    """Idempotent producer: values "<label>-<n>", keys spread over partitions."""
    kafka_clients.producer_proc(label, "127.0.0.1:%d" % kport, path, stop, TOPIC,
                                conf={"socket.timeout.ms": 10000})


def consumer_proc(label, kport, path, stop):
    """Consumer group member: process (note + fsync), then commit synchronously."""
    kafka_clients.consumer_proc(label, "127.0.0.1:%d" % kport, path, stop, TOPIC, GROUP,
                                conf={"socket.timeout.ms": 10000})


class Clients:
    def __init__(self, root, kport):
        self.root, self.kport = root, kport
        self.procs = {}
        self.gen = 0
        self.stop = mp.Event()

    def start(self, role):
        self.gen += 1
        label = "%s%d" % (role, self.gen)
        if role == "prod":
            target = producer_proc
        else:
            target = consumer_proc
        path = os.path.join(self.root, "client-%s.jsonl" % label)
        pr = mp.Process(target=target, args=(label, self.kport, path, self.stop), daemon=True)
        pr.start()
        self.procs[label] = pr
        return label

    def alive(self, role):
        return [k for k, v in self.procs.items() if k.startswith(role) and v.is_alive()]

    def kill_one(self):
        cand = self.alive("prod") + self.alive("cons")
        label = random.choice(cand)
        os.kill(self.procs[label].pid, signal.SIGKILL)
        self.procs[label].join(10)
        self.start("prod" if label.startswith("prod") else "cons")
        return label

    def stop_all(self):
        self.stop.set()
        for pr in self.procs.values():
            pr.join(150)
            if pr.is_alive():
                pr.kill()


# ---------------------------------------------------------------------------
# faults


def worker_pid(conn_port, backend_type):
    try:
        conn = kafkapg.connect(conn_port, DB)
        cur = conn.cursor()
        cur.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = %s", (backend_type,))
        pids = [r[0] for r in cur.fetchall()]
        conn.close()
        return random.choice(pids) if pids else None
    except psycopg2.Error:
        return None


def inject(fault, data, port, kport, clients):
    if fault == "postmaster":
        pm = int(kafkapg.pgcluster("postmaster-pid", data))
        os.kill(pm, signal.SIGKILL)
        kafkapg.wait_gone(pm)
        time.sleep(random.uniform(0.5, 3.0))
        kafkapg.pgcluster("start", data)
        return "killed the postmaster %d, restarted it" % pm
    if fault in ("listener", "resolver"):
        pid = worker_pid(port, "kafka_pg listener" if fault == "listener" else "kafka_pg resolver")
        if pid is None:
            return "no %s worker running: nothing killed" % fault
        os.kill(pid, signal.SIGKILL)
        return "killed the %s worker %d" % (fault, pid)
    if fault == "flusher":
        pid = worker_pid(port, "kafka_pg WAL flusher")
        if pid is None:
            return "no WAL flusher running: nothing killed"
        sig = random.choice([signal.SIGKILL, signal.SIGTERM])
        os.kill(pid, sig)
        return "sent %s to the WAL flusher %d" % (sig.name, pid)
    if fault == "client":
        return "killed client %s (a fresh one replaces it)" % clients.kill_one()
    if fault == "sockets":
        def conns():
            r = subprocess.run(["ss", "-Htn", "state", "established", "( sport = :%d )" % kport],
                               capture_output=True, text=True)
            return set(r.stdout.splitlines())
        before = conns()
        subprocess.run(["ss", "-K", "state", "established", "( sport = :%d )" % kport],
                       capture_output=True, text=True)
        cut = len(before - conns())
        if before and not cut:
            return "could not cut connections here (ss -K needs CAP_NET_ADMIN and INET_DIAG_DESTROY)"
        return "cut %d of %d client connections" % (cut, len(before))
    raise ValueError(fault)


def wait_accepting(port, seconds=120):
    """The server takes a produce again by itself."""
    deadline = time.time() + seconds
    last = None
    while time.time() < deadline:
        try:
            conn = kafkapg.connect(port, DB)
            conn.cursor().execute("SELECT kafka.produce(%s, 'probe'::bytea, 'probe'::bytea)", (TOPIC,))
            conn.close()
            return True
        except psycopg2.Error as e:
            last = e
            time.sleep(0.5)
    fail("the server did not accept a produce within %d s: %s" % (seconds, last))
    return False


# ---------------------------------------------------------------------------
# verification


def read_client_files(root):
    acks, procs, commits, fatals = [], [], [], []
    for name in sorted(os.listdir(root)):
        if not name.startswith("client-"):
            continue
        label = name[len("client-"):-len(".jsonl")]
        with open(os.path.join(root, name)) as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # a line cut by SIGKILL
                d = json.loads(line)
                d["who"] = label
                if d["t"] == "ack":
                    d["v"] = d["v"].rstrip(".")
                    acks.append(d)
                elif d["t"] == "proc":
                    procs.append(d)
                elif d["t"] == "commit":
                    commits.append(d)
                elif d["t"] == "fatal":
                    fatals.append(d)
    if os.environ.get("KP_FAULT_TAMPER") == "1" and acks:
        forged = dict(acks[0])
        forged["v"] = "forged-1"
        acks.append(forged)
    return acks, procs, commits, fatals


def read_log(port):
    """{partition: [(offset, value)]} of the whole topic, read_uncommitted."""
    conn = kafkapg.connect(port, DB)
    cur = conn.cursor()
    out = {}
    for p in range(PARTS):
        rows, nxt = [], 0
        while True:
            cur.execute("SELECT \"offset\", value FROM kafka.fetch(%s, %s, %s, 5000, 'read_uncommitted')",
                        (TOPIC, p, nxt))
            got = cur.fetchall()
            if not got:
                break
            rows.extend((o, bytes(v).decode().rstrip(".")) for o, v in got)
            nxt = got[-1][0] + 1
        out[p] = rows
    conn.close()
    return out


def read_committed(port):
    conn = kafkapg.connect(port, DB)
    cur = conn.cursor()
    cur.execute("SELECT partition, committed_offset FROM kafka.committed_offsets WHERE group_id = %s", (GROUP,))
    committed = dict(cur.fetchall())
    conn.close()
    return committed


def verify(root, port, label, state):
    # In this order: a commit's records were noted before it was sent, and an
    # acknowledgement is noted after the record is stored.
    committed = read_committed(port)
    acks, procs, commits, fatals = read_client_files(root)
    log = read_log(port)
    for d in fatals:
        fail("%s: client %s: fatal error %s" % (label, d["who"], d["msg"]))
    at = {}
    seen = {}
    for p, rows in log.items():
        prev = -1
        for o, v in rows:
            if o <= prev:
                fail("%s: partition %d: offset %d after %d" % (label, p, o, prev))
            prev = o
            at[(p, o)] = v
            if v != "probe":
                if v in seen:
                    fail("%s: value %s twice in the log: %s and %s" % (label, v, seen[v], (p, o)))
                seen[v] = (p, o)
    lost = 0
    for d in acks:
        got = at.get((d["p"], d["o"]))
        if got != d["v"]:
            lost += 1
            if lost <= 10:
                fail("%s: acknowledged %s at %d/%d, log has %r" % (label, d["v"], d["p"], d["o"], got))
    if lost > 10:
        fail("%s: %d acknowledged records missing in all" % (label, lost))
    # order per producer and partition: sequence numbers increase with offsets
    last = {}
    for d in sorted(acks, key=lambda d: (d["p"], d["o"])):
        who, n = d["v"].rsplit("-", 1)
        key = (who, d["p"])
        if key in last and int(n) < last[key]:
            fail("%s: %s acknowledged out of order in partition %d" % (label, d["v"], d["p"]))
        last[key] = int(n)
    bad = 0
    processed = {}
    for d in procs:
        processed.setdefault(d["p"], set()).add(d["o"])
        if at.get((d["p"], d["o"])) != d["v"]:
            bad += 1
            if bad <= 10:
                fail("%s: consumer processed %s at %d/%d, log has %r" % (label, d["v"], d["p"], d["o"],
                                                                         at.get((d["p"], d["o"]))))
    for p, c in committed.items():
        if c < state["committed"].get(p, -1):
            fail("%s: committed offset of partition %d went back: %d -> %d" % (label, p, state["committed"][p], c))
        state["committed"][p] = max(c, state["committed"].get(p, -1))
        missing = [o for o, v in log.get(p, []) if o < c and v != "probe" and o not in processed.get(p, set())
                   and not v.startswith("probe")]
        # records below the commit that no consumer processed: commit ahead of processing
        if missing:
            fail("%s: partition %d committed at %d but %d records below it were never processed (first %d)"
                 % (label, p, c, len(missing), missing[0]))
    info("%s: %d acknowledged, %d in the log, %d processed, %d commits acknowledged, committed %s" % (
        label, len(acks), sum(len(r) for r in log.values()), len(procs), len(commits),
        " ".join("%d:%d" % kv for kv in sorted(committed.items()))))
    return len(acks), len(procs)


def run():
    cluster = kafkapg.ScratchCluster("fault_loop", 56632, 29632)
    root, data, port, kport = cluster.root, cluster.data, cluster.port, cluster.kport
    cycles = int(os.environ.get("KP_FAULT_CYCLES", "20"))
    budget = float(os.environ.get("KP_FAULT_SECONDS", "900"))
    t0 = time.time()
    env = {"KP_KAFKA_DB": DB}
    state = {"committed": {}}
    clients = None
    try:
        cluster.start(DB, env)
        conn = kafkapg.connect(port, DB)
        kafkapg.create_topic_small_segments(conn, TOPIC, PARTS)
        conn.close()
        clients = Clients(root, kport)
        for _ in range(PRODUCERS):
            clients.start("prod")
        for _ in range(CONSUMERS):
            clients.start("cons")
        time.sleep(5)
        order = [FAULTS[i % len(FAULTS)] for i in range(cycles)]
        random.shuffle(order)
        done = []
        for i, fault in enumerate(order, 1):
            if time.time() - t0 > budget:
                info("time budget of %.0f s spent after %d cycles" % (budget, i - 1))
                break
            label = "cycle %d (%s)" % (i, fault)
            time.sleep(random.uniform(1.0, 4.0))
            info("%s: %s" % (label, inject(fault, data, port, kport, clients)))
            done.append(fault)
            if not wait_accepting(port):
                break
            time.sleep(random.uniform(4.0, 8.0))  # the clients reconnect and carry on
            verify(root, port, label, state)
            if failures:
                break
        clients.stop_all()
        clients = None
        n_acks, n_procs = verify(root, port, "final", state)
        info("faults injected: %s; %.0f s" % (", ".join("%s %d" % (f, done.count(f)) for f in FAULTS),
                                               time.time() - t0))
        if n_acks == 0 or n_procs == 0:
            fail("the clients made no progress (%d acknowledged, %d processed)" % (n_acks, n_procs))
        for line in cluster.log_problems().splitlines()[:20]:
            fail("server log: %s" % line)
    finally:
        if clients is not None:
            clients.stop_all()
        kafkapg.crash_test_cleanup(cluster, failures)


def main():
    kafkapg.crash_test_main(run, failures, "fault loop")


if __name__ == "__main__":
    main()
