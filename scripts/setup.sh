#!/bin/bash
# scripts/setup.sh: from a fresh Debian 12 machine to a running kafka_pg.
#
# As root, from the repository: installs the packages, builds and installs the
# extension, creates (or reuses) a cluster in $KP_DATA owned by postgres with
# kafka_pg preloaded, starts it on port 5432 (or the first free port after it),
# creates the extension in database `postgres` and prints how to connect.
# Idempotent: a second run rebuilds, reinstalls and restarts the same cluster.
#
#   KP_DATA=/var/lib/kafka_pg/data   data directory
#   KP_PORT=5432                     preferred PostgreSQL port
#   KAFKA_PORT=9092                  Kafka listener port
#   KP_TUNING=1                      0: PostgreSQL's defaults instead of the broker
#                                    settings of scripts/broker-tuning.sh (shared_buffers
#                                    a quarter of memory, background writer, WAL,
#                                    checkpoints; docs/performance.md says why)
#   KP_SHARED_BUFFERS, KP_MAX_WAL_SIZE  override two of those
#   KP_HUGE_PAGES=1                  with the tuning: reserve the huge pages the cluster's
#                                    shared memory needs (vm.nr_hugepages, until the next
#                                    boot; docs/performance.md, "Huge pages"); 0: leave
#                                    vm.nr_hugepages alone
#   KP_RECREATE_EXTENSION=0          1: if the existing cluster's extension was created
#                                    by another build of kafka_pg (its catalog stamp
#                                    differs from the installed build's), drop it and
#                                    create it again: THIS DELETES EVERY TOPIC.  Without
#                                    it, setup.sh says so, prints the commands and exits 3
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

KP_DATA=${KP_DATA:-/var/lib/kafka_pg/data}
KP_PORT=${KP_PORT:-5432}
KAFKA_PORT=${KAFKA_PORT:-9092}
export KP_KAFKA_DB=postgres

bash scripts/install-deps.sh
. test/lib/cluster.sh
. scripts/broker-tuning.sh
# written into the cluster's kafka_pg.conf by kp_init / kp_write_conf
if [ "${KP_TUNING:-1}" = 1 ]; then
	KP_EXTRA_CONF=$(kp_broker_tuning)
fi
# PostgreSQL's default, which test/lib/cluster.sh turns off for scratch clusters
KP_EXTRA_CONF="${KP_EXTRA_CONF:+$KP_EXTRA_CONF$'\n'}huge_pages = try"
export KP_EXTRA_CONF

kp_log "building kafka_pg"
make -j"$(nproc)" >/dev/null
make install >/dev/null
kp_log "installed $(pg_config --pkglibdir)/kafka_pg.so"

# The Debian socket directory, so that plain `psql -p PORT` finds the server.
SOCKDIR=/var/run/postgresql
install -d -o postgres -g postgres -m 2775 "$SOCKDIR"

if [ -f "$KP_DATA/PG_VERSION" ]; then
	if kp_running "$KP_DATA"; then
		kp_log "restarting the existing cluster in $KP_DATA"
		kp_stop "$KP_DATA"
	fi
	port=$(kp_port "$KP_DATA")
	if [ -z "$port" ] || ! kp_port_free "$port"; then
		port=$(kp_free_port "$KP_PORT" "$KAFKA_PORT")
		kp_log "port taken; moving the cluster to $port"
	fi
	kp_write_conf "$KP_DATA" "$port" "$KAFKA_PORT" "$SOCKDIR"
else
	port=$(kp_free_port "$KP_PORT" "$KAFKA_PORT")
	kp_log "creating a cluster in $KP_DATA on port $port"
	install -d -o postgres -g postgres -m 755 "$(dirname "$KP_DATA")"
	kp_init "$KP_DATA" "$port" "$KAFKA_PORT" "$SOCKDIR"
fi

# Huge pages for the shared memory (PostgreSQL's huge_pages = try, its default, uses
# them when the kernel has enough reserved, else ordinary pages).  With the broker
# tuning's shared buffers (a quarter of memory) they cut the listener's CPU per
# produced record by 28-44% in three runs of four (docs/performance.md, "Huge
# pages", with the run that went the other way).  The pool
# is grown by what the cluster needs beyond the pages others use; if the kernel
# cannot give that many (memory too fragmented), it is put back as it was.
kp_reserve_huge_pages() {
	local need total free want got
	need=$(kp_as_pg "$PG_BINDIR/postgres" -D "$KP_DATA" -C shared_memory_size_in_huge_pages 2>/dev/null)
	if ! [[ $need =~ ^[0-9]+$ ]] || [ "$need" -le 0 ] || [ ! -w /proc/sys/vm/nr_hugepages ]; then
		kp_log "huge pages: not available here (PostgreSQL does not say how many it needs, or vm.nr_hugepages cannot be set); ordinary pages"
		return 0
	fi
	total=$(awk '/^HugePages_Total:/ { print $2 }' /proc/meminfo)
	# free and not promised to a server already running (reserved)
	free=$(awk '/^HugePages_Free:/ { f = $2 } /^HugePages_Rsvd:/ { r = $2 } END { print f - r }' /proc/meminfo)
	[ "$free" -ge "$need" ] && { kp_log "huge pages: $need needed, $free free in the pool"; return 0; }
	want=$((total - free + need))
	echo "$want" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
	got=$(awk '/^HugePages_Total:/ { print $2 }' /proc/meminfo)
	if [ "$got" -lt "$want" ]; then
		echo "$total" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
		kp_log "huge pages: the kernel gave $got of the $want asked for; pool left at $total, ordinary pages"
		return 0
	fi
	kp_log "huge pages: vm.nr_hugepages $total -> $want ($need for this cluster's shared memory, until the next boot)"
}
if [ "${KP_TUNING:-1}" = 1 ] && [ "${KP_HUGE_PAGES:-1}" = 1 ]; then
	kp_reserve_huge_pages
fi

if ! kp_port_free "$KAFKA_PORT"; then
	kp_log "warning: port $KAFKA_PORT is already in use; the Kafka listener may not be able to bind it"
fi

kp_start "$KP_DATA"
if grep -q anon_hugepage "/proc/$(head -1 "$KP_DATA/postmaster.pid")/maps" 2>/dev/null; then
	kp_log "the server's shared memory is in huge pages"
else
	kp_log "the server's shared memory is in ordinary pages"
fi
kp_create_extension "$port" postgres
kp_set_kafka_port "$KP_DATA" "$port" "$KAFKA_PORT"

# The extension's version stays 0.1 while its catalog changes from build to
# build: an existing cluster keeps the catalog the build that created it made,
# and this build refuses it (src/catalog/stamp.c; README, "Upgrading").
library_stamp=$(kp_installed_catalog_stamp)
catalog_stamp=$(kp_catalog_stamp "$port" postgres)
if [ -n "$catalog_stamp" ] && [ "$catalog_stamp" != "$library_stamp" ]; then
	if [ "${KP_RECREATE_EXTENSION:-0}" = 1 ]; then
		kp_log "the extension in database postgres was created by another build of kafka_pg (catalog stamp $catalog_stamp, this build $library_stamp): KP_RECREATE_EXTENSION=1, re-creating it (every topic is dropped)"
		kp_psql "$port" postgres -c "DROP EXTENSION kafka_pg CASCADE" -c "CREATE EXTENSION kafka_pg"
	else
		cat >&2 <<MSG

setup.sh: the cluster in $KP_DATA runs, but kafka_pg will not use its catalog.
  The extension in database postgres was created by another build of kafka_pg
  (catalog stamp $catalog_stamp; this build's is $library_stamp).  Its tables and
  functions are not the ones this build uses, so the SQL functions refuse to run
  and the Kafka listener closes every connection (see $(kp_logfile "$KP_DATA")).
  Either re-create the extension, which DELETES EVERY TOPIC AND ITS RECORDS:
      psql -h 127.0.0.1 -p $port -U postgres postgres -c 'DROP EXTENSION kafka_pg CASCADE' -c 'CREATE EXTENSION kafka_pg'
  (or run setup.sh again with KP_RECREATE_EXTENSION=1), or install the build
  that created the catalog and restart the server.
MSG
		exit 3
	fi
fi

listening=no
for _ in $(seq 1 25); do
	if ! kp_port_free "$KAFKA_PORT"; then listening=yes; break; fi
	sleep 0.2
done

cat <<MSG

kafka_pg is running.
  data directory : $KP_DATA  (owner postgres; log in $(kp_logfile "$KP_DATA"))
  PostgreSQL     : psql -h 127.0.0.1 -p $port -U postgres postgres
                   e.g.  SELECT kafka.create_topic('demo', 3);
                         SELECT * FROM kafka.produce('demo', 'k', 'hello');
                         SELECT * FROM kafka.fetch('demo', 0);
MSG
if [ $listening = yes ]; then
	cat <<MSG
  Kafka          : bootstrap server 127.0.0.1:$KAFKA_PORT
                   e.g.  kcat -b 127.0.0.1:$KAFKA_PORT -L
MSG
else
	cat <<MSG
  Kafka          : nothing listens on 127.0.0.1:$KAFKA_PORT yet (this build has no
                   wire listener, or it failed: see the log); once it does, use
                   bootstrap server 127.0.0.1:$KAFKA_PORT, e.g. kcat -b 127.0.0.1:$KAFKA_PORT -L
MSG
fi
echo "  stop           : runuser -u postgres -- $PG_BINDIR/pg_ctl -D $KP_DATA stop"
