#!/usr/bin/env bash
# kcat (Debian's kcat 1.7.1 on librdkafka 2.0.2) against the broker at $KAFKA_BOOTSTRAP.
# Every test uses its own topic (auto-created by the first Metadata request that names it, with the
# broker's default of one partition) and compares what kcat prints byte for byte.
#
# Tests that need consumer groups (JoinGroup & co.) run unless KAFKA_TEST_GROUPS=0; those that
# need transactions only with KAFKA_TEST_TXN=1. known-failures beside this file lists kafka_pg bugs
# (lines "<test name> <reason>"): they print XFAIL and are not counted (KAFKA_TEST_STRICT=1 counts them).
# Run one test: test.sh NAME...   (names as printed)
set -u

B=${KAFKA_BOOTSTRAP:-127.0.0.1:9092}
RUN_ID=${KAFKA_TEST_RUN_ID:-$(date +%s)-$$}
TMP=$(mktemp -d /tmp/kcat-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
KC=(timeout 60 kcat -b "$B" -m 20 -X socket.timeout.ms=20000)

PASSED=0 FAILED=0 SKIPPED=0 XFAILED=0
KNOWN=$(dirname "$0")/known-failures
known_failure() { # print the reason if $1 is a known failure
	[ "${KAFKA_TEST_STRICT:-0}" = 1 ] && return 1
	[ -f "$KNOWN" ] || return 1
	awk -v n="$1" '$1 == n { $1 = ""; sub(/^ /, ""); print; found = 1 } END { exit !found }' "$KNOWN"
}
FAILS=()

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
topic() { echo "kcat-$1-$RUN_ID"; }

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [ "$2" != "$3" ]; then
		echo "    $1 differs:"
		diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/      /' | head -40
		return 1
	fi
}

# kcat_out FILE CMD...: run kcat, stdout to FILE, stderr to FILE.err; on failure show stderr
kc() {
	local out=$1
	shift
	local rc=0
	"${KC[@]}" "$@" >"$out" 2>"$out.err" || rc=$?
	if [ $rc != 0 ]; then
		echo "    kcat $* failed (exit $rc):"
		grep -v '^% Reached end' "$out.err" | sed 's/^%\([0-9]\)|[0-9.]*|/%\1|/' | awk '!seen[$0]++' | head -20 | sed 's/^/      /'
		return 1
	fi
}

produce() { # produce TOPIC ARGS... < input
	local t=$1
	shift
	kc "$TMP/produce.out" -P -t "$t" "$@" || return 1
	if grep -q 'ERROR\|Delivery failed' "$TMP/produce.out.err"; then
		echo "    produce reported errors:"
		head -20 "$TMP/produce.out.err" | sed 's/^/      /'
		return 1
	fi
}

# ---------------------------------------------------------------------------------------------
FEATURES_REQUIRED="MsgVer2 ApiVersion LZ4 OffsetTime IdempotentProducer ZSTD"
test_features() {
	# librdkafka < 2.11 enables a feature only if exact old API versions are advertised;
	# a missing one silently disables compression, offsets-by-time or idempotence.
	"${KC[@]}" -d feature -L -t "$(topic features)" >"$TMP/f.out" 2>"$TMP/f.err" || { cat "$TMP/f.err" | tail -5; return 1; }
	local f bad=0
	for f in $FEATURES_REQUIRED; do
		if ! grep -q "Enabling feature $f\$" "$TMP/f.err"; then
			echo "    librdkafka did not enable feature $f:"
			grep "feature $f\|Feature $f" "$TMP/f.err" | sed 's/.*\]: /      /'
			bad=1
		fi
	done
	return $bad
}

test_features_groups() { # groups
	"${KC[@]}" -d feature -L -t "$(topic features)" >"$TMP/f.out" 2>"$TMP/f.err" || { tail -5 "$TMP/f.err"; return 1; }
	local f bad=0
	for f in BrokerGroupCoordinator BrokerBalancedConsumer; do
		if ! grep -q "Enabling feature $f\$" "$TMP/f.err"; then
			echo "    librdkafka did not enable feature $f:"
			grep "feature $f\|Feature $f" "$TMP/f.err" | sed 's/.*\]: /      /'
			bad=1
		fi
	done
	return $bad
}

test_metadata_list() {
	local t
	t=$(topic meta)
	echo hello | produce "$t" -p 0 || return 1
	kc "$TMP/l.out" -L -t "$t" || return 1
	local host=${B%:*} port=${B##*:}
	grep -q "^  broker [0-9]* at $host:$port" "$TMP/l.out" || { echo "    no broker $B in:"; sed 's/^/      /' "$TMP/l.out"; return 1; }
	grep -q "^  topic \"$t\" with 1 partitions:\$" "$TMP/l.out" || { echo "    topic line missing:"; sed 's/^/      /' "$TMP/l.out"; return 1; }
	grep -Eq "^    partition 0, leader [0-9]+, replicas: [0-9]+, isrs: [0-9]+\$" "$TMP/l.out" ||
		{ echo "    partition line missing:"; sed 's/^/      /' "$TMP/l.out"; return 1; }
	# all-topics listing includes it too
	kc "$TMP/all.out" -L || return 1
	grep -q "^  topic \"$t\" with 1 partitions:\$" "$TMP/all.out" || { echo "    $t not in full listing"; return 1; }
}

test_metadata_json() {
	local t
	t=$(topic metajson)
	echo hello | produce "$t" -p 0 || return 1
	kc "$TMP/j.out" -L -J -t "$t" || return 1
	$PY - "$TMP/j.out" "$t" "$B" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t, b = sys.argv[2], sys.argv[3]
host, port = b.rsplit(":", 1)
assert any(x["name"] == f"{host}:{port}" for x in d["brokers"]), ("brokers", d["brokers"])
tops = [x for x in d["topics"] if x["topic"] == t]
assert len(tops) == 1, ("topics", d["topics"])
p = tops[0]["partitions"]
assert len(p) == 1 and p[0]["partition"] == 0, p
assert p[0]["leader"] == d["brokers"][0]["id"] or any(br["id"] == p[0]["leader"] for br in d["brokers"]), p
assert [r["id"] for r in p[0]["replicas"]] == [p[0]["leader"]], p
assert [r["id"] for r in p[0]["isrs"]] == [p[0]["leader"]], p
assert "error" not in tops[0] or not tops[0]["error"], tops[0]
EOF
}

FMT='%k|%K|%s|%S|%p|%o|%h\n'

# produce keyed records with headers, then unkeyed ones without, then a NULL-value record;
# consume all back
produce_consume() {
	local codec=$1 t
	t=$(topic "pc-$codec")
	printf 'k1:v1\n:empty key\nk3:\nk4:caf\xc3\xa9 \xe2\x82\xac\tTAB\n' | produce "$t" -p 0 -K: -z "$codec" -H h1=v1 -H h2= -H h1=dup || return 1
	printf 'plain one\nplain two\n' | produce "$t" -p 0 -z "$codec" || return 1
	printf 'tomb:\n' | produce "$t" -p 0 -K: -Z -z "$codec" || return 1
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -f "$FMT" || return 1
	local expected
	expected=$(printf '%s\n' \
		'k1|2|v1|2|0|0|h1=v1,h2=,h1=dup' \
		'|0|empty key|9|0|1|h1=v1,h2=,h1=dup' \
		'k3|2||0|0|2|h1=v1,h2=,h1=dup' \
		"k4|2|caf$(printf '\xc3\xa9 \xe2\x82\xac\tTAB')|13|0|3|h1=v1,h2=,h1=dup" \
		'|-1|plain one|9|0|4|' \
		'|-1|plain two|9|0|5|' \
		'tomb|4||-1|0|6|')
	expect_eq "consumed records" "$expected" "$(cat "$TMP/c.out")"
}
test_produce_consume_none() { produce_consume none; }
test_produce_consume_gzip() { produce_consume gzip; }
test_produce_consume_snappy() { produce_consume snappy; }
test_produce_consume_lz4() { produce_consume lz4; }
test_produce_consume_zstd() { produce_consume zstd; }

many() {
	local codec=$1 t
	t=$(topic "many-$codec")
	seq 1 3000 | sed 's/^/key-&:value-&-padding-padding-padding/' >"$TMP/in"
	produce "$t" -p 0 -K: -z "$codec" -l "$TMP/in" || return 1
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -f '%o %k:%s\n' || return 1
	expect_eq "3000 records" "$(seq 0 2999 | paste -d' ' - "$TMP/in")" "$(cat "$TMP/c.out")"
}
test_many_records_gzip() { many gzip; }
test_many_records_lz4() { many lz4; }
test_many_records_zstd() { many zstd; }
test_many_records_snappy() { many snappy; }

big_binary() {
	local codec=$1 t
	t=$(topic "big-$codec")
	head -c 300000 /dev/urandom >"$TMP/big"
	# a file argument without -l is sent as one single message
	produce "$t" -p 0 -z "$codec" "$TMP/big" || return 1
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -c 1 -f '%s' || return 1
	cmp "$TMP/big" "$TMP/c.out" || { echo "    300000-byte random value differs after round trip ($(stat -c %s "$TMP/c.out") bytes back)"; return 1; }
}
test_big_binary_none() { big_binary none; }
test_big_binary_zstd() { big_binary zstd; }
test_big_binary_gzip() { big_binary gzip; }

test_consume_from_offset() {
	local t
	t=$(topic offset)
	seq 0 9 | sed 's/^/m/' | produce "$t" -p 0 || return 1
	# separate batches, too, so that the fetch offset falls inside and between batches
	seq 10 14 | sed 's/^/m/' | produce "$t" -p 0 -z lz4 || return 1
	kc "$TMP/a.out" -C -t "$t" -p 0 -o 3 -e -f '%o=%s\n' || return 1
	expect_eq "from offset 3" "$(seq 3 14 | sed 's/.*/&=m&/')" "$(cat "$TMP/a.out")" || return 1
	kc "$TMP/b.out" -C -t "$t" -p 0 -o 12 -e -f '%o=%s\n' || return 1
	expect_eq "from offset 12" "$(seq 12 14 | sed 's/.*/&=m&/')" "$(cat "$TMP/b.out")" || return 1
	kc "$TMP/c.out" -C -t "$t" -p 0 -o -2 -e -f '%o=%s\n' || return 1
	expect_eq "2 from end" "$(printf '13=m13\n14=m14')" "$(cat "$TMP/c.out")" || return 1
	kc "$TMP/d.out" -C -t "$t" -p 0 -o 5 -c 3 -f '%o=%s\n' || return 1
	expect_eq "3 from offset 5" "$(printf '5=m5\n6=m6\n7=m7')" "$(cat "$TMP/d.out")" || return 1
	kc "$TMP/e.out" -C -t "$t" -p 0 -o end -e -f '%o=%s\n' || return 1
	expect_eq "from end" "" "$(cat "$TMP/e.out")"
}

test_timestamps_and_query() {
	local t ts0 ts1 ts2
	t=$(topic ts)
	ts0=$(($(date +%s%3N) - 1))
	printf 'a0\na1\na2\n' | produce "$t" -p 0 || return 1
	sleep 1.2
	ts1=$(date +%s%3N)
	sleep 0.2
	printf 'b3\nb4\n' | produce "$t" -p 0 || return 1
	ts2=$(($(date +%s%3N) + 1))
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -f '%o %T\n' || return 1
	local o ts bad=0
	while read -r o ts; do
		if [ "$o" -lt 3 ] && { [ "$ts" -lt "$ts0" ] || [ "$ts" -gt "$ts1" ]; }; then bad=1; fi
		if [ "$o" -ge 3 ] && { [ "$ts" -lt "$ts1" ] || [ "$ts" -gt "$ts2" ]; }; then bad=1; fi
	done <"$TMP/c.out"
	[ $bad = 0 ] || { echo "    CreateTime timestamps outside [$ts0,$ts1] / [$ts1,$ts2]:"; sed 's/^/      /' "$TMP/c.out"; return 1; }
	kc "$TMP/q1" -Q -t "$t:0:$ts1" || return 1
	expect_eq "-Q at ts1" "$t [0] offset 3" "$(cat "$TMP/q1")" || return 1
	kc "$TMP/q0" -Q -t "$t:0:0" || return 1
	expect_eq "-Q at ts 0" "$t [0] offset 0" "$(cat "$TMP/q0")" || return 1
	kc "$TMP/qe" -Q -t "$t:0:-1" || return 1
	expect_eq "-Q latest (-1)" "$t [0] offset 5" "$(cat "$TMP/qe")" || return 1
	kc "$TMP/qb" -Q -t "$t:0:-2" || return 1
	expect_eq "-Q earliest (-2)" "$t [0] offset 0" "$(cat "$TMP/qb")" || return 1
	kc "$TMP/qf" -Q -t "$t:0:$((ts2 + 3600000))" || return 1
	expect_eq "-Q after the last record" "$t [0] offset -1" "$(cat "$TMP/qf")" || return 1
	# consume starting at a timestamp (offsets for times) and stopping at one
	kc "$TMP/s.out" -C -t "$t" -p 0 -o "s@$ts1" -e -f '%o=%s\n' || return 1
	expect_eq "-o s@ts1" "$(printf '3=b3\n4=b4')" "$(cat "$TMP/s.out")" || return 1
	kc "$TMP/e.out" -C -t "$t" -p 0 -o beginning -o "e@$ts1" -e -f '%o=%s\n' || return 1
	expect_eq "-o e@ts1" "$(printf '0=a0\n1=a1\n2=a2')" "$(cat "$TMP/e.out")"
}

test_consume_json() {
	local t
	t=$(topic json)
	printf 'k1:{"a":1}\n' | produce "$t" -p 0 -K: -H trace=abc -z zstd || return 1
	printf 'nokey\n' | produce "$t" -p 0 || return 1
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -J || return 1
	$PY - "$TMP/c.out" "$t" <<'EOF'
import json, sys, time
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
a, b = (json.loads(l) for l in lines)
now = time.time() * 1000
for m, off in ((a, 0), (b, 1)):
    assert m["topic"] == sys.argv[2] and m["partition"] == 0 and m["offset"] == off, m
    assert m["tstype"] == "create" and now - 120000 < m["ts"] <= now + 1000, m
assert a["key"] == "k1" and a["payload"] == '{"a":1}' and a["headers"] == ["trace", "abc"], a
assert b["key"] is None and b["payload"] == "nokey" and "headers" not in b, b
EOF
}

test_idempotent_producer() {
	local t
	t=$(topic idem)
	seq 1 50 | produce "$t" -p 0 -X enable.idempotence=true -z lz4 || return 1
	seq 51 60 | produce "$t" -p 0 -X enable.idempotence=true || return 1
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -f '%o:%s\n' || return 1
	expect_eq "idempotent records" "$(seq 1 60 | awk '{print NR-1 ":" $1}')" "$(cat "$TMP/c.out")"
}

test_unknown_partition() {
	local t
	t=$(topic unknownpart)
	echo x | produce "$t" -p 0 || return 1
	if echo y | "${KC[@]}" -P -t "$t" -p 5 >"$TMP/o" 2>"$TMP/e"; then
		echo "    producing to partition 5 of a 1-partition topic succeeded"
		return 1
	fi
	grep -q 'Unknown partition' "$TMP/e" || { echo "    unexpected error:"; sed 's/^/      /' "$TMP/e"; return 1; }
}

test_transactional_produce() { # txn
	local t
	t=$(topic txn)
	printf 't1\nt2\nt3\n' | produce "$t" -p 0 -X transactional.id="kcat-txn-$RUN_ID" || return 1
	printf 'after\n' | produce "$t" -p 0 || return 1
	# read_committed (librdkafka's default) sees the committed ones; offset 3 is the commit marker
	kc "$TMP/c.out" -C -t "$t" -o beginning -e -f '%o:%s\n' || return 1
	expect_eq "committed transaction" "$(printf '0:t1\n1:t2\n2:t3\n4:after')" "$(cat "$TMP/c.out")"
}

test_balanced_consumer() { # groups
	local t
	t=$(topic group)
	printf 'g1\ng2\ng3\n' | produce "$t" -p 0 || return 1
	kc "$TMP/c.out" -G "kcat-group-$RUN_ID" -X auto.offset.reset=earliest -e -f '%o:%s\n' "$t" || return 1
	expect_eq "group consumer" "$(printf '0:g1\n1:g2\n2:g3')" "$(cat "$TMP/c.out")"
}

# ---------------------------------------------------------------------------------------------
ALL=$(declare -F | awk '{print $3}' | grep '^test_' | sed 's/^test_//')
SEL=${*:-$ALL}
echo "kcat $(kcat -V 2>&1 | sed -n 's/.*Version \([^ ]*\).*librdkafka \([^ ]*\).*/\1 (librdkafka \2)/p') against $B"
for name in $SEL; do
	tag=$(grep -E "^test_$name\(\) *\{ *# *(groups|txn)" "$0" | sed 's/.*# *//')
	if [ "$tag" = groups ] && [ "${KAFKA_TEST_GROUPS:-1}" != 1 ]; then
		echo "SKIP $name (needs consumer groups; KAFKA_TEST_GROUPS=0 skips it)"
		SKIPPED=$((SKIPPED + 1)); continue
	fi
	if [ "$tag" = txn ] && [ "${KAFKA_TEST_TXN:-0}" != 1 ]; then
		echo "SKIP $name (needs transactions; KAFKA_TEST_TXN=1 runs it)"
		SKIPPED=$((SKIPPED + 1)); continue
	fi
	start=$EPOCHREALTIME
	if out=$("test_$name" 2>&1); then
		printf 'ok   %s (%ss)\n' "$name" "$(elapsed "$start")"
		PASSED=$((PASSED + 1))
		known_failure "$name" >/dev/null && echo "XPASS $name: listed in known-failures; remove the line"
	else
		if known_failure "$name" >/dev/null; then tag=XFAIL; else tag=FAIL; fi
		printf '%s %s (%ss)\n' "$tag" "$name" "$(elapsed "$start")"
		[ -n "$out" ] && printf '%s\n' "$out"
		if known=$(known_failure "$name"); then
			echo "    known failure: $known"
			XFAILED=$((XFAILED + 1))
		else
			FAILED=$((FAILED + 1)); FAILS+=("$name")
		fi
	fi
done
[ $FAILED = 0 ] || echo "failed: ${FAILS[*]}"
[ $SKIPPED = 0 ] || echo "skipped: $SKIPPED"
[ $XFAILED = 0 ] || echo "known failures (XFAIL, not counted): $XFAILED"
echo "$PASSED passed, $FAILED failed"
[ $FAILED = 0 ]
