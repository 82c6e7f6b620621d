"""What a turn keeps of the model's reasoning: the rule of docs/runtime.md §7.

Without a data read, every step's reasoning is stored, the final reply's included, and
the history of later turns carries each step's reasoning (providers such as DeepSeek want
it back with every tool-calling step). After a read, later reasoning is redacted. Within
the turn the model gets back exactly what its provider returned (``Replay``); later
turns never do. And a stream that restarts makes the loop start its message again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import buddy
from buddy.models.base import (
    Done,
    Model,
    ModelRequest,
    ModelResponse,
    Replay,
    StreamEvent,
    StreamRestart,
    TextDelta,
)
from buddy.runtime.loop import AgentEvent
from buddy.testing import Reply, TestModel, call
from tests.conftest import Write

pytestmark = pytest.mark.anyio

MANIFEST = """\
name: thinker
model: test
persona:
  prompt: 你好
tools:
  - resource_list
"""


@pytest.fixture
def thinker(write: Write) -> Path:
    return write({"buddy.yaml": MANIFEST, "resources/a.md": "甲\n", "pyproject.toml": ""})


async def test_reasoning_is_stored_for_every_step_without_a_read(thinker: Path) -> None:
    model = TestModel(
        [
            Reply(reasoning="先列资料", calls=[call("resource_list")]),
            Reply(text="有一篇。", reasoning="只有一篇"),
            "好的。",
        ]
    )
    agent = buddy.Agent(buddy.load(thinker), model)
    outcome = await agent.run("有什么资料")
    assert [(s["type"], s.get("content")) for s in outcome.steps] == [
        ("reasoning", "先列资料"),
        ("tool_call", {}),
        ("tool_result", "a.md"),
        ("reasoning", "只有一篇"),  # the final reply's reasoning too
        ("text", "有一篇。"),
    ]
    # Within the turn the model's next request carries the step's reasoning.
    step = model.requests[1].messages[-2]
    assert (step.role, step.reasoning) == ("assistant", "先列资料")
    # Later turns: the history keeps it per step.
    await agent.run("谢谢")
    history = [m for m in model.requests[2].messages if m.role == "assistant"]
    assert [(m.reasoning, bool(m.tool_calls)) for m in history] == [
        ("先列资料", True),
        ("只有一篇", False),
    ]


class _Signed(Model):
    """Answers a tool call, then text, with a provider replay on each step."""

    name = "signed:m"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        replay = Replay(self.name, {"thinking": [{"type": "thinking", "signature": "s"}]})
        if len(self.requests) == 1:
            return ModelResponse(
                tool_calls=(call("resource_list"),), replay=replay, model=self.name
            )
        return ModelResponse(text="好。", replay=replay, model=self.name)


async def test_replay_stays_in_the_turn_and_never_reaches_the_history(thinker: Path) -> None:
    model = _Signed()
    agent = buddy.Agent(buddy.load(thinker), model)
    await agent.run("看看")
    live = model.requests[1].messages[-2]
    assert live.replay == Replay("signed:m", {"thinking": [{"type": "thinking", "signature": "s"}]})
    await agent.run("再看看")
    assert all(m.replay is None for m in model.requests[2].messages)


class _Restarting(Model):
    """Streams some text, restarts (as a retry does), then streams the answer."""

    name = "restarting:m"

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise AssertionError("streamed only")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        yield TextDelta("半句")
        yield StreamRestart("the connection broke")
        yield TextDelta("完整的回答。")
        yield Done(ModelResponse(text="完整的回答。", model=self.name))


async def test_a_restart_starts_the_message_again(thinker: Path) -> None:
    events: list[AgentEvent] = []
    agent = buddy.Agent(buddy.load(thinker), _Restarting())
    outcome = await agent.run("你好", on_event=events.append)
    assert outcome.reply == "完整的回答。"
    shown = [(e.type, e.data) for e in events if e.type.startswith("message_")]
    assert shown == [
        ("message_start", {}),
        ("message_update", {"text": "半句"}),
        ("message_start", {"restart": "the connection broke"}),
        ("message_update", {"text": "完整的回答。"}),
        ("message_end", {"text": "完整的回答。", "calls": 0}),
    ]
