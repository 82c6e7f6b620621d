"""Stdlib-only harness of the W1/W2/W3 scripts, buddy's and the peers' (``bench/peers/``).

Timing, checks and JSON lines as ``bench/WORKLOAD.md`` defines them; both sides print their
lines through this module, so ``bench/summarize.py`` can put buddy next to the peers. A
script supplies ``build()`` (async, returns whatever ``turn`` needs) and ``turn(ctx, i)``
(async, one complete turn, returns the final text), plus ``tool_calls()``: how often the tool
body ran (each side's tool counts its own calls, so the harness asks for them instead of
owning the counter).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

__all__ = [
    "COUNTERS",
    "W3_MODEL_DELAY_S",
    "WARMUP_TURNS",
    "Counters",
    "current_rss_mb",
    "emit",
    "finish_w1",
    "machine_cpu_s",
    "main_w2",
    "main_w3",
    "peak_rss_mb",
]

WARMUP_TURNS = 50
W3_MODEL_DELAY_S = 0.05

Ctx = TypeVar("Ctx")
Build = Callable[[], Awaitable[Ctx]]
Turn = Callable[[Ctx, int], Awaitable[str | None]]


class Counters:
    """Incremented by the scripted model; checked at the end."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.call_id = 0
        self.delay = 0.0  # seconds the scripted model awaits per call (asyncio.sleep)

    def next_call_id(self) -> str:
        self.call_id += 1
        return f"call_{self.call_id}"


COUNTERS = Counters()


def peak_rss_mb() -> float:
    """The process's peak RSS in MiB (Linux ``ru_maxrss`` is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    """The process's current RSS in MiB (resident pages of ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1024.0 * 1024.0)


def emit(record: dict[str, Any]) -> None:
    """Print one JSON line."""
    print(json.dumps(record), flush=True)


def check(peer: str, expected_turns: int, outputs: Sequence[str | None], tool_calls: int) -> None:
    """Exit unless every output is ``"done"``, 1 tool call and 2 model calls per turn."""
    bad = [o for o in outputs if o != "done"]
    if bad:
        raise SystemExit(f"{peer}: unexpected final output(s), e.g. {bad[0]!r}")
    if len(outputs) != expected_turns:
        raise SystemExit(f"{peer}: {len(outputs)} outputs, expected {expected_turns}")
    if tool_calls != expected_turns:
        raise SystemExit(f"{peer}: tool ran {tool_calls} times, expected {expected_turns}")
    if COUNTERS.model_calls != 2 * expected_turns:
        raise SystemExit(
            f"{peer}: model called {COUNTERS.model_calls} times, expected {2 * expected_turns}"
        )


def _n(default: int) -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    return int(args[0]) if args else default


def main_w2(
    peer: str,
    build: Build[Ctx],
    turn: Turn[Ctx],
    tool_calls: Callable[[], int],
    default_n: int = 2000,
    extra: dict[str, Any] | None = None,
) -> None:
    """W2: ``WARMUP_TURNS`` untimed turns, then N sequential timed turns; one JSON line."""
    n = _n(default_n)

    async def run() -> float:
        COUNTERS.delay = 0.0
        ctx = await build()
        outs: list[str | None] = []
        for i in range(WARMUP_TURNS):
            outs.append(await turn(ctx, i))
        t0 = time.perf_counter()
        for i in range(n):
            outs.append(await turn(ctx, WARMUP_TURNS + i))
        wall = time.perf_counter() - t0
        check(peer, WARMUP_TURNS + n, outs, tool_calls())
        return wall

    wall = asyncio.run(run())
    record: dict[str, Any] = {
        "peer": peer,
        "workload": "W2",
        "n": n,
        "us_per_turn": round(wall / n * 1e6, 1),
        "wall_s": round(wall, 4),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    record.update(extra or {})
    emit(record)


def main_w3(
    peer: str,
    build: Build[Ctx],
    turn: Turn[Ctx],
    tool_calls: Callable[[], int],
    default_n: int = 2000,
    extra: dict[str, Any] | None = None,
) -> None:
    """W3: C conversations in one ``asyncio.gather``, model sleeping 0.05 s per call."""
    n = _n(default_n)

    async def run() -> dict[str, float]:
        COUNTERS.delay = W3_MODEL_DELAY_S
        ctx = await build()
        # Warm-up: WARMUP_TURNS conversations run concurrently (same code path).
        outs: list[str | None] = list(
            await asyncio.gather(*(turn(ctx, i) for i in range(WARMUP_TURNS)))
        )
        gc.collect()
        rss_before = current_rss_mb()
        maxrss_before = peak_rss_mb()
        t0 = time.perf_counter()
        outs += await asyncio.gather(*(turn(ctx, WARMUP_TURNS + i) for i in range(n)))
        wall = time.perf_counter() - t0
        maxrss_after = peak_rss_mb()
        check(peer, WARMUP_TURNS + n, outs, tool_calls())
        return {
            "wall": wall,
            "rss_before": rss_before,
            "maxrss_before": maxrss_before,
            "maxrss_after": maxrss_after,
        }

    r = asyncio.run(run())
    grew = r["maxrss_after"] > r["maxrss_before"]
    record: dict[str, Any] = {
        "peer": peer,
        "workload": "W3",
        "n": n,
        "wall_s": round(r["wall"], 4),
        "peak_rss_mb": round(r["maxrss_after"], 1),
        "rss_before_mb": round(r["rss_before"], 1),
        # Only meaningful if the process peak was reached during the gather.
        "rss_delta_kb_per_conv": (
            round((r["maxrss_after"] - r["rss_before"]) * 1024.0 / n, 1) if grew else None
        ),
    }
    record.update(extra or {})
    emit(record)


def finish_w1(
    peer: str,
    variant: str,
    t0: float,
    first_turn: Callable[[], Coroutine[Any, Any, str | None]] | None = None,
) -> None:
    """W1: optionally run one turn (``--turn``), then print the JSON line."""
    built_s = time.perf_counter() - t0
    record: dict[str, Any] = {
        "peer": peer,
        "workload": "W1",
        "variant": variant,
        "n": 1,
        "wall_s": round(built_s, 4),
    }
    if "--turn" in sys.argv[1:] and first_turn is not None:
        out = asyncio.run(first_turn())
        if out != "done":
            raise SystemExit(f"{peer}: first turn returned {out!r}")
        record["workload"] = "W1+turn"
        record["wall_s"] = round(time.perf_counter() - t0, 4)
        record["build_s"] = round(built_s, 4)
    record["peak_rss_mb"] = round(peak_rss_mb(), 1)
    emit(record)


def machine_cpu_s() -> tuple[float, float]:
    """CPU seconds the whole machine spent busy and in all, over all its cores, since boot
    (``/proc/stat``): what other processes took of the cores during a timed window."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is counted in user already
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle) / tick, total / tick
