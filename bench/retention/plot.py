#!/usr/bin/env python3
"""bench/retention/plot.py CSV PNG: the disk-use curves of a retain_bench.py run as a PNG.

Needs matplotlib (from PyPI: python3 -m venv v && v/bin/pip install matplotlib).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, png = sys.argv[1], sys.argv[2]
    with open(src) as f:
        rows = list(csv.DictReader(f))
    t = [int(r["t_s"]) for r in rows]

    def mb(k):
        return [int(r[k]) / 1e6 for r in rows]

    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=100)
    ax.plot(t, mb("queue_db_bytes"), color="tab:red", label="queue table: database size")
    ax.plot(t, mb("queue_table_bytes"), color="tab:red", linestyle="--",
            label="queue table: table + index + TOAST")
    ax.plot(t, mb("kp_db_bytes"), color="tab:blue", label="kafka_pg: database size")
    ax.plot(t, mb("kp_segment_bytes"), color="tab:blue", linestyle="--", label="kafka_pg: segments")
    ax.plot(t, mb("kp_catalog_bytes"), color="tab:green", linestyle=":", label="kafka_pg: catalog tables")
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB")
    ax.set_title("1 KiB records at 1000/s, retention 60 s (kafka_pg retention.ms / DELETE + autovacuum)")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(png)


if __name__ == "__main__":
    main()
