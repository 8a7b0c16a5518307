# bench/lib.sh: what the benchmark scripts share (sourced, not run).

# median of the numeric values in $1 (space-separated); "fail"/"n/a" when none is numeric
median() {
	local nums
	nums=$(tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$' | sort -g)
	if [ -z "$nums" ]; then
		tr ' ' '\n' <<<"$1" | grep -v '^$' | head -1
		return
	fi
	awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }' <<<"$nums"
}

# "min-max" of the numeric values in $1
spread() {
	tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$' | sort -g |
		awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s-%s", lo, hi; else print "-" }'
}

# a number with one decimal, anything else as it is
fmt() { if [[ $1 =~ ^[0-9.]+$ ]]; then printf '%.1f' "$1"; else printf '%s' "$1"; fi; }

# bench_init NAME: after KPORT is set, the common start of a benchmark script that runs Apache
# Kafka beside kafka_pg: $repo, $K (test/clients/kafka/kafka.sh), the raw log
# bench/out/NAME-<time>.log in $LOG, a scratch folder $work (Kafka's state inside), say(), and a
# trap that stops Kafka and removes $work on exit.
bench_init() {
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	K=$repo/test/clients/kafka/kafka.sh
	mkdir -p "$repo/bench/out"
	LOG=$repo/bench/out/$1-$(date +%Y%m%d-%H%M%S).log
	work=$(mktemp -d)
	export KAFKA_STATE_DIR=$work/kafka
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}
say() { echo "$*" >&2; }
bench_cleanup() {
	"$K" stop "$KPORT" >/dev/null 2>&1 || true
	rm -rf "$work"
}

# wait_sync_standby PSQL PORT NAME: once synchronous_standby_names names standby NAME and was
# reloaded on the server at PORT (PSQL: the psql to ask with), return when commits wait for it:
# it streams as 'sync' in pg_stat_replication, and the checkpointer, which publishes the setting
# to the walsenders' shared state only after its own reload (docs/replication.md), is past that
# reload (its loop handles a pending reload before it takes a CHECKPOINT's request).  Fails
# after 60 s.
wait_sync_standby() {
	local i
	for i in $(seq 1 120); do
		if [ "$("$1" -X -At -h 127.0.0.1 -p "$2" -U postgres -d postgres -c "SELECT count(*) FROM pg_stat_replication WHERE application_name = '$3' AND sync_state = 'sync' AND state = 'streaming'")" = 1 ]; then
			"$1" -X -q -h 127.0.0.1 -p "$2" -U postgres -d postgres -c "CHECKPOINT" >/dev/null
			return
		fi
		sleep 0.5
	done
	return 1
}

# Two kafka_pg builds side by side (bench/wire/produce_cpu_ab.sh, acks_all_ab.sh): a baseline and a
# candidate, the PostgreSQL installations $BASE_BINDIR and $NEW_BINDIR, each with its kafka_pg
# (e.g. made with `source /work/pgr-env.sh NAME; make install` from two trees).
# ab_pgc BINDIR ARGS...: test/lib/pgcluster ARGS with that installation
ab_pgc() { PG_BINDIR=$1 bash "$(dirname "${BASH_SOURCE[0]}")/../test/lib/pgcluster" "${@:2}"; }

# ab_clusters NAME FIRST_PORT FIRST_KAFKA_PORT EXTRA_CONF [HOOK]: a throwaway cluster per build,
# "base" and "new", in the scratch folder $work (stopped and removed on exit), each with the
# postgresql.conf lines EXTRA_CONF and a topic "ab" of 6 partitions, on the first free ports from
# FIRST_PORT (PostgreSQL) and FIRST_KAFKA_PORT (the listener).  HOOK BUILD, if given, runs once the
# build's server serves and before the topic is made (acks_all_ab.sh adds a standby there); it may
# raise ab_port, the last PostgreSQL port taken, for the next build to start above.  Sets
# pgport[BUILD], kport[BUILD] and bindirs[BUILD].  AB_BASE_CONF and AB_NEW_CONF, if set, are more
# postgresql.conf lines for that build's cluster alone, after EXTRA_CONF: with one build as both,
# the two clusters then differ only by a setting (e.g. AB_NEW_CONF='huge_pages = on': the
# harness's clusters have huge_pages off).
ab_clusters() {
	local name=$1 extra=$4 hook=${5:-} build bindir kp=$3 conf
	: "${BASE_BINDIR:?the baseline PostgreSQL bin directory}" "${NEW_BINDIR:?the candidate PostgreSQL bin directory}"
	: "${AB_BASE_CONF:=}" "${AB_NEW_CONF:=}"
	declare -gA pgport kport bindirs
	work=$(ab_pgc "$NEW_BINDIR" mktemp "$name") || exit 1
	trap ab_cleanup EXIT
	trap 'exit 130' INT TERM
	ab_port=$2
	for build in base new; do
		bindir=$BASE_BINDIR
		[ $build = new ] && bindir=$NEW_BINDIR
		ab_port=$(ab_pgc "$bindir" free-port "$ab_port")
		kp=$(ab_pgc "$bindir" free-port "$kp" "$ab_port")
		mkdir -p "$work/$build"
		chown postgres:postgres "$work/$build" 2>/dev/null || true
		conf=$AB_BASE_CONF
		[ $build = new ] && conf=$AB_NEW_CONF
		KP_EXTRA_CONF="$extra${conf:+$'\n'$conf}" ab_pgc "$bindir" init "$work/$build/data" "$ab_port" "$kp" >/dev/null || exit 1
		ab_pgc "$bindir" start "$work/$build/data" || exit 1
		ab_pgc "$bindir" create-extension "$ab_port" postgres >/dev/null || exit 1
		pgport[$build]=$ab_port
		kport[$build]=$kp
		bindirs[$build]=$bindir
		[ -z "$hook" ] || "$hook" "$build" || exit 1
		"$bindir/psql" -X -q -h 127.0.0.1 -p "${pgport[$build]}" -U postgres -c "SELECT kafka.create_topic('ab', 6)" >/dev/null || exit 1
		ab_port=$((ab_port + 1))
		kp=$((kp + 1))
	done
}
ab_cleanup() {
	local d
	for d in "$work"/*/data "$work"/*/standby; do
		[ -d "$d" ] && ab_pgc "$NEW_BINDIR" stop "$d" immediate
	done
	rm -rf "$work"
}

# WireBench (bench/wire/WireBench.java) for a script that runs it directly, with the Kafka jars.
# wb_build DIR: fetch the jars (into $jars) and compile WireBench into DIR (into $wb_classes).
wb_build() {
	local root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	jars=$("$root/test/clients/kafka/fetch-kafka.sh") || { echo "cannot fetch the Kafka jars" >&2; return 1; }
	wb_classes=$1
	wb_log4j=$root/test/clients/kafka/log4j2-tools.properties
	javac -nowarn -cp "$jars/*" -d "$wb_classes" "$root/bench/wire/WireBench.java"
}
# wb [-Dprop=value...] COMMAND ARGS...: run WireBench (after wb_build), for at most WB_TIMEOUT
# seconds when that is set, with the JVM options WB_JAVA_OPTS (space-separated) when set, e.g.
# WB_JAVA_OPTS="-Xlog:gc:file=DIR/gc-%p.log:timenanos" for bench/tuning/e2e_sched.py
wb() {
	local props=() limit=() jopts=()
	while [[ ${1:-} == -D* ]]; do props+=("$1"); shift; done
	[ -z "${WB_TIMEOUT:-}" ] || limit=(timeout "$WB_TIMEOUT")
	[ -z "${WB_JAVA_OPTS:-}" ] || read -ra jopts <<<"$WB_JAVA_OPTS"
	"${limit[@]}" java -Xmx1g -XX:+UseG1GC "${jopts[@]}" -Dlog4j2.configurationFile="$wb_log4j" "${props[@]}" \
		-cp "$wb_classes:$jars/*" WireBench "$@"
}

# wait_partitions_loaded PGPORT: after a start, wait (up to 10 minutes) until the kafka_pg resolver of
# the cluster on 127.0.0.1:PGPORT has loaded every partition: it reads the batch headers of each
# active segment after every start from its producer-state snapshot on, or all of them where it has
# none, up to tens of seconds of a CPU (src/txn/resolver.c; the server log's "kafka_pg resolver:
# loaded N partitions in S s (...)"; docs/performance.md, "The first minute after a restart").  Done
# when the resolver, once it runs, used less than 100 ms of CPU in a second.
wait_partitions_loaded() {
	local pid="" a b i
	for i in $(seq 1 30); do
		pid=$(psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -XAtq \
			-c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'kafka_pg resolver'") || return 1
		[ -n "$pid" ] && break
		sleep 1
	done
	[ -n "$pid" ] || return 0
	for i in $(seq 1 600); do
		a=$(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null) || return 0
		sleep 1
		b=$(cut -d' ' -f1 "/proc/$pid/schedstat" 2>/dev/null) || return 0
		[ $((b - a)) -lt 100000000 ] && return 0
	done
	return 1
}

# restart_broker DATADIR BOOTSTRAP: restart the kafka_pg cluster in DATADIR (test/lib/cluster.sh's
# kp_stop and kp_start, which the caller has sourced) and wait until its listener accepts
restart_broker() {
	kp_stop "$1"
	kp_start "$1" || return 1
	kp_wait_kafka "${2##*:}" >/dev/null 2>&1
}

# install_so SRC [DEST]: SRC as the installed kafka_pg.so (DEST: pg_config's pkglibdir's), put there as
# `make install` puts it, by install(1): a new file in its place.  Never with cp, which rewrites the
# old file in place: every PostgreSQL process of a running server that loaded it (all of them, by
# shared_preload_libraries) then runs code paged in from the new bytes and crashes with SIGSEGV,
# which restarts the server and loses what acks=1 had not yet flushed (seen 2026-12-03).
install_so() { install -m 755 "$1" "${2:-$(pg_config --pkglibdir)/kafka_pg.so}"; }

# perf_produce K BOOTSTRAP TOPIC RECORDS SIZE ACKS BATCH: kafka-producer-perf-test (K is
# test/clients/kafka/kafka.sh) as fast as it goes, linger.ms 5; prints its records/s, whole, or
# nothing when it did not finish
perf_produce() {
	"$1" cli kafka-producer-perf-test --topic "$3" --num-records "$4" --record-size "$5" --throughput -1 \
		--producer-props bootstrap.servers="$2" acks="$6" batch.size="$7" linger.ms=5 2>&1 |
		grep -E "^$4 records sent" | tail -1 | sed -E 's/.* records sent, ([0-9]+)[0-9.]* records\/sec.*/\1/'
}

# prewarm_buffers PGPORT: the kafka_pg cluster on 127.0.0.1:PGPORT as a broker that has run a while
# is, after a start: its partitions loaded (wait_partitions_loaded), then every shared buffer
# touched once.  The first use of each buffer's memory after a start costs the kernel a page fault
# and a page cleared (22% of a listener worker's CPU in a profile right after a restart, at 42,000
# 1 KiB records/s; acks=all 7-13% slower over the first 0.6 GB: docs/performance.md).  pg_prewarm
# reads into the buffers a table a little larger than shared_buffers: bench_prewarm in the postgres
# database, one ~700-byte row per 8 KB page (fillfactor 10), made on first use (about a minute, and
# shared_buffers + 512 MB of disk) and kept for the next run.
prewarm_buffers() {
	local q=(env PGOPTIONS=-cclient_min_messages=warning psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -XAtq -c) want
	wait_partitions_loaded "$1" || echo "prewarm_buffers: the resolver still busy after 10 minutes" >&2
	want=$("${q[@]}" "SELECT setting::bigint + 65536 FROM pg_settings WHERE name = 'shared_buffers'") || return 1
	if [ "$("${q[@]}" "SELECT coalesce(pg_relation_size(to_regclass('bench_prewarm')) / 8192, 0)")" != "$want" ]; then
		echo "prewarm_buffers: making bench_prewarm ($want pages)" >&2
		"${q[@]}" "DROP TABLE IF EXISTS bench_prewarm" &&
			"${q[@]}" "CREATE TABLE bench_prewarm (pad text) WITH (fillfactor = 10, autovacuum_enabled = off)" &&
			"${q[@]}" "ALTER TABLE bench_prewarm ALTER pad SET STORAGE PLAIN" &&
			"${q[@]}" "INSERT INTO bench_prewarm SELECT repeat('x', 700) FROM generate_series(1, $want)" || return 1
	fi
	"${q[@]}" "CREATE EXTENSION IF NOT EXISTS pg_prewarm" && "${q[@]}" "SELECT pg_prewarm('bench_prewarm')" >/dev/null
}
