"""kill -9 of the platform process in the middle of a turn, restarted on the same SQLite file."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from buddy.models.base import ModelRequest, ModelResponse
from buddy.testing import FunctionModel, call
from buddy.testing.local import running_buddy
from tests.faults.conftest import (
    IDENTITY,
    PlatformProcess,
    buddy_said,
    memory,
    until,
    write_project,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("back_before_commit", [True, False], ids=["back-in-time", "commit-failed"])
async def test_platform_killed_mid_turn_and_restarted_shows_the_reply_once(
    tmp_path: Path,
    project: Path,
    quick_retries: None,
    caplog: pytest.LogCaptureFixture,
    back_before_commit: bool,
) -> None:
    """kill -9 of the platform mid-turn, restarted: acked write kept, committed once, one reply."""
    blueprint = write_project(project, "http://127.0.0.1:9")
    thinking = asyncio.Event()
    go_on = asyncio.Event()
    replies = 0

    async def model(request: ModelRequest) -> ModelResponse:
        nonlocal replies
        if request.messages[-1].role == "user":
            return ModelResponse(tool_calls=(call("remember", {"topic": "过敏", "text": "花生"}),))
        thinking.set()
        await go_on.wait()
        replies += 1
        return ModelResponse(text=f"记住了，你对花生过敏。#{replies}")

    async with PlatformProcess(tmp_path / "platform.db") as platform:
        token = (await platform.register("faulty"))["dev_token"]
        conv = await platform.conversation(IDENTITY)
        with caplog.at_level(logging.WARNING, logger="buddy.runtime"):
            async with running_buddy(platform, blueprint, FunctionModel(model), token):
                event = await platform.say(conv["id"], "记一下：我对花生过敏")
                await asyncio.wait_for(thinking.wait(), 10)
                await platform.kill()
                if back_before_commit:
                    await platform.start()
                    go_on.set()
                else:
                    go_on.set()
                    await until(lambda: "committing the turn" in caplog.text, "a failed commit")
                    await platform.start()
                await platform.wait_acked(IDENTITY, event)
        said = await buddy_said(platform, conv["id"])
        assert len(said) == 1 and said[0].startswith("记住了，你对花生过敏。"), said
        turns = await platform.turns(conv["id"])
        assert [(t["event_id"], t["reply"]) for t in turns] == [(event, said[0])]
        assert await memory(platform, token, conv["id"]) == {"过敏": "花生"}
