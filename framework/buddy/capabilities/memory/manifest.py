"""The memory capability's declarative tools in ``buddy.yaml``: ``uses: memory.write``,
``memory.delete`` and ``memory.list``, their fields templates of the call's arguments.

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from buddy.manifest.schema import DeclarativeTool

__all__ = ["MemoryDeleteTool", "MemoryListTool", "MemoryWriteTool"]


class MemoryWriteTool(DeclarativeTool):
    """A tool that writes one memory entry: `key` and `text` are templates."""

    TEMPLATES = ("key", "text", "reply")

    uses: Literal["memory.write"]
    key: str = Field(min_length=1, description="Template of the memory key.")
    text: str = Field(min_length=1, description="Template of the memory text.")


class MemoryDeleteTool(DeclarativeTool):
    """A tool that deletes one memory entry: `key` is a template."""

    TEMPLATES = ("key", "reply")

    uses: Literal["memory.delete"]
    key: str = Field(min_length=1, description="Template of the memory key.")


class MemoryListTool(DeclarativeTool):
    """A tool that lists memory entries, optionally under a key prefix."""

    TEMPLATES = ("prefix", "reply")

    uses: Literal["memory.list"]
    prefix: str | None = Field(default=None, description="Template of a key prefix to filter on.")
