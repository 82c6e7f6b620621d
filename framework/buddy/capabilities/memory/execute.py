"""What the memory capability's declarative tools do at run time, their templates already
rendered with the call's arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from buddy.runtime.state import RuntimeConversation
    from buddy.runtime.tools import ToolResult

__all__ = ["delete", "list_entries", "write"]


async def write(rendered: Mapping[str, str], c: RuntimeConversation) -> ToolResult | None:
    """``uses: memory.write``: overwrite one entry, then answer the reply."""
    await c.memory.write(rendered["key"], rendered["text"])
    return None


async def delete(rendered: Mapping[str, str], c: RuntimeConversation) -> ToolResult | None:
    """``uses: memory.delete``: delete one entry, then answer the reply."""
    await c.memory.delete(rendered["key"])
    return None


async def list_entries(rendered: Mapping[str, str], c: RuntimeConversation) -> ToolResult | None:
    """``uses: memory.list``: the entries under the prefix as JSON — or, with a ``reply``
    template, that reply. Automatic memory's ``auto:`` entries are not listed: the model
    reads them as the person card."""
    from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX
    from buddy.runtime.tools import json_result

    prefix = rendered.get("prefix", "")
    entries = [
        e
        for e in await c.memory.list()
        if str(e["key"]).startswith(prefix) and not str(e["key"]).startswith(AUTO_KEY_PREFIX)
    ]
    if "reply" in rendered:
        return None
    return json_result([{"key": e["key"], "text": e["text"]} for e in entries])
