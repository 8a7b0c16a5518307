#!/bin/bash
# scripts/ha-cluster.sh: a three-node kafka_pg cluster under Patroni and etcd, on loopback.
#
#   scripts/ha-cluster.sh start     start etcd and three Patroni nodes (PostgreSQL with kafka_pg
#                                   preloaded, kafka.node_id 1/2/3, each its own Kafka listener),
#                                   wait for a primary and two streaming standbys, create the
#                                   extension on the primary (it reaches the standbys by replication)
#   scripts/ha-cluster.sh stop      stop the Patroni nodes (they stop PostgreSQL) and etcd, remove HA_DIR
#   scripts/ha-cluster.sh status    patronictl list, and which Kafka listener answers
#   scripts/ha-cluster.sh env       print the settings below as shell assignments (for tests)
#   scripts/ha-cluster.sh primary   print the number of the node that is the primary
#   scripts/ha-cluster.sh start-node N   start node N's Patroni again (after a test killed it)
#   scripts/ha-cluster.sh wait-healthy [S]   wait up to S seconds for a primary with its listener
#                                   and both standbys streaming
#
# Node N (1..3) uses PostgreSQL port HA_PG_PORT+N-1, Kafka port HA_KAFKA_PORT+N-1 (advertised as
# 127.0.0.1 and that port), Patroni REST port HA_REST_PORT+N-1; etcd listens on HA_ETCD_PORT
# (clients) and HA_ETCD_PORT+1 (peers).  Kafka clients bootstrap with all three listeners
# (`env` prints HA_BOOTSTRAP): every node's listener runs; a standby's serves reads and names the
# primary as leader, and serves writes once Patroni promotes it (docs/replication.md, "Followers").
#
# Settings (environment):
#   HA_DIR=/tmp/kafka_pg_ha        everything: etcd's data, each node's data dir, Patroni configs, logs
#   HA_PG_PORT=55470 HA_KAFKA_PORT=19470 HA_ETCD_PORT=23790 HA_REST_PORT=28470
#   HA_DB=postgres                 the database kafka.database names (the extension is created there)
#   HA_LOOP_WAIT=1 HA_TTL=20 HA_RETRY_TIMEOUT=5   Patroni's timing (docs/replication.md says why)
#   HA_WAL_RETRY=1s                PostgreSQL's wal_retrieve_retry_interval (how soon a standby whose
#                                  primary died streams from the new one; PostgreSQL's default is 5s)
#   HA_SYNC=on                     Patroni synchronous_mode (on: one synchronous standby, acks=all
#                                  waits for it; off: asynchronous standbys, which lose acknowledged
#                                  records on failover)
#   PG_BINDIR                      PostgreSQL's binaries (pg_config --bindir; `source pgr-env.sh` sets it)
#
# Needs the Debian packages patroni, etcd-server, etcd-client (scripts/install-deps.sh installs them)
# and kafka_pg installed (make install).  Run as root: PostgreSQL and Patroni run as `postgres`.
set -euo pipefail

HA_DIR=${HA_DIR:-/tmp/kafka_pg_ha}
HA_PG_PORT=${HA_PG_PORT:-55470}
HA_KAFKA_PORT=${HA_KAFKA_PORT:-19470}
HA_ETCD_PORT=${HA_ETCD_PORT:-23790}
HA_REST_PORT=${HA_REST_PORT:-28470}
HA_DB=${HA_DB:-postgres}
HA_LOOP_WAIT=${HA_LOOP_WAIT:-1}
HA_TTL=${HA_TTL:-20}
HA_RETRY_TIMEOUT=${HA_RETRY_TIMEOUT:-5}
HA_SYNC=${HA_SYNC:-on}
HA_WAL_RETRY=${HA_WAL_RETRY:-1s}
: "${PG_BINDIR:=$( (pg_config --bindir 2>/dev/null) || echo /usr/lib/postgresql/15/bin)}"
NODES="1 2 3"

die() { echo "ha-cluster: $*" >&2; exit 1; }
log() { printf '[%s] ha-cluster: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
as_pg() { runuser -u postgres -- "$@"; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

bootstrap() {
	local n s=""
	for n in $NODES; do s="$s${s:+,}127.0.0.1:$((HA_KAFKA_PORT + n - 1))"; done
	echo "$s"
}

cmd_env() {
	echo "HA_DIR=$HA_DIR"
	echo "HA_PG_PORT=$HA_PG_PORT"
	echo "HA_KAFKA_PORT=$HA_KAFKA_PORT"
	echo "HA_ETCD_PORT=$HA_ETCD_PORT"
	echo "HA_REST_PORT=$HA_REST_PORT"
	echo "HA_DB=$HA_DB"
	echo "HA_BOOTSTRAP=$(bootstrap)"
}

# replica_nodes_line: kafka.replica_nodes (the standbys' node ids and listeners by Patroni member
# name, which is their application_name) where the installed kafka_pg has that setting
replica_nodes_line() {
	local lib n s=""
	lib=$("$PG_BINDIR/pg_config" --pkglibdir)/kafka_pg.so
	grep -q 'kafka\.replica_nodes' "$lib" 2>/dev/null || return 0
	for n in $NODES; do s="$s${s:+, }node$n=$n@127.0.0.1:$((HA_KAFKA_PORT + n - 1))"; done
	echo "    kafka.replica_nodes: '$s'"
}

write_node_config() {
	local n=$1 pg=$((HA_PG_PORT + n - 1)) kp=$((HA_KAFKA_PORT + n - 1)) rest=$((HA_REST_PORT + n - 1))
	local sync=false
	[ "$HA_SYNC" = on ] && sync=true
	mkdir -p "$HA_DIR/node$n/pglog"
	cat >"$HA_DIR/node$n.yml" <<YML
scope: kafka_pg_ha
name: node$n
log:
  level: INFO
  dir: $HA_DIR/node$n
  file_num: 2
  file_size: 50000000
restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest
etcd3:
  hosts: 127.0.0.1:$HA_ETCD_PORT
bootstrap:
  dcs:
    ttl: $HA_TTL
    loop_wait: $HA_LOOP_WAIT
    retry_timeout: $HA_RETRY_TIMEOUT
    maximum_lag_on_failover: 1048576
    # fail over at once when the primary's postmaster dies, instead of restarting it in place
    primary_start_timeout: 0
    synchronous_mode: $sync
    synchronous_mode_strict: false
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
        # a standby whose primary died tries the new one within 1 s of Patroni repointing it
        # (PostgreSQL's default, 5 s, left the new primary without a synchronous standby that long)
        wal_retrieve_retry_interval: $HA_WAL_RETRY
        synchronous_commit: "on"
        max_connections: 100
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $HA_DIR/node$n/data
  bin_dir: $PG_BINDIR
  pgpass: $HA_DIR/node$n/pgpass
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: postgres
      password: postgres
    rewind:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: $HA_DIR/node$n
    shared_preload_libraries: kafka_pg
    kafka.database: $HA_DB
    kafka.node_id: $n
    kafka.port: $kp
    kafka.listen_address: 127.0.0.1
    kafka.advertised_host: 127.0.0.1
    kafka.advertised_port: $kp
$(replica_nodes_line)
    log_line_prefix: '%m [%p] %b %q%u@%d '
    log_min_messages: warning
    lc_messages: C
    logging_collector: "on"
    log_directory: $HA_DIR/node$n/pglog
    log_filename: postgresql.log
  pg_ctl_timeout: 120
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
YML
	chown -R postgres:postgres "$HA_DIR/node$n" "$HA_DIR/node$n.yml"
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_etcd() {
	pid_alive "$HA_DIR/etcd.pid" && return 0
	port_open "$HA_ETCD_PORT" && die "127.0.0.1:$HA_ETCD_PORT is already in use (HA_ETCD_PORT)"
	mkdir -p "$HA_DIR/etcd"
	ETCD_UNSUPPORTED_ARCH= setsid nohup etcd --name ha --data-dir "$HA_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
		--advertise-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((HA_ETCD_PORT + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((HA_ETCD_PORT + 1))" \
		--initial-cluster "ha=http://127.0.0.1:$((HA_ETCD_PORT + 1))" \
		--initial-cluster-state new --initial-cluster-token kafka_pg_ha \
		>"$HA_DIR/etcd.log" 2>&1 </dev/null &
	echo $! >"$HA_DIR/etcd.pid"
	local i
	for i in $(seq 1 100); do
		ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$HA_ETCD_PORT" endpoint health >/dev/null 2>&1 && return 0
		pid_alive "$HA_DIR/etcd.pid" || { tail -20 "$HA_DIR/etcd.log" >&2; die "etcd exited"; }
		sleep 0.2
	done
	die "etcd did not become healthy (log $HA_DIR/etcd.log)"
}

start_node() {
	local n=$1
	pid_alive "$HA_DIR/patroni$n.pid" && return 0
	write_node_config "$n"
	# Patroni runs as postgres (so does the PostgreSQL it starts); its own output goes to the log dir
	setsid nohup runuser -u postgres -- patroni "$HA_DIR/node$n.yml" \
		>"$HA_DIR/node$n/patroni.out" 2>&1 </dev/null &
	echo $! >"$HA_DIR/patroni$n.pid"
}

# rest N PATH: GET a Patroni REST endpoint of node N (prints the body; exit status 0 on 200)
rest() {
	/usr/bin/python3 - "$((HA_REST_PORT + $1 - 1))" "$2" <<'PY'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), timeout=3) as r:
        sys.stdout.write(r.read().decode()); sys.exit(0)
except urllib.error.HTTPError as e:
    sys.stdout.write(e.read().decode()); sys.exit(1)
except Exception as e:
    sys.stdout.write(str(e)); sys.exit(2)
PY
}

# primary: the node number whose Patroni says it is the primary (leader), or nothing
primary() {
	local n
	for n in $NODES; do
		if rest "$n" /primary >/dev/null 2>&1; then echo "$n"; return 0; fi
	done
	return 1
}

psql_node() {
	local n=$1; shift
	PGCONNECT_TIMEOUT=5 psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $((HA_PG_PORT + n - 1)) -U postgres "$@"
}

cmd_start() {
	command -v patroni >/dev/null || die "patroni is not installed (scripts/install-deps.sh)"
	command -v etcd >/dev/null || die "etcd is not installed (scripts/install-deps.sh)"
	[ "$(id -u)" = 0 ] || die "run as root (PostgreSQL and Patroni run as postgres)"
	[ -x "$PG_BINDIR/postgres" ] || die "no postgres in PG_BINDIR=$PG_BINDIR"
	[ -f "$("$PG_BINDIR/pg_config" --pkglibdir)/kafka_pg.so" ] || die "kafka_pg is not installed in $PG_BINDIR's PostgreSQL (make install)"
	local n p
	for n in $NODES; do
		for p in $((HA_PG_PORT + n - 1)) $((HA_KAFKA_PORT + n - 1)) $((HA_REST_PORT + n - 1)); do
			port_open "$p" && die "127.0.0.1:$p is already in use"
		done
	done
	mkdir -p "$HA_DIR"
	chmod 755 "$HA_DIR"
	chown postgres:postgres "$HA_DIR"
	start_etcd
	log "etcd on 127.0.0.1:$HA_ETCD_PORT"
	# the first node bootstraps (initdb); the others wait for it and clone it with pg_basebackup
	start_node 1
	local deadline=$((SECONDS + 120)) pri=""
	while [ $SECONDS -lt $deadline ]; do
		pri=$(primary) && break
		sleep 0.5
	done
	[ -n "$pri" ] || { tail -30 "$HA_DIR/node1/patroni.log" >&2; die "no primary after 120 s (log $HA_DIR/node1/patroni.log)"; }
	log "primary: node$pri"
	psql_node "$pri" -d postgres -c "SELECT 1" >/dev/null
	if [ "$(psql_node "$pri" -d postgres -At -c "SELECT 1 FROM pg_database WHERE datname = '$HA_DB'")" != 1 ]; then
		psql_node "$pri" -d postgres -c "CREATE DATABASE \"$HA_DB\""
	fi
	psql_node "$pri" -d "$HA_DB" -c "CREATE EXTENSION IF NOT EXISTS kafka_pg"
	start_node 2
	start_node 3
	# a Patroni whose REST port was taken meanwhile (by an outgoing connection's ephemeral port:
	# the ports chosen may lie in that range) exits at once: start it again, twice at most
	local ok=0 tries=0
	deadline=$((SECONDS + 240))
	while [ $SECONDS -lt $deadline ]; do
		if wait_healthy 10; then ok=1; break; fi
		for n in $NODES; do
			pid_alive "$HA_DIR/patroni$n.pid" && continue
			[ $tries -lt 2 ] || die "node$n's Patroni exited: $(tail -1 "$HA_DIR/node$n/patroni.out")"
			tries=$((tries + 1))
			log "node$n's Patroni exited ($(tail -1 "$HA_DIR/node$n/patroni.out")): starting it again"
			start_node "$n"
		done
	done
	[ $ok = 1 ] || die "the cluster did not get healthy (logs under $HA_DIR/node*/)"
	cmd_status
}

# wait_healthy SECONDS: a primary with its Kafka listener, and every node running and streaming
wait_healthy() {
	local deadline=$((SECONDS + ${1:-120})) pri n ok
	while [ $SECONDS -lt $deadline ]; do
		ok=1
		pri=$(primary) || ok=0
		if [ $ok = 1 ]; then
			port_open $((HA_KAFKA_PORT + pri - 1)) || ok=0
			for n in $NODES; do
				[ "$n" = "$pri" ] && continue
				# /replica answers 200 for a running standby that streams from the primary
				rest "$n" /replica >/dev/null 2>&1 || ok=0
			done
		fi
		if [ $ok = 1 ]; then
			# and the primary sees both of them streaming
			[ "$(psql_node "$pri" -d postgres -At -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null)" = 2 ] && return 0
		fi
		sleep 0.5
	done
	return 1
}

# cmd_start_node N: start node N's Patroni; again if it exits at once (its REST port taken, above)
cmd_start_node() {
	local i
	for i in 1 2 3; do
		start_node "$1"
		sleep 2
		pid_alive "$HA_DIR/patroni$1.pid" && return 0
		log "node$1's Patroni exited ($(tail -1 "$HA_DIR/node$1/patroni.out")): starting it again"
	done
	die "node$1's Patroni does not stay up (log $HA_DIR/node$1/patroni.out)"
}

cmd_status() {
	runuser -u postgres -- patronictl -c "$HA_DIR/node1.yml" list 2>&1 || true
	local n kp
	for n in $NODES; do
		kp=$((HA_KAFKA_PORT + n - 1))
		if port_open "$kp"; then echo "node$n: Kafka listener on 127.0.0.1:$kp"; else echo "node$n: no Kafka listener on 127.0.0.1:$kp"; fi
	done
	echo "bootstrap.servers=$(bootstrap)"
}

stop_pid() { # stop_pid PIDFILE SECONDS
	local f=$1 t=$2 pid i
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 $((t * 5))); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

cmd_stop() {
	[ -d "$HA_DIR" ] || return 0
	local n
	# Patroni stops its PostgreSQL when it gets SIGTERM
	for n in $NODES; do stop_pid "$HA_DIR/patroni$n.pid" 60 & done
	wait
	# whatever PostgreSQL is still running in our data dirs (Patroni killed before it stopped it)
	for n in $NODES; do
		if [ -f "$HA_DIR/node$n/data/postmaster.pid" ]; then
			as_pg "$PG_BINDIR/pg_ctl" -D "$HA_DIR/node$n/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
		fi
	done
	stop_pid "$HA_DIR/etcd.pid" 20
	[ "${HA_KEEP:-0}" = 1 ] || rm -rf "$HA_DIR"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
primary) primary ;;
start-node) cmd_start_node "${2:?node number}" ;;
wait-healthy) wait_healthy "${2:-120}" ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
