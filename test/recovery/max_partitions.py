#!/usr/bin/python3
"""test/recovery/max_partitions.py: a partition with no room for its state in shared memory is an
error code on the wire, not a closed connection.

kafka.max_partitions sizes the shared map of partition states (src/store/partition.c) for the
whole server, while the topics of each database are counted against it on their own
(src/catalog/topics.c: a database cannot create more).  So several databases with the extension
can, together, use more partitions than the map holds; the map then refuses new entries, and a
SQL call touching such a partition fails with 53200.  A wire request touching one answered nothing
and closed its connection (the ERROR reached the listener's dispatcher).  Now:

1. A cluster with kafka.max_partitions = 16, the listener on database postgres; databases mp1,
   mp2... each get a 16-partition topic and a record in each partition (SQL) until a produce
   fails with 53200: the map is full (the map takes what shared memory has to spare beyond the
   16, a few hundred entries).
2. A 4-partition topic created on the wire in postgres (creation needs no entry): Produce v8 to
   each partition answers KAFKA_STORAGE_ERROR (56) with a message naming kafka.max_partitions;
   Fetch v11 and ListOffsets v2 answer 56 for it; the connection stays open (an ApiVersions on it
   is answered); the server log has one WARNING naming kafka.max_partitions (at most one a
   minute per listener worker).
3. Once mp1's topic is deleted (its entries leave the map), the same Produce succeeds and Fetch
   returns the record: no restart needed.

Last line: "N passed, M failed".
"""

import os
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402
import psycopg2  # noqa: E402
from kwire import Reader, array, i8, i16, i32, i64, nbytes, string  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

TOPIC = "wired"
MAX_DATABASES = 80
tap = kafkapg.Tap()
check = tap.check


class Conn:
    """One Kafka connection; non-flexible request versions only.  call() returns None once the
    broker has closed the connection."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.corr = 0

    def call(self, api_key, version, body):
        self.corr += 1
        msg = struct.pack(">hhi", api_key, version, self.corr) + string(b"max_partitions") + body
        try:
            self.s.sendall(i32(len(msg)) + msg)
            head = self._exact(4)
            r = Reader(self._exact(struct.unpack(">i", head)[0]))
        except (OSError, RuntimeError):
            return None
        r.i32()  # correlation id
        return r

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            buf += chunk
        return buf

    def close(self):
        self.s.close()


def batch(value):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    b.append(0, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return bytes(b.build())


def create_topic(c, partitions):
    """CreateTopics v4: the topic's error code."""
    t = string(TOPIC) + i32(partitions) + i16(1) + array([]) + array([])
    r = c.call(19, 4, array([t]) + i32(30000) + i8(0))
    if r is None:
        return None
    r.i32()
    return r.array(lambda: (r.string(), r.i16(), r.string()))[0][1]


def produce(c, partition, value):
    """Produce v8, acks=1: (error code, error message) of the partition, None if closed."""
    body = (string(None) + i16(1) + i32(30000)
            + array([string(TOPIC) + array([i32(partition) + nbytes(batch(value))])]))
    r = c.call(0, 8, body)
    if r is None:
        return None
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                          r.array(lambda: (r.i32(), r.string())),
                                                          r.string()))))
    p = res[0][1][0]
    return p[1], (p[6] or b"").decode()


def fetch(c, partition):
    """Fetch v11 from offset 0: (error code, records bytes) of the partition, None if closed."""
    part = i32(partition) + i32(-1) + i64(0) + i64(-1) + i32(1 << 20)
    body = (i32(-1) + i32(0) + i32(1) + i32(1 << 20) + i8(0) + i32(0) + i32(-1)
            + array([string(TOPIC) + array([part])]) + array([]) + string(""))
    r = c.call(1, 11, body)
    if r is None:
        return None
    r.i32(), r.i16(), r.i32()

    def one():
        p, err = r.i32(), r.i16()
        r.i64(), r.i64(), r.i64()
        r.array(lambda: (r.i64(), r.i64()))
        r.i32()
        return err, r.nbytes() or b""
    return r.array(lambda: (r.string(), r.array(one)))[0][1][0]


def list_latest(c, partition):
    """ListOffsets v2, latest: (error code, offset), None if closed."""
    r = c.call(2, 2, i32(-1) + i8(0) + array([string(TOPIC) + array([i32(partition) + i64(-1)])]))
    if r is None:
        return None
    r.i32()
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64()))))
    return res[0][1][0][1], res[0][1][0][3]


def api_versions_ok(c):
    r = c.call(18, 0, b"")
    return r is not None and r.i16() == 0


def fill_map(port):
    """Databases mp1, mp2... with a 16-partition topic and a record in each partition until a
    produce fails: (databases made, SQLSTATE of the failure or None)."""
    for i in range(1, MAX_DATABASES + 1):
        db = "mp%d" % i
        kafkapg.pgcluster("create-extension", port, db)
        conn = kafkapg.connect(port, db)
        cur = conn.cursor()
        cur.execute("SELECT kafka.create_topic('t', 16)")
        try:
            cur.execute("SELECT count(*) FROM (SELECT kafka.produce('t', 'k', 'v', partition => p) "
                        "FROM generate_series(0, 15) p) s")
        except psycopg2.Error as e:
            conn.close()
            return i, e.pgcode
        conn.close()
    return MAX_DATABASES, None


def warnings_in(log):
    with open(log, errors="replace") as f:
        return sum(1 for line in f if "WARNING:" in line and "kafka.max_partitions (16)" in line)


def run():
    cluster = kafkapg.ScratchCluster("max_partitions", 58632, 49292)
    try:
        cluster.start("postgres", {"KP_KAFKA_DB": "postgres", "KP_EXTRA_CONF": "kafka.max_partitions = 16"})
        kafkapg.pgcluster("wait-kafka", cluster.kport)
        ndb, state = fill_map(cluster.port)
        check("with kafka.max_partitions 16, databases of 16 partitions each fill the shared map: "
              "a SQL produce fails with 53200", state == "53200", "(%d databases, %r)" % (ndb, state))

        c = Conn(cluster.kport)
        err = create_topic(c, 4)
        check("a 4-partition topic is created on the wire in the listener's database", err == 0, "(%r)" % err)
        got = [produce(c, p, b"x") for p in range(4)]
        check("Produce to each of its partitions answers KAFKA_STORAGE_ERROR (56), naming "
              "kafka.max_partitions", all(g is not None and g[0] == 56 and "kafka.max_partitions" in g[1]
                                          for g in got), "(%r)" % got)
        f = fetch(c, 0)
        check("Fetch answers KAFKA_STORAGE_ERROR for the partition", f is not None and f[0] == 56, "(%r)" % (f,))
        lo = list_latest(c, 1)
        check("ListOffsets answers KAFKA_STORAGE_ERROR for the partition", lo is not None and lo[0] == 56,
              "(%r)" % (lo,))
        check("the connection stays open: ApiVersions on it is answered", api_versions_ok(c))
        n = warnings_in(cluster.log())
        check("the server log has one WARNING naming kafka.max_partitions for all of them", n == 1, "(%d)" % n)

        conn = kafkapg.connect(cluster.port, "mp1")
        conn.cursor().execute("SELECT kafka.delete_topic('t')")
        conn.close()
        got = produce(c, 0, b"after")
        check("once another database's topic is deleted, the same Produce succeeds (no restart)",
              got is not None and got[0] == 0, "(%r)" % (got,))
        deadline, f = time.time() + 10, None
        while time.time() < deadline:
            f = fetch(c, 0)
            if f is None or (f[0] == 0 and b"after" in f[1]):
                break
            time.sleep(0.2)
        check("and Fetch returns the record", f is not None and f[0] == 0 and b"after" in f[1], "(%r)" % (f,))
        c.close()
    finally:
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
