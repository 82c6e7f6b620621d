"""Platform faults on the HTTP API, injected by a middleware around the dev platform:
errors on memory writes, slow answers, dropped connections, a busy connection pool."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from buddy.models.base import ModelRequest, ModelResponse
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.runtime import server as server_module
from buddy.testing import FunctionModel, TestModel, call
from buddy.testing.local import running_buddy
from tests.faults.conftest import (
    IDENTITY,
    Fault,
    FaultyPlatform,
    buddy_said,
    memory,
    unacknowledged,
    until,
    write_project,
)

pytestmark = pytest.mark.anyio
MODEL_URL = "http://127.0.0.1:9"  # never asked: these tests script the model in-process


def _client(platform: FaultyPlatform, token: str, timeout: float = 15.0) -> HttpPlatformClient:
    return HttpPlatformClient(platform.url, token, timeout=timeout, backoff=Backoff(0.02, 0.1))


def _counting(reply: str) -> tuple[FunctionModel, list[ModelRequest]]:
    """A model answering ``reply`` and the number of the request (``reply#1``, ``reply#2`` …),
    and the requests it got."""
    asked: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        asked.append(request)
        return ModelResponse(text=f"{reply}#{len(asked)}")

    return FunctionModel(answer), asked


@pytest.mark.parametrize("after_platform", [False, True], ids=["not-stored", "stored"])
async def test_memory_writes_answered_500_reach_the_model_as_an_error_and_the_turn_completes(
    faulty: FaultyPlatform, project: Path, after_platform: bool
) -> None:
    """500 on memory writes (stored or not): the model reads the error; one reply shown."""
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    conv = await faulty.conversation(IDENTITY)
    fault = faulty.inject(
        Fault("PUT", r"/internal/v1/memory/.+", status=500, after_platform=after_platform)
    )
    model = TestModel([call("remember", {"topic": "口味", "text": "爱吃辣"}), "这次没记下来。"])
    async with running_buddy(faulty, blueprint, model, token):
        event = await faulty.say(conv["id"], "记一下：我爱吃辣")
        await faulty.wait_acked(IDENTITY, event)
    model.assert_complete()
    assert fault.hits == 1  # one write, not retried behind the model's back
    result = model.requests[1].messages[-1]
    assert (result.role, result.is_error, result.content) == (
        "tool",
        True,
        "平台拒绝了请求：injected fault",
    )
    assert await buddy_said(faulty, conv["id"]) == ["这次没记下来。"]
    (turn,) = await faulty.turns(conv["id"])
    assert [s["is_error"] for s in turn["steps"] if s["type"] == "tool_result"] == [True]
    stored = await memory(faulty, token, conv["id"])
    assert stored == ({"口味": "爱吃辣"} if after_platform else {})


async def test_platform_slower_than_usual_but_within_the_timeout(
    faulty: FaultyPlatform, project: Path
) -> None:
    """Every platform answer takes 0.3 s of a 2 s timeout: the turn completes; one reply."""
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    conv = await faulty.conversation(IDENTITY)
    slow = faulty.inject(Fault("*", r"/internal/v1/.*", delay=0.3))

    def model(request: ModelRequest) -> ModelResponse:  # any number of runs (a slow machine)
        if request.messages[-1].role == "user":
            return ModelResponse(
                tool_calls=(call("remember", {"topic": "口味", "text": "爱吃辣"}),)
            )
        return ModelResponse(text="记下了。")

    client = _client(faulty, token, 2.0)
    async with running_buddy(faulty, blueprint, FunctionModel(model), token, client=client):
        event = await faulty.say(conv["id"], "记一下：我爱吃辣")
        await faulty.wait_acked(IDENTITY, event)
    assert slow.hits >= 5  # info, summary, turns, memory write, commit
    assert await buddy_said(faulty, conv["id"]) == ["记下了。"]
    assert await memory(faulty, token, conv["id"]) == {"口味": "爱吃辣"}


@pytest.mark.parametrize(
    ("fault", "runs", "shown"),
    [
        (Fault("GET", r"/internal/v1/conversation", delay=1.5), 1, "好的#1"),
        (Fault("POST", r"/internal/v1/conversation/turns", delay=1.5), 2, "好的#2"),
        (
            Fault("POST", r"/internal/v1/conversation/turns", delay=1.5, after_platform=True),
            2,
            "好的#1",
        ),
    ],
    ids=["build", "commit-lost", "commit-stored-answer-late"],
)
async def test_platform_slower_than_the_client_timeout_the_turn_is_run_again_and_shown_once(
    faulty: FaultyPlatform,
    project: Path,
    quick_retries: None,
    monkeypatch: pytest.MonkeyPatch,
    fault: Fault,
    runs: int,
    shown: str,
) -> None:
    """Build or commit past the timeout each attempt: turn run again; first commit shown once."""
    monkeypatch.setattr(server_module, "PLATFORM_ATTEMPTS", 2)  # 2 timeouts, not 4
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    conv = await faulty.conversation(IDENTITY)
    fault.times = server_module.PLATFORM_ATTEMPTS
    slow = faulty.inject(fault)
    model, asked = _counting("好的")
    async with running_buddy(faulty, blueprint, model, token, client=_client(faulty, token, 1.0)):
        event = await faulty.say(conv["id"], "你好")
        await faulty.wait_acked(IDENTITY, event)
        assert slow.hits == server_module.PLATFORM_ATTEMPTS
        assert len(asked) == runs  # a failed build ran no model; a failed commit ran it
        assert await buddy_said(faulty, conv["id"]) == [shown]
        turns = await faulty.turns(conv["id"])
        assert [(t["event_id"], t["reply"]) for t in turns] == [(event, shown)]
        await faulty.wait_acked(IDENTITY, await faulty.say(conv["id"], "再见"))
    assert [m.content for m in asked[-1].messages] == ["你好", shown, "再见"]


@pytest.mark.parametrize(
    "fault",
    [
        Fault("GET", r"/internal/v1/conversation", status=503, times=2),
        Fault("GET", r"/internal/v1/conversation", drop=True, times=2),
    ],
    ids=["503", "connection-dropped"],
)
async def test_building_a_conversation_fails_twice_then_the_retry_answers(
    faulty: FaultyPlatform, project: Path, quick_retries: None, fault: Fault
) -> None:
    """Reading the conversation fails twice (503, dropped connection): retried; one reply."""
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    conv = await faulty.conversation(IDENTITY)
    faulty.inject(fault)
    model = TestModel(["在的。"])
    async with running_buddy(faulty, blueprint, model, token):
        event = await faulty.say(conv["id"], "在吗")
        await faulty.wait_acked(IDENTITY, event)
    assert fault.hits == 2
    assert await buddy_said(faulty, conv["id"]) == ["在的。"]


async def test_a_turn_that_keeps_failing_is_left_to_the_platform_and_answered_after_reconnect(
    faulty: FaultyPlatform, project: Path, quick_retries: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The build fails on every run: left unacknowledged, answered once after a reconnect."""
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    conv = await faulty.conversation(IDENTITY)
    failing = faulty.inject(Fault("GET", r"/internal/v1/conversation", status=503))
    model = TestModel(["终于回上了。"])
    with caplog.at_level(logging.ERROR, logger="buddy.runtime"):
        async with running_buddy(faulty, blueprint, model, token) as server:
            event = await faulty.say(conv["id"], "在吗")
            await until(lambda: "stays unacknowledged" in caplog.text, "the turn given up")
            runs = server_module.TURN_RETRIES + 1
            assert failing.hits == runs * server_module.PLATFORM_ATTEMPTS
            assert await unacknowledged(faulty) == [event]
            faulty.faults.clear()
            client = server.client
            assert isinstance(client, HttpPlatformClient) and client._socket is not None
            client._socket.transport.abort()  # the gateway drops: the platform resends
            await faulty.wait_acked(IDENTITY, event)
    assert await buddy_said(faulty, conv["id"]) == ["终于回上了。"]


async def test_more_conversations_than_connections_wait_for_one_instead_of_failing(
    faulty: FaultyPlatform, project: Path
) -> None:
    """30 conversations at once on 2 connections, queueing past the timeout: all answered once."""
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    convs = [await faulty.conversation(IDENTITY) for _ in range(30)]
    faulty.inject(Fault("*", r"/internal/v1/.*", delay=0.05))
    client = HttpPlatformClient(faulty.url, token, timeout=2.0, connections=2)
    model = FunctionModel(lambda request: ModelResponse(text="好。"))  # a turn may run twice
    async with running_buddy(faulty, blueprint, model, token, client=client):
        await asyncio.gather(*(faulty.say(c["id"], "嗨") for c in convs))
        await faulty.wait_acked(IDENTITY)
    said = await asyncio.gather(*(buddy_said(faulty, c["id"]) for c in convs))
    assert said == [["好。"]] * len(convs)
