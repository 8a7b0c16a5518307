#!/usr/bin/python3
"""bench/failover/kafka_failover.py: Apache Kafka's leader election, measured as test/ha/failover.py
measures kafka_pg's failover.

Three Apache Kafka 4.4 nodes in KRaft combined mode (broker and controller each) on loopback, from
the jars test/clients/kafka/fetch-kafka.sh caches, with unclean.leader.election.enable=false,
min.insync.replicas=2 and replication factor 3 (the topic and the internal ones); otherwise Kafka's
defaults (broker.session.timeout.ms 9000, the time after which the controller fences a silent broker).
The same load as test/ha/failover.py (its client code): an idempotent librdkafka and an idempotent
Java producer, acks=all, and a consumer group of a librdkafka and a Java member, all bootstrapping
with the three brokers.

KP_HA_KILLS times: once every partition has three in-sync replicas, a few seconds of load, then
kill -9 of the broker that leads partition 0; the time from the kill to the first acks=all
acknowledgement each producer receives afterwards for a partition the killed broker led.  The broker
is started again before the next kill (as Patroni restarts a killed node).  Prints the median and
spread, and writes them to KP_HA_RESULT (JSON) for bench/failover/bench.sh.

Environment: KP_HA_KILLS (10), KP_HA_KAFKA_PORT (first of six ports: three listeners, then three
controllers; 19473), KP_HA_RESULT.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "ha"))
import failover  # noqa: E402  (the clients and the measurement of test/ha/failover.py)

KAFKA_SH = os.path.join(REPO, "test", "clients", "kafka", "kafka.sh")
LOG4J_BROKER = os.path.join(REPO, "test", "clients", "kafka", "log4j2-broker.properties")
info = failover.info


def kafka_jars():
    r = subprocess.run(["bash", KAFKA_SH, "classpath"], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError("kafka.sh classpath: %s" % r.stderr[-2000:])
    return r.stdout.strip()


class Brokers:
    def __init__(self, root, base):
        self.root = root
        self.ports = [base + i for i in range(3)]
        self.cports = [base + 3 + i for i in range(3)]
        self.jars = kafka_jars()
        self.procs = {}
        self.bootstrap = ",".join("127.0.0.1:%d" % p for p in self.ports)

    def props(self, i):
        voters = ",".join("%d@127.0.0.1:%d" % (j + 1, self.cports[j]) for j in range(3))
        return "\n".join([
            "process.roles=broker,controller",
            "node.id=%d" % (i + 1),
            "controller.quorum.voters=%s" % voters,
            "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.ports[i], self.cports[i]),
            "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.ports[i],
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs=%s" % os.path.join(self.root, "b%d" % (i + 1), "data"),
            "num.partitions=3",
            "default.replication.factor=3",
            "min.insync.replicas=2",
            "unclean.leader.election.enable=false",
            "auto.create.topics.enable=false",
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=4",
            "transaction.state.log.replication.factor=3",
            "transaction.state.log.min.isr=2",
            "transaction.state.log.num.partitions=4",
            "share.coordinator.state.topic.replication.factor=3",
            "share.coordinator.state.topic.min.isr=2",
            "group.initial.rebalance.delay.ms=0",
            "num.network.threads=2",
            "num.io.threads=4",
        ]) + "\n"

    def dir(self, i):
        return os.path.join(self.root, "b%d" % (i + 1))

    def format(self):
        cid = subprocess.run(["java", "-cp", self.jars, "kafka.tools.StorageTool", "random-uuid"],
                             capture_output=True, text=True, timeout=120).stdout.strip()
        for i in range(3):
            os.makedirs(os.path.join(self.dir(i), "data"), exist_ok=True)
            with open(os.path.join(self.dir(i), "server.properties"), "w") as f:
                f.write(self.props(i))
            r = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.jars,
                                "-Dlog4j2.configurationFile=" + failover.LOG4J,
                                "kafka.tools.StorageTool", "format", "-t", cid,
                                "-c", os.path.join(self.dir(i), "server.properties")],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError("formatting broker %d: %s %s" % (i + 1, r.stdout, r.stderr))

    def start(self, i):
        log = open(os.path.join(self.dir(i), "server.log"), "a")
        self.procs[i] = subprocess.Popen(
            ["java", "-Xmx512m", "-Xms512m", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-Djava.awt.headless=true", "-Dlog4j2.configurationFile=" + LOG4J_BROKER,
             "-cp", self.jars, "kafka.Kafka", os.path.join(self.dir(i), "server.properties")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_started(self, i, seconds=120):
        deadline = time.time() + seconds
        path = os.path.join(self.dir(i), "server.log")
        while time.time() < deadline:
            if self.procs[i].poll() is not None:
                raise RuntimeError("broker %d exited (%s)" % (i + 1, path))
            with open(path, errors="replace") as f:
                if "Kafka Server started" in f.read():
                    return
            time.sleep(0.5)
        raise RuntimeError("broker %d did not start within %d s" % (i + 1, seconds))

    def metadata(self):
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        return a.list_topics(failover.TOPIC, timeout=10).topics[failover.TOPIC]

    def create_topic(self):
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        fut = a.create_topics([NewTopic(failover.TOPIC, 3, 3, config={
            "min.insync.replicas": "2", "unclean.leader.election.enable": "false"})])
        fut[failover.TOPIC].result(60)

    def whole(self):
        """Every partition has a leader and three in-sync replicas."""
        try:
            t = self.metadata()
            return len(t.partitions) == 3 and all(p.leader >= 0 and len(p.isrs) == 3
                                                  for p in t.partitions.values())
        except Exception:  # noqa: BLE001
            return False

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(30)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    kills = int(os.environ.get("KP_HA_KILLS", "10"))
    base = failover.free_block(int(os.environ.get("KP_HA_KAFKA_PORT", "19473")), 6)
    root = tempfile.mkdtemp(prefix="kafka_failover.")
    brokers = None
    clients = None
    times, elect = {}, []
    ok = True
    try:
        java_cp = failover.java_classpath(root)
        brokers = Brokers(root, base)
        brokers.format()
        for i in range(3):
            brokers.start(i)
        for i in range(3):
            brokers.wait_started(i)
        brokers.create_topic()
        info("Kafka: 3 brokers (KRaft, combined) on %s" % brokers.bootstrap)
        clients = failover.Clients(root, brokers.bootstrap, java_cp)
        clients.start()
        time.sleep(8)
        current, restarts = {}, 0  # the librdkafka producer that now stands for rdprod1
        for k in range(1, kills + 1):
            deadline = time.time() + 180
            while not brokers.whole():
                if time.time() > deadline:
                    raise RuntimeError("kill %d: the partitions have not three in-sync replicas after 180 s" % k)
                time.sleep(0.5)
            time.sleep(random.uniform(3.0, 6.0))
            meta = brokers.metadata()
            leader = meta.partitions[0].leader
            led = {p.id for p in meta.partitions.values() if p.leader == leader}
            i = leader - 1
            t_kill = time.time()
            os.kill(brokers.procs[i].pid, signal.SIGKILL)
            brokers.procs[i].wait(30)
            # answers the broker sent before it died may reach a delivery callback a moment later
            t_dead = time.time() + 0.1
            # the new leader of partition 0
            t_elect = None
            while time.time() - t_kill < 120:
                try:
                    lp = brokers.metadata().partitions[0].leader
                    if lp >= 0 and lp != leader:
                        t_elect = time.time()
                        break
                except Exception:  # noqa: BLE001
                    pass
                time.sleep(0.05)
            waiting = set(clients.producers())
            firsts = {}
            while waiting and time.time() - t_kill < 180:
                for w in list(waiting):
                    if w == "rdprod1" and not clients.procs[0].is_alive():
                        info("kill %d: the librdkafka producer stopped (fatal error): no time for it" % k)
                        waiting.discard(w)
                        continue
                    ts = failover.acks_since(clients.path(current.get(w, w)), int(t_dead * 1000), led)
                    if ts is not None:
                        firsts[w] = ts / 1000.0 - t_kill
                        waiting.discard(w)
                time.sleep(0.2)
            for w in sorted(waiting):
                info("kill %d: producer %s had no acknowledgement within 180 s" % (k, w))
                ok = False
            for w, s in firsts.items():
                times.setdefault(w, []).append(s)
            if t_elect:
                elect.append(t_elect - t_kill)
            info("kill %d: broker %d (leader of partitions %s) killed; partition 0 led by another broker "
                 "after %s; first acks=all acknowledgement on those partitions after the kill: %s"
                 % (k, leader, sorted(led), "%.2f s" % (t_elect - t_kill) if t_elect else "never",
                    ", ".join("%s %.2f s" % kv for kv in sorted(firsts.items()))))
            brokers.start(i)
            brokers.wait_started(i)
            # librdkafka 2.0.2's idempotent producer sometimes stops with a fatal
            # OUT_OF_ORDER_SEQUENCE_NUMBER after a leader change ("rewound sequence number"):
            # a new one takes its place, so that the series goes on (the log says so)
            if not clients.procs[0].is_alive():
                restarts += 1
                label = "rdprod%d" % (restarts + 1)
                info("kill %d: the librdkafka producer stopped (exit %s, a fatal error: see above); "
                     "%s takes its place" % (k, clients.procs[0].exitcode, label))
                pr = failover.mp.Process(target=failover.rd_producer,
                                         args=(label, brokers.bootstrap, clients.path(label), clients.stop),
                                         daemon=True)
                pr.start()
                clients.procs[0] = pr
                current["rdprod1"] = label
                time.sleep(5)
        clients.stop_all()
        clients = None
        info("Kafka: kill -> new leader of partition 0 in metadata: %s" % failover.spread(elect))
        info("Kafka: librdkafka producers that stopped with a fatal error and were replaced: %d" % restarts)
        for w, xs in sorted(times.items()):
            info("Kafka failover, kill -> first acks=all acknowledgement (%s): %s" % (w, failover.spread(xs)))
        if os.environ.get("KP_HA_RESULT"):
            with open(os.environ["KP_HA_RESULT"], "w") as f:
                json.dump({"promote": elect, "first_ack": times}, f)
    finally:
        if clients is not None:
            clients.stop_all()
        if brokers is not None:
            brokers.stop()
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
