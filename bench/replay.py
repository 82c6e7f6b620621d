"""What ``buddy diff --replay`` costs next to ``buddy test`` on one side (issue 24, item 4).

    .venv/bin/python bench/replay.py [--rounds 5] [--json]

Builds, in a temporary directory, two copies of this repository's example buddies
(``manifests/`` and ``plugins/``, with the shipped persona templates copied into
``manifests/personas/`` as a project's own) and adds one line to the shared
``companion.md.j2`` on the new side, so the change touches every example buddy and the
replay runs all of their scenarios on both sides. Then, interleaved for ``--rounds``
rounds after one warm-up each, it times whole processes as a reviewer waits for them:

- ``buddy test NEW/manifests`` — the scenarios on one side;
- ``buddy diff OLD NEW`` — the compiled views alone;
- ``buddy diff OLD NEW --replay`` — the views, then the scenarios on both sides.

Prints the median wall seconds (min–max) of each and the replay's ratio to ``buddy
test``: the target is at most 2. Offline: the scenarios script their model. The machine
is shared (2 cores): run nothing else meanwhile and quote medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "framework" / "buddy" / "personas"
SHARED = "manifests/personas/companion.md.j2"
ADDED = "说话前先想想对方此刻的处境。\n"


def _side(into: Path) -> None:
    cache = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "manifests", into / "manifests", ignore=cache)
    shutil.copytree(PACK, into / "manifests" / "personas", ignore=cache, dirs_exist_ok=True)
    shutil.copytree(ROOT / "plugins", into / "plugins", ignore=cache)
    (into / "pyproject.toml").write_text("", encoding="utf-8")  # the project's root


def _build(folder: Path) -> None:
    for side in ("old", "new"):
        _side(folder / side)
    template = folder / "new" / SHARED
    template.write_text(template.read_text(encoding="utf-8") + ADDED, encoding="utf-8")


def _time(command: list[str], cwd: Path, expect: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    buddy = [sys.executable, "-m", "buddy"]
    commands = {
        "buddy test": ([*buddy, "test", "new/manifests"], 0),
        "buddy diff": ([*buddy, "diff", "old", "new", "--exit-code"], 1),
        "buddy diff --replay": ([*buddy, "diff", "old", "new", "--replay", "--exit-code"], 1),
    }
    with tempfile.TemporaryDirectory(prefix="buddy-bench-replay-") as temporary:
        folder = Path(temporary)
        _build(folder)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(args.rounds + 1):
            for name, (command, expect) in commands.items():
                seconds = _time(command, folder, expect)
                if round_:  # the first round warms the disk cache and .pyc files
                    times[name].append(seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["buddy diff --replay"] / medians["buddy test"]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if args.json:
        print(
            json.dumps(
                {
                    "bench": "replay",
                    "rounds": args.rounds,
                    "cores": cores,
                    "seconds": {
                        name: {"median": medians[name], "min": min(v), "max": max(v)}
                        for name, v in times.items()
                    },
                    "ratio": ratio,
                }
            )
        )
        return
    for name, values in times.items():
        print(f"{name:<20} {medians[name]:5.2f} s ({min(values):.2f}–{max(values):.2f})")
    print(f"replay / buddy test: {ratio:.2f}× (target ≤ 2×; {cores} cores, {args.rounds} rounds)")


if __name__ == "__main__":
    main()
