"""What ``buddy render`` shows of ``character:``: every parameter with its value, unit and
whether a trait file set it, and the state's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.limits import meaning
from buddy.compile.render import relative

__all__ = ["render_character"]


def render_character(spec: CharacterSpec, root: Path) -> dict[str, Any]:
    """The ``character`` part of the compiled view."""
    parameters = {
        name: {
            "value": value,
            "from": "trait file" if name in spec.written else "default",
            "meaning": meaning(name),
        }
        for name, value in spec.parameters.items()
    }
    return {
        "traits": [relative(p, root) for p in spec.traits],
        "step_max": spec.step_max,
        "trust_start": spec.trust_start,
        "reconcile_seconds": spec.reconcile_seconds,
        "parameters": parameters,
    }
