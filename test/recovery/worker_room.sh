#!/bin/bash
# test/recovery/worker_room.sh: a max_worker_processes too small for kafka_pg's background workers
# is said by name at start, and the broker runs with the workers that fit.
#
# PostgreSQL refuses a registration beyond max_worker_processes with a LOG line naming no worker
# ("too many background workers"). With max_worker_processes = 4 (the logical replication launcher
# registers first, so 3 remain) kafka_pg registers 7 workers — resolver, log cleaner, 2 listener
# workers, WAL flusher, 2 share acquirers — and must log one WARNING naming the last four, with the
# setting that gives them room (8). Checks: that WARNING; the three that fit run
# (pg_stat_activity), the others do not; the one listener worker serves Kafka (ApiVersions). Then,
# restarted with max_worker_processes = 16: no such WARNING and all seven run.
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. test/lib/tap.sh

kp_scratch room 56472 29232 || exit 1
LOG=$(kp_logfile "$DATA")

# its own cluster serves its own postgres database (the suite exports the shared cluster's)
export KP_KAFKA_DB=postgres
KP_EXTRA_CONF="max_worker_processes = 4
max_logical_replication_workers = 4" kp_init "$DATA" "$PORT" "$KPORT" || exit 1
kp_start "$DATA" || exit 1
kp_create_extension "$PORT" postgres >/dev/null || exit 1
running() { kp_psql "$PORT" postgres -At -c "SELECT string_agg(backend_type, ',' ORDER BY backend_type COLLATE \"C\") FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg %'"; }
settle() { # wait up to 10 s for the running workers to stop changing
	local last="" now i
	for i in $(seq 1 20); do
		now=$(running)
		[ -n "$now" ] && [ "$now" = "$last" ] && break
		last=$now
		sleep 0.5
	done
}

settle
warning=$(grep -c 'WARNING:  kafka_pg: max_worker_processes (4) has no room for 4 of its 7 background workers' "$LOG")
check "a WARNING says max_worker_processes 4 has no room for 4 of kafka_pg's 7 workers" "$([ "$warning" = 1 ] && echo 1)" "(found $warning)"
named=$(grep -A1 'has no room for' "$LOG" | grep -c 'DETAIL:  They do not start: "kafka_pg listener 1", "kafka_pg WAL flusher", "kafka_pg share acquirer 0", "kafka_pg share acquirer 1".')
check "its detail names the four that do not start" "$([ "$named" = 1 ] && echo 1)" "($(grep -A2 'has no room for' "$LOG" | tail -2))"
hint=$(grep -A2 'has no room for' "$LOG" | grep -c 'HINT:  Set max_worker_processes to at least 8 ')
check "its hint gives 8 (the 7 and the logical replication launcher)" "$([ "$hint" = 1 ] && echo 1)"
now=$(running)
check "the three that fit run: resolver, log cleaner, one listener worker" \
	"$([ "$now" = "kafka_pg listener,kafka_pg log cleaner,kafka_pg resolver" ] && echo 1)" "($now)"
kp_wait_kafka "$KPORT" 30
answered=$(/usr/bin/python3 - "$KPORT" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
body = struct.pack(">hhih", 18, 0, 1, 4) + b"room"   # ApiVersions v0, correlation id 1
s.sendall(struct.pack(">i", len(body)) + body)
n = struct.unpack(">i", s.recv(4))[0]
data = b""
while len(data) < n:
    data += s.recv(n - len(data))
corr, err = struct.unpack(">ih", data[:6])
print(1 if corr == 1 and err == 0 else 0)
PY
)
check "the listener worker that runs answers ApiVersions" "$answered"

kp_stop "$DATA"
printf 'max_worker_processes = 16\n' | kp_as_pg tee -a "$DATA/postgresql.auto.conf" >/dev/null
before=$(grep -c 'has no room for' "$LOG")
kp_start "$DATA" || exit 1
settle
after=$(grep -c 'has no room for' "$LOG")
check "with max_worker_processes 16: no such WARNING" "$([ "$before" = "$after" ] && echo 1)" "($before, then $after)"
now=$(running)
check "and all seven run" \
	"$([ "$now" = "kafka_pg WAL flusher,kafka_pg listener,kafka_pg listener,kafka_pg log cleaner,kafka_pg resolver,kafka_pg share acquirer,kafka_pg share acquirer" ] && echo 1)" "($now)"
tap_finish
