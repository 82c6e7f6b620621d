"""``character:`` as the runtime holds it: every parameter resolved from the trait files
(defaults filled in) and the state's settings. Standard library only: a start from the
compiled-buddy cache unpickles it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CharacterSpec"]


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
    """

    parameters: dict[str, Any]
    written: frozenset[str]
    step_max: float
    trust_start: float
    reconcile_seconds: int
    traits: tuple[Path, ...] = field(default=())

    def number(self, name: str) -> float:
        """A numeric parameter."""
        return float(self.parameters[name])

    def flag(self, name: str) -> bool:
        """A switch."""
        return bool(self.parameters[name])
