"""``character:`` in ``buddy.yaml``: which trait file drives the character state, and the
state's own settings. The trait file's parameters are checked where they are written
(:mod:`buddy.capabilities.character.compile`).

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from buddy.capabilities.character.limits import STEP_MAX, TRUST_START
from buddy.manifest.schema import DURATION_PATTERN, Strict

__all__ = ["APPRAISAL_DEFAULT", "CharacterSection", "CharacterSettings", "TraitRef"]

#: The appraisal file a character reads its user's words with, unless it names another.
APPRAISAL_DEFAULT = "zh"

TraitRef = Annotated[
    str,
    Field(min_length=1, max_length=200, description="A trait file on the search path."),
]


class CharacterSettings(Strict):
    """The character state's settings."""

    traits: TraitRef | None = Field(
        default=None, description="The trait file whose numbers drive it (default: the persona's)."
    )
    step_max: float = Field(
        default=STEP_MAX[0],
        ge=STEP_MAX[1],
        le=STEP_MAX[2],
        description="The most one message moves anger, sadness or trust.",
    )
    trust_start: float = Field(
        default=TRUST_START[0],
        ge=TRUST_START[1],
        le=TRUST_START[2],
        description="Trust at a conversation's start.",
    )
    appraisal: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        default=APPRAISAL_DEFAULT,
        description="The appraisal file whose patterns read offence, apology and care "
        "without a model: a name (`appraisals/<name>.yaml` on the search path, else one "
        "buddy ships: `zh`) or a path; `null`: the extractor model appraises every message.",
    )
    reconcile_after: Annotated[str, Field(pattern=DURATION_PATTERN)] = Field(
        default="6h",
        description="With `speak_first`: how long a quarrel stays unresolved before the "
        "buddy reaches out (30m to 7d).",
    )


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return "text"
    return "flag" if isinstance(value, bool) else "mapping"


#: ``character: true`` (the persona's traits), ``character: traits/x.yaml``, or the
#: settings mapping.
CharacterSection = Annotated[
    Annotated[Literal[True], Tag("flag")]
    | Annotated[TraitRef, Tag("text")]
    | Annotated[CharacterSettings, Tag("mapping")],
    Discriminator(_shape),
]
