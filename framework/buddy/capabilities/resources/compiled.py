"""The compiled resource index (``blueprint.sections["resources"]``). Standard library only: a cached
start unpickles it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["Resource", "declared"]


@dataclass(frozen=True, slots=True)
class Resource:
    """A Markdown file under ``resources/``.

    Attributes:
        path: Relative to the resources folder, ``/``-separated (as ``resource.list()`` shows).
        file: The file on disk.
        size: Bytes.
        sha256: Content digest, so a review sees when a resource changed.
    """

    path: str
    file: Path
    size: int
    sha256: str


def declared(blueprint: Blueprint) -> tuple[Resource, ...]:
    """The resource index of ``blueprint`` (``resources:``'s folder), sorted by path."""
    value: tuple[Resource, ...] | None = blueprint.sections.get("resources")
    return () if value is None else value
