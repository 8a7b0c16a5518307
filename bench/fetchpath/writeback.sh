#!/bin/bash
# bench/fetchpath/writeback.sh LABEL "EXTRA_CONF": who writes the produced segment pages out of
# shared buffers.  A throwaway cluster (the harness's settings, 128 MB shared_buffers, plus
# EXTRA_CONF lines) gets 3 x 200,000 x 1 KiB records over the wire (kafka-producer-perf-test,
# acks=1, 6 partitions); after each, pg_stat_bgwriter since a reset: buffers_backend (pages a
# server process, here the listener, wrote itself to free a buffer), buffers_clean (the
# background writer), buffers_checkpoint, buffers_alloc, maxwritten_clean.  Asserts nothing.
#   bench/fetchpath/writeback.sh default ""
#   bench/fetchpath/writeback.sh tuned "$(printf 'bgwriter_delay = 10ms\nbgwriter_lru_maxpages = 1000\nbgwriter_lru_multiplier = 4.0')"
set -u
label=$1; extra=$2
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
K=$PWD/test/clients/kafka/kafka.sh
root=$(bash test/lib/pgcluster mktemp writeback); d=$root/data
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
KP_EXTRA_CONF="$extra" bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
psql_ "SELECT kafka.create_topic('bgw', 6)" >/dev/null
for rep in 1 2 3; do
  psql_ "SELECT pg_stat_reset_shared('bgwriter')" >/dev/null
  out=$("$K" cli kafka-producer-perf-test --topic bgw --num-records 200000 --record-size 1024 --throughput -1 \
     --producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false 2>&1 | grep -E "^200000 records sent")
  st=$(psql_ "SELECT buffers_backend, buffers_clean, buffers_checkpoint, buffers_alloc, maxwritten_clean FROM pg_stat_bgwriter")
  echo "$label rep $rep: $(sed -E 's/.* records sent, ([0-9.]+) records\/sec \(([0-9.]+) MB\/sec\).*/\1 rec\/s \2 MB\/s/' <<<"$out") | backend|clean|checkpoint|alloc|maxwritten_clean = $st"
done
bash test/lib/pgcluster stop "$d"
rm -rf "$root"
