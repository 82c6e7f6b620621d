"""Event types are open: the platform may deliver a type no capability of this buddy turns
into a turn (a newer platform, a capability not installed). Such an event is warned about
once per type, acknowledged so that it is never delivered again, and skipped — the buddy
keeps running, and a restart finds nothing left to choke on."""

from __future__ import annotations

import logging

import pytest

import buddy
from buddy.testing import TestModel
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import MINIMAL, Write

pytestmark = pytest.mark.anyio

IDENTITY = "open-dev"


def _warnings(caplog: pytest.LogCaptureFixture, word: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and word in r.getMessage()
    ]


async def test_an_unknown_event_type_is_warned_once_acknowledged_and_skipped(
    platform: LocalPlatform, write: Write, caplog: pytest.LogCaptureFixture
) -> None:
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    token = (await platform.register("open"))["dev_token"]
    conv = (await platform.conversation(IDENTITY))["id"]
    # One is waiting before the buddy connects: the event that used to stop every start.
    await platform.emit(IDENTITY, "mood_ping", conv, {"mood": "sunny"})
    model = TestModel(["好。"])
    with caplog.at_level(logging.WARNING):
        async with running_buddy(platform, blueprint, model, token) as server:
            await platform.emit(IDENTITY, "mood_ping", conv, {"mood": "rainy"})
            await platform.emit(IDENTITY, "tide_report", None, {"height": 2})
            await platform.say(conv, "你好")
            await platform.wait_acked(IDENTITY, timeout=10)
            assert server._reader is not None and not server._reader.done()  # still running
        # Restarted: nothing is delivered again (every event was acknowledged).
        again = TestModel([])
        async with running_buddy(platform, blueprint, again, token):
            await platform.wait_acked(IDENTITY, timeout=10)
    assert all(e["acked_at"] is not None for e in await platform.events(IDENTITY))
    assert len(_warnings(caplog, "'mood_ping'")) == 1  # once per type, not per event
    assert len(_warnings(caplog, "'tide_report'")) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # Only the message became a turn.
    assert [r.messages[-1].content for r in model.requests] == ["你好"]
    assert again.requests == []
    assert [t["event_type"] for t in await platform.turns(conv)] == ["message"]
    said = [m["body"]["text"] for m in await platform.transcript(conv) if m["sender"] == "buddy"]
    assert said == ["好。"]


async def test_the_client_yields_any_type_and_skips_a_malformed_event(
    platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    token = (await platform.register("open"))["dev_token"]
    conv = (await platform.conversation(IDENTITY))["id"]
    broken = await platform.emit(IDENTITY, "Mood Ping!", conv, {"text": "私事"})
    new = await platform.emit(IDENTITY, "mood_ping", conv, {"mood": "sunny"})
    said = await platform.say(conv, "你好")
    client = platform.buddy_client(token)
    got: list[tuple[str, str]] = []
    with caplog.at_level(logging.ERROR, "buddy.platform.client"):
        async for event in client.events():
            got.append((event.id, event.type))
            await client.ack(event.id)
            if len(got) == 2:
                break
        await platform.wait_acked(IDENTITY, timeout=10)
    await client.close()
    # The types it knows nothing of are the runtime's to judge; a malformed event is no
    # event at all: acknowledged (never delivered again) and logged without its payload.
    assert got == [(new, "mood_ping"), (said, "message")]
    (error,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert broken in error and "type" in error and "私事" not in error


async def test_an_event_of_a_known_type_with_no_conversation_is_acknowledged_and_skipped(
    platform: LocalPlatform, write: Write, caplog: pytest.LogCaptureFixture
) -> None:
    """A turn needs a conversation: a ``message`` the platform sends with none can never be
    handled, so it is warned about, acknowledged — not delivered again on every
    connection — and skipped."""
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    token = (await platform.register("open"))["dev_token"]
    conv = (await platform.conversation(IDENTITY))["id"]
    await platform.emit(IDENTITY, "message", None, {"text": "没有会话"})
    model = TestModel(["好。"])
    with caplog.at_level(logging.WARNING):
        async with running_buddy(platform, blueprint, model, token):
            await platform.say(conv, "你好")
            await platform.wait_acked(IDENTITY, timeout=10)
    assert all(e["acked_at"] is not None for e in await platform.events(IDENTITY))
    assert len(_warnings(caplog, "no conversation")) == 1
    assert [r.messages[-1].content for r in model.requests] == ["你好"]
