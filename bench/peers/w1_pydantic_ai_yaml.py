"""W1 (yaml): pydantic-ai's ``Agent.from_file`` on specs/pydantic_ai_agent.yaml (the tool and
the scripted model go in as arguments). ``--turn`` also runs one turn."""

from __future__ import annotations

import time

_t0 = time.perf_counter()

import peer_pydantic_ai as p  # noqa: E402
from _peer import spec_path  # noqa: E402

ready = p.build_agent_from_yaml(spec_path("pydantic_ai_agent.yaml"))

import _harness  # noqa: E402

_harness.finish_w1(p.PEER, "yaml", _t0, lambda: p.turn(ready, 0))
