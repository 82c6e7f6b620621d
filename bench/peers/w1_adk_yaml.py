"""W1 (yaml): google-adk's Agent Config loader on specs/adk_agent/root_agent.yaml, plus the
``Runner`` and session service a turn needs. ``--turn`` also runs one turn."""

from __future__ import annotations

import time

_t0 = time.perf_counter()

import peer_adk as p  # noqa: E402
from _peer import spec_path  # noqa: E402

ready = p.Ready(p.build_agent_from_yaml(spec_path("adk_agent", "root_agent.yaml")))

import _harness  # noqa: E402

_harness.finish_w1(p.PEER, "yaml", _t0, lambda: p.turn(ready, 0))
