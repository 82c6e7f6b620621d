"""How well the shipped patterns read realistic chat messages: the labelled corpus in
tests/companion_corpus/ — the figures the docs show, the floors they are held to, and no
R2/R3 fact from a hard negative. Run with ``-s`` to see the tables (they are also recorded
as the test's properties in JUnit XML)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import buddy
from buddy.capabilities.companion.measure import (
    LabelledFile,
    Measured,
    measure,
    read_labelled,
    report,
)
from buddy.capabilities.memory.relations import RelationFile, fact_problems
from buddy.compile.blueprint import Blueprint
from tests.conftest import REPO

CORPUS = REPO / "tests" / "companion_corpus"
DEV = CORPUS / "messages.yaml"
HELD_OUT = CORPUS / "blind.yaml"
#: The second blind set: first measured unseen, then tuned against (a development held-out).
HELD_OUT_2 = CORPUS / "blind2.yaml"
#: The third blind set: first measured unseen at relations 0.87/0.42 (precision/recall),
#: appraisal 1.00/0.47, then tuned against (a development held-out too).
HELD_OUT_3 = CORPUS / "blind3.yaml"
#: The fourth blind set: first measured unseen at relations 0.89/0.68 (appraisal 0.94/0.80,
#: 4 R2/R3 facts from hard negatives), then tuned against (a development held-out too).
HELD_OUT_4 = CORPUS / "blind4.yaml"
#: The fifth blind set: held out while blind4.yaml was tuned against, first measured unseen
#: at relations 0.94/0.74 (appraisal 0.96/0.62, 2 R2/R3 facts from hard negatives: two
#: figurative debts), then tuned against (a development held-out too).
HELD_OUT_5 = CORPUS / "blind5.yaml"
#: The sixth blind set: held out while blind5.yaml was tuned against, first measured unseen
#: at relations 0.88/0.64 (appraisal 0.91/0.85, 2 R2/R3 facts from hard negatives: two
#: figurative debts), then tuned against (a development held-out too).
HELD_OUT_6 = CORPUS / "blind6.yaml"
#: The seventh blind set: held out while blind6.yaml was tuned against, first measured unseen
#: at relations 0.92/0.65 (appraisal 0.95/0.70, 2 R2/R3 facts from hard negatives: a denied
#: dietary rule taken for one, 「姜我从来不吃 不是忌口啊」, and a trip owed, 「你欠我一次云南之旅」),
#: then tuned against (a development held-out too).
HELD_OUT_7 = CORPUS / "blind7.yaml"
#: The eighth blind set: held out while blind7.yaml was tuned against, first measured unseen
#: at relations 0.92/0.70 (appraisal 0.95/0.82, no R2/R3 fact from hard negatives; 0.93/0.70
#: once one label was aligned to the conventions), then tuned against (a development
#: held-out too).
HELD_OUT_8 = CORPUS / "blind8.yaml"
#: The ninth blind set: held out while blind8.yaml was tuned against, first measured unseen
#: at relations 0.94/0.70 (appraisal 0.96/0.88, no R2/R3 fact from hard negatives; 8 of its
#: 18 wrong facts allergies without the severity a later clause gave in words no list had),
#: then tuned against (a development held-out too).
HELD_OUT_9 = CORPUS / "blind9.yaml"
#: The tenth blind set: held out while blind9.yaml was tuned against, first measured unseen
#: at relations 0.93/0.70 (appraisal 0.98/0.83, 2 R2/R3 facts from hard negatives: a debt
#: to the buddy said after one to a bank and repaid at once, and a dietary rule whose item
#: ran into the doctor's words; 9 of its 21 wrong facts allergies without the severity a
#: later clause gave), then tuned against (a development held-out too).
HELD_OUT_10 = CORPUS / "blind10.yaml"
#: The eleventh blind set: held out while blind10.yaml was tuned against, first measured
#: unseen at relations 0.93/0.69 (appraisal 0.94/0.80, 4 R2/R3 facts from hard negatives: two
#: dietary rules on 也 and 着 from a father's rule the user follows, 「我爸糖尿病忌口甜的 我也跟着不敢
#: 吃了」, and two allergies kept without the severity the message gives, 「吃一次吐一次」
#: 「难受得要死」), then tuned against (a development held-out too).
HELD_OUT_11 = CORPUS / "blind11.yaml"
#: The twelfth blind set: held out while blind11.yaml was tuned against, first measured
#: unseen at relations 0.93/0.66 (appraisal 0.96/0.76, no R2/R3 fact from hard negatives),
#: then tuned against (a development held-out too).
HELD_OUT_12 = CORPUS / "blind12.yaml"
#: The thirteenth blind set: held out while blind12.yaml was tuned against, first measured
#: unseen at relations 0.94/0.67 (appraisal 0.96/0.83, no R2/R3 fact from hard negatives; two
#: debts repaid now read as owed, 「我欠你200块 微信转过去了 咱俩清了」), then tuned against (a
#: development held-out too).
HELD_OUT_13 = CORPUS / "blind13.yaml"
#: The fourteenth blind set: held out while blind13.yaml was tuned against, first measured
#: unseen at relations 0.966/0.69 (appraisal 1.00/0.75, no R2/R3 fact from hard negatives; its
#: one false R3 fact a dietary item cut from the tail of a time word, 「减肥期间碳水一口不吃」 read
#: as 间碳水), then tuned against (a development held-out too).
HELD_OUT_14 = CORPUS / "blind14.yaml"
#: The fifteenth blind set: held out while blind14.yaml was tuned against, first measured
#: unseen at relations 0.968/0.63 (appraisal 0.99/0.73, no R2/R3 fact from hard negatives; its
#: one false R2 fact a debt paid in the same clause read as owed, 「欠你的八十块刚微信转过去了」
#: with the item 刚微信转过去), then tuned against (a development held-out too).
HELD_OUT_15 = CORPUS / "blind15.yaml"
#: The sixteenth blind set: held out while blind15.yaml was tuned against, first measured
#: unseen at relations 0.968/0.65 (appraisal 1.00/0.82, no R2/R3 fact from hard negatives; two
#: of its false R3/R2 items were no thing — 「医生叫我忌口」 read with the item 叫, 「我还你100先」
#: with the item 先 — and a debt paid now, 「欠你的两张明信片今天寄啦」, read as owed), then
#: tuned against (a development held-out too).
HELD_OUT_16 = CORPUS / "blind16.yaml"
#: The seventeenth blind set: held out while blind16.yaml was tuned against, first measured
#: unseen at relations 0.954/0.60 (appraisal 0.96/0.79, no R2/R3 fact from hard negatives; four
#: debts read wrongly — a repayment's item run into 「查收一下」, a measure word 套 in the item,
#: 「欠你的六块钱 还你咯」 read as owed, a two-way 扯平 read as one repayment), then tuned
#: against (a development held-out too).
HELD_OUT_17 = CORPUS / "blind17.yaml"
#: The eighteenth blind set: held out while blind17.yaml was tuned against, first measured
#: unseen at relations 0.933/0.62 (appraisal 0.97/0.78, no R2/R3 fact from hard negatives; five
#: dietary rules with a reason the patterns did not know — a diet kept, a regimen's period, a
#: custom, a faith, a pet kept — read as dislikes, 「欠你的六十块今天才还」 read as owed, a
#: rhetorical 「谢谢有用吗」 and a teasing 「我喜欢你呀 你这个小机灵鬼」 read as care), then tuned
#: against (a development held-out too).
HELD_OUT_18 = CORPUS / "blind18.yaml"
#: The nineteenth blind set: held out while blind18.yaml was tuned against, written for
#: phrasings a simple pattern reader would not expect, first measured unseen at relations
#: 0.974/0.54 (appraisal 1.00/0.79, no R2/R3 fact from hard negatives; a full name kept where
#: a later clause gives the name others use with 俺 and asks the buddy to use it too, three
#: allergies whose severity was said in words not read — 好犀利, 入院, 会要命, 住过院的那种 — and
#: two cups of coffee treated now, 「今天请了」, read as owed), then tuned against (a
#: development held-out too).
HELD_OUT_19 = CORPUS / "blind19.yaml"
#: The twentieth blind set: written at the same time as blind19.yaml, to the same brief, by a
#: second writer, and held out while blind19.yaml was tuned against, first measured unseen at
#: relations 0.958/0.55 (appraisal 0.96/0.73, no R2/R3 fact from hard negatives; a name with a
#: word after it, a thing with where it sits, a smell with its verb, a liking given up later,
#: allergies whose severity was said in words not read or read the wrong way, two things run
#: together before 一律, a thing left at the buddy's door read as owed, 讨厌鬼 read as a dislike,
#: a denial before 别瞎说 and a mocking 「谢谢你全家 真的会谢」 read as offences), then tuned
#: against (a development held-out too).
HELD_OUT_20 = CORPUS / "blind20.yaml"
#: Written blind after blind20.yaml's round; its first reading (relations 0.965/0.71, appraisal
#: 0.95/0.85) showed 12 wrong facts (苦瓜这玩意儿 打死我也不吃 read as a dislike of 打死, where and
#: what for read with the thing, an adverb after it, 刷、泡、食 before it, 轩轩更 as a name, two mild
#: allergies said in new words, 海带紫菜 as one item, 今晚一次还清 read as owed) and 3 wrong
#: appraisals (谢谢你全家 😒, words said to a parrot, thanks for 帮了倒忙), then tuned against.
HELD_OUT_21 = CORPUS / "blind21.yaml"
#: Written blind after blind21.yaml's round; its first reading (relations 0.955/0.69, appraisal
#: 0.96/0.85) showed 15 wrong facts (a promise after a condition, 发了工资就给你, read as repaid and
#: a bare 给你 not, 最好 read into a dietary item, 一点都会喘不过气 without its severity, likings with
#: more than the thing: a verb of handling, 点, a time of day or 在家 before it, 唱歌跳舞 and 猫和兔子
#: run together, 肥宅快乐水 for 可乐) and 3 wrong appraisals (thanks taken back by 一句有用的都没有,
#: thanks to 外卖小哥, an apology owed as a thing), then tuned against.
HELD_OUT_22 = CORPUS / "blind22.yaml"
#: The blind sets tuned against, in the order they were written.
TUNED = (
    HELD_OUT,
    HELD_OUT_2,
    HELD_OUT_3,
    HELD_OUT_4,
    HELD_OUT_5,
    HELD_OUT_6,
    HELD_OUT_7,
    HELD_OUT_8,
    HELD_OUT_9,
    HELD_OUT_10,
    HELD_OUT_11,
    HELD_OUT_12,
    HELD_OUT_13,
    HELD_OUT_14,
    HELD_OUT_15,
    HELD_OUT_16,
    HELD_OUT_17,
    HELD_OUT_18,
    HELD_OUT_19,
    HELD_OUT_20,
    HELD_OUT_21,
    HELD_OUT_22,
)
#: The held-out set: written blind after the patterns' last change, and not tuned against —
#: docs/companion.md shows its first reading. None while the next one is being written.
BLIND: Path | None = CORPUS / "blind23.yaml"
ALL = (DEV, *TUNED, *((BLIND,) if BLIND is not None else ()))
COMPANION_MD = (REPO / "docs" / "companion.md").read_text(encoding="utf-8")
#: What a hard negative may be labelled as.
HARD = {
    "question",
    "hypothetical",
    "negation",
    "reported",
    "idiom",
    "joke",
    "third_party",
    "figurative",
    "verb",
    "range",
    "past",
}


@pytest.fixture(scope="module")
def blueprint() -> Blueprint:
    return buddy.load(CORPUS, cache=False)


def _labelled(path: Path) -> LabelledFile:
    read, issues = read_labelled(path, str(path))
    assert read is not None, issues
    return read


@pytest.fixture(scope="module")
def measured(blueprint: Blueprint) -> dict[str, Measured]:
    memory, character = blueprint.sections["memory"], blueprint.sections["character"]
    return {p.name: measure(memory, character, _labelled(p)) for p in ALL}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_label_is_a_valid_fact_and_a_known_kind(path: Path) -> None:
    specs = {
        p.stem: RelationFile.model_validate(yaml.safe_load(p.read_text("utf-8")))
        for p in (REPO / "framework/buddy/capabilities/memory/specs").glob("*.yaml")
    }
    for message in _labelled(path).messages:
        for fact in message.facts:
            ((relation, slots),) = fact.items()
            assert not list(fact_problems(specs[relation], slots)), (message.say, fact)
        assert message.hard is None or message.hard in HARD, message.say


def test_the_corpus_is_big_enough_and_the_held_out_set_is_unseen() -> None:
    dev, held = _labelled(DEV).messages, _labelled(HELD_OUT).messages
    assert len(dev) >= 300 and sum(m.hard is not None for m in dev) >= 100
    assert not {m.say for m in dev} & {m.say for m in held}
    assert len({m.say for m in dev}) == len(dev)  # no message twice
    second = {m.say for m in _labelled(HELD_OUT_2).messages}
    assert len(second) == len(_labelled(HELD_OUT_2).messages)
    assert not second & {m.say for m in held}
    # written blind, two short messages happen to be in the corpus too
    assert second & {m.say for m in dev} == {"闭嘴吧你", "抱歉抱歉，刚才手滑发错了"}
    seen = {m.say for m in dev} | {m.say for m in held} | second
    for path in TUNED[2:]:  # blind3.yaml on: no message twice, none in an earlier set
        said = [m.say for m in _labelled(path).messages]
        assert len(set(said)) == len(said), path.name
        assert not set(said) & seen, path.name
        seen |= set(said)
    if BLIND is not None:  # unseen: none of its messages is in another set
        blind = [m.say for m in _labelled(BLIND).messages]
        assert len(set(blind)) == len(blind)
        assert not set(blind) & {m.say for p in ALL if p != BLIND for m in _labelled(p).messages}


def _show(measured: Measured, name: str, record_property: Callable[[str, object], None]) -> None:
    print(f"\n{name}\n{report(measured, missed=True)}")
    for part, tallies in (("relations", measured.relations), ("appraisal", measured.appraisal)):
        total = measured.total(tallies)
        record_property(f"{name} {part} precision", total.precision)
        record_property(f"{name} {part} recall", total.recall)


def test_the_shipped_patterns_are_precise_and_find_most(
    measured: dict[str, Measured], record_property: Callable[[str, object], None]
) -> None:
    dev = measured[DEV.name]
    _show(dev, DEV.name, record_property)
    for part in (dev.relations, dev.appraisal):
        total = dev.total(part)
        assert total.precision is not None and total.precision >= 0.97
        assert total.recall is not None and total.recall >= 0.6
    assert set(dev.relations) == {
        "preference",
        "nickname",
        "debt",
        "allergy",
        "household",
        "training_goal",
    }


def test_no_r2_or_r3_fact_comes_from_a_hard_negative(measured: dict[str, Measured]) -> None:
    assert measured[DEV.name].hard_risky == []


#: The floors (precision, recall) of the development held-outs: their figures as last
#: measured, less a small margin.
FLOORS = {
    HELD_OUT.name: {"relations": (0.99, 0.78), "appraisal": (0.99, 0.98)},
    HELD_OUT_2.name: {"relations": (0.97, 0.80), "appraisal": (0.97, 0.73)},
    HELD_OUT_3.name: {"relations": (0.98, 0.77), "appraisal": (0.99, 0.83)},
    HELD_OUT_4.name: {"relations": (0.98, 0.79), "appraisal": (0.99, 0.81)},
    HELD_OUT_5.name: {"relations": (0.99, 0.82), "appraisal": (0.99, 0.69)},
    HELD_OUT_6.name: {"relations": (0.99, 0.72), "appraisal": (0.95, 0.88)},
    HELD_OUT_7.name: {"relations": (0.99, 0.80), "appraisal": (0.97, 0.86)},
    HELD_OUT_8.name: {"relations": (0.99, 0.73), "appraisal": (0.95, 0.81)},
    HELD_OUT_9.name: {"relations": (0.96, 0.71), "appraisal": (0.99, 0.87)},
    HELD_OUT_10.name: {"relations": (0.99, 0.73), "appraisal": (0.97, 0.82)},
    HELD_OUT_11.name: {"relations": (0.97, 0.70), "appraisal": (0.97, 0.79)},
    HELD_OUT_12.name: {"relations": (0.95, 0.66), "appraisal": (0.95, 0.75)},
    HELD_OUT_13.name: {"relations": (0.99, 0.71), "appraisal": (0.99, 0.82)},
    HELD_OUT_14.name: {"relations": (0.99, 0.70), "appraisal": (0.99, 0.88)},
    HELD_OUT_15.name: {"relations": (0.99, 0.65), "appraisal": (0.99, 0.72)},
    HELD_OUT_16.name: {"relations": (0.98, 0.64), "appraisal": (0.99, 0.81)},
    HELD_OUT_17.name: {"relations": (0.99, 0.60), "appraisal": (0.99, 0.78)},
    HELD_OUT_18.name: {"relations": (0.97, 0.65), "appraisal": (0.99, 0.77)},
    HELD_OUT_19.name: {"relations": (0.99, 0.57), "appraisal": (0.99, 0.78)},
    HELD_OUT_20.name: {"relations": (0.99, 0.61), "appraisal": (0.99, 0.72)},
    HELD_OUT_21.name: {"relations": (0.99, 0.72), "appraisal": (0.99, 0.84)},
    HELD_OUT_22.name: {"relations": (0.99, 0.68), "appraisal": (0.99, 0.84)},
    # the held-out set: its first reading (0.981/0.70, appraisal 0.98/0.78), less a margin
    "blind23.yaml": {"relations": (0.97, 0.69), "appraisal": (0.97, 0.77)},
}
#: The R2/R3 facts a held-out set's first reading kept from its hard negatives, by file:
#: listed so that a new one fails here and a fixed one is struck off (blind5.yaml's two
#: figurative debts were fixed when it was tuned against, and so were blind6.yaml's two and
#: blind7.yaml's denied dietary rule and trip owed, and blind10.yaml's debt repaid at once
#: after one to a bank and dietary rule whose item ran into the doctor's words, and
#: blind11.yaml's two dietary rules on 也 and 着 — a value of function characters only is
#: doubtful — and two allergies without the severity the message gives, 「吃一次吐一次」
#: 「难受得要死」). None is left.
KNOWN_RISKY: dict[str, list[str]] = {}
#: The held-out set's floor until its own first reading is written into FLOORS: what the
#: blind sets read when first measured (relations 0.82–0.97 precision, 0.39–0.74 recall;
#: appraisal 0.91–1.00, 0.47–0.85), rounded down — a floor, not a target (tuning against
#: it would make it one more development set).
FIRST_READING = {"relations": (0.8, 0.35), "appraisal": (0.9, 0.4)}


@pytest.mark.parametrize(
    "path", [*TUNED, *((BLIND,) if BLIND is not None else ())], ids=lambda p: p.name
)
def test_on_unseen_messages_the_figures_hold_up(
    path: Path, measured: dict[str, Measured], record_property: Callable[[str, object], None]
) -> None:
    """Each set was written blind; since issue 22's eighth item its misses are fixed with
    general rules only (blind.yaml first, then blind2.yaml … blind14.yaml; a new blind set
    replaces them as held out): their figures are floors to watch (as last measured, less a
    small margin), not targets — docs/companion.md shows them. No R2/R3 fact from their hard
    negatives, as on the corpus."""
    held = measured[path.name]
    _show(held, path.name, record_property)
    floors = FLOORS.get(path.name, FIRST_READING)
    for name, part in (("relations", held.relations), ("appraisal", held.appraisal)):
        total, (precision, recall) = held.total(part), floors[name]
        assert total.precision is not None and total.precision >= precision, name
        assert total.recall is not None and total.recall >= recall, name
    assert [said for said, *_ in held.hard_risky] == KNOWN_RISKY.get(path.name, [])


def _block(command: str) -> str:
    match = re.search(rf"^```text\n\$ {re.escape(command)}\n(.*?)^```$", COMPANION_MD, re.S | re.M)
    assert match is not None, command
    return match.group(1)


@pytest.mark.parametrize(
    ("path", "code"), [(p, 1 if p.name in KNOWN_RISKY else 0) for p in ALL], ids=str
)
def test_the_figures_in_the_docs_are_what_the_command_prints(
    path: Path,
    code: int,
    measured: dict[str, Measured],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The development set's block is the command run here; the others' are what it
    prints, ``report(measure(…))``, from the measurement the tests above took (each set
    measured once), but where the command exits 1 (its reasons on standard error)."""
    from buddy.cli.main import main

    shown = f"tests/companion_corpus/{path.name}"
    if path == DEV or code:
        monkeypatch.chdir(REPO)
        assert main(["patterns", "tests/companion_corpus", shown]) == code
        captured = capsys.readouterr()
        printed = captured.out + captured.err
        if code:
            printed += f"$ echo $?\n{code}\n"
    else:
        printed = report(measured[path.name])
    assert _block(f"buddy patterns tests/companion_corpus {shown}") == printed
    read = _labelled(path).messages
    hard = sum(m.hard is not None for m in read)
    assert f"`{path.name}` ({len(read)} messages, {hard}\nhard negatives)" in COMPANION_MD or (
        f"`{path.name}` ({len(read)} messages, {hard} hard negatives)" in COMPANION_MD
    )
