"""Did-you-mean hints: the choice a misspelt or half-written name most likely meant.

:mod:`difflib` is imported on the first hint that needs it: a valid manifest needs none.
"""

from __future__ import annotations

import re

__all__ = ["choices", "closest", "did_you_mean"]


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """``"did you mean `x`?"`` for the closest choice, or ``""``."""
    close = closest(word, choices)
    return f"did you mean `{close}`?" if close is not None else ""


def closest(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The choice ``word`` most likely meant, or ``None``.

    A name written short or long comes first — a choice it begins (``plan`` →
    ``plan_menu``), one that begins it (``plan_menus`` → ``plan_menu``), one containing
    it (``menu``) — then the most similar spelling. Similarity is also asked of what
    follows a shared namespace (``a.``), which alone would make ``a.running`` look like
    ``a.rating``.
    """
    folded = word.casefold()
    options = [(c, c.casefold()) for c in choices]
    same = [c for c, f in options if f == folded]
    if same:
        return same[0]
    if len(folded) >= 3:
        longer = [c for c, f in options if f.startswith(folded)]
        if longer:
            return min(longer, key=len)
        shorter = [c for c, f in options if folded.startswith(f) and 2 * len(f) >= len(folded)]
        if shorter:
            return max(shorter, key=len)
    if len(folded) >= 4:
        around = [c for c, f in options if folded in f]
        if around:
            return min(around, key=len)
    import difflib

    best: tuple[float, str] | None = None
    for choice, fold in options:
        score = difflib.SequenceMatcher(None, folded, fold).ratio()
        if score < _CLOSE or _rest_ratio(folded, fold) < _CLOSE_REST:
            continue
        if best is None or score > best[0]:
            best = (score, choice)
    return best[1] if best is not None else None


_CLOSE = 0.6  # difflib.get_close_matches's default cutoff
_CLOSE_REST = 0.5
_NAMESPACE_END = re.compile(r".*[./:_-]")


def _rest_ratio(word: str, choice: str) -> float:
    """How alike ``word`` and ``choice`` are after the namespace they share, if any."""
    shared = 0
    for a, b in zip(word, choice, strict=False):
        if a != b:
            break
        shared += 1
    namespace = _NAMESPACE_END.match(word[:shared])
    if namespace is None:
        return 1.0
    cut = namespace.end()
    import difflib

    return difflib.SequenceMatcher(None, word[cut:], choice[cut:]).ratio()


def choices(word: str, choices: list[str] | tuple[str, ...]) -> str:
    return did_you_mean(word, choices) or f"known: {', '.join(choices)}"
