"""How well a buddy's patterns read its users: a labelled file of messages, each with the
facts and the appraisal kinds it should yield, against what the relation specs' and the
appraisal file's patterns take from it (no model) — precision and recall per relation and
per appraisal kind, the wrong facts and appraisals kept, and any ``R2``/``R3`` fact taken
from a message labelled a hard negative. ``buddy patterns`` prints it; the test of the
shipped patterns asserts on it.

A labelled file (YAML)::

    messages:
      - say: "我叫小美，不吃香菜"
        facts:
          - {nickname: {subject: user, value: 小美}}
          - {preference: {subject: user, object: 香菜, stance: 不喜欢}}
      - {say: "对不起，因为加班所以没回你", feel: [apology, explained]}
      - {say: "我对上班过敏", hard: figurative}

A fact is right only when its relation and every slot are the label's. Only the relations
the buddy declares are counted; the appraisal only for a buddy with a character and an
appraisal file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from buddy.capabilities.character.appraise import appraised
from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.capabilities.memory.extract import Fact, from_patterns
from buddy.capabilities.memory.patterns import Budget
from buddy.errors import Issue
from buddy.manifest.locate import validated
from buddy.manifest.schema import Strict
from buddy.manifest.yamlio import load_document

__all__ = [
    "FEELINGS",
    "Labelled",
    "LabelledFile",
    "Measured",
    "Tally",
    "measure",
    "read_labelled",
    "report",
]

#: The appraisal kinds a message is labelled with.
FEELINGS = ("offence", "apology", "care", "explained")
#: The time one message's patterns have when measured: far above the runtime's, so a
#: slow machine does not change the figures.
MEASURE_MS = 2000.0


def _plain(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _one_relation(fact: dict[str, Any]) -> dict[str, Any]:
    if len(fact) != 1:
        raise ValueError("a fact is one `relation: {slot: value}`")
    ((relation, slots),) = fact.items()
    if not isinstance(relation, str) or not isinstance(slots, Mapping):
        raise ValueError("a fact is one `relation: {slot: value}`")
    return _plain(fact)  # type: ignore[no-any-return]


LabelledFact = Annotated[dict[str, Any], AfterValidator(_one_relation)]


class Labelled(Strict):
    """One message and what it should yield."""

    say: str = Field(min_length=1, max_length=2000, description="The user's message.")
    facts: list[LabelledFact] = Field(
        default_factory=list, max_length=16, description="`{relation: {slot: value}}` each."
    )
    feel: list[Literal["offence", "apology", "care", "explained"]] = Field(
        default_factory=list, max_length=4, description="The appraisal kinds it expresses."
    )
    hard: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        description="A hard negative's kind (question, negation, reported, …).",
    )


class LabelledFile(Strict):
    """A labelled file."""

    messages: list[Labelled] = Field(min_length=1, max_length=10_000)


def read_labelled(path: Path, shown: str) -> tuple[LabelledFile | None, list[Issue]]:
    """The labelled file at ``path``, or ``None`` and its problems, located."""
    doc = load_document(path, shown)
    if isinstance(doc, Issue):
        return None, [doc]
    return validated(doc, LabelledFile, "labelled-file")


@dataclass(slots=True)
class Tally:
    """One relation's or appraisal kind's counts."""

    labelled: int = 0
    found: int = 0
    right: int = 0

    @property
    def precision(self) -> float | None:
        """Right of found (``None``: nothing found)."""
        return self.right / self.found if self.found else None

    @property
    def recall(self) -> float | None:
        """Right of labelled (``None``: nothing labelled)."""
        return self.right / self.labelled if self.labelled else None

    def add(self, other: Tally) -> None:
        """Count ``other`` in too."""
        self.labelled += other.labelled
        self.found += other.found
        self.right += other.right


Shown = tuple[str, str, dict[str, Any]]  # message, relation or kind, slots


@dataclass(slots=True)
class Measured:
    """What the patterns did on a labelled file.

    Attributes:
        messages: Messages read.
        hard: Of them, hard negatives.
        relations: Relation → its tally (the buddy's relations, in order).
        risks: Relation → its risk tier.
        appraisal: Kind → its tally (empty: the buddy has no appraisal patterns).
        wrong: Facts kept that the label does not have.
        incomplete: Of ``wrong``, each fact whose every slot is a labelled fact's of the
            same relation and message, which has a slot more (「我对桃子过敏 …一会儿就消了」
            kept without the severity 轻微), with the slots it left out: right as far as it
            goes, so no false memory, but still not the labelled fact.
        missed: Labelled facts not found.
        wrong_feel: Appraisal kinds found that the label does not have.
        hard_risky: ``R2``/``R3`` facts kept from a hard negative that the label does not
            have (what must never happen).
    """

    messages: int = 0
    hard: int = 0
    relations: dict[str, Tally] = field(default_factory=dict)
    risks: dict[str, str] = field(default_factory=dict)
    appraisal: dict[str, Tally] = field(default_factory=dict)
    wrong: list[Shown] = field(default_factory=list)
    incomplete: dict[int, list[str]] = field(default_factory=dict)
    missed: list[Shown] = field(default_factory=list)
    wrong_feel: list[Shown] = field(default_factory=list)
    hard_risky: list[Shown] = field(default_factory=list)

    def total(self, part: Mapping[str, Tally]) -> Tally:
        """``part``'s tallies added up."""
        out = Tally()
        for tally in part.values():
            out.add(tally)
        return out


def _kinds(found: Mapping[str, float | bool] | None) -> set[str]:
    if found is None:
        return set()
    return {k for k in FEELINGS if found.get(k)}


def measure(
    memory: AutoMemory | None, character: CharacterSpec | None, labelled: LabelledFile
) -> Measured:
    """The patterns of ``memory``'s relations and ``character``'s appraisal file on each
    message of ``labelled``."""
    relations = memory.relations if memory is not None else ()
    table = character.appraisal if character is not None else None
    out = Measured(
        relations={r.name: Tally() for r in relations},
        risks={r.name: r.risk for r in relations},
        appraisal={k: Tally() for k in FEELINGS} if table is not None else {},
    )
    order = {r.name: [s.name for s in r.slots] for r in relations}
    for message in labelled.messages:
        out.messages += 1
        out.hard += message.hard is not None
        budget = Budget(MEASURE_MS)
        facts: tuple[Fact, ...] = ()
        if memory is not None and relations:
            facts = from_patterns(memory, message.say, budget).facts
        expected = [next(iter(f.items())) for f in message.facts]
        expected = [(r, dict(s)) for r, s in expected if r in out.relations]
        for relation, _ in expected:
            out.relations[relation].labelled += 1
        wrong: list[Shown] = []
        for fact in facts:
            tally = out.relations[fact.relation]
            tally.found += 1
            item = (fact.relation, dict(fact.slots))
            slots = {k: fact.slots[k] for k in order[fact.relation] if k in fact.slots}
            shown = (message.say, fact.relation, slots)
            if item in expected:
                tally.right += 1
                expected.remove(item)
                continue
            wrong.append(shown)
            if message.hard is not None and out.risks[fact.relation] in ("R2", "R3"):
                out.hard_risky.append(shown)
        for shown in wrong:  # after every exact match has taken its label
            left_out = _left_out(shown, expected)
            if left_out:
                out.incomplete[len(out.wrong)] = left_out
            out.wrong.append(shown)
        out.missed.extend((message.say, r, s) for r, s in expected)
        if table is not None:
            found = _kinds(appraised(table, message.say, budget))
            for kind in FEELINGS:
                tally = out.appraisal[kind]
                tally.labelled += kind in message.feel
                tally.found += kind in found
                tally.right += kind in found and kind in message.feel
                if kind in found and kind not in message.feel:
                    out.wrong_feel.append((message.say, kind, {}))
    return out


def _left_out(shown: Shown, expected: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The slots of the first labelled fact of ``shown``'s relation that has every slot
    ``shown`` kept, and more; none when no labelled fact does."""
    _, relation, slots = shown
    for name, label in expected:
        kept = all(k in label and label[k] == v for k, v in slots.items())
        if name == relation and len(label) > len(slots) and kept:
            return [k for k in label if k not in slots]
    return []


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _row(name: str, risk: str, tally: Tally) -> str:
    return (
        f"{name:<16}{risk:<6}{tally.labelled:>8}{tally.found:>7}{tally.right:>7}"
        f"{_figure(tally.precision):>11}{_figure(tally.recall):>8}"
    )


def _slots(slots: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in slots.items()) + "}"


def _said(text: str) -> str:
    return "「" + text.replace("\n", "⏎") + "」"


def report(measured: Measured, *, missed: bool = False) -> str:
    """``measured`` as ``buddy patterns`` prints it: a table per relation and per
    appraisal kind, then each wrong fact and appraisal (and, with ``missed``, each
    labelled fact not found)."""
    head = (
        f"{'':<16}{'risk':<6}{'labelled':>8}{'found':>7}{'right':>7}{'precision':>11}{'recall':>8}"
    )
    lines = [f"{measured.messages} messages, {measured.hard} of them hard negatives", ""]
    if measured.relations:
        lines += [head]
        lines += [_row(n, measured.risks[n], t) for n, t in measured.relations.items()]
        lines += [_row("all relations", "", measured.total(measured.relations)), ""]
    if measured.appraisal:
        lines += [head.replace("risk", "    ", 1)]
        lines += [_row(k, "", t) for k, t in measured.appraisal.items()]
        lines += [_row("all appraisal", "", measured.total(measured.appraisal)), ""]
    wrong = f"wrong facts kept: {len(measured.wrong)}"
    if measured.incomplete:
        wrong += (
            f" ({len(measured.incomplete)} of them incomplete: right, without a slot the label has)"
        )
    lines.append(wrong)
    for index, (say, r, s) in enumerate(measured.wrong):
        left_out = measured.incomplete.get(index)
        lines.append(
            f"  {_said(say)} {r} {_slots(s)}" + (f" — no {', '.join(left_out)}" if left_out else "")
        )
    if measured.appraisal:
        lines.append(f"wrong appraisals: {len(measured.wrong_feel)}")
        lines += [f"  {_said(say)} {kind}" for say, kind, _ in measured.wrong_feel]
    lines.append(f"R2/R3 facts from hard negatives: {len(measured.hard_risky)}")
    lines += [f"  {_said(say)} {r} {_slots(s)}" for say, r, s in measured.hard_risky]
    if missed:
        lines.append(f"facts missed: {len(measured.missed)}")
        lines += [f"  {_said(say)} {r} {_slots(s)}" for say, r, s in measured.missed]
    return "\n".join(lines) + "\n"
