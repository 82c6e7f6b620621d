"""The compiled resource index (``blueprint.resources``). Standard library only: a cached
start unpickles it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Resource"]


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
