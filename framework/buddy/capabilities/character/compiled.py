"""``character:`` as the runtime holds it: every parameter resolved from the trait files
(defaults filled in), the state's settings and the appraisal patterns. Standard library
only: a start from the compiled-buddy cache unpickles it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["AppraisalPatterns", "AppraisalRule", "CharacterSpec"]


@dataclass(frozen=True, slots=True)
class AppraisalRule:
    """One appraisal pattern.

    Attributes:
        kind: ``offence``, ``apology``, ``care`` or ``explained``.
        match: The regular expression, searched in each clause.
        strength: How strongly a match says it, in [0, 1] (1 for ``explained``).
        alone: Only when the message is this one clause.
        unless_said: Only in a message where this regular expression is not found.
        joined: It is in the file's ``either``: a clause that is not found in needs no
            search for it.
    """

    kind: str
    match: str
    strength: float
    alone: bool = False
    unless_said: str | None = None
    joined: bool = False


@dataclass(frozen=True, slots=True)
class AppraisalPatterns:
    """An appraisal file, resolved (:mod:`buddy.capabilities.character.appraisal`).

    Attributes:
        name: The file's ``appraisal`` name.
        rules: Every pattern, kind by kind, in the file's order.
        unless: Kind → the clause guard's marks that stop it.
        file: The file, for review.
        either: The ``match`` of its rules that can be joined, in one expression
            (:func:`~buddy.capabilities.memory.patterns.either`), searched in a clause
            first: a clause it is not found in has none of them to try. ``None``: fewer
            than two can be joined, and each is searched.
    """

    name: str
    rules: tuple[AppraisalRule, ...]
    unless: dict[str, frozenset[str]]
    file: Path
    either: str | None = None


@dataclass(frozen=True, slots=True)
class CharacterSpec:
    """The character's parameters and settings.

    Attributes:
        parameters: Every parameter (:mod:`buddy.capabilities.character.limits`), name →
            value, those the trait files leave out at their defaults.
        written: The parameters the trait files set (the rest are defaults).
        step_max: The most one message moves anger, sadness or trust.
        trust_start: Trust at a conversation's start.
        reconcile_seconds: With ``speak_first``: how long a quarrel stays unresolved
            before the buddy reaches out.
        traits: The trait files, in merge order.
        appraisal: The appraisal patterns (``None``: the extractor model appraises every
            message).
    """

    parameters: dict[str, Any]
    written: frozenset[str]
    step_max: float
    trust_start: float
    reconcile_seconds: int
    traits: tuple[Path, ...] = field(default=())
    appraisal: AppraisalPatterns | None = None

    def number(self, name: str) -> float:
        """A numeric parameter."""
        return float(self.parameters[name])

    def flag(self, name: str) -> bool:
        """A switch."""
        return bool(self.parameters[name])
