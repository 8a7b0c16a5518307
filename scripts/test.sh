#!/bin/bash
# scripts/test.sh: install what the tests need, then run the whole suite
# (build, unit, protocol, fuzz replay, pg_regress, pgTAP, crash, standby, clients)
# against a throwaway cluster.  As root.  See test/run-tests for options.
set -eu
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
exec bash test/run-tests "$@"
