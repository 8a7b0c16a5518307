#!/bin/bash
# bench/profile/listener.sh PORT SECONDS OUT.svg -- COMMAND...: a flame graph of the kafka_pg
# listener workers of the cluster on PostgreSQL port PORT while COMMAND runs (a load: e.g.
# kafka-producer-perf-test against its Kafka port).  `perf record -g` (Debian's linux-perf,
# scripts/install-deps.sh) samples the workers at 499 Hz for SECONDS from 2 s after COMMAND
# starts; bench/profile/flamegraph.py draws OUT.svg and prints the heaviest frames.  As root.
#
#   bench/profile/listener.sh 5432 5 /tmp/produce.svg -- \
#       test/clients/kafka/kafka.sh cli kafka-producer-perf-test --topic t --num-records 2000000 \
#       --record-size 1024 --throughput -1 --producer-props bootstrap.servers=127.0.0.1:9092 acks=1
set -u
port=$1; secs=$2; svg=$3; shift 3
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
pids=$("${PG_BINDIR:-/usr/lib/postgresql/15/bin}/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq \
	-c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'kafka_pg listener'")
[ -n "$pids" ] || { echo "profile: no listener workers on port $port" >&2; exit 1; }
data=$(mktemp /tmp/kp_profile.XXXXXX)
trap 'rm -f "$data" "$data.old"' EXIT
"$@" >/dev/null 2>&1 &
load=$!
sleep 2
perf record -q -F 499 -g -p "$pids" -o "$data" -- sleep "$secs" 2>/dev/null
wait "$load"
perf script -i "$data" 2>/dev/null | python3 "$here/flamegraph.py" "kafka_pg listener workers, $secs s: $*" >"$svg"
echo "flame graph: $svg" >&2
