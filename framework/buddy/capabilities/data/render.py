"""What ``buddy render`` shows of ``data:``: where it was declared, the after-read rule,
every dataset with the catalogue's title, source and schema version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.data.compiled import DataDeclaration
from buddy.compile.render import relative

__all__ = ["render_data"]


def render_data(declaration: DataDeclaration, root: Path) -> dict[str, Any]:
    """The ``data`` part of the compiled view."""
    return {
        "origin": relative(declaration.origin, root),
        "after_read": declaration.after_read,
        "requirements": [
            {
                "id": r.id,
                "purpose": r.purpose,
                "title": r.title,
                "source": r.source,
                "schema_version": r.schema_version,
            }
            for r in declaration.requirements
        ],
    }
