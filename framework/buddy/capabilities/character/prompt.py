"""What persona templates see of ``character:`` — ``character.anger``, ``.sadness``,
``.trust`` (two decimals), ``.quarrel``, and the trait switches that shape how it shows.
Standard library only."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import Appraisal, Mood, felt, quarrel, start

__all__ = ["EXAMPLE_APPRAISAL", "mood_context", "prompt"]

#: The representative moment ``buddy render`` shows: just after a sharp remark, so a
#: review sees what the trait file's numbers make of it.
EXAMPLE_APPRAISAL = Appraisal(offence=0.6)


def mood_context(spec: CharacterSpec, mood: Mood) -> dict[str, Any]:
    """``character`` in the template context for ``mood``."""
    return {
        "anger": round(mood.anger, 2),
        "sadness": round(mood.sadness, 2),
        "trust": round(mood.trust, 2),
        "quarrel": quarrel(mood),
        "intensity": spec.parameters["intensity"],
        "hold_words": spec.flag("hold_words"),
        "demand_explanation": spec.flag("demand_explanation"),
        "speak_first": spec.flag("speak_first"),
    }


def prompt(spec: CharacterSpec, example: bool) -> dict[str, Any]:
    """With ``example``, the state right after :data:`EXAMPLE_APPRAISAL`; else a new
    conversation's (calm, ``trust_start``)."""
    mood = start(spec, 0.0)
    if example:
        mood = felt(mood, spec, EXAMPLE_APPRAISAL, 0.0)
    return mood_context(spec, mood)
