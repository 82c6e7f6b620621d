"""The dev platform in this process (``LocalPlatform(sockets=False)``, ``buddy test``'s
default): the same app and protocol as over loopback sockets — a turn, the refusal of
an unknown token, a supersede — and the examples' scenarios pass both ways."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.errors import PlatformError, SupersededError
from buddy.testing import TestModel
from buddy.testing.local import LocalPlatform, running_buddy
from buddy.testing.scenarios import read_suite, run_scenario
from tests.conftest import MINIMAL, REPO, Write

pytestmark = pytest.mark.anyio


async def test_a_turn_runs_through_the_in_process_gateway(write: Write) -> None:
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    async with LocalPlatform(sockets=False) as platform:
        assert platform.url == "http://platform"
        tokens = await platform.register("case")
        conv = await platform.conversation("case-dev")
        async with running_buddy(platform, blueprint, TestModel(["嗨"]), tokens["dev_token"]):
            event = await platform.say(conv["id"], "你好")
            await platform.wait_acked("case-dev", event)
        (turn,) = await platform.turns(conv["id"])
        assert (turn["event_id"], turn["reply"]) == (event, "嗨")


async def test_an_unknown_token_is_refused_and_a_second_connection_supersedes() -> None:
    async with LocalPlatform(sockets=False) as platform:
        with pytest.raises(PlatformError) as refused:
            async for _ in platform.buddy_client("tok_nobody").events():
                pass
        assert refused.value.status == 401
        tokens = await platform.register("case")
        first = platform.buddy_client(tokens["dev_token"])
        second = platform.buddy_client(tokens["dev_token"])

        async def listen() -> None:
            async for _ in first.events():
                pass

        task = asyncio.create_task(listen())
        while not first.connections:
            await asyncio.sleep(0.01)

        async def take_over() -> None:
            async for _ in second.events():
                pass

        reader = asyncio.create_task(take_over())
        with pytest.raises(SupersededError):
            await asyncio.wait_for(task, 10)
        reader.cancel()
        await first.close()
        await second.close()


@pytest.mark.parametrize("sockets", [False, True], ids=["in-process", "sockets"])
async def test_the_examples_scenarios_pass_both_ways(sockets: bool) -> None:
    blueprint = buddy.load(REPO / "manifests" / "xiaoman")
    suite = read_suite(REPO / "manifests" / "xiaoman" / "tests" / "companion.yaml", blueprint)
    for index in range(len(suite.scenarios)):
        result = await run_scenario(blueprint, suite, index, sockets=sockets)
        assert result.passed, [str(f) for f in result.failures]


def test_buddy_test_runs_in_process_by_default_and_over_sockets_on_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from buddy.cli.main import main

    monkeypatch.chdir(REPO)
    seen: list[bool] = []
    real = LocalPlatform.__init__

    def spy(self: LocalPlatform, *args: object, **kwargs: object) -> None:
        seen.append(bool(kwargs.get("sockets", True)))
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalPlatform, "__init__", spy)
    path = str(Path("manifests") / "xiaoman")
    assert main(["test", path, "-k", "叫我"]) == 0
    assert main(["test", path, "-k", "叫我", "--sockets"]) == 0
    assert seen == [False, True]
    assert capsys.readouterr().out.count("1 passed, 0 failed") == 2


class _Wrapped(LocalPlatform):
    """A platform whose app is wrapped (as fault tests do): its store is out of reach."""

    def app(self) -> Any:
        inner = super().app()

        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            await inner(scope, receive, send)

        return wrapped


@pytest.mark.parametrize(
    ("platform_type", "sockets", "polls"),
    [(LocalPlatform, False, False), (LocalPlatform, True, False), (_Wrapped, True, True)],
    ids=["in-process", "sockets", "wrapped"],
)
async def test_wait_acked_wakes_at_the_acknowledgement(
    write: Write,
    monkeypatch: pytest.MonkeyPatch,
    platform_type: type[LocalPlatform],
    sockets: bool,
    polls: bool,
) -> None:
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    async with platform_type(sockets=sockets) as platform:
        tokens = await platform.register("case")
        conv = await platform.conversation("case-dev")
        event = await platform.say(conv["id"], "你好")
        polled: list[str] = []
        real = platform.events

        async def events(identity: str) -> list[dict[str, Any]]:
            polled.append(identity)
            return await real(identity)

        monkeypatch.setattr(platform, "events", events)
        with pytest.raises(TimeoutError):  # no buddy runs: nothing acknowledges it
            await platform.wait_acked("case-dev", event, timeout=0.2)
        async with running_buddy(platform, blueprint, TestModel(["嗨"]), tokens["dev_token"]):
            await platform.wait_acked("case-dev", event)
        # A platform in this process is watched through its store's changes; one out of
        # reach through its events endpoint, every 20 ms.
        assert bool(polled) is polls
        assert [e["acked_at"] is not None for e in await real("case-dev")] == [True]
