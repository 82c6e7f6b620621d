"""The HTTP client and the `conversation` object, against the dev platform."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import buddy
from buddy.capabilities.resources.conversation import Resources
from buddy.errors import PlatformError, ResourceNotFoundError
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.platform.conversation import Conversation
from tests.conftest import REPO
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio


def _client(dev: Dev, token: str | None = None) -> HttpPlatformClient:
    return HttpPlatformClient(dev.url, token or dev.token, http=dev.http)


async def test_platform_errors_carry_status_and_reason(dev: Dev) -> None:
    conv = await dev.conversation()
    client = _client(dev)
    with pytest.raises(PlatformError) as caught:
        await client.commit_turn(conv["id"], {"event_id": "evt_nope"})
    assert caught.value.status == 404
    assert "evt_nope" in caught.value.reason
    assert await client.get_summary(conv["id"]) is None
    with pytest.raises(PlatformError) as unauthorized:
        await _client(dev, "wrong").conversation_info(conv["id"])
    assert unauthorized.value.status == 401


async def test_unreachable_platform_is_a_platform_error() -> None:
    client = HttpPlatformClient("http://127.0.0.1:9", "t", timeout=0.5)
    with pytest.raises(PlatformError) as caught:
        await client.conversation_info("c")
    assert caught.value.status == 0
    assert "unreachable" in caught.value.reason
    await client.close()


async def test_invalid_json_answer_is_a_platform_error() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"{not json"))
    async with httpx.AsyncClient(transport=transport) as http:
        client = HttpPlatformClient("http://p", "t", http=http)
        with pytest.raises(PlatformError, match="invalid JSON"):
            await client.conversation_info("c")


async def test_summary_and_turns_through_the_client(dev: Dev) -> None:
    conv = await dev.conversation()
    client = _client(dev)
    await client.put_summary(conv["id"], "之前聊过", 1.0)
    summary = await client.get_summary(conv["id"])
    assert summary is not None
    assert summary["text"] == "之前聊过"
    assert await client.turns(conv["id"]) == []
    info = await client.conversation_info(conv["id"])
    assert info["kind"] == "private"


def test_backoff_is_jittered_exponential_and_capped() -> None:
    import random

    backoff = Backoff(base=0.5, cap=4.0, rng=random.Random(7))
    delays = [backoff.next() for _ in range(8)]
    bounds = [min(4.0, 0.5 * 2**i) for i in range(8)]
    assert all(0 <= d <= b for d, b in zip(delays, bounds, strict=True))
    assert len(set(delays)) == len(delays)
    backoff.reset()
    assert backoff.next() <= 0.5


def test_resources_are_read_once_with_the_skip_rules(tmp_path: Path) -> None:
    blueprint = buddy.load(REPO / "manifests" / "aunt-tu")
    resources = Resources.load(blueprint.sections["resources"])
    assert resources.list() == sorted(resources.list())
    assert "recipes/hongshao-rou.md" in resources.list()
    assert "红烧肉" in resources.read("recipes/hongshao-rou.md")
    with pytest.raises(ResourceNotFoundError):
        resources.read("recipes/none.md")
    with pytest.raises(ResourceNotFoundError):
        resources.read("/recipes/hongshao-rou.md")  # exactly as listed, nothing else


async def test_conversation_object_binds_the_capabilities(dev: Dev) -> None:
    conv = await dev.conversation("group")
    conversation = Conversation(_client(dev), conv["id"], "group")
    assert (conversation.id, conversation.kind) == (conv["id"], "group")
    assert conversation.resource.list() == []
    assert conversation.proactive.is_running() is False
    conversation.proactive.running = True
    assert conversation.proactive.is_running() is True


async def test_a_refusal_carries_the_platforms_code() -> None:
    from buddy.testing.local import LocalPlatform

    async with LocalPlatform() as platform:
        tokens = await platform.register("coded")
        client = HttpPlatformClient(platform.url, tokens["token"])
        try:
            with pytest.raises(PlatformError) as refused:
                await client.conversation_info("c_nowhere")
        finally:
            await client.close()
        with pytest.raises(PlatformError) as dev:  # LocalPlatform's own calls too
            await platform.dev(
                "PUT",
                "/grants",
                json={
                    "identity": "coded",
                    "member_id": "m_x",
                    "dataset": "health.sleep",
                    "granted": True,
                },
            )
    assert (refused.value.status, refused.value.code) == (404, "conversation_not_found")
    assert (dev.value.status, dev.value.code) == (404, "member_not_found")
    assert dev.value.reason
