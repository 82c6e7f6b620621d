"""``lore:``: books checked with located errors (both sides of every bound), render, and
the scanner — keys, patterns, scan depth, sticky, cooldown and the budget."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

import buddy
from buddy.capabilities.lore.compiled import Lore, LoreEntry
from buddy.capabilities.lore.limits import (
    CONTENT_CHARS,
    DELAY_MAX,
    DEPTH_MAX,
    ENTRIES_MAX,
    GROUP_CHARS,
    GROUP_WEIGHT,
    GROUPS_MAX,
    KEYS_MAX,
    PROBABILITY_MAX,
    RECURSION_MAX,
    SCAN_MESSAGES,
    SCAN_TEXT_CHARS,
    TOKEN_BUDGET_MAX,
    TURNS_MAX,
)
from buddy.capabilities.lore.manifest import LoreBookFile, LoreEntryFile
from buddy.capabilities.lore.scan import LoreState, scan
from buddy.compile.render import render_markdown, view
from tests.conftest import MINIMAL, REPO, Write

BOOK = """\
title: 青云山
entries:
  - name: 青云宗
    keys: [青云宗]
    content: 青云宗是山里最大的门派。
"""


def _lore(write: Write, book: str, more: dict[str, str] | None = None) -> Path:
    return write({"buddy.yaml": MINIMAL + "lore: lore\n", "lore/world.yaml": book, **(more or {})})


def _problems(path: Path) -> list[tuple[str, int, str]]:
    _, issues = buddy.check(path)
    return [(Path(i.file).name, i.line, i.code) for i in issues]


def test_a_book_compiles_and_renders(write: Write) -> None:
    blueprint = buddy.load(_lore(write, BOOK))
    lore: Lore = blueprint.sections["lore"]
    assert [e.id for e in lore.entries] == ["world/青云宗"]
    (book,) = view(blueprint)["lore"]
    assert (book["book"], book["title"], book["file"], book["scan"]) == (
        "world",
        "青云山",
        "lore/world.yaml",
        SCAN_MESSAGES[0],
    )
    assert "## Lore books (1)\n" in render_markdown(blueprint)


def test_a_buddy_without_lore_renders_none(write: Write) -> None:
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    assert "lore" not in view(blueprint) and "## Lore" not in render_markdown(blueprint)


def test_a_missing_lore_folder_is_located(write: Write) -> None:
    assert _problems(write({"buddy.yaml": MINIMAL + "lore: nowhere\n"})) == [
        ("buddy.yaml", 5, "dir-not-found")
    ]


BROKEN = {
    "duplicate": (BOOK + "  - name: 青云宗\n    keys: [青云]\n    content: 又一条。\n", [6]),
    "never triggers": (BOOK + "  - name: 空\n    content: 没有关键词。\n", [6]),
    "bad pattern": (BOOK + "  - name: 坏\n    patterns: ['[青云']\n    content: x\n", [7]),
    "unknown key": (
        BOOK.replace("    keys: [青云宗]\n", "    keys: [青云宗]\n    shout: true\n"),
        [5],
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_each_problem_of_a_book_is_located_in_it(write: Write, case: str) -> None:
    book, lines = BROKEN[case]
    found = _problems(_lore(write, book))
    assert found == [("world.yaml", line, "lore-book") for line in lines], case


def _entry(**fields: str) -> str:
    body = "".join(f"    {k}: {v}\n" for k, v in fields.items())
    return f"entries:\n  - name: e\n    keys: [k]\n{body}"


BOUNDS: dict[str, tuple[Callable[[int], str], int, int]] = {
    "content": (lambda n: _entry(content="x" * n), 1, CONTENT_CHARS),
    "sticky": (lambda n: _entry(content="x", sticky=str(n)), 1, TURNS_MAX),
    "cooldown": (lambda n: _entry(content="x", cooldown=str(n)), 1, TURNS_MAX),
    "scan": (lambda n: f"scan: {n}\n" + _entry(content="x"), *SCAN_MESSAGES[1:]),
    "entry scan": (lambda n: _entry(content="x", scan=str(n)), *SCAN_MESSAGES[1:]),
    "delay": (lambda n: _entry(content="x", delay=str(n)), 1, DELAY_MAX),
    "probability": (lambda n: _entry(content="x", probability=str(n)), 0, PROBABILITY_MAX),
    "group_weight": (lambda n: _entry(content="x", group_weight=str(n)), *GROUP_WEIGHT[1:]),
    "depth": (lambda n: _entry(content="x", position="depth", depth=str(n)), 0, DEPTH_MAX),
    "delay_until_recursion": (
        lambda n: "recursion: 1\n" + _entry(content="x", delay_until_recursion=str(n)),
        0,
        RECURSION_MAX,
    ),
    "recursion": (lambda n: f"recursion: {n}\n" + _entry(content="x"), 0, RECURSION_MAX),
    "token_budget": (lambda n: f"token_budget: {n}\n" + _entry(content="x"), 1, TOKEN_BUDGET_MAX),
    "groups": (
        lambda n: _entry(content="x", group="[" + ", ".join(f"g{i}" for i in range(n)) + "]"),
        0,
        GROUPS_MAX,
    ),
    "group name": (lambda n: _entry(content="x", group=f"['{'g' * n}']"), 1, GROUP_CHARS),
    "keys": (
        lambda n: (
            "entries:\n  - name: e\n    content: x\n    keys: ["
            + ", ".join(f"k{i}" for i in range(n))
            + "]\n"
        ),
        0,
        KEYS_MAX,
    ),
}


@pytest.mark.parametrize("name", list(BOUNDS))
def test_each_bound_of_a_book_holds_on_both_sides(write: Write, name: str) -> None:
    make, least, most = BOUNDS[name]
    counted = name in ("keys", "groups")  # a list cannot be shorter than empty
    for n, ok in ((least - 1, False), (least, True), (most, True), (most + 1, False)):
        if (counted and n < 0) or (name == "keys" and n == 0):  # no key: never triggers
            continue
        codes = [c for _, _, c in _problems(_lore(write, make(n)))]
        assert (codes == []) is ok, (name, n, codes)


def test_the_entries_of_all_books_are_bounded(write: Write) -> None:
    def book(count: int, start: int = 0) -> str:
        return "entries:\n" + "".join(
            f"  - {{ name: e{i}, keys: [k{i}], content: x }}\n" for i in range(start, start + count)
        )

    half = ENTRIES_MAX // 2
    at_bound = _lore(write, book(half), {"lore/more.yaml": book(ENTRIES_MAX - half)})
    assert _problems(at_bound) == []
    over = _lore(write, book(half), {"lore/more.yaml": book(ENTRIES_MAX - half + 1)})
    assert [c for _, _, c in _problems(over)] == ["lore-too-many"]


# ---------------------------------------------------------------- the scanner


def _e(name: str, **fields: object) -> LoreEntry:
    values: dict[str, object] = {
        "book": "b",
        "name": name,
        "content": f"[{name}]",
        "keys": (),
        "patterns": (),
        "also": (),
        "case_sensitive": False,
        "always": False,
        "enabled": True,
        "order": 100,
        "priority": 0,
        "sticky": None,
        "cooldown": None,
        "scan": 2,
    }
    return LoreEntry(**(values | fields))  # type: ignore[arg-type]


def _names(
    lore: Lore, recent: list[str], state: LoreState | None = None, budget: int = 1000
) -> list[str]:
    """The names of what went in, sorted (the prompt's order: test_lore_activation.py)."""
    return sorted(e.name for e in scan(lore, recent, state or LoreState(), budget).entries)


def test_keys_patterns_and_also_words_trigger() -> None:
    lore = Lore(
        (
            _e("word", keys=("Qingyun",)),
            _e("exact", keys=("Qingyun",), case_sensitive=True),
            _e("pattern", patterns=(r"灵.?兽",)),
            _e("with", keys=("鹤",), also=("喂",)),
            _e("always", always=True),
            _e("off", keys=("qingyun",), enabled=False),
        ),
        (),
    )
    assert _names(lore, ["去 QINGYUN 看看"]) == ["always", "word"]
    assert _names(lore, ["去 Qingyun 看看"]) == ["always", "exact", "word"]
    assert _names(lore, ["后山的灵鹤兽"]) == ["always", "pattern"]
    assert _names(lore, ["看见一只鹤"]) == ["always"]
    assert _names(lore, ["看见一只鹤", "去喂它"]) == ["always", "with"]


def test_only_the_last_scan_messages_and_their_first_characters_are_read() -> None:
    lore = Lore((_e("old", keys=("青云",), scan=2),), ())
    assert _names(lore, ["青云", "a", "b"]) == []
    assert _names(lore, ["青云", "a"]) == ["old"]
    far = "x" * SCAN_TEXT_CHARS + "青云"
    assert _names(lore, [far]) == [] and _names(lore, [far[2:]]) == ["old"]  # both characters in


def test_sticky_keeps_an_entry_and_cooldown_blocks_it_then_lets_it_go() -> None:
    lore = Lore((_e("s", keys=("青云",), sticky=2, cooldown=1),), ())
    state = LoreState()
    seen = []
    for message in ["青云", "a", "b", "青云", "青云", "c", "青云"]:
        turn = scan(lore, [message], state, 1000)
        seen.append([e.name for e in turn.entries] or [r for _, r in turn.left_out])
        state = turn.state
    # triggered at 1, sticky through 3, cooling at 4, free again at 5 (sticky to 7)
    assert seen == [["s"], ["s"], ["s"], ["cooldown"], ["s"], ["s"], ["s"]]


def test_the_budget_keeps_the_higher_priority_and_orders_what_goes_in() -> None:
    lore = Lore(
        (
            _e("low", always=True, priority=0, order=1, content="x" * 10),
            _e("high", always=True, priority=5, order=9, content="y" * 10),
            _e("mid", always=True, priority=3, order=5, content="z" * 10),
        ),
        (),
    )
    turn = scan(lore, [], LoreState(), 22)  # two entries and one separator
    assert [e.name for e in turn.entries] == ["mid", "high"] and turn.chars == 22
    assert [(e.name, why) for e, why in turn.left_out] == [("low", "budget")]
    assert [e.name for e in scan(lore, [], LoreState(), 21).entries] == ["high"]


# ---------------------------------------------------------------- the docs

COMPANION_DOC = (REPO / "docs" / "companion.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("model", [LoreBookFile, LoreEntryFile], ids=["book", "entry"])
def test_every_field_of_a_book_is_in_the_docs_table(model: type[BaseModel]) -> None:
    rows = [line for line in COMPANION_DOC.splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row.split(" | ")[0])}
    assert set(model.model_fields) <= listed, set(model.model_fields) - listed


def test_the_docs_example_book_compiles(write: Write) -> None:
    book = re.search(r"```yaml\n# lore/world.yaml\n(.*?)```", COMPANION_DOC, re.S)
    assert book is not None
    lore: Lore = buddy.load(_lore(write, book.group(1))).sections["lore"]
    assert [e.name for e in lore.entries] == ["青云宗", "规矩", "灵兽", "林掌门"]
