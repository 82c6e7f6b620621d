"""Author patterns on untrusted text cost a bounded time (issue 22, item 5): ``validate``
refuses what obviously backtracks without bound, located; a pattern it lets through that
backtracks badly is stopped on its message, takes nothing from it, is logged once, and the
other patterns still take theirs. No wall-time assertion here (bench/pattern_cost.py)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.capabilities.lore.compiled import Lore, LoreEntry
from buddy.capabilities.lore.scan import LoreState, scan
from buddy.capabilities.memory import patterns
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.extract import Fact, from_patterns
from tests.conftest import MINIMAL, REPO, Write
from tests.test_lore import _e as lore_entry

LOG = "buddy.capabilities.memory.patterns"


@pytest.fixture(autouse=True)
def _nothing_warned_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees its own once-per-pattern warnings."""
    from buddy.capabilities.memory import patterns

    monkeypatch.setattr(patterns, "_warned", set())


def _spec(name: str, slot: str, match: str) -> str:
    return (
        f"relation: {name}\nversion: 1\ntitle: {name}\nnote: 测试用。\nrisk: R0\n"
        f"slots:\n  subject: {{ type: party, required: true }}\n"
        f"  {slot}: {{ type: text, required: true, max_chars: 20 }}\n"
        f"value: {slot}\nkey: [subject]\n"
        f"patterns:\n  - match: '{match}'\n    slots: {{ subject: user }}\n"
    )


def _relations(write: Write, specs: dict[str, str]) -> Path:
    listed = ", ".join(f"relations/{n}.yaml" for n in specs)
    return write(
        {
            "buddy.yaml": MINIMAL + f"memory:\n  auto: true\n  relations: [{listed}]\n",
            **{f"relations/{n}.yaml": text for n, text in specs.items()},
        }
    )


# ------------------------------------------------------------ validate refuses, located


@pytest.mark.parametrize("match", [r"(a+)+$", r"^(?:a*)*x", r"(a|a)*$", r"(?:\S+\s*)+$"])
def test_validate_refuses_a_relation_pattern_that_nests_unbounded_repeats(
    write: Write, match: str
) -> None:
    path = _relations(write, {"bad": _spec("bad", "word", f"我(?P<word>x){match}")})
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.path, i.code) for i in issues] == [
        ("bad.yaml", 12, "patterns[0].match", "relation-spec")
    ]
    assert "backtrack" in issues[0].message and "rewrite" in issues[0].message


def test_validate_refuses_a_lore_pattern_that_nests_unbounded_repeats(write: Write) -> None:
    book = "entries:\n  - name: 坏\n    patterns: ['灵兽', '(a+)+$']\n    content: x\n"
    path = write({"buddy.yaml": MINIMAL + "lore: lore\n", "lore/world.yaml": book})
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.path, i.code) for i in issues] == [
        ("world.yaml", 3, "entries[0].patterns[1]", "lore-book")
    ]
    assert "backtrack" in issues[0].message and "rewrite" in issues[0].message


REASONABLE = [
    r"^我对(?P<item>[^，。！？!?,\s]{1,15})过敏[。！!]?$",
    r"^(?:以后|你)?(?:就)?叫我「?(?P<value>[^，。！？!?,\s」]{1,10}?)」?(?:吧|就行|就好)?[。！!]?$",
    r"(?:[^，。]+，)*[^，。]+。",
    r"(\d+,)*\d+",
    r"灵.?兽",
    r"(?:a|b)+c",
    r"(?:ab|a)*c",
    r"(a+b)+",
    r"(?:\w+\b\s?)+",
    r"(?>a+)+$",
    r"(a++)+$",
    r"\p{Han}+",
    r"^(?:以后)?(?:叫|喊)我(?P<value>[^，。！？!?,\s～~]{1,10}?)(?:吧|啦|呀)?[。！!～~]*$",
    r"(?:\s*[，,]\s*\S+)*",
    r"(?:(?!不).)+过敏",
    r"(?:.|\n)*",
]


@pytest.mark.parametrize("text", REASONABLE)
def test_reasonable_patterns_are_not_refused(text: str) -> None:
    from buddy.capabilities.memory.patterns import pattern_problem

    assert pattern_problem(text) is None


@pytest.mark.parametrize(
    "text", [r"(a+)+$", r"(a*)*", r"(a|a)*", r"((a)+)*", r"(?:x|.)+y", r"(a+|b)+", r"(a+?)+"]
)
def test_nested_unbounded_repeats_are_refused(text: str) -> None:
    from buddy.capabilities.memory.patterns import pattern_problem

    problem = pattern_problem(text)
    assert problem is not None and "rewrite" in problem


# ----------------------------------------------------- a hostile message is bounded

# Ambiguous (x+x+ inside +) but not a nesting validate is sure of: it passes validate, and
# on a long run of x with no y it backtracks for ever without the bound.
HOSTILE = r"(?:x+x+)+(?P<word>y)"
MESSAGE = "叫我阿明" + "x" * 1996


def test_a_relation_pattern_that_backtracks_takes_nothing_and_the_others_still_run(
    write: Write, caplog: pytest.LogCaptureFixture
) -> None:
    path = _relations(
        write,
        {
            "hostile": _spec("hostile", "word", HOSTILE),
            "name": _spec("name", "value", r"叫我(?P<value>阿明)"),
        },
    )
    assert buddy.check(path)[1] == []  # validate lets it through
    memory: AutoMemory = buddy.load(path).sections["memory"]
    assert len(MESSAGE) == 2000
    with caplog.at_level(logging.WARNING, logger=LOG):
        first = from_patterns(memory, MESSAGE)
        again = from_patterns(memory, MESSAGE)
    expected = (Fact("name", {"subject": "user", "value": "阿明"}, "asserted", "pattern"),)
    assert first.facts == expected and again.facts == expected
    warned = [r for r in caplog.records if r.name == LOG]
    assert len(warned) == 1  # once per pattern, not once per message
    assert warned[0].levelno == logging.WARNING
    assert "hostile" in warned[0].getMessage() and HOSTILE in warned[0].getMessage()


def test_a_lore_pattern_that_backtracks_triggers_nothing_and_the_others_still_do(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def entry(name: str, **fields: object) -> LoreEntry:
        return lore_entry(name, **({"book": "world", "scan": 4} | fields))

    lore = Lore(
        (
            entry("hostile", patterns=(HOSTILE,)),
            entry("pattern", patterns=(r"叫.阿明",)),
            entry("word", keys=("阿明",)),
        ),
        (),
    )
    with caplog.at_level(logging.WARNING, logger=LOG):
        turn = scan(lore, [MESSAGE, MESSAGE, MESSAGE], LoreState(), 1000)
    assert [e.name for e in turn.entries] == ["pattern", "word"]
    warned = [r for r in caplog.records if r.name == LOG]
    assert len(warned) == 1
    assert "world/hostile" in warned[0].getMessage() and HOSTILE in warned[0].getMessage()


def test_a_spent_budget_runs_no_more_patterns_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from buddy.capabilities.memory.patterns import Budget

    spent = Budget(ms=0)
    with caplog.at_level(logging.WARNING, logger=LOG):
        assert spent.search("叫我(?P<value>.+)", "叫我阿明", owner="relation spent") is None
    (record,) = [r for r in caplog.records if r.name == LOG]
    assert "relation spent" in record.getMessage()
    assert Budget().search("叫我(?P<value>.+)", "叫我阿明", owner="relation fresh") is not None


def test_compiling_a_pattern_is_not_the_messages_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first message a process meets compiles every pattern: that once-per-process
    cost (here more than the whole budget) leaves each message its own time to search."""
    real = patterns.compiled

    def slow(pattern: str, ignore_case: bool = False) -> Any:
        until = time.thread_time() + patterns.BUDGET_MS / 1000 * 1.5
        while time.thread_time() < until:
            pass
        return real(pattern, ignore_case)

    monkeypatch.setattr(patterns, "compiled", slow)
    budget = patterns.Budget()
    assert budget.search("叫我(.+)", "叫我阿明", owner="relation nickname") is not None
    assert budget.search("对不起", "对不起", owner="appraisal zh apology") is not None


# ------------------------------------------------- many patterns searched as one


@pytest.mark.parametrize(
    "joined",
    [
        ["(?P<who>我)叫", "滚"],  # named groups become plain ones
        ["^对不起$", "抱歉"],
    ],
)
def test_patterns_are_joined_as_one_that_finds_what_any_does(joined: list[str]) -> None:
    either = patterns.either(joined)
    assert either is not None and "?P<" not in either
    texts = ["我叫小王", "对不起", "没关系", "很抱歉", "滚吧", "对不起啊"]
    found = [patterns.compiled(either).search(t) is not None for t in texts]
    assert found == [any(patterns.compiled(p).search(t) for p in joined) for t in texts]
    assert True in found and False in found


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",  # a group by number: another pattern's once joined
        r"(?P<x>a)(?P=x)",  # by name: made plain
        r"(a)?(?(1)b|c)",  # a conditional on a group
        r"(?x) a b",  # a flag for the whole expression: verbose would read the others anew
        r"(?i)abc",
        r"(?<x>a)",  # a group named the other way
        r"\g<1>",
    ],
)
def test_a_pattern_that_cannot_be_joined_leaves_each_searched(pattern: str) -> None:
    assert patterns.either([pattern, "b"]) is None


def test_one_pattern_is_not_joined() -> None:
    assert patterns.either(["a"]) is None
    assert patterns.either([]) is None


def test_the_relations_joined_find_what_each_pattern_does() -> None:
    """On every message of the labelled corpus the facts are those the shipped relations'
    patterns give searched one by one; a pattern that cannot be joined (a reference to a
    group) is searched whatever the joined expression finds."""
    import dataclasses

    from buddy.capabilities.companion.measure import read_labelled

    corpus = REPO / "tests" / "companion_corpus"
    memory: AutoMemory = buddy.load(corpus, cache=False).sections["memory"]
    assert all(r.either is not None for r in memory.relations)
    assert any(not p.joined for r in memory.relations for p in r.patterns)
    each = dataclasses.replace(
        memory, relations=tuple(dataclasses.replace(r, either=None) for r in memory.relations)
    )
    read = read_labelled(corpus / "messages.yaml", "messages.yaml")[0]
    assert read is not None
    said = [m.say for m in read.messages]
    assert [from_patterns(memory, m) for m in said] == [from_patterns(each, m) for m in said]


def test_a_clause_the_joined_search_ran_out_of_time_on_is_searched_pattern_by_pattern(
    write: Write,
) -> None:
    memory: AutoMemory = buddy.load(
        write({"buddy.yaml": MINIMAL + "memory:\n  auto: true\n  relations: [nickname]\n"})
    ).sections["memory"]
    (nickname,) = memory.relations
    assert nickname.either is not None
    budget = patterns.Budget()
    budget._stopped.add((nickname.either, False))  # as if it had backtracked past its time
    assert from_patterns(memory, "叫我小王", budget).facts == (
        Fact("nickname", {"subject": "user", "value": "小王"}, "asserted", "pattern"),
    )


def test_the_garbage_collectors_time_is_not_the_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection of a large heap while a message's patterns run (50 ms here, on a clock
    of our own) does not spend their budget: the pattern still searches."""
    now = [100.0]
    monkeypatch.setattr(time, "thread_time", lambda: now[0])
    budget = patterns.Budget(20)
    patterns._collections("start", {})
    now[0] += 0.050
    patterns._collections("stop", {})
    assert budget.search("叫我(?P<v>.+)", "叫我小王", owner="relation nickname") is not None
    now[0] += 0.025  # the patterns' own time past the budget still stops them
    assert budget.search("叫我(?P<v>.+)", "叫我小王", owner="relation nickname") is None


class _Busy:
    """A compiled pattern whose first search times out without searching, as one does
    while another thread holds the interpreter."""

    def __init__(self, pattern: str) -> None:
        self.real, self.calls = patterns.compiled(pattern), 0

    def search(self, text: str, timeout: float) -> object:
        self.calls += 1
        if self.calls == 1:
            raise TimeoutError("regex timed out")
        return self.real.search(text, timeout=timeout)


def test_a_search_that_timed_out_waiting_for_another_thread_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine's timeout runs while the thread waits for the interpreter: 211 of 7,702
    searches of a plain pattern timed out at 5 ms beside one busy thread. A search that
    timed out having hardly searched is tried again and finds what it finds."""
    pattern = "叫我(?P<v>.+)"
    busy = _Busy(pattern)
    monkeypatch.setitem(patterns._ready, (pattern, False), busy)
    found = patterns.Budget().search(pattern, "叫我小王", owner="relation nickname")
    assert found is not None and found.group("v") == "小王"
    assert busy.calls == 2
