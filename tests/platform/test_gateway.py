"""The gateway over real sockets: at-least-once delivery, dedupe, reconnect, supersede."""

from __future__ import annotations

import asyncio
import logging
import random
import sys

import pytest

from buddy.errors import PlatformError, SupersededError
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.platform.protocol.events import Event
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio


async def _say(live: Dev, conversation_id: str, text: str) -> str:
    response = await live.http.post(
        f"/dev/conversations/{conversation_id}/messages", headers=live.admin, json={"text": text}
    )
    assert response.status_code == 201, response.text
    event_id: str = response.json()["event_id"]
    return event_id


async def _take(stream: object, count: int) -> list[Event]:
    got: list[Event] = []
    async for event in stream:  # type: ignore[attr-defined]
        got.append(event)
        if len(got) == count:
            break
    return got


def _client(live: Dev, token: str | None = None) -> HttpPlatformClient:
    return HttpPlatformClient(
        live.url, token or live.token, backoff=Backoff(0.01, 0.05, random.Random(1))
    )


async def test_events_arrive_in_order_and_acks_stick(live: Dev) -> None:
    conv = await live.conversation()
    sent = [await _say(live, conv["id"], f"m{i}") for i in range(5)]
    client = _client(live)
    stream = client.events()
    events = await asyncio.wait_for(_take(stream, 5), 10)
    assert [e.id for e in events] == sent
    assert [e.payload["text"] for e in events] == [f"m{i}" for i in range(5)]
    for event in events[:3]:
        await client.ack(event.id)
    await stream.aclose()  # type: ignore[attr-defined]
    await client.close()
    await asyncio.sleep(0.1)
    # A new process gets exactly the unacknowledged ones again.
    again = _client(live)
    redelivered = await asyncio.wait_for(_take(again.events(), 2), 10)
    assert [e.id for e in redelivered] == sent[3:]
    await again.close()


async def test_drop_mid_stream_loses_nothing_and_duplicates_nothing(live: Dev) -> None:
    conv = await live.conversation()
    client = _client(live)
    seen: list[str] = []
    stream = client.events()
    total = 40

    async def consume() -> None:
        async for event in stream:
            seen.append(event.payload["text"])
            if len(seen) % 7 == 3 and client._socket is not None:
                # Drop the connection before acknowledging this event: the acknowledgement
                # is lost or sent after the reconnect, and the redelivered copy is dropped.
                client._socket.transport.abort()
            await client.ack(event.id)
            if len(seen) == total:
                return

    consumer = asyncio.create_task(consume())
    for i in range(total):
        await _say(live, conv["id"], f"n{i}")
        if i % 10 == 0:
            await asyncio.sleep(0.02)
    await asyncio.wait_for(consumer, 20)
    assert seen == [f"n{i}" for i in range(total)]
    assert client.connections >= 5  # it really was dropped and reconnected
    await asyncio.sleep(0.2)
    events = (
        await live.http.get("/dev/events", headers=live.admin, params={"identity": "demo"})
    ).json()
    assert all(e["acked_at"] is not None for e in events)
    await client.close()


async def test_supersede_stops_the_older_connection(
    live: Dev, caplog: pytest.LogCaptureFixture
) -> None:
    conv = await live.conversation()
    first = _client(live)
    first_stream = first.events()
    waiting = asyncio.create_task(_take(first_stream, 1))
    await asyncio.sleep(0.2)
    second = _client(live)
    with caplog.at_level(logging.ERROR, logger="buddy.platform.client"):
        receiving = asyncio.create_task(_take(second.events(), 1))
        with pytest.raises(SupersededError):
            await asyncio.wait_for(waiting, 10)
    assert any("not reconnecting" in r.getMessage() for r in caplog.records)
    await _say(live, conv["id"], "hello")
    (event,) = await asyncio.wait_for(receiving, 10)
    assert event.payload["text"] == "hello"
    await first.close()
    await second.close()


async def test_dev_and_production_identities_are_separate_streams(live: Dev) -> None:
    prod = await live.conversation()
    mine = await live.conversation(dev=True)
    await _say(live, prod["id"], "prod")
    await _say(live, mine["id"], "dev")
    dev_client = _client(live, live.dev_token)
    (event,) = await asyncio.wait_for(_take(dev_client.events(), 1), 10)
    assert event.payload["text"] == "dev"
    assert dev_client.identity == "demo-dev"
    await dev_client.close()


async def test_unknown_token_is_refused(live: Dev) -> None:
    client = _client(live, "nope")
    with pytest.raises(PlatformError) as caught:
        await asyncio.wait_for(_take(client.events(), 1), 10)
    assert caught.value.status == 401
    await client.close()


CONSUMER = """
import asyncio, sys
from buddy.errors import SupersededError
from buddy.platform.client import HttpPlatformClient

async def main() -> int:
    client = HttpPlatformClient(sys.argv[1], sys.argv[2])
    try:
        async for event in client.events():
            await client.ack(event.id)
            print("event", event.id, flush=True)
    except SupersededError:
        return 3
    finally:
        await client.close()
    return 0

sys.exit(asyncio.run(main()))
"""


async def test_a_superseded_process_logs_the_cause_and_exits(live: Dev) -> None:
    conv = await live.conversation()
    old = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CONSUMER,
        live.url,
        live.token,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await _say(live, conv["id"], "first")
    assert old.stdout is not None
    # The consumer prints after its ack returns: an event still unacked when
    # the newer process connects is redelivered to it, as the contract says.
    line = await asyncio.wait_for(old.stdout.readline(), 20)
    assert line.startswith(b"event ")
    newer = _client(live)
    receiving = asyncio.create_task(_take(newer.events(), 1))
    code = await asyncio.wait_for(old.wait(), 20)
    assert old.stderr is not None
    stderr = (await old.stderr.read()).decode()
    assert code == 3
    assert "superseded" in stderr
    assert "not reconnecting" in stderr
    await _say(live, conv["id"], "second")
    (event,) = await asyncio.wait_for(receiving, 10)
    assert event.payload["text"] == "second"
    await newer.close()
