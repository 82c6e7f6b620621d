"""Character Card V2 and V3: the card object, its validation, and conversion between versions.

A V2 card is ``{"spec": "chara_card_v2", "spec_version": "2.0", "data": {...}}``; a V3 card
is ``{"spec": "chara_card_v3", "spec_version": "3.0", "data": {...}}`` with a superset of
the V2 fields. Both specifications say that fields an application does not know — in
``data``, in ``extensions``, in a lorebook — must never be destroyed, so a :class:`Card`
keeps the whole object it was read from and only reads through it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from buddy.errors import CardError

__all__ = [
    "PROMPT_FIELDS",
    "SPECS",
    "Card",
    "CardError",
    "blank_card",
    "convert",
    "lorebook_problems",
    "validate_card",
]

Version = Literal[2, 3]
SPECS: dict[int, tuple[str, str]] = {2: ("chara_card_v2", "2.0"), 3: ("chara_card_v3", "3.0")}
"""``spec`` and ``spec_version`` of each supported version."""

PROMPT_FIELDS = (
    "system_prompt",
    "description",
    "personality",
    "scenario",
    "mes_example",
    "post_history_instructions",
)
"""The card fields that make up a buddy's persona prompt, in prompt order."""

_STRING_FIELDS = (
    "name",
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
    "creator_notes",
    "system_prompt",
    "post_history_instructions",
    "creator",
    "character_version",
    "nickname",
)
_STRING_LIST_FIELDS = ("alternate_greetings", "tags", "group_only_greetings", "source")
_NUMBER_FIELDS = ("creation_date", "modification_date")
_V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")


@dataclass(frozen=True, slots=True)
class Card:
    """A validated character card.

    Attributes:
        raw: The complete card object as read (unknown fields included); never modified.
        version: 2 or 3, from ``spec``.
        file: Where it was read from (for messages).
        image: When read from a PNG: that PNG without its card text chunks (the
            character's picture), else ``None``.
        warnings: Things worth telling the user that do not stop an import.
    """

    raw: Mapping[str, Any]
    version: Version
    file: str = ""
    image: bytes | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def data(self) -> Mapping[str, Any]:
        """The card's ``data`` object."""
        data: Mapping[str, Any] = self.raw["data"]
        return data

    def text(self, name: str) -> str:
        """The string field ``name`` of ``data``, or ``""`` when absent or null."""
        value = self.data.get(name)
        return value if isinstance(value, str) else ""

    def strings(self, name: str) -> list[str]:
        """The list-of-strings field ``name`` of ``data``, or ``[]`` when absent or null."""
        value = self.data.get(name)
        return list(value) if isinstance(value, list) else []


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - JSON has no other types


def _expect(problems: list[str], where: str, value: Any, kind: str) -> bool:
    checks = {
        "a string": lambda v: isinstance(v, str),
        "a list": lambda v: isinstance(v, list),
        "an object": lambda v: isinstance(v, dict),
        "a number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "a boolean": lambda v: isinstance(v, bool),
    }
    if checks[kind](value):
        return True
    problems.append(f"{where}: expected {kind}, got {_kind(value)}")
    return False


def _strings(problems: list[str], where: str, value: Any) -> None:
    if _expect(problems, where, value, "a list"):
        for index, item in enumerate(value):
            _expect(problems, f"{where}[{index}]", item, "a string")


def _lorebook(problems: list[str], where: str, book: Any) -> None:
    if not _expect(problems, where, book, "an object"):
        return
    if book.get("extensions") is not None:
        _expect(problems, f"{where}.extensions", book["extensions"], "an object")
    entries = book.get("entries")
    if entries is None:
        problems.append(f"{where}: no `entries` list (a lorebook needs one, even if empty)")
        return
    if not _expect(problems, f"{where}.entries", entries, "a list"):
        return
    for index, entry in enumerate(entries):
        at = f"{where}.entries[{index}]"
        if not _expect(problems, at, entry, "an object"):
            continue
        for key, kind in (("content", "a string"), ("extensions", "an object")):
            if entry.get(key) is not None:
                _expect(problems, f"{at}.{key}", entry[key], kind)
        for key in ("keys", "secondary_keys"):
            if entry.get(key) is not None:
                _strings(problems, f"{at}.{key}", entry[key])


def lorebook_problems(book: Any, where: str) -> list[str]:
    """What is wrong with the lorebook ``book`` (a ``character_book``), one line per
    problem (``where`` names it in each)."""
    problems: list[str] = []
    _lorebook(problems, where, book)
    return problems


def _assets(problems: list[str], where: str, assets: Any) -> None:
    if not _expect(problems, where, assets, "a list"):
        return
    for index, asset in enumerate(assets):
        at = f"{where}[{index}]"
        if not _expect(problems, at, asset, "an object"):
            continue
        for key in ("type", "uri", "name", "ext"):
            if key not in asset:
                problems.append(f"{at}: no `{key}` (an asset needs type, uri, name and ext)")
            else:
                _expect(problems, f"{at}.{key}", asset[key], "a string")


def _version(spec: Any, card: Mapping[str, Any]) -> tuple[Version | None, str]:
    if spec == SPECS[2][0]:
        return 2, ""
    if spec == SPECS[3][0]:
        return 3, ""
    if spec is None:
        if any(isinstance(card.get(name), str) for name in _V1_FIELDS):
            return None, (
                "no `spec`: this looks like a Character Card V1; only V2 (`chara_card_v2`) "
                "and V3 (`chara_card_v3`) cards can be imported — re-save it as V2 in a "
                "card editor"
            )
        return None, "no `spec`: not a character card (expected chara_card_v2 or chara_card_v3)"
    if spec == "lorebook_v3":
        return None, (
            "`spec` is lorebook_v3: this is a lorebook, not a character card; add it to a "
            "buddy with `buddy import-lore`"
        )
    return None, f"unknown `spec` {spec!r}: expected chara_card_v2 or chara_card_v3"


def _spec_version(value: Any, version: Version) -> str:
    """A warning about ``spec_version``, or ``""``. Never a refusal: the V3 specification
    says to read a card whatever its ``spec_version`` says, comparing it as a number
    (a string ``"3.0"`` or a number ``3.0``)."""
    expected = SPECS[version][1]
    if value is None:
        return f"no `spec_version`; read as {expected}" if version == 3 else ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"`spec_version` is {_kind(value)}, not a version; read as {expected}"
    try:
        number = float(value)
    except ValueError:
        return f"`spec_version` is {value!r}, expected {expected!r}; read as {expected}"
    if number == float(expected):
        return ""
    if number > float(expected):
        return (
            f"`spec_version` {value} is newer than {expected}; fields this version does not "
            "know are kept but not used"
        )
    return f"`spec_version` is {value!r}, expected {expected!r}"


def validate_card(card: Any, file: str) -> tuple[Version, list[str]]:
    """Check a decoded card object.

    Missing fields are allowed (they read as empty); present ones must have the types the
    specifications give. ``null`` reads as absent, except for ``name``.

    Args:
        card: The decoded JSON.
        file: Where it came from, for the error.

    Returns:
        The version (2 or 3) and warnings.

    Raises:
        CardError: Every problem found.
    """
    if not isinstance(card, dict):
        raise CardError(file, [f"the top level is {_kind(card)}, not a card object"])
    version, why = _version(card.get("spec"), card)
    if version is None:
        raise CardError(file, [why])
    problems: list[str] = []
    warnings: list[str] = []
    warning = _spec_version(card.get("spec_version"), version)
    if warning:
        warnings.append(warning)
    data = card.get("data")
    if data is None:
        problems.append("no `data` object: the card's fields belong in `data`")
    elif _expect(problems, "data", data, "an object"):
        _data(problems, data)
    if problems:
        raise CardError(file, problems)
    return version, warnings


def _data(problems: list[str], data: Mapping[str, Any]) -> None:
    name = data.get("name")
    if name is None:
        problems.append("data.name: missing; a card needs a name")
    elif _expect(problems, "data.name", name, "a string") and not name.strip():
        problems.append("data.name: empty; a card needs a name")
    for key in _STRING_FIELDS[1:]:
        if data.get(key) is not None:
            _expect(problems, f"data.{key}", data[key], "a string")
    for key in _STRING_LIST_FIELDS:
        if data.get(key) is not None:
            _strings(problems, f"data.{key}", data[key])
    for key in _NUMBER_FIELDS:
        if data.get(key) is not None:
            _expect(problems, f"data.{key}", data[key], "a number")
    if data.get("extensions") is not None:
        _expect(problems, "data.extensions", data["extensions"], "an object")
    notes = data.get("creator_notes_multilingual")
    if notes is not None and _expect(
        problems, "data.creator_notes_multilingual", notes, "an object"
    ):
        for language, text in notes.items():
            _expect(problems, f"data.creator_notes_multilingual.{language}", text, "a string")
    if data.get("character_book") is not None:
        _lorebook(problems, "data.character_book", data["character_book"])
    if data.get("assets") is not None:
        _assets(problems, "data.assets", data["assets"])


def blank_card(version: Version) -> dict[str, Any]:
    """A card with every field of ``version`` empty (the start of an export without a
    ``card.json``)."""
    spec, spec_version = SPECS[version]
    data: dict[str, Any] = {
        "name": "",
        "description": "",
        "personality": "",
        "scenario": "",
        "first_mes": "",
        "mes_example": "",
        "creator_notes": "",
        "system_prompt": "",
        "post_history_instructions": "",
        "alternate_greetings": [],
        "tags": [],
        "creator": "",
        "character_version": "",
        "extensions": {},
    }
    if version == 3:
        data["group_only_greetings"] = []
    return {"spec": spec, "spec_version": spec_version, "data": data}


def convert(card: Mapping[str, Any], version: Version) -> dict[str, Any]:
    """A copy of ``card`` labelled as ``version``.

    Only ``spec`` and ``spec_version`` change, plus, going to V3, an empty
    ``group_only_greetings`` when there is none (V3 requires it). Fields of the other
    version stay in ``data``: readers ignore fields they do not know, and nothing is lost
    converting back.
    """
    out = copy.deepcopy(dict(card))
    current = 3 if out.get("spec") == SPECS[3][0] else 2
    if current == version:
        return out
    out["spec"], out["spec_version"] = SPECS[version]
    data = out.get("data")
    if version == 3 and isinstance(data, dict) and data.get("group_only_greetings") is None:
        data["group_only_greetings"] = []
    return out
