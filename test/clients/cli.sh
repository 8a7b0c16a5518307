#!/usr/bin/env bash
# The Apache Kafka 4.x command-line tools against the broker at $KAFKA_BOOTSTRAP (default
# 127.0.0.1:9092): kafka-topics, kafka-console-producer/-consumer, kafka-configs, kafka-get-offsets,
# kafka-delete-records, kafka-broker-api-versions, kafka-features, kafka-transactions. The consumer
# never joins a group (it reads one partition at a time with --partition/--offset). Prints "ok -
# ..." or "not ok - ..." per check with the tool's output on failure, and last "N passed, M
# failed"; exits non-zero on a failure.
#
#   KAFKA_BOOTSTRAP=127.0.0.1:29092 test/clients/cli.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BS=${KAFKA_BOOTSTRAP:-127.0.0.1:9092}
K="$here/kafka/kafka.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

"$here/kafka/fetch-kafka.sh" >/dev/null || { echo "cli.sh: cannot fetch the Kafka tools"; echo "0 passed, 1 failed"; exit 1; }

kcli() { timeout 120 "$K" cli "$@" --bootstrap-server "$BS"; }

# check NAME CONDITION-EXIT-STATUS: count and report; on failure show $work/out
ok() { passed=$((passed + 1)); echo "ok - $1"; }
nok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	[ -s "$work/out" ] && sed 's/^/#   /' "$work/out" | grep -v '^#   \s*at ' | head -25
	[ -s "$work/err" ] && sed 's/^/#   stderr: /' "$work/err" | grep -v 'deprecated\|KIP-848\|^#   stderr:\s*at ' | head -25
	return 0
}
# run NAME CMD...: run a command, output in $work/out and $work/err
run() { "$@" >"$work/out" 2>"$work/err"; }

suffix=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
T=cli-topic-$suffix    # 3 partitions, keyed records
S=cli-single-$suffix   # 1 partition, order and offsets known

# murmur2 partition of each key, as the Java default partitioner computes it
partition_of() {
	"$PY" - "$@" <<'PY'
import sys
def murmur2(data):
    m, r, length = 0x5bd1e995, 24, len(data)
    h = (0x9747b28c ^ length) & 0xffffffff
    i = 0
    while length - i >= 4:
        k = data[i] | (data[i+1] << 8) | (data[i+2] << 16) | (data[i+3] << 24)
        k = (k * m) & 0xffffffff; k ^= k >> r; k = (k * m) & 0xffffffff
        h = (h * m) & 0xffffffff; h ^= k
        i += 4
    rem = length - i
    if rem == 3: h ^= data[i+2] << 16
    if rem >= 2: h ^= data[i+1] << 8
    if rem >= 1:
        h ^= data[i]; h = (h * m) & 0xffffffff
    h ^= h >> 13; h = (h * m) & 0xffffffff; h ^= h >> 15
    return h
n = int(sys.argv[1])
for line in sys.stdin:
    key = line.rstrip("\n").split(":", 1)[0]
    print((murmur2(key.encode()) & 0x7fffffff) % n, line.rstrip("\n"))
PY
}

# --- topics -------------------------------------------------------------------------------
if run kcli kafka-topics --create --topic "$T" --partitions 3 --replication-factor 1 && grep -q "Created topic $T" "$work/out"; then
	ok "kafka-topics --create $T (3 partitions)"
else nok "kafka-topics --create $T (3 partitions)"; fi

if run kcli kafka-topics --create --topic "$S" --partitions 1 --replication-factor 1 --config retention.ms=86400000; then
	ok "kafka-topics --create $S --config retention.ms=86400000"
else nok "kafka-topics --create $S --config retention.ms=86400000"; fi

if run kcli kafka-topics --list && grep -qx "$T" "$work/out" && grep -qx "$S" "$work/out"; then
	ok "kafka-topics --list shows both topics"
else nok "kafka-topics --list shows both topics"; fi

if run kcli kafka-topics --describe --topic "$T" && grep -q "PartitionCount: 3" "$work/out" &&
	[ "$(grep -cE "Partition: [0-2]\s+Leader: [0-9]+" "$work/out")" = 3 ]; then
	ok "kafka-topics --describe: 3 partitions with leaders"
else nok "kafka-topics --describe: 3 partitions with leaders"; fi

if run kcli kafka-topics --describe --topic "$S" && grep -q "retention.ms=86400000" "$work/out"; then
	ok "kafka-topics --describe shows the topic's config"
else nok "kafka-topics --describe shows the topic's config"; fi

if ! run kcli kafka-topics --describe --topic "cli-none-$suffix"; then
	ok "kafka-topics --describe of an unknown topic fails"
else nok "kafka-topics --describe of an unknown topic fails"; fi

if run kcli kafka-topics --create --topic "$T" --partitions 3 --replication-factor 1; then
	nok "kafka-topics --create of an existing topic fails"
elif grep -qi "already exists" "$work/out" "$work/err"; then
	ok "kafka-topics --create of an existing topic fails"
else nok "kafka-topics --create of an existing topic fails (no 'already exists')"; fi

# --- console producer and consumer -----------------------------------------------------------
for i in $(seq 1 30); do echo "key$((i % 7)):value $i with some text"; done >"$work/keyed.txt"
if run kcli kafka-console-producer --topic "$T" --reader-property parse.key=true --reader-property key.separator=: <"$work/keyed.txt"; then
	ok "kafka-console-producer: 30 keyed records into $T"
else nok "kafka-console-producer: 30 keyed records into $T"; fi

# per partition: the records whose key hashes there, in input order
partition_of 3 <"$work/keyed.txt" >"$work/placed.txt"
all_ok=1
for p in 0 1 2; do
	want=$(awk -v p=$p '$1 == p { $1 = ""; print substr($0, 2) }' "$work/placed.txt" | sed 's/:/\t/')
	n=$(printf '%s' "$want" | grep -c . || true)
	[ "$n" -gt 0 ] || continue
	if run kcli kafka-console-consumer --topic "$T" --partition $p --offset earliest --max-messages "$n" \
		--timeout-ms 20000 --formatter-property print.key=true; then
		got=$(cat "$work/out")
		if [ "$got" != "$want" ]; then
			{ echo "partition $p: want"; echo "$want"; echo "got"; echo "$got"; } >"$work/out"
			all_ok=0
			break
		fi
	else
		all_ok=0
		break
	fi
done
if [ $all_ok = 1 ]; then ok "kafka-console-consumer --partition p --offset earliest: every key in its murmur2 partition, in order"
else nok "kafka-console-consumer --partition p --offset earliest: every key in its murmur2 partition, in order"; fi

seq 0 9 | sed 's/^/first-/' >"$work/first.txt"
run kcli kafka-console-producer --topic "$S" <"$work/first.txt" || nok "kafka-console-producer: 10 records into $S"
sleep 1.5
mid=$(($(date +%s%N) / 1000000))
sleep 1.5
seq 10 14 | sed 's/^/second-/' >"$work/second.txt"
run kcli kafka-console-producer --topic "$S" <"$work/second.txt" || nok "kafka-console-producer: 5 more records into $S"

if run kcli kafka-console-consumer --topic "$S" --partition 0 --offset earliest --max-messages 15 --timeout-ms 20000 \
	--formatter-property print.offset=true --formatter-property print.key=true &&
	[ "$(cat "$work/out")" = "$(cat "$work/first.txt" "$work/second.txt" | awk '{ printf "Offset:%d\tnull\t%s\n", NR - 1, $0 }')" ]; then
	ok "kafka-console-consumer: 15 unkeyed records with offsets 0..14"
else nok "kafka-console-consumer: 15 unkeyed records with offsets 0..14"; fi

if run kcli kafka-console-consumer --topic "$S" --partition 0 --offset 12 --max-messages 3 --timeout-ms 20000 &&
	[ "$(cat "$work/out")" = "$(printf 'second-12\nsecond-13\nsecond-14')" ]; then
	ok "kafka-console-consumer --offset 12"
else nok "kafka-console-consumer --offset 12"; fi

# --- offsets -----------------------------------------------------------------------------------
if run kcli kafka-get-offsets --topic "$S" --time -1 && [ "$(cat "$work/out")" = "$S:0:15" ]; then
	ok "kafka-get-offsets --time -1 (latest) = 15"
else nok "kafka-get-offsets --time -1 (latest) = 15"; fi
if run kcli kafka-get-offsets --topic "$S" --time -2 && [ "$(cat "$work/out")" = "$S:0:0" ]; then
	ok "kafka-get-offsets --time -2 (earliest) = 0"
else nok "kafka-get-offsets --time -2 (earliest) = 0"; fi
if run kcli kafka-get-offsets --topic "$S" --time "$mid" && [ "$(cat "$work/out")" = "$S:0:10" ]; then
	ok "kafka-get-offsets --time <between the two batches> = 10"
else nok "kafka-get-offsets --time <between the two batches> = 10"; fi
# records of one console-producer run can share a millisecond: the first with the largest timestamp
if run kcli kafka-get-offsets --topic "$S" --time -3 && grep -qE "^$S:0:1[0-4]\$" "$work/out"; then
	ok "kafka-get-offsets --time -3 (max timestamp) in the second batch (10..14)"
else nok "kafka-get-offsets --time -3 (max timestamp) in the second batch (10..14)"; fi
if run kcli kafka-get-offsets --topic "$T" && [ "$(awk -F: '{ s += $3 } END { print s }' "$work/out")" = 30 ] &&
	[ "$(wc -l <"$work/out")" = 3 ]; then
	ok "kafka-get-offsets of $T: 3 partitions, 30 records"
else nok "kafka-get-offsets of $T: 3 partitions, 30 records"; fi

# --- configs -----------------------------------------------------------------------------------
if run kcli kafka-configs --entity-type topics --entity-name "$S" --describe && grep -q "retention.ms=86400000" "$work/out"; then
	ok "kafka-configs --describe shows retention.ms=86400000"
else nok "kafka-configs --describe shows retention.ms=86400000"; fi

if run kcli kafka-configs --entity-type topics --entity-name "$S" --alter --add-config retention.ms=7200000,max.message.bytes=300000 &&
	run kcli kafka-configs --entity-type topics --entity-name "$S" --describe &&
	grep -q "retention.ms=7200000" "$work/out" && grep -q "max.message.bytes=300000" "$work/out"; then
	ok "kafka-configs --alter --add-config retention.ms,max.message.bytes"
else nok "kafka-configs --alter --add-config retention.ms,max.message.bytes"; fi

if run kcli kafka-configs --entity-type topics --entity-name "$S" --alter --delete-config retention.ms &&
	run kcli kafka-configs --entity-type topics --entity-name "$S" --describe &&
	! grep -q "retention.ms=" "$work/out" && grep -q "max.message.bytes=300000" "$work/out"; then
	ok "kafka-configs --alter --delete-config retention.ms"
else nok "kafka-configs --alter --delete-config retention.ms"; fi

if run kcli kafka-configs --entity-type topics --entity-name "$S" --describe --all &&
	grep -q "cleanup.policy=delete" "$work/out" && grep -q "segment.bytes=" "$work/out"; then
	ok "kafka-configs --describe --all lists defaults"
else nok "kafka-configs --describe --all lists defaults"; fi

if ! run kcli kafka-configs --entity-type topics --entity-name "$S" --alter --add-config retention.ms=abc; then
	ok "kafka-configs --alter with an invalid value fails"
else nok "kafka-configs --alter with an invalid value fails"; fi

# --- partitions, records -----------------------------------------------------------------------
if run kcli kafka-topics --alter --topic "$T" --partitions 5 && run kcli kafka-topics --describe --topic "$T" &&
	grep -q "PartitionCount: 5" "$work/out"; then
	ok "kafka-topics --alter --partitions 5"
else nok "kafka-topics --alter --partitions 5"; fi

echo '{"partitions":[{"topic":"'"$S"'","partition":0,"offset":4}],"version":1}' >"$work/del.json"
if run kcli kafka-delete-records --offset-json-file "$work/del.json" && grep -q "low_watermark: 4" "$work/out"; then
	ok "kafka-delete-records before offset 4: low_watermark 4"
else nok "kafka-delete-records before offset 4: low_watermark 4"; fi
if run kcli kafka-get-offsets --topic "$S" --time -2 && [ "$(cat "$work/out")" = "$S:0:4" ]; then
	ok "kafka-get-offsets --time -2 after delete-records = 4"
else nok "kafka-get-offsets --time -2 after delete-records = 4"; fi
if run kcli kafka-console-consumer --topic "$S" --partition 0 --offset earliest --max-messages 11 --timeout-ms 20000 &&
	[ "$(head -1 "$work/out")" = "first-4" ] && [ "$(wc -l <"$work/out")" = 11 ]; then
	ok "kafka-console-consumer --offset earliest after delete-records starts at first-4"
else nok "kafka-console-consumer --offset earliest after delete-records starts at first-4"; fi

# --- broker ------------------------------------------------------------------------------------
if run kcli kafka-broker-api-versions && grep -q "Produce(0):" "$work/out" && grep -q "Fetch(1):" "$work/out" &&
	grep -q "ApiVersions(18):" "$work/out"; then
	ok "kafka-broker-api-versions lists Produce, Fetch, ApiVersions"
else nok "kafka-broker-api-versions lists Produce, Fetch, ApiVersions"; fi
# transaction.version 2 (KIP-890 part 2) finalized: what turns Kafka 4.x clients to version 2
if run timeout 120 "$K" cli kafka-features --bootstrap-server "$BS" describe &&
	grep -qE "^Feature: transaction.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 2[[:space:]]+FinalizedVersionLevel: 2" "$work/out"; then
	ok "kafka-features describe: transaction.version supported 0-2, finalized 2"
else nok "kafka-features describe: transaction.version supported 0-2, finalized 2"; fi
# and the group protocols' features (Kafka 4.4 finalizes share.version 2, its dead-letter queue)
if grep -qE "^Feature: group.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 1[[:space:]]+FinalizedVersionLevel: 1" "$work/out" &&
	grep -qE "^Feature: share.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: [12][[:space:]]+FinalizedVersionLevel: [12]" "$work/out"; then
	ok "kafka-features describe: group.version finalized 1, share.version finalized 1 or more"
else nok "kafka-features describe: group.version finalized 1, share.version finalized 1 or more"; fi

# --- transactions -------------------------------------------------------------------------------
# A transactional producer (kafka-producer-perf-test --transactional-id), then kafka-transactions
# list, describe and describe-producers (ListTransactions, DescribeTransactions, DescribeProducers).
X=cli-txn-$suffix
ktx() { timeout 120 "$K" cli kafka-transactions --bootstrap-server "$BS" "$@"; }
if run kcli kafka-topics --create --topic "$X" --partitions 1 --replication-factor 1 &&
	run kcli kafka-producer-perf-test --topic "$X" --num-records 50 --record-size 10 --throughput -1 \
		--transactional-id "$X-tx" --transaction-duration-ms 100 && grep -q "^50 records sent" "$work/out"; then
	ok "kafka-producer-perf-test --transactional-id: 50 records in transactions"
else nok "kafka-producer-perf-test --transactional-id: 50 records in transactions"; fi
if run ktx list && grep -qE "^$X-tx[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+CompleteCommit" "$work/out"; then
	ok "kafka-transactions list: $X-tx CompleteCommit"
else nok "kafka-transactions list: $X-tx CompleteCommit"; fi
if run ktx describe --transactional-id "$X-tx" && grep -qE "^[0-9]+[[:space:]]+$X-tx[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+CompleteCommit[[:space:]]+60000" "$work/out"; then
	ok "kafka-transactions describe: CompleteCommit, timeout 60000"
else nok "kafka-transactions describe: CompleteCommit, timeout 60000"; fi
pid=$(awk -v id="$X-tx" '$2 == id { print $3 }' "$work/out")
epoch=$(awk -v id="$X-tx" '$2 == id { print $4 }' "$work/out")
# transactions version 2: every EndTxn bumps the epoch (version 1 would leave it at 0)
if [ -n "$epoch" ] && [ "$epoch" -ge 1 ]; then
	ok "kafka-transactions describe: the epoch bumped by the commit (transactions version 2): $epoch"
else nok "kafka-transactions describe: the epoch bumped by the commit (transactions version 2): '$epoch'"; fi
if run ktx describe-producers --topic "$X" --partition 0 && [ -n "$pid" ] && grep -qE "^$pid[[:space:]]+[0-9]+[[:space:]]" "$work/out" &&
	grep -qE "None[[:space:]]*$" "$work/out"; then
	ok "kafka-transactions describe-producers: producer $pid, no open transaction"
else nok "kafka-transactions describe-producers: producer $pid, no open transaction"; fi
kcli kafka-topics --delete --topic "$X" >/dev/null 2>&1

# --- delete ------------------------------------------------------------------------------------
if run kcli kafka-topics --delete --topic "$T" && run kcli kafka-topics --delete --topic "$S"; then
	sleep 1
	if run kcli kafka-topics --list && ! grep -qx "$T" "$work/out" && ! grep -qx "$S" "$work/out"; then
		ok "kafka-topics --delete: topics gone from --list"
	else nok "kafka-topics --delete: topics gone from --list"; fi
else nok "kafka-topics --delete"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
