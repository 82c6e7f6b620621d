"""How the companion layer keeps its memory on the platform: one save per message in one
batch applied whole, one entry at a time against a platform without batches (facts
before the state), and memory read back only when the revision an event carries says that
someone else wrote — the playground, an operator, a write whose revision is unknown."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion.engine import LORE_KEY, STATE_KEY, Companion
from buddy.errors import ToolError
from buddy.platform.api import path_segment
from buddy.runtime.state import TurnState
from buddy.runtime.turn import LocalEvent
from buddy.testing import TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import Write
from tests.runtime.test_companion import AUTO, _project, _stored, older_platform, said

pytestmark = pytest.mark.anyio

NICKNAME = "memory:\n  auto: true\n  relations: [nickname]\n"


def _layer(agent: buddy.Agent) -> Companion:
    (layer,) = agent.layers
    assert isinstance(layer, Companion)
    return layer


def recorded(agent: buddy.Agent, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every platform request the agent's buddy makes from now on, as (method, path)."""
    log: list[tuple[str, str]] = []
    real = agent.client.request

    async def request(method: str, path: str, **kwargs: Any) -> Any:
        log.append((method, path))
        return await real(method, path, **kwargs)

    monkeypatch.setattr(agent.client, "request", request)
    return log


async def _as_the_playground(agent: buddy.Agent, method: str, key: str, text: str = "") -> None:
    """A write of the buddy's memory from outside its process (the playground's page or an
    operator, with the buddy's token): not through the conversation's memory part."""
    platform = await agent.client.platform()
    pid = await agent.client.platform_id(agent.conversation.id)
    assert platform.client is not None
    body = {"text": text} if method == "PUT" else None
    await platform.client.request(method, f"memory/{path_segment(key)}", cid=pid, body=body)


async def test_a_message_is_one_save_and_no_read_while_only_this_process_wrote(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    extractor = TestModel([said(care=0.2), said(offence=0.3), said(), said()])
    async with buddy.Agent(
        buddy.load(_project(write, AUTO)), TestModel(default="嗯。"), layer_model=extractor
    ) as agent:
        log = recorded(agent, monkeypatch)
        for text in ("叫我小鱼", "你真烦", "鹤在哪", "叫我小美"):
            await agent.run(text)
        await agent.settled()
        layer = _layer(agent)
        assert layer.store.reads == 1  # the conversation's first read, when it came
        assert log.count(("GET", "memory")) == 1
        # memory, a character and lore: the fact, the state and lore's counters together
        assert log.count(("POST", "memory")) == 4
        assert [m for m, p in log if p.startswith("memory/")] == []
        stored = await _stored(agent)
        assert {STATE_KEY, LORE_KEY} <= set(stored)
        (key,) = [k for k in stored if k.startswith("auto:nickname:")]
        assert json.loads(stored[key])["value"] == "小美"
        assert json.loads(stored[STATE_KEY])["mood"]["anger"] > 0


@pytest.mark.parametrize("change", ["forget", "edit"])
async def test_a_change_made_elsewhere_is_read_back_by_the_next_message(
    write: Write, change: str
) -> None:
    path = _project(write, NICKNAME, character=False)
    model = TestModel(default="嗯。")
    async with buddy.Agent(buddy.load(path), model, layer_model=TestModel(default=said())) as agent:
        await agent.run("叫我小鱼")
        await agent.run("今天好累")
        layer = _layer(agent)
        assert layer.store.reads == 1
        assert model.requests[1].system == "记得：- 称呼：小鱼"
        (key,) = [k for k in await _stored(agent) if k.startswith("auto:nickname:")]
        if change == "forget":
            await _as_the_playground(agent, "DELETE", key)
        else:
            fact = json.loads((await _stored(agent))[key])
            edited = {**fact, "value": "阿鱼", "slots": {**fact["slots"], "value": "阿鱼"}}
            await _as_the_playground(agent, "PUT", key, json.dumps(edited, ensure_ascii=False))
        await agent.run("在吗")
        assert layer.store.reads == 2  # the revision moved: someone else wrote
        card = "记得：" if change == "forget" else "记得：- 称呼：阿鱼"
        assert model.requests[2].system == card
        await agent.run("还在吗")
        assert layer.store.reads == 2  # and then nobody else did


TOOLS = """\
tools:
  - name: remember
    uses: memory.write
    description: 记下一件事。
    parameters:
      type: object
      properties:
        topic: {type: string, pattern: "^[^\\\\s/]+$"}
        text: {type: string}
      required: [topic, text]
    key: "{{ topic }}"
    text: "{{ text }}"
    reply: "记下了。"
  - name: forget
    uses: memory.delete
    description: 忘掉一件事。
    parameters:
      type: object
      properties:
        topic: {type: string, pattern: "^[^\\\\s/]+$"}
      required: [topic]
    key: "{{ topic }}"
    reply: "忘了。"
"""


async def test_the_models_own_memory_tools_are_seen_by_the_next_message(write: Write) -> None:
    """A write of the model's (a key outside ``auto:``, its revision answered) changes
    nothing the layer keeps: no read. A delete answers no revision: the next message reads."""
    manifest = (
        f"name: c\nmodel: test\npersona:\n  prompt: '记得：{{{{ memory.card }}}}'\n{NICKNAME}"
    )
    path = write({"buddy.yaml": manifest + TOOLS})
    model = TestModel(
        [
            "好的小鱼。",
            call("remember", {"topic": "生日", "text": "5月3日"}),
            "记下了。",
            "嗯。",
            call("forget", {"topic": "生日"}),
            "忘了。",
            "嗯。",
        ]
    )
    async with buddy.Agent(buddy.load(path), model, layer_model=TestModel(default=said())) as agent:
        layer = _layer(agent)
        await agent.run("叫我小鱼")
        await agent.run("帮我记一下生日")
        assert (await _stored(agent))["生日"] == "5月3日"
        await agent.run("在吗")
        assert layer.store.reads == 1
        await agent.run("生日那条删了吧")
        await agent.run("在吗")
        assert layer.store.reads == 2
        assert "生日" not in await _stored(agent)
        assert model.requests[-1].system == "记得：- 称呼：小鱼"


async def test_an_auto_key_written_by_anyone_but_the_layer_is_read_back(write: Write) -> None:
    path = _project(write, NICKNAME, character=False)
    model = TestModel(default="嗯。")
    async with buddy.Agent(buddy.load(path), model, layer_model=TestModel(default=said())) as agent:
        await agent.run("叫我小鱼")
        (key,) = [k for k in await _stored(agent) if k.startswith("auto:nickname:")]
        # through the conversation's own memory part, but not by the layer
        await agent.conversation.memory.delete_reserved(key)
        await agent.run("在吗")
        assert model.requests[1].system == "记得："
        await agent.conversation.memory.write_reserved(key, (await _stored(agent)).get(key, ""))
        assert _layer(agent).store.reads == 2


async def test_without_the_revision_every_message_reads_back(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older platform stamps no revision on its events: read back as before."""
    path = _project(write, NICKNAME, character=False)
    async with buddy.Agent(
        buddy.load(path), TestModel(default="嗯。"), layer_model=TestModel(default=said())
    ) as agent:
        platform = await agent.client.platform()

        async def none(conversation_id: str) -> dict[str, int]:
            return {}

        monkeypatch.setattr(platform, "revisions", none)
        for text in ("叫我小鱼", "在吗", "还在吗"):
            await agent.run(text)
        assert _layer(agent).store.reads == 1 + 3  # the first read, then each message


async def test_against_a_platform_without_batches_each_entry_is_written_facts_first(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    extractor = TestModel([said(offence=0.5), said()])
    async with buddy.Agent(
        buddy.load(_project(write, AUTO)), TestModel(default="嗯。"), layer_model=extractor
    ) as agent:
        older_platform(agent, monkeypatch)
        log = recorded(agent, monkeypatch)
        await agent.run("叫我小鱼，你真烦")
        await agent.settled()
        layer = _layer(agent)
        assert layer.store.batches is False
        puts = [p.split("/", 1)[1].replace("%3A", ":") for m, p in log if m == "PUT"]
        assert puts[0].startswith("auto:nickname:")  # the fact before the state and lore
        assert sorted(puts[1:]) == [LORE_KEY, STATE_KEY]
        log.clear()
        await agent.run("鹤在哪")
        assert ("POST", "memory") not in log  # not asked again
        stored = await _stored(agent)
        assert json.loads(stored[STATE_KEY])["mood"]["anger"] > 0


async def test_a_batch_the_platform_refuses_is_written_one_entry_at_a_time(
    write: Write,
) -> None:
    """Memory full: the batch is refused whole, so each entry goes on its own — the fact
    that does not fit is left out, the state still goes in."""
    memory = "memory:\n  auto: true\n  relations: [nickname]\n"
    async with buddy.Agent(
        buddy.load(_project(write, memory)),
        TestModel(default="嗯。"),
        layer_model=TestModel([said(offence=0.5), said()]),
    ) as agent:
        own = agent.conversation.memory
        for i in range(62):  # the buddy's own notes: room for two entries more
            await own.write(f"note{i:02}", "x")
        await agent.run("叫我小鱼，你真烦")  # a fact, the state, lore: three
        await agent.settled()
        stored = await _stored(agent)
        layer = _layer(agent)
        assert layer.store.batches is True  # a refusal is not a missing batch
        assert STATE_KEY in stored and json.loads(stored[STATE_KEY])["mood"]["anger"] > 0
        assert len(stored) == 64
        await agent.run("在吗")
        assert layer.store.reads == 2  # not all of it landed: read back


async def test_no_layer_write_while_a_turn_that_read_data_runs(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _project(write, NICKNAME, character=False)
    async with buddy.Agent(
        buddy.load(path), TestModel(default="嗯。"), layer_model=TestModel(default=said())
    ) as agent:
        await agent.run("在吗")
        log = recorded(agent, monkeypatch)
        conversation = agent.conversation
        layer = _layer(agent)
        conversation.turn = TurnState()
        conversation.turn.data_read = True  # the turn's tool read user data
        platform = await agent.client.platform()
        pid = await agent.client.platform_id(conversation.id)
        event = LocalEvent(
            "evt-read",
            "message",
            conversation.id,
            {"text": "叫我小鱼"},
            platform.now(),
            await platform.revisions(pid),
        )
        await layer.before(conversation, event)
        await asyncio.sleep(0.05)  # the extraction is done; its save waits
        assert log == []
        conversation.turn = TurnState()  # committed: the turn is over
        await layer.after(conversation, event, {})
        await layer.settled()
        assert log == [("POST", "memory")]
        assert any(k.startswith("auto:nickname:") for k in await _stored(agent))


async def test_a_batch_is_refused_after_a_data_read_and_records_its_revisions(
    write: Write,
) -> None:
    path = _project(write, NICKNAME, character=False)
    async with buddy.Agent(buddy.load(path), TestModel(default="嗯。")) as agent:
        memory = agent.conversation.memory
        plain = await memory.apply_reserved([("a", "1"), ("b", "2")])
        auto = await memory.apply_reserved([("auto:x", "1")], ["a"])
        single = await memory.write_reserved("c", "3")
        assert (plain, auto, single) == (1, 2, 3)
        assert (memory.plain(1), memory.plain(2), memory.plain(3)) == (True, False, True)
        memory.turn = TurnState(data_read=True)
        with pytest.raises(ToolError, match="本轮不能再写记忆"):
            await memory.apply_reserved([("d", "4")], ["b"])
        assert await memory.apply_reserved([], ["b"]) == 4  # deleting is no write
        entries, revision = await memory.read()
        assert ({e["key"] for e in entries}, revision) == ({"auto:x", "c"}, 4)


async def test_a_served_buddy_reads_back_only_after_someone_else_wrote(
    platform: LocalPlatform, write: Write
) -> None:
    """Over the gateway: each event carries the revision it was delivered at."""
    manifest = (
        f"name: mem\nmodel: test\npersona:\n  prompt: '记得：{{{{ memory.card }}}}'\n{NICKNAME}"
    )
    blueprint = buddy.load(write({"buddy.yaml": manifest}))
    tokens = await platform.register("mem")
    conv = await platform.conversation("mem-dev")
    model = TestModel(default="嗯。")
    token = tokens["dev_token"]
    quiet = TestModel(default=said())
    async with running_buddy(platform, blueprint, model, token, layer_model=quiet) as server:
        (layer,) = server.buddy.layers
        assert isinstance(layer, Companion)
        for text in ("叫我小鱼", "在吗", "还在吗"):
            await platform.wait_acked("mem-dev", await platform.say(conv["id"], text))
        assert layer.store.reads == 1
        headers = {"Authorization": f"Bearer {token}", "X-Conversation-Id": conv["id"]}
        listed = await platform.http.get("/internal/v1/memory", headers=headers)
        (key,) = [e["key"] for e in listed.json()["entries"]]
        forgot = await platform.http.delete(
            f"/internal/v1/memory/{path_segment(key)}", headers=headers
        )
        assert forgot.status_code == 204  # as the playground forgets a fact
        await platform.wait_acked("mem-dev", await platform.say(conv["id"], "在吗"))
        assert layer.store.reads == 2
    assert [r.system for r in model.requests] == ["记得：- 称呼：小鱼"] * 3 + ["记得："]
