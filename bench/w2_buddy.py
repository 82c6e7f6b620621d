"""W2: N sequential turns (default 2000) after 50 warm-up turns; ``--fresh-agent`` builds the
``buddy.Agent`` inside every turn (an extra variant, not the spec'd workload)."""

from __future__ import annotations

import sys

import _harness
import buddy_peer as p

if "--fresh-agent" in sys.argv[1:]:
    _harness.main_w2(
        p.PEER, p.build, p.turn_fresh_agent, p.tool_calls, extra={"variant": "agent-per-turn"}
    )
else:
    _harness.main_w2(p.PEER, p.build, p.turn, p.tool_calls)
