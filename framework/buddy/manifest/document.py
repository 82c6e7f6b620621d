"""A parsed YAML (or JSON) file and where each of its values is: the location API every
problem is reported through."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Document", "Loc", "YamlPath", "format_path"]

YamlPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a file; ``line`` and ``column`` are 1-based."""

    file: str
    line: int
    column: int


@dataclass(slots=True)
class Document:
    """A parsed YAML (or JSON) file.

    Attributes:
        file: The file's path as given.
        data: The plain data: dicts, lists, str, int, float, bool, None, datetime.
        values: Location of each value node, by path.
        keys: Location of each mapping key, by the path of its value.
        blocks: For block scalars (``|`` / ``>``), where their text starts.
    """

    file: str
    data: Any
    values: dict[YamlPath, Loc] = field(default_factory=dict)
    keys: dict[YamlPath, Loc] = field(default_factory=dict)
    blocks: dict[YamlPath, Loc] = field(default_factory=dict)


def format_path(path: YamlPath) -> str:
    """``("tools", 2, "name")`` → ``tools[2].name``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
