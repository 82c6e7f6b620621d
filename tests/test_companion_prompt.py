"""What persona templates see of the companion layer — ``memory``, ``character``,
``lore`` — in ``buddy render`` (a fixed example) and in a conversation (nothing known
yet), the names reserved, and the shared template's companion block."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import buddy
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.prompt import card_text
from buddy.compile.persona import BUILT_IN_PACK
from buddy.compile.render import view
from buddy.extend import persona_layer
from buddy.testing import TestModel
from tests.conftest import MINIMAL, Write

pytestmark = pytest.mark.anyio

LAYER = """\
memory:
  relations: [nickname, allergy]
character: traits/tsundere.yaml
lore: lore
"""
BOOK = """\
entries:
  - { name: 规矩, always: true, content: 山上不许御剑。 }
  - { name: 青云宗, keys: [青云], content: 青云宗是山里最大的门派。 }
  - { name: 灵兽, keys: [鹤], content: 后山有白鹤。 }
"""


def _companion(write: Write, prompt: str) -> Path:
    tsundere = (BUILT_IN_PACK / "traits/tsundere.yaml").read_text(encoding="utf-8")
    manifest = f"name: c\nmodel: test\npersona:\n  prompt: |\n    {prompt}\n" + LAYER
    return write(
        {"buddy.yaml": manifest, "traits/tsundere.yaml": tsundere, "lore/world.yaml": BOOK}
    )


def test_the_example_layer_is_a_fact_per_relation_a_stung_mood_and_the_lore_in_play(
    write: Write,
) -> None:
    layer = persona_layer(buddy.load(_companion(write, "hi")), example=True)
    assert layer["memory"]["card"] == "- 称呼：小鱼\n- 过敏与忌口：食物 花生，类别 过敏，程度 严重"
    assert [f["relation"] for f in layer["memory"]["facts"]] == ["nickname", "allergy"]
    # tsundere after offence 0.6: anger 0.84 capped at 0.35, trust 0.5 − 0.3
    assert {k: layer["character"][k] for k in ("anger", "trust", "quarrel", "hold_words")} == {
        "anger": 0.35,
        "trust": 0.2,
        "quarrel": False,
        "hold_words": True,
    }
    assert [e["name"] for e in layer["lore"]["entries"]] == [
        "规矩",
        "青云宗",
    ]  # always, then a keyed one


def test_a_conversation_starts_knowing_nothing_and_calm(write: Write) -> None:
    layer = persona_layer(buddy.load(_companion(write, "hi")), example=False)
    assert layer["memory"] == {"card": "", "facts": []}
    assert (layer["character"]["anger"], layer["character"]["trust"]) == (0.0, 0.5)
    assert layer["lore"]["text"] == "山上不许御剑。"


async def test_a_template_using_the_layer_validates_renders_and_runs(write: Write) -> None:
    path = _companion(
        write, "记得：{{ memory.card }} 气：{{ character.anger }} 设定：{{ lore.text }}"
    )
    blueprint = buddy.load(path)
    shown = view(blueprint)["system_prompt"]
    assert "记得：- 称呼：小鱼" in shown and "气：0.35" in shown and "设定：山上不许御剑。" in shown
    model = TestModel(["好。"])
    extractor = TestModel(['{"facts": []}'])  # the layer's own model, not the buddy's
    outcome = await buddy.Agent(blueprint, model, layer_model=extractor).run("你好")
    assert outcome.reply == "好。"
    assert model.requests[0].system == "记得： 气：0.0 设定：山上不许御剑。\n"


def test_the_layer_names_are_reserved_in_vars(write: Write) -> None:
    path = write({"buddy.yaml": MINIMAL.rstrip("\n") + "\n  vars: { memory: 1, lore: 2 }\n"})
    _, issues = buddy.check(path)
    assert [(i.code, i.path) for i in issues] == [
        ("reserved-var", "persona.vars.memory"),
        ("reserved-var", "persona.vars.lore"),
    ]


def test_the_card_keeps_whole_lines_within_its_length(write: Write) -> None:
    memory: AutoMemory = buddy.load(_companion(write, "hi")).sections["memory"]
    assert memory is not None
    nickname, allergy = memory.relations
    facts = [
        (nickname, {"subject": "user", "value": "小鱼"}),
        (allergy, {"subject": "user", "item": "虾", "kind": "过敏"}),
    ]
    first = "- 称呼：小鱼"
    both = first + "\n- 过敏与忌口：食物 虾，类别 过敏"

    def sized(n: int) -> AutoMemory:
        return replace(memory, card_chars=n)

    assert card_text(sized(len(both)), facts) == both
    assert card_text(sized(len(both) - 1), facts) == first


def test_a_groups_card_names_each_members_facts_within_its_length(write: Write) -> None:
    memory: AutoMemory = buddy.load(_companion(write, "hi")).sections["memory"]
    assert memory is not None
    nickname, allergy = memory.relations
    facts = [
        (allergy, {"subject": "m_li", "item": "虾", "kind": "过敏"}),
        (nickname, {"subject": "m_wang", "value": "老王"}),
        (nickname, {"subject": "m_li", "value": "阿明"}),
        (nickname, {"subject": "m_zhao", "value": "小赵"}),
    ]
    names = {"m_wang": "小王", "m_li": "小李"}  # who spoke last first; 小赵's name unknown
    whole = (
        "[小王 #m_wang]\n- 称呼：老王\n[小李 #m_li]\n- 过敏与忌口：食物 虾，类别 过敏\n"
        "- 称呼：阿明\n[#m_zhao]\n- 称呼：小赵"
    )

    def sized(n: int) -> AutoMemory:
        return replace(memory, card_chars=n)

    assert card_text(sized(len(whole)), facts, names=names) == whole
    # A member's name goes in only with their first fact; the card stops at a line
    # that does not fit, as in a private chat.
    cut = whole[: whole.index("\n[#m_zhao]")]
    assert card_text(sized(len(whole) - 1), facts, names=names) == cut
    assert card_text(sized(len("[小王 #m_wang]\n- 称呼：老王") - 1), facts, names=names) == ""


def test_the_shared_template_says_what_it_remembers_and_how_it_feels(write: Write) -> None:
    files = {
        "buddy.yaml": "name: c\nmodel: test\npersona:\n  template: companion.md.j2\n"
        "  traits: traits/tsundere.yaml\n" + LAYER,
        "lore/world.yaml": BOOK,  # the template and the traits: the ones buddy ships
    }
    shown = view(buddy.load(write(files)))["system_prompt"]
    assert "## 你记得的关于对方\n- 称呼：小鱼\n" in shown
    assert (
        "## 你现在的心情\n你有点不高兴，但不至于翻脸。\n你对对方还有戒心，不轻易交心。\n" in shown
    )
    assert "## 背景设定\n山上不许御剑。\n\n青云宗是山里最大的门派。\n" in shown
