#!/bin/bash
# scripts/broker-tuning.sh: the PostgreSQL settings for a kafka_pg broker, as configuration lines on
# stdout.  scripts/setup.sh writes them into the cluster's kafka_pg.conf; bench/tuning/settings.sh
# measures them.  docs/performance.md ("Tuning the cluster for a broker") gives the measured reason
# for each.  Sourced (kp_broker_tuning) or run.
#
#   KP_SHARED_BUFFERS   shared_buffers (default: a quarter of the machine's memory, 128MB to 8GB)
#   KP_MAX_WAL_SIZE     max_wal_size (default 8GB: check that the WAL's disk has room for it)

kp_broker_tuning() {
	local mem_mb sb
	mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo 2>/dev/null)
	sb=$(((${mem_mb:-512} / 4)))
	[ "$sb" -lt 128 ] && sb=128
	[ "$sb" -gt 8192 ] && sb=8192
	cat <<CONF
# kafka_pg broker tuning (scripts/broker-tuning.sh; docs/performance.md says why)
shared_buffers = ${KP_SHARED_BUFFERS:-${sb}MB}
wal_buffers = 16MB
bgwriter_delay = 10ms
bgwriter_lru_maxpages = 1000
bgwriter_lru_multiplier = 4.0
max_wal_size = ${KP_MAX_WAL_SIZE:-8GB}
checkpoint_timeout = 15min
wal_init_zero = off
max_worker_processes = 16
CONF
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	kp_broker_tuning
fi
