"""A layer's messages at a depth (``Layered.injected``): the model reads them in the turn's
history, at the depth asked, as the role asked, on every provider's wire — and nothing of
them is committed or seen by a later turn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import buddy
from buddy.extend.turn import Injected, Layered
from buddy.models.anthropic import SYSTEM_MARK
from buddy.models.anthropic import messages as anthropic_messages
from buddy.models.base import Message, ModelRequest
from buddy.models.openai import messages as openai_messages
from buddy.runtime.agent import Agent
from buddy.runtime.loop import inject
from buddy.testing import TestModel
from tests.conftest import MINIMAL, Write

HISTORY = [Message("user", "一"), Message("assistant", "二"), Message("user", "三")]


def _said(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def test_depth_zero_goes_after_the_last_message() -> None:
    got = inject(HISTORY, [Injected(0, "system", "设定")])
    assert _said(got)[-1] == ("system", "设定")
    assert got[:-1] == HISTORY


def test_depth_counts_messages_from_the_end() -> None:
    got = inject(HISTORY, [Injected(1, "user", "旁白"), Injected(2, "assistant", "回想")])
    assert _said(got) == [
        ("user", "一"),
        ("assistant", "回想"),
        ("assistant", "二"),
        ("user", "旁白"),
        ("user", "三"),
    ]


def test_deeper_than_the_history_goes_at_its_start() -> None:
    got = inject(HISTORY, [Injected(100, "system", "开头")])
    assert _said(got)[0] == ("system", "开头")
    assert got[1:] == HISTORY


def test_one_depth_and_role_is_one_message_and_roles_keep_an_order() -> None:
    got = inject(
        HISTORY,
        [
            Injected(0, "assistant", "丙"),
            Injected(0, "system", "甲"),
            Injected(0, "system", "乙"),
        ],
    )
    assert _said(got)[3:] == [("system", "甲\n乙"), ("assistant", "丙")]


def test_nothing_injected_is_the_same_list() -> None:
    assert inject(HISTORY, []) is HISTORY


def test_a_system_message_on_the_wire() -> None:
    request = ModelRequest(system="你是搭子。", messages=(*HISTORY, Message("system", "设定")))
    openai = openai_messages(request)
    assert openai[0] == {"role": "system", "content": "你是搭子。"}
    assert openai[-1] == {"role": "system", "content": "设定"}
    # The Messages API takes a system prompt only at the top: the message goes as the
    # user's text, marked, joined to the user message before it.
    claude = anthropic_messages(request)
    assert claude[-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "三"}, {"type": "text", "text": f"{SYSTEM_MARK}设定"}],
    }


class _Depth:
    """A layer that puts one system message just before the turn's message."""

    async def before(self, conversation: Any, event: Any) -> Layered:
        return Layered(injected=(Injected(1, "system", "（夜里十点以后说话轻一点）"),))

    async def after(self, conversation: Any, event: Any, turn: Mapping[str, Any]) -> None: ...

    def closed(self, conversation_id: str) -> None: ...

    def inspect(self, conversation_id: str) -> dict[str, Any]:
        return {}

    async def settled(self) -> None: ...

    async def close(self) -> None: ...


@pytest.mark.anyio
async def test_the_model_reads_it_and_no_later_turn_does(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("buddy.runtime.agent.conversation_layers", lambda *a: (_Depth(),))
    model = TestModel(["好", "嗯"])
    agent = Agent(buddy.load(write({"buddy.yaml": MINIMAL})), model)
    await agent.run("在吗")
    await agent.run("还在吗")
    sent = agent.turns.sent[agent.conversation.id][-1]
    await agent.close()
    first, second = model.requests
    assert _said(list(first.messages)) == [
        ("system", "（夜里十点以后说话轻一点）"),
        ("user", "在吗"),
    ]
    # The second turn's history holds the first turn as committed, without the message.
    assert _said(list(second.messages)) == [
        ("user", "在吗"),
        ("assistant", "好"),
        ("system", "（夜里十点以后说话轻一点）"),
        ("user", "还在吗"),
    ]
    assert sent.injected == (Injected(1, "system", "（夜里十点以后说话轻一点）"),)
