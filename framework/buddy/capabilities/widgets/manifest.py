"""``widgets:`` in ``buddy.yaml`` names the folder of widget types (``widgets`` by
default); each type is ``<folder>/<type>/schema.json``, modelled here.

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from buddy.capabilities.widgets.limits import WIDGET_ID_PATTERN
from buddy.manifest.schema import Folder, Strict

__all__ = ["WidgetModuleFile", "WidgetSchemaFile", "WidgetsSection"]

#: ``widgets:``: the folder of widget types, relative to the manifest that names it.
WidgetsSection = Folder


class WidgetModuleFile(Strict):
    """One module of a widget type: a title and the JSON Schema of one record."""

    title: str | None = Field(default=None, min_length=1, max_length=100)
    record: dict[str, Any] = Field(description="JSON Schema of one record (type object).")


class WidgetSchemaFile(Strict):
    """``widgets/<type>/schema.json``: a widget type (the directory name is its id)."""

    title: str = Field(min_length=1, max_length=100)
    description: str | None = Field(default=None, min_length=1, max_length=1000)
    modules: dict[Annotated[str, Field(pattern=WIDGET_ID_PATTERN)], WidgetModuleFile] = Field(
        min_length=1
    )
