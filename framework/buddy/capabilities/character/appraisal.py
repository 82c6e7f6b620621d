"""Appraisal files: how a user's words move the character without a model, as reviewable
data (``appraisals/<name>.yaml``, found on the persona search path like relation specs,
then among the files this package ships: ``zh``).

A file lists, per kind — ``offence``, ``apology``, ``care`` and ``explained`` (an
apology that gives its reason) — regular expressions searched in each clause of a
message (:mod:`buddy.capabilities.memory.clauses`: without openers and trailing
particles), each with its ``strength`` in [0, 1], and which of the clause guard's marks
stop the kind (``unless``: 「他对我说滚」 is reported speech, no offence); a pattern may
name a word list of the file's ``words:`` as ``{{name}}``. A message's
appraisal is, per kind, the strongest pattern that matched; ``explained`` counts only
with an apology.

This module is the file's shape (strict, every bound here) and :func:`appraisal_problems`,
the rules between its parts, located. Standard library and pydantic only (and the
patterns' engine): ``buddy validate`` imports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from buddy.capabilities.character.limits import APPRAISAL_NAME_PATTERN
from buddy.capabilities.memory.patterns import expanded, pattern_problem
from buddy.capabilities.memory.relations import PATTERN_CHARS, WordLists, words_problem
from buddy.manifest.schema import Strict

__all__ = [
    "APPRAISAL_NAME_PATTERN",
    "KINDS",
    "PATTERNS_PER_KIND",
    "AppraisalFile",
    "AppraisalPattern",
    "Kind",
    "appraisal_problems",
]

#: The kinds of a message's appraisal (:class:`buddy.capabilities.character.state.Appraisal`).
KINDS = ("offence", "apology", "care", "explained")
#: Patterns of one kind, at most.
PATTERNS_PER_KIND = 48

Guard = Literal["question", "hypothetical", "denial", "reported", "third_party", "joke", "laughter"]


class AppraisalPattern(Strict):
    """A regular expression searched in each clause (``regex``'s syntax, within the
    message's time budget)."""

    match: str = Field(min_length=1, max_length=PATTERN_CHARS)
    strength: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="How strongly a match says it (0–1); not for `explained`, which is "
        "true or false.",
    )
    alone: bool = Field(
        default=False,
        description="Only when the message is this one clause (「烦死了」, not "
        "「烦死了，这破电脑」).",
    )
    unless_said: str | None = Field(
        default=None,
        min_length=1,
        max_length=PATTERN_CHARS,
        description="A regular expression searched in the whole message: the pattern counts "
        "only when it is not found (「不好意思，请问几点了」: a courtesy, not an apology).",
    )


class Kind(Strict):
    """The patterns of one kind, and the clause guard's marks that stop them."""

    unless: list[Guard] = Field(
        default_factory=list,
        max_length=7,
        description="A clause with one of these marks is not searched for this kind.",
    )
    patterns: list[AppraisalPattern] = Field(default_factory=list, max_length=PATTERNS_PER_KIND)


class AppraisalFile(Strict):
    """An appraisal file (``appraisals/<name>.yaml``)."""

    appraisal: str = Field(pattern=APPRAISAL_NAME_PATTERN, description="Its name.")
    version: int = Field(ge=1, le=1000)
    note: str = Field(min_length=1, max_length=2000, description="What it reads, and why.")
    words: WordLists = Field(default_factory=dict)
    offence: Kind = Field(default_factory=Kind)
    apology: Kind = Field(default_factory=Kind)
    care: Kind = Field(default_factory=Kind)
    explained: Kind = Field(default_factory=Kind)


Problem = tuple[tuple[str | int, ...], str]


def appraisal_problems(file: AppraisalFile) -> Iterator[Problem]:
    """The rules between the parts of a valid file: ``(path in the file, message)``."""
    for kind in KINDS:
        for index, pattern in enumerate(getattr(file, kind).patterns):
            where = (kind, "patterns", index)
            problem = words_problem(pattern.match, file.words) or pattern_problem(
                expanded(pattern.match, file.words)
            )
            if problem is not None:
                yield (*where, "match"), problem
            said = pattern.unless_said
            problem = None if said is None else words_problem(said, file.words)
            problem = problem or (
                None if said is None else pattern_problem(expanded(said, file.words))
            )
            if problem is not None:
                yield (*where, "unless_said"), problem
            if kind == "explained" and pattern.strength is not None:
                yield (*where, "strength"), "`explained` is true or false: it has no strength"
            elif kind != "explained" and pattern.strength is None:
                yield where, f"an `{kind}` pattern needs its `strength` (0–1)"
