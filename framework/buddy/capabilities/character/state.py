"""How the character feels: anger, sadness and trust in [0, 1], moved by each user
message's appraisal and decaying by the platform clock, as the trait file's numbers say.

Pure functions of a :class:`Mood`, the :class:`~buddy.capabilities.character.compiled.
CharacterSpec` and the time — the same in the runtime, in ``buddy render``'s example
state and in tests. Standard library only.

One message (after decaying to its time), each change capped at ``step_max`` and the
result kept in [0, 1]:

- anger   += offence × anger_sensitivity − cooling, where cooling is apology ×
  trust_repair, halved under ``demand_explanation`` when the apology gives no reason;
- sadness += (offence − care) / 2;
- trust   += −offence × trust_damage / 2 + (apology + care) × trust_repair / 4.

Between messages anger and sadness halve every ``anger_half_life_days`` and
``sadness_half_life_days``; trust does not decay — it is earned and lost, not forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.limits import QUARREL_ANGER

__all__ = ["Appraisal", "Mood", "decayed", "felt", "quarrel", "start"]

_DAY = 86400.0


@dataclass(frozen=True, slots=True)
class Appraisal:
    """What one user message does to the buddy, each in [0, 1] (values outside are
    brought to the nearest bound).

    Attributes:
        offence: Rude, hurtful, dismissive.
        apology: Says sorry.
        care: Warmth, thanks, concern.
        explained: The apology says why.
    """

    offence: float = 0.0
    apology: float = 0.0
    care: float = 0.0
    explained: bool = False


@dataclass(frozen=True, slots=True)
class Mood:
    """The state at platform time ``at`` (seconds)."""

    anger: float
    sadness: float
    trust: float
    at: float


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def start(spec: CharacterSpec, now: float) -> Mood:
    """A conversation's first state: calm, ``trust_start``."""
    return Mood(0.0, 0.0, spec.trust_start, now)


def decayed(mood: Mood, spec: CharacterSpec, now: float) -> Mood:
    """``mood`` at ``now``: anger and sadness halved once per half-life passed."""
    elapsed = max(0.0, now - mood.at)
    if elapsed == 0.0:
        return mood
    anger = mood.anger * 0.5 ** (elapsed / (spec.number("anger_half_life_days") * _DAY))
    sadness = mood.sadness * 0.5 ** (elapsed / (spec.number("sadness_half_life_days") * _DAY))
    return replace(mood, anger=anger, sadness=sadness, at=now)


def felt(mood: Mood, spec: CharacterSpec, appraisal: Appraisal, now: float) -> Mood:
    """The state after one message appraised as ``appraisal`` at ``now``."""
    m = decayed(mood, spec, now)
    offence, apology, care = (
        _unit(v) for v in (appraisal.offence, appraisal.apology, appraisal.care)
    )
    repair = spec.number("trust_repair")
    cooling = apology * repair
    if spec.flag("demand_explanation") and not appraisal.explained:
        cooling /= 2
    step = spec.step_max

    def moved(value: float, change: float) -> float:
        return _unit(value + max(-step, min(step, change)))

    return Mood(
        anger=moved(m.anger, offence * spec.number("anger_sensitivity") - cooling),
        sadness=moved(m.sadness, (offence - care) / 2),
        trust=moved(
            m.trust, -offence * spec.number("trust_damage") / 2 + (apology + care) * repair / 4
        ),
        at=now,
    )


def quarrel(mood: Mood) -> bool:
    """Whether the buddy is still angry enough that a falling-out is unresolved."""
    return mood.anger >= QUARREL_ANGER
