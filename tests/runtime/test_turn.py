"""One turn, run in one place (buddy.runtime.turn): the server and buddy.Agent both run
it, so an Agent turn has what a served one has — event kinds, the summary, a commit, layers
that hear the whole turn."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import pytest

import buddy
from buddy.platform.limits import TURN_STEPS_MAX
from buddy.runtime import history as history_module
from buddy.runtime.agent import Agent
from buddy.runtime.turn import kept_steps
from buddy.testing import TestModel, call
from tests.conftest import MINIMAL, REPO, Write

pytestmark = pytest.mark.anyio

RUNTIME = REPO / "framework" / "buddy" / "runtime"

PROACTIVE = {
    "subscription_key": "weekly",
    "title": "每周复盘",
    "reason": "周日晚上复盘",
    "trigger": {"type": "schedule"},
}


def test_only_the_turn_module_runs_the_agent_loop() -> None:
    """The server and Agent call ``TurnRunner.run``; nothing else in the runtime runs the
    loop or commits a turn (the turn is not written twice)."""
    found = []
    for path in sorted(RUNTIME.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = ast.unparse(node.func)
                if name.endswith("loop.run") or name.endswith("layer.after"):
                    found.append(f"{path.name}: {name}")
    assert found == ["turn.py: self.loop.run", "turn.py: layer.after"]


async def test_an_agent_runs_a_capabilitys_event_as_a_served_buddy_does(write: Write) -> None:
    model = TestModel(["[[skip]]", "周末愉快！"])
    agent = Agent(buddy.load(write({"buddy.yaml": MINIMAL})), model, commit=True)
    await agent.event("proactive", PROACTIVE)
    await agent.event("proactive", PROACTIVE)
    platform = await agent.client.platform()
    pid = await agent.client.platform_id(agent.conversation.id)
    turns = await platform.dev("GET", f"/conversations/{pid}/turns")
    await agent.close()
    first = model.requests[0]
    assert "## 主动服务" in first.system  # the kind's system-prompt part
    assert first.messages[-1].content.startswith("[主动服务触发] 每周复盘：周日晚上复盘")
    # The skip marker says nothing: the turn is stored with no reply. The second reply
    # meets the platform's gates at commit time (no subscription 'weekly' is active), as a
    # served buddy's does: stored without it, and it is no history.
    assert [t["reply"] for t in turns] == [None, None]
    assert turns[1]["steps"][-1]["content"] == "周末愉快！"
    assert "周末愉快！" not in [m.content for m in agent.history]


async def test_an_unknown_event_type_is_refused_by_an_agent(write: Write) -> None:
    agent = Agent(buddy.load(write({"buddy.yaml": MINIMAL})), TestModel([]))
    with pytest.raises(ValueError, match="no capability turns 'mood_ping' events into turns"):
        await agent.event("mood_ping", {})


async def test_a_committing_agent_stores_the_turn_on_its_platform(write: Write) -> None:
    model = TestModel(["你好呀"])
    agent = Agent(buddy.load(write({"buddy.yaml": MINIMAL})), model, commit=True)
    await agent.run("在吗")
    platform = await agent.client.platform()
    pid = await agent.client.platform_id(agent.conversation.id)
    turns = await platform.dev("GET", f"/conversations/{pid}/turns")
    messages = await platform.dev("GET", f"/conversations/{pid}/messages")
    events = await platform.dev("GET", "/events?identity=agent")
    await agent.close()
    assert [(t["user_text"], t["reply"]) for t in turns] == [("在吗", "你好呀")]
    assert [(m["sender"], m["body"]["text"]) for m in messages] == [
        ("user", "在吗"),
        ("buddy", "你好呀"),
    ]
    assert [e["acked_at"] is not None for e in events] == [True]


async def test_an_agents_layers_hear_the_whole_turn(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard: list[Mapping[str, Any]] = []

    class Ear:
        async def before(self, conversation: Any, event: Any) -> Any:
            from buddy.extend.turn import Layered

            return Layered(prompt="## 耳朵\n在听")

        async def after(self, conversation: Any, event: Any, turn: Mapping[str, Any]) -> None:
            heard.append(turn)

        def closed(self, conversation_id: str) -> None: ...

        def inspect(self, conversation_id: str) -> dict[str, Any]:
            return {}

        async def settled(self) -> None: ...

        async def close(self) -> None: ...

    monkeypatch.setattr("buddy.runtime.agent.conversation_layers", lambda *a: (Ear(),))
    manifest = MINIMAL + "tools: [resource_list]\n"
    model = TestModel([call("resource_list", {}), "没有呢"])
    agent = Agent(buddy.load(write({"buddy.yaml": manifest})), model)
    await agent.run("有资料吗")
    await agent.close()
    assert "## 耳朵\n在听" in model.requests[0].system
    (turn,) = heard
    assert turn["reply"] == "没有呢"
    assert [s["type"] for s in turn["steps"]] == ["tool_call", "tool_result", "text"]
    assert turn["data_read"] is False and turn["question"] is None


async def test_an_agents_long_history_is_compacted_into_a_summary(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "COMPACT_AFTER_TURNS", 3)
    monkeypatch.setattr(history_module, "KEEP_RECENT_TURNS", 1)
    model = TestModel([f"回复{i}" for i in range(4)])
    agent = Agent(buddy.load(write({"buddy.yaml": MINIMAL})), model)
    for i in range(4):
        await agent.run(f"消息{i}")
    await agent.close()
    last = model.requests[-1]
    assert "## 之前聊过的内容（摘要）\n- 对方：消息0\n  我：回复0\n- 对方：消息1\n  我：回复1" in (
        last.system
    )
    assert [m.content for m in last.messages] == ["消息2", "回复2", "消息3"]


@pytest.mark.parametrize("count", [TURN_STEPS_MAX, TURN_STEPS_MAX + 1, TURN_STEPS_MAX + 50])
def test_a_turns_record_keeps_within_the_platforms_steps(count: int) -> None:
    steps = [{"type": "text", "content": str(i)} for i in range(count)]
    kept = kept_steps(steps)
    assert len(kept) == min(count, TURN_STEPS_MAX)
    if count > TURN_STEPS_MAX:
        assert kept[:-1] == steps[: TURN_STEPS_MAX - 1]
        left = count - TURN_STEPS_MAX + 1
        assert kept[-1]["content"] == (
            f"[这一轮还有 {left} 步没有记下：一轮最多记 {TURN_STEPS_MAX} 步]"
        )
    else:
        assert kept is steps
