"""What a turn's prompt gets from the companion layer, as its report tells the playground's
context inspector: each part's size and text, why a part has no size, and only the last
few reports keep the texts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion.context import TEXTS_KEPT, layered
from buddy.capabilities.companion.mind import Mind
from buddy.capabilities.memory.extract import Fact
from buddy.capabilities.memory.ledger import apply
from buddy.compile.blueprint import Blueprint
from buddy.compile.persona import BUILT_IN_PACK
from tests.conftest import MINIMAL, Write

SECTIONS = """\
memory:
  auto: true
  relations: [nickname, debt]
character: { traits: traits/gentle.yaml, appraisal: null }
lore: lore
"""
BOOK = "entries:\n  - { name: 同桌, always: true, content: 你们是高中同桌。 }\n"


@dataclass
class _Event:
    id: str
    created_at: float = 100.0
    type: str = "message"
    payload: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
def blueprint(write: Write) -> Blueprint:
    traits = (BUILT_IN_PACK / "traits/gentle.yaml").read_text(encoding="utf-8")
    files = {"buddy.yaml": MINIMAL + SECTIONS, "traits/gentle.yaml": traits}
    return buddy.load(write({**files, "lore/school.yaml": BOOK}))


def _report(blueprint: Blueprint, mind: Mind, event: str) -> tuple[dict[str, str], dict[str, str]]:
    sections = blueprint.sections
    layered(sections["memory"], sections["character"], sections["lore"], mind, _Event(event), True)
    report = mind.reports[-1]
    assert [name for name, _ in report.texts] == [name for name, _ in report.parts]
    return dict(report.texts), dict(report.empty)


def test_each_part_has_its_text_and_an_empty_one_says_why(blueprint: Blueprint) -> None:
    mind = Mind()
    texts, empty = _report(blueprint, mind, "e1")
    assert texts == {
        "memory.card": "",
        "character": "你心情平稳。",
        "lore:school/同桌": "你们是高中同桌。",
    }
    assert empty["memory.card"] == "nothing known yet — the card is empty"
    assert empty["character"].startswith(
        "given to the template as numbers (anger 0.00, sadness 0.00, trust 0.50), not as text"
    )
    memory = blueprint.sections["memory"]
    owed = {"debtor": "user", "creditor": "buddy", "item": "奶茶", "quantity": 1}
    mind.ledger, _ = apply(memory, {}, Fact("debt", owed, "asserted", "model"), now=1, message="m1")
    texts, empty = _report(blueprint, mind, "e2")
    assert empty["memory.card"] == (
        "nothing kept yet — 1 fact awaits confirmation; the card lists kept facts only"
    )
    assert texts["ask"].startswith("## 先问一句再记\n对方刚提到这件事：欠账")
    nickname = Fact("nickname", {"subject": "user", "value": "小鱼"}, "asserted", "pattern")
    mind.ledger, _ = apply(memory, mind.ledger, nickname, now=2, message="m2")
    texts, empty = _report(blueprint, mind, "e3")
    assert texts["memory.card"] == "- 称呼：小鱼" and "memory.card" not in empty


def test_only_the_last_reports_keep_their_texts(blueprint: Blueprint) -> None:
    mind = Mind()
    for index in range(TEXTS_KEPT + 2):
        _report(blueprint, mind, f"e{index}")
    assert [bool(r.texts) for r in mind.reports] == [False, False] + [True] * TEXTS_KEPT
    assert all(r.parts and r.empty for r in mind.reports)  # the sizes and reasons stay
