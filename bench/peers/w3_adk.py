"""W3: C conversations (default 2000) in one ``asyncio.gather``, 0.05 s per model call."""

from __future__ import annotations

import peer_adk as p
from _peer import harness, tool_calls

harness.main_w3(p.PEER, p.build, p.turn, tool_calls)
