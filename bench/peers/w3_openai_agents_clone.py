"""W3, extra variant: openai-agents with one ``agent.clone()`` per conversation.

Not the spec's workload (see ``peer_openai_agents.turn_clone``); ``run_buddy.sh`` does not run it.
"""

from __future__ import annotations

import peer_openai_agents as p
from _peer import harness, tool_calls

harness.main_w3(
    p.PEER, p.build, p.turn_clone, tool_calls, extra={"variant": "clone-per-conversation"}
)
