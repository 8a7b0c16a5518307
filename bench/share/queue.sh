#!/usr/bin/env bash
# The SQL queue benchmark (issue 12's second figure): kafka_pg's share groups in SQL beside a
# SKIP LOCKED queue table and beside PgQ (Debian's postgresql-15-pgq3), on one throwaway cluster
# this script starts (its own port, removed at the end). Prints medians, spreads and ratios;
# asserts nothing.
#
#   bash bench/share/queue.sh                      # ~6 minutes on 2 cores
#   BENCH_SOAK_SECONDS=600 bash bench/share/queue.sh   # the 10-minute bloat figure (~35 minutes)
#
# Each consumer transaction takes BENCH_BATCH (100) messages, inserts each into a results table
# with a primary key (the "processing") and acknowledges them, and commits:
#   kafka_pg   BEGIN; kafka.share_acquire(group, topic, 100) -> INSERT -> kafka.share_acknowledge
#              (accept, per run of offsets); COMMIT - BENCH_CLIENTS (8) sessions, topic of 2 partitions
#   SKIP LOCKED  WITH s AS MATERIALIZED (SELECT id ... ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
#              DELETE ... USING s RETURNING -> INSERT; 8 sessions
#   PgQ        pgq.next_batch -> pgq.get_batch_events -> INSERT -> pgq.finish_batch; ONE session:
#              a PgQ consumer reads its batches in order, so sessions of one consumer would all get
#              the same batch (PgQ's cooperative consumers are not in the Debian package); ticks
#              every 100 events (ticker_max_count), so its batches are 100 too
#
# 1. Throughput: BENCH_MESSAGES (100000) messages of 100 B are written first, then drained by the
#    consumers; messages/s = messages in the results table / wall time of the drain. BENCH_REPS (3)
#    repetitions, the three systems interleaved.
# 2. Bloat: BENCH_SOAK_SECONDS (60) of steady work per system: a producer at BENCH_SOAK_RATE
#    (2000) messages/s while the consumers drain, autovacuum on (the defaults); then the size of
#    the queue's own tables (with indexes and TOAST) and their dead rows, beside their size at the
#    start: kafka_pg: kafka.share_records + kafka.share_partitions (the log itself is the topic's,
#    bounded by retention like Kafka's); SKIP LOCKED: the queue table; PgQ: its event tables.
#
# Needs: the extension installed (make install), pgbench and psql, root or a user who can initdb,
# postgresql-15-pgq3 (scripts/install-deps.sh; copied into a relocated PostgreSQL when needed).
# Settings: BENCH_PORT (56290), BENCH_KAFKA_PORT (19290), BENCH_PARTS ("throughput soak"),
# BENCH_SYSTEMS ("kp sl pgq"), and the ones above.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/../lib.sh"
. "$repo/test/lib/cluster.sh"
REPS=${BENCH_REPS:-3}
N=${BENCH_MESSAGES:-100000}
C=${BENCH_CLIENTS:-8}
B=${BENCH_BATCH:-100}
SOAK=${BENCH_SOAK_SECONDS:-60}
PARTS=${BENCH_PARTS:-throughput soak}
SYSTEMS=${BENCH_SYSTEMS:-kp sl pgq}
RATE=${BENCH_SOAK_RATE:-2000}
PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
say() { echo "$*" >&2; }

# PgQ: Debian installs it into the system PostgreSQL; a relocated one (pg_config elsewhere) gets a copy
sharedir=$(pg_config --sharedir)
libdir=$(pg_config --pkglibdir)
if [ ! -f "$sharedir/extension/pgq.control" ]; then
	if [ ! -f /usr/share/postgresql/15/extension/pgq.control ]; then
		say "bench: PgQ is not installed (apt-get install postgresql-15-pgq3, or scripts/install-deps.sh)"
		exit 1
	fi
	cp /usr/share/postgresql/15/extension/pgq* "$sharedir/extension/"
	cp /usr/lib/postgresql/15/lib/pgq*.so "$libdir/" 2>/dev/null || true
fi

mkdir -p "$repo/bench/out"
LOG=$repo/bench/out/share-queue-$(date +%Y%m%d-%H%M%S).log
TMP=$(kp_mktemp share-queue)
DATA=$TMP/data
PORT=$(kp_free_port "${BENCH_PORT:-56290}")
KPORT=$(kp_free_port "${BENCH_KAFKA_PORT:-19290}" "$PORT")
trap 'kp_stop "$DATA" fast >/dev/null 2>&1; rm -rf "$TMP"' EXIT
kp_init "$DATA" "$PORT" "$KPORT" >>"$LOG" 2>&1 || { say "bench: initdb failed"; exit 1; }
kp_start "$DATA" >>"$LOG" 2>&1 || { say "bench: the server did not start"; exit 1; }
kp_create_extension "$PORT" postgres >>"$LOG" 2>&1 || { say "bench: CREATE EXTENSION kafka_pg failed"; exit 1; }
q() { kp_psql "$PORT" postgres -At -c "$1" 2>>"$LOG"; }
# always run in the background (&): exec, so that $! is pgbench itself and kill stops it
pgb() { PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres exec "$PG_BINDIR/pgbench" -n "$@" postgres >>"$LOG" 2>&1; }

kp_psql "$PORT" postgres >>"$LOG" 2>&1 <<SQL || { say "bench: setup failed (see $LOG)"; exit 1; }
CREATE EXTENSION pgq;
CREATE TABLE sl_queue (id bigserial PRIMARY KEY, payload text NOT NULL);
CREATE TABLE res_kp (partition int, "offset" bigint, payload text, PRIMARY KEY (partition, "offset"));
CREATE TABLE res_sl (id bigint PRIMARY KEY, payload text);
CREATE TABLE res_pgq (id bigint PRIMARY KEY, payload text);
SELECT kafka.create_topic('bq', 2);
SELECT pgq.create_queue('bq');
SELECT pgq.set_queue_config('bq', 'ticker_max_count', '$B');
-- PgQ reclaims space by rotating its event tables (TRUNCATE of the oldest), every 2 hours by
-- default: every minute here, so that a 10-minute run shows it
SELECT pgq.set_queue_config('bq', 'rotation_period', '1 minute');
SELECT pgq.register_consumer('bq', 'c');

-- one consumer transaction of each system: returns how many messages it processed
CREATE FUNCTION bench_kp(n int) RETURNS int LANGUAGE sql AS \$\$
	WITH a AS MATERIALIZED (SELECT partition, "offset", value FROM kafka.share_acquire('bq', 'bq', n)),
		 i AS (INSERT INTO res_kp SELECT partition, "offset", convert_from(value, 'UTF8') FROM a),
		 k AS (SELECT kafka.share_acknowledge('bq', 'bq', partition, min("offset"), max("offset")) AS c
			   FROM (SELECT partition, "offset",
							"offset" - row_number() OVER (PARTITION BY partition ORDER BY "offset") AS run
					 FROM a) x
			   GROUP BY partition, run)
	SELECT coalesce(sum(c), 0)::int FROM k
\$\$;
-- the usual SKIP LOCKED consumer; the ids chosen first (MATERIALIZED): written as
-- DELETE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED) the planner may rescan the locking
-- subquery for each row once the table is large, and the queue stalls
CREATE FUNCTION bench_sl(n int) RETURNS int LANGUAGE sql AS \$\$
	WITH s AS MATERIALIZED (SELECT id FROM sl_queue ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED),
		 d AS (DELETE FROM sl_queue q USING s WHERE q.id = s.id RETURNING q.id, q.payload),
		 i AS (INSERT INTO res_sl SELECT id, payload FROM d RETURNING 1)
	SELECT count(*)::int FROM i
\$\$;
CREATE FUNCTION bench_pgq() RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE b bigint; c int;
BEGIN
	b := pgq.next_batch('bq', 'c');
	IF b IS NULL THEN RETURN 0; END IF;
	INSERT INTO res_pgq SELECT ev_id, ev_data FROM pgq.get_batch_events(b);
	GET DIAGNOSTICS c = ROW_COUNT;
	PERFORM pgq.finish_batch(b);
	RETURN c;
END \$\$;
-- the producers: n messages of 100 B
CREATE FUNCTION produce_kp(n int) RETURNS void LANGUAGE sql AS \$\$
	SELECT kafka.produce_batch('bq', NULL::text[], (SELECT array_agg(rpad('m' || g, 100, 'x')) FROM generate_series(1, n) g),
							   partition => p) FROM generate_series(0, 1) p
\$\$;
CREATE FUNCTION produce_sl(n int) RETURNS void LANGUAGE sql AS \$\$
	INSERT INTO sl_queue (payload) SELECT rpad('m' || g, 100, 'x') FROM generate_series(1, n) g
\$\$;
CREATE FUNCTION produce_pgq(n int) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM pgq.insert_event('bq', 'm', rpad('m' || g, 100, 'x')) FROM generate_series(1, n) g;
END \$\$;
INSERT INTO kafka.group_configs VALUES ('bq', 'share.auto.offset.reset', 'earliest');
SQL

cat >"$TMP/kp.sql" <<EOF
SELECT bench_kp($B);
EOF
cat >"$TMP/sl.sql" <<EOF
SELECT bench_sl($B);
EOF
cat >"$TMP/pgq.sql" <<EOF
SELECT bench_pgq();
EOF
cat >"$TMP/ticker.sql" <<EOF
SELECT pgq.ticker();
EOF

# fill SYSTEM N: N messages waiting (PgQ: a tick after every batch of them)
fill() {
	local sys=$1 n=$2 left=$2 chunk
	while [ "$left" -gt 0 ]; do
		chunk=$((left < 10000 ? left : 10000))
		case $sys in
		kp) q "SELECT produce_kp($((chunk / 2)))" >/dev/null ;;
		sl) q "SELECT produce_sl($chunk)" >/dev/null ;;
		pgq)
			# each batch in a transaction of its own, then a tick: PgQ's batches are what lies between ticks
			for _ in $(seq 1 $((chunk / B))); do
				echo "SELECT produce_pgq($B);"
				echo "SELECT pgq.ticker();"
			done | kp_psql "$PORT" postgres -At >/dev/null 2>>"$LOG"
			;;
		esac
		left=$((left - chunk))
	done
}
count() { q "SELECT count(*) FROM res_$1"; }
now() { date +%s.%N; }

# drain SYSTEM: consumers until the results table has all N; prints messages/s
drain() {
	local sys=$1 before after t0 t1 clients=$C script
	q "TRUNCATE res_$sys" >/dev/null
	before=0
	script=$TMP/$sys.sql
	[ "$sys" = pgq ] && clients=1
	t0=$(now)
	# the clients run until the queue is drained (BENCH_MAX_SECONDS at most)
	pgb -c "$clients" -j "$clients" -T "${BENCH_MAX_SECONDS:-120}" -f "$script" &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		after=$(count "$sys")
		if [ "$((after - before))" -ge "$N" ]; then
			t1=$(now)
			kill -TERM "$pid" 2>/dev/null
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null
	after=$(count "$sys")
	[ -n "${t1:-}" ] || t1=$(now)
	awk -v n="$((after - before))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", n / (b - a) }'
}

declare -A R
for rep in $(seq 1 "$REPS"); do
	[[ " $PARTS " == *" throughput "* ]] || break
	for sys in $SYSTEMS; do
		say "bench: rep $rep $sys: $N messages"
		fill "$sys" "$N"
		q "VACUUM ANALYZE" >/dev/null
		v=$(drain "$sys")
		say "bench: rep $rep $sys: $v messages/s"
		R[$sys]="${R[$sys]:-} $v"
		echo "== rep $rep $sys: $v messages/s" >>"$LOG"
	done
done

# the queue's own tables (with indexes and TOAST): bytes and dead rows
state_tables() {
	case $1 in
	kp) echo "'kafka.share_records'::regclass, 'kafka.share_partitions'::regclass" ;;
	sl) echo "'sl_queue'::regclass" ;;
	pgq) echo "$(q "SELECT string_agg(format('%L::regclass', c.oid::regclass), ', ') FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pgq' AND c.relname LIKE 'event_%' AND c.relkind = 'r'")" ;;
	esac
}
sizes() {
	q "SELECT sum(pg_total_relation_size(r)), sum(coalesce(s.n_dead_tup, 0)) FROM unnest(ARRAY[$(state_tables "$1")]) r
	   LEFT JOIN pg_stat_user_tables s ON s.relid = r"
}
cat >"$TMP/prod_kp.sql" <<EOF
SELECT produce_kp($((B / 2)));
EOF
cat >"$TMP/prod_sl.sql" <<EOF
SELECT produce_sl($B);
EOF
cat >"$TMP/prod_pgq.sql" <<EOF
SELECT produce_pgq($B);
SELECT pgq.ticker();
SELECT pgq.maint_rotate_tables_step1('bq');
SELECT pgq.maint_rotate_tables_step2();
EOF
declare -A S
for sys in $SYSTEMS; do
	[[ " $PARTS " == *" soak "* ]] || break
	say "bench: soak $sys: $SOAK s, $RATE messages/s produced"
	q "VACUUM ANALYZE" >/dev/null
	start=$(sizes "$sys")
	before=$(count "$sys")
	clients=$C
	[ "$sys" = pgq ] && clients=1
	pgb -c 1 -j 1 -T "$SOAK" -R "$((RATE / B))" -f "$TMP/prod_$sys.sql" &
	ppid=$!
	pgb -c "$clients" -j "$clients" -T "$SOAK" -f "$TMP/$sys.sql" &
	cpid=$!
	wait "$ppid" "$cpid"
	after=$(count "$sys")
	end=$(sizes "$sys")
	S[$sys]="${start%|*}|${end%|*}|${end#*|}|$((after - before))"
	say "bench: soak $sys: bytes at start ${start%|*}, at end ${end%|*}, dead rows ${end#*|}, $((after - before)) consumed"
	echo "== soak $sys: ${S[$sys]}" >>"$LOG"
done

mk=$(median "${R[kp]:-}")
ms=$(median "${R[sl]:-}")
mq=$(median "${R[pgq]:-}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a+0 == 0 || b+0 == 0) print "n/a"; else printf "%.2f", a / b }'; }
echo "SQL queues on one server: $N messages of 100 B, batches of $B, medians of $REPS ($(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "| queue | sessions | messages/s | spread | kafka_pg / it |"
echo "|---|---|---|---|---|"
printf "| kafka_pg share group (SQL) | %d | %s | %s | 1.00 |\n" "$C" "$(fmt "$mk")" "$(spread "${R[kp]:-}")"
printf "| SKIP LOCKED table | %d | %s | %s | %s |\n" "$C" "$(fmt "$ms")" "$(spread "${R[sl]:-}")" "$(ratio "$mk" "$ms")"
printf "| PgQ | 1 | %s | %s | %s |\n" "$(fmt "$mq")" "$(spread "${R[pgq]:-}")" "$(ratio "$mk" "$mq")"
echo "runs: kafka_pg${R[kp]:-} / SKIP LOCKED${R[sl]:-} / PgQ${R[pgq]:-}"
echo
echo "After $SOAK s of steady work ($RATE messages/s produced, consumers as above, autovacuum on):"
echo
echo "| queue | state tables at start (bytes) | at end (bytes) | dead rows at end | consumed |"
echo "|---|---|---|---|---|"
for sys in $SYSTEMS; do
	[ -n "${S[$sys]:-}" ] || continue
	IFS='|' read -r a b d n <<<"${S[$sys]}"
	name=$([ $sys = kp ] && echo "kafka_pg share group" || ([ $sys = sl ] && echo "SKIP LOCKED table" || echo "PgQ"))
	printf "| %s | %s | %s | %s | %s |\n" "$name" "$a" "$b" "$d" "$n"
done
echo
echo "raw output: ${LOG#$repo/}"
