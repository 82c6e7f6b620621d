"""What ``buddy render`` shows of the resources: each file's path, size and digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.resources.compiled import Resource

__all__ = ["render_markdown", "render_resources"]


def render_resources(resources: tuple[Resource, ...], root: Path) -> list[dict[str, Any]]:
    """The ``resources`` part of the compiled view."""
    return [{"path": r.path, "size": r.size, "sha256": r.sha256} for r in resources]


def render_markdown(shown: list[dict[str, Any]]) -> list[str]:
    """One list line per file (nothing when there is none)."""
    if not shown:
        return []
    lines = (f"- `{r['path']}` · {r['size']} bytes · sha256 {r['sha256'][:12]}" for r in shown)
    return ["\n".join(lines) + "\n"]
