#!/bin/bash
# bench/fetchpath/syscalls.sh BEFORE.so AFTER.so [ROUNDS]: the wire fetch path of two builds of
# kafka_pg.so, alternating on one cluster and one log (the PostgreSQL that pg_config names; its
# kafka_pg.so is overwritten, AFTER.so is left installed).  Produces 500,000 x 100 B and
# 200,000 x 1 KiB records (acks=1, 6 partitions), then per round and build: restart the server
# with that build, one unmeasured consume, then WireBench consume of each topic from the start
# while `perf stat` counts the listener processes' lseek calls, task-clock (ms) and page faults.
# Prints one line per consume; asserts nothing.  Needs root (perf, the library directory).
set -u
before_so=$(readlink -f "$1"); after_so=$(readlink -f "$2"); rounds=${3:-3}
cd "$(dirname "$0")/../.."
. test/lib/cluster.sh
. bench/lib.sh
K=$PWD/test/clients/kafka/kafka.sh
LIB=$(pg_config --pkglibdir)
jars=$(test/clients/kafka/fetch-kafka.sh) || exit 1
cls=$(mktemp -d); trap 'rm -rf "$cls"' EXIT
javac -nowarn -cp "$jars/*" -d $cls bench/wire/WireBench.java || exit 1
wb() { java -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile=$PWD/test/clients/kafka/log4j2-tools.properties -cp "$cls:$jars/*" WireBench "$@"; }
root=$(bash test/lib/pgcluster mktemp fetchpath); d=$root/data
port=$(bash test/lib/pgcluster free-port ${KP_TEST_PORT:-55432}); kport=$(bash test/lib/pgcluster free-port ${KAFKA_TEST_PORT:-19092} "$port")
bash test/lib/pgcluster init "$d" "$port" "$kport" || exit 1
use() { if [ "$1" = before ]; then install_so "$before_so" "$LIB/kafka_pg.so"; else install_so "$after_so" "$LIB/kafka_pg.so"; fi; }
use before
bash test/lib/pgcluster start "$d" || exit 1
bash test/lib/pgcluster create-extension $port postgres || exit 1
psql_() { "$PG_BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XAtq -c "$1"; }
sleep 3
wb create 127.0.0.1:$kport 6 c100 c1024 >/dev/null 2>&1
"$K" cli kafka-producer-perf-test --topic c100 --num-records 500000 --record-size 100 --throughput -1 \
   --producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false 2>&1 | grep "records sent" | tail -1
"$K" cli kafka-producer-perf-test --topic c1024 --num-records 200000 --record-size 1024 --throughput -1 \
   --producer-props bootstrap.servers=127.0.0.1:$kport acks=1 enable.idempotence=false 2>&1 | grep "records sent" | tail -1
psql_ "CHECKPOINT" >/dev/null
lcpu() { # summed utime+stime (ticks) of the listener processes
  local t=0 p
  for p in $(psql_ "SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'"); do
    t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat)))
  done
  echo $t
}
for r in $(seq 1 $rounds); do
  for b in before after; do
    bash test/lib/pgcluster stop "$d" >/dev/null; use $b; bash test/lib/pgcluster start "$d" >/dev/null; sleep 3
    wb consume 127.0.0.1:$kport c100 6 100000 120 >/dev/null 2>&1   # warm shared buffers' path a little
    for t in c100:500000 c1024:200000; do
      topic=${t%%:*}; n=${t##*:}
      pids=$(psql_ "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type LIKE 'kafka_pg listener%'")
      perf stat -x, -e syscalls:sys_enter_lseek,task-clock,page-faults -p $pids -o $cls/pstat &
      ps_pid=$!; sleep 0.5
      c0=$(lcpu); out=$(wb consume 127.0.0.1:$kport $topic 6 $n 300 2>&1 | grep "^consume"); c1=$(lcpu)
      kill -INT $ps_pid; wait $ps_pid 2>/dev/null
      st=$(grep -v '^#' $cls/pstat | grep -v '^$' | awk -F, '{printf "%s=%s ", $3, $1}')
      echo "round $r $b $topic listener_cpu_s=$(awk -v a=$c0 -v b=$c1 'BEGIN{printf "%.2f", (b-a)/100}') $st $out"
    done
  done
done
bash test/lib/pgcluster stop "$d"
install_so "$after_so" "$LIB/kafka_pg.so"
rm -rf "$root"
