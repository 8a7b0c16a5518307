# test/lib/cluster.sh: throwaway and local PostgreSQL clusters for kafka_pg.
#
# Sourced by scripts/setup.sh, test/run-tests, test/crash/run and test/standby/run
# (and callable from other languages through test/lib/pgcluster).  Every function
# is prefixed kp_.  Servers run as the `postgres` system user because Postgres
# refuses to run as root; clients run as whoever calls, and connect over TCP to
# 127.0.0.1 with trust authentication (loopback only, test and dev clusters only).
#
# Variables a caller may set before calling kp_init:
#   PG_BINDIR        server binaries (default: pg_config --bindir, else /usr/lib/postgresql/15/bin)
#   KP_KAFKA_DB      database the kafka_pg background workers serve (kafka.database)
#   KP_EXTRA_CONF    extra postgresql.conf lines
#   KP_EXTENSION     extension to create (default kafka_pg; a stand-in for debugging the harness)
#   KP_PRELOAD       shared_preload_libraries (default kafka_pg)
# and before kp_start:
#   KP_PGCTL_CORE    non-empty: pg_ctl -c, so a crashing server process leaves a core file in the
#                    data directory (runuser resets the soft limit to 0; the kernel's core_pattern
#                    decides where it goes). For debugging a crash a test found; also as root:
#                    `ulimit -c unlimited` in the shell first.

: "${PG_BINDIR:=$( (pg_config --bindir 2>/dev/null) || echo /usr/lib/postgresql/15/bin)}"
[ -x "$PG_BINDIR/initdb" ] || PG_BINDIR=/usr/lib/postgresql/15/bin
: "${KP_KAFKA_DB:=postgres}"
: "${KP_EXTENSION:=kafka_pg}"
: "${KP_PRELOAD=kafka_pg}"
# Name of the GUC that sets the Kafka listener port (src/listener/server.c),
# written at initdb time so that no test cluster ever binds the default 9092.
# kp_set_kafka_port checks it against pg_settings after the server starts.
: "${KP_KAFKA_PORT_GUC:=kafka.port}"
export PG_BINDIR KP_KAFKA_DB KP_EXTENSION KP_PRELOAD KP_KAFKA_PORT_GUC

kp_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
kp_die() { kp_log "FATAL: $*"; exit 1; }

# Run a command as the postgres system user (or directly if we are not root).
kp_as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# kp_port_free PORT: true if nothing listens on or has bound TCP PORT (any IPv4 address).
kp_port_free() {
	/usr/bin/python3 - "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.bind(("0.0.0.0", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

# kp_free_port START [EXCEPT...]: print the first free TCP port >= START, skipping EXCEPT ports.
kp_free_port() {
	local p=$1; shift
	local skip
	while [ "$p" -lt 65535 ]; do
		skip=0
		for x in "$@"; do [ "$x" = "$p" ] && skip=1; done
		if [ $skip = 0 ] && kp_port_free "$p" && [ ! -e "/var/run/postgresql/.s.PGSQL.$p" ]; then
			echo "$p"; return 0
		fi
		p=$((p + 1))
	done
	return 1
}

# kp_mktemp NAME: a fresh directory under /tmp that postgres may write.
kp_mktemp() {
	local d
	d=$(mktemp -d "/tmp/kafka_pg_${1:-test}.XXXXXX") || return 1
	chmod 755 "$d"
	chown postgres:postgres "$d" 2>/dev/null || true
	echo "$d"
}

# kp_scratch NAME PORT KAFKA_PORT: a throwaway cluster's place for a test script: sets TMP (a
# fresh directory), DATA, PORT and KPORT (the first free ports from $KP_NEXT_PORT and
# $KAFKA_NEXT_PORT, which test/run-tests sets, else from the ones given), and an EXIT trap that
# stops the server and removes TMP (kept with KP_KEEP_TMP).  Not in a subshell: it sets the
# caller's variables and trap.
kp_scratch() {
	TMP=$(kp_mktemp "$1") || return 1
	DATA=$TMP/data
	PORT=$(kp_free_port "${KP_NEXT_PORT:-$2}")
	KPORT=$(kp_free_port "${KAFKA_NEXT_PORT:-$3}" "$PORT")
	trap 'kp_stop "$DATA" immediate; [ -n "${KP_KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
}

# kp_init DATADIR PORT KAFKA_PORT [SOCKETDIR]: initdb a cluster with kafka_pg preloaded.
# The socket goes into SOCKETDIR, by default DATADIR/.. (so tests never collide
# with a system cluster).
kp_init() {
	local datadir=$1 port=$2 kport=$3
	local parent; parent=$(dirname "$datadir")
	local sockdir=${4:-$parent}
	mkdir -p "$parent"
	if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$parent"; fi
	kp_as_pg "$PG_BINDIR/initdb" -D "$datadir" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
		>"$parent/initdb.log" 2>&1 || { cat "$parent/initdb.log" >&2; return 1; }
	kp_write_conf "$datadir" "$port" "$kport" "$sockdir"
}

# kp_write_conf DATADIR PORT KAFKA_PORT SOCKETDIR: (re)write our include file.
# Settings live in DATADIR/kafka_pg.conf, included from postgresql.conf once.
kp_write_conf() {
	local datadir=$1 port=$2 kport=$3 sockdir=$4
	grep -q "^include_if_exists = 'kafka_pg.conf'" "$datadir/postgresql.conf" ||
		echo "include_if_exists = 'kafka_pg.conf'" | kp_as_pg tee -a "$datadir/postgresql.conf" >/dev/null
	{
		echo "# written by test/lib/cluster.sh; edits are overwritten"
		echo "port = $port"
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$sockdir'"
		echo "shared_preload_libraries = '$KP_PRELOAD'"
		echo "kafka.database = '$KP_KAFKA_DB'"
		if [ -n "$KP_KAFKA_PORT_GUC" ] && [ -n "$kport" ]; then
			echo "$KP_KAFKA_PORT_GUC = $kport"
		fi
		echo "wal_level = replica"
		echo "max_wal_senders = 10"
		echo "hot_standby = on"
		echo "max_connections = 100"
		echo "log_line_prefix = '%m [%p] %b %q%u@%d '"
		echo "log_min_messages = warning"
		echo "log_checkpoints = on"
		echo "lc_messages = 'C'"
		# a huge page pool (scripts/setup.sh reserves one for its cluster) is not for
		# scratch clusters: their figures stay comparable; setup.sh's cluster sets try
		echo "huge_pages = off"
		if [ -n "${KP_EXTRA_CONF:-}" ]; then printf '%s\n' "$KP_EXTRA_CONF"; fi
	} | kp_as_pg tee "$datadir/kafka_pg.conf" >/dev/null
	# trust on loopback and for replication (throwaway / dev clusters only)
	if ! grep -q 'kafka_pg harness' "$datadir/pg_hba.conf"; then
		{
			echo "# kafka_pg harness"
			echo "host replication all 127.0.0.1/32 trust"
		} | kp_as_pg tee -a "$datadir/pg_hba.conf" >/dev/null
	fi
}

kp_logfile() { echo "$(dirname "$1")/server-$(basename "$1").log"; }

# kp_start DATADIR: start and wait until it accepts connections.
kp_start() {
	local datadir=$1 log; log=$(kp_logfile "$1")
	kp_as_pg touch "$log" 2>/dev/null || true
	if ! kp_as_pg "$PG_BINDIR/pg_ctl" ${KP_PGCTL_CORE:+-c} -D "$datadir" -l "$log" -w -t 180 start >/dev/null; then
		kp_log "server in $datadir did not start; last log lines:"
		tail -n 30 "$log" >&2
		return 1
	fi
}

# kp_stop DATADIR [MODE]: stop (fast by default, immediate as a fallback).
kp_stop() {
	local datadir=$1 mode=${2:-fast}
	[ -f "$datadir/postmaster.pid" ] || return 0
	kp_as_pg "$PG_BINDIR/pg_ctl" -D "$datadir" -m "$mode" -w -t 60 stop >/dev/null 2>&1 ||
		kp_as_pg "$PG_BINDIR/pg_ctl" -D "$datadir" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
}

kp_postmaster_pid() { head -n 1 "$1/postmaster.pid" 2>/dev/null; }

# kp_running DATADIR: true if the postmaster recorded in DATADIR is alive.
kp_running() {
	local pid; pid=$(kp_postmaster_pid "$1")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# kp_port DATADIR: the port from our include file.
kp_port() { sed -n "s/^port = \([0-9]*\)/\1/p" "$1/kafka_pg.conf" 2>/dev/null | tail -n 1; }

# kp_psql PORT DB [psql args...]: psql as postgres over loopback, stop on error.
kp_psql() {
	local port=$1 db=$2; shift 2
	PGCONNECT_TIMEOUT=10 psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

# kp_wait_ready PORT [SECONDS]: wait until the server on PORT accepts connections.
kp_wait_ready() {
	local port=$1 t=${2:-120} i=0
	while [ $i -lt $((t * 5)) ]; do
		"$PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "$port" && return 0
		sleep 0.2; i=$((i + 1))
	done
	return 1
}

# kp_wait_kafka KAFKA_PORT [SECONDS]: wait until the Kafka listener on 127.0.0.1:KAFKA_PORT accepts
# connections.  Its workers listen() only once they run, and a worker started before its database
# (kafka.database) was created exits and is started again after 2 s: until then connections are
# refused.
kp_wait_kafka() {
	local kport=$1 t=${2:-60} i=0
	while [ $i -lt $((t * 5)) ]; do
		(exec 3<>"/dev/tcp/127.0.0.1/$kport") 2>/dev/null && return 0
		sleep 0.2; i=$((i + 1))
	done
	return 1
}

# kp_kafka_port_guc PORT: the name of the GUC that sets the listener port, if any.
kp_kafka_port_guc() {
	kp_psql "$1" postgres -At -c "SELECT name FROM pg_settings WHERE name LIKE 'kafka.%' AND name ~ 'port' AND vartype = 'integer' ORDER BY name = 'kafka.port' DESC, name LIMIT 1" 2>/dev/null
}

# kp_set_kafka_port DATADIR PORT KAFKA_PORT: once the server runs, find the
# listener-port GUC the extension defines and, if it is not yet KAFKA_PORT,
# write it into kafka_pg.conf and restart.  A no-op if there is no such GUC yet.
kp_set_kafka_port() {
	local datadir=$1 port=$2 kport=$3 guc cur
	guc=$(kp_kafka_port_guc "$port") || true
	[ -n "$guc" ] || { kp_log "no kafka.*port* setting defined by the extension yet; listener port not set"; return 0; }
	cur=$(kp_psql "$port" postgres -At -c "SHOW $guc")
	KP_KAFKA_PORT_GUC=$guc
	if [ "$cur" != "$kport" ] && grep -q "^$guc = $kport\$" "$datadir/kafka_pg.conf"; then
		# configured, yet not in force: the server dropped it (see its log)
		kp_log "warning: $datadir/kafka_pg.conf sets $guc = $kport but the server runs with $cur:"
		grep -E "\"$guc\"|reserved prefix" "$(kp_logfile "$datadir")" | tail -n 2 >&2
		return 0
	fi
	if [ "$cur" != "$kport" ]; then
		kp_as_pg sed -i "/^$guc = /d" "$datadir/kafka_pg.conf"
		echo "$guc = $kport" | kp_as_pg tee -a "$datadir/kafka_pg.conf" >/dev/null
		kp_log "setting $guc = $kport and restarting"
		kp_stop "$datadir" && kp_start "$datadir"
	fi
}

# kp_create_extension PORT DB: create DB if needed and the extension in it.
kp_create_extension() {
	local port=$1 db=$2
	if [ "$(kp_psql "$port" postgres -At -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
		kp_psql "$port" postgres -c "CREATE DATABASE \"$db\"" || return 1
	fi
	kp_psql "$port" "$db" -c "CREATE EXTENSION IF NOT EXISTS $KP_EXTENSION"
}

# kp_installed_catalog_stamp: the catalog stamp of the installed build (the
# Makefile writes it into the installed install script; src/catalog/stamp.c).
kp_installed_catalog_stamp() {
	local share; share=$(pg_config --sharedir 2>/dev/null || echo /usr/share/postgresql/15)
	sed -n "s/^INSERT INTO kafka\.catalog_stamp VALUES ('\(.*\)');\$/\1/p" \
		"$share/extension/kafka_pg--0.1.sql" 2>/dev/null | head -n 1
}

# kp_catalog_stamp PORT DB: the stamp of the catalog the extension in DB was
# created with; "none" if it has none (a build older than catalog stamps),
# nothing if the extension is not created there.
kp_catalog_stamp() {
	local port=$1 db=$2 has
	has=$(kp_psql "$port" "$db" -At -c "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'kafka_pg')::text || (to_regclass('kafka.catalog_stamp') IS NOT NULL)::text") || return 1
	case $has in
		0*) ;;
		1true) kp_psql "$port" "$db" -At -c "SELECT coalesce((SELECT stamp FROM kafka.catalog_stamp LIMIT 1), 'none')" ;;
		*) echo none ;;
	esac
}

# kp_wait_extension_file [SECONDS]: wait until the extension is installed in
# the server's share dir (for harnesses started before the build lands).
kp_extension_installed() {
	local share; share=$(pg_config --sharedir 2>/dev/null || echo /usr/share/postgresql/15)
	local lib; lib=$(pg_config --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)
	[ -f "$share/extension/kafka_pg.control" ] && [ -f "$lib/kafka_pg.so" ] &&
		ls "$share"/extension/kafka_pg--*.sql >/dev/null 2>&1
}

# kp_log_problems LOGFILE: print lines that must never appear in a server log
# (PANIC, assertion failures, processes killed by a signal other than our SIGKILL,
# and the store's WARNINGs of a partition state pin left held or dropped twice:
# src/store/partition.c, "Pins").
kp_log_problems() {
	grep -E 'PANIC:|TRAP:|terminated by signal [0-9]+|partition state pin' "$1" 2>/dev/null | grep -v 'terminated by signal 9:' || true
}
