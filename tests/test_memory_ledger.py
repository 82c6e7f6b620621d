"""The ledger: each relation policy applied to new facts — set and conflicts, disputes,
validity, assisted admission with explicit and implicit confirmation, deltas once per
message with repayment conservation — eviction within the share, and the stored text."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

import buddy
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.extract import Fact
from buddy.capabilities.memory.ledger import (
    Entry,
    apply,
    as_member,
    confirm,
    decode,
    encode,
    evict,
    expire,
    fact_key,
    member_of,
)
from buddy.capabilities.memory.limits import MEMORY_KEY_CHARS, memory_key_refusal
from tests.conftest import MINIMAL, Write

DAY = 86400.0


@pytest.fixture
def memory(write: Write) -> AutoMemory:
    manifest = (
        MINIMAL
        + "memory:\n  auto: true\n  relations: [nickname, allergy, debt, household, preference]\n"
    )
    found: AutoMemory | None = buddy.load(write({"buddy.yaml": manifest})).sections["memory"]
    assert found is not None
    return found


def _with(memory: AutoMemory, name: str, **policy: Any) -> AutoMemory:
    relations = tuple(replace(r, **policy) if r.name == name else r for r in memory.relations)
    return replace(memory, relations=relations)


def _nick(value: str) -> Fact:
    return Fact("nickname", {"subject": "user", "value": value}, "asserted", "pattern")


def _debt(amount: float) -> Fact:
    slots = {"debtor": "user", "creditor": "buddy", "item": "饭", "quantity": amount}
    return Fact("debt", slots, "asserted", "model")


def test_a_set_fact_is_kept_renewed_and_replaced(memory: AutoMemory) -> None:
    book, first = apply(memory, {}, _nick("小鱼"), now=0, message="m1")
    assert first.kind == "kept" and book[first.key].value == "小鱼"
    book, again = apply(memory, book, _nick("小鱼"), now=5, message="m2")
    assert again.kind == "unchanged" and book[again.key].updated == 5
    book, changed = apply(memory, book, _nick("阿明"), now=9, message="m3")
    assert changed.kind == "updated" and book[changed.key].value == "阿明"  # last write wins


def test_keep_first_keeps_the_old_value(memory: AutoMemory) -> None:
    firm = _with(memory, "nickname", conflict="keep_first")
    book, _ = apply(firm, {}, _nick("小鱼"), now=0, message="m1")
    book, outcome = apply(firm, book, _nick("阿明"), now=1, message="m2")
    assert outcome.kind == "unchanged" and book[outcome.key].value == "小鱼"


def test_a_contradicted_allergy_is_kept_as_a_dispute(memory: AutoMemory) -> None:
    said = Fact("allergy", {"subject": "user", "item": "虾", "kind": "过敏"}, "asserted", "model")
    book, _ = apply(memory, {}, said, now=0, message="m1")
    later = Fact("allergy", {"subject": "user", "item": "虾", "kind": "忌口"}, "asserted", "model")
    book, outcome = apply(memory, book, later, now=1, message="m2")
    entry = book[outcome.key]
    assert (outcome.kind, entry.value, entry.status, entry.claims) == (
        "disputed",
        "过敏",
        "disputed",
        ("忌口",),
    )


def test_a_fact_lapses_after_its_time_to_live_and_is_renewed_when_said(memory: AutoMemory) -> None:
    home = Fact("household", {"subject": "user", "people": 3}, "asserted", "pattern")
    book, outcome = apply(memory, {}, home, now=0, message="m1")
    assert book[outcome.key].expires == 180 * DAY
    assert outcome.key in expire(book, 180 * DAY - 1) and not expire(book, 180 * DAY)
    book, _ = apply(memory, book, home, now=100 * DAY, message="m2")
    assert book[outcome.key].expires == 280 * DAY
    assert apply(memory, book, home, now=300 * DAY, message="m3")[1].kind == "kept"  # lapsed: new


def test_a_debt_waits_for_the_card_then_adds_up_once_per_message(memory: AutoMemory) -> None:
    book, proposed = apply(memory, {}, _debt(3), now=0, message="m1")
    key = proposed.key
    assert proposed.kind == "proposed" and book[key].value is None and book[key].proposed == 3
    assert apply(memory, book, _debt(3), now=1, message="m1")[1].kind == "duplicate"  # redelivered
    book, confirmed = confirm(memory, book, key, True, now=2, message="click1")
    assert confirmed.kind == "confirmed" and book[key].value == 3 and book[key].status == "kept"
    book, more = apply(memory, book, _debt(2), now=3, message="m2")
    assert more.kind == "proposed" and book[key].value == 3  # kept stays while 2 more waits
    book, _ = confirm(memory, book, key, True, now=4, message="click2")
    assert book[key].value == 5
    book, again = confirm(memory, book, key, True, now=5, message="click2")
    assert again.kind == "refused" and book[key].value == 5  # nothing awaits: not applied twice


def test_a_confirmed_fact_keeps_the_message_it_was_said_in_and_names_its_confirmation(
    memory: AutoMemory,
) -> None:
    book, proposed = apply(memory, {}, _debt(3), now=0, message="m1")
    assert book[proposed.key].confirmed == ""
    book, _ = confirm(memory, book, proposed.key, True, now=2, message="click1")
    entry = book[proposed.key]
    assert (entry.messages, entry.confirmed) == (("m1", "click1"), "click1")
    book, _ = apply(memory, book, _debt(2), now=3, message="m2")  # 2 more, proposed again
    book, _ = confirm(memory, book, proposed.key, True, now=4, message="click2")
    entry = book[proposed.key]
    assert (entry.messages[-2:], entry.confirmed) == (("m2", "click2"), "click2")
    assert decode(encode(entry)) == entry
    quiet = _with(memory, "debt", confirmation="implicit")  # said again: that message confirms
    book, first = apply(quiet, {}, _debt(3), now=0, message="m1")
    book, _ = apply(quiet, book, _debt(3), now=1, message="m2")
    assert (book[first.key].messages, book[first.key].confirmed) == (("m1", "m2"), "m2")
    book, kept = apply(memory, {}, _nick("小鱼"), now=0, message="m1")
    assert book[kept.key].confirmed == ""  # kept at once: nothing confirmed it


def test_a_repayment_larger_than_the_debt_is_a_dispute(memory: AutoMemory) -> None:
    book, first = apply(memory, {}, _debt(3), now=0, message="m1")
    book, _ = confirm(memory, book, first.key, True, now=1)
    book, _ = apply(memory, book, _debt(-2), now=2, message="m2")
    book, paid = confirm(memory, book, first.key, True, now=3)
    assert paid.kind == "confirmed" and book[first.key].value == 1 and book[first.key].repaid == 2
    book, _ = apply(memory, book, _debt(-5), now=4, message="m3")
    book, over = confirm(memory, book, first.key, True, now=5)
    entry = book[first.key]
    assert (over.kind, entry.value, entry.status, entry.claims) == (
        "disputed",
        1,
        "disputed",
        (-5,),
    )


def test_below_zero_is_refused_without_conservation(memory: AutoMemory) -> None:
    loose = _with(memory, "debt", conservation="none", admission="auto", confirmation="implicit")
    book, first = apply(loose, {}, _debt(1), now=0, message="m1")
    book, under = apply(loose, book, _debt(-2), now=1, message="m2")
    assert under.kind == "refused" and book[first.key].value == 1
    assert (
        apply(_with(loose, "debt", allow_negative=True), book, _debt(-2), now=2, message="m3")[
            1
        ].kind
        == "updated"
    )


def test_no_dismisses_a_proposal(memory: AutoMemory) -> None:
    book, proposed = apply(memory, {}, _debt(3), now=0, message="m1")
    book, outcome = confirm(memory, book, proposed.key, False, now=1)
    assert outcome.kind == "refused" and proposed.key not in book


def test_an_implicit_proposal_is_confirmed_by_saying_it_again(memory: AutoMemory) -> None:
    quiet = _with(memory, "debt", confirmation="implicit")
    book, first = apply(quiet, {}, _debt(3), now=0, message="m1")
    assert first.kind == "proposed"
    book, again = apply(quiet, book, _debt(3), now=1, message="m2")
    assert again.kind == "confirmed" and book[first.key].value == 3


def test_proposals_are_bounded_by_asks(memory: AutoMemory) -> None:
    def owe(item: str) -> Fact:
        return Fact(
            "debt",
            {"debtor": "user", "creditor": "buddy", "item": item, "quantity": 1},
            "asserted",
            "model",
        )

    book: dict[str, Entry] = {}
    for index, item in enumerate(["饭", "面"]):  # asks: 2
        book, outcome = apply(memory, book, owe(item), now=index, message=f"m{index}")
        assert outcome.kind == "proposed"
    book, over = apply(memory, book, owe("书"), now=3, message="m3")
    assert over.kind == "refused" and len(book) == 2


def test_eviction_keeps_the_share_lower_risk_and_older_first(memory: AutoMemory) -> None:
    book: dict[str, Entry] = {}
    facts = [
        Fact(
            "preference", {"subject": "user", "object": "辣", "stance": "喜欢"}, "asserted", "model"
        ),  # R0, old
        Fact(
            "allergy", {"subject": "user", "item": "虾", "kind": "过敏"}, "asserted", "model"
        ),  # R3
        Fact(
            "preference", {"subject": "user", "object": "甜", "stance": "喜欢"}, "asserted", "model"
        ),  # R0, new
    ]
    for at, fact in enumerate(facts):
        book, _ = apply(memory, book, fact, now=at, message=f"m{at}")
    two = replace(memory, share_entries=2)
    kept, gone = evict(two, book, now=10)
    assert gone == [fact_key(two.relation("preference"), facts[0].slots)]  # type: ignore[arg-type]
    assert len(kept) == 2
    assert evict(replace(memory, share_entries=3), book, now=10)[1] == []  # at the bound
    size = sum(len(encode(e).encode("utf-8")) for e in book.values())
    assert evict(replace(memory, share_bytes=size), book, now=10)[1] == []
    assert len(evict(replace(memory, share_bytes=size - 1), book, now=10)[1]) == 1


def test_the_stored_text_round_trips_and_foreign_text_is_left_alone(memory: AutoMemory) -> None:
    book, outcome = apply(memory, {}, _nick("小鱼"), now=0, message="m1")
    entry = book[outcome.key]
    assert decode(encode(entry)) == entry
    assert decode("我自己写的笔记") is None and decode('{"relation": 1}') is None


def test_a_fact_key_is_a_valid_reserved_memory_key(memory: AutoMemory) -> None:
    spec = memory.relation("debt")
    assert spec is not None
    key = fact_key(spec, _debt(3).slots)
    assert key.startswith("auto:debt:") and len(key) <= MEMORY_KEY_CHARS
    assert memory_key_refusal(key) is None
    assert fact_key(spec, _debt(9).slots) == key  # the value does not name the fact


# ---------------------------------------------------------------- the reserved keys

TOOLS = """\
tools:
  - name: remember
    uses: memory.write
    description: 记一件事
    key: "{{ key }}"
    text: "{{ text }}"
  - name: forget
    uses: memory.delete
    description: 忘掉
    key: "{{ key }}"
  - name: recall
    uses: memory.list
    description: 看看记了什么
"""


@pytest.mark.anyio
async def test_the_memory_tools_cannot_touch_automatic_memory(write: Write) -> None:
    from buddy.testing import TestModel, call

    blueprint = buddy.load(write({"buddy.yaml": MINIMAL + TOOLS}))
    model = TestModel(
        [
            call("remember", {"key": "auto:nickname:x", "text": "假的"}),
            call("forget", {"key": "auto:nickname:x"}),
            call("remember", {"key": "口味", "text": "爱吃辣"}),
            call("recall", {}),
            "好。",
        ]
    )
    async with buddy.Agent(blueprint, model) as agent:
        await agent.conversation.memory.write_reserved("auto:nickname:x", "{}")  # the layer may
        outcome = await agent.run("记一下")
        entries = await agent.conversation.memory.list()
    results = [m.content for m in model.requests[-1].messages if m.role == "tool"]
    assert results[0].startswith("「auto:」开头的记忆由自动记忆管理，不能用工具写")
    assert results[1].startswith("「auto:」开头的记忆由自动记忆管理，不能用工具删")
    assert json.loads(results[3]) == [{"key": "口味", "text": "爱吃辣"}]  # auto: entries not listed
    assert [e["key"] for e in entries] == ["auto:nickname:x", "口味"]  # nothing of it was lost
    assert outcome.reply == "好。"


def test_in_a_group_the_speaker_is_the_member_and_each_members_fact_is_its_own(
    memory: AutoMemory,
) -> None:
    nickname, debt = memory.relation("nickname"), memory.relation("debt")
    assert nickname is not None and debt is not None
    said = {"subject": "user", "value": "阿明"}
    li, wang = as_member(nickname, said, "m_li"), as_member(nickname, said, "m_wang")
    assert li == {"subject": "m_li", "value": "阿明"}
    assert len({fact_key(nickname, s) for s in (said, li, wang)}) == 3  # three facts
    # Only party slots that say `user` become the member; `buddy` and values stay.
    owes = {"debtor": "user", "creditor": "buddy", "item": "user", "quantity": 1}
    assert as_member(debt, owes, "m_li") == {**owes, "debtor": "m_li"}
    assert [member_of(debt, s) for s in (owes, as_member(debt, owes, "m_li"))] == [None, "m_li"]
    book: dict[str, Entry] = {}
    for slots, message in ((li, "e1"), (wang, "e2")):
        fact = Fact("nickname", {**slots, "value": message}, "asserted", "model")
        book, outcome = apply(memory, book, fact, now=0.0, message=message)
        assert outcome.kind == "kept"
    assert sorted((e.slots["subject"], e.value) for e in book.values()) == [
        ("m_li", "e1"),
        ("m_wang", "e2"),
    ]
