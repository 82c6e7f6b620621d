"""The JSON Schemas editors read — of ``buddy.yaml`` and of scenario files — and the
``# yaml-language-server: $schema=…`` line that points a file at one.

Every file buddy writes begins with that line, and its target is a *relative path to a
copy inside the project*: ``.buddy/`` at the project root, or ``docs/`` for a schema a
project keeps with its documentation (as the buddy repository does). ``buddy init``,
``buddy import-card`` and ``buddy schema --write`` write the copies (:func:`refresh`),
and rewrite one that an upgrade of buddy made stale. Why not the alternatives: the
installed package's own file is an absolute path into one virtual environment, wrong on a
teammate's machine and after the venv is rebuilt; a URL needs the network and a hosted
copy matching the installed version. A relative path works offline and in every
checkout, and the copy is the schema of the buddy that wrote it.

This package also ships both schemas (package data next to this module, kept current by
``tests/test_schemas.py``), for tools that want them without running buddy.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Literal

from buddy.compile.project import find_project_root, not_regular

__all__ = [
    "FOLDER",
    "MANIFEST",
    "NAMES",
    "SCENARIO",
    "line",
    "place",
    "project_line",
    "refresh",
    "shipped",
    "text",
    "write",
]

MANIFEST = "buddy.schema.json"
SCENARIO = "scenario.schema.json"
NAMES = (MANIFEST, SCENARIO)
FOLDER = ".buddy"  # at the project root, as .git/ and .vscode/ are
_DOCS = "docs"

Status = Literal["created", "updated", "unchanged"]


def text(name: str) -> str:
    """The schema ``name`` (:data:`MANIFEST` or :data:`SCENARIO`), generated now."""
    if name == MANIFEST:
        from buddy.cli.commands import schema_text
    elif name == SCENARIO:
        from buddy.testing.scenario_format import schema_text
    else:
        raise ValueError(f"no schema {name!r}; the schemas are {', '.join(NAMES)}")
    return schema_text()


def shipped(name: str) -> Path:
    """The copy of schema ``name`` installed with the package."""
    if name not in NAMES:
        raise ValueError(f"no schema {name!r}; the schemas are {', '.join(NAMES)}")
    return Path(__file__).with_name(name)


def place(root: Path, name: str) -> Path:
    """Where schema ``name`` of the project at ``root`` is: in ``docs/`` when the project
    keeps it there (the buddy repository's layout), else in ``.buddy/``."""
    kept = root / _DOCS / name
    return kept if kept.is_file() else root / FOLDER / name


def _write(target: Path, name: str) -> Status:
    content = text(name)
    kind = not_regular(target)
    if kind is not None:  # never opened: a FIFO would block the reader (and writer) forever
        raise OSError(errno.EINVAL, f"this file is {kind}, not a regular file", str(target))
    try:
        before: str | None = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    if before == content:
        return "unchanged"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return "created" if before is None else "updated"


def write(directory: Path) -> list[tuple[Path, Status]]:
    """Write both schemas into ``directory`` (created when missing); a copy already
    current is left as it is.

    Returns:
        Each schema file and what was done to it, in :data:`NAMES` order.
    """
    return [(directory / name, _write(directory / name, name)) for name in NAMES]


def refresh(directory: Path) -> list[tuple[Path, Status]]:
    """:func:`write`, each schema to its :func:`place` in the project ``directory``
    belongs to: where the ``$schema`` lines of its files point."""
    root = find_project_root(directory)
    return [(place(root, name), _write(place(root, name), name)) for name in NAMES]


def line(schema: Path, directory: Path) -> str:
    """The first line that points a file in ``directory`` at ``schema``."""
    relative = Path(os.path.relpath(schema, directory)).as_posix()
    return f"# yaml-language-server: $schema={relative}\n"


def project_line(name: str, buddy: Path, directory: Path | None = None) -> str:
    """:func:`line` for a file of the buddy at ``buddy``, in ``directory`` (default: the
    buddy's own), to schema ``name`` at its :func:`place` in the buddy's project (which
    :func:`refresh` fills)."""
    buddy = buddy.resolve()
    target = buddy if directory is None else directory.resolve()
    return line(place(find_project_root(buddy), name), target)
