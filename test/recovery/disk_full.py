#!/usr/bin/python3
"""test/recovery/disk_full.py: a full disk refuses appends at once, per partition, and loses nothing.

A segment's file is extended 1 MB ahead of its data (src/store/segment.c, preextend).  Until
2026-12-07 that was an ftruncate(): the new blocks were holes, and on a full disk appends went on
being accepted into them (their WAL written, their pages in shared buffers) while the checkpointer
failed to write them ("could not write block ... No space left on device") and the WAL grew for as
long as the disk stayed full.  Now the blocks are allocated (posix_fallocate), so a full disk
fails the append that needs a new block, with ENOSPC (SQLSTATE 53100), and a wire Produce answers
that partition KAFKA_STORAGE_ERROR while its other partitions are appended
(src/listener/handlers_produce.c).

Needs root to mount a tmpfs (the test's disk); where it cannot, it says so and checks nothing.

1. A cluster of its own; a tablespace on a 32 MB tmpfs, the database kafka_pg serves created in
   it (so its segments are there; the WAL is not); topic 'full' of 2 partitions, a record in each.
2. The tmpfs filled to its last byte.  Produce v8 acks=all requests on one connection, each
   listing partition 1 (one small record, which fits in the block its segment already has) and
   partition 0 (200 records of 1 KB): partition 1 is appended every time; partition 0 is appended
   until its segment's allocated megabyte is used, then answered KAFKA_STORAGE_ERROR with the
   message "could not extend file ...: No space left on device" (within 10 requests); the
   connection stays open.
3. CHECKPOINT succeeds with the disk full: every accepted page can be written (a CHECKPOINT
   before the disk was filled wrote the pages CREATE DATABASE copied, whose blocks PostgreSQL 15
   leaves as holes).
4. SQL: kafka.produce of a 200 KB value to partition 0 fails with SQLSTATE 53100.
5. The server log: a WARNING naming partition full-0.
6. The filler removed: partition 0's append is accepted again; after a restart both partitions hold
   exactly the records that were acknowledged (Fetch counts), in order.
7. No PANIC or crash in the server log.

Last line: "N passed, M failed".
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set in run()
import conformance as kc  # noqa: E402
from produce_partial import produce  # noqa: E402

TOPIC = "full"
KAFKA_STORAGE_ERROR = 56
tap = kafkapg.Tap()
check = tap.check


def mount_tmpfs(path, size):
    """Mount a tmpfs of size at path; the reason it could not be, or None."""
    if os.geteuid() != 0:
        return "not root"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or "mount failed")


def fill(path):
    """Write zeroes into path until the file system is full; the bytes written."""
    n = 0
    try:
        with open(path, "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
                n += 4096
    except OSError:
        pass
    return n


def count(c, partition):
    """The data records of the partition (Fetch v11 from 0, read to its end)."""
    total, offset = 0, 0
    while True:
        r = c.call(1, 11, kc.fetch_listing_body([(TOPIC, [(partition, offset)])], 0))
        err, recs = kc.read_fetch_listing(r)[(TOPIC, partition)]
        got = kc.batches(recs) if err == 0 else []
        if not got:
            return total
        for b in got:
            n = int.from_bytes(b[57:61], "big")
            total += n
            offset = int.from_bytes(b[0:8], "big") + int.from_bytes(b[23:27], "big") + 1


def run():
    cluster = kafkapg.ScratchCluster("disk_full", 58760, 49460)
    ts = os.path.join(cluster.root, "ts")
    os.makedirs(ts)
    why = mount_tmpfs(ts, "32m")
    if why:
        print("# skip: cannot mount a tmpfs for the test's disk (%s); nothing checked" % why)
        cluster.remove()
        return
    filler = os.path.join(ts, "filler")
    try:
        os.makedirs(os.path.join(ts, "pg"))
        subprocess.run(["chown", "-R", "postgres", ts], check=True)
        cluster.start("postgres", {"KP_KAFKA_DB": "kdb"})
        conn = kafkapg.connect(cluster.port)
        cur = conn.cursor()
        cur.execute("CREATE TABLESPACE small LOCATION %s", (os.path.join(ts, "pg"),))
        cur.execute("CREATE DATABASE kdb TABLESPACE small")
        conn.close()
        kafkapg.pgcluster("create-extension", cluster.port, "kdb")
        kafkapg.pgcluster("wait-kafka", cluster.kport)
        kc.HOST, kc.PORT = "127.0.0.1", cluster.kport
        db = kafkapg.connect(cluster.port, "kdb")
        cur = db.cursor()
        cur.execute("SELECT kafka.create_topic(%s, 2)", (TOPIC,))
        c = kc.Conn()
        got = produce(c, None, TOPIC, [(0, kc.build_batch(0, [b"first"])), (1, kc.build_batch(0, [b"first"]))])
        check("a record in each partition", got == {0: (0, 0, None), 1: (0, 0, None)}, "(%r)" % (got,))
        acked = {0: 1, 1: 1}
        # CREATE DATABASE (PostgreSQL 15's WAL_LOG strategy) leaves its catalogs' files with holes,
        # which a checkpoint on a full disk could not write: written now, while there is room
        cur.execute("CHECKPOINT")

        filled = fill(filler)
        free = os.statvfs(ts).f_bavail
        check("the tmpfs is full (%d MB of filler)" % (filled >> 20), free == 0, "(%d blocks free)" % free)

        refused_at = None
        answers = []
        for i in range(40):
            big = kc.build_batch(0, [os.urandom(1000) for _ in range(200)])
            got = produce(c, None, TOPIC, [(1, kc.build_batch(0, [b"small %d" % i])), (0, big)])
            answers.append(got)
            if got is None:
                break
            if got[1][0] == 0:
                acked[1] += 1
            if got[0][0] == 0:
                acked[0] += 200
            else:
                refused_at = i
                break
        last = answers[-1]
        check("partition 0 is refused once its allocated blocks are used (within 10 requests): "
              "KAFKA_STORAGE_ERROR, 'No space left on device'",
              refused_at is not None and refused_at < 10 and last[0][0] == KAFKA_STORAGE_ERROR
              and "No space left on device" in (last[0][2] or ""),
              "(refused at request %s; last answer %r)" % (refused_at, last))
        check("partition 1 is appended in every one of those requests, on the same connection",
              all(a is not None and a[1][0] == 0 for a in answers), "(%r)" % (answers,))
        got = produce(c, None, TOPIC, [(0, kc.build_batch(0, [os.urandom(1000) for _ in range(200)]))])
        check("the next request to partition 0 is refused too", got is not None and
              got[0][0] == KAFKA_STORAGE_ERROR, "(%r)" % (got,))

        try:
            cur.execute("CHECKPOINT")
            ok, err = True, ""
        except Exception as e:  # noqa: BLE001
            ok, err = False, str(e)
        check("CHECKPOINT succeeds with the disk full (no accepted page is a hole)", ok, err)

        try:
            cur.execute("SELECT kafka.produce(%s, NULL::bytea, convert_to(repeat('x', 200000), 'UTF8'), "
                        "partition => 0)", (TOPIC,))
            state = "accepted"
        except Exception as e:  # noqa: BLE001
            state = getattr(e, "pgcode", str(e))
        check("SQL: kafka.produce of 200 KB to partition 0 fails with SQLSTATE 53100", state == "53100",
              "(%s)" % state)

        with open(cluster.log(), errors="replace") as f:
            log = f.read()
        check("the server log: a WARNING naming partition full-0", "cannot append to full-0" in log)

        os.unlink(filler)
        got = produce(c, None, TOPIC, [(0, kc.build_batch(0, [os.urandom(1000) for _ in range(200)]))])
        check("the filler removed: partition 0 is appended again", got is not None and got[0][0] == 0,
              "(%r)" % (got,))
        if got is not None and got[0][0] == 0:
            acked[0] += 200
        c.close()
        db.close()
        cluster.restart()
        c = kc.Conn()
        have = {p: count(c, p) for p in (0, 1)}
        check("after a restart the partitions hold exactly the acknowledged records (%d and %d)"
              % (acked[0], acked[1]), have == acked, "(have %r)" % (have,))
        c.close()
    finally:
        if os.path.exists(filler):
            os.unlink(filler)
        cluster.stop()
        subprocess.run(["umount", "-l", ts], capture_output=True)
        tap.cleanup(cluster)


if __name__ == "__main__":
    tap.main(run)
