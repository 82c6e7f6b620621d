"""openai-agents as a peer: ``Agent`` with a ``Model`` subclass as the scripted model.

One turn is ``await Runner.run(agent, USER_MESSAGE)``; ``result.final_output`` is the final
text. Changed from the defaults: tracing is off (``set_tracing_disabled(True)``), because it is
on by default and exports spans over the network from a background thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from _peer import AGENT_NAME, COUNTERS, INSTRUCTIONS, USER_MESSAGE, add
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

if TYPE_CHECKING:
    from agents import AgentOutputSchemaBase, Handoff, ModelSettings, Tool
    from agents.items import TResponseInputItem
    from agents.models.interface import ModelTracing
    from openai.types.responses import ResponsePromptParam

__all__ = ["PEER", "ScriptedModel", "build", "build_agent", "turn", "turn_clone"]

PEER = "openai-agents"

set_tracing_disabled(True)


def _newest_type(items: str | list[TResponseInputItem]) -> object:
    if isinstance(items, str) or not items:
        return None
    newest: Any = items[-1]
    return newest.get("type") if isinstance(newest, dict) else getattr(newest, "type", None)


class ScriptedModel(Model):
    """The spec's scripted model: the newest input item decides the answer."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        COUNTERS.model_calls += 1
        if COUNTERS.delay:
            await asyncio.sleep(COUNTERS.delay)
        usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
        if _newest_type(input) == "function_call_output":
            text = ResponseOutputText(text="done", type="output_text", annotations=[])
            message = ResponseOutputMessage(
                id="msg_done", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=usage, response_id=None)
        call_id = COUNTERS.next_call_id()
        call = ResponseFunctionToolCall(
            id=call_id, call_id=call_id, type="function_call", name="add", arguments='{"a":1,"b":2}'
        )
        return ModelResponse(output=[call], usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the workload runs turns without streaming")


def build_agent() -> Agent[Any]:
    return Agent(
        name=AGENT_NAME,
        instructions=INSTRUCTIONS,
        model=ScriptedModel(),
        tools=[function_tool(add)],
    )


async def build() -> Agent[Any]:
    return build_agent()


async def turn(agent: Agent[Any], i: int) -> str:
    """One complete, fresh, single-turn conversation."""
    result = await Runner.run(agent, USER_MESSAGE)
    final: str = result.final_output
    return final


async def turn_clone(agent: Agent[Any], i: int) -> str:
    """Extra variant (not the spec's workload): a clone of the agent for every conversation.

    openai-agents compares, at every step, the tools of all runs active on the same ``Agent``
    object (O(concurrent runs) per step, quadratic in W3); its own error text recommends
    ``agent.clone()`` per run. This variant shows W3 without that cost.
    """
    result = await Runner.run(agent.clone(), USER_MESSAGE)
    final: str = result.final_output
    return final
