#!/bin/bash
# test/recovery/commit_log_horizon.sh: rolled-back SQL records stay hidden
# after PostgreSQL has frozen and truncated its commit log past them
# (issue 8, "the commit-log horizon").
#
# A SQL transaction produces and rolls back; its ABORT marker is written.
# Another is left open while 1.1 MB of committed records roll the segment,
# and the server is killed (-9): after the restart the resolver loads every
# partition at once, and recovery, which finds open transactions in older
# segments too, aborts it while the commit log still knows it.  Then more
# than two million transactions are consumed (a procedure that
# commits in a loop, each iteration taking an xid: about 20 to 40 s on two
# cores), every database is frozen (VACUUM (FREEZE), template0 included),
# and after a CHECKPOINT pg_xact/0000, which held the rolled-back
# transaction's status, is gone.  Both read paths must still hide the
# rolled-back records: SQL kafka.fetch and a wire read_committed consumer
# (a raw Fetch v4 with isolation_level 1, whose aborted_transactions list
# must name the transaction).  Then the server is killed (-9) and
# restarted: the aborted-transaction index, WAL-logged, must survive crash
# recovery and still hide them.
#
# Before issue 8 readers asked the commit log on every read, which answers
# "committed" for a transaction it no longer covers: the rolled-back
# records came back on both paths.
#
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. test/lib/tap.sh

kp_scratch horizon 56532 29292 || exit 1

# the workers serve postgres, where the topic is (the suite exports another)
export KP_KAFKA_DB=postgres
# no autovacuum: the test freezes by hand, and nothing else may race it
KP_EXTRA_CONF="autovacuum = off
max_wal_size = 4GB" kp_init "$DATA" "$PORT" "$KPORT" || exit 1
kp_start "$DATA" || exit 1
kp_create_extension "$PORT" postgres >/dev/null || exit 1
sql() { kp_psql "$PORT" "${2:-postgres}" -At -c "$1"; }

sql "SELECT kafka.create_topic('horizon', 1, '{\"segment.bytes\": \"1048576\"}')" >/dev/null
sql "SELECT kafka.produce('horizon', 'k', 'before')" >/dev/null
kp_psql "$PORT" postgres -q >/dev/null <<'EOF'
BEGIN;
SELECT kafka.produce('horizon', 'k', 'rolled back ' || g) FROM generate_series(1, 3) g;
ROLLBACK;
EOF
sql "SELECT kafka.produce('horizon', 'k', 'after')" >/dev/null
sql "SELECT kafka.flush_markers()" >/dev/null
# The resolver writes the markers after each commit (flush_markers then finds them written) and
# flushes nothing: a read_committed consumer reads a transaction as decided only once its marker is
# below the high watermark (03952e7), here what is flushed.  A Fetch that has records to return at
# once is answered with what is flushed; one that parks makes its worker flush (docs/replication.md,
# "High watermark").  So the first Fetch below may stop before "after" (its marker not flushed yet:
# found with a log of each append's WAL end and the flush position, 2026-12-05); it is asked again.
# (pg_current_xact_id() flushes nothing: a transaction that wrote no WAL before its commit record
# commits asynchronously, however synchronous_commit is set.)
XID=$(sql "SELECT producer_id & ~(1::bigint << 62) FROM kafka.dump_log('horizon', 0) WHERE NOT is_control AND producer_id > 0 ORDER BY base_offset OFFSET 1 LIMIT 1")
echo "# the rolled-back transaction: xid $XID"

EXPECT="before,after"
# (the bulk records that roll segments are left out: values of 100+ bytes)
fetch_sql() { sql "SELECT string_agg(value, ',' ORDER BY \"offset\") FROM kafka.fetch_text('horizon', 0, 0, 100000) WHERE length(value) < 100"; }
# A raw Fetch v4, read_committed: the values it returns minus those of the
# transactions it lists as aborted, as a client drops them (KIP-98).
fetch_wire() {
	/usr/bin/python3 - "$KPORT" <<'EOF'
import socket, struct, sys
port = int(sys.argv[1])
def i8(b, o): return struct.unpack_from(">b", b, o)[0], o + 1
def i16(b, o): return struct.unpack_from(">h", b, o)[0], o + 2
def i32(b, o): return struct.unpack_from(">i", b, o)[0], o + 4
def i64(b, o): return struct.unpack_from(">q", b, o)[0], o + 8
def varint(b, o):
    v = s = 0
    while True:
        x = b[o]; o += 1
        v |= (x & 0x7f) << s; s += 7
        if not x & 0x80: break
    return (v >> 1) ^ -(v & 1), o
topic = b"horizon"
body = struct.pack(">iiiib", -1, 1000, 1, 10 << 20, 1)          # replica, wait, min, max bytes, read_committed
body += struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic
body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 10 << 20)  # partition 0 from offset 0
hdr = struct.pack(">hhih", 1, 4, 7, 4) + b"test"
msg = hdr + body
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(struct.pack(">i", len(msg)) + msg)
def recvn(n):
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d))
        if not c: raise SystemExit("connection closed")
        d += c
    return d
n = struct.unpack(">i", recvn(4))[0]
b = recvn(n)
o = 4                                   # correlation id
_, o = i32(b, o)                        # throttle
nt, o = i32(b, o)
ln, o = i16(b, o); o += ln
np_, o = i32(b, o)
_, o = i32(b, o)                        # partition
err, o = i16(b, o)
hw, o = i64(b, o); lso, o = i64(b, o)
na, o = i32(b, o)
aborted = []
for _ in range(max(na, 0)):
    pid, o = i64(b, o); first, o = i64(b, o)
    aborted.append((pid, first))
rl, o = i32(b, o)
recs = b[o:o + rl]
values = []
active = set()
p = 0
while p + 61 <= len(recs):
    base, _ = i64(recs, p)
    blen, _ = i32(recs, p + 8)
    attrs, _ = i16(recs, p + 21)
    pid, _ = i64(recs, p + 43)
    cnt, _ = i32(recs, p + 57)
    for a_pid, a_first in aborted:
        if a_pid == pid and a_first <= base:
            active.add(pid)
    q = p + 61
    for _ in range(cnt):
        _, q = varint(recs, q); q += 1
        _, q = varint(recs, q); _, q = varint(recs, q)
        kl, q = varint(recs, q); q += max(kl, 0)
        vl, q = varint(recs, q); v = recs[q:q + vl]; q += max(vl, 0)
        hc, q = varint(recs, q)
        for _ in range(hc):
            hl, q = varint(recs, q); q += hl
            hl, q = varint(recs, q); q += max(hl, 0)
        if attrs & 0x20:               # a marker: an ABORT ends its producer's aborted run
            active.discard(pid)
        elif pid not in active and len(v) < 100:
            values.append(v.decode())
    p += 12 + blen
print("%s|aborted=%d" % (",".join(values), len(aborted)))
EOF
}

check "SQL fetch hides the rolled-back records" "$([ "$(fetch_sql)" = "$EXPECT" ] && echo 1)" "($(fetch_sql))"
# (what this checks is what is hidden; "after" comes once its marker is flushed: up to 5 s for it)
for i in $(seq 1 50); do
	w=$(fetch_wire)
	[ "$w" = "$EXPECT|aborted=1" ] && break
	sleep 0.1
done
check "wire read_committed lists the aborted transaction and hides its records" \
	"$([ "$w" = "$EXPECT|aborted=1" ] && echo 1)" "($w)"

# A transaction open when the server is killed, its first batch in a
# segment older than the active one.
kp_psql "$PORT" postgres -q -c "BEGIN" -c "SELECT kafka.produce('horizon', 'k', 'open at the crash')" \
	-c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
for i in $(seq 1 100); do
	[ "$(sql "SELECT count(*) FROM kafka.fetch_text('horizon', 0, 0, 100, 'read_uncommitted') WHERE value = 'open at the crash'")" = 1 ] && break
	sleep 0.1
done
sql "SELECT count(*) FROM generate_series(1, 11) b, LATERAL kafka.produce_batch('horizon', NULL,
       (SELECT array_agg(convert_to(lpad(b::text || '-' || g::text, 1000, '.'), 'UTF8'))
          FROM generate_series(1, 100) g), partition => 0) r" >/dev/null
SEGS=$(sql "SELECT count(*) FROM kafka.segments WHERE topic = 'horizon'")
check "the open transaction's first batch is in an older segment ($SEGS segments)" "$([ "$SEGS" -ge 2 ] && echo 1)"
pm=$(kp_postmaster_pid "$DATA")
kids=$(pgrep -P "$pm")
kill -9 "$pm" $kids 2>/dev/null
wait 2>/dev/null
for i in $(seq 1 150); do
	alive=0
	for p in $pm $kids; do kill -0 "$p" 2>/dev/null && alive=1; done
	[ $alive = 0 ] && break
	sleep 0.2
done
kp_start "$DATA" || exit 1
kp_wait_ready "$PORT" 60 >/dev/null 2>&1
# the resolver loads the partition on its own; nothing here reads it
sleep 3

# Consume more than two million xids: one round trip, a transaction per
# iteration (synchronous_commit off: no WAL flush per commit).
t0=$(date +%s)
sql "CREATE PROCEDURE burn_xids(n int) LANGUAGE plpgsql AS \$\$
BEGIN
  FOR i IN 1..n LOOP
    PERFORM pg_current_xact_id();
    COMMIT;
  END LOOP;
END \$\$" >/dev/null
kp_psql "$PORT" postgres -q -c "SET synchronous_commit = off" -c "CALL burn_xids(2100000)"
NEXT=$(sql "SELECT pg_current_xact_id()")
echo "# consumed $((NEXT - XID)) xids in $(( $(date +%s) - t0 )) s"

# Freeze every database, template0 included, so the commit log can be cut.
t0=$(date +%s)
sql "ALTER DATABASE template0 ALLOW_CONNECTIONS true" >/dev/null
for db in $(sql "SELECT datname FROM pg_database ORDER BY datname"); do
	kp_psql "$PORT" "$db" -q -c "VACUUM (FREEZE)"
done
sql "ALTER DATABASE template0 ALLOW_CONNECTIONS false" >/dev/null
sql "CHECKPOINT" >/dev/null
echo "# froze every database in $(( $(date +%s) - t0 )) s; datfrozenxid now $(sql "SELECT min(datfrozenxid::text::bigint) FROM pg_database")"
gone=$(sql "SELECT count(*) = 0 FROM pg_ls_dir('pg_xact') f WHERE f = '0000'")
check "pg_xact/0000 is gone (the commit log no longer knows xid $XID)" "$([ "$gone" = t ] && echo 1)" "(pg_xact: $(sql "SELECT string_agg(f, ' ') FROM pg_ls_dir('pg_xact') f"))"

LOG=$(kp_logfile "$DATA")
check "no transaction was left without a marker past the commit log" \
	"$(grep -q 'older than the commit log' "$LOG" || echo 1)" "($(grep 'older than the commit log' "$LOG" | head -n 2))"
aborts=$(sql "SELECT count(*) FROM kafka.dump_log('horizon', 0) WHERE control_type = 'ABORT'")
check "the transaction cut short by the crash got its ABORT marker" "$([ "$aborts" = 2 ] && echo 1)" "($aborts ABORT markers)"
check "SQL fetch still hides the rolled-back records past the commit log" "$([ "$(fetch_sql)" = "$EXPECT" ] && echo 1)" "($(fetch_sql))"
w=$(fetch_wire)
# both aborted transactions are listed now: the rolled-back one and the crashed one
check "wire read_committed still hides them past the commit log" "$([ "$w" = "$EXPECT|aborted=2" ] && echo 1)" "($w)"

# The index is WAL-logged: it survives a crash and crash recovery.
kp_as_pg "$PG_BINDIR/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null
sleep 1
kp_start "$DATA" || exit 1
kp_wait_ready "$PORT" 60 >/dev/null 2>&1
for i in $(seq 1 50); do
	w=$(fetch_wire 2>/dev/null) && [ -n "$w" ] && break
	sleep 0.2
done
check "after kill -9 and restart, SQL fetch still hides them" "$([ "$(fetch_sql)" = "$EXPECT" ] && echo 1)" "($(fetch_sql))"
check "after kill -9 and restart, wire read_committed still hides them" "$([ "$w" = "$EXPECT|aborted=2" ] && echo 1)" "($w)"

tap_finish
