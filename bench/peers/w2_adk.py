"""W2: N sequential turns (default 2000) after 50 warm-up turns."""

from __future__ import annotations

import peer_adk as p
from _peer import harness, tool_calls

harness.main_w2(p.PEER, p.build, p.turn, tool_calls)
