#!/usr/bin/env bash
# Compaction benchmarks (issue 9). A benchmark, not a test: prints numbers beside a baseline
# measured in the same run, medians of BENCH_REPS with the spread (min-max); asserts nothing, but
# says when a run did not compact (no size reduction, wrong key count).
#
#   bench/compaction/bench.sh                 # both parts, ~10 minutes on 2 cores
#   CB_PARTS=load CB_LOAD_DIRTY_RATIO=0.01 bench/compaction/bench.sh
#
# It runs as root (PostgreSQL as the postgres user) with the kafka_pg installed for the pg_config on
# PATH (`source /work/pgr-env.sh NAME && make install`), and starts everything itself: a throwaway
# PostgreSQL cluster with kafka_pg (first free port from BENCH_PG_PORT, 57620; the wire listener
# from BENCH_KP_KAFKA_PORT, 39620) and Apache Kafka 4.4 in KRaft on loopback (BENCH_KAFKA_PORT,
# 39092; test/clients/kafka/kafka.sh). Both stop and their data go at the end, also on error.
#
# Part "throughput": the log cleaner's throughput, kafka_pg beside Apache Kafka's log cleaner on
# the same data in the same run. Per repetition, a topic of 1 partition with segment.bytes
# CB_SEGMENT_BYTES (16 MiB) and cleanup.policy=delete (so nothing cleans it yet) is created on
# both brokers and filled by the same client (CompactBench.java fill, over the wire): CB_RECORDS
# (500000) records of CB_SIZE (1024) bytes with CB_KEYS (50000) keys, every key updated
# CB_RECORDS/CB_KEYS times in the same order. Then, Kafka first:
#   Kafka     kafka-configs sets cleanup.policy=compact and min.cleanable.dirty.ratio=0.01; the
#             broker runs with log.cleaner.backoff.ms=500, so its cleaner thread starts within
#             0.5 s; the figures are those it logs ("Log cleaner thread 0 cleaned log ...",
#             "X MB of log processed in Y seconds (Z MB/sec)", start and end size).
#   kafka_pg  CHECKPOINT; then one transaction sets the same two configs and runs
#             kafka.run_log_compaction(topic) (kafka.run_log_cleaner() on a server without it), so
#             the cleaner worker, which sees only committed configs, cannot start first; timed by
#             the client from BEGIN to the end of COMMIT, with the WAL it wrote. The bytes
#             processed are the partition's segments below the active one before (kafka.segments).
# Figures: MB/s = MB (2^20 bytes) of the cleanable log (every segment but the active one, as both
# cleaners leave that) over the seconds of the clean, for both; Kafka's own "MB of log processed"
# rate beside; the size before and after; kafka_pg's live keys after (kafka.table, must be
# CB_KEYS). Ratio kafka_pg/Kafka of the medians, and per repetition. Topics are deleted after
# each repetition.
#
# Part "load": produce throughput and latency to a compacted topic with the log cleaner running
# against the same with it idle, kafka_pg only. Per repetition and mode, a fresh topic of
# CB_LOAD_PARTITIONS (6) partitions with cleanup.policy=compact, segment.bytes
# CB_LOAD_SEGMENT_BYTES (4 MiB) and min.cleanable.dirty.ratio CB_LOAD_DIRTY_RATIO (0.5, Kafka's
# default; 0.01 makes the cleaner clean as soon as a segment rolls, the heaviest setting) takes
# CompactBench.java load
# over the wire, acks=all, records of CB_SIZE bytes with keys drawn among CB_KEYS: once as fast as
# the producer goes for CB_LOAD_SECONDS (15) -> records/s, once at CB_LOAD_RATE (2000) records/s
# for CB_LOAD_SECONDS -> p50/p99 latency. "Running": the log cleaner worker compacts
# (kafka.log_cleaner_threads = 1, kafka.log_cleaner_backoff_ms = 100, set by ALTER SYSTEM and a
# reload), so it cleans the topic over and over while the load writes it; "idle":
# kafka.log_cleaner_threads = 0. The script prints what the cleaner did to the topic meanwhile
# (kafka.log_cleaner_status) and the WAL written during the phase. Repetitions alternate the
# order (idle first, then running first). Ratio running/idle of the medians, and the median of
# the ratios of each repetition's adjacent pair (less sensitive to a machine whose load drifts).
#
# Settings: BENCH_REPS (3), CB_PARTS (throughput,load), the CB_* above, KP_PG_CONF (extra server
# settings). Raw log: bench/out/compaction-<time>.log.
set -uo pipefail

KPORT=${BENCH_KAFKA_PORT:-39092}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
bench_init compaction
. "$repo/test/lib/cluster.sh"

REPS=${BENCH_REPS:-3}
PARTS=${CB_PARTS:-throughput,load}
N=${CB_RECORDS:-500000}
KEYS=${CB_KEYS:-50000}
SIZE=${CB_SIZE:-1024}
SEG=${CB_SEGMENT_BYTES:-16777216}
LOAD_S=${CB_LOAD_SECONDS:-15}
LOAD_RATE=${CB_LOAD_RATE:-2000}
LOAD_PARTS=${CB_LOAD_PARTITIONS:-6}
LOAD_SEG=${CB_LOAD_SEGMENT_BYTES:-4194304}
LOAD_RATIO=${CB_LOAD_DIRTY_RATIO:-0.5}
want() { case ",$PARTS," in *",$1,"*) return 0 ;; esac; return 1; }

[ "$(id -u)" = 0 ] || { say "bench: run as root (the server runs as the postgres user)"; exit 2; }
kp_extension_installed || { say "bench: kafka_pg is not installed for $(pg_config --bindir)"; exit 2; }

# --- kafka_pg: a throwaway cluster -----------------------------------------------------------
pgroot=$(kp_mktemp compaction_bench) || exit 1
PGP=$(kp_free_port "${BENCH_PG_PORT:-57620}")
KPP=$(kp_free_port "${BENCH_KP_KAFKA_PORT:-39620}" "$PGP" "$KPORT" $((KPORT + 1)))
KP_BOOTSTRAP=127.0.0.1:$KPP
cb_cleanup() {
	kp_stop "$pgroot/data" fast
	cp "$pgroot/server-data.log" "$repo/bench/out/compaction-server.log" 2>/dev/null
	rm -rf "$pgroot"
	bench_cleanup
}
trap cb_cleanup EXIT
export KP_EXTRA_CONF="shared_buffers = 1GB
max_wal_size = 16GB
min_wal_size = 2GB
checkpoint_timeout = 1h
wal_buffers = 64MB
jit = off
${KP_PG_CONF:-}"
say "kafka_pg: cluster on port $PGP, listener $KP_BOOTSTRAP ($(pg_config --pkglibdir))"
{ kp_init "$pgroot/data" "$PGP" "$KPP" && kp_start "$pgroot/data" &&
	kp_set_kafka_port "$pgroot/data" "$PGP" "$KPP" && kp_create_extension "$PGP" postgres; } >>"$LOG" 2>&1 ||
	{ say "bench: the kafka_pg cluster did not start (see $LOG)"; exit 1; }
pq() { kp_psql "$PGP" postgres -At "$@"; }
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$KPP") 2>/dev/null && break; sleep 0.2; done

# --- Apache Kafka ----------------------------------------------------------------------------
jars=$("$repo/test/clients/kafka/fetch-kafka.sh") || { say "bench: cannot fetch the Kafka jars"; exit 1; }
mkdir -p "$work/classes"
javac -nowarn -cp "$jars/*" -d "$work/classes" "$here/CompactBench.java" 2>>"$LOG" || { say "bench: javac failed"; exit 1; }
cb() { timeout 1800 java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$repo/test/clients/kafka/log4j2-tools.properties" \
	-cp "$work/classes:$jars/*" CompactBench "$@" 2>>"$LOG" | tee -a "$LOG"; }
kcli() { "$K" cli "$@" >>"$LOG" 2>&1; }
KB=127.0.0.1:$KPORT
if want throughput; then
	export KAFKA_BROKER_PROPS="log.cleaner.backoff.ms=500
log.cleaner.threads=1"
	"$K" start "$KPORT" >>"$LOG" 2>&1 || { say "bench: Kafka did not start (see $LOG)"; exit 1; }
	KLOG=$KAFKA_STATE_DIR/$KPORT/server.log
fi

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
mstat() { echo "$(fmt "$(median "$*")") ($(spread "$*"))"; }
rstat() { echo "$(median "$*") ($(spread "$*"))"; } # ratios: two decimals as computed
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b != "") printf "%.2f", b / a; else print "n/a" }'; }
now() { date +%s.%N; }

# the cleanable bytes of a kafka_pg partition: its segments below the active one
kp_cleanable() {
	pq -c "SELECT coalesce(sum(size_bytes) FILTER (WHERE base_offset < (SELECT max(base_offset) FROM kafka.segments WHERE topic = '$1')), 0)
	         FROM kafka.segments WHERE topic = '$1'"
}
# One compaction pass of one topic if the server has kafka.run_log_compaction(topic), else the
# whole cleaner pass (kafka.run_log_cleaner(), retention and compaction of every topic).
if [ "$(pq -c "SELECT count(*) FROM pg_proc WHERE proname = 'run_log_compaction' AND pronamespace = 'kafka'::regnamespace")" != 0 ]; then
	CLEAN_SQL="SELECT * FROM kafka.run_log_compaction('@TOPIC@');"
else
	CLEAN_SQL="SELECT * FROM kafka.run_log_cleaner();"
fi
echo "kafka_pg clean: $CLEAN_SQL" >>"$LOG"
# timed: switch a kafka_pg topic to compact and clean it, in one transaction; prints seconds
kp_clean() {
	local t0 t1
	pq -c CHECKPOINT >/dev/null
	t0=$(now)
	pq >>"$LOG" 2>&1 <<SQL || { echo fail; return; }
BEGIN;
SELECT kafka.alter_topic_config('$1', '{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}');
${CLEAN_SQL//@TOPIC@/$1}
COMMIT;
SQL
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

# --- part 1: cleaner throughput --------------------------------------------------------------
if want throughput; then
	say "== cleaner throughput: $N records of $SIZE B, $KEYS keys, segment.bytes $SEG, $REPS reps (log $LOG)"
	declare -a k_rate k_own k_sec p_rate p_sec r_rate
	for ((r = 1; r <= REPS; r++)); do
		t=cb_thr_$r
		echo "== rep $r: $t" >>"$LOG"
		kcli kafka-topics --bootstrap-server "$KB" --create --topic "$t" --partitions 1 --replication-factor 1 \
			--config segment.bytes="$SEG" --config cleanup.policy=delete || { say "Kafka: cannot create $t"; exit 1; }
		pq -c "SELECT kafka.create_topic('$t', 1, '{\"segment.bytes\": \"$SEG\"}')" >>"$LOG" || exit 1
		read -r _ _ _ _ _ _ fk <<<"$(cb fill "$KB" "$t" "$N" "$KEYS" "$SIZE")"
		read -r _ _ _ _ _ _ fp <<<"$(cb fill "$KP_BOOTSTRAP" "$t" "$N" "$KEYS" "$SIZE")"
		say "rep $r fill (not timed here): Kafka $fk s, kafka_pg $fp s"

		# Kafka: switch on compaction, wait for its cleaner's report on this log
		from=$(wc -l <"$KLOG")
		kcli kafka-configs --bootstrap-server "$KB" --alter --entity-type topics --entity-name "$t" \
			--add-config cleanup.policy=compact,min.cleanable.dirty.ratio=0.01
		rep=""
		for _ in $(seq 1 1200); do
			rep=$(tail -n +"$((from + 1))" "$KLOG" | grep -A 9 "cleaned log $t-0 " || true)
			grep -q "size reduction" <<<"$rep" && break
			sleep 0.5
		done
		sleep 3
		rep=$(tail -n +"$((from + 1))" "$KLOG" | grep -A 9 "cleaned log $t-0 " || true)
		echo "$rep" >>"$LOG"
		# "\t1,234.5 MB of log processed in 5.6 seconds (220.4 MB/sec)." ("," groups thousands);
		# if the cleaner took the log in more than one pass, the passes add up
		# (its seconds are rounded to 0.1; the MB/sec it prints is from its elapsed milliseconds)
		read -r kmb ksec <<<"$(grep -o '[0-9][0-9,.]* MB of log processed in [0-9][0-9,.]* seconds ([0-9][0-9,.]* MB/sec)' <<<"$rep" |
			tr -d ',(' | awk '$9 > 0 { mb += $1; s += $1 / $9 } END { if (NR) printf "%.1f %.3f", mb, s }')"
		kown=$(div "$kmb" "$ksec")
		kstart=$(grep -o 'Start size: [0-9][0-9,.]* MB ([0-9,]* messages)' <<<"$rep" | head -1 | sed 's/Start size: //; s/messages/records/')
		kend=$(grep -o 'End size: [0-9][0-9,.]* MB ([0-9,]* messages)' <<<"$rep" | tail -1 | sed 's/End size: //; s/messages/records/')
		kpasses=$(grep -c "cleaned log $t-0 " <<<"$rep")
		kstart_mb=$(sed 's/ MB.*//; s/,//g' <<<"$kstart")
		if [ -z "$ksec" ]; then
			say "rep $r Kafka: no cleaner report for $t within 600 s"
			k_rate+=(fail) k_own+=(fail) k_sec+=(fail)
		else
			krate=$(div "$kstart_mb" "$ksec")
			say "rep $r Kafka:    cleaned $kstart -> $kend in $ksec s ($kpasses pass(es)): $krate MB/s of the cleanable log (its own report: $kmb MB processed, $kown MB/s)"
			k_rate+=("$krate") k_own+=("$kown") k_sec+=("$ksec")
		fi

		# kafka_pg: the same, timed around one transaction
		before=$(kp_cleanable "$t")
		size0=$(pq -c "SELECT size_bytes FROM kafka.partition_status WHERE topic = '$t'")
		lsn0=$(pq -c "SELECT pg_current_wal_lsn()")
		sec=$(kp_clean "$t")
		wal=$(pq -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0') / 1048576.0, 1)")
		size1=$(pq -c "SELECT size_bytes FROM kafka.partition_status WHERE topic = '$t'")
		live=$(pq -c "SET work_mem = '256MB'" -c "SELECT count(*) FROM kafka.table('$t')" 2>>"$LOG" || echo "?")
		if [ "$sec" = fail ]; then
			say "rep $r kafka_pg: the clean failed (see $LOG)"
			p_rate+=(fail) p_sec+=(fail)
		else
			prate=$(div "$(mib "$before")" "$sec")
			note=""
			[ "$size1" -lt "$size0" ] 2>/dev/null || note=" -- NOT COMPACTED (size did not shrink)"
			[ "$live" = "$KEYS" ] || note="$note -- live keys $live, expected $KEYS"
			say "rep $r kafka_pg: cleaned $(mib "$size0") MB (cleanable $(mib "$before")) -> $(mib "$size1") MB in $sec s: $prate MB/s; $wal MB of WAL; live keys $live$note"
			p_rate+=("$prate") p_sec+=("$sec")
			r_rate+=("$(ratio "${k_rate[-1]}" "$prate")")
		fi
		kcli kafka-topics --bootstrap-server "$KB" --delete --topic "$t"
		pq -c "SELECT kafka.delete_topic('$t')" >>"$LOG"
	done
	echo
	echo "Cleaner throughput: $N records of $SIZE B, $KEYS keys (10% unique), 1 partition, segment.bytes $SEG; median of $REPS (min-max)"
	echo
	echo "| figure | Kafka | kafka_pg | kafka_pg/Kafka |"
	echo "| --- | ---: | ---: | ---: |"
	echo "| cleaner MB/s (cleanable log / clean time) | $(mstat "${k_rate[*]}") | $(mstat "${p_rate[*]}") | $(ratio "$(median "${k_rate[*]}")" "$(median "${p_rate[*]}")") |"
	echo "| the same, per repetition (kafka_pg/Kafka of one repetition) | | | $(rstat "${r_rate[*]}") |"
	echo "| clean time, s | $(mstat "${k_sec[*]}") | $(mstat "${p_sec[*]}") | $(ratio "$(median "${k_sec[*]}")" "$(median "${p_sec[*]}")") |"
	echo "| Kafka's own rate (log-cleaner report), MB/s | $(mstat "${k_own[*]}") | | |"
	echo
	"$K" stop "$KPORT" >/dev/null 2>&1
fi

# --- part 2: produce with the cleaner running vs idle ----------------------------------------
if want load; then
	has_threads=$(pq -c "SELECT count(*) FROM pg_settings WHERE name = 'kafka.log_cleaner_threads'")
	[ "$has_threads" = 1 ] || { say "bench: this kafka_pg has no kafka.log_cleaner_threads (no compaction): no load part"; exit 1; }
	cleaner() { # cleaner 0|1: compaction off/on, a pass every 100 ms while on
		pq -c "ALTER SYSTEM SET kafka.log_cleaner_threads = $1" -c "ALTER SYSTEM SET kafka.log_cleaner_backoff_ms = 100" \
			-c "SELECT pg_reload_conf()" >/dev/null
		sleep 1
	}
	say "== produce to a compacted topic, the log cleaner running vs idle: $LOAD_S s as fast as it goes, then $LOAD_S s at $LOAD_RATE/s; $SIZE B records, $KEYS keys, acks=all, $LOAD_PARTS partitions, segment.bytes $LOAD_SEG, min.cleanable.dirty.ratio $LOAD_RATIO"
	cfg="{\"cleanup.policy\": \"compact\", \"segment.bytes\": \"$LOAD_SEG\", \"min.cleanable.dirty.ratio\": \"$LOAD_RATIO\"}"
	# a warm-up of the load path (client JIT, listener)
	pq -c "SELECT kafka.create_topic('cb_warm', $LOAD_PARTS, '$cfg')" >>"$LOG" || exit 1
	cleaner 0
	cb load "$KP_BOOTSTRAP" cb_warm 5 0 "$SIZE" "$KEYS" >/dev/null
	pq -c "SELECT kafka.delete_topic('cb_warm')" >>"$LOG"
	declare -a i_tp i_p50 i_p99 b_tp b_p50 b_p99 r_tp r_p50 r_p99
	phase() { # phase idle|busy REP: appends to the arrays
		local mode=$1 r=$2 t=cb_load_$1_$2 tp p50 p99 line st lsn
		pq -c "SELECT kafka.create_topic('$t', $LOAD_PARTS, '$cfg')" >>"$LOG" || exit 1
		if [ "$mode" = busy ]; then cleaner 1; else cleaner 0; fi
		pq -c CHECKPOINT >/dev/null
		lsn=$(pq -c "SELECT pg_current_wal_lsn()")
		line=$(cb load "$KP_BOOTSTRAP" "$t" "$LOAD_S" 0 "$SIZE" "$KEYS")
		read -r _ _ _ _ _ _ tp _ <<<"$line"
		line=$(cb load "$KP_BOOTSTRAP" "$t" "$LOAD_S" "$LOAD_RATE" "$SIZE" "$KEYS")
		read -r _ _ _ _ _ _ _ _ _ _ p50 _ _ p99 _ <<<"$line"
		# what the cleaner did to the topic meanwhile
		st=$(pq -c "SELECT coalesce(sum(compactions), 0) || ' cleans, ' ||
		                   round(coalesce(sum(compaction_bytes_reclaimed), 0) / 1048576.0, 1) || ' MB reclaimed, log ' ||
		                   round(sum(size_bytes) / 1048576.0, 1) || ' MB log now, ' ||
		                   round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn') / 1048576.0) || ' MB WAL written'
		              FROM kafka.log_cleaner_status WHERE topic = '$t'" 2>>"$LOG")
		cleaner 0
		if [ "$mode" = busy ]; then
			say "rep $r cleaner running: $tp records/s max, at $LOAD_RATE/s p50 $p50 ms p99 $p99 ms; cleaner: $st"
			b_tp+=("$tp") b_p50+=("$p50") b_p99+=("$p99")
		else
			say "rep $r cleaner idle:    $tp records/s max, at $LOAD_RATE/s p50 $p50 ms p99 $p99 ms; cleaner: $st"
			i_tp+=("$tp") i_p50+=("$p50") i_p99+=("$p99")
		fi
		pq -c "SELECT kafka.delete_topic('$t')" >>"$LOG"
	}
	for ((r = 1; r <= REPS; r++)); do
		if ((r % 2)); then phase idle "$r"; phase busy "$r"; else phase busy "$r"; phase idle "$r"; fi
		r_tp+=("$(ratio "${i_tp[-1]}" "${b_tp[-1]}")") r_p50+=("$(ratio "${i_p50[-1]}" "${b_p50[-1]}")")
		r_p99+=("$(ratio "${i_p99[-1]}" "${b_p99[-1]}")")
	done
	echo
	echo "Produce to a compacted topic with the log cleaner running vs idle (kafka_pg, wire, acks=all, $SIZE B records, $KEYS keys, $LOAD_PARTS partitions, segment.bytes $LOAD_SEG, min.cleanable.dirty.ratio $LOAD_RATIO); median of $REPS (min-max)"
	echo
	echo "| figure | cleaner idle | cleaner running | running/idle of the medians | running/idle per repetition |"
	echo "| --- | ---: | ---: | ---: | ---: |"
	echo "| produce records/s (as fast as it goes, $LOAD_S s) | $(mstat "${i_tp[*]}") | $(mstat "${b_tp[*]}") | $(ratio "$(median "${i_tp[*]}")" "$(median "${b_tp[*]}")") | $(rstat "${r_tp[*]}") |"
	echo "| latency p50 ms at $LOAD_RATE records/s | $(mstat "${i_p50[*]}") | $(mstat "${b_p50[*]}") | $(ratio "$(median "${i_p50[*]}")" "$(median "${b_p50[*]}")") | $(rstat "${r_p50[*]}") |"
	echo "| latency p99 ms at $LOAD_RATE records/s | $(mstat "${i_p99[*]}") | $(mstat "${b_p99[*]}") | $(ratio "$(median "${i_p99[*]}")" "$(median "${b_p99[*]}")") | $(rstat "${r_p99[*]}") |"
fi
