"""The echo capability with a value for persona templates (``{{ echo.prefix }}``) and no
default place in the system prompt: what a template never reads lands nowhere."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.capabilities.echo import CAPABILITY as _ECHO

assert _ECHO.section is not None
CAPABILITY = replace(
    _ECHO, section=replace(_ECHO.section, prompt="tests.capabilities.echo.prompted:prompt")
)


def prompt(value: Any, example: bool) -> dict[str, Any]:
    """What templates see of ``echo:``."""
    return {"prefix": value.prefix}
