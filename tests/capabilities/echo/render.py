"""What ``buddy render`` shows of ``echo:``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.capabilities.echo.compiled import EchoSettings


def render_echo(settings: EchoSettings, root: Path) -> dict[str, Any]:
    return {"prefix": settings.prefix, "times": settings.times}
