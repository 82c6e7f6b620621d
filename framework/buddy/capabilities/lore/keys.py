"""How an entry's keys are found in what it scans, as SillyTavern finds them
(``WorldInfoBuffer.matchKeys`` and ``getScore``), and what its content costs in tokens.

- A **word** (``keys``, ``also``) is found in a text as text, ignoring case unless the
  entry is ``case_sensitive``. With ``whole_words`` a key of one word must have a non-word
  character or the text's edge on both sides — non-word in the ASCII sense, as
  JavaScript's ``\\W``, so a CJK character counts as one: 「花生」 is a whole word of
  「我对花生过敏」 — and a key of several words (with whitespace) is found as text.
- A **pattern** is a Python regular expression, run on the text as it is, ignoring case
  unless the entry is ``case_sensitive`` (an inline ``(?-i:…)`` keeps part of it exact),
  within the scan's time budget (:class:`~buddy.capabilities.memory.patterns.Budget`).
- Each text is searched on its own — a message, or one entry's content in a rescan — so
  no key matches across two of them (SillyTavern joins them with ``"\\n\\x01"`` for the
  same end) and ``^``/``$`` are a message's start and end.
- ``also`` is looked at only once a key or pattern matched; ``logic`` says how it decides.

Standard library only, but for the patterns' engine.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from buddy.capabilities.lore.compiled import LoreEntry
from buddy.capabilities.memory.patterns import Budget

__all__ = ["Keys", "Matcher", "Text", "estimate_tokens", "keys_of", "text"]


@dataclass(frozen=True, slots=True)
class Text:
    """One text scanned: as written, and case-folded once for every key."""

    raw: str
    folded: str


def text(raw: str) -> Text:
    """``raw`` ready to be scanned (trimmed, as SillyTavern trims each message)."""
    trimmed = raw.strip()
    return Text(trimmed, trimmed.casefold())


@dataclass(frozen=True, slots=True)
class Keys:
    """An entry's keys as this turn matches them (macros replaced)."""

    owner: str
    words: tuple[str, ...]
    patterns: tuple[str, ...]
    also: tuple[str, ...]
    logic: str
    case_sensitive: bool
    whole_words: bool


def keys_of(entry: LoreEntry, expand: Callable[[str, bool], str] | None = None) -> Keys:
    """``entry``'s keys, each put through ``expand`` (``(text, for_pattern)``) when its
    book has macros; a key that is empty then is dropped."""

    def each(values: tuple[str, ...], pattern: bool = False) -> tuple[str, ...]:
        said = (expand(v, pattern) if expand else v for v in values)
        return tuple(k for k in (s.strip() for s in said) if k)

    return Keys(
        f"lore {entry.id}",
        each(entry.keys),
        each(entry.patterns, pattern=True),
        each(entry.also),
        entry.logic,
        entry.case_sensitive,
        entry.whole_words,
    )


@lru_cache(maxsize=4096)
def _whole(word: str) -> re.Pattern[str]:
    # An escaped literal between two optional boundaries: no backtracking to bound.
    return re.compile(rf"(?:^|\W){re.escape(word)}(?:$|\W)", re.ASCII)


class Matcher:
    """Finds keys in texts, spending one scan's pattern time (``clock``)."""

    __slots__ = ("clock",)

    def __init__(self, clock: Budget) -> None:
        self.clock = clock

    def word(self, key: str, texts: Sequence[Text], keys: Keys) -> bool:
        """Whether the word ``key`` is in one of ``texts``."""
        needle = key if keys.case_sensitive else key.casefold()
        whole = keys.whole_words and len(needle.split()) == 1
        for t in texts:
            haystack = t.raw if keys.case_sensitive else t.folded
            if needle in haystack and (not whole or _whole(needle).search(haystack)):
                return True
        return False

    def pattern(self, pattern: str, texts: Sequence[Text], keys: Keys) -> bool:
        """Whether ``pattern`` matches in one of ``texts`` (in time)."""
        ignore = not keys.case_sensitive
        return any(
            self.clock.search(pattern, t.raw, owner=keys.owner, ignore_case=ignore) is not None
            for t in texts
        )

    def _primary(self, keys: Keys, texts: Sequence[Text]) -> list[bool]:
        return [self.word(w, texts, keys) for w in keys.words] + [
            self.pattern(p, texts, keys) for p in keys.patterns
        ]

    def triggered(self, keys: Keys, texts: Sequence[Text]) -> bool:
        """A key or pattern is found, and ``also`` agrees under ``logic`` (no ``also``:
        the key alone decides)."""
        if not texts:
            return False
        matched = any(self.word(w, texts, keys) for w in keys.words) or any(
            self.pattern(p, texts, keys) for p in keys.patterns
        )
        if not matched or not keys.also:
            return matched
        found = [self.word(w, texts, keys) for w in keys.also]
        if keys.logic == "not_all":
            return not all(found)
        if keys.logic == "not_any":
            return not any(found)
        if keys.logic == "and_all":
            return all(found)
        return any(found)

    def score(self, keys: Keys, texts: Sequence[Text]) -> int:
        """How many keys are found (an inclusion group's scoring): the primary ones, plus
        ``also``'s under ``and_any`` — under ``and_all`` only when all of them are."""
        primary = self._primary(keys, texts)
        if not primary:
            return 0
        hits = sum(primary)
        if not keys.also or keys.logic not in ("and_any", "and_all"):
            return hits
        also = sum(self.word(w, texts, keys) for w in keys.also)
        if keys.logic == "and_all" and also < len(keys.also):
            return hits
        return hits + also


def estimate_tokens(said: str) -> int:
    """A model's tokens for ``said``, estimated without a tokenizer: a CJK or fullwidth
    character is about one token, other text about four characters a token (rounded up)."""
    wide = sum(1 for c in said if unicodedata.east_asian_width(c) in ("W", "F"))
    return wide + math.ceil((len(said) - wide) / 4)
