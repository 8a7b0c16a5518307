# bench/fetchpath/topics.sh: the cluster and topics that cost.sh and profile.sh consume (sourced,
# not run, from the repository's top folder after test/lib/cluster.sh; needs $K).
#
# fp_cluster NAME: a throwaway cluster, initialised and not started: $root (removed on exit),
# $d (its data directory), $port and $kport (the first free ports from KP_TEST_PORT, 55432, and
# KAFKA_TEST_PORT, 19092); WireBench compiled against the Kafka jars ($jars), wb() to run it,
# psql_() for one SQL statement.  BATCH, SMALL and WIDE from BENCH_BATCH_SIZE (16384),
# BENCH_SMALL (500000) and BENCH_WIDE (100000).
# fp_fill: on the started cluster with the extension, the three topics filled with
# kafka-producer-perf-test (acks=1, linger.ms 5, batch.size BATCH): c100 (6 partitions, SMALL
# records of 100 B), w1 (1 partition) and w1000 (1,000 partitions) with WIDE records of 1 KiB;
# then a CHECKPOINT.

BATCH=${BENCH_BATCH_SIZE:-16384}
SMALL=${BENCH_SMALL:-500000}
WIDE=${BENCH_WIDE:-100000}

fp_cluster() {
	jars=$(test/clients/kafka/fetch-kafka.sh) || exit 1
	root=$(bash test/lib/pgcluster mktemp "$1")
	d=$root/data
	trap 'bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
	cls=$root/classes
	mkdir -p "$cls"
	javac -nowarn -cp "$jars/*" -d "$cls" bench/wire/WireBench.java || exit 1
	port=$(bash test/lib/pgcluster free-port "${KP_TEST_PORT:-55432}")
	kport=$(bash test/lib/pgcluster free-port "${KAFKA_TEST_PORT:-19092}" "$port")
	bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
}
wb() { java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$PWD/test/clients/kafka/log4j2-tools.properties" -cp "$cls:$jars/*" WireBench "$@"; }
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }

fp_fill() {
	local t
	psql_ "SELECT kafka.create_topic('c100', 6), kafka.create_topic('w1', 1), kafka.create_topic('w1000', 1000)" >/dev/null || exit 1
	for t in "c100 $SMALL 100" "w1 $WIDE 1024" "w1000 $WIDE 1024"; do
		set -- $t
		"$K" cli kafka-producer-perf-test --topic "$1" --num-records "$2" --record-size "$3" --throughput -1 \
			--producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false \
			batch.size="$BATCH" linger.ms=5 2>&1 | grep "records sent" | tail -1
	done
	psql_ "CHECKPOINT" >/dev/null
}
