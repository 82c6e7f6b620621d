"""Relation specs: the kinds of fact automatic memory may keep, as data files.

A relation spec (``relations/<name>.yaml``, found on the persona search path like trait
files, then in the specs this package ships) says what a fact of one kind holds and the
policy for keeping it: its typed slots, which of them name the fact (``key``) and which
is its value, the modalities and writers that may establish it, its effect (``set`` a
value, or add a ``delta``), whether it is kept at once or held until confirmed, what a
contradiction does, how long it is valid, its risk tier, and optional examples for the
extractor and regular-expression ``patterns`` that need no model call.

This module is the file's shape (strict, every bound here) and :func:`relation_problems`,
the rules between its parts, located. Standard library and pydantic only (and, for a spec
with patterns, the engine that runs them: :mod:`buddy.capabilities.memory.patterns`):
``buddy validate`` imports it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from buddy.capabilities.memory.limits import RELATION_NAME_PATTERN
from buddy.capabilities.memory.patterns import (
    WORD_LIST_PATTERN,
    compiled,
    expanded,
    pattern_problem,
    placeholders,
)
from buddy.capabilities.memory.slots import TEXT_SLOT_CHARS, SlotLike, slot_value_problem
from buddy.manifest.schema import DURATION_PATTERN, Strict, duration_seconds

__all__ = [
    "EXAMPLES_MAX",
    "PATTERNS_MAX",
    "PATTERN_CHARS",
    "RELATION_NAME_PATTERN",
    "SLOTS_MAX",
    "TEXT_SLOT_CHARS",
    "WORDS_MAX",
    "WORD_LISTS_MAX",
    "Delta",
    "Example",
    "Pattern",
    "RelationFile",
    "Slot",
    "SlotLike",
    "WordLists",
    "fact_problems",
    "relation_problems",
    "slot_value_problem",
    "words_problem",
]

SLOT_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
#: Slots of one relation: a fact is a short record, not a document.
SLOTS_MAX = 8
EXAMPLES_MAX = 12
PATTERNS_MAX = 8
#: A pattern is matched against untrusted user text: kept short, so a reviewer can read
#: it and its cost stays small (the text it runs on is bounded too).
PATTERN_CHARS = 300
#: Word lists of one file, and words of one list, at most (``words:``; a pattern names a
#: list as ``{{name}}``).
WORD_LISTS_MAX = 8
WORDS_MAX = 300

SlotType = Literal["party", "text", "number", "integer", "boolean", "date", "choice"]
Name = Annotated[str, Field(pattern=SLOT_NAME_PATTERN)]
Word = Annotated[str, Field(min_length=1, max_length=20, pattern=r"^\S+$")]
#: A file's ``words:``: named lists of plain words a pattern puts in as ``{{name}}``.
WordLists = Annotated[
    dict[
        Annotated[str, Field(pattern=WORD_LIST_PATTERN)],
        Annotated[list[Word], Field(min_length=1, max_length=WORDS_MAX)],
    ],
    Field(
        max_length=WORD_LISTS_MAX,
        description="Named lists of words: a pattern writes `{{name}}` for any one of them.",
    ),
]


class Slot(Strict):
    """One slot of a fact."""

    type: SlotType = Field(
        description="`party`: who (`user`, the member who said it, or `buddy`); `text` "
        "(up to `max_chars`); `number`; `integer`; `boolean`; `date` (YYYY-MM-DD); "
        "`choice` (one of `choices`)."
    )
    required: bool = Field(default=False, description="A fact without it is not kept.")
    title: str | None = Field(
        default=None, min_length=1, max_length=40, description="What the card calls it."
    )
    max_chars: int | None = Field(
        default=None, ge=1, le=TEXT_SLOT_CHARS, description="For `text`: the longest value."
    )
    choices: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = Field(
        default=None, min_length=1, max_length=32, description="For `choice`: the values."
    )


class Delta(Strict):
    """How a ``delta`` fact adds up."""

    allow_negative: bool = Field(
        default=False, description="Whether the running value may go below zero."
    )
    conservation: Literal["none", "repayment"] = Field(
        default="none",
        description="`repayment`: a negative delta (a repayment) may not exceed what is "
        "owed; one that would is a dispute, not a clamp.",
    )


def _iso_dates(values: dict[str, Any]) -> dict[str, Any]:
    """An unquoted ``2026-10-31`` is a date to YAML: the ISO text the author wrote."""
    return {k: v.isoformat() if isinstance(v, date) else v for k, v in values.items()}


SlotValues = Annotated[dict[str, Any], AfterValidator(_iso_dates)]


class Example(Strict):
    """A message and the facts the extractor should take from it (few-shot)."""

    say: str = Field(min_length=1, max_length=500, description="What the user says.")
    facts: list[SlotValues] = Field(
        max_length=4, description="The facts in it: slot → value (`[]`: none)."
    )
    modality: Literal["asserted", "request"] = "asserted"


class Pattern(Strict):
    """A regular expression that yields a fact with no model call (Python syntax, run by
    ``regex`` within a time budget, on each clause of a message; its named groups fill
    slots, ``slots`` gives the others; ``{{name}}`` is any word of the list ``name`` of
    the file's ``words:``)."""

    match: str = Field(min_length=1, max_length=PATTERN_CHARS)
    slots: Annotated[dict[Name, Any], AfterValidator(_iso_dates)] = Field(
        default_factory=dict, description="Fixed slot values."
    )
    modality: Literal["asserted", "request"] = "asserted"
    negative: bool = Field(
        default=False,
        description="The value slot's number is taken negative: for a `delta` relation, a "
        "repayment or a waiver (「我还你一百」).",
    )
    amends: bool = Field(
        default=False,
        description="Fills slots of the fact an earlier clause of the message took for this "
        "relation, if that fact has none of them yet, instead of taking a fact of its own "
        "(「我对花生过敏，很严重」: 严重 is the severity of 花生).",
    )
    if_said: str | None = Field(
        default=None,
        min_length=1,
        max_length=PATTERN_CHARS,
        description="A regular expression searched in the whole message: the pattern counts "
        "only when it is found (「我是回族，不吃猪肉」: 不吃 is a dietary rule).",
    )
    unless_said: str | None = Field(
        default=None,
        min_length=1,
        max_length=PATTERN_CHARS,
        description="A regular expression searched in the whole message: the pattern counts "
        "only when it is not found.",
    )


Modality = Literal["asserted", "request"]


def _asserted() -> list[Modality]:
    return ["asserted"]


class RelationFile(Strict):
    """A relation spec file (``relations/<name>.yaml``)."""

    relation: str = Field(pattern=RELATION_NAME_PATTERN, description="Its name.")
    version: int = Field(ge=1, le=1000)
    title: str = Field(min_length=1, max_length=40, description="What the card calls it.")
    note: str = Field(
        min_length=1, max_length=2000, description="Why its policy is what it is (review)."
    )
    risk: Literal["R0", "R1", "R2", "R3"] = Field(
        description="What a wrong fact costs: R0 nothing much … R3 real harm (health, money)."
    )
    slots: dict[Name, Slot] = Field(min_length=1, max_length=SLOTS_MAX)
    value: Name = Field(description="The slot that is the fact's value.")
    key: list[Name] | None = Field(
        default=None,
        max_length=SLOTS_MAX,
        description="The slots that name the fact (facts with the same key are the same "
        "fact); default: every required slot but the value.",
    )
    modalities: list[Modality] = Field(default_factory=_asserted, min_length=1, max_length=2)
    writers: list[Name | Literal["any"]] = Field(
        default_factory=lambda: ["any"],
        min_length=1,
        max_length=SLOTS_MAX,
        description="Party slots the speaker must fill for the fact to be kept (`any`: "
        "anyone may establish it).",
    )
    effect: Literal["set", "delta"] = "set"
    delta: Delta | None = Field(default=None, description="With `effect: delta`.")
    admission: Literal["auto", "assisted"] = Field(
        default="auto", description="`auto`: kept at once; `assisted`: held until confirmed."
    )
    confirmation: Literal["implicit", "explicit"] = Field(
        default="implicit",
        description="For `assisted`: `explicit` asks with a question card; `implicit` keeps "
        "it when the user says it again.",
    )
    conflict: Literal["last_write_wins", "keep_first", "dispute"] = Field(
        default="last_write_wins",
        description="A new value for a fact that has one: replace it, keep the old one, or "
        "keep both as a dispute the model is told about.",
    )
    validity: Annotated[str, Field(pattern=DURATION_PATTERN)] | Literal["permanent"] = Field(
        default="permanent", description="`permanent`, or how long a fact holds (`30d`)."
    )
    examples: list[Example] = Field(default_factory=list, max_length=EXAMPLES_MAX)
    words: WordLists = Field(default_factory=dict)
    patterns: list[Pattern] = Field(default_factory=list, max_length=PATTERNS_MAX)


Problem = tuple[tuple[str | int, ...], str]


def relation_problems(spec: RelationFile) -> Iterator[Problem]:
    """The rules between the parts of a valid spec: ``(path in the file, message)``."""
    slots = spec.slots
    if spec.value not in slots:
        yield ("value",), f"`{spec.value}` is not one of the slots ({', '.join(slots)})"
        return
    value = slots[spec.value]
    for name, slot in slots.items():
        yield from _slot_problems(name, slot)
    key = spec.key if spec.key is not None else [n for n, s in slots.items() if s.required]
    for index, name in enumerate(spec.key or []):
        if name not in slots:
            yield ("key", index), f"`{name}` is not one of the slots ({', '.join(slots)})"
        elif name == spec.value:
            yield ("key", index), "the value slot cannot also name the fact"
    if not [n for n in key if n != spec.value]:
        yield (
            ("key",) if spec.key is not None else ("slots",),
            ("a fact needs a slot besides its value that names it (`key`, or a required slot)"),
        )
    for index, writer in enumerate(spec.writers):
        if writer != "any" and (writer not in slots or slots[writer].type != "party"):
            yield (
                ("writers", index),
                f"`{writer}` is not a party slot; writers are party slots or `any`",
            )
    if spec.effect == "delta":
        if value.type not in ("number", "integer"):
            yield ("value",), "a `delta` fact's value must be a `number` or `integer` slot"
    elif spec.delta is not None:
        yield ("delta",), "`delta` goes with `effect: delta`"
    if spec.confirmation == "explicit" and spec.admission == "auto":
        yield (
            ("confirmation",),
            (
                "explicit confirmation holds a fact until the user confirms it: it needs "
                "`admission: assisted`"
            ),
        )
    if spec.validity != "permanent" and duration_seconds(spec.validity) == 0:
        yield ("validity",), f"`{spec.validity}` is not a time to live: write e.g. 30d, 12h"
    for index, example in enumerate(spec.examples):
        if example.modality not in spec.modalities:
            yield ("examples", index, "modality"), f"`{example.modality}` is not in `modalities`"
        for at, fact in enumerate(example.facts):
            for where, message in fact_problems(spec, fact):
                yield ("examples", index, "facts", at, *where), message
    for index, pattern in enumerate(spec.patterns):
        yield from (
            (("patterns", index, *where), message)
            for where, message in _pattern_problems(spec, pattern)
        )


def _slot_problems(name: str, slot: Slot) -> Iterator[Problem]:
    if slot.max_chars is not None and slot.type != "text":
        yield ("slots", name, "max_chars"), "`max_chars` is for `text` slots"
    if slot.type == "choice" and slot.choices is None:
        yield ("slots", name), "a `choice` slot needs `choices`"
    if slot.choices is not None and slot.type != "choice":
        yield ("slots", name, "choices"), "`choices` is for `choice` slots"


def fact_problems(spec: RelationFile, fact: Mapping[str, Any]) -> Iterator[Problem]:
    """Why ``fact`` (slot → value) is not a fact of ``spec``: unknown slots, missing
    required ones, values of the wrong type."""
    for name, value in fact.items():
        slot = spec.slots.get(name)
        if slot is None:
            yield (name,), f"`{name}` is not a slot of {spec.relation} ({', '.join(spec.slots)})"
            continue
        problem = slot_value_problem(slot, value)
        if problem is not None:
            yield (name,), problem
    for name, slot in spec.slots.items():
        if slot.required and name not in fact:
            yield (), f"the required slot `{name}` is missing"


def words_problem(pattern: str, words: Mapping[str, list[str]]) -> str | None:
    """Why ``pattern`` names a word list its file does not declare, or ``None``."""
    unknown = [n for n in placeholders(pattern) if n not in words]
    if not unknown:
        return None
    declared = ", ".join(words) or "none"
    return f"`{{{{{unknown[0]}}}}}` names no list of `words:` (declared: {declared})"


def _pattern_problems(spec: RelationFile, pattern: Pattern) -> Iterator[Problem]:
    problem = words_problem(pattern.match, spec.words)
    if problem is not None:
        yield ("match",), problem
        return
    for field in ("if_said", "unless_said"):
        said = getattr(pattern, field)
        problem = None if said is None else words_problem(said, spec.words)
        problem = problem or (None if said is None else pattern_problem(expanded(said, spec.words)))
        if problem is not None:
            yield (field,), problem
    match = expanded(pattern.match, spec.words)
    problem = pattern_problem(match)
    if problem is not None:
        yield ("match",), problem
        return
    if pattern.modality not in spec.modalities:
        yield ("modality",), f"`{pattern.modality}` is not in `modalities`"
    groups = set(compiled(match).groupindex)
    if pattern.negative and (spec.effect != "delta" or spec.value not in groups):
        yield (
            ("negative",),
            "`negative` takes a `delta` relation's value negative: the value slot must be a "
            "group of the pattern and the relation's effect `delta`",
        )
    for group in sorted(groups - set(spec.slots)):
        yield ("match",), f"the group `{group}` is not a slot ({', '.join(spec.slots)})"
    for name, value in pattern.slots.items():
        if name in groups:
            yield ("slots", name), f"`{name}` is both a group of the pattern and fixed here"
        elif name not in spec.slots:
            yield ("slots", name), f"`{name}` is not a slot ({', '.join(spec.slots)})"
        else:
            problem = slot_value_problem(spec.slots[name], value)
            if problem is not None:
                yield ("slots", name), problem
    for name, slot in spec.slots.items():
        if slot.required and not pattern.amends and name not in groups | set(pattern.slots):
            yield ("match",), f"the required slot `{name}` is neither a group nor in `slots`"
        if name in groups and slot.type not in ("text", "choice", "date", "integer", "number"):
            yield ("match",), f"the group `{name}` fills a {slot.type} slot, which text cannot"
