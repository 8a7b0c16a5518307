#!/usr/bin/env bash
# Exactly-once pipeline benchmark (issue 8): Apache Kafka 4.x (single-node KRaft on loopback,
# started and stopped by this script unless EOS_KAFKA_BOOTSTRAP names a running one) beside
# kafka_pg at $KP_BOOTSTRAP, with the same Java client and settings, one broker after the other,
# repetitions interleaved, after one warm-up run on each. Prints the median of each figure with
# the spread (min-max) and the ratio kafka_pg/Kafka; asserts nothing.
#
#   KP_BOOTSTRAP=127.0.0.1:19092 bench/eos/bench.sh
#
# The pipeline (EosBench.java): N records of S bytes in an input topic of P partitions; one
# consume-transform-produce loop (kafka-clients 4.4: read_committed consumer, transactional
# producer, one transaction per poll of at most M records with sendOffsetsToTransaction) copies
# them, value reversed, to an output topic. Figures: records/s through the pipeline, transactions/s,
# commitTransaction latency p50/p99; the output is counted read_committed (must be N).
#
# Settings: KP_BOOTSTRAP (127.0.0.1:9092), EOS_KAFKA_BOOTSTRAP (unset: start Kafka on
# BENCH_KAFKA_PORT, 39092), BENCH_REPS (3), EOS_RECORDS (100000), EOS_SIZE (100), EOS_PARTITIONS
# (6), EOS_MAX_POLL (500), EOS_WARMUP_RECORDS (20000). Raw output: bench/out/eos-<time>.log.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
K=$repo/test/clients/kafka/kafka.sh
KP_BOOTSTRAP=${KP_BOOTSTRAP:-127.0.0.1:9092}
REPS=${BENCH_REPS:-3}
N=${EOS_RECORDS:-100000}
S=${EOS_SIZE:-100}
P=${EOS_PARTITIONS:-6}
M=${EOS_MAX_POLL:-500}
W=${EOS_WARMUP_RECORDS:-20000}
KPORT=${BENCH_KAFKA_PORT:-39092}

mkdir -p "$repo/bench/out"
LOG=$repo/bench/out/eos-$(date +%Y%m%d-%H%M%S).log
work=$(mktemp -d)
export KAFKA_STATE_DIR=$work/kafka
say() { echo "$*" >&2; }
started=0
cleanup() {
	[ "$started" = 1 ] && "$K" stop "$KPORT" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

jars=$("$repo/test/clients/kafka/fetch-kafka.sh") || { say "bench: cannot fetch the Kafka jars"; exit 1; }
mkdir -p "$work/classes"
javac -nowarn -cp "$jars/*" -d "$work/classes" "$here/EosBench.java" 2>/dev/null || exit 1
eos() { # eos BOOTSTRAP RECORDS: prints EosBench's line
	timeout 900 java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-tools.properties" \
		-cp "$work/classes:$jars/*" EosBench "$1" "$2" "$S" "$P" "$M" 2>>"$LOG" | tee -a "$LOG" | grep '^eos '
}

if [ -n "${EOS_KAFKA_BOOTSTRAP:-}" ]; then
	KB=$EOS_KAFKA_BOOTSTRAP
else
	"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "bench: Kafka did not start (see $LOG)"; exit 1; }
	started=1
	KB=127.0.0.1:$KPORT
fi
kp=1
if ! (exec 3<>"/dev/tcp/${KP_BOOTSTRAP%:*}/${KP_BOOTSTRAP##*:}") 2>/dev/null; then
	say "kafka_pg: not available at $KP_BOOTSTRAP"
	kp=0
fi
say "eos bench: Kafka at $KB, kafka_pg at $KP_BOOTSTRAP; $N records of $S B, $P partitions, max.poll.records $M, $REPS reps (log $LOG)"
echo "== warm-up ($W records each)" >>"$LOG"
eos "$KB" "$W" >/dev/null
[ $kp = 1 ] && eos "$KP_BOOTSTRAP" "$W" >/dev/null
declare -a kr kt kc50 kc99 pr pt pc50 pc99
for ((i = 0; i < REPS; i++)); do
	echo "== rep $((i + 1)) Kafka" >>"$LOG"
	read -r _ _ r _ t _ _ c50 _ _ c99 _ _ o _ n <<<"$(eos "$KB" "$N")"
	say "rep $((i + 1)) Kafka:    $r records/s, $t txn/s, commit p50 $c50 ms p99 $c99 ms, output $o of $n"
	kr+=("$r") kt+=("$t") kc50+=("$c50") kc99+=("$c99")
	if [ $kp = 1 ]; then
		echo "== rep $((i + 1)) kafka_pg" >>"$LOG"
		read -r _ _ r _ t _ _ c50 _ _ c99 _ _ o _ n <<<"$(eos "$KP_BOOTSTRAP" "$N")"
		say "rep $((i + 1)) kafka_pg: $r records/s, $t txn/s, commit p50 $c50 ms p99 $c99 ms, output $o of $n"
		pr+=("$r") pt+=("$t") pc50+=("$c50") pc99+=("$c99")
	fi
done
stat() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s (%s-%s)", v[int((NR+1)/2)], v[1], v[NR]}'; }
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }'; }
echo
echo "| figure (median of $REPS, min-max) | Kafka | kafka_pg | ratio |"
echo "| --- | ---: | ---: | ---: |"
row() { # row NAME KAFKA-ARRAY-NAME KP-ARRAY-NAME
	local -n a=$2 b=$3
	if [ ${#b[@]} -gt 0 ]; then
		echo "| $1 | $(stat "${a[@]}") | $(stat "${b[@]}") | $(ratio "$(med "${a[@]}")" "$(med "${b[@]}")") |"
	else
		echo "| $1 | $(stat "${a[@]}") | n/a | |"
	fi
}
row "records/s" kr pr
row "transactions/s" kt pt
row "commit p50 ms" kc50 pc50
row "commit p99 ms" kc99 pc99
