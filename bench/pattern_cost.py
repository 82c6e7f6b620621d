"""What one hostile message costs the patterns: the median time, in ms, of the relations'
patterns (``from_patterns``) and of one lore scan on a 2,000-character message that makes
a backtracking pattern take exponential time — the bound of issue 22, item 5 (target:
under 50 ms). Without the bound each of these would not return.

Variants, each ``--runs`` times (default 50) after 3 warm-up runs:

- ``benign``: the six shipped relations on an ordinary message of 2,000 characters;
- ``one-hostile``: the shipped relations and one relation whose pattern backtracks
  (``(?:x+x+)+(?P<word>y)``: validate lets it through) on ``x`` × 2,000;
- ``eight-hostile``: eight such patterns in one relation — the message's budget, not the
  per-pattern bound, is what stops them;
- ``lore-hostile``: a lore scan of four such messages with a backtracking pattern among
  20 keyword entries.

Prints a table, or JSON lines with ``--json``. Stdlib and buddy only; offline.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "framework"))

import buddy  # noqa: E402
from buddy.capabilities.lore.compiled import Lore, LoreEntry  # noqa: E402
from buddy.capabilities.lore.scan import LoreState, scan  # noqa: E402
from buddy.capabilities.memory.compiled import AutoMemory  # noqa: E402
from buddy.capabilities.memory.extract import from_patterns  # noqa: E402
from buddy.capabilities.memory.patterns import BUDGET_MS, PATTERN_MS  # noqa: E402

WARMUP = 3
TARGET_MS = 50.0
SHIPPED = ["preference", "nickname", "debt", "allergy", "household", "training_goal"]
HOSTILE = r"(?:x+x+)+(?P<word>y)"
MESSAGE = "x" * 2000
BENIGN = ("我今天跑了五公里，晚上想吃点清淡的。" * 120)[:2000]
MANIFEST = "name: bench\nmodel: test\npersona:\n  prompt: 你好。\n"


def _spec(count: int) -> str:
    patterns = "".join(
        f"  - match: '{HOSTILE}{'z' * i}'\n    slots: {{ subject: user }}\n" for i in range(count)
    )
    return (
        "relation: hostile\nversion: 1\ntitle: hostile\nnote: bench.\nrisk: R0\n"
        "slots:\n  subject: { type: party, required: true }\n"
        "  word: { type: text, required: true, max_chars: 20 }\n"
        f"value: word\nkey: [subject]\npatterns:\n{patterns}"
    )


def _memory(root: Path, hostile: int) -> AutoMemory:
    where = root / f"h{hostile}"
    where.mkdir()
    relations = [*SHIPPED]
    if hostile:
        (where / "relations").mkdir()
        (where / "relations" / "hostile.yaml").write_text(_spec(hostile), "utf-8")
        relations.insert(0, "relations/hostile.yaml")
    manifest = MANIFEST + f"memory:\n  auto: true\n  relations: [{', '.join(relations)}]\n"
    (where / "buddy.yaml").write_text(manifest, "utf-8")
    memory: AutoMemory = buddy.load(where / "buddy.yaml").sections["memory"]
    return memory


def _lore() -> Lore:
    def entry(name: str, keys: tuple[str, ...], patterns: tuple[str, ...]) -> LoreEntry:
        return LoreEntry(
            book="bench",
            name=name,
            content=f"第{name}条设定。",
            keys=keys,
            patterns=patterns,
            also=(),
            case_sensitive=False,
            always=False,
            enabled=True,
            order=100,
            priority=0,
            sticky=None,
            cooldown=None,
            scan=4,
        )

    entries = [entry("hostile", (), (HOSTILE,))]
    entries += [entry(f"e{i}", (f"词{i}",), ()) for i in range(20)]
    return Lore(tuple(entries), ())


def _median_ms(call: Callable[[], object], runs: int) -> float:
    for _ in range(WARMUP):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.getLogger("buddy").setLevel(logging.ERROR)  # the once-per-pattern warnings
    with tempfile.TemporaryDirectory(prefix="buddy-pattern-bench-") as scratch:
        root = Path(scratch)
        (root / "pyproject.toml").write_text("")
        benign, one, eight = (_memory(root, n) for n in (0, 1, 8))
    lore = _lore()
    variants: dict[str, Callable[[], object]] = {
        "benign": lambda: from_patterns(benign, BENIGN),
        "one-hostile": lambda: from_patterns(one, MESSAGE),
        "eight-hostile": lambda: from_patterns(eight, MESSAGE),
        "lore-hostile": lambda: scan(lore, [MESSAGE] * 4, LoreState(), 2000),
    }
    rows = [
        {"variant": name, "runs": args.runs, "median_ms": _median_ms(call, args.runs)}
        for name, call in variants.items()
    ]
    for row in rows:
        row["under_target"] = row["median_ms"] < TARGET_MS
    if args.json:
        for row in rows:
            print(json.dumps({"bench": "pattern_cost", **row}))
        return
    print(f"budget {BUDGET_MS:g} ms a message, {PATTERN_MS:g} ms a pattern; target {TARGET_MS:g}")
    print(f"{'variant':<14} {'median ms':>10} {'< target':>9}")
    for row in rows:
        print(f"{row['variant']:<14} {row['median_ms']:10.2f} {row['under_target']!s:>9}")


if __name__ == "__main__":
    main()
