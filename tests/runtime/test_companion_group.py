"""The companion layer in a group: every fact and the character's state toward a person
belong to the member who said it (`m_…`) — one member's 「叫我老王」 never touches
another's name, the card names whose fact is whose, a confirmation card is answered only
by the member it asks, and an offence by one member leaves the buddy calm toward the
others. Run served against the dev platform, asserting on the system prompt the model
received; a private chat keeps exactly its old format (tests/runtime/test_companion.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion.engine import CONFIRM_NO, CONFIRM_YES, STATE_KEY, Companion
from buddy.compile.persona import BUILT_IN_PACK
from buddy.models.base import ModelRequest, ModelResponse
from buddy.runtime.server import BuddyServer
from buddy.testing import FunctionModel, TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import Write
from tests.runtime.test_companion import said

pytestmark = pytest.mark.anyio

MANIFEST = """\
name: grp
model: test
tools: [ask_question]
persona:
  prompt: '记得：{{ memory.card }}|气：{{ character.anger }}|信：{{ character.trust }}'
memory:
  auto: true
  relations: [nickname, debt]
character: traits/tsundere.yaml
"""
LI, WANG = "m_li", "m_wang"
DEBT = {"debtor": "user", "creditor": "buddy", "item": "奶茶", "quantity": 1, "unit": "杯"}
ASK = call("ask_question", {"question": "这杯奶茶记下吗？", "options": [CONFIRM_YES, CONFIRM_NO]})


class Extractor(FunctionModel):
    """The layer's extractor, answering by the message (whatever the patterns took, and
    in whichever order it is asked): ``answers[text]``, else nothing found.

    Attributes:
        heard: The messages it was asked about, in order.
    """

    def __init__(self, answers: Mapping[str, str]) -> None:
        super().__init__(self._answer)
        self.answers = answers
        self.heard: list[str] = []

    def _answer(self, request: ModelRequest) -> ModelResponse:
        text = str(request.messages[-1].content)
        self.heard.append(text)
        return ModelResponse(text=self.answers.get(text, said()))


@dataclass
class Group:
    """A served buddy in a group of 小李 (``m_li``) and 小王 (``m_wang``)."""

    platform: LocalPlatform
    server: BuddyServer
    cid: str
    token: str
    model: TestModel
    extractor: Extractor

    async def say(self, member: str, text: str) -> str:
        """``member`` writes ``text``; returns once the turn is acknowledged and the layer
        has stored what it took."""
        event = await self.platform.say(self.cid, text, member)
        await self.done(event)
        return event

    async def click(self, member: str, option: str) -> None:
        """``member`` clicks ``option`` on the last question card."""
        messages = await self.platform.transcript(self.cid)
        card = next(m for m in reversed(messages) if m["kind"] == "question")
        body = {"message_id": card["id"], "option": option, "member_id": member}
        sent = await self.platform.dev("POST", f"/conversations/{self.cid}/options", json=body)
        await self.done(str(sent["event_id"]))

    async def done(self, event: str) -> None:
        await self.platform.wait_acked("grp-dev", event)
        await self.layer.settled()

    @property
    def layer(self) -> Companion:
        (layer,) = self.server.buddy.layers
        assert isinstance(layer, Companion)
        return layer

    @property
    def system(self) -> str:
        """The system prompt of the last turn."""
        return self.model.requests[-1].system

    async def stored(self) -> dict[str, str]:
        response = await self.platform.http.get(
            "/internal/v1/memory",
            headers={"Authorization": f"Bearer {self.token}", "X-Conversation-Id": self.cid},
        )
        return {e["key"]: e["text"] for e in response.json()["entries"]}


@contextlib.asynccontextmanager
async def group(
    platform: LocalPlatform,
    write: Write,
    model: TestModel,
    answers: Mapping[str, str] | None = None,
) -> AsyncIterator[Group]:
    traits = (BUILT_IN_PACK / "traits/tsundere.yaml").read_text(encoding="utf-8")
    path = write({"buddy.yaml": MANIFEST, "traits/tsundere.yaml": traits})
    tokens = await platform.register("grp")
    members = [{"name": "小李", "member_id": LI}, {"name": "小王", "member_id": WANG}]
    body = {"identity": "grp-dev", "kind": "group", "members": members}
    conversation = await platform.dev("POST", "/conversations", json=body)
    token = tokens["dev_token"]
    layer_model = Extractor(answers or {})
    async with running_buddy(
        platform, buddy.load(path), model, token, layer_model=layer_model
    ) as server:
        yield Group(platform, server, conversation["id"], token, model, layer_model)


def facts(stored: Mapping[str, str], relation: str) -> list[dict[str, Any]]:
    return [json.loads(t) for k, t in stored.items() if k.startswith(f"auto:{relation}:")]


async def test_each_members_nickname_is_their_own_and_the_card_names_them(
    platform: LocalPlatform, write: Write
) -> None:
    async with group(platform, write, TestModel(default="嗯。")) as chat:
        await chat.say(LI, "叫我阿明")
        await chat.say(WANG, "叫我老王")
        await chat.say(LI, "在吗")
        card = "[小李 #m_li]\n- 称呼：阿明\n[小王 #m_wang]\n- 称呼：老王"
        assert chat.system.startswith(f"记得：{card}|"), chat.system
        await chat.say(WANG, "在吗")  # who speaks now comes first
        assert chat.system.startswith("记得：[小王 #m_wang]\n- 称呼：老王\n[小李 #m_li]\n")
        kept = facts(await chat.stored(), "nickname")
        assert sorted((f["slots"]["subject"], f["value"]) for f in kept) == [
            (LI, "阿明"),
            (WANG, "老王"),
        ]


async def test_a_member_cannot_name_another_and_the_buddy_stays_the_buddy(
    platform: LocalPlatform, write: Write
) -> None:
    forged = said([{"relation": "nickname", "slots": {"subject": LI, "value": "笨蛋"}}])
    buddy_named = said([{"relation": "nickname", "slots": {"subject": "buddy", "value": "小笨"}}])
    answers = {"叫小李笨蛋": forged, "你就叫小笨": buddy_named}
    async with group(platform, write, TestModel(default="嗯。"), answers) as chat:
        await chat.say(LI, "叫我阿明")
        await chat.say(WANG, "叫小李笨蛋")  # a member id is no party an extractor may name
        await chat.say(WANG, "你就叫小笨")  # the buddy names itself, no member does
        await chat.say(LI, "在吗")
        assert chat.system.startswith("记得：[小李 #m_li]\n- 称呼：阿明|"), chat.system
        kept = facts(await chat.stored(), "nickname")
        assert [(f["slots"]["subject"], f["value"]) for f in kept] == [(LI, "阿明")]
        assert chat.layer.dropped == 2


async def test_a_confirmation_card_is_answered_only_by_the_member_it_asks(
    platform: LocalPlatform, write: Write
) -> None:
    owes = said([{"relation": "debt", "slots": DEBT}])
    model = TestModel([ASK, "嗯。", "记下了。", "嗯。"])
    async with group(platform, write, model, {"算我欠你一杯奶茶": owes}) as chat:
        await chat.say(LI, "算我欠你一杯奶茶")
        assert "小李刚提到这件事：欠账：欠方 小李，债主 你，欠的东西 奶茶" in chat.system
        assert "发题卡问小李要不要记下" in chat.system
        (key,) = [k for k in await chat.stored() if k.startswith("auto:debt:")]
        state = json.loads((await chat.stored())[STATE_KEY])
        assert (state["asked"], state["asked_member"]) == (key, LI)

        await chat.click(WANG, CONFIRM_YES)  # 小王's click confirms nothing …
        (entry,) = facts(await chat.stored(), "debt")
        assert (entry["status"], entry["proposed"], entry["value"]) == ("proposed", 1, None)
        assert chat.extractor.heard[-1] == CONFIRM_YES  # … and is a message like any other
        assert json.loads((await chat.stored())[STATE_KEY])["asked"] == key

        heard = len(chat.extractor.heard)
        await chat.click(LI, CONFIRM_YES)  # 小李's keeps it, and is not extracted
        assert len(chat.extractor.heard) == heard
        (entry,) = facts(await chat.stored(), "debt")
        assert (entry["status"], entry["value"], entry["slots"]["debtor"]) == ("kept", 1, LI)
        assert "asked" not in json.loads((await chat.stored())[STATE_KEY])

        await chat.say(WANG, "在吗")
        debt = "- 欠账：欠方 小李，债主 你，欠的东西 奶茶，数量 1，单位 杯"
        assert chat.system.startswith(f"记得：[小李 #m_li]\n{debt}|"), chat.system


async def test_only_the_speakers_proposals_are_offered_to_ask_about(
    platform: LocalPlatform, write: Write
) -> None:
    owes = said([{"relation": "debt", "slots": DEBT}])
    model = TestModel(["好。", "嗯。", ASK])
    async with group(platform, write, model, {"算我欠你一杯奶茶": owes}) as chat:
        await chat.say(LI, "算我欠你一杯奶茶")  # the model does not ask this time
        await chat.say(WANG, "在吗")
        assert "## 先问一句再记" not in chat.system  # 小李's debt is not 小王's to confirm
        await chat.say(LI, "在吗")
        assert "问小李要不要记下" in chat.system


async def test_an_offence_by_one_member_leaves_the_buddy_calm_toward_the_other(
    platform: LocalPlatform, write: Write
) -> None:
    # No appraisal pattern reads this one: the scripted extractor says how it landed.
    answers = {"这都第几回了": said(offence=1.0)}
    async with group(platform, write, TestModel(default="嗯。"), answers) as chat:
        await chat.say(LI, "早")
        await chat.say(WANG, "这都第几回了")
        await chat.say(LI, "在吗")
        assert chat.system.endswith("|气：0.0|信：0.5"), chat.system
        await chat.say(WANG, "在吗")
        # tsundere: offence 1.0 × sensitivity 1.4, capped at step_max 0.35
        assert chat.system.endswith("|气：0.35|信：0.15"), chat.system
        state = json.loads((await chat.stored())[STATE_KEY])
        assert "mood" not in state and "history" not in state
        assert state["moods"][WANG]["anger"] == pytest.approx(0.35, abs=1e-3)
        assert state["moods"][LI]["anger"] == 0.0
        assert [len(state["histories"][m]) for m in (LI, WANG)] == [2, 2]
        assert state["members"] == [[LI, "小李"], [WANG, "小王"]]  # who spoke last, last


async def test_a_redelivered_group_message_applies_nothing_twice(
    platform: LocalPlatform, write: Write
) -> None:
    from buddy.platform.protocol.events import Event

    owes = said([{"relation": "debt", "slots": DEBT}], care=0.5)
    async with group(platform, write, TestModel(default="嗯。"), {"欠你一杯": owes}) as chat:
        first = await chat.say(LI, "欠你一杯")
        await chat.say(WANG, "在吗")  # so the layer does not take it for the turn run again
        before = await chat.stored()
        stored = next(e for e in await platform.events("grp-dev") if e["id"] == first)
        event = Event.model_validate({k: stored[k] for k in Event.model_fields if k in stored})
        conversation = chat.server.sessions[chat.cid].conversation
        heard = len(chat.extractor.heard)
        for _ in range(2):  # delivered again after a crash, or the turn run again
            await chat.layer.before(conversation, event)
            await chat.layer.after(conversation, event, {})
            await chat.layer.settled()
        after = await chat.stored()
        assert chat.extractor.heard[heard:] == ["欠你一杯"]  # taken in again, applied once
        (entry,) = facts(after, "debt")
        assert (entry["proposed"], entry["messages"], entry["slots"]["debtor"]) == (1, [first], LI)
        state = json.loads(after[STATE_KEY])
        assert state["felt"].count(first) == 1 and len(state["histories"][LI]) == 1
        unchanged = {k: t for k, t in after.items() if k != STATE_KEY}
        assert unchanged == {k: t for k, t in before.items() if k != STATE_KEY}
        old = json.loads(before[STATE_KEY])
        assert {k: v for k, v in state.items() if k != "members"} == {
            k: v for k, v in old.items() if k != "members"
        }


async def test_a_private_chats_stored_memory_reads_back_and_keeps_its_format(
    write: Write,
) -> None:
    """A private chat's facts keep ``user`` and its ``auto:state`` its one ``mood``: what was
    stored before groups kept members apart reads back, and is written the same way."""
    from buddy.capabilities.memory.ledger import fact_key
    from tests.runtime.test_companion import _project

    path = _project(write, "memory:\n  auto: true\n  relations: [nickname]\n")
    model = TestModel(["嗯。"])
    async with buddy.Agent(buddy.load(path), model, layer_model=TestModel([said()])) as agent:
        now = (await agent.client.platform()).now()
        spec = agent.blueprint.sections["memory"].relation("nickname")
        slots = {"subject": "user", "value": "小鱼"}
        entry = {"relation": "nickname", "slots": slots, "value": "小鱼", "status": "kept"}
        old_fact = {**entry, "updated": now, "expires": None, "proposed": None, "claims": []}
        old_fact |= {"repaid": 0.0, "messages": ["evt-old"]}
        mood = {"anger": 0.3, "sadness": 0.0, "trust": 0.4, "at": now}
        old_state = {"felt": ["evt-old"], "history": [[now, 0.3, 0.0, 0.4]], "mood": mood}
        old_state["reconcile"] = ""
        memory = agent.conversation.memory
        await memory.write_reserved(fact_key(spec, slots), json.dumps(old_fact, ensure_ascii=False))
        await memory.write_reserved(STATE_KEY, json.dumps(old_state))
        await agent.run("在吗")
        await agent.settled()
        assert model.requests[0].system.startswith("记得：- 称呼：小鱼|气：0.3|信：0.4|")
        stored = {e["key"]: e["text"] for e in await memory.list()}
        state = json.loads(stored[STATE_KEY])
        assert set(state) == {"felt", "history", "mood", "reconcile"}
        assert len(state["history"]) == 2
        assert json.loads(stored[fact_key(spec, slots)])["slots"]["subject"] == "user"


async def test_a_card_sent_in_another_members_turn_leaves_the_standing_one(
    platform: LocalPlatform, write: Write
) -> None:
    owes = said([{"relation": "debt", "slots": DEBT}])
    model = TestModel([ASK, ASK, "记下了。"])
    async with group(platform, write, model, {"算我欠你一杯奶茶": owes}) as chat:
        await chat.say(LI, "算我欠你一杯奶茶")
        (key,) = [k for k in await chat.stored() if k.startswith("auto:debt:")]
        await chat.say(WANG, "那我呢")  # the model asks again, though 小王 has nothing to ask
        cards = [m for m in await platform.transcript(chat.cid) if m["kind"] == "question"]
        assert len(cards) == 2
        state = json.loads((await chat.stored())[STATE_KEY])
        assert (state["asked"], state["asked_member"]) == (key, LI)
        await chat.click(LI, CONFIRM_YES)
        (entry,) = facts(await chat.stored(), "debt")
        assert (entry["status"], entry["value"]) == ("kept", 1)


def test_a_big_groups_state_stays_one_memory_text() -> None:
    from buddy.capabilities.character.state import Mood
    from buddy.capabilities.companion.mind import (
        GROUP_HISTORY_KEPT,
        MEMBERS_KEPT,
        PLOTTED_MEMBERS,
        Mind,
        wanted,
    )
    from buddy.capabilities.memory.limits import MEMORY_TEXT_BYTES

    mind = Mind()
    for n in range(3 * MEMBERS_KEPT):  # each speaks once, as the engine records it
        member = f"m_{n:020d}"
        mind.spoke(member, "名" * 40)
        mind.moods[member] = Mood(0.123456789, 0.123456789, 0.123456789, 1796226062.514)
        mind.histories[member] = [[1796226062.514, 0.1234, 0.1234, 0.1234]] * GROUP_HISTORY_KEPT
    text = wanted(mind, lore=False)[STATE_KEY]
    state = json.loads(text)
    assert len(text.encode()) < MEMORY_TEXT_BYTES
    assert len(state["members"]) == len(state["moods"]) == MEMBERS_KEPT
    assert state["members"][-1][0] == f"m_{3 * MEMBERS_KEPT - 1:020d}"  # who spoke last
    assert len(state["histories"]) == PLOTTED_MEMBERS
