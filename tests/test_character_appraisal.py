"""Appraisal files: the shipped `zh` and what it reads (its hard negatives too), how
`character: {appraisal}` finds a file — shipped, overridden on the search path, by path,
`null` — every rule of a file located, and when the extractor model is asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.capabilities.character.appraise import appraised
from buddy.capabilities.character.compile import SHIPPED_APPRAISALS, shipped_appraisals
from buddy.capabilities.character.compiled import AppraisalPatterns, CharacterSpec
from buddy.capabilities.companion.extraction import asked, patterned
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.patterns import Budget
from buddy.compile.persona import BUILT_IN_PACK
from buddy.compile.render import view
from buddy.testing import TestModel
from tests.conftest import MINIMAL, REPO, Write

TRAITS = (BUILT_IN_PACK / "traits/gentle.yaml").read_text(encoding="utf-8")


def _load(write: Write, section: str, files: dict[str, str] | None = None) -> buddy.Blueprint:
    path = write({"buddy.yaml": MINIMAL + section, "traits/t.yaml": TRAITS, **(files or {})})
    return buddy.load(path)


def _issues(write: Write, section: str, files: dict[str, str]) -> list[tuple[str, int, str, str]]:
    path = write({"buddy.yaml": MINIMAL + section, "traits/t.yaml": TRAITS, **files})
    _, issues = buddy.check(path)
    return [(Path(i.file).name, i.line, i.path, i.code) for i in issues]


@pytest.fixture
def zh(write: Write) -> AppraisalPatterns:
    character: CharacterSpec = _load(write, "character: traits/t.yaml\n").sections["character"]
    assert character.appraisal is not None
    return character.appraisal


def test_the_shipped_file_is_zh_and_every_character_reads_with_it(
    zh: AppraisalPatterns,
) -> None:
    assert shipped_appraisals() == ["zh"]
    assert zh.name == "zh" and zh.file == (SHIPPED_APPRAISALS / "zh.yaml").resolve()
    kinds = {r.kind for r in zh.rules}
    assert kinds == {"offence", "apology", "care", "explained"}
    assert all(0 < r.strength <= 1 for r in zh.rules)
    assert "{{" not in "".join(r.match for r in zh.rules)  # word lists are put in
    assert zh.unless["offence"] >= {"reported", "hypothetical", "laughter", "joke"}


def _kinds(found: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (found or {}).items() if v}


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("滚", {"offence": 0.7}),
        ("你给我滚", {"offence": 0.7}),
        ("你是不是傻", {"offence": 0.5}),  # a question, and still an offence
        ("你真的好烦", {"offence": 0.5}),
        ("烦死了！", {"offence": 0.3}),  # alone: nobody but the buddy to mean
        ("对不起", {"apology": 0.7}),
        ("我不是故意的", {"apology": 0.5}),  # a denial, and an apology
        ("对不起，因为加班所以没回你", {"apology": 0.7, "explained": True}),
        ("谢谢你", {"care": 0.5}),
        ("想你了", {"care": 0.6}),
        ("谢谢你，滚吧", {"offence": 0.7, "care": 0.5}),  # each kind its strongest
        ("谢谢你全家", {"offence": 0.4}),  # a sneer, no thanks
        ("不好意思，我来晚了", {"apology": 0.4}),
        ("抱歉，昨天太困睡着了", {"apology": 0.7, "explained": True}),  # what happened
        ("上次真是多谢你", {"care": 0.5}),
    ],
)
def test_what_zh_reads(zh: AppraisalPatterns, text: str, kinds: dict[str, Any]) -> None:
    assert _kinds(appraised(zh, text)) == kinds


@pytest.mark.parametrize(
    "text",
    [
        "烦死了这破电脑",  # something else is meant
        "烦死了，明天又要考试",
        "上班烦死了",
        "他对我说滚",  # reported
        "我妈让我闭嘴",  # someone else
        "哈哈滚啦",  # teasing
        "哈哈你真傻",
        "如果我让你滚，你会难过吗",  # a supposition
        "滚烫的火锅最好吃了",
        "你不傻",
        "我好傻啊",
        "不用谢",
        "我想你是不是误会了",
        "因为下雨所以没去",  # a reason, and no apology: nothing felt
        "今天好累",
        "不好意思，请问地铁站怎么走",  # a courtesy before a request (unless_said)
        "不好意思，麻烦让一下",
        "谢谢惠顾",  # a shop's formula
        "谢谢，欢迎下次光临",
        "谢谢老板的红包",  # someone else thanked
        "谢谢你全家 我谢谢你啊",  # the sneer's thanks said again: mocking, no offence
        # blind21's round: the sneer with an emoji (the sets split), thanks for a help that made
        # it worse (irony), words said to someone else, said so after them
        "谢谢你全家 🙄",
        "多谢你 越帮越忙",
        "滚开 我是冲我家猫吼的",
        "我才没有生气 别瞎说",  # a denial of one's own, then 别瞎说: a correction
        # blind22's round: thanks taken back by saying nothing helped (irony), thanks to someone
        # named by their role, an apology owed as a thing (a figurative debt)
        "多谢啊 半点用都没有",
        "谢谢快递员 这么热还送上楼",
        "你还欠我一个道歉呢 哼",
    ],
)
def test_what_zh_does_not_read(zh: AppraisalPatterns, text: str) -> None:
    assert appraised(zh, text) is None


def test_appraisal_patterns_spend_the_messages_budget(zh: AppraisalPatterns) -> None:
    assert appraised(zh, "滚", Budget(0)) is None  # nothing left: nothing taken, no error


def test_the_rules_joined_find_a_clause_exactly_when_one_rule_does(
    zh: AppraisalPatterns,
) -> None:
    """The joined expression only spares searches: on every message of the labelled corpus
    the appraisal is what the rules one by one give."""
    import dataclasses

    from buddy.capabilities.companion.measure import read_labelled

    assert zh.either is not None
    each = dataclasses.replace(zh, either=None)
    corpus = REPO / "tests" / "companion_corpus" / "messages.yaml"
    said = [m.say for m in read_labelled(corpus, corpus.name)[0].messages]  # type: ignore[union-attr]
    assert len(said) > 1500
    assert [appraised(zh, m) for m in said] == [appraised(each, m) for m in said]


def test_a_clause_the_joined_search_ran_out_of_time_on_is_searched_rule_by_rule(
    zh: AppraisalPatterns,
) -> None:
    assert zh.either is not None
    budget = Budget()
    budget._stopped.add((zh.either, False))  # as if it had backtracked past its time
    assert _kinds(appraised(zh, "对不起", budget)) == {"apology": 0.7}
    assert budget.stopped(zh.either)


def test_null_leaves_appraising_to_the_model(write: Write) -> None:
    section = "character: { traits: traits/t.yaml, appraisal: null }\n"
    assert _load(write, section).sections["character"].appraisal is None


OWN = """\
appraisal: mine
version: 1
note: 只认一个字。
words:
  go: [走, 滚]
offence:
  unless: [laughter]
  patterns:
    - { match: '^{{go}}$', strength: 0.9, unless_said: '走路' }
explained:
  patterns:
    - { match: '因为' }
"""


def test_a_project_file_of_the_same_name_overrides_the_shipped_one(write: Write) -> None:
    blueprint = _load(write, "character: traits/t.yaml\n", {"appraisals/zh.yaml": OWN})
    table = blueprint.sections["character"].appraisal
    assert table.name == "mine" and [r.match for r in table.rules] == ["^(?:滚|走)$", "因为"]
    assert appraised(table, "走") == {
        "offence": 0.9,
        "apology": 0.0,
        "care": 0.0,
        "explained": False,
    }
    assert appraised(table, "对不起") is None  # only what the file says
    shown = view(blueprint)["character"]["appraisal"]
    assert shown["file"] == "appraisals/zh.yaml" and shown["kinds"]["offence"]["patterns"] == 1


def test_a_file_is_found_by_name_on_the_search_path_or_by_path(write: Write) -> None:
    by_name = _load(
        write,
        "character: { traits: traits/t.yaml, appraisal: mine }\n",
        {"appraisals/mine.yaml": OWN},
    )
    assert by_name.sections["character"].appraisal.name == "mine"
    by_path = _load(
        write,
        "character: { traits: traits/t.yaml, appraisal: moods/m.yaml }\n",
        {"moods/m.yaml": OWN},
    )
    assert by_path.sections["character"].appraisal.name == "mine"
    shown = view(_load(write, "character: traits/t.yaml\n"))["character"]
    assert shown["appraisal"]["file"] == "buddy:appraisals/zh.yaml"


def test_an_unknown_file_is_located_with_a_did_you_mean(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL + "character: { traits: traits/t.yaml, appraisal: gentel }\n",
            "traits/t.yaml": TRAITS,
            "appraisals/gentle.yaml": OWN,
        }
    )
    _, issues = buddy.check(path)
    (issue,) = issues
    assert (issue.line, issue.path, issue.code) == (5, "character.appraisal", "appraisal-not-found")
    assert issue.hint == "did you mean `gentle`?"
    _, issues = buddy.check(
        write({"buddy.yaml": MINIMAL + "character: { traits: traits/t.yaml, appraisal: xx }\n"})
    )
    assert issues[0].hint.startswith("there are: gentle, zh; a path is looked up on: ")


# line of OWN → (what replaces it, where the problem is: line and path in the file)
BROKEN = {
    "    - { match: '^{{go}}$', strength: 0.9,": (
        "    - { match: '^{{run}}$', strength: 0.9,",
        (9, "offence.patterns[0].match"),
    ),
    "    - { match: '^{{go}}$', strength: 0.9, unless_said: '走路' }\n": (
        "    - { match: '^(?:{{go}}+)+$', strength: 0.9, unless_said: '走路' }\n",
        (9, "offence.patterns[0].match"),
    ),
    "unless_said: '走路'": ("unless_said: '(?:{{go}}+)+'", (9, "offence.patterns[0].unless_said")),
    "    - { match: '因为' }": (
        "    - { match: '因为', strength: 1 }",
        (12, "explained.patterns[0].strength"),
    ),
    "strength: 0.9": ("strength: 1.5", (9, "offence.patterns[0].strength")),
    ", strength: 0.9,": (",", (9, "offence.patterns[0]")),
    "  unless: [laughter]": ("  unless: [laughing]", (7, "offence.unless[0]")),
    "appraisal: mine": ("appraisal: Mine", (1, "appraisal")),
    "note: 只认一个字。": ("nots: 只认一个字。", (3, "nots")),
}


@pytest.mark.parametrize("line", list(BROKEN))
def test_each_rule_of_a_file_is_located_in_it(write: Write, line: str) -> None:
    replacement, (at, where) = BROKEN[line]
    assert line in OWN
    found = _issues(
        write, "character: traits/t.yaml\n", {"appraisals/zh.yaml": OWN.replace(line, replacement)}
    )
    if where == "nots":  # an unknown key, and the missing note
        assert ("zh.yaml", at, where, "appraisal-file") in found
        return
    assert found == [("zh.yaml", at, where, "appraisal-file")]


# ---------------------------------------------------------------- when the model is asked

AUTO = "memory:\n  auto: true\n  relations: [nickname, allergy]\n"


@pytest.fixture
def both(write: Write) -> tuple[AutoMemory, CharacterSpec]:
    blueprint = _load(write, AUTO + "character: traits/t.yaml\n")
    return blueprint.sections["memory"], blueprint.sections["character"]


@pytest.mark.parametrize(
    ("text", "facts", "appraisal", "ask"),
    [
        ("叫我小鱼", 1, False, False),  # a fact: the patterns said something
        ("你真烦", 0, True, False),  # an appraisal: likewise
        ("谢谢你，叫我小鱼", 1, True, False),
        ("今天好累", 0, False, True),  # nothing: the model is asked once
    ],
)
def test_the_model_is_asked_only_when_the_patterns_said_nothing(
    both: tuple[AutoMemory, CharacterSpec], text: str, facts: int, appraisal: bool, ask: bool
) -> None:
    memory, character = both
    found, needed = patterned(memory, character, text)
    assert (len(found.facts), found.appraisal is not None, needed) == (facts, appraisal, ask)


def test_without_an_appraisal_file_the_model_appraises_every_message(write: Write) -> None:
    blueprint = _load(write, AUTO + "character: { traits: traits/t.yaml, appraisal: null }\n")
    memory, character = blueprint.sections["memory"], blueprint.sections["character"]
    assert patterned(memory, character, "叫我小鱼")[1] is True


def test_without_a_character_the_model_is_asked_only_for_facts(write: Write) -> None:
    memory = _load(write, AUTO).sections["memory"]
    assert patterned(memory, None, "你真烦") == (patterned(memory, None, "你真烦")[0], True)
    assert patterned(memory, None, "叫我小鱼")[1] is False
    assert patterned(memory, None, "叫我小鱼")[0].appraisal is None


def test_a_character_without_memory_asks_when_no_appraisal(write: Write) -> None:
    blueprint = _load(write, "character: traits/t.yaml\n")
    memory = AutoMemory(
        auto=False, model=None, relations=(), card_chars=600, budget_chars=2000, wait_ms=400,
        asks=2, share_entries=32, share_bytes=65536,
    )  # fmt: skip
    character = blueprint.sections["character"]
    assert patterned(memory, character, "你真烦")[1] is False
    assert patterned(memory, character, "今天好累")[1] is True


pytestmark = pytest.mark.anyio


async def test_the_models_fact_of_the_same_key_replaces_the_patterns(write: Write) -> None:
    blueprint = _load(write, AUTO + "character: { traits: traits/t.yaml, appraisal: null }\n")
    memory, character = blueprint.sections["memory"], blueprint.sections["character"]
    found, _ = patterned(memory, character, "我对花生过敏，很严重")
    severe = {"subject": "user", "item": "花生", "kind": "过敏", "severity": "严重"}
    answer = json.dumps({"facts": [{"relation": "allergy", "slots": severe}]}, ensure_ascii=False)
    got = await asked(memory, TestModel([answer]), "", "我对花生过敏，很严重", found)
    assert [dict(f.slots) for f in got.facts] == [severe]


async def test_offline_the_mood_moves_with_no_model_call(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": "name: c\nmodel: test\npersona:\n  prompt: '气：{{ character.anger }}'\n"
            "character: traits/t.yaml\n",
            "traits/t.yaml": TRAITS,
        }
    )
    extractor = TestModel([])  # asked for anything, it fails the test
    model = TestModel(["哼。", "嗯。"])
    async with buddy.Agent(buddy.load(path), model, layer_model=extractor) as agent:
        await agent.run("你真烦")
        await agent.settled()
        await agent.run("滚")
        # gentle: offence 0.5 × sensitivity 0.4, then 0.7 × 0.4 more
        assert [r.system for r in model.requests] == ["气：0.2", "气：0.48"]
    assert extractor.requests == []
