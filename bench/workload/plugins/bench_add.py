"""The workload's one tool: ``add(a, b)``. Counts its calls and does nothing else.

The counter lives here, not in the bench harness, so the plugin stays a plain buddy plugin;
the harness reads :data:`CALLS` through the module buddy imported (see ``buddy_peer.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CALLS", "add"]


class _Calls:
    count = 0


CALLS = _Calls()


async def add(conversation: Any, params: Mapping[str, Any]) -> int:
    """Add two integers and return the sum."""
    CALLS.count += 1
    a: int = params["a"]
    b: int = params["b"]
    return a + b
