#!/bin/bash
# bench/tuning/hostsample.sh [INTERVAL]: the host's CPU, memory reclaim and page-cache state every
# INTERVAL seconds (0.5), one line each until killed, for bench/tuning/e2e_host.py to line up with a
# WireBench e2e dump.  Fields: /proc/uptime's first figure (seconds on the dump's clock: Java's
# System.nanoTime is CLOCK_MONOTONIC, which equals the uptime on a machine that does not suspend);
# /proc/stat's cpu line (user nice system idle iowait irq softirq, in ticks, all CPUs); /proc/vmstat's
# pgscan_kswapd, pgscan_direct and allocstall_normal; /proc/meminfo's MemFree, Cached, Dirty and
# Writeback (kB).
#
#   bash bench/tuning/hostsample.sh > SAMPLES & BENCH_E2E_DUMP=DIR bash bench/wire/bench.sh; kill %1
while :; do
	u=$(cut -d' ' -f1 /proc/uptime)
	c=$(awk '/^cpu / { print $2, $3, $4, $5, $6, $7, $8 }' /proc/stat)
	v=$(awk '/^pgscan_kswapd / { a = $2 } /^pgscan_direct / { b = $2 } /^allocstall_normal / { d = $2 }
		END { print a + 0, b + 0, d + 0 }' /proc/vmstat)
	m=$(awk '/^MemFree:/ { a = $2 } /^Cached:/ { b = $2 } /^Dirty:/ { c = $2 } /^Writeback:/ { d = $2 }
		END { print a, b, c, d }' /proc/meminfo)
	echo "$u $c $v $m"
	sleep "${1:-0.5}"
done
