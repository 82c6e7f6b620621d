"""What ``buddy render`` shows of ``character:``: every parameter with its value, unit and
whether a trait file set it, the state's settings, and the appraisal file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.character.compiled import AppraisalPatterns, CharacterSpec
from buddy.capabilities.character.limits import meaning
from buddy.compile.render import relative

__all__ = ["render_character"]


def _appraisal(table: AppraisalPatterns | None, root: Path) -> dict[str, Any] | None:
    """The appraisal file: where it is, and its patterns and guards per kind."""
    if table is None:
        return None
    from buddy.capabilities.character.compile import SHIPPED_APPRAISALS

    file = (
        f"buddy:appraisals/{table.file.name}"
        if table.file.is_relative_to(SHIPPED_APPRAISALS.resolve())
        else relative(table.file, root)
    )
    kinds = {
        kind: {
            "patterns": sum(r.kind == kind for r in table.rules),
            "unless": sorted(table.unless.get(kind, ())),
        }
        for kind in ("offence", "apology", "care", "explained")
    }
    return {"name": table.name, "file": file, "kinds": kinds}


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
        "appraisal": _appraisal(spec.appraisal, root),
    }
