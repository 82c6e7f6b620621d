"""The platform tools a manifest lists by name, as the compiled buddy holds them.

Every platform tool is declared by its capability (``buddy/capabilities/<name>/tools.py``:
texts following the TypeScript runtime's contract, SPEC §4; parameter schemas built from
the platform's limits). This module only asks the registry and fills in what depends on
the buddy's compiled manifest sections (the widget tools describe its widget types'
modules and fields, the subscription tool its declared subscriptions). The runtime binds
each spec to the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from buddy.compile.blueprint import ToolSpec
from buddy.extend import ToolContext, registry

__all__ = ["ENDS_TURN", "covers_every_platform_tool", "platform_tools"]

#: The platform tools after whose step the turn stops (a card waits for the user).
ENDS_TURN = frozenset(t.name for t in registry().tools.values() if t.ends_turn)


def platform_tools(
    names: list[str], sections: Mapping[str, Any] | None = None
) -> dict[str, ToolSpec]:
    """The specs of the platform tools ``names`` for a buddy with these compiled manifest
    sections (a tool's text may depend on them).

    Raises:
        KeyError: A name is not a platform tool.
    """
    tools = registry().tools
    context = ToolContext(dict(sections or {}))
    out: dict[str, ToolSpec] = {}
    for name in names:
        tool = tools[name]
        out[name] = ToolSpec(
            name=name,
            kind="platform",
            description=tool.describe(context),
            parameters=tool.schema(context),
            label=tool.label,
            ends_turn=tool.ends_turn,
            execute=tool.execute,
            reads_data=tool.reads_data,
        )
    return out


def covers_every_platform_tool() -> bool:
    """Whether every tool the manifest schema accepts has a declaration (one registry
    serves both, so this holds by construction; kept for the callers that check it)."""
    from buddy.manifest.schema import PLATFORM_TOOL_NAMES

    return set(registry().tools) == set(PLATFORM_TOOL_NAMES)
