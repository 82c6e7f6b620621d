"""What one scenario of ``buddy test`` costs: the examples' scenarios run in one process
(imports and the first compile outside the timed part), the dev platform in this process
(``buddy test``'s default) and over loopback sockets (``--sockets``).

    .venv/bin/python bench/buddy_test.py [--rounds 3] [--json]

Prints milliseconds per scenario for each way, median of the rounds (each round runs
every scenario of the files once). Offline: the scenarios script their model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "framework"))

import buddy  # noqa: E402
from buddy.testing.scenarios import read_suite, run_scenario  # noqa: E402

FILES = [
    ROOT / "manifests" / "xiaoman" / "tests" / "companion.yaml",
    ROOT / "manifests" / "aunt-tu" / "tests" / "memory.yaml",
]


async def _round(sockets: bool) -> tuple[float, int]:
    count = 0
    started = time.perf_counter()
    for file in FILES:
        blueprint = buddy.load(file.parent.parent)
        suite = read_suite(file, blueprint)
        for index in range(len(suite.scenarios)):
            result = await run_scenario(blueprint, suite, index, sockets=sockets)
            if not result.passed:
                raise SystemExit(f"{file}: {result.name} failed: {result.failures}")
            count += 1
    return time.perf_counter() - started, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for sockets in (False, True):
        asyncio.run(_round(sockets))  # warm-up: compiles, first imports
        per = []
        for _ in range(args.rounds):
            seconds, count = asyncio.run(_round(sockets))
            per.append(1000 * seconds / count)
        rows.append(
            {
                "bench": "buddy-test",
                "platform": "sockets" if sockets else "in-process",
                "scenarios": count,
                "ms_per_scenario": statistics.median(per),
                "min": min(per),
                "max": max(per),
            }
        )
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            print(
                f"{row['platform']:<11} {row['ms_per_scenario']:6.0f} ms/scenario "
                f"({row['min']:.0f}–{row['max']:.0f}, {row['scenarios']} scenarios)"
            )


if __name__ == "__main__":
    main()
