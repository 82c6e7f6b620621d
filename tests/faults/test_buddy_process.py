"""`buddy run` stopped in the middle of a turn: kill -9, SIGTERM, a newer process."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from buddy.testing.local import LocalPlatform
from tests.faults.conftest import (
    IDENTITY,
    Provider,
    buddy_run,
    buddy_said,
    says,
    unacknowledged,
    until,
    write_project,
)

pytestmark = pytest.mark.anyio


async def _thinking(
    platform: LocalPlatform, project: Path, provider: Provider
) -> tuple[str, str, str]:
    """A registered buddy, a user message, and the model holding its answer: the token,
    the conversation id and the event id."""
    write_project(project, provider.url)
    token = (await platform.register("faulty"))["dev_token"]
    conv = await platform.conversation(IDENTITY)
    provider.hold()
    event = await platform.say(conv["id"], "你好")
    return token, str(conv["id"]), event


async def test_buddy_killed_mid_turn_is_answered_once_by_the_next_process(
    platform: LocalPlatform, project: Path, provider: Provider
) -> None:
    """kill -9 of `buddy run` mid-turn: the next `buddy run` answers the event; one reply shown."""
    token, conv, event = await _thinking(platform, project, provider)
    provider.answer(says("你好呀。"), says("你好呀。"))
    async with buddy_run(project, platform, token) as first:
        await until(lambda: len(provider.arrived) == 1, "the model asked")
        await first.kill()
    assert await unacknowledged(platform) == [event]
    async with buddy_run(project, platform, token) as second:
        await until(lambda: len(provider.arrived) == 2, "the model asked again")
        provider.release()
        await platform.wait_acked(IDENTITY, event)
        second.process.send_signal(signal.SIGTERM)
        assert await second.exit_code() == 0
    assert await buddy_said(platform, conv) == ["你好呀。"]
    assert [t["event_id"] for t in await platform.turns(conv)] == [event]


async def test_sigterm_during_a_turn_lets_it_finish_and_commit_then_exits_0(
    platform: LocalPlatform, project: Path, provider: Provider
) -> None:
    """SIGTERM mid-turn: the turn finishes, is committed and acknowledged once; exit code 0."""
    token, conv, event = await _thinking(platform, project, provider)
    provider.answer(says("说完这句就走。"))
    async with buddy_run(project, platform, token) as running:
        await until(lambda: len(provider.arrived) == 1, "the model asked")
        running.process.send_signal(signal.SIGTERM)
        await until(lambda: running.logged("SIGTERM: finishing in-flight turns"), "SIGTERM seen")
        provider.release()
        assert await running.exit_code() == 0
    assert await unacknowledged(platform) == []
    assert await buddy_said(platform, conv) == ["说完这句就走。"]
    assert [t["event_id"] for t in await platform.turns(conv)] == [event]


async def test_sigterm_with_a_turn_beyond_the_deadline_leaves_it_to_the_next_process(
    platform: LocalPlatform, project: Path, provider: Provider
) -> None:
    """SIGTERM, turn past --shutdown-deadline: cancelled, exit 0; the next process answers once."""
    token, conv, event = await _thinking(platform, project, provider)
    provider.answer(says("我回来了。"), says("我回来了。"))
    async with buddy_run(project, platform, token, "--shutdown-deadline", "0.5") as running:
        await until(lambda: len(provider.arrived) == 1, "the model asked")
        running.process.send_signal(signal.SIGTERM)
        assert await running.exit_code() == 0
    assert running.logged(
        "ERROR buddy.runtime: a turn did not finish within 0.5s of shutdown; cancelled"
    )
    assert await unacknowledged(platform) == [event]
    assert await buddy_said(platform, conv) == []
    async with buddy_run(project, platform, token):
        await until(lambda: len(provider.arrived) == 2, "the model asked again")
        provider.release()
        await platform.wait_acked(IDENTITY, event)
    assert await buddy_said(platform, conv) == ["我回来了。"]


async def test_superseded_during_a_turn_commits_it_once_and_exits_3(
    platform: LocalPlatform, project: Path, provider: Provider
) -> None:
    """A newer `buddy run` mid-turn: the older logs it, finishes, exits 3; one reply shown."""
    token, conv, event = await _thinking(platform, project, provider)
    provider.answer(says("只说一次。"), says("只说一次。"))
    async with buddy_run(project, platform, token) as first:
        await until(lambda: len(provider.arrived) == 1, "the model asked")
        async with buddy_run(project, platform, token) as second:
            await until(lambda: first.logged("superseded"), "the first one superseded")
            await until(lambda: len(provider.arrived) == 2, "the second one asked the model")
            provider.release()
            assert await first.exit_code() == 3
            await platform.wait_acked(IDENTITY, event)
            second.process.send_signal(signal.SIGTERM)
            assert await second.exit_code() == 0
    assert first.logged("ERROR buddy.platform.client: buddy faulty-dev stops: superseded:")
    assert await buddy_said(platform, conv) == ["只说一次。"]
    assert [t["event_id"] for t in await platform.turns(conv)] == [event]
