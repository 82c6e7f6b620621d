"""What every peer shares: the fixed parts of bench/WORKLOAD.md and the harness.

The timing, checks and JSON lines are buddy's own ``bench/_harness.py`` (one folder up), so a
peer's lines and buddy's are made by the same code and ``bench/summarize.py`` reads both. This
module puts that folder at the end of ``sys.path`` (nothing in it can shadow a framework's
modules) and holds the tool body, which counts its calls for the harness's checks.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))

import _harness as harness  # noqa: E402
from _harness import COUNTERS  # noqa: E402

__all__ = [
    "AGENT_NAME",
    "COUNTERS",
    "INSTRUCTIONS",
    "USER_MESSAGE",
    "add",
    "harness",
    "spec_path",
    "tool_calls",
]

AGENT_NAME = "bench_agent"
INSTRUCTIONS = "You are a calculator. Use the add tool."
USER_MESSAGE = "What is 1 + 2?"


class _Calls:
    count = 0


_CALLS = _Calls()


async def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    _CALLS.count += 1
    return a + b


def tool_calls() -> int:
    """How often :func:`add` ran in this process."""
    return _CALLS.count


def spec_path(*parts: str) -> str:
    """A file of ``specs/``, the peers' own YAML declarations of the agent."""
    return os.path.join(_HERE, "specs", *parts)
