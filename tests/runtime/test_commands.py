"""`buddy chat` and `buddy run` as processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from buddy.testing.local import LocalPlatform
from tests.conftest import REPO

pytestmark = pytest.mark.anyio


def test_scripted_chat_with_the_offline_model() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "chat", "manifests/aunt-tu", "--model", "offline"],
        input="你好\n/call resource_list {}\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "[离线模型] 你说的是：你好" in result.stdout
    assert "recipes/hongshao-rou.md" in result.stdout
    assert "→ resource_list {}" in result.stdout


def test_chat_answers_a_question_card_by_number() -> None:
    script = '/call ask_question {"question": "几个人？", "options": ["一个", "两个"]}\n2\n'
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "chat", "manifests/aunt-tu", "--model", "offline"],
        input=script,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "  2) 两个" in result.stdout
    assert "你说的是：两个" in result.stdout


def test_chat_refuses_an_invalid_manifest(tmp_path: object) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "chat", "manifests/aunt-tu", "--model", "nosuch:x"],
        input="",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "unknown model provider" in result.stderr


async def _start(platform: LocalPlatform, token: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "BUDDY_TOKEN": token,
        "BUDDY_PLATFORM_URL": platform.url,
        "BUDDY_PROFILE": "ci",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "buddy",
        "run",
        "manifests/cardio",
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _until_connected(platform: LocalPlatform, conversation_id: str) -> None:
    event = await platform.say(conversation_id, "在吗")
    await platform.wait_acked("cardio-dev", event, timeout=60)


async def test_run_answers_then_stops_on_sigterm_and_is_superseded() -> None:
    async with LocalPlatform() as platform:
        tokens = await platform.register("cardio")
        conv = await platform.conversation("cardio-dev")
        first = await _start(platform, tokens["dev_token"])
        await _until_connected(platform, conv["id"])
        said = [
            m["body"]["text"]
            for m in await platform.transcript(conv["id"])
            if m["sender"] == "buddy"
        ]
        assert said == ["(test model reply)"]
        second = await _start(platform, tokens["dev_token"])
        assert await asyncio.wait_for(first.wait(), 60) == 3  # superseded
        assert first.stderr is not None
        assert "superseded" in (await first.stderr.read()).decode()
        event = await platform.say(conv["id"], "还在吗")
        await platform.wait_acked("cardio-dev", event, timeout=60)
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 60) == 0
