"""Automatic memory's extractor failing as a real provider fails — timing out, answering
5xx, answering what is not JSON, inventing relations and slots — and the process dying
mid-extraction: the conversation goes on as if nothing happened, no fact is half
applied, no delta twice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion.engine import STATE_KEY, Companion
from buddy.errors import PlatformError
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.testing import TestModel
from buddy.testing.local import LocalPlatform, running_buddy
from tests.faults.conftest import API_KEY, Provider, fails
from tests.models.conftest import Scripted

pytestmark = pytest.mark.anyio

IDENTITY = "rememberer-dev"
MANIFEST = """\
name: rememberer
model: test
persona:
  prompt: '记得：{{{{ memory.card }}}}'
memory:
  auto: true
  model:
    provider: openai-compatible
    name: extractor
    base_url: {url}/v1
  relations: [allergy, debt]
  wait_ms: {wait_ms}
"""
PEANUT = {"subject": "user", "item": "花生", "kind": "过敏"}
DEBT = {"debtor": "user", "creditor": "buddy", "item": "饭", "quantity": 1, "unit": "顿"}


def answers(content: str) -> Scripted:
    """A chat completion (one piece) whose message is ``content``."""
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    return Scripted(
        [json.dumps(body, ensure_ascii=False).encode()],
        headers={"content-type": "application/json"},
    )


def facts(*found: dict[str, Any]) -> str:
    return json.dumps({"facts": list(found)}, ensure_ascii=False)


async def _conversation(
    platform: LocalPlatform,
    tmp_path: Path,
    provider: Provider,
    monkeypatch: pytest.MonkeyPatch,
    wait_ms: int = 300,
) -> tuple[buddy.Blueprint, str, str]:
    for name, value in API_KEY.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "buddy.yaml").write_text(
        MANIFEST.format(url=provider.url, wait_ms=wait_ms), encoding="utf-8"
    )
    blueprint = buddy.load(tmp_path)
    token = (await platform.register("rememberer"))["dev_token"]
    conv = await platform.conversation(IDENTITY)
    return blueprint, token, str(conv["id"])


async def _memory(platform: LocalPlatform, token: str, cid: str) -> dict[str, str]:
    response = await platform.http.get(
        "/internal/v1/memory",
        headers={"Authorization": f"Bearer {token}", "X-Conversation-Id": cid},
    )
    return {e["key"]: e["text"] for e in response.json()["entries"]}


async def _say(
    platform: LocalPlatform, blueprint: buddy.Blueprint, token: str, cid: str, texts: list[str]
) -> tuple[TestModel, Companion]:
    model = TestModel([f"回复{i}" for i in range(len(texts))])
    async with running_buddy(platform, blueprint, model, token) as server:
        (layer,) = server.buddy.layers
        assert isinstance(layer, Companion)
        for text in texts:
            event = await platform.say(cid, text)
            await platform.wait_acked(IDENTITY, event, timeout=20)
        await asyncio.wait_for(layer.settled(), 30)
    return model, layer


@pytest.mark.parametrize(
    ("answer", "counted"),
    [
        ([fails(503, retry_after="0.01")] * 3, "failures"),
        ([answers("好的，我记住了！")], "dropped"),
        ([answers(facts({"relation": "salary", "slots": {"amount": 10000}}))], "dropped"),
        ([answers(facts({"relation": "allergy", "slots": {**PEANUT, "secret": "x"}}))], "dropped"),
        (
            [
                answers(
                    facts(
                        {
                            "relation": "debt",
                            "slots": {**DEBT, "debtor": "buddy", "creditor": "buddy"},
                        }
                    )
                )
            ],
            "dropped",
        ),
    ],
    ids=["5xx", "not-json", "invented-relation", "invented-slot", "not-a-writer"],
)
async def test_a_bad_extraction_keeps_nothing_and_the_conversation_goes_on(
    platform: LocalPlatform,
    tmp_path: Path,
    provider: Provider,
    monkeypatch: pytest.MonkeyPatch,
    answer: list[Scripted],
    counted: str,
) -> None:
    blueprint, token, cid = await _conversation(platform, tmp_path, provider, monkeypatch)
    provider.answer(*answer, answers(facts({"relation": "allergy", "slots": PEANUT})))
    _, layer = await _say(
        platform, blueprint, token, cid, ["跟你说个事儿", "我对花生过敏，海鲜也不行"]
    )
    assert [t["reply"] for t in await platform.turns(cid)] == ["回复0", "回复1"]
    assert layer.jobs.failures + layer.dropped == 1, counted
    stored = await _memory(platform, token, cid)
    # the next message's extraction ran as usual: only its fact is kept
    assert [k.split(":")[1] for k in stored if k != STATE_KEY] == ["allergy"]


async def test_an_extractor_that_never_answers_never_holds_a_reply(
    platform: LocalPlatform, tmp_path: Path, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    blueprint, token, cid = await _conversation(platform, tmp_path, provider, monkeypatch)
    provider.answer(answers(facts({"relation": "allergy", "slots": PEANUT})))
    provider.hold()  # every request waits
    model = TestModel(["回复0"])
    async with running_buddy(platform, blueprint, model, token) as server:
        (layer,) = server.buddy.layers
        assert isinstance(layer, Companion)
        layer.jobs.limit = 1.0
        started = asyncio.get_running_loop().time()
        event = await platform.say(cid, "花生我是一点都不能碰")  # no pattern: the model
        await platform.wait_acked(IDENTITY, event, timeout=20)
        waited = asyncio.get_running_loop().time() - started
        assert waited < 5  # the reply waited wait_ms (0.3 s), not the extractor
        await asyncio.wait_for(layer.settled(), 10)
        assert layer.jobs.failures == 1
    provider.release()
    assert [t["reply"] for t in await platform.turns(cid)] == ["回复0"]
    assert await _memory(platform, token, cid) == {}


class Dying(HttpPlatformClient):
    """A client whose process "dies" (the task is cancelled) on the memory write after
    ``survive`` of them; with ``batches=False`` its platform has no batches (405), so
    every entry is a write of its own."""

    def __init__(self, *args: Any, survive: int, batches: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.survive = survive
        self.batches = batches
        self.died = asyncio.Event()

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        batch = (method, path) == ("POST", "memory")
        if batch and not self.batches:
            raise PlatformError(405, "POST is not allowed here", code="method_not_allowed")
        if batch or (method == "PUT" and path.startswith("memory/")):
            if self.survive == 0:
                self.died.set()
                await asyncio.Event().wait()  # never returns: the process is gone
            self.survive -= 1
        return await super().request(method, path, **kwargs)


@pytest.mark.parametrize(
    ("batches", "survive"), [(True, 0), (False, 0), (False, 1)], ids=["batch", "one-0", "one-1"]
)
async def test_a_process_killed_mid_extraction_leaves_no_half_fact_and_no_double_delta(
    platform: LocalPlatform,
    tmp_path: Path,
    provider: Provider,
    monkeypatch: pytest.MonkeyPatch,
    batches: bool,
    survive: int,
) -> None:
    """The first process dies before its one batch, or — against a platform without
    batches — before its first write (0) or between the two facts (1): its reply may be
    committed already, but a turn is acknowledged only once its facts are stored — so the
    next process gets the event again and applies what was not applied, once."""
    blueprint, token, cid = await _conversation(
        platform, tmp_path, provider, monkeypatch, wait_ms=3000
    )
    both = facts({"relation": "allergy", "slots": PEANUT}, {"relation": "debt", "slots": DEBT})
    provider.answer(answers(both), answers(both))
    client = Dying(
        platform.url, token, backoff=Backoff(0.05, 0.5), survive=survive, batches=batches
    )
    first = TestModel(["回复"])
    async with running_buddy(platform, blueprint, first, token, client=client) as server:
        (layer,) = server.buddy.layers
        assert isinstance(layer, Companion)
        event = await platform.say(cid, "我对花生过敏，上次那顿饭算我欠你的")
        await asyncio.wait_for(client.died.wait(), 20)
        for session in server.sessions.values():  # killed: the turn dies with it
            if session.worker is not None:
                session.worker.cancel()
        await layer.close()
    assert len(await platform.turns(cid)) <= 1  # committed once at most, not acknowledged
    for text in (await _memory(platform, token, cid)).values():
        assert json.loads(text)  # every entry there is whole
    model = TestModel(["回复"])
    async with running_buddy(platform, blueprint, model, token) as server:
        await platform.wait_acked(IDENTITY, event, timeout=20)
        await asyncio.wait_for(server.buddy.layers[0].settled(), 20)
    stored = await _memory(platform, token, cid)
    debts = [json.loads(t) for k, t in stored.items() if k.startswith("auto:debt:")]
    assert len(debts) == 1 and debts[0]["proposed"] == 1  # proposed once, for 1
    assert debts[0]["messages"] == [event]
    assert len([k for k in stored if k.startswith("auto:allergy:")]) == 1
    assert [t["event_id"] for t in await platform.turns(cid)] == [event]
