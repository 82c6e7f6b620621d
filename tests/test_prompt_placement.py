"""Everything declared reaches the model: a part of the companion layer (card, mood,
lore) that the persona template does not place goes into the system prompt at its
default place — asserted on the system prompt the model received, for an inline prompt,
a template that places only some parts, a branch a group conversation does not take, and
an imported SillyTavern card — and what lands nowhere is a located validate error."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import buddy
from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.placed import text as mood_text
from buddy.capabilities.character.prompt import mood_context
from buddy.capabilities.character.state import Mood
from buddy.capabilities.lore.placed import text as lore_text
from buddy.capabilities.memory.placed import text as card_text
from buddy.capabilities.memory.scenario_mood import MoodCheck, verify_mood
from buddy.cli.main import main
from buddy.compile.persona import BUILT_IN_PACK
from buddy.compile.placement import Watched
from buddy.compile.render import render_markdown, view
from buddy.extend import AUTOLOAD_OFF, registry
from buddy.extend import manager as capabilities
from buddy.runtime.turn import Sent
from buddy.testing import TestModel
from buddy.testing.expectations import Observed
from tests.conftest import MINIMAL, Write
from tests.test_cards import V2

pytestmark = pytest.mark.anyio

LAYER = """\
memory:
  auto: true
  relations: [nickname, allergy]
character: traits/tsundere.yaml
lore: lore
"""
BOOK = """\
entries:
  - { name: 规矩, always: true, content: 山上不许御剑。 }
  - { name: 青云宗, keys: [青云], content: 青云宗是山里最大的门派。 }
"""
CARD = "## 你记得的关于对方\n- 称呼：阿明"
CALM = "## 你现在的心情\n你心情平稳。"
RULE = "## 背景设定\n山上不许御剑。"


def _buddy(write: Write, persona: str, *, extra: dict[str, str] | None = None) -> Path:
    tsundere = (BUILT_IN_PACK / "traits/tsundere.yaml").read_text(encoding="utf-8")
    manifest = f"name: c\nmodel: test\npersona:\n{persona}" + LAYER
    files = {"buddy.yaml": manifest, "traits/tsundere.yaml": tsundere, "lore/world.yaml": BOOK}
    return write(files | (extra or {}))


async def _systems(path: Path, *texts: str) -> list[str]:
    """The system prompt of each turn, as the model received it."""
    model = TestModel(["嗯。"] * len(texts))
    extractor = TestModel(['{"facts": []}'] * len(texts))
    async with buddy.Agent(buddy.load(path), model, layer_model=extractor) as agent:
        for text in texts:
            await agent.run(text)
    return [request.system for request in model.requests]


async def test_an_inline_prompt_gets_the_card_the_mood_and_the_lore(write: Write) -> None:
    path = _buddy(write, "  prompt: 你是小c，陪人聊天。\n")
    first, second = await _systems(path, "叫我阿明", "在吗")
    assert second == f"你是小c，陪人聊天。\n\n{CARD}\n\n{CALM}\n\n{RULE}"
    assert first.startswith("你是小c，陪人聊天。\n\n") and f"{CALM}\n\n{RULE}" in first


async def test_a_part_the_template_places_is_not_added_again(write: Write) -> None:
    path = _buddy(write, "  prompt: |\n    记得：{{ memory.card }}\n")
    (system,) = (await _systems(path, "叫我阿明", "在吗"))[1:]
    assert system == f"记得：- 称呼：阿明\n\n{CALM}\n\n{RULE}"
    assert system.count("阿明") == 1


async def test_any_read_places_a_part_even_one_that_shows_nothing(write: Write) -> None:
    # The template decided: it looked at the mood and said nothing of a calm one.
    persona = "  prompt: |\n    {% if character.quarrel %}生气{% endif %}{{ lore.text }}{{ memory.card }}\n"
    (system,) = await _systems(_buddy(write, persona), "在吗")
    assert system == "山上不许御剑。\n"


async def test_a_block_a_child_template_empties_is_not_placed(write: Write) -> None:
    child = '{% extends "companion.md.j2" %}\n{% block companion %}{% endblock %}\n'
    path = _buddy(write, "  template: quiet.md.j2\n", extra={"quiet.md.j2": child})
    (system,) = (await _systems(path, "叫我阿明", "在吗"))[1:]
    assert system.endswith(f"\n\n{CARD}\n\n{CALM}\n\n{RULE}")
    # The shared template itself places all three, so nothing is added to it.
    shared = _buddy(write, "  template: companion.md.j2\n")
    (system,) = (await _systems(shared, "叫我阿明", "在吗"))[1:]
    assert system.count("## 你记得的关于对方") == 1 and system.count("## 背景设定") == 1


async def test_an_imported_cards_lorebook_reaches_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "sera.json"
    source.write_text(json.dumps(V2), encoding="utf-8")
    assert main(["import-card", str(source), "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    model = TestModel(["嗯。"])
    async with buddy.Agent(buddy.load(tmp_path / "seraphina"), model) as agent:
        await agent.run("Is the glade far?")
    assert model.requests[0].system.endswith("\n\n## 背景设定\nThe glade is safe.")


def test_render_shows_where_each_part_lands(write: Write) -> None:
    path = _buddy(write, "  prompt: |\n    记得：{{ memory.card }}\n")
    blueprint = buddy.load(path)
    assert view(blueprint)["prompt_parts"] == [
        {"part": "memory", "where": "template", "chars": 0},
        {"part": "character", "where": "default", "chars": 40},
        {"part": "lore", "where": "default", "chars": 29},
    ]
    shown = render_markdown(blueprint)
    assert "- `memory`: placed by the template\n" in shown
    assert (
        "- `lore`: not placed by the template: added after the persona template's text"
        " (29 characters)\n" in shown
    )
    assert "in this prompt are **examples**" in shown


# ---------------------------------------------------------------- the default texts


@pytest.mark.parametrize(
    ("anger", "sadness", "trust", "hold", "demand"),
    [
        (0.0, 0.0, 0.5, False, False),
        (0.3, 0.4, 0.2, False, False),
        (0.9, 0.0, 0.8, True, True),
        (0.9, 0.5, 0.5, False, True),
    ],
)
def test_the_default_texts_say_what_the_shared_template_says(
    write: Write, anger: float, sadness: float, trust: float, hold: bool, demand: bool
) -> None:
    blueprint = buddy.load(_buddy(write, "  template: companion.md.j2\n"))
    spec: CharacterSpec = blueprint.sections["character"]
    mood = mood_context(spec, Mood(anger=anger, sadness=sadness, trust=trust, at=0.0))
    mood |= {"hold_words": hold, "demand_explanation": demand}
    layer = {
        "memory": {"card": "- 称呼：阿明", "facts": []},
        "character": mood,
        "lore": {"entries": [], "text": "山上不许御剑。"},
    }
    shown = blueprint.persona.render(layer=layer)
    said = "\n\n".join((card_text(layer["memory"]), mood_text(mood), lore_text(layer["lore"])[1]))
    assert f"\n{said}\n" in shown


def test_nothing_to_say_adds_nothing() -> None:
    assert card_text({"card": "", "facts": []}) == ""
    assert lore_text({"entries": [], "text": ""}) == ("", "")


def test_a_watched_value_sees_every_kind_of_read() -> None:
    reads: list[Callable[[Watched], object]] = [
        lambda w: w["card"],
        lambda w: w.get("card"),
        lambda w: "card" in w,
        list,
        len,
        lambda w: w.items(),
        str,
    ]
    for read in reads:
        watched = Watched({"card": "x"})
        assert not watched.read
        read(watched)
        assert watched.read


# ---------------------------------------------------------------- landing nowhere


@pytest.fixture
def with_prompted_echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A third party's section that gives templates a value and has no default place."""
    monkeypatch.delenv(AUTOLOAD_OFF)
    monkeypatch.setattr(
        capabilities,
        "_entry_points",
        lambda: iter([("echo", "tests.capabilities.echo.prompted")]),
    )
    registry.cache_clear()
    yield
    registry.cache_clear()


def test_a_part_with_no_default_place_that_no_template_reads_is_located(
    with_prompted_echo: None, write: Write
) -> None:
    _, issues = buddy.check(write({"buddy.yaml": MINIMAL + "echo:\n  prefix: 听：\n"}))
    assert [(i.line, i.column, i.code) for i in issues] == [(5, 1, "part-unplaced")]
    assert "never uses `echo`" in issues[0].message
    placed = MINIMAL.replace("我是", "我是{{ echo.prefix }}")
    assert placed != MINIMAL
    _, issues = buddy.check(write({"buddy.yaml": placed + "echo:\n  prefix: 听：\n"}))
    assert issues == []


# ---------------------------------------------------------------- in scenario files

BRANCHED = (
    "  prompt: |\n"
    '    {% if conversation.kind == "private" %}{{ memory.card }}{{ character.anger }}'
    "{{ lore.text }}{% endif %}群里。\n"
)
GROUP = """\
scenarios:
  - name: 群里
    conversation: { kind: group, members: [小李, 小王] }
    steps:
      - user: 说到青云
        as: 小李
        model: [嗯。]
        expect:
          prompt:
            contains: ["群里。", "## 你现在的心情\\n你心情平稳。", "## 背景设定\\n山上不许御剑。"]
            not_contains: "0.0"
          lore: [规矩, 青云宗]
  - name: 私聊
    steps:
      - user: 说到青云
        model: [嗯。]
        expect:
          prompt: { contains: "0.0山上不许御剑。", not_contains: "## 背景设定" }
"""


async def _scenarios(
    write: Write, persona: str, text: str, *, manifest: str | None = None, book: str = BOOK
) -> list[list[str]]:
    from buddy.testing.scenario_format import read_suite
    from buddy.testing.scenarios import run_scenario

    extra = {"tests/t.yaml": text, "lore/world.yaml": book}
    extra |= {"buddy.yaml": manifest} if manifest else {}
    path = _buddy(write, persona, extra=extra)
    blueprint = buddy.load(path)
    suite = read_suite(path.parent / "tests" / "t.yaml", blueprint, display="t.yaml")
    assert suite.issues == []
    results = [await run_scenario(blueprint, suite, i) for i in range(len(suite.scenarios))]
    return [[str(f) for f in result.failures] for result in results]


async def test_a_branch_a_group_does_not_take_leaves_its_parts_to_their_default_place(
    write: Write,
) -> None:
    assert await _scenarios(write, BRANCHED, GROUP) == [[], []]


async def test_expect_prompt_fails_where_the_model_was_not_given_the_text(write: Write) -> None:
    failing = GROUP.replace('not_contains: "0.0"', 'not_contains: "群里。"').replace(
        '"0.0山上不许御剑。"', "'## 你记得的关于对方'"
    )
    group, private = await _scenarios(write, BRANCHED, failing)
    assert [f.split(" [")[0] for f in group] == [
        't.yaml:11:27: the system prompt contains "群里。"'
    ]
    assert len(private) == 1
    assert private[0].startswith("t.yaml:18:31: the system prompt does not contain")
    assert "; it ends " in private[0]


LORE_ONLY = """\
scenarios:
  - name: 私聊
    steps:
      - user: 说到青云
        model: [嗯。]
        expect: { lore: [规矩, 青云宗] }
"""


async def test_selected_lore_the_model_was_not_given_fails_the_lore_expectation(
    write: Write,
) -> None:
    # Read, so placed by the template — and then thrown away: the model never sees it.
    persona = "  prompt: |\n    {% set _ = lore.text %}{{ memory.card }}{{ character.anger }}\n"
    ((failure,),) = await _scenarios(write, persona, LORE_ONLY)
    assert failure.startswith(
        "t.yaml:6:25: the lore entry `world/规矩` was selected, but the system prompt the"
        " model received lacks it"
    )
    shown = "  prompt: |\n    {{ lore.text }}{{ memory.card }}{{ character.anger }}\n"
    assert await _scenarios(write, shown, LORE_ONLY) == [[]]


CARD_ONLY = """\
scenarios:
  - name: 私聊
    steps:
      - user: 叫我阿明
        model: [嗯。]
        expect: { card: "- 称呼：阿明" }
"""


async def test_a_card_the_model_was_not_given_fails_the_card_expectation(write: Write) -> None:
    dropped = "  prompt: |\n    {% set _ = memory.card %}{{ character.anger }}{{ lore.text }}\n"
    ((failure,),) = await _scenarios(write, dropped, CARD_ONLY)
    assert failure.startswith(
        't.yaml:6:25: the card\'s line "- 称呼：阿明" was selected, but the system prompt the'
        " model received lacks it"
    )
    shown = "  prompt: |\n    {{ memory.card }}{{ character.anger }}{{ lore.text }}\n"
    assert await _scenarios(write, shown, CARD_ONLY) == [[]]


ANGRY = """\
scenarios:
  - name: 私聊
    steps:
      - user: 你好烦
        extract: { appraisal: { offence: 0.8 } }
        model: [哼。]
        expect: { mood: { anger: [0.3, 1] } }
"""


async def test_a_mood_the_turn_was_not_given_fails_the_mood_expectation(write: Write) -> None:
    persona = "  prompt: 你好。\n"
    assert await _scenarios(write, persona, ANGRY) == [[]]
    # The turn's prompt made before the message was felt (no wait for it, a slow
    # extractor): the mood stored now is angry, the model was given a calm one.
    blueprint = buddy.load(_buddy(write, persona))
    spec: CharacterSpec = blueprint.sections["character"]
    calm = mood_context(spec, Mood(anger=0.0, sadness=0.0, trust=0.5, at=0.0))
    sent = Sent("evt_1", "你好。", (), {"character": calm})
    run = SimpleNamespace(
        blueprint=blueprint,
        cid="c_1",
        server=SimpleNamespace(buddy=SimpleNamespace(turns=SimpleNamespace(sent={"c_1": [sent]}))),
    )
    angry = {"mood": {"anger": 0.6, "sadness": 0.0, "trust": 0.3, "at": 0.0}}
    state = {"run": run, "state": angry, "now": 0.0}
    want = MoodCheck(anger=[0.3, 1])
    ((miss,), _) = verify_mood(want, Observed(systems=["你好。"]), state, True)
    assert miss.message == (
        "anger is 0.6 now, but the step's last turn gave the model 0 (its message was felt"
        " after the turn's prompt was made)"
    )
    # What another request of the step was given is not this turn's.
    assert verify_mood(want, Observed(systems=["别的"]), state, True) == ([], [])


# ---------------------------------------------------------------- before the persona


def test_a_part_may_put_text_before_the_template(write: Write) -> None:
    """Lore an entry puts before the persona (``position: before_persona``) opens the
    system prompt when the template does not place lore; the rest stays after it."""
    from buddy.compile.placement import system_prompt

    blueprint = buddy.load(_buddy(write, "  prompt: 你是一个搭子。\n"))
    lore = {"entries": [], "text": "甲\n\n乙", "before": "甲", "after": "乙"}
    text, landings = system_prompt(
        blueprint.persona, blueprint.placements, {"lore": lore}, kind="private"
    )
    assert text.startswith("## 背景设定\n甲\n\n你是一个搭子。")
    assert text.endswith("你是一个搭子。\n\n## 背景设定\n乙")
    assert [(x.key, x.where) for x in landings] == [("lore", "default")]
    assert lore_text({"text": "乙"}) == ("", "## 背景设定\n乙")  # a value without positions


MACRO_BOOK = """\
macros: true
entries:
  - { name: 规矩, always: true, content: "{{char}}的山上不许御剑。" }
  - { name: 掌门, keys: [掌门], position: depth, depth: 0, content: "{{char}}的师父就是掌门。" }
"""
DEPTH_ONLY = """\
scenarios:
  - name: 私聊
    steps:
      - user: 说到掌门
        model: [嗯。]
        expect: { lore: [规矩, 掌门] }
"""


async def test_the_lore_expectation_sees_macros_replaced_and_entries_at_a_depth(
    write: Write,
) -> None:
    """What the model was given is the entry as the turn said it: ``{{char}}`` replaced,
    and an entry at a depth among the request's messages, not in the system prompt."""
    assert await _scenarios(write, "  prompt: 你好。\n", DEPTH_ONLY, book=MACRO_BOOK) == [[]]
