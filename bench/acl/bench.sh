#!/usr/bin/env bash
# The cost of authorization: produce and fetch throughput of one SASL user authorized by ACLs, with
# only the ACLs it needs ("few": 3) and with 1,000 more ("1000": 500 on the same user for other
# topics, which its checks scan, and 500 for other users), against a superuser (no ACL checked) as
# the baseline, on one kafka_pg cluster of its own (SASL_PLAINTEXT, PLAIN), in the same run,
# repetitions interleaved. Kafka's own tools: kafka-producer-perf-test (acks=1, 100 B records) and
# kafka-consumer-perf-test (a group). Prints medians and min-max, and each case's ratio to the
# baseline median, of the rates and of the listener workers' CPU time per step (from /proc: other
# load on a shared machine disturbs it far less than the rates); each repetition starts with
# another case, and the load average is logged before each. Then the cost of one check alone (kafka.authorized in a SQL loop) with few and
# with 1,000 ACLs. Asserts nothing: a benchmark, not a test. Run as root (the server runs as
# postgres), after `make install`.
#
#   bench/acl/bench.sh
#
# Settings: BENCH_REPS (3), BENCH_RECORDS (1000000), BENCH_CHECKS_ONLY=1 (only the check alone),
# BENCH_PERF=1 (perf profile of the listener: the share of its CPU in the checks), BENCH_PG_PORT (55490), BENCH_KP_PORT (19490),
# BENCH_STEP_TIMEOUT (300 s). Raw output: bench/out/acl-<time>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
. "$here/../../test/lib/cluster.sh"
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-1000000}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-300}
KPORT=0 # no Kafka here (bench_cleanup stops nothing)

bench_init acl
export KP_KAFKA_DB=kafka_bench
pgport=$(kp_free_port "${BENCH_PG_PORT:-55490}")
kport=$(kp_free_port "${BENCH_KP_PORT:-19490}" "$pgport")
data=$work/data
trap 'kp_stop "$data" immediate; bench_cleanup' EXIT
chmod 755 "$work"
export KP_EXTRA_CONF="kafka.security_protocol = 'SASL_PLAINTEXT'
kafka.sasl_plain_allow_plaintext = on
password_encryption = 'scram-sha-256'"
say "bench: kafka_pg on 127.0.0.1:$kport (log: $LOG)"
kp_init "$data" "$pgport" "$kport" "$work" >>"$LOG" 2>&1 && kp_start "$data" >>"$LOG" 2>&1 &&
	kp_create_extension "$pgport" "$KP_KAFKA_DB" >>"$LOG" 2>&1 ||
	{ say "bench: kafka_pg did not start"; exit 1; }
sql() { kp_psql "$pgport" "$KP_KAFKA_DB" -c "$1" >>"$LOG" 2>&1; }
sql "CREATE ROLE bench_admin LOGIN SUPERUSER PASSWORD 'admin-secret';
	CREATE ROLE bench_user LOGIN PASSWORD 'user-secret';
	SELECT kafka.create_acl('User:bench_user', 'TOPIC', 'bench-acl-', 'WRITE', pattern_type => 'PREFIXED');
	SELECT kafka.create_acl('User:bench_user', 'TOPIC', 'bench-acl-', 'READ', pattern_type => 'PREFIXED');
	SELECT kafka.create_acl('User:bench_user', 'GROUP', 'bench-acl-', 'READ', pattern_type => 'PREFIXED')"
sleep 1

for u in admin user; do
	printf '%s\n' security.protocol=SASL_PLAINTEXT sasl.mechanism=PLAIN \
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"bench_$u\" password=\"$u-secret\";" \
		>"$work/$u.properties"
done

acls() { # acls few|1000
	sql "DELETE FROM kafka.acls WHERE resource_name LIKE 'bench-other-%'"
	[ "$1" = 1000 ] && sql "INSERT INTO kafka.acls (principal, resource_type, pattern_type, resource_name, operation, permission)
		SELECT CASE WHEN i % 2 = 0 THEN 'User:bench_user' ELSE 'User:other' || i END, 'TOPIC',
		       CASE WHEN i % 4 < 2 THEN 'LITERAL' ELSE 'PREFIXED' END, 'bench-other-' || i || '-',
		       (ARRAY['READ', 'WRITE', 'DESCRIBE', 'DELETE'])[i % 4 + 1], 'ALLOW'
		  FROM generate_series(1, 1000) i"
	say "bench: $(kp_psql "$pgport" "$KP_KAFKA_DB" -Atc "SELECT count(*) FROM kafka.acls") ACLs"
}

declare -A vals
record() { vals["$1|$2"]+="$3 "; }

# the listener workers' CPU time so far (ms, from the scheduler's ns count in /proc/PID/schedstat):
# a figure the other load on a shared machine disturbs far less than wall-clock rates (the
# clients' CPU is not in it)
pm=$(kp_postmaster_pid "$data")
listener_cpu_ns() {
	local pid total=0 f
	for pid in $(pgrep -P "$pm"); do
		grep -q 'kafka_pg listener' "/proc/$pid/cmdline" 2>/dev/null || continue
		read -ra f <"/proc/$pid/schedstat" || continue
		total=$((total + f[0]))
	done
	echo "$total"
}
cpu_ms_since() { awk -v a="$1" -v b="$(listener_cpu_ns)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }

produce() { # produce CASE USER TOPIC
	local out line cpu0
	cpu0=$(listener_cpu_ns)
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "$3" --num-records "$N" \
		--record-size 100 --throughput -1 --command-config "$work/$2.properties" \
		--producer-props bootstrap.servers="127.0.0.1:$kport" acks=1 enable.idempotence=false 2>&1)
	echo "== produce $1 $3" >>"$LOG"
	echo "$out" >>"$LOG"
	line=$(grep -E "^$N records sent" <<<"$out" | tail -1)
	record "$1" "produce records/s" "$([ -n "$line" ] && sed -E 's/.* records sent, ([0-9.]+) records\/sec.*/\1/' <<<"$line" || echo fail)"
	record "$1" "produce listener CPU ms" "$(cpu_ms_since "$cpu0")"
	[ -n "$line" ] || say "  $1: produce failed: $(grep -iE 'error|exception' <<<"$out" | head -2)"
}

consume() { # consume CASE USER TOPIC
	local out line cpu0
	cpu0=$(listener_cpu_ns)
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-consumer-perf-test --bootstrap-server "127.0.0.1:$kport" \
		--topic "$3" --messages "$N" --timeout 30000 --group "$3-g" \
		--command-config "$work/$2.properties" 2>&1)
	record "$1" "fetch listener CPU ms" "$(cpu_ms_since "$cpu0")"
	echo "== consume $1 $3" >>"$LOG"
	echo "$out" >>"$LOG"
	line=$(grep -E '^[0-9]{4}-' <<<"$out" | tail -1)
	if [ -n "$line" ] && [ "$(awk -F', *' '{ print $5 }' <<<"$line")" -ge "$N" ] 2>/dev/null; then
		record "$1" "fetch records/s" "$(awk -F', *' '{ print $10 }' <<<"$line")"
	else
		record "$1" "fetch records/s" fail
		say "  $1: consume failed: $(grep -iE 'error|exception' <<<"$out" | head -2)"
	fi
}

# BENCH_PERF=1: profile the listener workers over the whole run (perf, from Debian's linux-perf)
# and print the share of their CPU spent in the authorization checks
perf_pid=
if [ "${BENCH_PERF:-0}" = 1 ] && command -v perf >/dev/null; then
	pids=$(for pid in $(pgrep -P "$pm"); do
		grep -q 'kafka_pg listener' "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
	done | paste -sd,)
	perf record -F 499 -g -p "$pids" -o "$work/perf.data" >>"$LOG" 2>&1 &
	perf_pid=$!
fi

cases=("superuser:admin" "few ACLs:user" "1000 ACLs:user")
run=$$
[ "${BENCH_CHECKS_ONLY:-0}" = 1 ] && REPS_T=0 || REPS_T=$REPS
say "bench: warming up"
sql "SELECT kafka.create_topic('bench-acl-warm-$run', 1)"
produce warmup admin "bench-acl-warm-$run" >/dev/null
for rep in $(seq 1 "$REPS_T"); do
	# each repetition starts with another case (rotated), so no case always runs first or last
	order=()
	for i in 0 1 2; do order+=("${cases[$(((i + rep - 1) % 3))]}"); done
	say "bench: load average $(cut -d' ' -f1-3 /proc/loadavg)"
	for c in "${order[@]}"; do
		name=${c%%:*} user=${c#*:}
		case $name in "1000 ACLs") acls 1000 ;; *) acls few ;; esac
		say "bench: repetition $rep, $name"
		topic="bench-acl-$run-$rep-${name// /_}"
		sql "SELECT kafka.create_topic('$topic', 1)" # the user may not create topics
		produce "$name" "$user" "$topic"
		consume "$name" "$user" "$topic"
	done
done

if [ -n "$perf_pid" ]; then
	kill -INT "$perf_pid"
	wait "$perf_pid"
	echo
	echo "listener CPU in the authorization checks (perf, inclusive, all cases together):"
	perf report -i "$work/perf.data" --children --sort symbol --stdio -g none 2>/dev/null |
		awk '/^# Samples:/ { print "  " $0 }
			$4 ~ /^(kp_authz|kp_authz_topic|kp_authz_cluster|kp_acl_authorize|kp_acl_allows_everything|kp_handle_fetch|kp_handle_produce|kp_dispatch_frame)$/ {
				printf "  %-26s %8s of the listener samples (self %s)\n", $4, $1, $2 }'
	echo
fi
printf '| %-20s | %-12s | %-24s | %-12s |\n' "figure" "case" "median (min-max)" "/ superuser"
printf '|%s|%s|%s|%s|\n' "----------------------" "--------------" "--------------------------" "--------------"
for f in "produce records/s" "fetch records/s" "produce listener CPU ms" "fetch listener CPU ms"; do
	base=$(median "${vals["superuser|$f"]:-}")
	for c in "${cases[@]}"; do
		name=${c%%:*}
		v=${vals["$name|$f"]:-}
		m=$(median "$v")
		ratio=n/a
		[[ $m =~ ^[0-9.]+$ && $base =~ ^[0-9.]+$ ]] && ratio=$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
		printf '| %-20s | %-12s | %-24s | %-12s |\n' "$f" "$name" "$(fmt "$m") ($(spread "$v"))" "$ratio"
	done
done

# the check alone: kafka.authorized (the same kp_acl_authorize the listener calls, plus a role
# lookup by name and the SQL call) for the user, on a topic its prefixed ACL allows (the name
# depends on the row, so the call is made for every row, not once)
echo
printf '| %-34s | %-12s | %-24s |\n' "authorizer check (SQL, 200000 calls)" "case" "median us/check (min-max)"
printf '|%s|%s|%s|\n' "------------------------------------" "--------------" "--------------------------"
declare -A us
for rep in $(seq 1 "$REPS"); do
	for c in few 1000; do
		acls $c 2>/dev/null
		us[$c]+="$(kp_psql "$pgport" "$KP_KAFKA_DB" -Atc "SELECT round((extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1e6 / 200000)::numeric, 3)
			FROM (SELECT count(*) FROM generate_series(1, 200000) g
			      WHERE kafka.authorized('TOPIC', CASE WHEN g > 0 THEN 'bench-acl-x' END, 'WRITE', 'bench_user')) c") "
	done
done
for c in few 1000; do
	printf '| %-34s | %-12s | %-24s |\n' "kafka.authorized" "$c ACLs" "$(median "${us[$c]}") ($(spread "${us[$c]}"))"
done
say "bench: raw output in $LOG"
