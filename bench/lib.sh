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
