"""google-adk as a peer: ``LlmAgent`` with a ``BaseLlm`` subclass as the scripted model.

ADK runs an agent only through a ``Runner`` and a session, so the agent comes with a
``Runner`` over the built-in ``InMemorySessionService`` (built once, like the agent), and one
turn creates a fresh session, then iterates ``Runner.run_async`` to the final response. The
sessions stay in the in-memory service after their turn (ADK has no stateless run), so its
memory grows with the number of turns. Nothing is turned off.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from _peer import AGENT_NAME, COUNTERS, INSTRUCTIONS, USER_MESSAGE, add
from google.adk.agents import LlmAgent
from google.adk.agents.base_agent import BaseAgent
from google.adk.models._capabilities import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

__all__ = ["PEER", "SCRIPTED_LLM", "Ready", "ScriptedLlm", "build", "build_agent", "turn"]

PEER = "google-adk"
APP = "bench_app"
USER = "bench_user"
MESSAGE = types.Content(role="user", parts=[types.Part(text=USER_MESSAGE)])


class ScriptedLlm(BaseLlm):
    """The spec's scripted model: one complete response per call, from the newest content."""

    model: str = "scripted"

    @property
    def capabilities(self) -> LlmCapabilities:
        # BaseLlm asks direct subclasses to declare theirs instead of guessing from the name.
        return LlmCapabilities(output_schema_and_tools=True)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        COUNTERS.model_calls += 1
        if COUNTERS.delay:
            await asyncio.sleep(COUNTERS.delay)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=5, total_token_count=15
        )
        newest = llm_request.contents[-1]
        if any(part.function_response is not None for part in newest.parts or ()):
            part = types.Part(text="done")
        else:
            call = types.FunctionCall(id=COUNTERS.next_call_id(), name="add", args={"a": 1, "b": 2})
            part = types.Part(function_call=call)
        content = types.Content(role="model", parts=[part])
        yield LlmResponse(content=content, usage_metadata=usage, turn_complete=True)


# The YAML variant names this object in specs/adk_agent/root_agent.yaml (model_code).
SCRIPTED_LLM = ScriptedLlm()


def build_agent() -> LlmAgent:
    """The agent written in Python."""
    return LlmAgent(name=AGENT_NAME, model=SCRIPTED_LLM, instruction=INSTRUCTIONS, tools=[add])


def build_agent_from_yaml(path: str) -> BaseAgent:
    """The agent from ADK's own Agent Config loader (model and tool named by dotted path)."""
    from google.adk.agents import config_agent_utils

    agent = config_agent_utils.from_config(path)
    if not isinstance(agent, LlmAgent) or len(agent.tools) != 1:
        raise SystemExit(f"{path}: expected an LlmAgent with one tool, got {agent!r}")
    return agent


class Ready:
    """What a turn needs: the agent's ``Runner`` and its in-memory session service."""

    def __init__(self, agent: BaseAgent) -> None:
        self.sessions = InMemorySessionService()
        self.runner = Runner(app_name=APP, agent=agent, session_service=self.sessions)


async def build() -> Ready:
    return Ready(build_agent())


async def turn(ready: Ready, i: int) -> str | None:
    """One complete, fresh, single-turn conversation (a new session)."""
    session = await ready.sessions.create_session(app_name=APP, user_id=USER)
    final = None
    async for event in ready.runner.run_async(
        user_id=USER, session_id=session.id, new_message=MESSAGE
    ):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text
    return final
