"""What the platform must know before the buddy's first event: its data declaration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from buddy.capabilities.data.compiled import declared

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.platform.api import PlatformClient

__all__ = ["upload_declaration"]


async def upload_declaration(client: PlatformClient, blueprint: Blueprint) -> None:
    """Replace the buddy's data declaration with the manifest's — even with an empty list,
    so a requirement removed from the manifest is no longer declared."""
    requirements = [
        {
            "id": r.id,
            "purpose": r.purpose,
            "title": r.title,
            "source": r.source,
            "schema_version": r.schema_version,
        }
        for r in declared(blueprint).requirements
    ]
    await client.request("PUT", "data-access/declaration", body={"requirements": requirements})
