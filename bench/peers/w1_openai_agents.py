"""W1 (python): import openai-agents and build one ready ``Agent`` (the scripted model, the
tool ``add``). ``--turn`` also runs one turn."""

from __future__ import annotations

import time

_t0 = time.perf_counter()

import peer_openai_agents as p  # noqa: E402

ready = p.build_agent()

import _harness  # noqa: E402

_harness.finish_w1(p.PEER, "python", _t0, lambda: p.turn(ready, 0))
