"""What the companion layer adds to a turn: the turn's latency (p50, p99: ``Agent.run``,
which returns once the message's facts are stored), the reply's (until the loop's end,
the reply made: what a user waits for when the model's call covers the save), and the
per-turn overhead with automatic memory on, next to the same buddy without it, and the
extractor calls per user message.

Turns run through the public API, ``buddy.Agent(...).run(text)``, on the in-process dev
platform (the layer's memory is the platform's, so every turn with the layer reads and
writes it for real). The buddy's model and the extractor are scripted and answer at once:
every figure is the framework's own cost, no model time. One conversation per variant,
``--turns`` turns (default 300) after 20 warm-up turns, the variants interleaved rep by
rep (``--reps``, default 3); medians.

Variants (the workload buddy of ``bench/workload`` with one section more each):

- ``off``: no layer — the baseline;
- ``patterns``: ``memory: {auto: true, relations: [nickname, household]}``, every message
  one the relations' patterns take (no extractor call);
- ``extractor``: the same relations, messages no pattern takes: one extractor call each,
  its answer a fact;
- ``companion``: memory, a character (messages neither the relations' nor the appraisal's
  patterns take: the extractor once each) and a lore book of 20 entries scanned every
  turn.

Besides the times: extractor calls per user message, platform calls per turn, and of
them the reads of the conversation's memory (``GET /internal/v1/memory``) and the writes
(``PUT``/``DELETE /internal/v1/memory/{key}``, ``POST /internal/v1/memory``: a batch).

Prints a table, or JSON lines with ``--json`` (each row with every rep's p50 and p99 in
``runs``). Stdlib and buddy only; offline. ``BUDDY_FRAMEWORK=DIR`` measures the buddy
package under ``DIR`` instead of this tree's ``framework/`` (the commit before, for an A/B
run: alternate the two processes, and compare medians and minima).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("BUDDY_FRAMEWORK") or str(ROOT / "framework"))

import buddy  # noqa: E402
from buddy.models.base import Model, ModelRequest, ModelResponse, Usage  # noqa: E402

WARMUP = 20
SECTIONS = {
    "off": "",
    "patterns": "memory:\n  auto: true\n  relations: [nickname, household]\n",
    "extractor": "memory:\n  auto: true\n  relations: [nickname, household]\n",
    "companion": (
        "memory:\n  auto: true\n  relations: [nickname, household, preference]\n"
        "character: traits/bench.yaml\nlore: lore\n"
    ),
}
TRAITS = "name: bench\nanger_sensitivity: 1.2\nanger_half_life_days: 1\n"
BOOK = "entries:\n" + "".join(
    f"  - {{ name: e{i}, keys: [词{i}], content: 第{i}条设定，{'长' * 40} }}\n" for i in range(20)
)


class Instant(Model):
    """Answers at once with a fixed text."""

    name = "test:instant"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return ModelResponse(text=self.text, usage=Usage(10, 5), model=self.name)


def _project(root: Path, variant: str) -> Path:
    where = root / variant
    shutil.copytree(ROOT / "bench" / "workload", where)
    manifest = where / "buddy.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + SECTIONS[variant], "utf-8")
    (where / "traits").mkdir()
    (where / "traits" / "bench.yaml").write_text(TRAITS, "utf-8")
    (where / "lore").mkdir()
    (where / "lore" / "book.yaml").write_text(BOOK, "utf-8")
    return where


def _message(variant: str, i: int) -> str:
    if variant == "patterns":
        return f"叫我小鱼{i % 10}" if i % 2 else f"我们家{i % 9 + 1}口人"
    return f"今天聊聊词{i % 20}，随便说说第{i}件事"


def _answer(variant: str) -> str:
    fact = {"relation": "nickname", "slots": {"subject": "user", "value": "阿明"}}
    body: dict[str, Any] = {"facts": [fact]}
    if variant == "companion":
        body["appraisal"] = {"offence": 0.1, "apology": 0, "care": 0.2, "explained": False}
    return json.dumps(body, ensure_ascii=False)


async def _run(path: Path, variant: str, turns: int) -> dict[str, Any]:
    blueprint = buddy.load(path)
    extractor = Instant(_answer(variant))
    agent = buddy.Agent(blueprint, Instant("好。"), layer_model=extractor)
    requests = {"all": 0, "reads": 0, "writes": 0}
    inner = agent.client.request

    async def counted(method: str, path: str, **kwargs: Any) -> Any:
        requests["all"] += 1
        if (method, path) == ("GET", "memory"):
            requests["reads"] += 1
        elif path == "memory" or path.startswith("memory/"):
            requests["writes"] += 1
        return await inner(method, path, **kwargs)

    agent.client.request = counted  # type: ignore[method-assign]
    for i in range(WARMUP):
        await agent.run(_message(variant, i))
    await agent.settled()
    layer = agent.layers[0] if agent.layers else None
    calls_before = extractor.calls
    requests_before = dict(requests)
    messages_before = getattr(layer, "messages", 0)
    gc.collect()
    seconds: list[float] = []
    replied: list[float] = []  # until the reply exists (the loop's end), before the save
    t0 = 0.0

    def on_event(event: Any) -> None:
        if event.type == "agent_end":
            replied.append(time.perf_counter() - t0)

    started = time.perf_counter()
    for i in range(turns):
        t0 = time.perf_counter()
        await agent.run(_message(variant, WARMUP + i), on_event=on_event)
        seconds.append(time.perf_counter() - t0)
    await agent.settled()
    wall = time.perf_counter() - started
    messages = getattr(layer, "messages", 0) - messages_before
    await agent.close()
    seconds.sort()
    replied.sort()
    return {
        "variant": variant,
        "turns": turns,
        "p50_ms": 1000 * statistics.median(seconds),
        "p99_ms": 1000 * seconds[min(len(seconds) - 1, int(0.99 * len(seconds)))],
        "reply_p50_ms": 1000 * statistics.median(replied),
        "reply_p99_ms": 1000 * replied[min(len(replied) - 1, int(0.99 * len(replied)))],
        "per_turn_us": 1e6 * wall / turns,
        "extractor_calls_per_message": (extractor.calls - calls_before) / messages
        if messages
        else 0.0,
        "platform_calls_per_turn": (requests["all"] - requests_before["all"]) / turns,
        "memory_reads_per_turn": (requests["reads"] - requests_before["reads"]) / turns,
        "memory_writes_per_turn": (requests["writes"] - requests_before["writes"]) / turns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in SECTIONS}
    with tempfile.TemporaryDirectory(prefix="buddy-companion-bench-") as scratch:
        root = Path(scratch)
        (root / "pyproject.toml").write_text("")
        paths = {v: _project(root, v) for v in SECTIONS}
        for _ in range(args.reps):
            for variant, path in paths.items():
                results[variant].append(asyncio.run(_run(path, variant, args.turns)))
    rows = []
    for variant, runs in results.items():
        row = {"variant": variant, "reps": len(runs), "turns": args.turns}
        for key in (
            "p50_ms",
            "p99_ms",
            "reply_p50_ms",
            "reply_p99_ms",
            "per_turn_us",
            "extractor_calls_per_message",
            "platform_calls_per_turn",
            "memory_reads_per_turn",
            "memory_writes_per_turn",
        ):
            row[key] = statistics.median(r[key] for r in runs)
        row["runs"] = [[round(r["p50_ms"], 4), round(r["p99_ms"], 4)] for r in runs]
        rows.append(row)
    base = rows[0]
    for row in rows:
        row["added_p50_ms"] = row["p50_ms"] - base["p50_ms"]
        row["added_p99_ms"] = row["p99_ms"] - base["p99_ms"]
        row["added_reply_p50_ms"] = row["reply_p50_ms"] - base["reply_p50_ms"]
        row["added_reply_p99_ms"] = row["reply_p99_ms"] - base["reply_p99_ms"]
        row["added_per_turn_us"] = row["per_turn_us"] - base["per_turn_us"]
    if args.json:
        for row in rows:
            print(json.dumps({"bench": "companion", **row}))
        return
    print(
        f"{'variant':<10} {'p50 ms':>8} {'+p50 ms':>8} {'p99 ms':>8} {'+p99 ms':>8} "
        f"{'µs/turn':>9} {'+µs/turn':>9} {'calls/msg':>9} {'platform/turn':>13} "
        f"{'reads':>6} {'writes':>6} {'+reply p50':>10} {'+reply p99':>10}"
    )
    for row in rows:
        print(
            f"{row['variant']:<10} {row['p50_ms']:8.2f} {row['added_p50_ms']:8.2f} "
            f"{row['p99_ms']:8.2f} {row['added_p99_ms']:8.2f} {row['per_turn_us']:9.0f} "
            f"{row['added_per_turn_us']:9.0f} {row['extractor_calls_per_message']:9.2f} "
            f"{row['platform_calls_per_turn']:13.2f} {row['memory_reads_per_turn']:6.2f} "
            f"{row['memory_writes_per_turn']:6.2f} {row['added_reply_p50_ms']:10.2f} "
            f"{row['added_reply_p99_ms']:10.2f}"
        )


if __name__ == "__main__":
    main()
