"""pydantic-ai as a peer: ``Agent`` with a ``FunctionModel`` as the scripted model.

One turn is ``await agent.run(USER_MESSAGE)``; ``result.output`` is the final text. Nothing is
turned off: pydantic-ai ships with its instrumentation off.
"""

from __future__ import annotations

import asyncio

from _peer import AGENT_NAME, COUNTERS, INSTRUCTIONS, USER_MESSAGE, add
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

__all__ = ["PEER", "build", "build_agent", "build_agent_from_yaml", "turn"]

PEER = "pydantic-ai"


async def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The spec's scripted model, looking only at the newest message it is given."""
    # An async function on purpose: FunctionModel runs a sync one on a worker thread.
    COUNTERS.model_calls += 1
    if COUNTERS.delay:
        await asyncio.sleep(COUNTERS.delay)
    # Fixed usage, so FunctionModel does not estimate tokens (a real provider would not).
    usage = RequestUsage(input_tokens=10, output_tokens=5)
    newest = messages[-1]
    if isinstance(newest, ModelRequest) and any(
        isinstance(part, ToolReturnPart) for part in newest.parts
    ):
        return ModelResponse(parts=[TextPart("done")], usage=usage)
    call = ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id=COUNTERS.next_call_id())
    return ModelResponse(parts=[call], usage=usage)


def _model() -> FunctionModel:
    return FunctionModel(scripted, model_name="scripted")


def build_agent() -> Agent[None, str]:
    """The agent written in Python."""
    return Agent(_model(), name=AGENT_NAME, instructions=INSTRUCTIONS, tools=[add])


def build_agent_from_yaml(path: str) -> Agent[object, str]:
    """The agent from its YAML spec (``Agent.from_file``).

    The spec format has no field naming a Python function as a tool, so the tool and the
    scripted model go in as arguments, as pydantic-ai documents it.
    """
    return Agent.from_file(path, model=_model(), tools=[add])


async def build() -> Agent[None, str]:
    return build_agent()


async def turn(agent: Agent[None, str], i: int) -> str:
    """One complete, fresh, single-turn conversation."""
    result = await agent.run(USER_MESSAGE)
    return result.output
