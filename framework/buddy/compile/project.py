"""What a buddy project is on disk: where its root is, and which folders are never searched.

Standard library only, so the command line and the compiled-buddy cache can use it without
importing the loader.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ROOT_MARKERS", "SKIP_DIRS", "find_project_root", "searched"]

ROOT_MARKERS = (".git", "pyproject.toml")
# Besides these, every folder whose name starts with a dot is skipped.
SKIP_DIRS = frozenset({"node_modules", "venv", ".venv", "__pycache__"})


def searched(name: str) -> bool:
    """Whether a folder called ``name`` is looked into when walking a project."""
    return name not in SKIP_DIRS and not name.startswith(".")


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding ``.git`` or ``pyproject.toml``.

    Falls back to ``start`` itself, so a lone buddy never searches the whole disk.
    """
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in ROOT_MARKERS):
            return directory
    return start
