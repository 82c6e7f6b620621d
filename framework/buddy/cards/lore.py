"""A SillyTavern lorebook as a buddy's lore book (import).

Two shapes carry the same entries: a card's ``character_book`` (and a CCv3 ``lorebook_v3``
file's ``data``) has ``entries`` as a list, its SillyTavern fields in each entry's
``extensions``; a SillyTavern World Info file has ``entries`` as an object keyed by uid,
with camelCase fields (``key``, ``keysecondary``, ``disable``, ``order``, numeric
``position``). :data:`FIELDS` names where each lore field lives in each shape.

The derivation is deterministic: export (:mod:`buddy.cards.lore_export`) derives the book
again from the original and writes back only what differs. The book's own settings are
SillyTavern's shipped ones, written out (:data:`ST_BOOK`). Each entry:

- keys: a ``/…/flags`` key is a JavaScript regular expression and becomes a pattern
  (:mod:`buddy.cards.jsregex`); any other key is text — whatever ``use_regex`` says, as
  SillyTavern does. A key that does not convert makes the entry inert (``enabled: false``)
  with a warning naming the entry and the key;
- decorators at the start of the content become fields (:mod:`buddy.cards.decorators`);
- numbers out of a lore bound are clamped, with a warning;
- every field with no lore field goes into the entry's ``card:`` (the original stays in
  the sidecar too).

An entry whose content is empty (after its decorators) is not imported and is written back
untouched; one that nothing could trigger here (no key, pattern or ``always``) is imported
switched off, with a warning when it was on.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buddy.capabilities.lore.limits import (
    DELAY_MAX,
    DEPTH_DEFAULT,
    DEPTH_MAX,
    GROUP_WEIGHT,
    ORDER_DEFAULT,
    ORDER_RANGE,
    PROBABILITY_MAX,
    RECURSION_MAX,
    SCAN_MESSAGES,
    TOKEN_BUDGET_MAX,
    TURNS_MAX,
)
from buddy.cards import decorators as decorator_lines
from buddy.cards.jsregex import NotConvertible, split_key, to_python
from buddy.cards.lore_fields import (
    ENTRY_DEFAULTS,
    FIELDS,
    LOGIC,
    ROLES,
    ST_BOOK,
    Shape,
    entry_items,
    get,
)

__all__ = ["BOOK_FILE", "Key", "book_from_card", "derive_book", "key_kinds"]

#: The lore book an imported card's lorebook becomes (``lore/card.yaml``).
BOOK_FILE = "card.yaml"

# world-info.js world_info_position: before, after, ANTop, ANBottom, atDepth, EMTop, EMBottom.
_POSITIONS = {
    0: "before_persona",
    1: "after_persona",
    2: "after_persona",
    3: "after_persona",
    4: "depth",
    5: "before_persona",
    6: "before_persona",
}
_MOVED = {
    2: "the author's note (top)",
    3: "the author's note (bottom)",
    5: "the example messages (top)",
    6: "the example messages (bottom)",
}


@dataclass(frozen=True, slots=True)
class Key:
    """One key of an entry as read.

    Attributes:
        raw: As written in the entry.
        word: The text key (stripped), for a plain key.
        pattern: The converted pattern, for a regular expression that converts.
        problem: Why a regular expression does not convert.
    """

    raw: str
    word: str = ""
    pattern: str = ""
    problem: str = ""


def key_kinds(keys: Any) -> list[Key]:
    """Each string of ``keys`` read as text or as a regular expression."""
    out: list[Key] = []
    for raw in keys if isinstance(keys, list) else []:
        if not isinstance(raw, str) or not raw.strip():
            continue
        split = split_key(raw.strip())
        if split is None:
            out.append(Key(raw, word=raw.strip()))
            continue
        try:
            out.append(Key(raw, pattern=to_python(*split)))
        except NotConvertible as exc:
            out.append(Key(raw, problem=str(exc)))
    return out


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return round(value)
    return int(value)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


class _Reader:
    """Reads one entry's fields, collecting warnings that name it."""

    def __init__(self, entry: Mapping[str, Any], shape: Shape, name: str) -> None:
        self.entry = entry
        self.index = 0 if shape == "wi" else 1
        self.name = name
        self.warnings: list[str] = []

    def raw(self, field: str) -> Any:
        return get(self.entry, FIELDS[field][self.index])

    def warn(self, text: str) -> None:
        self.warnings.append(f"lore entry {self.name!r}: {text}")

    def bounded(self, field: str, value: Any, least: int, most: int) -> int | None:
        number = _number(value)
        if number is None:
            return None
        if not least <= number <= most:
            clamped = min(max(number, least), most)
            self.warn(f"{field} {number} is outside {least}..{most}; {clamped} here")
            return clamped
        return number


def _name(entry: Mapping[str, Any], shape: Shape, fallback: str) -> tuple[str, str | None]:
    """The entry's lore name and the field it came from (``None``: made up)."""
    for field in ("comment",) if shape == "wi" else ("name", "comment"):
        value = entry.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()[:90], field
    return fallback, None


def _card(entry: Mapping[str, Any], shape: Shape, name_field: str | None) -> dict[str, Any]:
    """The entry's fields that have no lore field."""
    index = 0 if shape == "wi" else 1
    top = {path[0] for path in (p[index] for p in FIELDS.values()) if len(path) == 1}
    top |= {"position", "case_sensitive"} if shape == "book" else set()
    if name_field is not None:
        top.add(name_field)
    inner = {p[index][1] for p in FIELDS.values() if len(p[index]) == 2}
    out = {k: copy.deepcopy(v) for k, v in entry.items() if k not in top and k != "extensions"}
    extensions = entry.get("extensions")
    if isinstance(extensions, Mapping):
        rest = {k: copy.deepcopy(v) for k, v in extensions.items() if k not in inner}
        if rest:
            out["extensions"] = rest
    elif "extensions" in entry:
        out["extensions"] = copy.deepcopy(extensions)
    return out


def _keys(read: _Reader, decorated: Mapping[str, Any], fields: dict[str, Any]) -> list[Any]:
    """Set ``keys``, ``patterns``, ``also`` and ``logic`` in ``fields`` from the entry's
    keys (and a decorator's ``@@additional_keys``); the keys that are not usable here."""
    keys = key_kinds(read.raw("keys"))
    words = [k.word for k in keys if k.word]
    words += decorated.get("keys", [])
    patterns = [k.pattern for k in keys if k.pattern]
    inert = [k for k in keys if k.problem]
    for key in inert:
        read.warn(f"the key {key.raw!r} is not usable here ({key.problem}); the entry is off")
    fields["keys"], fields["patterns"] = words, patterns
    logic = _number(read.raw("logic"))
    if read.raw("selective"):
        also = key_kinds(read.raw("also"))
        for key in also:
            if not key.word:
                inert.append(key)
                read.warn(
                    f"the secondary key {key.raw!r} is a regular expression; secondary keys "
                    "are words here; the entry is off"
                )
        fields["also"] = [k.word for k in also if k.word]
        if fields["also"] and logic is not None and 0 <= logic < len(LOGIC):
            fields["logic"] = LOGIC[logic]
    return inert


def _entry(
    entry: Mapping[str, Any], shape: Shape, name: str, name_field: str | None
) -> tuple[dict[str, Any] | None, list[str]]:
    """The lore entry of ``entry`` (``None``: not imported) and warnings naming it."""
    read = _Reader(entry, shape, name)
    content = read.raw("content")
    parsed = decorator_lines.parse(content if isinstance(content, str) else "")
    for warning in parsed.warnings:
        read.warn(f"decorator {warning}")
    if not parsed.content.strip():
        return None, read.warnings
    fields: dict[str, Any] = {}
    inert = _keys(read, parsed.fields, fields)
    exclude = parsed.fields.get("exclude")
    if exclude:
        if fields.get("also"):
            read.warn("decorator @@exclude_keys is dropped: the entry has secondary keys")
        else:
            fields["also"], fields["logic"] = list(exclude), "not_any"
    fields["always"] = bool(read.raw("always")) or bool(parsed.fields.get("always"))
    enabled = read.raw("enabled")
    fields["enabled"] = not enabled if shape == "wi" else enabled is not False
    if inert or parsed.fields.get("enabled") is False:
        fields["enabled"] = False
    order = read.bounded("order", read.raw("order"), *ORDER_RANGE)
    fields["order"] = ORDER_DEFAULT if order is None else order
    fields["priority"] = fields["order"]  # SillyTavern keeps the highest order first
    _placement(read, shape, parsed.fields, fields)
    _rest(read, parsed.fields, fields)
    if not (fields["always"] or fields["keys"] or fields["patterns"]):
        if fields["enabled"]:  # SillyTavern never activates it either
            read.warn("nothing triggers it here (no key, pattern or `constant`); the entry is off")
        fields["enabled"] = False
    out: dict[str, Any] = {"name": name, "content": parsed.content}
    for field, default in ENTRY_DEFAULTS.items():
        value = fields.get(field, default)
        if value != default:
            out[field] = value
    if out.get("position") == "depth":
        out["depth"] = fields.get("depth", DEPTH_DEFAULT)
    card = _card(entry, shape, name_field)
    if card:
        out["card"] = card
    return out, read.warnings


def _placement(
    read: _Reader, shape: Shape, decorated: Mapping[str, Any], fields: dict[str, Any]
) -> None:
    number = _number(read.raw("position"))
    if number is None and shape == "book":
        number = 0 if read.entry.get("position") == "before_char" else 1
    position = _POSITIONS.get(number if number is not None else 1, "after_persona")
    if number in _MOVED and "position" not in decorated:
        where = position.replace("_", " the ")
        read.warn(f"position {_MOVED[number]} has no place here; {where}")
    fields["position"] = decorated.get("position", position)
    if fields["position"] != "depth":
        return
    depth = read.bounded("depth", decorated.get("depth", read.raw("depth")), 0, DEPTH_MAX)
    fields["depth"] = DEPTH_DEFAULT if depth is None else depth
    role = decorated.get("role")
    number = _number(read.raw("role"))
    if role is None and number is not None and 0 <= number < len(ROLES):
        role = ROLES[number]
    if role is not None:
        fields["role"] = role


def _rest(read: _Reader, decorated: Mapping[str, Any], fields: dict[str, Any]) -> None:
    case = _flag(read.raw("case_sensitive"))
    if case is None and read.index == 1:
        case = _flag(read.entry.get("case_sensitive"))
    fields["case_sensitive"] = case
    fields["whole_words"] = _flag(read.raw("whole_words"))
    fields["group_scoring"] = _flag(read.raw("group_scoring"))
    scan = decorated.get("scan", read.raw("scan"))
    fields["scan"] = read.bounded("scan", scan, SCAN_MESSAGES[1], SCAN_MESSAGES[2])
    for field, most in (("sticky", TURNS_MAX), ("cooldown", TURNS_MAX), ("delay", DELAY_MAX)):
        value = decorated.get(field, read.raw(field))
        fields[field] = None if not _number(value) else read.bounded(field, value, 1, most)
    probability = read.bounded("probability", read.raw("probability"), 0, PROBABILITY_MAX)
    if read.raw("use_probability") is not False and probability is not None:
        fields["probability"] = probability
    group = read.raw("group")
    if isinstance(group, str):
        fields["group"] = [g.strip() for g in group.split(",") if g.strip()]
    weight = read.bounded("group_weight", read.raw("group_weight"), *GROUP_WEIGHT[1:])
    if weight is not None:
        fields["group_weight"] = weight
    for field in ("group_override", "exclude_recursion", "prevent_recursion"):
        fields[field] = bool(read.raw(field))
    until = read.raw("delay_until_recursion")
    level = 1 if until is True else 0 if until in (False, None) else until
    fields["delay_until_recursion"] = (
        read.bounded("delay_until_recursion", level, 0, RECURSION_MAX) or 0
    )


def derive_book(
    book: Mapping[str, Any], shape: Shape
) -> tuple[dict[str, Any], list[tuple[Any, str | None, dict[str, Any] | None]], list[str]]:
    """The lore book of ``book`` (a lorebook of ``shape``).

    Returns:
        The book's data (as its YAML file holds it), each original entry as
        ``(index or uid, lore name or None, lore entry or None)``, and warnings.
    """
    warnings: list[str] = []
    out: dict[str, Any] = {}
    if shape == "book" and isinstance(book.get("name"), str) and book["name"].strip():
        out["title"] = book["name"].strip()[:100]
    settings = dict(ST_BOOK)
    if shape == "book":
        depth = _number(book.get("scan_depth"))
        if depth is not None:
            least, most = SCAN_MESSAGES[1], SCAN_MESSAGES[2]
            settings["scan"] = min(max(depth, least), most)
            if settings["scan"] != depth:
                warnings.append(
                    f"the lorebook's scan_depth {depth} is outside {least}..{most}; "
                    f"{settings['scan']} here"
                )
        budget = _number(book.get("token_budget"))
        if budget is not None and budget >= 1:
            settings["token_budget"] = min(budget, TOKEN_BUDGET_MAX)
        if book.get("recursive_scanning") is False:
            settings["recursion"] = 0
    out.update({k: v for k, v in settings.items() if v is not None})
    mapped = {"entries", "originalData"} | (
        {"name", "scan_depth", "token_budget", "recursive_scanning"} if shape == "book" else set()
    )
    card = {k: copy.deepcopy(v) for k, v in book.items() if k not in mapped}
    if card:
        out["card"] = card
    entries: list[tuple[Any, str | None, dict[str, Any] | None]] = []
    seen: set[str] = set()
    for number, (where, entry) in enumerate(entry_items(book, shape), start=1):
        if not isinstance(entry, Mapping):
            entries.append((where, None, None))
            continue
        base, name_field = _name(entry, shape, f"条目 {number}")
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}（{n}）"
        lore, said = _entry(entry, shape, name, name_field)
        warnings.extend(said)
        if lore is None:
            entries.append((where, None, None))
            continue
        seen.add(name)
        entries.append((where, name, lore))
    out["entries"] = [lore for _, _, lore in entries if lore is not None]
    return out, entries, warnings


def book_from_card(book: Mapping[str, Any]) -> dict[str, Any]:
    """The lore book (``lore/card.yaml``'s data) of a card's ``character_book``."""
    return derive_book(book, "book")[0]
