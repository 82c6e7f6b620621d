"""Where buddy's per-turn time goes: cProfile over W2 turns, or over end-to-end platform turns.

* ``w2`` (default N=5000): N sequential ``Agent.run`` turns after 50 warm-up turns, as
  ``w2_buddy.py``. Prints the cumulative share of the turn's main parts, then the top
  functions by own time.
* ``e2e`` (default N=500): N sequential turns through the dev platform, as
  ``e2e_platform.py seq``. Prints the own time grouped by package (HTTP client and server,
  the platform, the buddy runtime ...), since the whole stack runs in this process.

cProfile's own cost per call inflates small functions, so read the shares, not the times.

usage: python bench/profile_buddy.py [w2|e2e] [N]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
from typing import Any

import buddy_peer as p
from _harness import WARMUP_TURNS
from e2e_platform import IDENTITY, _Users, own_time_by_package, print_shares

from buddy.testing.local import LocalPlatform, running_buddy

# (label, file suffix, function): cumulative time of these, as a share of all profiled time.
# They overlap (a part's line names what it contains). The tool calls run in tasks of their
# own (``asyncio.gather``), so cProfile does not count them inside ``Agent.run``.
PARTS = [
    ("Agent.run, without the tool-call tasks", "buddy/runtime/agent.py", "run"),
    ("persona render (Jinja, every turn; in Agent.run)", "buddy/compile/persona.py", "render"),
    ("fresh RuntimeConversation (in Agent.run)", "buddy/runtime/agent.py", "_conversation"),
    ("model step: request, stream wrapper, events (in Agent.run)", "buddy/runtime/loop.py", "_ask"),
    ("scripted model itself (bench, in the model step)", "bench/buddy_peer.py", "request"),
    ("recorder: model step record (in Agent.run)", "buddy/runtime/loop.py", "model_step"),
    ("_run_calls: gather, result record (in Agent.run)", "buddy/runtime/loop.py", "_run_calls"),
    ("tool call task: _execute (own task)", "buddy/runtime/loop.py", "_execute"),
    ("argument validation, jsonschema (in _execute)", "buddy/runtime/tools.py", "validate"),
    ("asyncio.wait_for, the tool timeout (in _execute)", "asyncio/tasks.py", "wait_for"),
    ("plugin call + result_of (in _execute)", "buddy/runtime/tools.py", "execute"),
    ("event loop: _run_once, select (own time)", "asyncio/base_events.py", "_run_once"),
]


def _stats(profile: cProfile.Profile) -> dict[tuple[str, int, str], Any]:
    stats: dict[tuple[str, int, str], Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return stats


def _w2(n: int) -> None:
    async def run() -> cProfile.Profile:
        agent = p.build_agent()
        for i in range(WARMUP_TURNS):
            await p.turn(agent, i)
        profile = cProfile.Profile()
        profile.enable()
        for i in range(n):
            await p.turn(agent, i)
        profile.disable()
        return profile

    profile = asyncio.run(run())
    stats = _stats(profile)
    total = sum(row[2] for row in stats.values())  # all own time while profiling
    print(f"{n} turns, {total:.3f} s profiled ({total / n * 1e6:.0f} µs/turn under cProfile)\n")
    print("| part | share of profiled time |\n|---|---|")
    for label, suffix, name in PARTS:
        if name == "_run_once":  # own time only: its cumulative time is everything
            seconds = sum(
                row[2]
                for (file, _, func), row in stats.items()
                if (file.endswith(suffix) and func == name)
                or file.endswith("selectors.py")
                or "select.epoll" in func
            )
        else:
            seconds = sum(
                row[3]
                for (file, _, func), row in stats.items()
                if file.endswith(suffix) and func == name
            )
        print(f"| {label} | {seconds / total:.1%} |")
    print("\ntop 15 by own time:")
    pstats.Stats(profile).sort_stats("tottime").print_stats(15)


def _e2e(n: int) -> None:
    async def run() -> cProfile.Profile:
        async with LocalPlatform() as platform:
            users = _Users(platform)
            token = (await platform.register(IDENTITY))["dev_token"]
            model = p.ScriptedModel()
            async with running_buddy(platform, p.load_blueprint(), model, token) as server:
                users.watch(server.client)
                warm, _ = await users.conversations(20)
                await users.turns(warm, False, 300)
                timed, _ = await users.conversations(n)
                profile = cProfile.Profile()
                profile.enable()
                await users.turns(timed, False, 300)
                profile.disable()
            await users.http.aclose()
        return profile

    groups = own_time_by_package(pstats.Stats(asyncio.run(run())))
    total = sum(groups.values())
    print(f"{n} turns, {total:.3f} s profiled ({total / n * 1e3:.1f} ms/turn under cProfile)\n")
    print_shares(groups, sys.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=("w2", "e2e"), default="w2")
    parser.add_argument("n", nargs="?", type=int)
    args = parser.parse_args()
    if args.what == "w2":
        _w2(args.n or 5000)
    else:
        _e2e(args.n or 500)


if __name__ == "__main__":
    main()
