"""``conversation.widget``: the conversation's widgets on the platform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities.turn import DATA_READ_REFUSAL, Bound
from buddy.errors import ToolError
from buddy.platform.api import path_segment

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["Widgets"]


class Widgets(Bound):
    """Structured panels in the conversation (types from ``widgets/<type>/schema.json``).

    Widget writes carry content: after a data read they could store its values, so a
    strict manifest (:attr:`strict`) refuses them for the rest of the turn.
    """

    def configure(self, blueprint: Blueprint) -> None:
        self.strict = blueprint.data.after_read == "strict"

    def _check(self) -> None:
        if self.strict and self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="建或改小挂件"))

    async def list(self) -> list[dict[str, Any]]:
        """The conversation's widgets, without records."""
        listed: list[dict[str, Any]] = (await self._call("GET", "widgets"))["widgets"]
        return listed

    async def create(
        self, type: str, title: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Create one; answers ``{"id"}`` (the same id again for the same idempotency key)."""
        self._check()
        body: dict[str, Any] = {"type": type, "title": title}
        if idempotency_key is not None:
            body["idempotency_key"] = idempotency_key
        created: dict[str, Any] = await self._call("POST", "widgets", body)
        return created

    async def read(self, widget_id: str) -> dict[str, Any]:
        """The whole widget with every module's records."""
        widget: dict[str, Any] = await self._call("GET", f"widgets/{path_segment(widget_id)}")
        return widget

    async def read_module(self, widget_id: str, module: str) -> dict[str, Any]:
        """One module: ``{"records": [...]}``."""
        records: dict[str, Any] = await self._call(
            "GET", f"widgets/{path_segment(widget_id)}/{path_segment(module)}"
        )
        return records

    async def rename(self, widget_id: str, title: str) -> None:
        """Change the title; cards already sent show the new one."""
        self._check()
        await self._call("PUT", f"widgets/{path_segment(widget_id)}", {"title": title})

    async def write_record(
        self,
        widget_id: str,
        module: str,
        record_id: str,
        data: Mapping[str, Any],
        *,
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        """Overwrite one record; answers ``{"revision"}`` (409 when ``expected_revision`` is stale)."""
        self._check()
        body: dict[str, Any] = {"data": dict(data)}
        if expected_revision is not None:
            body["expected_revision"] = expected_revision
        written: dict[str, Any] = await self._call(
            "PUT",
            f"widgets/{path_segment(widget_id)}/{path_segment(module)}/{path_segment(record_id)}",
            body,
        )
        return written

    async def delete_record(self, widget_id: str, module: str, record_id: str) -> None:
        """Delete one record."""
        await self._call(
            "DELETE",
            f"widgets/{path_segment(widget_id)}/{path_segment(module)}/{path_segment(record_id)}",
        )

    async def delete(self, widget_id: str) -> None:
        """Delete the widget and its records; sent cards show it as deleted."""
        await self._call("DELETE", f"widgets/{path_segment(widget_id)}")

    async def set_presentation(
        self, widget_id: str, *, summary: str | None = None, image_media_id: str | None = None
    ) -> None:
        """Set the card's summary (≤ 500 chars) and cover image; ``""`` removes either."""
        self._check()
        body: dict[str, Any] = {}
        if summary is not None:
            body["summary"] = summary
        if image_media_id is not None:
            body["image_media_id"] = image_media_id
        await self._call("PUT", f"widgets/{path_segment(widget_id)}/presentation", body)

    async def send(self, widget_id: str, *, idempotency_key: str) -> dict[str, Any]:
        """Queue the widget's card into the chat (one message per idempotency key)."""
        sent: dict[str, Any] = await self._call(
            "POST", "messages", {"widget_id": widget_id, "idempotency_key": idempotency_key}
        )
        return sent
