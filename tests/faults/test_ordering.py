"""Replies of a conversation come back in the order its messages came, even when a turn
has to run again: its re-run goes before the conversation's later messages, never behind
them (they used to be answered first: 002, 003, 004, 005, 001)."""

from __future__ import annotations

from pathlib import Path

import pytest

from buddy.models.base import ModelRequest, ModelResponse
from buddy.testing import FunctionModel
from buddy.testing.local import running_buddy
from tests.faults.conftest import (
    IDENTITY,
    Fault,
    FaultyPlatform,
    buddy_said,
    write_project,
)

pytestmark = pytest.mark.anyio

MODEL_URL = "http://127.0.0.1:9/v1"  # never called: the model is in-process


def echo(request: ModelRequest) -> ModelResponse:
    return ModelResponse(text=f"收到 {request.messages[-1].content}")


async def test_a_turn_run_again_is_answered_before_the_later_messages(
    faulty: FaultyPlatform, project: Path, quick_retries: None
) -> None:
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    conv = await faulty.conversation(IDENTITY)
    # The first turn's commit fails on every attempt of its first run (4 × 503); its
    # run again succeeds. Meanwhile four more messages are waiting.
    commit = faulty.inject(Fault("POST", r"/internal/v1/conversation/turns", status=503, times=4))
    texts = [f"{n:03d}" for n in range(1, 6)]
    async with running_buddy(faulty, blueprint, FunctionModel(echo), token):
        for text in texts:
            await faulty.say(conv["id"], text)
        await faulty.wait_acked(IDENTITY)
    assert commit.hits == 4
    assert await buddy_said(faulty, conv["id"]) == [f"收到 {t}" for t in texts]


async def test_conversations_do_not_wait_for_each_others_re_runs(
    faulty: FaultyPlatform, project: Path, quick_retries: None
) -> None:
    # One conversation's re-run holds back only that conversation.
    blueprint = write_project(project, MODEL_URL)
    token = (await faulty.register("faulty"))["dev_token"]
    slow, other = await faulty.conversation(IDENTITY), await faulty.conversation(IDENTITY)
    faulty.inject(Fault("POST", r"/internal/v1/conversation/turns", status=503, times=4))
    async with running_buddy(faulty, blueprint, FunctionModel(echo), token):
        await faulty.say(slow["id"], "甲")
        await faulty.say(other["id"], "乙")
        await faulty.wait_acked(IDENTITY)
    assert await buddy_said(faulty, other["id"]) == ["收到 乙"]
    assert await buddy_said(faulty, slow["id"]) == ["收到 甲"]
