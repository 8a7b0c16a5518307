#!/bin/bash
# kafka_pg SQL benchmark: produce_batch / fetch / produce beside binary COPY,
# INSERT ... SELECT, a seq scan and a one-row INSERT, on a throwaway cluster
# (initdb in /tmp, its own port, stopped and removed at the end).
# Prints a Markdown report on stdout, progress on stderr.  Needs the extension
# installed (make && make install), psql/pgbench, /usr/bin/python3 with
# psycopg2 (Debian: python3-psycopg2); run as root (servers run as postgres)
# or as a user who can run initdb.  Knobs: see the top of bench/sql_bench.py.
#
#   bench/sql-bench.sh                 # ~12 minutes on 2 cores
#   BENCH_PARTS=profile bench/sql-bench.sh   # perf profile of produce_batch
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/sql_bench.py" "$@"
