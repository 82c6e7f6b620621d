"""The companion layer at run time: facts from every user message without the model
asking, the character's state moved by appraisals and decayed by the platform clock,
lore in play, one budget, confirmation cards, reconciles — stored in the conversation's
platform memory and read back as the next turn's prompt."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion import engine as layer_module
from buddy.capabilities.companion.engine import (
    CONFIRM_NO,
    CONFIRM_YES,
    LORE_KEY,
    RECONCILE_KEY,
    STATE_KEY,
    Companion,
)
from buddy.compile.persona import BUILT_IN_PACK
from buddy.errors import PlatformError, ToolError
from buddy.models.base import Model, ModelRequest, ModelResponse
from buddy.testing import TestModel, call
from tests.conftest import Write

pytestmark = pytest.mark.anyio

PROMPT = "记得：{{ memory.card }}|气：{{ character.anger }}|信：{{ character.trust }}|设定：{{ lore.text }}"


def _project(
    write: Write,
    memory: str,
    *,
    traits: str = "tsundere",
    tools: str = "[]",
    character: bool = True,
) -> Path:
    text = (BUILT_IN_PACK / f"traits/{traits}.yaml").read_text(encoding="utf-8")
    prompt = PROMPT if character else "记得：{{ memory.card }}"
    # `appraisal: null`: the scripted extractor appraises every message, so these tests of
    # the engine say exactly how each one lands (the appraisal file's patterns are tested
    # in tests/test_character_appraisal.py).
    character_section = f"character: {{ traits: traits/{traits}.yaml, appraisal: null }}\n"
    manifest = f"name: c\nmodel: test\ntools: {tools}\npersona:\n  prompt: '{prompt}'\n{memory}" + (
        f"{character_section}lore: lore\n" if character else ""
    )
    book = (
        "entries:\n"
        "  - { name: 鹤, keys: [鹤], content: 后山有白鹤。, priority: 10 }\n"
        "  - { name: 长, keys: [长], content: " + "长" * 195 + " }\n"
    )
    return write({"buddy.yaml": manifest, f"traits/{traits}.yaml": text, "lore/world.yaml": book})


AUTO = "memory:\n  auto: true\n  relations: [nickname, allergy, debt]\n"


def said(facts: list[dict[str, Any]] | None = None, **appraisal: Any) -> str:
    """An extractor's answer."""
    body: dict[str, Any] = {"facts": facts or []}
    body["appraisal"] = {"offence": 0, "apology": 0, "care": 0, "explained": False, **appraisal}
    return json.dumps(body, ensure_ascii=False)


def _layer(agent: buddy.Agent) -> Companion:
    (layer,) = agent.layers
    assert isinstance(layer, Companion)
    return layer


async def _stored(agent: buddy.Agent) -> dict[str, str]:
    entries = await agent.conversation.memory.list()
    return {str(e["key"]): str(e["text"]) for e in entries}


async def test_a_pattern_keeps_a_fact_with_no_model_call_and_the_same_turn_sees_it(
    write: Write,
) -> None:
    path = _project(write, "memory:\n  auto: true\n  relations: [nickname]\n", character=False)
    extractor = TestModel([])  # asked for anything, it fails the test
    model = TestModel(["好的小鱼。", "嗯。"])
    async with buddy.Agent(buddy.load(path), model, layer_model=extractor) as agent:
        await agent.run("叫我小鱼")
        await agent.run("今天好累")  # no pattern: the extractor would be asked
        assert model.requests[0].system == "记得：- 称呼：小鱼"
        assert len(extractor.requests) == 1 and _layer(agent).calls == 1


async def test_facts_and_feelings_reach_the_next_prompts_with_one_call_per_message(
    write: Write,
) -> None:
    extractor = TestModel([said(care=0.5), said(offence=1.0), said()])
    model = TestModel(["嗯。", "哼。", "好。"])
    async with buddy.Agent(
        buddy.load(_project(write, AUTO)), model, layer_model=extractor
    ) as agent:
        await agent.run("叫我小鱼")
        await agent.run("你真烦")
        await agent.run("鹤在哪")
        await agent.settled()
        systems = [r.system for r in model.requests]
        assert systems[0].startswith(
            "记得：- 称呼：小鱼|气：0.0|信：0.59|设定："
        )  # 0.5 + care 0.5 × repair 0.7 / 4
        # tsundere: offence 1.0 × sensitivity 1.4, capped at step_max 0.35
        assert "气：0.35" in systems[1]
        assert "设定：后山有白鹤。" in systems[2]
        assert len(extractor.requests) == 3  # one per user message, patterns or not
        assert extractor.requests[1].messages[-1].content == "你真烦"
        stored = await _stored(agent)
        assert {STATE_KEY, LORE_KEY} <= set(stored)
        assert json.loads(stored[STATE_KEY])["mood"]["anger"] == pytest.approx(0.35, abs=1e-3)


async def test_anger_halves_by_the_platform_clock(write: Write) -> None:
    extractor = TestModel([said(offence=1.0), said()])
    model = TestModel(["哼。", "嗯。"])
    async with buddy.Agent(
        buddy.load(_project(write, AUTO)), model, layer_model=extractor
    ) as agent:
        await agent.run("你真烦")
        await agent.settled()
        platform = await agent.client.platform()
        half_life = agent.blueprint.sections["character"].number("anger_half_life_days")
        await platform.dev("POST", "/clock", {"advance_seconds": half_life * 86400})
        await agent.run("在吗")
        assert "气：0.17" in model.requests[1].system  # 0.35 halved, rounded


class Gate(Model):
    """An extractor that answers only when released (or fails, or never answers)."""

    name = "test:gate"

    def __init__(self, answers: list[str | BaseException]) -> None:
        self.answers = answers
        self.release = asyncio.Event()
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        await self.release.wait()
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return ModelResponse(text=answer)


async def test_a_slow_extraction_never_holds_the_reply_and_lands_for_a_later_turn(
    write: Write,
) -> None:
    memory = "memory:\n  auto: true\n  relations: [allergy]\n  wait_ms: 0\n"
    gate = Gate([said([{"relation": "allergy", "slots": _peanut()}]), said()])
    model = TestModel(["好。", "记着呢。"])
    async with buddy.Agent(buddy.load(_project(write, memory)), model, layer_model=gate) as agent:
        outcome = await agent.run("我对花生过敏，很严重")
        assert outcome.reply == "好。"  # the extractor has not answered yet
        assert model.requests[0].system.startswith("记得：|")
        assert _layer(agent).minds[agent.conversation.id].reports[-1].settled is False
        gate.release.set()
        await agent.settled()
        await agent.run("晚饭吃什么")
        assert "记得：- 过敏与忌口：食物 花生，类别 过敏，程度 严重|" in model.requests[1].system


def _peanut() -> dict[str, Any]:
    return {"subject": "user", "item": "花生", "kind": "过敏", "severity": "严重"}


@pytest.mark.parametrize(
    "answer",
    [
        RuntimeError("503 from the extractor"),
        "这不是 JSON",
        said([{"relation": "salary", "slots": {"amount": 1}}]),
        said([{"relation": "allergy", "slots": {**_peanut(), "mood": "x"}}]),
        said([{"relation": "nickname", "slots": {"subject": "buddy", "value": "笨蛋"}}]),
    ],
    ids=["5xx", "not-json", "invented-relation", "invented-slot", "not-a-writer"],
)
async def test_a_failed_or_invalid_extraction_means_no_new_memory_and_a_normal_reply(
    write: Write, answer: str | BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failed extraction has nothing to store: the turn's acknowledgement must not wait
    # for its writes (it would, here, for an hour).
    monkeypatch.setattr(layer_module, "SAVE_WAIT", 3600.0)
    gate = Gate([answer])
    gate.release.set()
    model = TestModel(["好。"])
    async with buddy.Agent(buddy.load(_project(write, AUTO)), model, layer_model=gate) as agent:
        outcome = await asyncio.wait_for(agent.run("随便聊聊"), 30)
        await agent.settled()
        assert outcome.reply == "好。" and outcome.error is None
        stored = await _stored(agent)
        assert [k for k in stored if k not in (STATE_KEY, LORE_KEY)] == []
        layer = _layer(agent)
        assert layer.jobs.failures + layer.dropped == 1


async def test_a_hung_extractor_is_given_up_and_the_next_message_is_extracted(
    write: Write,
) -> None:
    gate = Gate([])  # never released
    model = TestModel(["好。", "好的小鱼。"])
    async with buddy.Agent(buddy.load(_project(write, AUTO)), model, layer_model=gate) as agent:
        layer = _layer(agent)
        layer.jobs.limit = 0.05
        await agent.run("随便聊聊")
        await agent.settled()
        assert layer.jobs.failures == 1
        layer.extractor = TestModel([said()])
        await agent.run("叫我小鱼")
        await agent.settled()
        assert any(k.startswith("auto:nickname:") for k in await _stored(agent))


DEBT = {"debtor": "user", "creditor": "buddy", "item": "饭", "quantity": 1, "unit": "顿"}


async def test_an_explicit_fact_is_asked_with_a_card_and_kept_only_when_confirmed(
    write: Write,
) -> None:
    extractor = TestModel([said([{"relation": "debt", "slots": DEBT}])])
    model = TestModel(
        [
            call(
                "ask_question",
                {"question": "要我记下你欠我一顿饭吗？", "options": [CONFIRM_YES, CONFIRM_NO]},
            ),
            "记下了。",
        ]
    )
    blueprint = buddy.load(_project(write, AUTO, tools="[ask_question]"))
    async with buddy.Agent(blueprint, model, layer_model=extractor) as agent:
        await agent.run("上次那顿饭算我欠你的")
        assert "## 先问一句再记" in model.requests[0].system
        assert "欠的东西 饭" in model.requests[0].system
        await agent.settled()
        stored = await _stored(agent)
        (key,) = [k for k in stored if k.startswith("auto:debt:")]
        assert json.loads(stored[key])["status"] == "proposed"
        assert json.loads(stored[STATE_KEY])["asked"] == key
        await agent.run(CONFIRM_YES)  # the click is the option's text as a message
        assert "## 先问一句再记" not in model.requests[1].system
        assert "- 欠账：" in model.requests[1].system
        assert len(extractor.requests) == 1  # an answer to the card is not extracted
        entry = json.loads((await _stored(agent))[key])
        assert (entry["status"], entry["value"], entry["proposed"]) == ("kept", 1, None)


async def test_a_rejected_fact_is_dropped(write: Write) -> None:
    extractor = TestModel([said([{"relation": "debt", "slots": DEBT}])])
    model = TestModel(
        [call("ask_question", {"question": "记吗？", "options": [CONFIRM_YES, CONFIRM_NO]}), "好。"]
    )
    blueprint = buddy.load(_project(write, AUTO, tools="[ask_question]"))
    async with buddy.Agent(blueprint, model, layer_model=extractor) as agent:
        await agent.run("上次那顿饭算我欠你的")
        await agent.run(CONFIRM_NO)
        await agent.settled()
        assert not [k for k in await _stored(agent) if k.startswith("auto:debt:")]


async def test_a_redelivered_message_applies_its_delta_once(write: Write) -> None:
    memory = "memory:\n  auto: true\n  relations: [debt]\n"
    repay = {**DEBT, "quantity": -1}
    extractor = TestModel([said([{"relation": "debt", "slots": DEBT}]), said()])
    blueprint = buddy.load(_project(write, memory, tools="[ask_question]"))
    ask = call("ask_question", {"question": "记吗？", "options": [CONFIRM_YES, CONFIRM_NO]})
    async with buddy.Agent(blueprint, TestModel([ask, "好。"]), layer_model=extractor) as agent:
        layer = _layer(agent)
        conversation = agent.conversation
        await agent.run("上次那顿饭算我欠你的")
        await agent.settled()
        mind = layer.minds[conversation.id]
        (key,) = list(mind.ledger)
        await agent.run(CONFIRM_YES)
        await agent.settled()
        assert mind.ledger[key].value == 1
        layer.extractor = TestModel([said([{"relation": "debt", "slots": repay}])] * 2)
        from buddy.platform.protocol.events import Event

        event = Event(
            id="evt-repay",
            type="message",
            conversation_id=conversation.id,
            payload={"text": "我请你吃饭了，扯平"},
            created_at=mind.ledger[key].updated + 60,
        )
        for _ in range(2):  # delivered again after a crash, or the turn run again
            await layer.before(conversation, event)
            await layer.after(conversation, event, {})
            await agent.settled()
        # a repayment is a delta too, assisted: proposed once, not twice
        assert mind.ledger[key].proposed == -1
        assert json.loads((await _stored(agent))[key])["messages"].count("evt-repay") == 1


async def test_the_layer_stays_within_its_share_and_leaves_the_rest_alone(write: Write) -> None:
    memory = "memory:\n  auto: true\n  relations: [nickname, allergy]\n  share: { entries: 1 }\n"
    extractor = TestModel([said([{"relation": "allergy", "slots": _peanut()}]), said()])
    async with buddy.Agent(
        buddy.load(_project(write, memory)), TestModel(["好。", "好。"]), layer_model=extractor
    ) as agent:
        await agent.conversation.memory.write("own", "the buddy's own note")
        await agent.run("我对花生过敏")
        await agent.run("叫我小鱼")
        await agent.settled()
        stored = await _stored(agent)
        facts = [k for k in stored if k.startswith("auto:") and k not in (STATE_KEY, LORE_KEY)]
        # allergy is R3, nickname R1: the lower risk tier goes first
        assert len(facts) == 1 and facts[0].startswith("auto:allergy:")
        assert stored["own"] == "the buddy's own note"


async def test_lore_that_does_not_fit_the_budget_is_left_out_with_its_reason(
    write: Write,
) -> None:
    memory = (
        "memory:\n  relations: [nickname]\n  card: { max_chars: 100 }\n"
        "  budget: { max_chars: 200 }\n"
    )
    extractor = TestModel([said()])
    async with buddy.Agent(
        buddy.load(_project(write, memory)), TestModel(["嗯。"]), layer_model=extractor
    ) as agent:
        await agent.run("鹤很长")
        (report,) = _layer(agent).minds[agent.conversation.id].reports
        assert ("lore:world/鹤", 6) in report.parts
        assert ("lore:world/长", "budget") in report.left_out
        assert report.budget == 200


async def test_a_quarrel_schedules_one_reconcile_and_making_up_closes_it(write: Write) -> None:
    extractor = TestModel(
        [said(offence=1.0), said(offence=1.0), said(apology=1.0, explained=True)] + [said()] * 3
    )
    blueprint = buddy.load(_project(write, AUTO, traits="gentle"))
    async with buddy.Agent(blueprint, TestModel(["……"] * 6), layer_model=extractor) as agent:
        proactive = agent.conversation.proactive
        await agent.run("你好烦")
        await agent.settled()
        assert [s["key"] for s in await proactive.list()] == []  # 0.4: not a quarrel yet
        await agent.run("真的很烦")
        await agent.settled()
        (subscription,) = await proactive.list()
        assert subscription["key"] == RECONCILE_KEY and subscription["status"] == "active"
        assert subscription["trigger"]["type"] == "schedule"
        assert subscription["trigger"].get("interval_minutes") is None  # once
        await agent.run("对不起，我今天太累了")
        await agent.run("好啦")
        await agent.settled()
        (closed,) = await proactive.list()
        assert closed["status"] != "active"


async def test_an_extractor_without_its_api_key_leaves_the_patterns_and_says_so_once(
    write: Write, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    memory = "memory:\n  auto: true\n  model: deepseek:deepseek-chat\n  relations: [nickname]\n"
    model = TestModel(["好。", "嗯。", "嗯。"])
    async with buddy.Agent(buddy.load(_project(write, memory, character=False)), model) as agent:
        await agent.run("今天好累")
        await agent.run("还是累")
        await agent.run("叫我小鱼")
        await agent.settled()
        assert any(k.startswith("auto:nickname:") for k in await _stored(agent))
    warned = [r for r in caplog.records if "extractor cannot be used" in r.getMessage()]
    assert len(warned) == 1 and "DEEPSEEK_API_KEY" in warned[0].getMessage()


async def test_the_inspector_sees_each_turn_and_the_plot_each_felt_message(write: Write) -> None:
    extractor = TestModel([said(offence=0.5), said(care=1.0)])
    async with buddy.Agent(
        buddy.load(_project(write, AUTO)), TestModel(["哼。", "嗯。"]), layer_model=extractor
    ) as agent:
        await agent.run("你好烦")
        await agent.run("鹤呢")
        await agent.settled()
        seen = _layer(agent).inspect(agent.conversation.id)
        assert seen["counters"] == {"calls": 2, "messages": 2, "dropped": 0, "failures": 0}
        first, second = seen["reports"]
        assert {"name": "memory.card", "chars": 0} in first["parts"]
        assert {"name": "lore:world/鹤", "chars": 6} in second["parts"]
        assert second["budget"] == 2000 and second["settled"] is True
        history = json.loads((await _stored(agent))[STATE_KEY])["history"]
        assert [round(p[1], 2) for p in history] == [0.35, pytest.approx(0.35, abs=0.01)]
        assert history[1][3] > history[0][3]  # care gave trust back
    assert _layer(agent).inspect("nobody")["counters"]["calls"] == 2


@pytest.mark.parametrize(("profile", "override"), [("ci", None), (None, "offline")])
async def test_a_profile_or_an_override_replaces_the_extractor_too(
    write: Write,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    profile: str | None,
    override: str | None,
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    memory = (
        "memory:\n  auto: true\n  model: deepseek:deepseek-chat\n  relations: [nickname]\n"
        "profiles:\n  ci: { model: test }\n"
    )
    path = _project(write, memory, character=False)
    blueprint = buddy.load(path, profile=profile, model=override)
    assert blueprint.model_origin == ("profile" if profile else "override")
    async with buddy.Agent(blueprint, TestModel(["好。"])) as agent:
        await agent.run("今天好累")  # no pattern: the extractor is asked
        await agent.settled()
        assert _layer(agent).calls == 1
        extractor = _layer(agent).extractor
        assert extractor is not None and extractor.name.split(":")[0] in ("test", "offline")
    assert not [r for r in caplog.records if "extractor cannot be used" in r.getMessage()]
    assert buddy.load(path).model_origin == "manifest"


def older_platform(agent: buddy.Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """``agent``'s platform as one without batches answers them: 405 (the engine then
    writes one entry at a time, facts before the state)."""
    real = agent.client.request

    async def request(method: str, path: str, **kwargs: Any) -> Any:
        if (method, path) == ("POST", "memory"):
            reason = "POST is not allowed here; allowed: GET"
            raise PlatformError(405, reason, code="method_not_allowed")
        return await real(method, path, **kwargs)

    monkeypatch.setattr(agent.client, "request", request)


@pytest.mark.parametrize("batches", [True, False], ids=["batch", "one-by-one"])
async def test_the_engine_stores_through_the_conversations_own_memory_part(
    write: Write, monkeypatch: pytest.MonkeyPatch, batches: bool
) -> None:
    """The engine's writes go through ``conversation.memory`` — the part that enforces the
    one-turn data rule — and a write it refuses (a turn that read user data began
    meanwhile) is made by the next save, not lost: a batch as one entry at a time."""
    path = _project(write, "memory:\n  auto: true\n  relations: [nickname]\n", character=False)
    model = TestModel(["好的小鱼。", "嗯。"])
    async with buddy.Agent(buddy.load(path), model, layer_model=TestModel([])) as agent:
        part = agent.conversation.memory
        written: list[str] = []
        refuse = [True]
        if batches:
            real_batch = part.apply_reserved

            async def apply_reserved(writes: Any, deletes: Any = ()) -> int | None:
                if refuse[0]:
                    refuse[0] = False
                    raise ToolError("这一轮已经读过用户授权的数据")
                written.extend(key for key, _ in writes)
                return await real_batch(writes, deletes)

            monkeypatch.setattr(part, "apply_reserved", apply_reserved)
        else:
            older_platform(agent, monkeypatch)
            real = part.write_reserved

            async def write_reserved(key: str, text: str) -> None:
                if refuse[0]:
                    refuse[0] = False
                    raise ToolError("这一轮已经读过用户授权的数据")
                written.append(key)
                await real(key, text)

            monkeypatch.setattr(part, "write_reserved", write_reserved)
        await agent.run("叫我小鱼")
        await agent.settled()
        assert not refuse[0]  # the first write was refused …
        facts = [k for k in written if k.startswith("auto:nickname:")]
        assert len(facts) == 1  # … and the turn's own save after the commit made it
        assert facts[0] in await _stored(agent)


class Killed(BaseException):
    """The process died here (not an error anything may catch)."""


@pytest.mark.parametrize(
    ("batches", "survive"),
    [(False, 0), (False, 1), (False, 2), (False, 3), (True, 0), (True, 1)],
    ids=["one-by-one-0", "one-by-one-1", "one-by-one-2", "one-by-one-3", "batch-0", "batch-1"],
)
async def test_a_kill_between_any_two_writes_of_a_confirmation_loses_nothing(
    write: Write, monkeypatch: pytest.MonkeyPatch, batches: bool, survive: int
) -> None:
    """The click on 「记住吧」 is written in one batch applied whole or — against a platform
    without batches — as facts before state: a process killed after any number of its
    writes has the click delivered again, and a fresh layer then keeps the fact exactly
    once."""
    from buddy.capabilities.companion.engine import make
    from buddy.runtime.turn import LocalEvent

    extractor = TestModel([said([{"relation": "debt", "slots": DEBT}])])
    ask = call("ask_question", {"question": "记吗？", "options": [CONFIRM_YES, CONFIRM_NO]})
    blueprint = buddy.load(_project(write, AUTO, tools="[ask_question]"))
    async with buddy.Agent(blueprint, TestModel([ask, "好。"]), layer_model=extractor) as agent:
        conversation = agent.conversation
        await agent.run("上次那顿饭算我欠你的")
        await agent.settled()
        (key,) = [k for k in await _stored(agent) if k.startswith("auto:debt:")]
        if not batches:
            older_platform(agent, monkeypatch)
        part = conversation.memory
        done: list[str] = []
        batch = ("apply_reserved",) if batches else ()
        for name in ("write_reserved", "delete_reserved", *batch):
            real = getattr(part, name)

            async def dying(*args: Any, _real: Any = real) -> None:
                if len(done) >= survive:
                    raise Killed
                done.append(str(args[0]))
                await _real(*args)

            monkeypatch.setattr(part, name, dying)
        platform = await agent.client.platform()
        click = LocalEvent(
            "evt-click", "message", conversation.id, {"text": CONFIRM_YES}, platform.now()
        )
        layer = _layer(agent)
        with contextlib.suppress(Killed):
            await layer.before(conversation, click)
            await layer.after(conversation, click, {})
            await layer.settled()
        await layer.close()
        monkeypatch.undo()
        # Restarted: a new layer, the click delivered again.
        fresh = make(blueprint, agent.client, TestModel([]), TestModel([]))
        assert fresh is not None
        await fresh.before(conversation, click)
        await fresh.after(conversation, click, {})
        await fresh.settled()
        stored = await _stored(agent)
        await fresh.close()
    entry = json.loads(stored[key])
    assert (entry["status"], entry["value"], entry["proposed"]) == ("kept", 1, None)
    assert "asked" not in json.loads(stored.get(STATE_KEY, "{}"))


async def test_the_card_asked_is_stored_before_its_turn_is_acknowledged(write: Write) -> None:
    """A turn that sent the confirmation card is acknowledged only once the state naming
    the fact it asks about is stored: a process killed right after would otherwise show
    the card and lose what it asks, and the click would find nothing to confirm."""
    extractor = TestModel([said([{"relation": "debt", "slots": DEBT}])])
    ask = call("ask_question", {"question": "记吗？", "options": [CONFIRM_YES, CONFIRM_NO]})
    blueprint = buddy.load(_project(write, AUTO, tools="[ask_question]"))
    async with buddy.Agent(blueprint, TestModel([ask, "好。"]), layer_model=extractor) as agent:
        await agent.run("上次那顿饭算我欠你的")  # returns once the layer's after() has
        stored = await _stored(agent)  # no settled(): what a kill now would leave
        (key,) = [k for k in stored if k.startswith("auto:debt:")]
        assert json.loads(stored[STATE_KEY])["asked"] == key
