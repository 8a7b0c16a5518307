"""bench/replication/standby_pair.py: what the standby benchmarks share (standby_fetch_cpu.py,
standby_offsets.py): a throwaway primary and a hot standby made with pg_basebackup
(test/lib/pgcluster), one listener worker on the standby so that one process serves every fetch;
SQL and raw Kafka connections; a process's CPU time; a Fetch v11 body of partition 0 from offset 0.
"""

import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "wire"))
import kafkapg  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads a bootstrap from argv at import
import conformance as kc  # noqa: E402

i8, i16, i32, i64, string, array = kc.i8, kc.i16, kc.i32, kc.i64, kc.string, kc.array
TICK = os.sysconf("SC_CLK_TCK")
ENV = {"KP_KAFKA_DB": "postgres", "KP_EXTRA_CONF": "kafka.listener_workers = 1"}


def conn(port):
    """A raw Kafka connection (conformance.Conn) to 127.0.0.1:port."""
    kc.HOST, kc.PORT = "127.0.0.1", port
    return kc.Conn()


def sql(c, q, args=None):
    cur = c.cursor()
    cur.execute(q, args)
    return cur.fetchall() if cur.description else None


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def fetch_body(topic, max_bytes):
    """Fetch v11 of partition 0 from offset 0, max_wait_ms 0, partition_max_bytes max_bytes."""
    return (i32(-1) + i32(0) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array([string(topic) + array([i32(0) + i32(-1) + i64(0) + i64(-1) + i32(max_bytes)])])
            + array([]) + string(""))


class Pair:
    """A primary (start_primary, then fill it) and a standby of it (start_standby); stop() stops
    both and removes their directory unless KP_KEEP_TMP=1."""

    def __init__(self, name, port_env, port_default, kport_env, kport_default):
        self.root = kafkapg.make_tmp(name)
        self.pdata, self.sdata = os.path.join(self.root, "primary"), os.path.join(self.root, "standby")
        self.pport = int(kafkapg.pgcluster("free-port", os.environ.get(port_env, str(port_default))))
        self.sport = int(kafkapg.pgcluster("free-port", self.pport + 1))
        self.kp1 = int(kafkapg.pgcluster("free-port", os.environ.get(kport_env, str(kport_default)),
                                         self.pport, self.sport))
        self.kp2 = int(kafkapg.pgcluster("free-port", self.kp1 + 1, self.pport, self.sport))
        self.started = []

    def start_primary(self):
        """Start the primary with the extension; returns an SQL connection to it."""
        kafkapg.pgcluster("init", self.pdata, self.pport, self.kp1, env=ENV)
        kafkapg.pgcluster("start", self.pdata)
        self.started.append(self.pdata)
        kafkapg.pgcluster("create-extension", self.pport, "postgres")
        return kafkapg.connect(self.pport)

    def start_standby(self, prim, caught_up=False):
        """Base backup, start the standby, wait until it streams (and with caught_up, until it has
        replayed everything); returns (SQL connection to it, its listener worker's pid)."""
        kafkapg.pgcluster("basebackup", self.pport, self.sdata)
        kafkapg.pgcluster("write-conf", self.sdata, self.sport, self.kp2, self.root,
                          env=dict(ENV, KP_EXTRA_CONF="cluster_name = 's1'\nkafka.node_id = 1\n"
                                                      "kafka.listener_workers = 1"))
        kafkapg.pgcluster("start", self.sdata)
        self.started.append(self.sdata)
        stby = kafkapg.connect(self.sport)
        q = "SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'"
        if caught_up:
            q += " AND replay_lsn >= pg_current_wal_lsn()"
        t0 = time.time()
        while not sql(prim, q):
            if time.time() - t0 > 120:
                raise RuntimeError("the standby does not stream")
            time.sleep(0.2)
        pid = sql(stby, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
        assert pid and len(pid) == 1, pid
        return stby, pid[0][0]

    def wait_served(self, c, body, what):
        """Fetch body on the standby's connection c until it answers with records."""
        t0 = time.time()
        while True:
            r = c.call(1, 11, body)
            if r is not None and len(r.d) > 1000:
                return
            if time.time() - t0 > 60:
                raise RuntimeError("the standby does not serve %s" % what)
            time.sleep(0.2)

    def stop(self):
        kafkapg.stop_clusters(self.started)
        if os.environ.get("KP_KEEP_TMP") != "1":
            shutil.rmtree(self.root, ignore_errors=True)
