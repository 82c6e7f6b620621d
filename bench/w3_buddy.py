"""W3: C conversations (default 2000) in one ``asyncio.gather``, the scripted model sleeping
0.05 s per call; ``--fresh-agent`` builds the ``buddy.Agent`` inside every turn (extra)."""

from __future__ import annotations

import sys

import _harness
import buddy_peer as p

if "--fresh-agent" in sys.argv[1:]:
    _harness.main_w3(
        p.PEER, p.build, p.turn_fresh_agent, p.tool_calls, extra={"variant": "agent-per-turn"}
    )
else:
    _harness.main_w3(p.PEER, p.build, p.turn, p.tool_calls)
