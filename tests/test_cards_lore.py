"""SillyTavern lorebooks as lore books and back: in a card (`import-card`/`export-card`) and
on their own (`import-lore`/`export-lore`), as SillyTavern saves them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import buddy
from buddy.capabilities.lore.limits import CONTENT_CHARS
from buddy.cards import export_card
from buddy.cards.lore import derive_book
from buddy.cards.lore_export import lorebook_from_book
from buddy.cards.lorefile import convert_lorebook
from buddy.cli.main import main
from tests.conftest import REPO

CORPUS = REPO / "tests" / "corpus" / "cards"
ST_SAVED: dict[str, Any] = json.loads((CORPUS / "st-saved.json").read_text(encoding="utf-8"))
ELDORIA: dict[str, Any] = json.loads((CORPUS / "eldoria.json").read_text(encoding="utf-8"))
SERAPHINA: dict[str, Any] = json.loads((CORPUS / "seraphina.json").read_text(encoding="utf-8"))


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def _import(tmp_path: Path, card: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> Path:
    source = _write(tmp_path / "card.json", card)
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path), "--name", "b"], capsys)
    assert code == 0, err
    return tmp_path / "b"


def _book(target: Path, name: str = "card") -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(
        (target / "lore" / f"{name}.yaml").read_text(encoding="utf-8")
    )
    return loaded


def _save(target: Path, book: dict[str, Any], name: str = "card") -> None:
    text = yaml.safe_dump(book, allow_unicode=True, sort_keys=False)
    (target / "lore" / f"{name}.yaml").write_text(text, encoding="utf-8")


def _card_book(card: dict[str, Any]) -> dict[str, Any]:
    book: dict[str, Any] = card["data"]["character_book"]
    return book


def _st_card(*entries: dict[str, Any]) -> dict[str, Any]:
    card = copy.deepcopy(ST_SAVED)
    _card_book(card)["entries"] = [copy.deepcopy(e) for e in entries]
    return card


def _st_entry(**changes: Any) -> dict[str, Any]:
    """The first entry of st-saved.json (as SillyTavern writes one) with ``changes``;
    ``extensions`` changes are merged."""
    entry: dict[str, Any] = copy.deepcopy(_card_book(ST_SAVED)["entries"][0])
    entry["extensions"].update(changes.pop("extensions", {}))
    entry.update(changes)
    return entry


# ---------------------------------------------------------------- the reported defects


def test_a_card_as_sillytavern_saves_it_imports_and_exports_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every entry says `use_regex: true` (server characters.js
    convertWorldInfoToCharacterBook: "ST keys are always regex"), yet `*hugs*`, `C++` and
    `Dr. Who` are text: world-info.js WorldInfoBuffer.matchKeys uses a key as a regular
    expression only when parseRegexFromString reads it as `/…/flags`. The card's
    `spec_version` is the number 3.0."""
    target = _import(tmp_path, ST_SAVED, capsys)
    hugs, tea, kettle = _book(target)["entries"]
    assert hugs["keys"] == ["*hugs*", "C++", "Dr. Who"] and "patterns" not in hugs
    assert hugs["card"]["use_regex"] is True  # kept for export
    assert (tea["keys"], tea["patterns"]) == (["oolong"], [r"(?i)\bteas?\b"])
    assert (kettle["position"], kettle["depth"], kettle["role"]) == ("depth", 2, "assistant")
    assert buddy.check(target)[1] == []
    assert export_card(target).card == ST_SAVED


def test_a_failed_import_leaves_nothing_and_a_second_try_fails_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    long = _st_card(_st_entry(content="字" * (CONTENT_CHARS + 1)))
    source = _write(tmp_path / "long.json", long)
    argv = ["import-card", str(source), "--dir", str(tmp_path), "--name", "l"]
    for _ in range(2):
        code, out, err = _run(argv, capsys)
        assert (code, out) == (1, "")
        assert "character_book (as lore/card.yaml) entries.0.content" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["long.json"]
    # A buddy that does not validate once written is not moved into place either.
    from buddy.compile import compiler
    from buddy.errors import Issue

    problem = Issue(file=str(tmp_path / "x"), line=1, column=1, path="", code="c", message="broken")
    monkeypatch.setattr(compiler, "check", lambda path: (None, [problem]))
    source = _write(tmp_path / "ok.json", ST_SAVED)
    code, out, err = _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)
    assert (code, out) == (1, "")
    assert "broken" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.json", "ok.json"]


@pytest.mark.parametrize(
    ("number", "logic"), list(enumerate(["and_any", "not_all", "not_any", "and_all"]))
)
def test_the_secondary_key_logic_is_read(number: int, logic: str) -> None:
    # world-info.js world_info_logic: AND_ANY 0, NOT_ALL 1, NOT_ANY 2, AND_ALL 3; the card
    # keeps it in extensions.selectiveLogic (convertCharacterBook).
    entry = _st_entry(secondary_keys=["x"], extensions={"selectiveLogic": number})
    lore = derive_book({"entries": [entry]}, "book")[0]["entries"][0]
    assert lore["also"] == ["x"]
    assert lore.get("logic", "and_any") == logic


def test_entries_nobody_touched_come_back_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, ST_SAVED, capsys)
    book = _book(target)
    book["entries"][1]["content"] = "Spilled tea is very bad luck."
    _save(target, book)
    exported = _book_of(export_card(target).card)
    original = _card_book(ST_SAVED)["entries"]
    assert exported["entries"][0] == original[0]  # sticky: null, selective: true … as they were
    assert exported["entries"][2] == original[2]
    assert exported["entries"][1] == {**original[1], "content": "Spilled tea is very bad luck."}
    assert {k: v for k, v in exported.items() if k != "entries"} == {"name": "Tea House"}


def _book_of(card: dict[str, Any]) -> dict[str, Any]:
    return _card_book(card)


def test_a_changed_field_writes_that_field_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, ST_SAVED, capsys)
    book = _book(target)
    tea = book["entries"][1]
    tea.update(sticky=4, logic="and_all", group=["mood"], enabled=False, probability=50)
    tea["keys"] = ["oolong", "sencha"]
    tea["patterns"].append("matcha|hojicha")
    book["entries"][2]["position"] = "before_persona"
    _save(target, book)
    exported = _book_of(export_card(target).card)["entries"]
    before = _card_book(ST_SAVED)["entries"]
    expected = copy.deepcopy(before[1])
    expected["keys"] = [r"/\bteas?\b/i", "oolong", "sencha", "/matcha|hojicha/"]
    expected["enabled"] = False
    expected["extensions"].update(
        sticky=4, selectiveLogic=3, group="mood", probability=50, useProbability=True
    )
    assert exported[1] == expected
    kettle = copy.deepcopy(before[2])
    kettle["position"] = "before_char"
    kettle["extensions"]["position"] = 0
    assert exported[2] == kettle


def test_numeric_spec_version_and_the_dates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CCv3: never refuse a card for its spec_version (compared as a number);
    modification_date is the time of an export that changed something; creation_date is
    set when absent; both Unix seconds."""
    target = _import(tmp_path, ST_SAVED, capsys)
    assert "creation_date" not in ST_SAVED["data"]
    assert export_card(target, now=1_800_000_000.7).card == ST_SAVED  # unchanged: as it was
    manifest = target / "buddy.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("title: Mira", "title: Mira Chen"),
        encoding="utf-8",
    )
    data = export_card(target, now=1_800_000_000.7).card["data"]
    assert (data["creation_date"], data["modification_date"]) == (1_800_000_000, 1_800_000_000)
    dated = copy.deepcopy(ST_SAVED)
    dated["data"]["creation_date"] = 1_700_000_000
    (target / "card.json").write_text(json.dumps(dated), encoding="utf-8")
    data = export_card(target, now=1_800_000_000).card["data"]
    assert (data["creation_date"], data["modification_date"]) == (1_700_000_000, 1_800_000_000)
    assert "modification_date" not in export_card(target, 2).card["data"]  # V2 has no dates


@pytest.mark.parametrize("value", ["3.0", 3.0, 3, "3", "2.9"])
def test_spec_version_is_never_refused(tmp_path: Path, value: Any) -> None:
    from buddy.cards import parse_card

    card = copy.deepcopy(ST_SAVED)
    card["spec_version"] = value
    parsed = parse_card(json.dumps(card).encode(), "x.json")
    assert parsed.version == 3
    assert parsed.warnings == (
        () if float(value) == 3 else (f"`spec_version` is {value!r}, expected '3.0'",)
    )


def test_an_invalid_regular_expression_makes_its_entry_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = _st_card(_st_entry(keys=["/[a/", "hug"]), _st_entry(comment="Lone", keys=["/(a+)+/"]))
    source = _write(tmp_path / "bad.json", card)
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path), "--name", "b"], capsys)
    assert code == 0, err
    assert (
        f"buddy import-card: warning: {source}: lore entry 'Hugs': the key '/[a/' is not usable "
        "here (a `[` class is not closed); the entry is off\n"
    ) in err
    # An entry with nothing else to trigger it is kept in the book, switched off, so its
    # author sees it (its key stays in card.json).
    assert "lore entry 'Lone': nothing triggers it here" not in err  # said once, above
    entry, lone = _book(tmp_path / "b")["entries"]
    assert (entry["keys"], entry["enabled"]) == (["hug"], False)
    assert (lone.get("keys", []), lone.get("patterns", []), lone["enabled"]) == ([], [], False)
    assert export_card(tmp_path / "b").card == card
    book = _book(tmp_path / "b")
    book["entries"][0]["content"] = "Edited."
    _save(tmp_path / "b", book)
    first, lone = _book_of(export_card(tmp_path / "b").card)["entries"]
    assert first == {**card["data"]["character_book"]["entries"][0], "content": "Edited."}
    assert lone == card["data"]["character_book"]["entries"][1]


# ---------------------------------------------------------------- each field


def test_every_field_of_a_character_book_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, ST_SAVED, capsys)
    tea = _book(target)["entries"][1]
    assert tea == {
        "name": "Tea accidents",
        "content": "Spilled tea is bad luck in {{char}}'s house.",
        "keys": ["oolong"],
        "patterns": [r"(?i)\bteas?\b"],
        "also": ["spilled", "broken"],
        "logic": "not_any",
        "order": 50,
        "priority": 50,
        "position": "before_persona",
        "case_sensitive": True,
        "whole_words": False,
        "scan": 6,
        "sticky": 3,
        "cooldown": 5,
        "delay": 7,
        "probability": 80,
        "group": ["house rules", "mood"],
        "group_weight": 30,
        "group_override": True,
        "group_scoring": True,
        "exclude_recursion": True,
        "prevent_recursion": True,
        "delay_until_recursion": 2,
        "card": {
            "id": 1,
            "use_regex": True,
            "extensions": {"display_index": 1, "automation_id": "tea", "vectorized": False},
        },
    }
    blueprint = buddy.load(target)
    assert [e.name for e in blueprint.sections["lore"].entries] == [
        "Hugs",
        "Tea accidents",
        "Kettle",
    ]


WI_ENTRY: dict[str, Any] = {
    "uid": 5,
    "key": ["lamp"],
    "keysecondary": ["broken"],
    "comment": "Lamp",
    "content": "The lamp flickers.",
    "constant": False,
    "vectorized": False,
    "selective": True,
    "selectiveLogic": 1,
    "addMemo": True,
    "order": 120,
    "position": 4,
    "disable": True,
    "excludeRecursion": False,
    "preventRecursion": False,
    "delayUntilRecursion": True,
    "probability": 40,
    "useProbability": False,
    "depth": 3,
    "group": "",
    "groupOverride": False,
    "groupWeight": 100,
    "scanDepth": 25,
    "caseSensitive": None,
    "matchWholeWords": True,
    "useGroupScoring": None,
    "automationId": "",
    "role": 1,
    "sticky": 0,
    "cooldown": None,
    "delay": None,
    "displayIndex": 5,
}


def test_every_field_of_a_world_info_entry() -> None:
    lore, _, warnings = derive_book({"entries": {"5": WI_ENTRY}}, "wi")
    assert lore["entries"] == [
        {
            "name": "Lamp",
            "content": "The lamp flickers.",
            "keys": ["lamp"],
            "also": ["broken"],
            "logic": "not_all",
            "enabled": False,
            "order": 120,
            "priority": 120,
            "position": "depth",
            "depth": 3,
            "role": "user",
            "whole_words": True,
            "scan": 20,
            # useProbability false: probability means nothing; sticky 0: off.
            "delay_until_recursion": 1,  # true is level 1
            "card": {
                "uid": 5,
                "vectorized": False,
                "addMemo": True,
                "automationId": "",
                "displayIndex": 5,
            },
        }
    ]
    assert warnings == ["lore entry 'Lamp': scan 25 is outside 1..20; 20 here"]
    assert lorebook_from_book({"entries": {"5": WI_ENTRY}}, lore, "wi")[0] == {
        "entries": {"5": WI_ENTRY}
    }


@pytest.mark.parametrize(
    ("number", "position", "warned"),
    [
        (0, "before_persona", False),
        (1, "after_persona", False),
        (2, "after_persona", True),
        (3, "after_persona", True),
        (4, "depth", False),
        (5, "before_persona", True),
        (6, "before_persona", True),
    ],
)
def test_positions(number: int, position: str, warned: bool) -> None:
    # world-info.js world_info_position: before 0, after 1, ANTop 2, ANBottom 3, atDepth 4,
    # EMTop 5, EMBottom 6.
    entry = {**WI_ENTRY, "position": number}
    lore, _, warnings = derive_book({"entries": {"5": entry}}, "wi")
    assert lore["entries"][0].get("position", "after_persona") == position
    assert any("has no place here" in w for w in warnings) is warned


def test_v2_position_strings() -> None:
    before = {"keys": ["a"], "content": "x", "position": "before_char", "extensions": {}}
    after = {**before, "position": "after_char"}
    lore = derive_book({"entries": [before, after]}, "book")[0]
    assert [e.get("position") for e in lore["entries"]] == ["before_persona", None]


def test_decorators_become_fields_and_go_back_as_they_were(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content = "@@depth 1\n@@role user\n@@is_greeting 1\n@@additional_keys kettle\n\nHot water."
    card = _st_card(_st_entry(content=content, keys=["tea"]))
    source = _write(tmp_path / "d.json", card)
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path), "--name", "d"], capsys)
    assert code == 0
    assert (
        "lore entry 'Hugs': decorator `@@is_greeting 1` has no meaning here and is dropped" in err
    )
    (entry,) = _book(tmp_path / "d")["entries"]
    assert entry["content"] == "Hot water."
    assert entry["keys"] == ["tea", "kettle"]
    assert (entry["position"], entry["depth"], entry["role"]) == ("depth", 1, "user")
    assert export_card(tmp_path / "d").card == card
    # The content edited: the decorators still hold, and go back on top of it.
    entry["content"] = "Boiling water."
    _save(tmp_path / "d", {**_book(tmp_path / "d"), "entries": [entry]})
    (out,) = _book_of(export_card(tmp_path / "d").card)["entries"]
    assert out["content"] == content.replace("\n\nHot water.", "\nBoiling water.")
    # The depth changed: its decorator is dropped and the field written instead.
    entry["depth"] = 3
    _save(tmp_path / "d", {**_book(tmp_path / "d"), "entries": [entry]})
    (out,) = _book_of(export_card(tmp_path / "d").card)["entries"]
    assert out["content"] == (
        "@@role user\n@@is_greeting 1\n@@additional_keys kettle\nBoiling water."
    )
    assert (out["extensions"]["position"], out["extensions"]["depth"]) == (4, 3)


def test_book_settings_with_no_place_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, ST_SAVED, capsys)
    book = _book(target)
    book.update(whole_words=False, scan=5, title="Tea")
    _save(target, book)
    exported = export_card(target)
    lorebook = _book_of(exported.card)
    assert (lorebook["name"], lorebook["scan_depth"]) == ("Tea", 5)
    assert lorebook["entries"] == _card_book(ST_SAVED)["entries"]
    assert exported.warnings == (
        "the book's `whole_words` has no place in a card's lorebook (SillyTavern keeps it in "
        "its settings); not exported",
    )


def test_renamed_deleted_and_new_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, ST_SAVED, capsys)
    book = _book(target)
    book["entries"][0]["name"] = "Hugs and more"  # its card: (id 0) says which it was
    del book["entries"][2]
    book["entries"].append({"name": "Cups", "content": "Six cups.", "patterns": ["cups?"]})
    _save(target, book)
    entries = _book_of(export_card(target).card)["entries"]
    original = _card_book(ST_SAVED)["entries"]
    assert entries[0] == {**original[0], "comment": "Hugs and more"}
    assert entries[1] == original[1]
    assert entries[2] == {
        "keys": ["/cups?/i"],
        "content": "Six cups.",
        "extensions": {},
        "enabled": True,
        "insertion_order": 100,
        "use_regex": True,
        "comment": "Cups",
        "name": "Cups",
    }


# ---------------------------------------------------------------- standalone lorebooks


def _lore_buddy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A buddy from st-saved.json without its lorebook (so it has no lore yet)."""
    card = copy.deepcopy(ST_SAVED)
    del card["data"]["character_book"]
    source = _write(tmp_path / "mira.json", card)
    assert _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)[0] == 0
    return tmp_path / "mira"


@pytest.mark.parametrize("kind", ["wi", "lorebook_v3", "character_book"])
def test_import_lore_and_export_it_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = _lore_buddy(tmp_path, capsys)
    book = _card_book(ST_SAVED)
    content: dict[str, Any] = {
        "wi": convert_lorebook(book, "book", "wi"),
        "lorebook_v3": {"spec": "lorebook_v3", "data": book},
        "character_book": book,
    }[kind]
    source = _write(tmp_path / "Tea House.json", content)
    code, out, err = _run(["import-lore", str(source), "--into", str(target)], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"created {target.as_posix()}/lore/tea-house.yaml",
        f"created {target.as_posix()}/lore/tea-house.card.json",
        f"added `lore: lore` to {target.as_posix()}/buddy.yaml",
    ]
    blueprint = buddy.load(target)
    assert blueprint.sections["lore"].entries[0].id == "tea-house/Hugs"
    exported = tmp_path / "out.json"
    code, out, _ = _run(["export-lore", str(target), "tea-house", "-o", str(exported)], capsys)
    assert code == 0
    assert out.endswith("the original as it was (nothing in the book changed)\n")
    assert json.loads(exported.read_text(encoding="utf-8")) == content


def test_import_lore_refuses_and_undoes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _lore_buddy(tmp_path, capsys)
    before = (target / "buddy.yaml").read_bytes()
    card = _write(tmp_path / "card.json", ST_SAVED)
    code, _, err = _run(["import-lore", str(card), "--into", str(target)], capsys)
    assert code == 1 and "a character card; import it with `buddy import-card`" in err
    assert _run(["import-lore", str(tmp_path / "none.json"), "--into", str(target)], capsys)[0] == 2
    eldoria = tmp_path / "Eldoria.json"
    eldoria.write_bytes((CORPUS / "eldoria.json").read_bytes())
    assert _run(["import-lore", str(eldoria), "--into", str(tmp_path)], capsys)[0] == 2
    assert _run(["import-lore", str(eldoria), "--into", str(target), "--name", "A"], capsys)[0] == 2
    # Two books whose entries together are too many: the buddy would not validate.
    many = {"entries": {str(i): {"key": ["k"], "content": "c"} for i in range(300)}}
    assert (
        _run(
            ["import-lore", str(_write(tmp_path / "a.json", many)), "--into", str(target)], capsys
        )[0]
        == 0
    )
    code, _, err = _run(
        ["import-lore", str(_write(tmp_path / "b.json", many)), "--into", str(target)], capsys
    )
    assert code == 1 and "500" in err
    assert sorted(p.name for p in (target / "lore").iterdir()) == ["a.card.json", "a.yaml"]
    assert (target / "buddy.yaml").read_bytes() != before  # `lore: lore`, from the first
    code, _, err = _run(
        ["import-lore", str(_write(tmp_path / "a.json", many)), "--into", str(target)], capsys
    )
    assert code == 2 and "already exists" in err


def test_shipped_world_info_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SillyTavern's shipped Eldoria.json: imported, unchanged, exported as it was; an
    edit changes only its entry; as lorebook_v3 it becomes what SillyTavern's
    convertWorldInfoToCharacterBook makes of it."""
    target = _lore_buddy(tmp_path, capsys)
    source = tmp_path / "Eldoria.json"
    source.write_bytes((CORPUS / "eldoria.json").read_bytes())
    assert _run(["import-lore", str(source), "--into", str(target)], capsys)[0] == 0
    book = _book(target, "eldoria")
    assert (book["scan"], book["whole_words"], book["recursion"]) == (2, True, 10)
    assert book["entries"][0]["keys"] == ["eldoria", "wood", "forest", "magical forest"]
    assert book["entries"][0]["position"] == "before_persona"
    out = tmp_path / "e.json"
    assert _run(["export-lore", str(target), "eldoria", "-o", str(out)], capsys)[0] == 0
    assert json.loads(out.read_text(encoding="utf-8")) == ELDORIA
    book["entries"][3]["keys"].append("spell")
    _save(target, book, "eldoria")
    assert _run(["export-lore", str(target), "eldoria", "-o", str(out)], capsys)[0] == 0
    exported = json.loads(out.read_text(encoding="utf-8"))
    expected = copy.deepcopy(ELDORIA)
    expected["entries"]["3"]["key"].append("spell")
    assert exported == expected
    code, _, _ = _run(
        ["export-lore", str(target), "eldoria", "-o", str(out), "--format", "lorebook_v3"], capsys
    )
    assert code == 0
    v3 = json.loads(out.read_text(encoding="utf-8"))
    assert v3["spec"] == "lorebook_v3"
    first = v3["data"]["entries"][0]
    assert (first["id"], first["keys"], first["position"], first["enabled"]) == (
        0,
        ["eldoria", "wood", "forest", "magical forest"],
        "before_char",
        True,
    )

    def fields(book: dict[str, Any], shape: Any) -> list[dict[str, Any]]:
        # The same lore entries; only `card:` (uid / id …) differs between the shapes.
        return [{**e, "card": None} for e in derive_book(book, shape)[0]["entries"]]

    assert fields(v3["data"], "book") == fields(expected, "wi")  # with "spell"


def test_shipped_card_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SillyTavern's shipped Seraphina card (its lorebook is Eldoria, as
    convertWorldInfoToCharacterBook wrote it then): imported and exported unchanged."""
    source = tmp_path / "seraphina.json"
    source.write_bytes((CORPUS / "seraphina.json").read_bytes())
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)
    assert (code, err) == (0, "")
    target = tmp_path / "seraphina"
    assert len(_book(target)["entries"]) == 4
    assert export_card(target).card == SERAPHINA
    out = tmp_path / "book.json"
    assert (
        _run(["export-lore", str(target), "card", "-o", str(out), "--format", "wi"], capsys)[0] == 0
    )
    wi = json.loads(out.read_text(encoding="utf-8"))
    assert [e["key"] for e in wi["entries"].values()] == [
        e["key"] for e in ELDORIA["entries"].values()
    ]


def test_export_lore_of_a_book_written_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _lore_buddy(tmp_path, capsys)
    (target / "lore").mkdir()
    (target / "lore" / "notes.yaml").write_text(
        "entries:\n"
        "  - name: Moon\n    content: The moon is full.\n    keys: [moon]\n"
        "  - name: Sun\n    content: It is noon.\n    patterns: ['(?i)\\bnoon\\b']\n"
        "    position: depth\n    depth: 0\n    role: assistant\n",
        encoding="utf-8",
    )
    manifest = target / "buddy.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "lore: lore\n", encoding="utf-8")
    code, out, err = _run(
        ["export-lore", str(target), "notes", "--format", "wi", "-o", "-"], capsys
    )
    assert code == 0
    # The book's settings are the buddy's defaults; a World Info file has none of its own.
    assert err.endswith("\nwi: made from the book (it has no original)\n")
    assert (
        "buddy export-lore: warning: the book's `scan` has no place in a SillyTavern World "
        "Info file (SillyTavern keeps it in its settings); not exported\n"
    ) in err
    wi = json.loads(out)
    moon, sun = wi["entries"]["0"], wi["entries"]["1"]
    assert (moon["comment"], moon["key"], moon["position"], moon["uid"]) == ("Moon", ["moon"], 1, 0)
    assert (sun["key"], sun["position"], sun["depth"], sun["role"]) == ([r"/\bnoon\b/i"], 4, 0, 2)
    lore = derive_book(wi, "wi")[0]
    assert [e["name"] for e in lore["entries"]] == ["Moon", "Sun"]
    assert _run(["export-lore", str(target), "nope"], capsys)[0] == 2
    assert _run(["export-lore", str(tmp_path / "none"), "notes"], capsys)[0] == 2


# ---------------------------------------------------------------- the docs


DOC = (REPO / "docs" / "cards.md").read_text(encoding="utf-8")
LOREBOOKS = DOC.split("\n## Lorebooks\n", 1)[1].split("\n## Errors\n", 1)[0]


def _block(after: str, fence: str) -> str:
    return LOREBOOKS.split(after, 1)[1].split(f"```{fence}\n", 1)[1].split("```\n", 1)[0]


def test_the_docs_lorebook_example_is_real(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """cards.md's import-lore example: the file, what the command prints, the book made."""
    _lore_buddy(tmp_path, capsys)
    monkeypatch.chdir(tmp_path)
    Path("tea-house.json").write_text(
        _block("This World Info file, `tea-house.json`:", "json"), encoding="utf-8"
    )
    command = "buddy import-lore tea-house.json --into mira"
    shown = _block("imports with two warnings", "text").splitlines()
    assert shown[0] == f"$ {command}"
    code, out, err = _run(command.split()[1:], capsys)
    assert code == 0
    assert (err + out).splitlines() == shown[1:]
    book = Path("mira/lore/tea-house.yaml").read_text(encoding="utf-8")
    assert book == _block("as `mira/lore/tea-house.yaml`:", "yaml")
    assert buddy.check(Path("mira"))[1] == []


def test_the_docs_table_names_every_field() -> None:
    from buddy.cards.lore_export import new_entry

    world_info = set(new_entry("wi"))
    card = _card_book(ST_SAVED)["entries"][0]
    character_book = {*card, "name", "priority", "case_sensitive"}
    extensions = {f"extensions.{k}" for k in card["extensions"]}
    book = {"name", "description", "scan_depth", "token_budget", "recursive_scanning"}
    missing = sorted(
        f for f in world_info | character_book | extensions | book if f"`{f}`" not in LOREBOOKS
    )
    assert not missing, f"name these fields in docs/cards.md's Lorebooks tables: {missing}"
