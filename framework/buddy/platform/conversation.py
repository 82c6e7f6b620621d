"""The ``conversation`` object: SPEC §4's capabilities, bound to one conversation.

Custom tool bodies and hooks receive it. Every platform failure raises
:class:`~buddy.errors.PlatformError` with the HTTP status and the platform's reason
(inside a tool, the model sees that reason).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from buddy.compile.project import read_resources
from buddy.errors import ManifestError, ResourceNotFoundError
from buddy.platform.api import PlatformClient, path_segment

__all__ = ["Conversation", "DataAccess", "Memory", "Proactive", "Resources", "Widgets"]

Kind = Literal["private", "group"]


class Resources:
    """The buddy's Markdown resources, read once when the process starts.

    Args:
        files: Path relative to ``resources/`` (``/``-separated) → text.
    """

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(sorted(files.items()))

    @classmethod
    def load(cls, resources: Iterable[Any]) -> Resources:
        """Read the files of a blueprint's resource index (``blueprint.resources``).

        The files are read under the compiler's rules (regular files, the per-file and
        total size limits of :mod:`buddy.compile.project`): one may have changed since
        the compile, and a FIFO or a 3 GiB file must not hang or exhaust the process.

        Raises:
            ManifestError: A resource is no longer a regular UTF-8 file, or is over a
                limit.
        """
        index = list(resources)
        contents, issues = read_resources((r.file, str(r.file)) for r in index)
        if issues:
            raise ManifestError(issues)
        files = {r.path: c.decode("utf-8") for r, c in zip(index, contents, strict=True)}
        return cls(files)

    def list(self) -> list[str]:
        """Every resource path, sorted."""
        return list(self._files)

    def read(self, file: str) -> str:
        """The text of ``file``, exactly as :meth:`list` gives it.

        Raises:
            ResourceNotFoundError: No such resource.
        """
        try:
            return self._files[file]
        except KeyError:
            raise ResourceNotFoundError(
                f"没有这份资料：{file}（要照 resource_list 给的路径原样填）"
            ) from None


@dataclass
class _Bound:
    client: PlatformClient
    cid: str


class Memory(_Bound):
    """This conversation's long-term memory (key → text) on the platform."""

    async def list(self) -> list[dict[str, Any]]:
        """All entries (``key``, ``text``, ``updated_at``), sorted by key."""
        entries: list[dict[str, Any]] = await self.client.memory_list(self.cid)
        return entries

    async def write(self, key: str, text: str) -> None:
        """Overwrite the entry ``key`` (limits: key ≤ 64 chars, no whitespace or ``/``; text ≤ 16 KB)."""
        await self.client.memory_write(self.cid, key, text)

    async def delete(self, key: str) -> None:
        """Delete the entry ``key``; deleting an absent key succeeds."""
        await self.client.memory_delete(self.cid, key)


class DataAccess(_Bound):
    """User-authorised data: query granted datasets, send consent cards, read one-time results."""

    async def query(
        self, datasets: list[str], member_id: str | None = None
    ) -> list[dict[str, Any]]:
        """One result per dataset: ``status`` and, when ``available``, ``data.items``.

        Args:
            datasets: 1–8 dataset ids from the capability catalogue.
            member_id: In groups, the member whose data to read (required there).
        """
        results: list[dict[str, Any]] = await self.client.data_query(self.cid, datasets, member_id)
        return results

    async def request(
        self,
        kind: Literal["healthkit", "location", "calendar"],
        reason: str,
        *,
        idempotency_key: str,
        datasets: list[str] | None = None,
        calendar_days: int | None = None,
    ) -> dict[str, Any]:
        """Send a consent card (private chats only); answers ``request_id`` and ``message_id``."""
        body: dict[str, Any] = {"kind": kind, "reason": reason, "idempotency_key": idempotency_key}
        if datasets is not None:
            body["datasets"] = datasets
        if calendar_days is not None:
            body["calendar_days"] = calendar_days
        result: dict[str, Any] = await self.client.data_request(self.cid, body)
        return result

    async def read_result(self, request_id: str) -> dict[str, Any]:
        """A location/calendar card's one-time result: ``available`` + data, or ``unavailable``."""
        result: dict[str, Any] = await self.client.data_read_result(self.cid, request_id)
        return result


class Widgets(_Bound):
    """Structured panels in the conversation (types from ``widgets/<type>/schema.json``)."""

    async def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return await self.client.widget_call(self.cid, method, path, body)

    async def list(self) -> list[dict[str, Any]]:
        """The conversation's widgets, without records."""
        listed: list[dict[str, Any]] = (await self._call("GET", "widgets"))["widgets"]
        return listed

    async def create(
        self, type: str, title: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Create one; answers ``{"id"}`` (the same id again for the same idempotency key)."""
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


class Proactive(_Bound):
    """Proactive subscriptions of this conversation (private chats only)."""

    running: bool = False

    async def subscribe(self, key: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """Create, or update and re-enable, the subscription ``key``.

        Args:
            key: Stable id, 1–64 of ``[a-z0-9._-]``, starting with a letter or digit.
            request: ``title``, ``reason``, ``trigger`` and optionally ``quiet_hours``,
                ``cooldown_minutes``, ``daily_limit``.
        """
        subscription: dict[str, Any] = await self.client.proactive_subscribe(self.cid, key, request)
        return subscription

    async def list(self) -> list[dict[str, Any]]:
        """Every subscription, closed ones included."""
        subscriptions: list[dict[str, Any]] = await self.client.proactive_list(self.cid)
        return subscriptions

    async def unsubscribe(self, key: str) -> bool:
        """Close ``key`` (pending runs are cancelled); whether it was found."""
        return await self.client.proactive_unsubscribe(self.cid, key)

    async def unsubscribe_all(self) -> int:
        """Close every active subscription; how many were closed."""
        return await self.client.proactive_unsubscribe_all(self.cid)

    def is_running(self) -> bool:
        """Whether the current turn is a proactive turn."""
        return self.running


class Conversation:
    """One conversation's capabilities, as tool bodies and hooks receive them.

    Attributes:
        id: The conversation id.
        kind: ``private`` or ``group``.
        resource: The buddy's resources (read at process start).
        memory: Long-term memory.
        data_access: User-authorised data.
        widget: Widgets.
        proactive: Proactive subscriptions, and whether this turn is proactive.
    """

    def __init__(
        self, client: PlatformClient, conversation_id: str, kind: Kind, resources: Resources
    ) -> None:
        self.id = conversation_id
        self.kind: Kind = kind
        self.client = client
        self.resource = resources
        self.memory = Memory(client, conversation_id)
        self.data_access = DataAccess(client, conversation_id)
        self.widget = Widgets(client, conversation_id)
        self.proactive = Proactive(client, conversation_id)
