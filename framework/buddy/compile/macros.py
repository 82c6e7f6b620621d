"""Card macros (SillyTavern's and the Character Card V3 "curly braced syntax"), replaced.

A card's text and its lore speak in macros that a card application replaces each time it
builds a prompt: ``{{char}}`` and ``{{user}}`` (and the older ``<BOT>``, ``<CHAR>``,
``<USER>``), ``{{random:a,b}}`` / ``{{random::a::b}}``, ``{{pick::a::b}}``,
``{{roll:d6}}`` / ``{{roll:2d6+1}}``, ``{{reverse:text}}``, ``{{newline}}``, ``{{trim}}``,
``{{noop}}``, and the comments ``{{// …}}``, ``{{comment: …}}`` and ``{{hidden_key: …}}``
(removed from prompt text). Anything else in double braces is left as it is.

Nothing here is random: every draw is a hash of a seed, the macro's text and how many
times the same macro came before it in the text. Two seeds, because the two macros that
draw mean different things:

- ``seed`` (``random``, ``roll``): drawn again each turn — pass the turn's event id. The
  same seed and text give the same output, so a turn rendered twice says the same.
- ``stable`` (``pick``): kept for a conversation — pass the conversation id, so a pick
  stays what it was on every turn of that conversation (SillyTavern seeds it by chat).
  Without it, ``pick`` draws from ``seed`` like ``random``.

Standard library only: ``buddy validate``, the persona templates of imported cards
(:func:`buddy.compile.persona.card_macro`) and the lore scanner
(:mod:`buddy.capabilities.lore.macros`) use it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

__all__ = ["CARD_MACRO", "Expander", "expand"]

CARD_MACRO = "card_macro"
"""The persona templates' global that replaces one card macro
(:func:`buddy.compile.persona.card_macro`); an imported card's prompt calls it."""

DICE_MAX = 100
"""The most dice one ``{{roll}}`` throws; a formula asking for more is invalid."""
SIDES_MAX = 1_000_000
"""The most sides a die of ``{{roll}}`` has; a formula asking for more is invalid."""

_LEGACY = re.compile(r"<(?P<who>user|bot|char)>", re.IGNORECASE)
_NAMES = re.compile(r"\{\{\s*(?P<who>char|user)\s*\}\}", re.IGNORECASE)
# Newlines on either side go with it.
_TRIM = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", re.IGNORECASE)
# An innermost macro: its body holds no "{{" and no "}}" (so nested ones go first).
_MACRO = re.compile(r"\{\{(?P<body>(?:(?!\{\{|\}\}).)*)\}\}", re.DOTALL)
_COMMENT = re.compile(r"//|\s*(?:comment|(?P<hidden>hidden_key))\s*:", re.IGNORECASE)
_LIST = re.compile(r"(?P<kind>random|pick)\s?::?(?P<items>.+)", re.IGNORECASE | re.DOTALL)
_ROLL = re.compile(r"roll[ :](?P<formula>.+)", re.IGNORECASE | re.DOTALL)
# Bounded lengths: a number of thousands of digits is refused before `int` reads it.
_DICE = re.compile(
    r"(?P<count>[1-9]\d{0,8})?d(?P<sides>[1-9]\d{0,8})(?P<bonus>[+-]\d{1,9})?",
    re.IGNORECASE | re.ASCII,
)
_REVERSE = re.compile(r"reverse:(?P<text>.+)", re.IGNORECASE | re.DOTALL)
_WORDS = {"newline": "\n", "noop": "", "trim": ""}
# Nested macros are replaced innermost first, one level a pass.
_PASSES = 8


def _options(items: str) -> list[str]:
    """The choices of ``random``/``pick``: split on ``::`` as they are, or else on commas
    (``\\,`` is a comma inside a choice) with spaces around each choice trimmed."""
    if "::" in items:
        return items.split("::")
    return [item.strip().replace("\x00", ",") for item in items.replace("\\,", "\x00").split(",")]


class Expander:
    """Replaces card macros, counting the macros it has seen across calls.

    One expander stands for one prompt being built: each call continues the count, so the
    second ``{{random:a,b}}`` of a prompt draws on its own even when the prompt's text is
    given piece by piece (as the persona template does). :func:`expand` is one call of a
    new expander.

    Args:
        char: What ``{{char}}`` (and ``<BOT>``, ``<CHAR>``) becomes.
        user: What ``{{user}}`` (and ``<USER>``) becomes.
        seed: The seed of ``random`` and ``roll``: the turn's event id.
        stable: The seed of ``pick``: the conversation id; ``None``: ``seed``.
        keep_hidden: ``{{hidden_key: A}}`` becomes ``A`` rather than nothing (for a lore
            scan, which the Character Card V3 spec lets see hidden keys).
    """

    def __init__(
        self,
        *,
        char: str,
        user: str,
        seed: str,
        stable: str | None = None,
        keep_hidden: bool = False,
    ) -> None:
        self.char = char
        self.user = user
        self.seed = seed
        self.stable = seed if stable is None else stable
        self.keep_hidden = keep_hidden
        self._seen: Counter[tuple[str, str]] = Counter()

    def __call__(self, text: str) -> str:
        """``text`` with its macros replaced."""
        if "{{" not in text and "<" not in text:
            return text
        text = _LEGACY.sub(lambda m: self._name(m.group("who")), text)
        text = _NAMES.sub(lambda m: self._name(m.group("who")), text)
        text = _TRIM.sub("", text)
        for _ in range(_PASSES):
            replaced = _MACRO.sub(self._replace, text)
            if replaced == text:
                break
            text = replaced
        return text

    def _name(self, who: str) -> str:
        return self.user if who.lower() == "user" else self.char

    def _replace(self, match: re.Match[str]) -> str:
        body = match.group("body")
        comment = _COMMENT.match(body)
        if comment:
            hidden = comment.group("hidden") is not None and self.keep_hidden
            return body[comment.end() :].strip() if hidden else ""
        word = _WORDS.get(body.strip().lower())
        if word is not None:
            return word
        listed = _LIST.fullmatch(body)
        if listed:
            kind = listed.group("kind").lower()
            options = _options(listed.group("items"))
            seed = self.stable if kind == "pick" else self.seed
            place = self._next(kind, body)
            return options[self._draw(len(options), kind, seed, body, place)]
        roll = _ROLL.fullmatch(body)
        if roll:
            return self._roll(body, roll.group("formula").strip())
        reverse = _REVERSE.fullmatch(body)
        if reverse:
            return reverse.group("text")[::-1]
        return match.group(0)

    def _next(self, kind: str, body: str) -> int:
        """How many times this macro has come now, this time included."""
        self._seen[kind, body] += 1
        return self._seen[kind, body]

    @staticmethod
    def _draw(size: int, *key: str | int) -> int:
        """A number in ``range(size)``, a hash of ``key``."""
        joined = "\x1f".join(str(part) for part in key)
        digest = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest, "big") % size

    def _roll(self, body: str, formula: str) -> str:
        if formula.isascii() and formula.isdigit():  # "{{roll:6}}": one die of six sides
            formula = f"d{formula}"
        dice = _DICE.fullmatch(formula)
        if dice is None:  # as SillyTavern: an invalid formula rolls nothing
            return ""
        count = int(dice.group("count") or 1)
        sides = int(dice.group("sides"))
        if count > DICE_MAX or sides > SIDES_MAX:
            return ""
        total = int(dice.group("bonus") or 0)
        place = self._next("roll", body)
        for die in range(count):
            total += 1 + self._draw(sides, "roll", self.seed, body, place, die)
        return str(total)


def expand(
    text: str,
    *,
    char: str,
    user: str,
    seed: str,
    stable: str | None = None,
    keep_hidden: bool = False,
) -> str:
    """``text`` with its card macros replaced, the same way for the same arguments.

    Args:
        text: Card or lore text.
        char: What ``{{char}}`` (and ``<BOT>``, ``<CHAR>``) becomes.
        user: What ``{{user}}`` (and ``<USER>``) becomes.
        seed: The seed of ``random`` and ``roll``: the turn's event id (a fixed example
            seed where there is no turn).
        stable: The seed of ``pick``: the conversation id, so a pick stays put across the
            turns of a conversation; ``None``: ``seed``.
        keep_hidden: Keep the text of ``{{hidden_key: …}}`` (for a recursive lore scan)
            rather than removing it.

    Returns:
        The text: known macros replaced, comments removed, unknown ``{{…}}`` as they were.
    """
    expander = Expander(char=char, user=user, seed=seed, stable=stable, keep_hidden=keep_hidden)
    return expander(text)
