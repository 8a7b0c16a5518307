#!/usr/bin/env python3
"""A listener worker whose reload of kafka.client_quotas fails keeps enforcing the quotas.

Each listener worker caches kafka.client_quotas and reads it again after a change.  A read that
fails (here: it waits for a DBA's ACCESS EXCLUSIVE lock on the table and the worker's query is
cancelled; a lock_timeout or a damaged page do the same) left the worker, until 2026-12-07, with
the cache emptied and marked loaded: no quota was enforced on that worker until the table changed
again, while the other worker enforced them.

1. A produce quota (producer_byte_rate 1024) for client id quota-reload-<run>, SQL.
2. A SQL session locks kafka.client_quotas (ACCESS EXCLUSIVE); a Produce from that client waits in
   the worker's reload; the worker's query is cancelled (pg_cancel_backend), the lock released.
3. Eight new connections of that client each send a Produce request of 48 KiB: every
   connection, whichever worker it landed on, is throttled (throttle_time_ms > 0).  With two
   workers, the chance that none of the eight lands on the cancelled one is under 1 %.
4. The quota is deleted.

Usage: PGDATABASE=... PGHOST=... PGPORT=... quota_reload.py HOST:PORT.  Last line: "N passed, M failed".
"""
import os
import struct
import sys
import threading
import time
import uuid

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as kc  # noqa: E402  (reads HOST:PORT from argv at import)
from kwire import array, i16, i32, nbytes, string  # noqa: E402
from tap import check, finish  # noqa: E402

RUN = uuid.uuid4().hex[:8]
CLIENT = "quota-reload-" + RUN
TOPIC = "quota-reload-" + RUN


class Conn(kc.Conn):
    """kc.Conn with this test's client id."""

    def send(self, api_key, version, body):
        self.corr += 1
        hdr = struct.pack(">hhi", api_key, version, self.corr) + string(CLIENT.encode())
        msg = hdr + body
        self.s.sendall(i32(len(msg)) + msg)
        return self.corr


def produce(c, value, timeout=30):
    """Produce v8, acks=1, to partition 0: (error code, throttle_time_ms), None if closed."""
    body = (string(None) + i16(1) + i32(30000)
            + array([string(TOPIC) + array([i32(0) + nbytes(kc.build_batch(0, [value]))])]))
    r = c.call(0, 8, body, timeout=timeout)
    if r is None:
        return None
    res = r.array(lambda: (r.string(), r.array(lambda: (r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
                                                          r.array(lambda: (r.i32(), r.string())),
                                                          r.string()))))
    return res[0][1][0][1], r.i32()


def sql():
    c = psycopg2.connect("")
    c.autocommit = True
    return c


def main():
    admin = sql()
    cur = admin.cursor()
    cur.execute("SELECT kafka.create_topic(%s, 1)", (TOPIC,))
    c = Conn()
    first = produce(c, b"before the quota")
    check("a Produce before the quota: answered, not throttled", first == (0, 0), f"({first})")
    try:
        cur.execute("INSERT INTO kafka.client_quotas (client_id, quota_key, value) "
                    "VALUES (%s, 'producer_byte_rate', 1024)", (CLIENT,))
        locker = sql()
        lcur = locker.cursor()
        lcur.execute("BEGIN")
        lcur.execute("LOCK TABLE kafka.client_quotas IN ACCESS EXCLUSIVE MODE")
        result = {}
        t = threading.Thread(target=lambda: result.update(r=produce(Conn(), b"x" * 100, timeout=20)))
        t.start()
        cancelled = 0
        deadline = time.time() + 10
        while time.time() < deadline and not cancelled:
            time.sleep(0.2)
            cur.execute("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
                        "WHERE backend_type LIKE 'kafka_pg listener%%' AND wait_event_type = 'Lock'")
            cancelled = cur.fetchone()[0]
        t.join(25)
        lcur.execute("ROLLBACK")
        locker.close()
        check("a Produce waiting in the worker's reload of the quotas behind a table lock: the "
              "worker's query cancelled (the request fails)", cancelled == 1 and result.get("r") is None,
              f"(cancelled {cancelled}, answer {result.get('r')})")

        throttled = []
        for _ in range(8):
            # one request each: a throttled connection is muted for the throttle time (KIP-219)
            conn = Conn()
            got = produce(conn, b"y" * 49152)
            conn.close()
            throttled.append(got is not None and got[0] == 0 and got[1] > 0 or got)
        check("eight new connections of the client, each sending 48 KiB against 1 KiB/s: every one is "
              "throttled, on either worker", all(x is True for x in throttled), f"({throttled})")
    finally:
        cur.execute("DELETE FROM kafka.client_quotas WHERE client_id = %s", (CLIENT,))
        cur.execute("SELECT kafka.delete_topic(%s)", (TOPIC,))
        admin.close()
    finish()


if __name__ == "__main__":
    main()
