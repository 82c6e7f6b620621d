"""An imported SillyTavern lorebook activates here as it does in SillyTavern: the scripted
chats of ``tests/corpus/lore/sillytavern/turns.json``, each turn's activations recorded by
running SillyTavern's own ``checkWorldInfo`` (README.md there says how), are replayed
through lore's scan the way the companion layer calls it — each book imported with
``buddy import-lore``, the user's messages and the buddy's replies both counted and
scanned, one event id a turn — and every turn must put in the same entries at the same
places, in the same order. Of equal orders lore keeps the book's order (by ``uid``) where
SillyTavern puts the one it activated last first, a documented difference (docs/cards.md,
"Each entry"): the recorded turns are compared with such ties in the book's order
(:func:`_placed_in_order`).

A few turns differ on purpose; :data:`EXPECTED` names each with the documented reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.capabilities.lore.compiled import Lore, LoreEntry
from buddy.capabilities.lore.scan import LoreState, scan
from buddy.capabilities.lore.state import BUDDY, USER, Said, counted, heard
from buddy.cli.main import main
from tests.conftest import REPO

CORPUS = REPO / "tests" / "corpus" / "lore" / "sillytavern"
TURNS: dict[str, Any] = json.loads((CORPUS / "turns.json").read_text(encoding="utf-8"))
#: Large enough never to bind (SillyTavern's budget was made so too: README.md).
BUDGET = 1_000_000

#: (book, turn number from 1) → (what lore puts in instead, why). Each reason is a
#: documented difference (docs/cards.md, "Each entry").
EXPECTED: dict[tuple[str, int], tuple[list[str], str]] = {
    ("tea-house.json", 41): (
        ["10@before", "32@after", "31@after"],
        "position 2 (the author's note, top) has no place here: imported after the persona, "
        "with a warning",
    ),
}

_POSITIONS = {"before_persona": "before", "after_persona": "after", "depth": "depth"}


@dataclass(frozen=True, slots=True)
class Chat:
    """One scripted chat and the lore its book imported as."""

    book: str
    char: str
    user: str
    turns: list[dict[str, Any]]
    lore: Lore


def _placed(item: dict[str, Any]) -> str:
    """An activation as ``uid@position`` (``uid@depth/N/role`` at a depth)."""
    where = item["position"]
    if where == "depth":
        where = f"depth/{item['depth']}/{item['role']}"
    return f"{item['uid']}@{where}"


def _placed_in_order(chat: dict[str, Any], turn: dict[str, Any]) -> list[str]:
    """SillyTavern's activations, each place's of equal ``order`` as the book lists them."""
    entries = json.loads((CORPUS / chat["book"]).read_text(encoding="utf-8"))["entries"]
    orders = {e["uid"]: e["order"] for e in entries.values()}
    place = list(orders)
    rank = {item["uid"]: at for at, item in enumerate(turn["st"])}

    def key(item: dict[str, Any]) -> tuple[int, int, int]:
        first = next(i for i in turn["st"] if i["position"] == item["position"])
        return rank[first["uid"]], orders[item["uid"]], place.index(item["uid"])

    return [_placed(item) for item in sorted(turn["st"], key=key)]


def _lore_placed(entry: LoreEntry) -> str:
    where = _POSITIONS[entry.position]
    if where == "depth":
        where = f"depth/{entry.depth}/{entry.role}"
    return f"{entry.card['uid']}@{where}"


def _order(placed: list[str]) -> list[str]:
    """Grouped by place (before, after, each depth), each place's in prompt order."""
    rank = {"before": 0, "after": 1}
    return sorted(placed, key=lambda p: rank.get(p.split("@")[1], 2))


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Chat]:
    """Each chat's book imported with ``buddy import-lore`` into a buddy titled as the
    character SillyTavern played, and compiled."""
    out = {}
    for chat in TURNS["chats"]:
        folder = tmp_path_factory.mktemp(Path(chat["book"]).stem)
        (folder / "pyproject.toml").write_text("")
        (folder / "buddy.yaml").write_text(
            f"name: st\ntitle: {chat['char']}\nmodel: test\npersona:\n  prompt: hi\n",
            encoding="utf-8",
        )
        assert main(["import-lore", str(CORPUS / chat["book"]), "--into", str(folder)]) == 0
        lore = buddy.load(folder / "buddy.yaml").sections["lore"]
        assert isinstance(lore, Lore)
        out[chat["book"]] = Chat(chat["book"], chat["char"], chat["user"], chat["turns"], lore)
    return out


def _replayed(chat: Chat) -> list[list[str]]:
    """Each turn's activations, the turns played as the companion layer plays them: the
    user's message counted and kept, the scan, then the reply counted and kept."""
    state, recent, out = LoreState(), list[Said](), []
    for number, turn in enumerate(chat.turns, start=1):
        state = counted(state)
        recent = heard(recent, USER, turn["user"])
        scanned = scan(
            chat.lore, recent, state, BUDGET, event=f"{chat.book}#{number}", user=chat.user
        )
        state = scanned.state
        out.append(_order([_lore_placed(e) for e in scanned.entries]))
        state = counted(state)
        recent = heard(recent, BUDDY, turn["reply"])
    return out


def _cases() -> list[Any]:
    return [
        pytest.param(chat["book"], number, id=f"{Path(chat['book']).stem}-{number}")
        for chat in TURNS["chats"]
        for number in range(1, len(chat["turns"]) + 1)
    ]


@pytest.fixture(scope="module")
def replayed(chats: dict[str, Chat]) -> dict[str, list[list[str]]]:
    return {book: _replayed(chat) for book, chat in chats.items()}


@pytest.mark.parametrize(("book", "number"), _cases())
def test_the_turn_activates_as_in_sillytavern(
    replayed: dict[str, list[list[str]]], book: str, number: int
) -> None:
    chat = next(c for c in TURNS["chats"] if c["book"] == book)
    turn = chat["turns"][number - 1]
    sillytavern = _placed_in_order(chat, turn)
    got = replayed[book][number - 1]
    expected = EXPECTED.get((book, number))
    if expected is not None:
        assert got == expected[0], expected[1]
        assert got != sillytavern, "no longer differs: drop it from EXPECTED"
    else:
        assert got == sillytavern, turn["user"]


def test_the_fixture_was_recorded_with_sillytaverns_shipped_settings() -> None:
    recorded = TURNS["recorded"]
    assert recorded["sillytavern"].startswith("ba6f7b7")
    settings = recorded["settings"]
    assert (settings["world_info_depth"], settings["world_info_recursive"]) == (2, True)
    assert settings["world_info_match_whole_words"] is True
    assert settings["world_info_case_sensitive"] is False
    assert sum(len(c["turns"]) for c in TURNS["chats"]) >= 60
