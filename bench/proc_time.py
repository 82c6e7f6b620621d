"""Whole-process timer (stdlib only): W1's primary figure, as bench/WORKLOAD.md defines it.

Runs a command R times after W warm-ups and prints one JSON line with the median/min/max
wall seconds and the median peak RSS (``ru_maxrss`` of the child, from ``os.wait4``).

usage: python bench/proc_time.py [-n RUNS] [--warmup W] [--label PEER:WORKLOAD:VARIANT] -- CMD ARG...
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    argv = sys.argv[1:]
    runs, warmup, label = 5, 1, None
    while argv and argv[0] != "--":
        opt = argv.pop(0)
        if opt == "-n":
            runs = int(argv.pop(0))
        elif opt == "--warmup":
            warmup = int(argv.pop(0))
        elif opt == "--label":
            label = argv.pop(0)
        else:
            raise SystemExit(f"unknown option {opt}")
    cmd = argv[1:]
    walls: list[float] = []
    rss: list[float] = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"command failed ({status}): {cmd}")
        if i >= warmup:
            walls.append(wall)
            rss.append(ru.ru_maxrss / 1024.0)
    peer, workload, variant = (label or "?:?:?").split(":")
    record = {
        "peer": peer,
        "workload": workload,
        "variant": variant,
        "n": runs,
        "wall_s": round(statistics.median(walls), 4),
        "wall_min_s": round(min(walls), 4),
        "wall_max_s": round(max(walls), 4),
        "peak_rss_mb": round(statistics.median(rss), 1),
        "method": "whole-process, median of n after warm-up",
    }
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
