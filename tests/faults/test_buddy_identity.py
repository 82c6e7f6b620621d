"""`BUDDY_ID`: the runtime runs as the buddy it names, or not at all (the contract reads
`BUDDY_ID` and `BUDDY_TOKEN`; a token of another buddy used to run silently as that one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from buddy.errors import PlatformError
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.runtime.server import Buddy, BuddyServer
from buddy.testing import TestModel
from buddy.testing.local import LocalPlatform
from tests.faults.conftest import IDENTITY, buddy_run, buddy_said, write_project

pytestmark = pytest.mark.anyio

MODEL_URL = "http://127.0.0.1:9/v1"  # never asked


async def _serve(platform: LocalPlatform, project: Path, token: str, buddy_id: str) -> BuddyServer:
    blueprint = write_project(project, MODEL_URL)
    client = HttpPlatformClient(platform.url, token, backoff=Backoff(0.05, 0.5))
    return BuddyServer(Buddy(blueprint, client, TestModel(["在的。"])), buddy_id=buddy_id)


@pytest.mark.parametrize("buddy_id", ["faulty", "faulty-dev"])
async def test_the_buddys_own_id_runs(
    platform: LocalPlatform, project: Path, buddy_id: str
) -> None:
    token = (await platform.register("faulty"))["dev_token"]  # acts as faulty-dev
    conv = await platform.conversation(IDENTITY)
    server = await _serve(platform, project, token, buddy_id)
    task = asyncio.create_task(server.run())
    try:
        await platform.wait_acked(IDENTITY, await platform.say(conv["id"], "在吗"))
    finally:
        await server.stop()
        task.cancel()
    assert await buddy_said(platform, conv["id"]) == ["在的。"]


async def test_another_buddys_token_is_refused_before_any_turn(
    platform: LocalPlatform, project: Path
) -> None:
    token = (await platform.register("faulty"))["dev_token"]
    conv = await platform.conversation(IDENTITY)
    await platform.say(conv["id"], "在吗")  # waiting when the buddy connects
    server = await _serve(platform, project, token, "someone-else")
    with pytest.raises(PlatformError) as caught:
        await asyncio.wait_for(server.run(), 20)
    await server.stop()
    message = str(caught.value)
    assert "'someone-else'" in message and "'faulty-dev'" in message
    assert await buddy_said(platform, conv["id"]) == []


async def test_the_check_needs_no_event(platform: LocalPlatform, project: Path) -> None:
    token = (await platform.register("faulty"))["dev_token"]
    server = await _serve(platform, project, token, "someone-else")
    with pytest.raises(PlatformError, match="BUDDY_ID is 'someone-else'"):
        await asyncio.wait_for(server.run(), 20)
    await server.stop()


async def test_buddy_run_with_another_buddys_id_exits_1_naming_both(
    platform: LocalPlatform, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(project, MODEL_URL)
    token = (await platform.register("faulty"))["dev_token"]
    monkeypatch.setenv("BUDDY_ID", "someone-else")
    async with buddy_run(project, platform, token) as process:
        assert await process.exit_code() == 1
    assert process.logged("BUDDY_ID is 'someone-else'")
    assert process.logged("'faulty-dev'")
