"""The compiled widget types (``blueprint.widgets``). Standard library only: a cached
start unpickles them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["WidgetModule", "WidgetType"]


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
