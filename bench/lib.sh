# bench/lib.sh: what the benchmark scripts share (sourced, not run).

# median of the numeric values in $1 (space-separated); "fail"/"n/a" when none is numeric
median() {
	local nums
	nums=$(tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$' | sort -g)
	if [ -z "$nums" ]; then
		tr ' ' '\n' <<<"$1" | grep -v '^$' | head -1
		return
	fi
	awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }' <<<"$nums"
}

# "min-max" of the numeric values in $1
spread() {
	tr ' ' '\n' <<<"$1" | grep -E '^[0-9.]+$' | sort -g |
		awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%s-%s", lo, hi; else print "-" }'
}

# a number with one decimal, anything else as it is
fmt() { if [[ $1 =~ ^[0-9.]+$ ]]; then printf '%.1f' "$1"; else printf '%s' "$1"; fi; }

# bench_init NAME: after KPORT is set, the common start of a benchmark script that runs Apache
# Kafka beside kafka_pg: $repo, $K (test/clients/kafka/kafka.sh), the raw log
# bench/out/NAME-<time>.log in $LOG, a scratch folder $work (Kafka's state inside), say(), and a
# trap that stops Kafka and removes $work on exit.
bench_init() {
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	K=$repo/test/clients/kafka/kafka.sh
	mkdir -p "$repo/bench/out"
	LOG=$repo/bench/out/$1-$(date +%Y%m%d-%H%M%S).log
	work=$(mktemp -d)
	export KAFKA_STATE_DIR=$work/kafka
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}
say() { echo "$*" >&2; }
bench_cleanup() {
	"$K" stop "$KPORT" >/dev/null 2>&1 || true
	rm -rf "$work"
}

# Two kafka_pg builds side by side (bench/wire/produce_cpu_ab.sh, acks_all_ab.sh): a baseline and a
# candidate, the PostgreSQL installations $BASE_BINDIR and $NEW_BINDIR, each with its kafka_pg
# (e.g. made with `source /work/pgr-env.sh NAME; make install` from two trees).
# ab_pgc BINDIR ARGS...: test/lib/pgcluster ARGS with that installation
ab_pgc() { PG_BINDIR=$1 bash "$(dirname "${BASH_SOURCE[0]}")/../test/lib/pgcluster" "${@:2}"; }

# ab_clusters NAME FIRST_PORT FIRST_KAFKA_PORT EXTRA_CONF [HOOK]: a throwaway cluster per build,
# "base" and "new", in the scratch folder $work (stopped and removed on exit), each with the
# postgresql.conf lines EXTRA_CONF and a topic "ab" of 6 partitions, on the first free ports from
# FIRST_PORT (PostgreSQL) and FIRST_KAFKA_PORT (the listener).  HOOK BUILD, if given, runs once the
# build's server serves and before the topic is made (acks_all_ab.sh adds a standby there); it may
# raise ab_port, the last PostgreSQL port taken, for the next build to start above.  Sets
# pgport[BUILD], kport[BUILD] and bindirs[BUILD].
ab_clusters() {
	local name=$1 extra=$4 hook=${5:-} build bindir kp=$3
	: "${BASE_BINDIR:?the baseline PostgreSQL bin directory}" "${NEW_BINDIR:?the candidate PostgreSQL bin directory}"
	declare -gA pgport kport bindirs
	work=$(ab_pgc "$NEW_BINDIR" mktemp "$name") || exit 1
	trap ab_cleanup EXIT
	trap 'exit 130' INT TERM
	ab_port=$2
	for build in base new; do
		bindir=$BASE_BINDIR
		[ $build = new ] && bindir=$NEW_BINDIR
		ab_port=$(ab_pgc "$bindir" free-port "$ab_port")
		kp=$(ab_pgc "$bindir" free-port "$kp" "$ab_port")
		mkdir -p "$work/$build"
		chown postgres:postgres "$work/$build" 2>/dev/null || true
		KP_EXTRA_CONF="$extra" ab_pgc "$bindir" init "$work/$build/data" "$ab_port" "$kp" >/dev/null || exit 1
		ab_pgc "$bindir" start "$work/$build/data" || exit 1
		ab_pgc "$bindir" create-extension "$ab_port" postgres >/dev/null || exit 1
		pgport[$build]=$ab_port
		kport[$build]=$kp
		bindirs[$build]=$bindir
		[ -z "$hook" ] || "$hook" "$build" || exit 1
		"$bindir/psql" -X -q -h 127.0.0.1 -p "${pgport[$build]}" -U postgres -c "SELECT kafka.create_topic('ab', 6)" >/dev/null || exit 1
		ab_port=$((ab_port + 1))
		kp=$((kp + 1))
	done
}
ab_cleanup() {
	local d
	for d in "$work"/*/data "$work"/*/standby; do
		[ -d "$d" ] && ab_pgc "$NEW_BINDIR" stop "$d" immediate
	done
	rm -rf "$work"
}

# WireBench (bench/wire/WireBench.java) for a script that runs it directly, with the Kafka jars.
# wb_build DIR: fetch the jars (into $jars) and compile WireBench into DIR (into $wb_classes).
wb_build() {
	local root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	jars=$("$root/test/clients/kafka/fetch-kafka.sh") || { echo "cannot fetch the Kafka jars" >&2; return 1; }
	wb_classes=$1
	wb_log4j=$root/test/clients/kafka/log4j2-tools.properties
	javac -nowarn -cp "$jars/*" -d "$wb_classes" "$root/bench/wire/WireBench.java"
}
# wb [-Dprop=value...] COMMAND ARGS...: run WireBench (after wb_build), for at most WB_TIMEOUT
# seconds when that is set
wb() {
	local props=() limit=()
	while [[ ${1:-} == -D* ]]; do props+=("$1"); shift; done
	[ -z "${WB_TIMEOUT:-}" ] || limit=(timeout "$WB_TIMEOUT")
	"${limit[@]}" java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$wb_log4j" "${props[@]}" \
		-cp "$wb_classes:$jars/*" WireBench "$@"
}
