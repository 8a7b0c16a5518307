#!/usr/bin/python3
"""test/ha/failover.py: kill -9 the primary's postmaster under Patroni, again and again, nothing lost.

scripts/ha-cluster.sh starts etcd and three Patroni nodes on loopback, each a
PostgreSQL with kafka_pg preloaded (kafka.node_id 1/2/3, each its own Kafka
listener) and synchronous_mode on (one synchronous standby).  On it, one
topic (3 partitions, small segments) and real clients, each in its own
process, all bootstrapping with the three listeners:

  - an idempotent librdkafka producer (confluent-kafka) and an idempotent Java
    producer (kafka-clients 4.4, test/ha/HaClient.java), acks=all, unlimited
    retries; every acknowledged record is noted (partition, offset, value,
    the client's wall clock);
  - a consumer group of a librdkafka and a Java member, auto commit off,
    read_committed, each processing (noting, fsync) and then committing
    synchronously.

Then KP_HA_KILLS times (default 10; the suite runs 3): wait until the cluster
is whole (a primary with its listener, both standbys streaming), let the load
run a few seconds, kill -9 the primary's postmaster and nothing else, and let
Patroni fail over (no manual step: no client is restarted or reconfigured).
Once Patroni has promoted a standby and the killed node has rejoined as a
standby (pg_rewind or reinit by Patroni), the checks of
test/crash/fault_loop.py run against the new primary:

  - every acknowledged record is in the log exactly once, at the offset it was
    acknowledged with, with its value; per producer and partition in order;
  - every record a consumer processed is in the log at that offset with that
    value (no consumer saw a record that was later lost);
  - the group's committed offsets never went backwards and never got ahead of
    processing;
and both producers must have had records acknowledged after the failover
(the clients carried on by themselves).  No server log may have a PANIC or an
assertion failure.

It measures, per kill, the end-to-end failover time: from the kill to the first
acks=all acknowledgement a producer receives afterwards (each client family
separately), and prints the median and spread.  Last line: "ha failover: PASSED"
or "FAILED".

Environment: KP_HA_KILLS (10), KP_HA_SECONDS (budget, 1500), KP_HA_PG_PORT (55470),
KP_HA_KAFKA_PORT (19470), KP_HA_ETCD_PORT (23790), KP_HA_REST_PORT (28470),
KP_HA_SYNC (on; off runs Patroni with asynchronous standbys), KP_HA_JAVA (1; 0 leaves the
Java clients out), KP_HA_KILL (postmaster; node kills the primary's Patroni too, as when its machine
dies), KP_HA_RESULT (a file the failover times are written to, JSON).
"""
import base64
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "crash"))
import kafka_clients  # noqa: E402
import kafkapg  # noqa: E402
import fault_loop  # noqa: E402  (its checks: verify, read_log, read_committed)

TOPIC = "ha_t"
GROUP = "ha_g"
PARTS = 3
DB = "postgres"
HA = os.path.join(REPO, "scripts", "ha-cluster.sh")
LOG4J = os.path.join(REPO, "test", "clients", "kafka", "log4j2-tools.properties")  # warnings to stderr
# postmaster: kill -9 of the primary's postmaster (its Patroni sees it and fails over at once);
# node: kill -9 of the primary's Patroni and postmaster together, as when its machine dies (the
# others wait for the leader key to expire, ttl), then the node's Patroni is started again
KILL = os.environ.get("KP_HA_KILL", "postmaster")
fault_loop.TOPIC, fault_loop.GROUP, fault_loop.PARTS, fault_loop.DB = TOPIC, GROUP, PARTS, DB
failures = fault_loop.failures
fail = fault_loop.fail
info = kafkapg.info


# ---------------------------------------------------------------------------
# the cluster


def port_free(port):
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_block(start, n, taken=()):
    """The first port >= start such that it and the n-1 after it are free (and not in taken)."""
    p = start
    while p + n < 65535:
        if all(port_free(q) and q not in taken for q in range(p, p + n)):
            return p
        p += 1
    raise RuntimeError("no %d free ports from %d" % (n, start))


class Cluster:
    def __init__(self, root):
        self.dir = os.path.join(root, "cluster")
        pg = free_block(int(os.environ.get("KP_HA_PG_PORT", "55470")), 3)
        kafka = free_block(int(os.environ.get("KP_HA_KAFKA_PORT", "19470")), 3, range(pg, pg + 3))
        etcd = free_block(int(os.environ.get("KP_HA_ETCD_PORT", "23790")), 2)
        rest = free_block(int(os.environ.get("KP_HA_REST_PORT", "28470")), 3)
        self.env = dict(os.environ,
                        HA_DIR=self.dir,
                        HA_PG_PORT=str(pg),
                        HA_KAFKA_PORT=str(kafka),
                        HA_ETCD_PORT=str(etcd),
                        HA_REST_PORT=str(rest),
                        HA_SYNC=os.environ.get("KP_HA_SYNC", "on"),
                        HA_DB=DB)
        self.pg = int(self.env["HA_PG_PORT"])
        self.kafka = int(self.env["HA_KAFKA_PORT"])
        self.rest = int(self.env["HA_REST_PORT"])
        self.etcd = int(self.env["HA_ETCD_PORT"])
        self.bootstrap = ",".join("127.0.0.1:%d" % (self.kafka + i) for i in range(3))

    def ha(self, *args, timeout=600):
        return subprocess.run(["bash", HA] + list(args), env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def start(self):
        r = self.ha("start")
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            raise RuntimeError("ha-cluster.sh start failed: %s" % r.stderr[-3000:])

    def stop(self):
        r = self.ha("stop", timeout=300)
        if r.returncode != 0:
            info("ha-cluster.sh stop: %s" % r.stderr[-1000:])

    def rest_get(self, node, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.rest + node - 1, path), timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, ""
        except Exception:  # noqa: BLE001
            return None, ""

    def primary(self):
        for n in (1, 2, 3):
            if self.rest_get(n, "/primary")[0] == 200:
                return n
        return None

    def pg_port(self, n):
        return self.pg + n - 1

    def kafka_port(self, n):
        return self.kafka + n - 1

    def postmaster_pid(self, n):
        with open(os.path.join(self.dir, "node%d" % n, "data", "postmaster.pid")) as f:
            return int(f.readline())

    def patroni_pid(self, n):
        """The Patroni process of node n (the child of the runuser that started it)."""
        with open(os.path.join(self.dir, "patroni%d.pid" % n)) as f:
            kids = children_of(int(f.read()))
        if not kids:
            raise RuntimeError("no Patroni process for node%d" % n)
        return kids[0]

    def wait_healthy(self, seconds):
        return self.ha("wait-healthy", str(seconds), timeout=seconds + 60).returncode == 0

    def status(self):
        return self.ha("status").stdout

    def logs(self):
        out = []
        for n in (1, 2, 3):
            d = os.path.join(self.dir, "node%d" % n, "pglog")
            if os.path.isdir(d):
                out += [os.path.join(d, f) for f in sorted(os.listdir(d))]
        return out


def port_open(port):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


# ---------------------------------------------------------------------------
# librdkafka clients (test/lib/kafka_clients.py, as test/crash/fault_loop.py's), with the
# bootstrap list; each acknowledgement's time is noted ("ts")


def rd_producer(label, bootstrap, path, stop):
    kafka_clients.producer_proc(label, bootstrap, path, stop, TOPIC, rate=200)


def rd_consumer(label, bootstrap, path, stop):
    kafka_clients.consumer_proc(label, bootstrap, path, stop, TOPIC, GROUP)


# ---------------------------------------------------------------------------
# Java clients (kafka-clients 4.4): test/ha/HaClient.java, compiled here


def java_classpath(root):
    if os.environ.get("KP_HA_JAVA", "1") == "0":
        return None
    return kafkapg.compile_java(root, os.path.join(HERE, "HaClient.java"))


class Clients:
    def __init__(self, root, bootstrap, java_cp):
        self.root, self.bootstrap, self.java_cp = root, bootstrap, java_cp
        self.stop = mp.Event()
        self.stopfile = os.path.join(root, "stop")
        self.procs = []
        self.java = []

    def path(self, label):
        return os.path.join(self.root, "client-%s.jsonl" % label)

    def start(self):
        for label, target in (("rdprod1", rd_producer), ("rdcons1", rd_consumer)):
            pr = mp.Process(target=target, args=(label, self.bootstrap, self.path(label), self.stop), daemon=True)
            pr.start()
            self.procs.append(pr)
        if self.java_cp:
            for args in (["produce", self.bootstrap, TOPIC, "jprod1", self.path("jprod1"), self.stopfile, "200"],
                         ["consume", self.bootstrap, TOPIC, GROUP, self.path("jcons1"), self.stopfile]):
                log = open(os.path.join(self.root, "java-%s.log" % args[0]), "a")
                self.java.append(subprocess.Popen(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1",
                                                   "-Dlog4j2.configurationFile=" + LOG4J,
                                                   "-cp", self.java_cp, "HaClient"] + args,
                                                  stdout=log, stderr=subprocess.STDOUT))

    def producers(self):
        return ["rdprod1"] + (["jprod1"] if self.java_cp else [])

    def check_alive(self):
        for pr in self.procs:
            if not pr.is_alive():
                fail("a librdkafka client process exited (%s)" % pr.exitcode)
        for j in self.java:
            if j.poll() is not None:
                fail("a Java client exited with %s (see %s/java-*.log)" % (j.returncode, self.root))

    def stop_all(self):
        self.stop.set()
        open(self.stopfile, "w").close()
        for pr in self.procs:
            pr.join(150)
            if pr.is_alive():
                pr.kill()
        for j in self.java:
            try:
                j.wait(150)
            except subprocess.TimeoutExpired:
                j.kill()


def acks_since(path, ts_ms, parts=None):
    """The time (ms) of the first acknowledgement noted in path at or after ts_ms (of a partition
    in parts, if given), or None."""
    first = None
    try:
        with open(path) as f:
            for line in f:
                if not line.endswith("\n") or '"ack"' not in line:
                    continue
                d = json.loads(line)
                if d["t"] == "ack" and d["ts"] >= ts_ms and (parts is None or d["p"] in parts) \
                        and (first is None or d["ts"] < first):
                    first = d["ts"]
    except FileNotFoundError:
        pass
    return first


def spread(xs):
    xs = sorted(xs)
    if not xs:
        return "no samples"
    return "median %.2f s, min %.2f, max %.2f, n=%d" % (statistics.median(xs), xs[0], xs[-1], len(xs))


# ---------------------------------------------------------------------------
# what a failover is made of, seen from outside


LEADER_KEY = "/service/kafka_pg_ha/leader"  # Patroni's leader key (namespace /service/, scope kafka_pg_ha)


class Timeline(threading.Thread):
    """From the kill until stopped, every 50 ms: who holds Patroni's leader key in etcd (gone: the
    lease expired, or the dead primary's Patroni released it), and on every node whether PostgreSQL
    is in recovery, the kafka.leader row (node id @ leader epoch: what a standby's Metadata names as
    leader) and its WAL receiver's status.  Each change is noted once, with the time since the kill
    (self.events), and the first time of each phase (self.first)."""

    def __init__(self, cluster, old, t_kill):
        super().__init__(daemon=True)
        self.cluster, self.old, self.t_kill = cluster, old, t_kill
        self.halt = threading.Event()
        self.events = []
        self.first = {}
        self.new = None

    def leader_key(self):
        body = json.dumps({"key": base64.b64encode(LEADER_KEY.encode()).decode()}).encode()
        req = urllib.request.Request("http://127.0.0.1:%d/v3/kv/range" % self.cluster.etcd, data=body,
                                     method="POST")
        with urllib.request.urlopen(req, timeout=1) as r:
            kvs = json.load(r).get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def mark(self, key):
        if key not in self.first:
            self.first[key] = time.time() - self.t_kill

    def run(self):
        conns, last = {}, {}
        while not self.halt.is_set():
            now = time.time() - self.t_kill
            try:
                holder = self.leader_key()
            except Exception:  # noqa: BLE001
                holder = "?"
            if holder != last.get("key"):
                last["key"] = holder
                self.events.append((now, "leader key: %s" % holder))
                if holder is None:
                    self.mark("key_gone")
                elif holder not in ("?", "node%d" % self.old):
                    self.mark("key_taken")
                    self.new = int(holder[4:])
            for n in (1, 2, 3):
                try:
                    if n not in conns:
                        conns[n] = psycopg2.connect(host="127.0.0.1", port=self.cluster.pg_port(n), user="postgres",
                                                    dbname=DB, connect_timeout=1)
                        conns[n].autocommit = True
                    cur = conns[n].cursor()
                    cur.execute("SELECT pg_is_in_recovery(), (SELECT node_id || '@' || leader_epoch FROM kafka.leader), "
                                "(SELECT status FROM pg_stat_wal_receiver), "
                                "current_setting('synchronous_standby_names')")
                    rec, row, wal, ssn = cur.fetchone()
                    state = "%s, kafka.leader %s, WAL receiver %s%s" % (
                        "standby" if rec else "primary", row, wal,
                        "" if rec else ", synchronous_standby_names '%s'" % ssn)
                except psycopg2.Error:
                    c = conns.pop(n, None)
                    if c is not None:
                        try:
                            c.close()
                        except psycopg2.Error:
                            pass
                    state = rec = row = ssn = None
                if state != last.get(n):
                    last[n] = state
                    self.events.append((time.time() - self.t_kill, "node%d: %s" % (n, state or "down")))
                if state is None or n == self.old:
                    continue
                if not rec:
                    self.mark("promoted")
                    if row and row.startswith("%d@" % n):
                        self.mark("published")
                    if ssn:
                        self.mark("sync_standby")  # acks=all waits for a standby again
                elif self.new is not None and n != self.new and row and row.startswith("%d@" % self.new) \
                        and wal == "streaming":
                    self.mark("standby_row")  # the other standby's Metadata names the new leader
            time.sleep(0.05)
        for c in conns.values():
            try:
                c.close()
            except psycopg2.Error:
                pass

    def stop(self):
        self.halt.set()
        self.join(10)


PHASES = [("key_gone", "leader key gone from etcd (lease expired or released)"),
          ("key_taken", "leader key taken by the new primary's Patroni"),
          ("promoted", "new primary out of recovery (pg_is_in_recovery false)"),
          ("published", "new primary's kafka.leader row names it"),
          ("standby_row", "the other standby streams from it and its kafka.leader names it"),
          ("sync_standby", "new primary has a synchronous standby again")]


# ---------------------------------------------------------------------------


def children_of(pid):
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


def run():
    root = kafkapg.make_tmp("ha_failover")
    kills = int(os.environ.get("KP_HA_KILLS", "10"))
    budget = float(os.environ.get("KP_HA_SECONDS", "1500"))
    t0 = time.time()
    cluster = Cluster(root)
    clients = None
    times = {}  # producer label -> [seconds]
    promote_times = []
    phases = {}  # Timeline phase -> [seconds]
    state = {"committed": {}}
    try:
        java_cp = java_classpath(root)
        cluster.start()
        pri = cluster.primary()
        conn = kafkapg.connect(cluster.pg_port(pri), DB)
        kafkapg.create_topic_small_segments(conn, TOPIC, PARTS)
        conn.close()
        clients = Clients(root, cluster.bootstrap, java_cp)
        clients.start()
        time.sleep(8)
        done = 0
        for i in range(1, kills + 1):
            if time.time() - t0 > budget:
                info("time budget of %.0f s spent after %d kills" % (budget, done))
                break
            label = "kill %d" % i
            if not cluster.wait_healthy(300):
                fail("%s: the cluster is not whole (primary, listener, two streaming standbys) after 300 s:\n%s"
                     % (label, cluster.status()))
                break
            time.sleep(random.uniform(3.0, 6.0))  # load on the whole cluster
            old = cluster.primary()
            if old is None:
                fail("%s: no primary" % label)
                break
            pm = cluster.postmaster_pid(old)
            kids = children_of(pm)
            patroni = cluster.patroni_pid(old) if KILL == "node" else None
            jlog = os.path.join(root, "java-produce.log")
            jlog_at = os.path.getsize(jlog) if os.path.exists(jlog) else 0
            t_kill = time.time()
            timeline = Timeline(cluster, old, t_kill)
            timeline.start()
            if patroni:
                os.kill(patroni, signal.SIGKILL)  # the node dies: its Patroni with its PostgreSQL
            os.kill(pm, signal.SIGKILL)
            # the old primary's processes are gone (its listener can answer no one after that)
            while any(os.path.exists("/proc/%d" % k) for k in kids) and time.time() - t_kill < 30:
                time.sleep(0.01)
            t_gone = time.time()
            # Patroni promotes another node; its listener starts
            new = None
            while time.time() - t_kill < 120:
                new = cluster.primary()
                if new is not None and new != old and port_open(cluster.kafka_port(new)):
                    break
                time.sleep(0.05)
            else:
                fail("%s: no new primary with a Kafka listener 120 s after killing node%d" % (label, old))
                break
            t_promoted = time.time()
            promote_times.append(t_promoted - t_kill)
            # every producer gets an acknowledgement again, by itself
            waiting = set(clients.producers())
            firsts = {}
            while waiting and time.time() - t_kill < 180:
                for w in list(waiting):
                    ts = acks_since(clients.path(w), int(t_gone * 1000))
                    if ts is not None:
                        firsts[w] = ts / 1000.0 - t_kill
                        waiting.discard(w)
                time.sleep(0.2)
            for w in sorted(waiting):
                fail("%s: producer %s had no record acknowledged within 180 s of the kill" % (label, w))
            for w, s in firsts.items():
                times.setdefault(w, []).append(s)
            said = []  # what the Java producer said until then (its warnings, timed)
            if os.path.exists(jlog):
                with open(jlog, errors="replace") as f:
                    f.seek(jlog_at)
                    said = [x.rstrip() for x in f if x.startswith("[")]
            info("%s: node%d killed (postmaster %d; its processes gone after %.2f s); node%d primary "
                 "with its listener after %.2f s; first acks=all acknowledgement after the kill: %s"
                 % (label, old, pm, t_gone - t_kill, new, t_promoted - t_kill,
                    ", ".join("%s %.2f s" % kv for kv in sorted(firsts.items()))))
            done += 1
            if patroni:
                cluster.ha("start-node", str(old))  # the node is back
            # the killed node rejoins as a standby (Patroni: crash recovery, pg_rewind or reinit)
            healthy = cluster.wait_healthy(300)
            timeline.stop()
            info("%s: timeline (seconds after the kill): %s" % (
                label, "; ".join("%.2f %s" % e for e in timeline.events)))
            info("%s: phases: %s" % (label, ", ".join("%s %.2f s" % (k, timeline.first[k])
                                                      for k, _ in PHASES if k in timeline.first)))
            for k, v in timeline.first.items():
                phases.setdefault(k, []).append(v)
            for x in said[:12] + (["... %d more" % (len(said) - 16)] + said[-4:] if len(said) > 16 else said[12:]):
                info("%s: Java producer: %s" % (label, x[:300]))
            if not healthy:
                fail("%s: node%d did not rejoin within 300 s:\n%s" % (label, old, cluster.status()))
                break
            time.sleep(3)  # the clients catch up
            clients.check_alive()
            fault_loop.verify(root, cluster.pg_port(cluster.primary()), label, state)
            if failures:
                break
        clients.stop_all()
        clients = None
        pri = cluster.primary()
        n_acks, n_procs = fault_loop.verify(root, cluster.pg_port(pri), "final", state)
        info("kills: %d in %.0f s" % (done, time.time() - t0))
        if done < min(kills, 1):
            fail("no kill was done")
        if n_acks == 0 or n_procs == 0:
            fail("the clients made no progress (%d acknowledged, %d processed)" % (n_acks, n_procs))
        for k, what in PHASES:
            info("kill -> %s: %s" % (what, spread(phases.get(k, []))))
        info("Patroni: kill -> new primary with its listener: %s" % spread(promote_times))
        for w, xs in sorted(times.items()):
            info("failover, kill -> first acks=all acknowledgement (%s): %s" % (w, spread(xs)))
        if os.environ.get("KP_HA_RESULT"):
            with open(os.environ["KP_HA_RESULT"], "w") as f:
                json.dump({"promote": promote_times, "first_ack": times, "phases": phases}, f)
        for log in cluster.logs():
            for line in kafkapg.pgcluster("log-problems", log).splitlines()[:20]:
                fail("server log %s: %s" % (log, line))
    finally:
        if clients is not None:
            clients.stop_all()
        if failures:
            print(cluster.status(), flush=True)
            for log in cluster.logs():
                kafkapg.tail(log, 15)
        if os.environ.get("KP_KEEP_TMP") == "1":
            info("kept %s" % root)
            os.environ["HA_KEEP"] = "1"
            cluster.env["HA_KEEP"] = "1"
        cluster.stop()
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(root, ignore_errors=True)


def main():
    # a timeout's SIGTERM still stops Patroni, etcd and PostgreSQL (the finally in run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, RuntimeError, OSError) as e:
        fail("harness: %s %s" % (e, getattr(e, "stderr", "") or ""))
    except Exception as e:  # noqa: BLE001  (psycopg2 errors and the like: a failure, not a traceback)
        fail("harness: %r" % e)
    print("ha failover: %s" % ("FAILED (%d problems)" % len(failures) if failures else "PASSED"), flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
