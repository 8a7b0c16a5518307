#!/usr/bin/python3
"""test/standby/txn_failover_test.py: a read_committed consumer never reads as committed a wire
transaction that a failover then aborts (docs/replication.md, "High watermark").

A wire transaction's decision is committed on the primary before its synchronous standby has it
(the listener's commits are local; the EndTxn answer waits for the standby), and its COMMIT marker
follows.  Kafka keeps a decided transaction in its first unstable offset until the high watermark
passes its marker; kafka_pg's high watermark is what the synchronous standbys confirmed.  Before
03952e7 the last stable offset clients saw was min(last stable offset, high watermark): the
transaction's records, confirmed by the standby, were below the high watermark, the marker on the
primary made them stable, and a read_committed consumer read them as committed while nothing of the
decision had left the primary.  A failover then aborts the transaction (the promoted standby finds
it Ongoing, and its timeout aborts it): the consumer had read records that, for every later reader,
never existed.  This was reasoned from the order of the WAL; here it is run.

A primary (one listener worker) and a synchronous standby s1 (kafka.replica_nodes names it node 1):

1. A transactional producer on the wire (InitProducerId with a 3 s transaction timeout,
   AddPartitionsToTxn, a transactional Produce of 3 records); once the standby has them, a
   read_uncommitted Fetch returns them (high watermark 3).
2. The standby is stopped (immediate).  EndTxn commit is sent: the decision and the COMMIT marker
   (offset 3) are written on the primary, the answer waits for the standby.  A read_committed Fetch
   (and ListOffsets LATEST read_committed) on the primary shows last stable offset 0 and returns
   none of the 3 records (without the rule: last stable offset 3 and all three); read_uncommitted
   still returns them.
3. The primary is killed (immediate), the standby started and promoted: it has the 3 records and
   no marker; the transaction's timeout aborts it (an ABORT marker at offset 3), and a
   read_committed Fetch there lists it as aborted and returns no record: what the consumer was shown
   on the old primary (nothing) is what every reader of the new one sees.  The EndTxn was never
   answered.
4. Neither server log shows a PANIC or a crash.

Prints "ok - ..." / "not ok - ..." lines and "N passed, M failed".
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))
import kafkapg  # noqa: E402

sys.argv[1:] = ["127.0.0.1:0"]  # conformance.py reads HOST:PORT at import; set below
import conformance as kc  # noqa: E402
import transactions as tx  # noqa: E402
from tap import check, finish  # noqa: E402
from lso_hw_test import fetch, latest_committed  # noqa: E402
from replicas_test import info, sql, start_sync_standby, wait_for  # noqa: E402

DB = "postgres"
TOPIC = "txf"
TXN_ID = "txf-txn"


def connect_when_up(kport):
    kc.HOST, kc.PORT = "127.0.0.1", kport
    try:
        return kc.Conn()
    except OSError:
        return None


def run(root):
    pdata, sdata = os.path.join(root, "primary"), os.path.join(root, "standby")
    (pport, sport), (kp1, kp2) = kafkapg.free_ports(2, 2, "57652", "39492")
    replicas = "kafka.replica_nodes = 's1=1@127.0.0.1:%d'" % kp2
    env = {"KP_KAFKA_DB": DB, "KP_EXTRA_CONF": "kafka.listener_workers = 1\n" + replicas}
    started = []
    try:
        prim = kafkapg.start_primary(pdata, pport, kp1, env, started)
        prim.autocommit = True
        sql(prim, "SELECT kafka.create_topic(%s, 1)", (TOPIC,))
        start_sync_standby(prim, pport, sdata, sport, kp2, root, env, started)

        # 1. a transaction's records, on the standby too
        kc.HOST, kc.PORT = "127.0.0.1", kp1
        c = kc.Conn()
        check("FindCoordinator of the transactional id", tx.find_txn_coordinator(c, TXN_ID) == 0)
        err, pid, epoch = tx.init_producer_id(c, TXN_ID, 3000)
        check("InitProducerId (transaction timeout 3 s)", err == 0 and pid >= 0, "(error %s)" % err)
        err = tx.add_partitions(c, 1, TXN_ID, pid, epoch, TOPIC)
        check("AddPartitionsToTxn", err == 0, "(error %s)" % err)
        err = tx.produce(c, TXN_ID, TOPIC, tx.txn_batch(pid, epoch, 0, [b"t0", b"t1", b"t2"]))
        check("a transactional Produce of 3 records", err == 0, "(error %s)" % err)
        hw = wait_for("the standby to confirm the 3 records",
                      lambda: (lambda f: f if f[0] == 3 else None)(fetch(kp1, TOPIC, 0)), 20)
        check("read_uncommitted: high watermark 3, the 3 records (the standby has them)",
              hw[0] == 3 and hw[3] == 3, "(%s)" % (hw,))
        f = fetch(kp1, TOPIC, 1)
        check("read_committed before the EndTxn: last stable offset 0, no record",
              f[1] == 0 and f[3] == 0, "(%s)" % (f,))

        # 2. the standby goes; the transaction commits on the primary alone
        kafkapg.pgcluster("stop", sdata, "immediate")  # like a lost standby
        started.remove(sdata)
        wait_for("the walsender to go", lambda: not sql(prim, "SELECT 1 FROM pg_stat_replication"))
        corr = c.send(26, 1, kc.string(TXN_ID) + kc.i64(pid) + kc.i16(epoch) + kc.i8(1))
        marker = wait_for("the COMMIT marker on the primary", lambda: sql(
            prim, "SELECT base_offset FROM kafka.dump_log(%s, 0) WHERE is_control", (TOPIC,)), 20)
        check("EndTxn commit: the COMMIT marker is written at offset 3 on the primary",
              [m[0] for m in marker] == [3], "(%s)" % (marker,))
        time.sleep(0.5)
        f = fetch(kp1, TOPIC, 1)
        check("standby away: a read_committed Fetch shows last stable offset 0 and none of the 3 records "
              "(the marker is not on the standby)", f[0] == 3 and f[1] == 0 and f[3] == 0, "(%s)" % (f,))
        lc = latest_committed(kp1, TOPIC)
        check("... ListOffsets LATEST read_committed answers 0", lc == 0, "(%s)" % lc)
        f = fetch(kp1, TOPIC, 0)
        check("... read_uncommitted still returns the 3 records below the high watermark",
              f[0] == 3 and f[3] == 3, "(%s)" % (f,))
        early = c.recv(timeout=1)
        check("... and the EndTxn is not answered", early is None)

        # 3. failover: the old primary dies, the standby takes over
        kafkapg.pgcluster("stop", pdata, "immediate")  # like a crash
        started.remove(pdata)
        c.close()
        prim.close()
        kafkapg.pgcluster("start", sdata)
        started.append(sdata)
        stby = kafkapg.connect(sport, DB)
        stby.autocommit = True
        sql(stby, "SELECT pg_promote()")
        wait_for("the standby to be promoted", lambda: sql(stby, "SELECT NOT pg_is_in_recovery()")[0][0], 60)
        info("standby promoted")
        got = sql(stby, "SELECT base_offset, is_control FROM kafka.dump_log(%s, 0) ORDER BY base_offset", (TOPIC,))
        check("the promoted standby has the 3 records and no marker", got == [(0, False)], "(%s)" % (got,))
        wait_for("the listener of the promoted node", lambda: connect_when_up(kp2), 60)
        f = wait_for("the transaction's timeout to abort it on the promoted node",
                     lambda: (lambda f: f if f[1] == 4 else None)(fetch(kp2, TOPIC, 1)), 60)
        check("promoted: the transaction is aborted (read_committed: last stable offset 4, the transaction "
              "listed as aborted from offset 0)", f[2] == [(pid, 0)], "(%s)" % (f,))
        got = sql(stby, "SELECT base_offset, is_control FROM kafka.dump_log(%s, 0) ORDER BY base_offset", (TOPIC,))
        check("... with an ABORT marker at offset 3", got == [(0, False), (3, True)], "(%s)" % (got,))
        n = sql(stby, "SELECT count(*) FROM kafka.fetch(%s, 0, 0, 100)", (TOPIC,))[0][0]
        check("... and kafka.fetch returns none of its records", n == 0, "(%s)" % n)
        stby.close()
    finally:
        kafkapg.stop_clusters(started)
        kafkapg.check_server_logs((pdata, sdata), check, 30)


def main():
    kafkapg.run_main("txn failover test", "txnfo", run, check, finish)


if __name__ == "__main__":
    main()
