#!/bin/bash
# bench/tuning/settings.sh: what scripts/broker-tuning.sh's settings change for a producing broker.
# One throwaway cluster (the harness's settings, test/lib/cluster.sh) is restarted with each
# configuration in turn, repetitions interleaved; per run: a new topic of 6 partitions, an
# unmeasured produce of BENCH_WARMUP_RECORDS (so shared buffers are full of dirty pages, as on a
# broker that has been up a while), statistics reset, then BENCH_RECORDS records of 1 KiB over the
# wire (kafka-producer-perf-test, acks=1), then pg_stat_bgwriter and pg_stat_wal since the reset:
# backend = pages a server process (the listener) wrote itself to free a buffer, clean = the
# background writer's, ckpt = the checkpointer's; ckpts = checkpoints requested (WAL volume) +
# timed; wal_MB, fpi = full-page images, wal_full = WAL writes because wal_buffers was full.
# Prints every run, then the medians (spread) per configuration and the ratio of each to
# "default".  Asserts nothing.  As root.
#
#   bench/tuning/settings.sh            # ~15 minutes on the 2-core machine
#
# Configurations: default (PostgreSQL's), bgwriter (+ the background writer settings),
# bgwriter+sb (+ shared_buffers), tuned (everything scripts/broker-tuning.sh prints).
#
# Settings: BENCH_REPS (3), BENCH_RECORDS (1000000), BENCH_WARMUP_RECORDS (300000),
# BENCH_SHARED_BUFFERS (1GB: shared_buffers of the tuned configurations, smaller than
# broker-tuning.sh's quarter of memory so that the warm-up fills it), BENCH_CONFIGS (the names
# below, in order).
set -u
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
. scripts/broker-tuning.sh
K=$PWD/test/clients/kafka/kafka.sh
REPS=${BENCH_REPS:-3}
N=${BENCH_RECORDS:-1000000}
W=${BENCH_WARMUP_RECORDS:-300000}
export KP_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-1GB}
CONFIGS=${BENCH_CONFIGS:-"default bgwriter bgwriter+sb tuned"}

tuned=$(kp_broker_tuning)
conf_of() { # the extra configuration lines of a configuration
	case $1 in
	default) echo "" ;;
	bgwriter) grep -E '^bgwriter_' <<<"$tuned" ;;
	bgwriter+sb) grep -E '^(bgwriter_|shared_buffers)' <<<"$tuned" ;;
	tuned) echo "$tuned" ;;
	*) echo "unknown configuration $1" >&2; exit 2 ;;
	esac
}

root=$(bash test/lib/pgcluster mktemp tuning); d=$root/data
trap 'bash test/lib/pgcluster stop "$d" immediate >/dev/null 2>&1; rm -rf "$root"' EXIT
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
perf_test() { # TOPIC RECORDS: kafka-producer-perf-test's records/s
	"$K" cli kafka-producer-perf-test --topic "$1" --num-records "$2" --record-size 1024 --throughput -1 \
		--producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false 2>&1 |
		sed -nE "s/^$2 records sent, ([0-9.]+) records\/sec.*/\1/p" | tail -1
}
declare -A v
figures="rec_s backend clean ckpt ckpts wal_MB fpi wal_full"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $N records of 1 KiB per run after $W unmeasured"
for rep in $(seq 1 "$REPS"); do
	for cfg in $CONFIGS; do
		KP_EXTRA_CONF="$(conf_of "$cfg")" bash test/lib/pgcluster write-conf "$d" "$port" "$kport" "$root" || exit 1
		bash test/lib/pgcluster stop "$d" >/dev/null; bash test/lib/pgcluster start "$d" >/dev/null || exit 1
		sleep 2
		t=t$rep${cfg//[^a-z]/}
		psql_ "SELECT kafka.create_topic('$t', 6)" >/dev/null
		[ "$W" -gt 0 ] && perf_test "$t" "$W" >/dev/null
		psql_ "SELECT pg_stat_reset_shared('bgwriter'), pg_stat_reset_shared('wal')" >/dev/null
		rs=$(perf_test "$t" "$N")
		st=$(psql_ "SELECT b.buffers_backend, b.buffers_clean, b.buffers_checkpoint,
		                   b.checkpoints_req || '+' || b.checkpoints_timed,
		                   round(w.wal_bytes / 1048576.0), w.wal_fpi, w.wal_buffers_full
		            FROM pg_stat_bgwriter b, pg_stat_wal w")
		IFS='|' read -r backend clean ckpt ckpts walmb fpi walfull <<<"$st"
		for f in $figures; do
			case $f in rec_s) x=${rs:-fail} ;; backend) x=$backend ;; clean) x=$clean ;; ckpt) x=$ckpt ;;
				ckpts) x=$ckpts ;; wal_MB) x=$walmb ;; fpi) x=$fpi ;; wal_full) x=$walfull ;; esac
			v[$cfg,$f]+="$x "
		done
		echo "rep $rep $cfg: rec/s=${rs:-fail} backend=$backend clean=$clean ckpt=$ckpt ckpts(req+timed)=$ckpts wal_MB=$walmb fpi=$fpi wal_full=$walfull load=$(cut -d' ' -f1 /proc/loadavg)"
		psql_ "SELECT kafka.delete_topic('$t')" >/dev/null
		psql_ "CHECKPOINT" >/dev/null
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Configurations (each adds to the one before; shared_buffers $KP_SHARED_BUFFERS where set):"
for cfg in $CONFIGS; do echo "- $cfg: $(conf_of "$cfg" | grep -v '^#' | tr '\n' ';' | sed 's/;$//')"; done
echo
printf '| configuration |'; for f in $figures; do printf ' %s |' "$f"; done; echo
printf '|---|'; for f in $figures; do printf -- '---:|'; done; echo
for cfg in $CONFIGS; do
	printf '| %s |' "$cfg"
	for f in $figures; do
		if [ $f = ckpts ]; then printf ' %s |' "$(echo ${v[$cfg,$f]})"; continue; fi
		printf ' %s (%s) |' "$(median "${v[$cfg,$f]}")" "$(spread "${v[$cfg,$f]}")"
	done
	echo
done
echo
base=$(median "${v[default,rec_s]:-}")
for cfg in $CONFIGS; do
	m=$(median "${v[$cfg,rec_s]}")
	echo "$cfg: produce rate / default's = $(awk -v a="$m" -v b="$base" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
done
