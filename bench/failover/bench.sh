#!/bin/bash
# bench/failover/bench.sh: end-to-end failover time of kafka_pg under Patroni beside Apache Kafka's
# leader election, with the same clients on the same machine, in one run.
#
#   bench/failover/bench.sh            # 10 kills each (KILLS=N for another count)
#
# kafka_pg: test/ha/failover.py (three Patroni nodes, synchronous_mode; kill -9 of the primary's
# postmaster, then a second series killing its Patroni too, as when the machine dies: the others
# then wait for the leader key's ttl; every check of the test runs too).  Kafka: bench/failover/kafka_failover.py (three
# KRaft brokers, replication factor 3, min.insync.replicas=2, unclean.leader.election.enable=false;
# kill -9 of the leader of partition 0).  Both measure, per kill, the time from the kill to the first
# acks=all acknowledgement each idempotent producer (librdkafka, Java) receives afterwards for a
# partition the killed node led; the table gives the median and min-max.  The raw log goes to
# bench/out/failover-<time>.log.  Needs what test/ha/run needs, and root.
set -u
. "$(dirname "$0")/../lib.sh"
KPORT=0
bench_init failover
KILLS=${KILLS:-10}
export KP_HA_KILLS=$KILLS

echo "load at the start: $(uptime)" >>"$LOG"
say "failover bench: $KILLS kills of kafka_pg's primary, then $KILLS of Kafka's partition leader; log $LOG"
KP_HA_RESULT=$work/kafka_pg.json /usr/bin/python3 "$repo/test/ha/failover.py" >>"$LOG" 2>&1
kp_rc=$?
KP_HA_KILL=node KP_HA_RESULT=$work/kafka_pg_node.json /usr/bin/python3 "$repo/test/ha/failover.py" >>"$LOG" 2>&1
kpn_rc=$?
KP_HA_RESULT=$work/kafka.json /usr/bin/python3 "$repo/bench/failover/kafka_failover.py" >>"$LOG" 2>&1
k_rc=$?

# row NAME FILE KEY [CLIENT]: median and min-max in seconds of one series
row() {
	/usr/bin/python3 - "$@" <<'PY'
import json, statistics, sys
name, path, key = sys.argv[1:4]
client = sys.argv[4] if len(sys.argv) > 4 else None
try:
    d = json.load(open(path))
except Exception:
    print("%-58s %8s %13s %4s" % (name, "fail", "-", "-"))
    sys.exit()
xs = (d.get(key) or {}).get(client, []) if client else d.get(key, [])
xs = sorted(xs)
if not xs:
    print("%-58s %8s %13s %4s" % (name, "n/a", "-", 0))
else:
    print("%-58s %8.2f %6.2f-%-6.2f %4d" % (name, statistics.median(xs), xs[0], xs[-1], len(xs)))
PY
}

# phases FILE: what a kafka_pg failover is made of (test/ha/failover.py's Timeline), kill -> each step
phases() {
	row "    kill -> leader key gone from etcd" "$1" phases key_gone
	row "    kill -> leader key taken by the new primary" "$1" phases key_taken
	row "    kill -> new primary out of recovery" "$1" phases promoted
	row "    kill -> its kafka.leader row names it" "$1" phases published
	row "    kill -> the other standby streams from it, names it" "$1" phases standby_row
	row "    kill -> it has a synchronous standby again" "$1" phases sync_standby
}

{
	echo
	echo "load: $(uptime)"
	echo "failover, kill -9 -> first acks=all acknowledgement, seconds ($KILLS kills each, $(date -u +%Y-%m-%dT%H:%MZ))"
	printf '%-58s %8s %13s %4s\n' "" median min-max n
	row "kafka_pg + Patroni, librdkafka producer" "$work/kafka_pg.json" first_ack rdprod1
	row "kafka_pg + Patroni, Java producer" "$work/kafka_pg.json" first_ack jprod1
	row "  (Patroni: kill -> new primary with its listener)" "$work/kafka_pg.json" promote
	phases "$work/kafka_pg.json"
	row "kafka_pg, node killed (Patroni too), librdkafka producer" "$work/kafka_pg_node.json" first_ack rdprod1
	row "kafka_pg, node killed (Patroni too), Java producer" "$work/kafka_pg_node.json" first_ack jprod1
	row "  (Patroni: kill -> new primary with its listener)" "$work/kafka_pg_node.json" promote
	phases "$work/kafka_pg_node.json"
	row "Apache Kafka 4.4, 3 KRaft brokers, librdkafka producer" "$work/kafka.json" first_ack rdprod1
	row "Apache Kafka 4.4, 3 KRaft brokers, Java producer" "$work/kafka.json" first_ack jprod1
	row "  (Kafka: kill -> new leader of partition 0 in metadata)" "$work/kafka.json" promote
	[ $kp_rc = 0 ] || echo "kafka_pg's run FAILED its checks (exit $kp_rc): see $LOG"
	[ $kpn_rc = 0 ] || echo "kafka_pg's node-kill run FAILED its checks (exit $kpn_rc): see $LOG"
	[ $k_rc = 0 ] || echo "Kafka's run did not complete (exit $k_rc): see $LOG"
} | tee -a "$LOG"
[ $kp_rc = 0 ] && [ $kpn_rc = 0 ] && [ $k_rc = 0 ]
