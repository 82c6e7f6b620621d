"""The gateway connection dropped in the middle of a proactive turn."""

from __future__ import annotations

import asyncio

import pytest

from buddy.models.base import ModelRequest, ModelResponse
from buddy.platform.client import HttpPlatformClient
from buddy.testing import FunctionModel
from buddy.testing.local import LocalPlatform, running_buddy
from tests.faults.conftest import buddy_said, unacknowledged, until
from tests.runtime.test_e2e import CARDIO, _noon

pytestmark = pytest.mark.anyio
CARDIO_DEV = "cardio-dev"


async def test_gateway_dropped_during_a_proactive_turn_commits_it_once(
    platform: LocalPlatform,
) -> None:
    """Gateway dropped mid proactive turn: not acked before its commit; the message shown once."""
    token = (await platform.register("cardio"))["dev_token"]
    conv = await platform.conversation(CARDIO_DEV)
    other = await platform.conversation(CARDIO_DEV)
    member = conv["members"][0]["member_id"]
    await _noon(platform)
    thinking = asyncio.Event()
    go_on = asyncio.Event()
    proactive_asks = 0

    async def model(request: ModelRequest) -> ModelResponse:
        nonlocal proactive_asks
        if request.messages[-1].content.startswith("[主动服务触发]"):
            proactive_asks += 1
            thinking.set()
            await go_on.wait()
            return ModelResponse(text="跑完了？今天配速不错。")
        return ModelResponse(text="在呢。")

    async with running_buddy(platform, CARDIO, FunctionModel(model), token) as server:
        client = server.client
        assert isinstance(client, HttpPlatformClient)
        first = await platform.say(conv["id"], "嗨")  # builds it and turns post-run on
        await platform.wait_acked(CARDIO_DEV, first)
        await platform.dev(
            "POST",
            "/triggers",
            json={"identity": CARDIO_DEV, "member_id": member, "type": "workout.completed"},
        )
        await asyncio.wait_for(thinking.wait(), 10)
        (proactive,) = await unacknowledged(platform, CARDIO_DEV)
        assert client._socket is not None
        client._socket.transport.abort()
        await until(lambda: client.connections == 2, "the gateway reconnected")
        # Events come in order: once a later one is answered, the resent proactive event
        # has been through the client too.
        later = await platform.say(other["id"], "还在吗")
        await platform.wait_acked(CARDIO_DEV, later)
        assert await unacknowledged(platform, CARDIO_DEV) == [proactive]  # not acked early
        go_on.set()
        await platform.wait_acked(CARDIO_DEV, proactive)
    assert proactive_asks == 1
    assert await buddy_said(platform, conv["id"]) == ["在呢。", "跑完了？今天配速不错。"]
    turns = await platform.turns(conv["id"])
    assert [(t["event_id"], t["proactive"]) for t in turns] == [(first, False), (proactive, True)]
