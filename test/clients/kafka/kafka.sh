#!/usr/bin/env bash
# A real Apache Kafka 4.x (single-node KRaft, loopback only) and its CLI tools, from the jars that
# fetch-kafka.sh caches, as the reference that kafka_pg is tested and benchmarked against.
#
#   kafka.sh start [port]          start a broker on 127.0.0.1:<port> (default 29092), controller on
#                                  127.0.0.1:<port+1> (KAFKA_CONTROLLER_PORT), auto.create.topics.enable
#                                  =true; returns once the broker serves. Prints the bootstrap address.
#   kafka.sh stop [port]           stop it (all started brokers without a port) and remove its data
#   kafka.sh status [port]         exit 0 if it runs
#   kafka.sh cli <tool> args...    run a Kafka CLI tool, e.g.
#                                  kafka.sh cli kafka-topics --bootstrap-server 127.0.0.1:9092 --list
#   kafka.sh classpath             print the classpath of the jars (for java -cp)
#
# Tools: kafka-topics, kafka-console-producer, kafka-console-consumer, kafka-configs,
# kafka-consumer-groups, kafka-producer-perf-test, kafka-consumer-perf-test, kafka-delete-records,
# kafka-get-offsets, kafka-broker-api-versions, kafka-e2e-latency, kafka-features,
# kafka-metadata-quorum, kafka-leader-election, kafka-reassign-partitions, kafka-log-dirs, kafka-storage,
# kafka-transactions, kafka-acls.
#
# Settings: KAFKA_STATE_DIR (default /tmp/kafka_pg-kafka; one folder per port with the config, the
# data, server.log and the pid), KAFKA_HEAP_OPTS (broker, default -Xmx1g -Xms1g), KAFKA_CLI_HEAP
# (tools, default -Xmx1g), KAFKA_START_TIMEOUT (seconds, default 90), KAFKA_BROKER_PROPS (extra
# lines appended to server.properties), KAFKA_KEEP_DATA=1 (stop keeps the data folder).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state_root=${KAFKA_STATE_DIR:-/tmp/kafka_pg-kafka}

die() { echo "kafka.sh: $*" >&2; exit 1; }

jars() {
	local dir
	dir=$("$here/fetch-kafka.sh") || die "could not fetch the Kafka jars"
	echo "$dir"
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Main class of each CLI tool in Kafka 4.x (bin/*.sh of the distribution).
tool_class() {
	case "$1" in
	kafka-topics) echo org.apache.kafka.tools.TopicCommand ;;
	kafka-console-producer) echo org.apache.kafka.tools.ConsoleProducer ;;
	kafka-console-consumer) echo org.apache.kafka.tools.consumer.ConsoleConsumer ;;
	kafka-configs) echo org.apache.kafka.tools.ConfigCommand ;;
	kafka-consumer-groups) echo org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
	kafka-producer-perf-test) echo org.apache.kafka.tools.ProducerPerformance ;;
	kafka-consumer-perf-test) echo org.apache.kafka.tools.ConsumerPerformance ;;
	kafka-delete-records) echo org.apache.kafka.tools.DeleteRecordsCommand ;;
	kafka-get-offsets) echo org.apache.kafka.tools.GetOffsetShell ;;
	kafka-broker-api-versions) echo org.apache.kafka.tools.BrokerApiVersionsCommand ;;
	kafka-e2e-latency) echo org.apache.kafka.tools.EndToEndLatency ;;
	kafka-features) echo org.apache.kafka.tools.FeatureCommand ;;
	kafka-metadata-quorum) echo org.apache.kafka.tools.MetadataQuorumCommand ;;
	kafka-leader-election) echo org.apache.kafka.tools.LeaderElectionCommand ;;
	kafka-reassign-partitions) echo org.apache.kafka.tools.reassign.ReassignPartitionsCommand ;;
	kafka-log-dirs) echo org.apache.kafka.tools.LogDirsCommand ;;
	kafka-transactions) echo org.apache.kafka.tools.TransactionsCommand ;;
	kafka-acls) echo org.apache.kafka.tools.AclCommand ;;
	kafka-storage) echo kafka.tools.StorageTool ;;
	*) return 1 ;;
	esac
}

cmd_cli() {
	[ $# -ge 1 ] || die "usage: kafka.sh cli <tool> args..."
	local tool=$1 class dir jit=()
	shift
	class=$(tool_class "$tool") || die "unknown tool '$tool'"
	dir=$(jars)
	case "$tool" in
	# short-lived tools start faster with the client compiler only; the perf tools need C2
	*perf-test | kafka-e2e-latency) ;;
	*) jit=(-XX:TieredStopAtLevel=1) ;;
	esac
	# shellcheck disable=SC2086
	exec java ${KAFKA_CLI_HEAP:--Xmx1g} "${jit[@]}" -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$here/log4j2-tools.properties" \
		-cp "$dir/*" "$class" "$@"
}

# A Kafka cluster id: 16 random bytes, base64url without padding, not starting with '-'
# (as org.apache.kafka.common.Uuid.randomUuid makes them).
cluster_id() {
	local id
	while :; do
		id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
		[ "${id:0:1}" != "-" ] && { echo "$id"; return; }
	done
}

broker_pid() {
	local pidfile=$state_root/$1/kafka.pid pid
	[ -f "$pidfile" ] || return 1
	pid=$(cat "$pidfile")
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

cmd_start() {
	local port=${1:-29092}
	local cport=${KAFKA_CONTROLLER_PORT:-$((port + 1))}
	local sd=$state_root/$port dir pid
	if broker_pid "$port" >/dev/null; then
		echo "127.0.0.1:$port"
		return 0
	fi
	port_open "$port" && die "127.0.0.1:$port is already in use"
	port_open "$cport" && die "controller port 127.0.0.1:$cport is already in use (KAFKA_CONTROLLER_PORT)"
	dir=$(jars)
	rm -rf "$sd"
	mkdir -p "$sd/data"
	cat >"$sd/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$sd/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=3
num.io.threads=8
log.retention.hours=168
PROPS
	[ -n "${KAFKA_BROKER_PROPS:-}" ] && printf '%s\n' "$KAFKA_BROKER_PROPS" >>"$sd/server.properties"

	java -Xmx256m -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$here/log4j2-tools.properties" \
		-cp "$dir/*" kafka.tools.StorageTool format -t "$(cluster_id)" -c "$sd/server.properties" \
		>"$sd/format.log" 2>&1 || { cat "$sd/format.log" >&2; die "formatting $sd/data failed"; }

	# shellcheck disable=SC2086
	nohup java ${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g} -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$here/log4j2-broker.properties" \
		-cp "$dir/*" kafka.Kafka "$sd/server.properties" >"$sd/server.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$sd/kafka.pid"

	local deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-90}))
	while :; do
		kill -0 "$pid" 2>/dev/null || { tail -40 "$sd/server.log" >&2; die "the broker exited while starting (log: $sd/server.log)"; }
		if port_open "$port" && grep -q "Kafka Server started" "$sd/server.log"; then
			break
		fi
		[ $SECONDS -lt $deadline ] || { tail -40 "$sd/server.log" >&2; cmd_stop "$port"; die "the broker did not start within ${KAFKA_START_TIMEOUT:-90}s"; }
		sleep 0.5
	done
	echo "127.0.0.1:$port"
}

stop_one() {
	local port=$1 pid i
	if pid=$(broker_pid "$port"); then
		kill "$pid" 2>/dev/null || true
		for i in $(seq 1 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$state_root/$port/kafka.pid"
	[ "${KAFKA_KEEP_DATA:-0}" = 1 ] || rm -rf "$state_root/$port/data"
}

cmd_stop() {
	if [ $# -ge 1 ]; then
		stop_one "$1"
	else
		local d
		for d in "$state_root"/*/; do
			[ -d "$d" ] && stop_one "$(basename "$d")"
		done
	fi
}

case "${1:-}" in
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
status) shift; broker_pid "${1:-29092}" >/dev/null ;;
cli) shift; cmd_cli "$@" ;;
classpath) echo "$(jars)/*" ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
