"""The compiled widget types (``blueprint.sections["widgets"]``). Standard library only: a cached
start unpickles them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["WidgetModule", "WidgetType", "declared"]


@dataclass(frozen=True, slots=True)
class WidgetModule:
    """One module of a widget type, with the JSON Schema of one record."""

    name: str
    title: str
    record: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class WidgetType:
    """A widget type from ``widgets/<type>/schema.json``."""

    type: str
    title: str
    description: str
    modules: tuple[WidgetModule, ...]
    file: Path


def declared(blueprint: Blueprint) -> tuple[WidgetType, ...]:
    """The widget types of ``blueprint`` (``widgets:``'s folder), sorted by type id."""
    value: tuple[WidgetType, ...] | None = blueprint.sections.get("widgets")
    return () if value is None else value
