"""What the platform must know before the buddy's first event: its widget types."""

from __future__ import annotations

from typing import TYPE_CHECKING

from buddy.capabilities.widgets.compiled import declared

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.platform.api import PlatformClient

__all__ = ["upload_widget_types"]


async def upload_widget_types(client: PlatformClient, blueprint: Blueprint) -> None:
    """Replace the buddy's widget types with the project's ``widgets/<type>/schema.json``."""
    types = [
        {
            "type": w.type,
            "title": w.title,
            "description": w.description or None,
            "modules": {m.name: {"title": m.title, "record": dict(m.record)} for m in w.modules},
        }
        for w in declared(blueprint)
    ]
    await client.request("PUT", "widget-types", body={"types": types})
