"""The memory capability in ``buddy.yaml``: its declarative tools (``uses: memory.write``,
``memory.delete`` and ``memory.list``, their fields templates of the call's arguments)
and its section ``memory:``, automatic memory.

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from buddy.capabilities.memory.limits import (
    ASKS_MAX,
    BUDGET_CHARS,
    CARD_CHARS,
    MEMORY_ENTRIES_MAX,
    MEMORY_TOTAL_BYTES,
    RELATIONS_MAX,
    SHARE_BYTES,
    SHARE_ENTRIES,
    WAIT_MS,
)
from buddy.manifest.schema import DeclarativeTool, ModelRef, Strict

__all__ = [
    "BudgetSettings",
    "CardSettings",
    "MemoryDeleteTool",
    "MemoryListTool",
    "MemorySection",
    "MemoryWriteTool",
    "ShareSettings",
]


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


# ---------------------------------------------------------------- memory: (automatic memory)


def _bounded(bound: tuple[int, int, int], description: str) -> Any:
    default, least, most = bound
    return Field(default=default, ge=least, le=most, description=description)


class CardSettings(Strict):
    """The person card: what the buddy knows of the user, in every system prompt."""

    max_chars: int = _bounded(CARD_CHARS, "The card's length at most (characters).")


class BudgetSettings(Strict):
    """One budget for everything the companion layer adds to the system prompt."""

    max_chars: int = _bounded(BUDGET_CHARS, "Characters at most; what does not fit is left out.")


class ShareSettings(Strict):
    """How much of the conversation's platform memory the layer may use."""

    entries: int = _bounded(SHARE_ENTRIES, f"Entries (of {MEMORY_ENTRIES_MAX}).")
    bytes: int = _bounded(SHARE_BYTES, f"Bytes of text (of {MEMORY_TOTAL_BYTES}).")


RelationRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A shipped or shared spec by name (`preference`: "
        "`relations/preference.yaml` on the search path), or a path (`relations/x.yaml`).",
    ),
]


class MemorySection(Strict):
    """``memory:``: automatic memory — facts taken from every user message, typed by
    relation specs, kept in the conversation's platform memory and shown to the model
    as a person card."""

    auto: bool = Field(default=False, description="Extract facts from every user message.")
    model: ModelRef | None = Field(
        default=None, description="The extractor's model (default: the buddy's)."
    )
    relations: list[RelationRef] = Field(
        default_factory=list, max_length=RELATIONS_MAX, description="The kinds of fact kept."
    )
    card: CardSettings = Field(default_factory=CardSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    wait_ms: int = _bounded(
        WAIT_MS, "How long a reply may wait for its message's facts (milliseconds)."
    )
    asks: int = _bounded(ASKS_MAX, "Facts awaiting the user's confirmation, at most.")
    share: ShareSettings = Field(default_factory=ShareSettings)
