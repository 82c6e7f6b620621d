"""buddy as a peer of the W1–W3 workload: the scripted model, the agent and one turn.

The agent is ``bench/workload/buddy.yaml`` compiled by ``buddy.load``: persona prompt
"You are a calculator. Use the add tool.", one custom tool ``add`` whose handler is the
``async def`` ``plugins.bench_add:add``. The manifest names ``model: test`` as a placeholder;
the scripted model below is injected in code (``buddy.Agent(blueprint, model)``).

One turn is ``await agent.run("What is 1 + 2?")`` on an ``Agent`` built once with
``keep_history=False``: every run is a fresh conversation (a new in-process
``RuntimeConversation`` and ``TurnState``, which is part of the turn) and nothing is kept
after it. :func:`turn_fresh_agent` is an extra variant that builds the ``Agent`` inside the
turn as well.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from _harness import COUNTERS

import buddy
from buddy.compile.blueprint import Blueprint
from buddy.models.base import Model, ModelRequest, ModelResponse, ToolCall, Usage
from buddy.runtime.agent import Agent
from buddy.runtime.plugins import load_handler

__all__ = [
    "MANIFEST",
    "PEER",
    "USER_MESSAGE",
    "ScriptedModel",
    "build",
    "build_agent",
    "load_blueprint",
    "tool_calls",
    "turn",
    "turn_fresh_agent",
]

PEER = "buddy"
MANIFEST = Path(__file__).resolve().parent / "workload" / "buddy.yaml"
USER_MESSAGE = "What is 1 + 2?"
ARGUMENTS = '{"a": 1, "b": 2}'


class ScriptedModel(Model):
    """Stateless: the newest message is the tool's result → "done", else one ``add`` call.

    Async, no I/O, fixed usage (10 in, 5 out); awaits ``COUNTERS.delay`` first when it is
    set (W3).
    """

    name = "bench:scripted"

    async def request(self, request: ModelRequest) -> ModelResponse:
        COUNTERS.model_calls += 1
        if COUNTERS.delay:
            await asyncio.sleep(COUNTERS.delay)
        usage = Usage(input_tokens=10, output_tokens=5)
        messages = request.messages
        if messages and messages[-1].role == "tool":
            return ModelResponse(text="done", usage=usage, model=self.name)
        call = ToolCall(COUNTERS.next_call_id(), "add", ARGUMENTS)
        return ModelResponse(
            tool_calls=(call,), usage=usage, finish_reason="tool_calls", model=self.name
        )


def load_blueprint() -> Blueprint:
    """Compile the workload's manifest with buddy's own loader."""
    return buddy.load(MANIFEST)


def build_agent(blueprint: Blueprint | None = None) -> Agent:
    """One ready agent: the compiled manifest, the scripted model, fresh conversations."""
    return Agent(blueprint or load_blueprint(), ScriptedModel(), keep_history=False)


async def build() -> Agent:
    return build_agent()


async def turn(agent: Agent, i: int) -> str | None:
    """One complete, fresh, single-turn conversation."""
    outcome = await agent.run(USER_MESSAGE)
    return outcome.reply


async def turn_fresh_agent(agent: Agent, i: int) -> str | None:
    """Variant: ``Agent`` (tools, hooks, loop, client) built inside the turn as well."""
    outcome = await Agent(agent.blueprint, agent.loop.model, keep_history=False).run(USER_MESSAGE)
    return outcome.reply


def tool_calls() -> int:
    """How often the ``add`` plugin ran (its own counter, in the module buddy imported)."""
    handler = load_blueprint().tools[0].handler
    assert handler is not None
    module = sys.modules[load_handler(handler).__module__]
    calls: Any = module.CALLS
    return int(calls.count)
