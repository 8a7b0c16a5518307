#!/usr/bin/env bash
# Security benchmark: produce and fetch throughput over SASL_SSL with SCRAM-SHA-512, and over
# PLAINTEXT as the baseline, for Apache Kafka 4.x and kafka_pg in the same run, with the same
# Java tools and settings. Prints the median and spread of each figure and the ratio
# kafka_pg/Kafka; asserts nothing. Run as root (kafka_pg runs as postgres).
#
#   bench/security/bench.sh
#   BENCH_REPS=1 BENCH_RECORDS=50000 bench/security/bench.sh
#
# Both brokers: a certificate made by openssl for the run (RSA 2048), TLS 1.2+ as the JVM and
# OpenSSL negotiate, a user "bench" with a SCRAM-SHA-512 credential (4096 iterations) set with
# kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[...]' (on kafka_pg: a superuser role that
# sets it logged in with SCRAM-SHA-256). Kafka has a PLAINTEXT and a SASL_SSL listener; kafka_pg
# one port, so it is restarted with kafka.security_protocol = SASL_SSL or PLAINTEXT for each
# measurement block. Per repetition, for each broker and protocol:
#   produce   kafka-producer-perf-test --throughput -1, N records of 1 KiB, P partitions, acks=1,
#             client defaults otherwise (MB/s)
#   fetch     kafka-consumer-perf-test of those N records from the start (a consumer group;
#             fetch.MB.sec: without the group join)
#
# Settings: BENCH_REPS (3), BENCH_RECORDS (200000), BENCH_RECORD_SIZE (1024), BENCH_PARTITIONS (3),
# BENCH_KAFKA_PORT (39192; +1 controller, +2 SASL_SSL), BENCH_KP_PORT (55492), BENCH_KP_KAFKA_PORT
# (39292), BENCH_STEP_TIMEOUT (300 s), PG_BINDIR (pg_config's). Raw output: bench/out/security-*.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-200000}
SIZE=${BENCH_RECORD_SIZE:-1024}
PARTS=${BENCH_PARTITIONS:-3}
KPORT=${BENCH_KAFKA_PORT:-39192}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-300}

bench_init security
export KP_KAFKA_DB=kafka_bench
. "$repo/test/lib/cluster.sh"
PGPORT_B=$(kp_free_port "${BENCH_KP_PORT:-55492}")
KPKPORT=$(kp_free_port "${BENCH_KP_KAFKA_PORT:-39292}" "$PGPORT_B")
CPORT=$((KPORT + 1))
SPORT=$((KPORT + 2))
kpdata=$work/kp/data
chmod 755 "$work"

bench_security_cleanup() {
	kp_stop "$kpdata" immediate
	bench_cleanup
}
trap bench_security_cleanup EXIT

# the certificate both brokers serve, and the client configs
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/server.key" -out "$work/server.crt" -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || { say "bench: openssl failed"; exit 1; }
cat "$work/server.key" "$work/server.crt" >"$work/kafka.pem"
mkdir -p "$work/kp"
cp "$work/server.key" "$work/server.crt" "$work/kp/"
chown -R postgres "$work/kp"
chmod 600 "$work/kp/server.key"
client_config() { # client_config FILE MECHANISM (none: PLAINTEXT)
	if [ "$2" = none ]; then
		echo "security.protocol=PLAINTEXT" >"$1"
	else
		printf '%s\n' security.protocol=SASL_SSL "sasl.mechanism=$2" \
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bench\" password=\"bench-secret\";" \
			ssl.truststore.type=PEM "ssl.truststore.location=$work/server.crt" >"$1"
	fi
}
client_config "$work/plain.properties" none
client_config "$work/scram512.properties" SCRAM-SHA-512
client_config "$work/scram256.properties" SCRAM-SHA-256

# Apache Kafka: PLAINTEXT (also between the broker and its controller) and SASL_SSL
say "bench: starting Apache Kafka on 127.0.0.1:$KPORT (PLAINTEXT) and :$SPORT (SASL_SSL) (log: $LOG)"
props="listeners=PLAINTEXT://127.0.0.1:$KPORT,CONTROLLER://127.0.0.1:$CPORT,SASL_SSL://127.0.0.1:$SPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KPORT,SASL_SSL://127.0.0.1:$SPORT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$work/kafka.pem"
KAFKA_CONTROLLER_PORT=$CPORT KAFKA_BROKER_PROPS="$props" "$K" start "$KPORT" >>"$LOG" 2>&1 ||
	{ say "bench: Kafka did not start"; tail -20 "$LOG" >&2; exit 1; }
"$K" cli kafka-configs --bootstrap-server "127.0.0.1:$KPORT" --alter --entity-type users --entity-name bench \
	--add-config 'SCRAM-SHA-512=[iterations=4096,password=bench-secret]' >>"$LOG" 2>&1 ||
	{ say "bench: could not create Kafka's SCRAM user"; exit 1; }

# kafka_pg: its own cluster, restarted per protocol
kp_conf() { # kp_conf PROTOCOL
	local extra="kafka.security_protocol = '$1'
kafka.listener_workers = 2
password_encryption = 'scram-sha-256'"
	[ "$1" = SASL_SSL ] && extra="$extra
kafka.ssl_cert_file = '$work/kp/server.crt'
kafka.ssl_key_file = '$work/kp/server.key'
kafka.sasl_enabled_mechanisms = 'SCRAM-SHA-256,SCRAM-SHA-512'"
	KP_EXTRA_CONF="$extra" kp_write_conf "$kpdata" "$PGPORT_B" "$KPKPORT" "$work/kp"
}
kp_switch() { # kp_switch PROTOCOL: restart kafka_pg serving PROTOCOL
	kp_stop "$kpdata"
	kp_conf "$1"
	kp_start "$kpdata" || return 1
	sleep 2
}
say "bench: starting kafka_pg (PostgreSQL on $PGPORT_B, Kafka listener on $KPKPORT)"
if ! kp_init "$kpdata" "$PGPORT_B" "$KPKPORT" "$work/kp" || ! kp_start "$kpdata" ||
	! kp_create_extension "$PGPORT_B" "$KP_KAFKA_DB" ||
	! kp_psql "$PGPORT_B" "$KP_KAFKA_DB" -c "CREATE ROLE bench SUPERUSER LOGIN PASSWORD 'bench-secret'" >/dev/null ||
	! kp_switch SASL_SSL ||
	! "$K" cli kafka-configs --bootstrap-server "127.0.0.1:$KPKPORT" --command-config "$work/scram256.properties" \
		--alter --entity-type users --entity-name bench \
		--add-config 'SCRAM-SHA-512=[iterations=4096,password=bench-secret]' >>"$LOG" 2>&1; then
	say "bench: kafka_pg did not start or the SCRAM-SHA-512 credential could not be set"
	exit 1
fi

declare -A vals
record() { vals["$1|$2"]+="$3 "; }

run_block() { # run_block TARGET BOOTSTRAP CONFIG TAG
	local name=$1 bs=$2 cfg=$3 topic=sec-$4 out line
	timeout "$STEP_TIMEOUT" "$K" cli kafka-topics --bootstrap-server "$bs" --command-config "$cfg" --create \
		--topic "$topic" --partitions "$PARTS" --replication-factor 1 >>"$LOG" 2>&1
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-producer-perf-test --topic "$topic" --num-records "$N" \
		--record-size "$SIZE" --throughput -1 --command-config "$cfg" \
		--producer-props bootstrap.servers="$bs" acks=1 2>&1)
	echo "$out" >>"$LOG"
	line=$(grep -E "^$N records sent" <<<"$out" | tail -1)
	if [ -n "$line" ]; then
		record "$name" "produce MB/s" "$(sed -E 's/.*records\/sec \(([0-9.]+) MB\/sec\).*/\1/' <<<"$line")"
	else
		record "$name" "produce MB/s" fail
		say "  $name: produce failed: $(grep -iE 'error|exception' <<<"$out" | head -2)"
	fi
	out=$(timeout "$STEP_TIMEOUT" "$K" cli kafka-consumer-perf-test --bootstrap-server "$bs" --topic "$topic" \
		--messages "$N" --timeout 30000 --command-config "$cfg" 2>&1)
	echo "$out" >>"$LOG"
	line=$(grep -E '^[0-9]{4}-' <<<"$out" | tail -1)
	if [ -n "$line" ] && [ "$(awk -F', *' '{ print $5 }' <<<"$line")" -ge "$N" ] 2>/dev/null; then
		record "$name" "fetch MB/s" "$(awk -F', *' '{ print $9 }' <<<"$line")"
	else
		record "$name" "fetch MB/s" fail
		say "  $name: fetch failed: $(grep -iE 'error|exception' <<<"$out" | head -2)"
	fi
}

t_start=$SECONDS
for rep in $(seq 1 "$REPS"); do
	say "bench: repetition $rep/$REPS ($((SECONDS - t_start)) s so far)"
	run_block "kafka PLAINTEXT" "127.0.0.1:$KPORT" "$work/plain.properties" "kp$rep$RANDOM"
	run_block "kafka SASL_SSL" "127.0.0.1:$SPORT" "$work/scram512.properties" "ks$rep$RANDOM"
	if kp_switch PLAINTEXT; then
		run_block "kafka_pg PLAINTEXT" "127.0.0.1:$KPKPORT" "$work/plain.properties" "pp$rep$RANDOM"
	else
		say "  kafka_pg did not restart with PLAINTEXT"
	fi
	if kp_switch SASL_SSL; then
		run_block "kafka_pg SASL_SSL" "127.0.0.1:$KPKPORT" "$work/scram512.properties" "ps$rep$RANDOM"
	else
		say "  kafka_pg did not restart with SASL_SSL"
	fi
done

jars=$("$repo/test/clients/kafka/fetch-kafka.sh")
echo
echo "## Security benchmark: Apache Kafka $(basename "$jars" | sed 's/kafka-jars-//') vs kafka_pg ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
echo
echo "Medians of $REPS repetitions (spread min-max). $N records of $SIZE B, $PARTS partitions, acks=1;"
echo "kafka-producer-perf-test and kafka-consumer-perf-test (fetch.MB.sec) for both; SASL_SSL with"
echo "SCRAM-SHA-512 (4096 iterations) and an RSA 2048 certificate."
echo
spread1() { tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$' | sort -g |
	awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.1f-%.1f", lo, hi; else print "-" }'; }
printf '| %-12s | %-10s | %20s | %20s | %14s |\n' figure protocol "Kafka (spread)" "kafka_pg (spread)" "kafka_pg/Kafka"
printf '|%s|%s|%s|%s|%s|\n' "--------------" "------------" "---------------------:" "---------------------:" "---------------:"
for m in "produce MB/s" "fetch MB/s"; do
	for proto in PLAINTEXT SASL_SSL; do
		k=$(median "${vals["kafka $proto|$m"]:-}")
		p=$(median "${vals["kafka_pg $proto|$m"]:-}")
		ratio=$(awk -v a="$p" -v b="$k" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }')
		printf '| %-12s | %-10s | %20s | %20s | %14s |\n' "$m" "$proto" \
			"$(fmt "$k") ($(spread1 "${vals["kafka $proto|$m"]:-}"))" \
			"$(fmt "$p") ($(spread1 "${vals["kafka_pg $proto|$m"]:-}"))" "$ratio"
	done
done
for who in kafka kafka_pg; do
	for m in "produce MB/s" "fetch MB/s"; do
		a=$(median "${vals["$who PLAINTEXT|$m"]:-}")
		b=$(median "${vals["$who SASL_SSL|$m"]:-}")
		awk -v a="$a" -v b="$b" -v w="$who" -v m="$m" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a > 0)
			printf "%s %s: SASL_SSL is %.2f of PLAINTEXT\n", w, m, b / a }'
	done
done
echo
echo "Raw output: $LOG ($((SECONDS - t_start)) s)."
