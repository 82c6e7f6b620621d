"""What every manifest model is made of: :class:`Strict`, the patterns names and spans
are written in, and the field types several sections share (:data:`Folder`).

Strict: unknown keys are errors, no type coercion (``"3"`` is not a number, ``1`` is
not a string).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DURATION_PATTERN",
    "HANDLER_PATTERN",
    "SLUG_PATTERN",
    "TOOL_NAME_PATTERN",
    "Folder",
    "Strict",
    "duration_seconds",
]

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
HANDLER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"

#: A span of time as written in YAML: ``30d``, ``12h``, ``90m``, ``45s``, ``1d12h``.
DURATION_PATTERN = r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$"
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_UNITS = (86400, 3600, 60, 1)


def duration_seconds(value: str) -> int:
    """Seconds of a span such as ``30d`` or ``1h30m``; 0 when ``value`` is not one."""
    match = _DURATION.match(value)
    if match is None:
        return 0
    groups = match.groups()
    return sum(int(n) * unit for n, unit in zip(groups, _DURATION_UNITS, strict=True) if n)


#: A folder a manifest key names, relative to the manifest that wrote it (``resources:``,
#: ``widgets:``): a section's model when its value is a folder.
Folder = Annotated[str, Field(min_length=1)]


class Strict(BaseModel):
    """Every manifest model: unknown keys are errors, no coercion, frozen.

    Built when first used (``defer_build``): a manifest is validated by the composed
    model of :func:`manifest_model`, which generates every part's schema itself, so
    building each part's own validator at import would be work thrown away.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)
