"""Standalone lorebook files: read one into a buddy's lore book, write a book back out.

Three kinds of file hold a lorebook:

| kind | looks like | shape |
|---|---|---|
| ``lorebook_v3`` | ``{"spec": "lorebook_v3", "data": {"entries": [...]}}`` (CCv3) | character_book |
| ``character_book`` | ``{"entries": [...]}``: a card's lorebook on its own | character_book |
| ``wi`` | ``{"entries": {"0": {"uid": 0, "key": [...]}}}``: SillyTavern World Info | World Info |

An imported book is ``lore/<name>.yaml``; the file as read is kept next to it as
``lore/<name>.card.json`` (the lore folder's books are its ``*.yaml`` files only), so
``export-lore`` writes back every entry nobody touched exactly as it was. Exporting to the
other shape converts the entries the way SillyTavern does (its ``convertCharacterBook``
and the server's ``convertWorldInfoToCharacterBook``), keeping every field.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from buddy.cards.lore_export import lorebook_from_book
from buddy.cards.lore_fields import FIELDS, Shape, entry_items, get
from buddy.cards.spec import lorebook_problems
from buddy.compile.project import not_regular
from buddy.errors import CardError

__all__ = [
    "LORE_SIDECAR",
    "Kind",
    "Lorebook",
    "convert_lorebook",
    "lorebook_file",
    "parse_lorebook",
    "read_lorebook",
]

Kind = Literal["lorebook_v3", "character_book", "wi"]
#: The sidecar of an imported book ``lore/<name>.yaml``: ``<name>`` + this.
LORE_SIDECAR = ".card.json"
_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Lorebook:
    """A lorebook file, read.

    Attributes:
        raw: The whole file's JSON, as read.
        kind: Which of the three kinds it is.
        file: Where it was read from (for messages).
    """

    raw: Mapping[str, Any]
    kind: Kind
    file: str = ""

    @property
    def shape(self) -> Shape:
        """``wi`` or ``book`` (the entries' shape)."""
        return "wi" if self.kind == "wi" else "book"

    @property
    def book(self) -> Mapping[str, Any]:
        """The lorebook object (``data`` of a ``lorebook_v3`` file, else the file)."""
        data: Mapping[str, Any] = self.raw["data"] if self.kind == "lorebook_v3" else self.raw
        return data


def _wi_problems(book: Mapping[str, Any]) -> list[str]:
    problems = []
    for uid, entry in book["entries"].items():
        at = f"entries.{uid}"
        if not isinstance(entry, Mapping):
            problems.append(f"{at}: expected an object")
            continue
        if entry.get("content") is not None and not isinstance(entry["content"], str):
            problems.append(f"{at}.content: expected a string")
        for key in ("key", "keysecondary"):
            value = entry.get(key)
            if value is not None and not (
                isinstance(value, list) and all(isinstance(k, str) for k in value)
            ):
                problems.append(f"{at}.{key}: expected a list of strings")
    return problems


def parse_lorebook(raw: bytes, file: str) -> Lorebook:
    """The lorebook in the bytes of a JSON file.

    Raises:
        CardError: Not JSON, not one of the three kinds, or a lorebook of wrong shape.
    """
    try:
        value = json.loads(raw.decode("utf-8").removeprefix("\ufeff"))
    except UnicodeDecodeError as exc:
        raise CardError(file, [f"not UTF-8 text (byte {exc.start}): not a lorebook"]) from None
    except json.JSONDecodeError as exc:
        raise CardError(
            file, [f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        ) from None
    except RecursionError:
        raise CardError(file, ["not valid JSON: nested too deeply"]) from None
    if not isinstance(value, dict):
        raise CardError(file, ["the top level is not an object: not a lorebook"])
    spec = value.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3"):
        raise CardError(
            file, [f"`spec` is {spec}: a character card; import it with `buddy import-card`"]
        )
    if spec == "lorebook_v3":
        # The CCv3 specification: never refuse a lorebook for its spec_version.
        problems = lorebook_problems(value.get("data"), "data")
        kind: Kind = "lorebook_v3"
    elif spec is not None:
        raise CardError(file, [f"unknown `spec` {spec!r}: expected lorebook_v3"])
    elif isinstance(value.get("entries"), dict):
        problems, kind = _wi_problems(value), "wi"
    elif isinstance(value.get("entries"), list):
        problems, kind = lorebook_problems(value, "lorebook"), "character_book"
    else:
        raise CardError(
            file,
            [
                "no `entries`: not a lorebook (expected a CCv3 lorebook_v3 file, a card's "
                "character_book, or a SillyTavern World Info file)"
            ],
        )
    if problems:
        raise CardError(file, problems)
    return Lorebook(value, kind, file)


def read_lorebook(path: Path, shown: str | None = None) -> Lorebook:
    """Read the lorebook in a ``.json`` file (see :func:`parse_lorebook`).

    Raises:
        CardError: It cannot be read or is not a lorebook.
    """
    file = shown if shown is not None else str(path)
    kind = not_regular(path)
    if kind is not None:  # never opened: a FIFO would block the reader forever
        raise CardError(file, [f"this file is {kind}, not a regular file"])
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise CardError(file, [f"the file is over {_MAX_BYTES} bytes"])
        raw = path.read_bytes()
    except OSError as exc:
        raise CardError(file, [f"cannot read the file: {exc.strerror or exc}"]) from None
    return parse_lorebook(raw, file)


# ---------------------------------------------------------------- between the shapes

_WI_EXTRAS = {"displayIndex": "display_index", "automationId": "automation_id"}


def _to_book_entry(uid: Any, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A World Info entry as a character_book entry (server characters.js
    ``convertWorldInfoToCharacterBook``), every other field kept in ``extensions``."""
    out: dict[str, Any] = {"id": entry.get("uid", uid)}
    mapped = {path[0][0] for path in FIELDS.values()} | {"uid", "comment"}
    for field, (wi_path, book_path) in FIELDS.items():
        value = get(entry, wi_path)
        if value is None and wi_path[0] not in entry:
            continue
        current: dict[str, Any] = out
        for key in book_path[:-1]:
            current = current.setdefault(key, {})
        current[book_path[-1]] = (not value) if field == "enabled" else copy.deepcopy(value)
    out["comment"] = entry.get("comment", "")
    out["position"] = "before_char" if entry.get("position") == 0 else "after_char"
    out["use_regex"] = True  # what SillyTavern writes; its keys decide one by one
    extensions = out.setdefault("extensions", {})
    for key, value in entry.items():
        if key not in mapped:
            extensions[_WI_EXTRAS.get(key, key)] = copy.deepcopy(value)
    return out


def _to_wi_entry(index: int, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A character_book entry as a World Info entry (world-info.js
    ``convertCharacterBook``), every other field kept."""
    out: dict[str, Any] = {"uid": entry.get("id", index)}
    taken = {"id", "extensions"}
    extensions = entry.get("extensions")
    inner = dict(extensions) if isinstance(extensions, Mapping) else {}
    for field, (wi_path, book_path) in FIELDS.items():
        source: Mapping[str, Any] = inner if len(book_path) == 2 else entry
        if book_path[-1] not in source:
            continue
        value = source[book_path[-1]]
        out[wi_path[0]] = (not value) if field == "enabled" else copy.deepcopy(value)
        if len(book_path) == 2:
            inner.pop(book_path[-1])
        else:
            taken.add(book_path[0])
    if "position" not in out:
        out["position"] = 0 if entry.get("position") == "before_char" else 1
    taken.add("position")
    name = entry.get("name")
    if isinstance(name, str) and name.strip() and not entry.get("comment"):
        out["comment"] = name
        taken.update({"name", "comment"})
    for key, value in entry.items():
        if key not in taken:
            out[key] = copy.deepcopy(value)
    for key, value in inner.items():
        wi_key = next((k for k, v in _WI_EXTRAS.items() if v == key), key)
        out.setdefault(wi_key, copy.deepcopy(value))
    return out


def convert_lorebook(book: Mapping[str, Any], source: Shape, target: Shape) -> dict[str, Any]:
    """``book`` (of shape ``source``) in shape ``target``."""
    if source == target:
        return copy.deepcopy(dict(book))
    rest = {k: copy.deepcopy(v) for k, v in book.items() if k != "entries"}
    if target == "book":
        entries = [_to_book_entry(uid, e) for uid, e in entry_items(book, "wi")]
        return {**rest, "entries": entries}
    wi = {str(e.get("id", i)): _to_wi_entry(i, e) for i, e in entry_items(book, "book")}
    return {**rest, "entries": wi}


def lorebook_file(
    original: Lorebook | None, lore: Mapping[str, Any], kind: Kind | None
) -> tuple[dict[str, Any], Kind, list[str]]:
    """The lorebook file for the lore book ``lore`` (its file's data).

    Args:
        original: The file it was imported from (``None``: made from the book alone).
        lore: The book as it is now.
        kind: ``wi`` or ``lorebook_v3``; default: the original's kind, else ``lorebook_v3``.

    Returns:
        The file's JSON, its kind, and warnings.
    """
    chosen: Kind = kind or (original.kind if original is not None else "lorebook_v3")
    shape: Shape = "wi" if chosen == "wi" else "book"
    start, reference = None, None
    if original is not None:  # converted to the other shape: untouched means as converted
        start = convert_lorebook(original.book, original.shape, shape)
        reference = (original.book, original.shape) if original.shape != shape else None
    book, warnings = lorebook_from_book(start, lore, shape, reference)
    if chosen != "lorebook_v3":
        return book, chosen, warnings
    if original is not None and original.kind == "lorebook_v3":
        return {**copy.deepcopy(dict(original.raw)), "data": book}, chosen, warnings
    return {"spec": "lorebook_v3", "data": book}, chosen, warnings
