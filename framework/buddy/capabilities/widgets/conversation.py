"""``conversation.widget``: the conversation's widgets on the platform."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities.data.compiled import declared as data_declared
from buddy.capabilities.widgets.compiled import declared
from buddy.errors import PlatformError, ToolError
from buddy.extend.turn import DATA_READ_REFUSAL, Bound
from buddy.platform.api import path_segment

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["RecordRefused", "Widgets"]


class RecordRefused(PlatformError):
    """A record that breaks its module's schema, refused as the platform's 400
    (``record_schema_mismatch``) would be, with the precise reason — the field and the
    rule, in Chinese — as :attr:`reason`: code written to the contract catches it as
    ``PlatformError`` with ``status == 400``, and the widget tool shows the model the
    reason (it is the runtime's own words, not the platform's internals)."""

    def __init__(self, reason: str) -> None:
        super().__init__(400, reason, code="record_schema_mismatch")


class Widgets(Bound):
    """Structured panels in the conversation (types from ``widgets/<type>/schema.json``).

    Widget writes carry content: after a data read they could store its values, so a
    strict manifest (:attr:`strict`) refuses them for the rest of the turn.
    """

    def configure(self, blueprint: Blueprint) -> None:
        self.strict = data_declared(blueprint).after_read == "strict"
        self._schemas = {(t.type, m.name): m.record for t in declared(blueprint) for m in t.modules}

    _schemas: Mapping[tuple[str, str], Mapping[str, Any]] = {}
    _types: dict[str, str] | None = None

    def _typed(self, widget_id: str, type: object) -> None:
        """Remember a widget's type (from a create or a read), for the record check."""
        if isinstance(type, str):
            if self._types is None:
                self._types = {}
            self._types[widget_id] = type

    def _check_record(self, type: str, widget_id: str, module: str, data: Any) -> None:
        """Raise :class:`RecordRefused` when ``data`` breaks the module's schema."""
        schema = self._schemas.get((type, module))
        if schema is None:
            return  # an unknown module: the platform's answer says so
        from buddy.capabilities.widgets.records import record_problems

        problems = record_problems(schema, data)
        if problems:
            raise RecordRefused(
                f"记录不符合小挂件 {widget_id}（{type}）的 {module} 模块："
                + "；".join(problems)
                + "。改好 data 再调。"
            )

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
        self._typed(str(created.get("id")), type)
        return created

    async def read(self, widget_id: str) -> dict[str, Any]:
        """The whole widget with every module's records."""
        widget: dict[str, Any] = await self._call("GET", f"widgets/{path_segment(widget_id)}")
        self._typed(widget_id, widget.get("type"))
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
        """Overwrite one record; answers ``{"revision"}`` (409 when ``expected_revision`` is stale).

        Raises:
            RecordRefused: ``data`` breaks the module's schema: a ``PlatformError`` with
                status 400 and code ``record_schema_mismatch``, as the platform answers,
                whose reason says the field and the rule in Chinese — checked before the
                request when the widget's type is known here, else after the platform
                refused it (400).
            PlatformError: Any other refusal or failure of the platform.
        """
        self._check()
        known = (self._types or {}).get(widget_id)
        if known is not None:
            self._check_record(known, widget_id, module, data)
        body: dict[str, Any] = {"data": dict(data)}
        if expected_revision is not None:
            body["expected_revision"] = expected_revision
        try:
            written: dict[str, Any] = await self._call(
                "PUT",
                f"widgets/{path_segment(widget_id)}/{path_segment(module)}/{path_segment(record_id)}",
                body,
            )
        except PlatformError as exc:
            if exc.status == 400 and known is None:  # learn its type, then say why
                widget: dict[str, Any] | None = None
                with contextlib.suppress(PlatformError):  # the read only, not the refusal
                    widget = await self.read(widget_id)
                if widget is not None:
                    self._check_record(str(widget.get("type")), widget_id, module, data)
            raise
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
