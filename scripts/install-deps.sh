#!/bin/bash
# scripts/install-deps.sh: install the Debian 12 packages kafka_pg needs to be
# built, run and tested.  Run as root.  Installs only what is missing, so a
# second run costs a few dpkg queries; KP_FORCE_APT=1 always runs apt-get.
set -euo pipefail

PACKAGES=(
	# server and build
	postgresql-15 postgresql-server-dev-15 postgresql-client-15
	build-essential clang make
	# the fuzz parts link -fsanitize=address,fuzzer: clang's runtimes are a separate package
	libclang-rt-14-dev
	# tools/pgindent (make format, and the suite's format check)
	pg-bsd-indent
	libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev libssl-dev
	# tests
	postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl
	python3 python3-psycopg2
	# the client tests' virtualenvs (test/clients/python, test/clients/share: confluent-kafka's ShareConsumer)
	python3-venv
	# the wire part checks records between librdkafka and SQL
	python3-confluent-kafka
	# the codec unit test checks batches both ways against kafka-python
	python3-kafka python3-lz4 python3-snappy python3-zstandard
	procps util-linux coreutils
	# the benchmarks' profiles and counts (bench/profile, bench/fetchpath/syscalls.sh)
	linux-perf
	# test/crash/fault_loop.py cuts client connections with ss -K
	iproute2
	# test/ha (scripts/ha-cluster.sh): a three-node cluster under Patroni, with etcd as its store
	patroni etcd-server etcd-client
	# Patroni's etcd client library (a dependency of patroni, named so a fresh machine is checked for it)
	python3-etcd
	# bench/share/queue.sh compares the SQL queue with PgQ
	postgresql-15-pgq3
)

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ] && [ "${KP_FORCE_APT:-0}" != 1 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages already installed"
	exit 0
fi

echo "install-deps: installing ${missing[*]:-${PACKAGES[*]}}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
# etcd-server's package starts a system etcd on the default ports where systemd runs; the project
# starts its own (scripts/ha-cluster.sh), so that one is stopped and disabled
if command -v systemctl >/dev/null && systemctl is-enabled etcd >/dev/null 2>&1; then
	systemctl disable --now etcd >/dev/null 2>&1 || true
fi
