"""W1 (YAML): import buddy, compile bench/workload/buddy.yaml with ``buddy.load`` and build
one ready ``buddy.Agent`` with the scripted model. ``--turn`` also runs one turn.

buddy is YAML-declared, so its only W1 variant is ``yaml``: the manifest declares the agent
and the custom tool ``add`` (``plugins.bench_add:add``); the scripted model is injected in
code. The tool's plugin module is imported on the tool's first call (inside the turn).
"""

from __future__ import annotations

import time

_t0 = time.perf_counter()

import buddy_peer as p  # noqa: E402

agent = p.build_agent()

import _harness  # noqa: E402

_harness.finish_w1(p.PEER, "yaml", _t0, lambda: p.turn(agent, 0))
