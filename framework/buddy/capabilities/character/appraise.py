"""A message's appraisal from an appraisal file's patterns, with no model call.

Each clause of the message (:func:`~buddy.capabilities.memory.clauses.clauses`) is
searched with each kind's patterns, but for the kinds the clause guard's marks stop
(``unless``); a pattern marked ``alone`` only when the message is that one clause, one
with ``unless_said`` only when the message has nothing that regular expression finds. A
kind's value is the strongest pattern that matched; ``explained`` is true when an
``explained`` pattern matched and the message apologises. A message no offence, apology
or care pattern matched has no appraisal (``None``): the caller may ask the extractor
model. All the file's patterns joined in one expression are searched in a clause first,
and a clause it is not found in is skipped (most are). Every search is within the
message's time
:class:`~buddy.capabilities.memory.patterns.Budget`, shared with the relations' patterns.
Standard library only, but for the patterns' engine.
"""

from __future__ import annotations

from buddy.capabilities.character.compiled import AppraisalPatterns
from buddy.capabilities.memory.clauses import clauses
from buddy.capabilities.memory.extract import TEXT_CHARS
from buddy.capabilities.memory.patterns import Budget

__all__ = ["appraised"]


def appraised(
    patterns: AppraisalPatterns, text: str, budget: Budget | None = None
) -> dict[str, float | bool] | None:
    """The appraisal of the user's ``text`` — ``offence``, ``apology``, ``care`` in
    [0, 1] and ``explained`` — or ``None`` when no offence, apology or care pattern
    matched."""
    budget = budget or Budget()
    found = {"offence": 0.0, "apology": 0.0, "care": 0.0, "explained": 0.0}
    message = text[:TEXT_CHARS].strip()
    for clause in clauses(message):
        # of the rules joined (most are in no clause)
        some = budget.may_find(patterns.either, clause.text, owner=f"appraisal {patterns.name}")
        for rule in patterns.rules:
            if rule.strength <= found[rule.kind] or (rule.alone and not clause.alone):
                continue
            if rule.joined and not some:
                continue
            if clause.guards & patterns.unless.get(rule.kind, frozenset()):
                continue
            owner = f"appraisal {patterns.name} {rule.kind}"
            if budget.search(rule.match, clause.text, owner=owner) is None:
                continue
            said = rule.unless_said
            if said is None or budget.search(said, message, owner=owner) is None:
                found[rule.kind] = rule.strength
    if not (found["offence"] or found["apology"] or found["care"]):
        return None
    return {
        "offence": found["offence"],
        "apology": found["apology"],
        "care": found["care"],
        "explained": bool(found["explained"]) and found["apology"] > 0,
    }
