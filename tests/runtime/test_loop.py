"""The agent loop in-process: every failure is a result the model sees, never a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import buddy
from buddy.capabilities.resources.conversation import Resources
from buddy.errors import ModelError
from buddy.models.base import Message, Model, ModelRequest, ModelResponse
from buddy.platform.client import HttpPlatformClient
from buddy.runtime.hooks import HookRunner
from buddy.runtime.loop import MAX_STEPS, MODEL_FAILURE, STEP_LIMIT, AgentEvent, AgentLoop
from buddy.runtime.state import RuntimeConversation, TurnState
from buddy.runtime.tools import build_tools
from buddy.testing import Reply, TestModel, call

pytestmark = pytest.mark.anyio

MANIFEST = """\
name: loop
model: test
persona:
  prompt: 你好
tools:
  - resource_list
  - {name: ok, description: d, parameters: {type: object, properties: {n: {type: integer}}, required: [n]}, handler: "plugins.t:ok"}
  - {name: boom, description: d, parameters: {type: object}, handler: "plugins.t:boom"}
  - {name: slow, description: d, parameters: {type: object}, handler: "plugins.t:slow", timeout_seconds: 0.2}
  - {name: odd, description: d, parameters: {type: object}, handler: "plugins.t:odd"}
  - {name: sync, description: d, parameters: {type: object}, handler: "plugins.t:sync"}
hooks:
  before_tool_call:
    - {deny: [resource_list], when: proactive, reason: 主动回合不翻资料}
    - {handler: "plugins.t:guard", tools: [sync]}
  after_tool_call:
    - {handler: "plugins.t:shout", tools: [ok]}
"""
PLUGIN = """\
import asyncio

async def ok(conversation, params):
    await asyncio.sleep(0.05 if params["n"] == 1 else 0)
    return f"ok {params['n']}"

async def boom(conversation, params):
    raise RuntimeError("kaput")

async def slow(conversation, params):
    await asyncio.sleep(30)

def odd(conversation, params):
    return {"set": {1, 2}}

def sync(conversation, params):
    return "sync done"

def guard(call, conversation):
    raise ValueError("guard broke")

def shout(call, result, conversation):
    return result.text.upper()
"""


@pytest.fixture
def loop_parts(tmp_path: Path) -> tuple[buddy.Blueprint, RuntimeConversation]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "buddy.yaml").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "t.py").write_text(PLUGIN)
    blueprint = buddy.load(tmp_path)
    client = HttpPlatformClient("http://127.0.0.1:9", "t")
    conversation = RuntimeConversation(client, "c1", "private")
    conversation.resource.shelf = Resources({"a.md": "A"})
    return blueprint, conversation


def _loop(blueprint: buddy.Blueprint, model: Model) -> AgentLoop:
    return AgentLoop(model, build_tools(blueprint), HookRunner(blueprint))


async def test_failures_become_results_the_model_sees(
    loop_parts: tuple[buddy.Blueprint, RuntimeConversation],
) -> None:
    blueprint, conversation = loop_parts
    model = TestModel(
        [
            [
                call("ok", {"n": 1}),
                call("ok", {"n": "one"}),
                call("ok", raw="{not json"),
                call("missing"),
                call("boom"),
                call("slow"),
                call("odd"),
                call("sync"),
            ],
            "done",
        ]
    )
    events: list[AgentEvent] = []
    outcome = await _loop(blueprint, model).run(
        "sys", [], Message("user", "hi"), conversation, events.append
    )
    model.assert_complete()
    assert outcome.reply == "done"
    results = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [m.name for m in results] == ["ok", "ok", "ok", "missing", "boom", "slow", "odd", "sync"]
    by = [(m.is_error, m.content) for m in results]
    assert by[0] == (False, "OK 1")  # after hook replaced it; first despite finishing last
    assert by[1][0] and "参数不符合要求" in by[1][1]
    assert by[2][0] and "不是合法的 JSON" in by[2][1]
    assert by[3][0] and "没有这个工具：missing" in by[3][1]
    assert by[4][0] and "RuntimeError: kaput" in by[4][1]
    assert by[5][0] and "超时" in by[5][1]
    assert (not by[6][0] and "1, 2" in by[6][1]) or "{1, 2}" in by[6][1]
    assert by[7][0] and "guard broke" in by[7][1]  # a hook that raises stops the call
    kinds = [e.type for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert kinds.count("tool_execution_start") == 8 == kinds.count("tool_execution_end")


async def test_tool_calls_of_one_step_run_concurrently(
    loop_parts: tuple[buddy.Blueprint, RuntimeConversation],
) -> None:
    blueprint, conversation = loop_parts
    model = TestModel([[call("ok", {"n": 1}) for _ in range(10)], "done"])
    loop = _loop(blueprint, model)
    started = asyncio.get_running_loop().time()
    await loop.run("sys", [], Message("user", "hi"), conversation)
    assert asyncio.get_running_loop().time() - started < 0.4  # ten 0.05 s calls, not 0.5 s


async def test_deny_in_proactive_turns_only(
    loop_parts: tuple[buddy.Blueprint, RuntimeConversation],
) -> None:
    blueprint, conversation = loop_parts
    for proactive, denied in ((False, False), (True, True)):
        conversation.turn = TurnState(unasked=proactive)
        model = TestModel([call("resource_list"), "done"])
        await _loop(blueprint, model).run("sys", [], Message("user", "hi"), conversation)
        result = model.requests[1].messages[-1]
        assert result.is_error is denied
        assert ("主动回合不翻资料" in result.content) is denied


async def test_max_steps(loop_parts: tuple[buddy.Blueprint, RuntimeConversation]) -> None:
    blueprint, conversation = loop_parts
    model = TestModel([call("resource_list") for _ in range(MAX_STEPS)])
    outcome = await _loop(blueprint, model).run("sys", [], Message("user", "hi"), conversation)
    assert outcome.reply == STEP_LIMIT
    model.assert_complete()


class _Broken(Model):
    name = "broken:x"

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise ModelError(self.name, "HTTP 500", status=500, retryable=True)


async def test_a_model_failure_gives_the_user_a_clear_message(
    loop_parts: tuple[buddy.Blueprint, RuntimeConversation],
) -> None:
    blueprint, conversation = loop_parts
    outcome = await _loop(blueprint, _Broken()).run("sys", [], Message("user", "hi"), conversation)
    assert outcome.reply == MODEL_FAILURE
    assert outcome.error is not None and "HTTP 500" in outcome.error


async def test_cancellation_stops_the_turn(
    loop_parts: tuple[buddy.Blueprint, RuntimeConversation],
) -> None:
    blueprint, conversation = loop_parts
    model = TestModel([Reply(calls=[call("slow")]), "done"])
    task = asyncio.create_task(
        _loop(blueprint, model).run("sys", [], Message("user", "hi"), conversation)
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_agent_runs_turns_without_a_platform(
    loop_parts: tuple[buddy.Blueprint, RuntimeConversation],
) -> None:
    blueprint, _ = loop_parts
    model = TestModel([call("ok", {"n": 2}), "first", "second"])
    agent = buddy.Agent(blueprint, model)
    first = await agent.run("hi")
    second = await agent.run("again")
    assert (first.reply, second.reply) == ("first", "second")
    assert [m.content for m in model.requests[2].messages if m.role == "user"] == ["hi", "again"]
    fresh = buddy.Agent(blueprint, TestModel(["a", "b"]), keep_history=False)
    await fresh.run("one")
    await fresh.run("two")


async def test_turn_commits_retry_transient_platform_failures(
    monkeypatch: pytest.MonkeyPatch, loop_parts: tuple[buddy.Blueprint, RuntimeConversation]
) -> None:
    from buddy.errors import PlatformError
    from buddy.runtime import server as server_module
    from buddy.runtime.agent import DetachedClient

    monkeypatch.setattr(server_module, "PLATFORM_BACKOFF", 0.001)
    blueprint, _ = loop_parts
    failures = [PlatformError(503, "busy"), PlatformError(0, "unreachable")]

    class Flaky(DetachedClient):
        async def commit_turn(self, cid: str, turn: object) -> object:
            if failures:
                raise failures.pop(0)
            return {"status": "committed"}

    server = server_module.BuddyServer(server_module.Buddy(blueprint, Flaky(), TestModel()))
    assert await server._commit("c", {"event_id": "e"}) == {"status": "committed"}
    failures.extend([PlatformError(400, "bad")])
    with pytest.raises(PlatformError, match="bad"):  # a 4xx is not retried
        await server._commit("c", {"event_id": "e"})
    failures.extend([PlatformError(503, "busy")] * server_module.PLATFORM_ATTEMPTS)
    with pytest.raises(PlatformError, match="busy"):  # nor is the last transient failure
        await server._commit("c", {"event_id": "e"})
    assert not failures
