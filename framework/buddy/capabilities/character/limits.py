"""The character capability's parameters and bounds: one table, read by the trait-file
check, the compiled parameters, the state's dynamics and the docs. Standard library only:
``buddy validate`` imports it.

Each parameter: ``(default, least, most, unit, meaning)``; a flag's bounds are ``None``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APPRAISAL_NAME_PATTERN",
    "FLAGS",
    "INTENSITIES",
    "INTENSITY_DEFAULT",
    "INTENSITY_MEANING",
    "NUMBERS",
    "QUARREL_ANGER",
    "RECONCILE_SECONDS",
    "STEP_MAX",
    "TRUST_START",
    "defaults",
    "meaning",
    "parameter_names",
]

#: The numeric parameters of a trait file: name → (default, least, most, unit, meaning).
NUMBERS: dict[str, tuple[float, float, float, str, str]] = {
    "anger_sensitivity": (
        1.0,
        0.0,
        3.0,
        "multiplier",
        "how much anger one offence raises (1: the appraisal as it is)",
    ),
    "anger_half_life_days": (1.0, 0.05, 30.0, "days", "how long anger takes to halve"),
    "sadness_half_life_days": (2.0, 0.05, 60.0, "days", "how long sadness takes to halve"),
    "trust_damage": (1.0, 0.0, 3.0, "multiplier", "how much trust one offence costs"),
    "trust_repair": (
        1.0,
        0.0,
        3.0,
        "multiplier",
        "how much trust an apology or care gives back, and how much anger an apology cools",
    ),
}
#: The switches: name → (default, meaning).
FLAGS: dict[str, tuple[bool, str]] = {
    "speak_first": (False, "after a quarrel left unresolved, reach out first (once)"),
    "hold_words": (False, "say nothing soft while angry, whatever is felt"),
    "demand_explanation": (
        False,
        "an apology without an explanation cools anger by half only; the prompt asks for one",
    ),
}
#: How strongly the state shows in the prompt.
INTENSITIES = ("soft", "normal", "sharp")
INTENSITY_DEFAULT = "normal"
INTENSITY_MEANING = "how strongly the state shows in the prompt: soft, normal or sharp"

#: The most one message moves any of anger, sadness, trust (default, least, most).
STEP_MAX = (0.35, 0.05, 1.0)
#: Trust at a conversation's start.
TRUST_START = (0.5, 0.0, 1.0)
#: Anger at or above this is a quarrel (what ``speak_first`` reconciles).
QUARREL_ANGER = 0.5
#: ``speak_first``: how long a quarrel stays unresolved before the buddy reaches out
#: (seconds: default 6 h, 30 min to 7 days).
RECONCILE_SECONDS = (6 * 3600, 1800, 7 * 86400)
#: An appraisal file's name (its `appraisal:`, and a bare name in `character.appraisal`).
APPRAISAL_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"


def parameter_names() -> tuple[str, ...]:
    """Every parameter a trait file may set for the character."""
    return (*NUMBERS, *FLAGS, "intensity")


def meaning(name: str) -> str:
    """What parameter ``name`` means (its unit first, for a number)."""
    if name in NUMBERS:
        return f"{NUMBERS[name][3]}: {NUMBERS[name][4]}"
    return FLAGS[name][1] if name in FLAGS else INTENSITY_MEANING


def defaults() -> dict[str, Any]:
    """Every parameter's default."""
    return {
        **{name: spec[0] for name, spec in NUMBERS.items()},
        **{name: spec[0] for name, spec in FLAGS.items()},
        "intensity": INTENSITY_DEFAULT,
    }
