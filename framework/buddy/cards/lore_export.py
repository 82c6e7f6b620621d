"""A buddy's lore book back into a SillyTavern lorebook (either shape), touching only what
changed.

The book is derived again from the original lorebook (:func:`buddy.cards.lore.derive_book`)
and compared with the book as it is now, entry by entry (matched by name):

- an entry whose lore entry equals its derivation is written back exactly as it was;
- a changed entry is the original with only the changed fields written (and the fields
  that go with them: ``also`` brings ``logic``, ``position`` brings ``depth`` and
  ``role``); its keys list keeps every original key that is still there, in its original
  spelling; decorator lines whose fields did not change are kept at the top of a
  rewritten content;
- an entry whose lore entry was deleted is dropped; a new lore entry becomes a new entry;
- an entry that was not imported (no content) is kept as it was.

Book settings with no place in the lorebook are reported, not written.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from buddy.cards import decorators as decorator_lines
from buddy.cards.jsregex import to_js
from buddy.cards.lore import derive_book, key_kinds
from buddy.cards.lore_fields import (
    FIELDS,
    LOGIC,
    ROLES,
    Shape,
    entry_items,
    get,
    normal_book,
    normal_entry,
)

__all__ = ["lorebook_from_book", "new_entry"]

_POSITION_NUMBERS = {"before_persona": 0, "after_persona": 1, "depth": 4}
_COMPANIONS = {"also": ("logic",), "position": ("depth", "role"), "probability": ()}


def new_entry(shape: Shape, uid: int = 0) -> dict[str, Any]:
    """An empty entry of ``shape`` with the values SillyTavern gives a new one."""
    if shape == "book":
        return {
            "keys": [],
            "content": "",
            "extensions": {},
            "enabled": True,
            "insertion_order": 100,
            "use_regex": False,
        }
    return {
        "uid": uid,
        "key": [],
        "keysecondary": [],
        "comment": "",
        "content": "",
        "constant": False,
        "vectorized": False,
        "selective": True,
        "selectiveLogic": 0,
        "addMemo": True,
        "order": 100,
        "position": 1,
        "disable": False,
        "excludeRecursion": False,
        "preventRecursion": False,
        "delayUntilRecursion": 0,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "group": "",
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": None,
        "caseSensitive": None,
        "matchWholeWords": None,
        "useGroupScoring": None,
        "automationId": "",
        "role": 0,
        "sticky": None,
        "cooldown": None,
        "delay": None,
        "displayIndex": uid,
    }


def _put(entry: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    target = entry
    for key in path[:-1]:
        inner = target.get(key)
        if not isinstance(inner, dict):
            inner = {}
            target[key] = inner
        target = inner
    target[path[-1]] = value


def _overlay_card(entry: dict[str, Any], before: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Write into ``entry`` what changed between two ``card:`` mappings (``extensions``
    key by key: the mapped fields live there too)."""
    for key in set(before) | set(now):
        if key == "extensions":
            old, new = before.get(key) or {}, now.get(key) or {}
            target = entry.get("extensions")
            if isinstance(old, Mapping) and isinstance(new, Mapping) and isinstance(target, dict):
                _overlay_card(target, old, new)
                continue
        if key in before and key in now and before[key] == now[key]:
            continue
        if key in now:
            entry[key] = copy.deepcopy(now[key])
        else:
            entry.pop(key, None)


class _Writer:
    """Writes changed lore fields into one entry of ``shape``."""

    def __init__(
        self, entry: dict[str, Any], shape: Shape, book: Mapping[str, Any], case: bool | None
    ) -> None:
        self.entry = entry
        self.shape = shape
        self.index = 0 if shape == "wi" else 1
        self.ignore_case = not (book.get("case_sensitive", False) if case is None else case)

    def put(self, field: str, value: Any) -> None:
        _put(self.entry, FIELDS[field][self.index], value)

    def name(self, name: str, came_from: str | None) -> None:
        if came_from is None:
            came_from = "comment" if self.shape == "wi" or "name" not in self.entry else "name"
        if self.entry.get("comment") == self.entry.get(came_from):
            self.entry["comment"] = name
        self.entry[came_from] = name

    def keys(self, now: Mapping[str, Any], held: set[str]) -> None:
        words = [w for w in now["keys"] if w not in held]
        patterns = list(now["patterns"])
        out: list[Any] = []
        for key in key_kinds(get(self.entry, FIELDS["keys"][self.index])):
            if key.word and key.word in words:
                words.remove(key.word)
                out.append(key.raw)
            elif key.pattern and key.pattern in patterns:
                patterns.remove(key.pattern)
                out.append(key.raw)
            elif key.problem:
                out.append(key.raw)  # never shown in the book: it cannot be deleted there
        out += words + [to_js(p, ignore_case=self.ignore_case) for p in patterns]
        self.put("keys", out)

    def value(self, field: str, now: Mapping[str, Any]) -> None:
        value = now[field]
        if field == "also":
            self.put("also", list(value))
            if value:
                self.put("selective", True)
        elif field == "logic":
            self.put("logic", LOGIC.index(value))
        elif field == "always":
            self.put("always", bool(value))
        elif field == "enabled":
            self.put("enabled", not value if self.shape == "wi" else bool(value))
        elif field == "position":
            self.put("position", _POSITION_NUMBERS[value])
            if self.shape == "book":
                self.entry["position"] = (
                    "before_char" if value == "before_persona" else "after_char"
                )
        elif field == "role":
            self.put("role", ROLES.index(value))
        elif field == "group":
            self.put("group", ",".join(value))
        elif field == "probability":
            self.put("probability", value)
            self.put("use_probability", True)
        elif field == "delay_until_recursion" and self.shape == "book":
            self.put(field, value or False)
        else:
            self.put(field, value)
            if (
                field == "case_sensitive"
                and self.shape == "book"
                and "case_sensitive" in self.entry
            ):
                self.entry["case_sensitive"] = bool(value)


def _held(
    parsed: decorator_lines.Decorators, derived: Mapping[str, Any], now: Mapping[str, Any]
) -> tuple[list[str], set[str]]:
    """The decorator lines to keep (those whose fields did not change) and the keys they
    supply."""
    kept: list[str] = []
    supplied: set[str] = set()
    fed = dict(parsed.sources)
    for line in parsed.lines:
        fields = fed.get(line)
        if fields is None:
            kept.append(line)  # no meaning here: kept for the applications that read it
            continue
        if fields == ("keys",):
            words = [w for w in line.partition(" ")[2].split(",") if w.strip()]
            if all(w.strip() in now["keys"] for w in words):
                kept.append(line)
                supplied.update(w.strip() for w in words)
            continue
        names = ("also", "logic") if fields == ("exclude",) else fields
        if all(derived[f] == now[f] for f in names):
            kept.append(line)
    return kept, supplied


def _changed_entry(
    original: Mapping[str, Any],
    derived: Mapping[str, Any],
    current: Mapping[str, Any],
    shape: Shape,
    book: Mapping[str, Any],
) -> dict[str, Any]:
    entry = copy.deepcopy(dict(original))
    before, now = normal_entry(derived), normal_entry(current)
    writer = _Writer(entry, shape, book, now["case_sensitive"])
    content = get(original, FIELDS["content"][writer.index])
    parsed = decorator_lines.parse(content if isinstance(content, str) else "")
    kept, supplied = _held(parsed, before, now)
    dropped = [f for line, fed in parsed.sources if line not in kept for f in fed]
    if "exclude" in dropped:
        dropped += ["also", "logic"]
    if before["content"] != now["content"] or kept != list(parsed.lines):
        writer.put("content", "\n".join([*kept, now["content"]]))
    if before["name"] != now["name"]:
        came_from = "name" if shape == "book" and original.get("name") else None
        if came_from is None and isinstance(original.get("comment"), str):
            came_from = "comment" if original["comment"].strip() else None
        writer.name(now["name"], came_from)
    if before["keys"] != now["keys"] or before["patterns"] != now["patterns"]:
        writer.keys(now, supplied)
    changed = [
        f
        for f in now
        if f in FIELDS and f not in ("content", "keys") and (before[f] != now[f] or f in dropped)
    ]
    for field in list(changed):
        changed += [c for c in _COMPANIONS.get(field, ()) if c not in changed]
    for field in changed:
        if field in ("depth", "role") and now["position"] != "depth":
            continue
        writer.value(field, now)
    _overlay_card(entry, before["card"], now["card"])
    return entry


def _entry_warnings(name: str, before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    if before["priority"] != now["priority"]:
        return [
            f"lore entry {name!r}: `priority` has no place in a SillyTavern lorebook (it keeps "
            "the highest order first); not exported"
        ]
    return []


def lorebook_from_book(
    original: Mapping[str, Any] | None,
    lore: Mapping[str, Any],
    shape: Shape = "book",
    reference: tuple[Mapping[str, Any], Shape] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The lorebook (of ``shape``) for the lore book ``lore`` (its file's data), starting
    from ``original`` (the lorebook it was imported from, of ``shape``; ``None``: a new
    one).

    Args:
        reference: When ``original`` is a conversion to ``shape`` of the lorebook the
            book was imported from: that lorebook and its shape. What changed is decided
            against it; the entries written are ``original``'s.

    Returns:
        The lorebook and warnings (changes that have no place in it).
    """
    start: Mapping[str, Any] = original or (
        {"entries": {}} if shape == "wi" else {"entries": [], "extensions": {}}
    )
    derived, pairs, _ = derive_book(*(reference or (start, shape)))
    if original is not None and reference is None and derived == dict(lore):
        return copy.deepcopy(dict(original)), []
    book = copy.deepcopy(dict(start))
    warnings = _book_settings(book, shape, normal_book(derived), normal_book(lore))
    current = {e["name"]: e for e in lore.get("entries") or [] if isinstance(e, Mapping)}
    # A conversion keeps the entries and their order: the n-th of each is the same entry.
    old = list(entry_items(start, shape))
    by_name = {name: e for _, name, e in pairs if name is not None and e is not None}
    renamed = _renamed(by_name, current)
    kept: list[tuple[Any, Any]] = []
    for (where, entry), (_, name, _) in zip(old, pairs, strict=True):
        now = None if name is None else current.get(renamed.get(name, name))
        if name is None:
            kept.append((where, copy.deepcopy(entry)))
        elif now is not None:
            before = by_name[name]
            if before == now:
                kept.append((where, copy.deepcopy(entry)))
            else:
                kept.append((where, _changed_entry(entry, before, now, shape, lore)))
                warnings += _entry_warnings(now["name"], normal_entry(before), normal_entry(now))
    uids = [int(w) for w, _ in kept if str(w).lstrip("-").isdigit()]
    next_uid = max(uids, default=-1) + 1
    for name, entry in current.items():
        if name in by_name or name in renamed.values():
            continue
        template = new_entry(shape, next_uid)
        made = _changed_entry(template, {"name": name}, entry, shape, lore)
        made["comment"] = name
        if shape == "book":
            made["name"] = name
            made["use_regex"] = bool(entry.get("patterns"))
        kept.append((str(next_uid) if shape == "wi" else len(kept), made))
        next_uid += 1
    if shape == "wi":
        book["entries"] = {str(w): e for w, e in kept}
    else:
        book["entries"] = [e for _, e in kept]
    return book, warnings


def _renamed(
    by_name: Mapping[str, Mapping[str, Any]], current: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Original name → new name, for the entries renamed in the book: a lore entry with a
    new name whose ``card:`` (its id, its comment …) is that of exactly one entry whose
    name is gone."""
    gone = {n: e.get("card") for n, e in by_name.items() if n not in current and e.get("card")}
    out: dict[str, str] = {}
    for name, entry in current.items():
        if name in by_name or not entry.get("card"):
            continue
        found = [n for n, card in gone.items() if card == entry["card"] and n not in out]
        if len(found) == 1:
            out[found[0]] = name
    return out


def _book_settings(
    book: dict[str, Any], shape: Shape, before: Mapping[str, Any], now: Mapping[str, Any]
) -> list[str]:
    warnings: list[str] = []
    places = {"title": "name", "scan": "scan_depth", "token_budget": "token_budget"}
    for field in before:
        if before[field] == now[field]:
            continue
        if field == "card":
            _overlay_card(book, before["card"], now["card"])
        elif shape == "book" and field in places:
            if now[field] is None:
                book.pop(places[field], None)
            else:
                book[places[field]] = now[field]
        elif shape == "book" and field == "recursion":
            book["recursive_scanning"] = now[field] > 0
        else:
            where = "a SillyTavern World Info file" if shape == "wi" else "a card's lorebook"
            warnings.append(
                f"the book's `{field}` has no place in {where} (SillyTavern keeps it in its "
                "settings); not exported"
            )
    return warnings
