"""A card's lorebook (``character_book``) as a buddy's lore book, and back.

Import: each entry with content becomes a lore entry — its name (else its comment, else
``条目 N``, made unique), content, keys (``patterns`` when the entry says ``use_regex``),
``secondary_keys`` as ``also`` when ``selective``, ``constant`` as ``always``,
``insertion_order`` as ``order``, ``priority``, ``case_sensitive``, ``enabled``, and the
``sticky``/``cooldown`` turns SillyTavern keeps in ``extensions``; the book's
``scan_depth`` is its ``scan``. Everything else stays in ``card.json``.

Export, like the rest of :mod:`buddy.cards.mapping`, compares: it derives the lore book
from ``card.json``'s lorebook again, and when that equals the buddy's book the lorebook
is written back untouched. Otherwise each original entry is kept and overlaid with what
its lore entry (matched by the name the import gave it) now says, an entry whose lore
entry was deleted is dropped, and a new lore entry becomes a new card entry. An empty
entry (no content) never reaches a prompt: it is not imported and is kept on export.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from buddy.capabilities.lore.limits import ORDER_DEFAULT, SCAN_MESSAGES, TURNS_MAX

__all__ = ["BOOK_FILE", "book_from_card", "lorebook_from_book"]

#: The lore book an imported card's lorebook becomes (``lore/card.yaml``).
BOOK_FILE = "card.yaml"


def _names(entries: list[Any]) -> list[str | None]:
    """The lore name of each card entry (``None``: not imported, no content)."""
    out: list[str | None] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not str(entry.get("content") or "").strip():
            out.append(None)
            continue
        base = str(entry.get("name") or entry.get("comment") or f"条目 {index + 1}").strip()
        base = base[:90] or f"条目 {index + 1}"
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}（{n}）"
        seen.add(name)
        out.append(name)
    return out


def _turns(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= TURNS_MAX
    return value if ok else None


def _entry(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    words = [str(k) for k in entry.get("keys") or [] if str(k)]
    out: dict[str, Any] = {"name": name, "content": str(entry["content"])}
    if entry.get("use_regex"):
        out["patterns"] = words
    else:
        out["keys"] = words
    also = [str(k) for k in entry.get("secondary_keys") or [] if str(k)]
    if entry.get("selective") and also:
        out["also"] = also
    if entry.get("case_sensitive"):
        out["case_sensitive"] = True
    if entry.get("constant"):
        out["always"] = True
    if entry.get("enabled") is False:
        out["enabled"] = False
    for ours, theirs in (("order", "insertion_order"), ("priority", "priority")):
        value = entry.get(theirs)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[ours] = int(value)
    extensions = entry.get("extensions")
    if isinstance(extensions, Mapping):
        for key in ("sticky", "cooldown"):
            turns = _turns(extensions.get(key))
            if turns is not None:
                out[key] = turns
    return out


def book_from_card(book: Mapping[str, Any]) -> dict[str, Any]:
    """The lore book (``lore/card.yaml``'s data) of a card's ``character_book``."""
    entries = list(book.get("entries") or [])
    out: dict[str, Any] = {}
    if isinstance(book.get("name"), str) and book["name"].strip():
        out["title"] = book["name"].strip()[:100]
    depth = book.get("scan_depth")
    least, most = SCAN_MESSAGES[1], SCAN_MESSAGES[2]
    if isinstance(depth, int) and not isinstance(depth, bool) and least <= depth <= most:
        out["scan"] = depth
    out["entries"] = [
        _entry(name, entry) for name, entry in zip(_names(entries), entries, strict=True) if name
    ]
    return out


_MAPPED = (
    "content",
    "keys",
    "secondary_keys",
    "selective",
    "use_regex",
    "case_sensitive",
    "constant",
    "enabled",
    "insertion_order",
    "priority",
)


def _card_entry(lore: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in base.items() if k not in _MAPPED}
    patterns = list(lore.get("patterns") or [])
    out["keys"] = patterns or list(lore.get("keys") or [])
    out["content"] = lore["content"]
    out["enabled"] = lore.get("enabled", True)
    out["insertion_order"] = lore.get("order", base.get("insertion_order", ORDER_DEFAULT))
    if patterns or base.get("use_regex"):
        out["use_regex"] = bool(patterns)
    also = list(lore.get("also") or [])
    if also or "secondary_keys" in base:
        out["secondary_keys"] = also or [
            k for k in base.get("secondary_keys") or [] if not base.get("selective")
        ]
    if also or "selective" in base:
        out["selective"] = bool(also)
    for ours, theirs in (("case_sensitive", "case_sensitive"), ("always", "constant")):
        if lore.get(ours) or theirs in base:
            out[theirs] = bool(lore.get(ours))
    if "priority" in lore or "priority" in base:
        out["priority"] = lore.get("priority", 0)
    extensions = dict(out.get("extensions") or {})
    for key in ("sticky", "cooldown"):
        if key in lore:
            extensions[key] = lore[key]
        else:
            extensions.pop(key, None)
    out["extensions"] = extensions
    return out


def lorebook_from_book(
    original: Mapping[str, Any] | None, lore: Mapping[str, Any]
) -> dict[str, Any]:
    """The card's ``character_book`` for the buddy's lore book ``lore`` (its file's data),
    starting from the ``original`` lorebook of ``card.json`` (``None``: a new one)."""
    if original is not None and book_from_card(original) == lore:
        return copy.deepcopy(dict(original))
    book = copy.deepcopy(dict(original or {"extensions": {}}))
    if "title" in lore:
        book["name"] = lore["title"]
    if "scan" in lore:
        book["scan_depth"] = lore["scan"]
    current = {e["name"]: e for e in lore.get("entries") or []}
    entries: list[Any] = []
    done: set[str] = set()
    old = list((original or {}).get("entries") or [])
    for name, entry in zip(_names(old), old, strict=True):
        if name is None:
            entries.append(copy.deepcopy(entry))  # empty: never imported, kept as it was
        elif name in current:
            entries.append(_card_entry(current[name], entry))
            done.add(name)
    for name, entry in current.items():
        if name not in done:
            entries.append(_card_entry(entry, {"name": name}))
    book["entries"] = entries
    return book
