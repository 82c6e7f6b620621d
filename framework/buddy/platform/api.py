"""How the runtime talks to a platform: the :class:`PlatformClient` interface.

The runtime depends only on this interface; an adapter for another platform is one new
module implementing it (:mod:`buddy.platform.client` is the buddy platform's). It imports
nothing heavy, so code that runs turns without a platform (``buddy.Agent``) does not pay
for an HTTP stack.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from buddy.platform.protocol.events import Event

__all__ = ["Json", "PlatformClient", "path_segment"]

Json = Any


def path_segment(value: str) -> str:
    """``value`` as one URL path segment of a protocol path. Dots are encoded too: an id or
    key such as ``..`` would otherwise be resolved by the HTTP client into another endpoint.
    A lone surrogate is sent as its (invalid) UTF-8 bytes, for the platform to refuse with
    the segment's own error rather than the client failing to encode it."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="").replace(".", "%2E")


class PlatformClient(abc.ABC):
    """The operations the runtime needs from a platform.

    Conversation-scoped operations take the conversation id first. Results are the
    protocol's JSON bodies (dicts and lists), as documented in docs/protocol.md.
    """

    # -- buddy-level
    @abc.abstractmethod
    async def upload_declaration(self, requirements: Sequence[Mapping[str, Any]]) -> Json:
        """Replace the buddy's data declaration (even with an empty list)."""

    @abc.abstractmethod
    async def upload_widget_types(self, types: Sequence[Mapping[str, Any]]) -> Json:
        """Replace the buddy's widget types."""

    @abc.abstractmethod
    def events(self) -> AsyncIterator[Event]:
        """The event stream; each event once, in order, across reconnects."""

    @abc.abstractmethod
    async def ack(self, event_id: str) -> None:
        """Acknowledge a processed event (delivered again until acknowledged)."""

    def forget(self, event_id: str) -> None:  # noqa: B027 - optional, a no-op by default
        """Let ``event_id`` be yielded again when redelivered (its processing failed)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close connections."""

    # -- conversation records
    @abc.abstractmethod
    async def conversation_info(self, cid: str) -> Json:
        """Kind and members of a conversation."""

    @abc.abstractmethod
    async def commit_turn(self, cid: str, turn: Mapping[str, Any]) -> Json:
        """Commit one turn's output (idempotent on its event id)."""

    @abc.abstractmethod
    async def turns(self, cid: str, after: float = 0) -> Json:
        """Stored turn records, oldest first."""

    @abc.abstractmethod
    async def put_summary(self, cid: str, text: str, covers_until: float) -> Json:
        """Store a compaction summary."""

    @abc.abstractmethod
    async def get_summary(self, cid: str) -> Json | None:
        """The compaction summary, or ``None``."""

    # -- memory
    @abc.abstractmethod
    async def memory_list(self, cid: str) -> Json:
        """All entries, sorted by key."""

    @abc.abstractmethod
    async def memory_write(self, cid: str, key: str, text: str) -> Json:
        """Overwrite one entry."""

    @abc.abstractmethod
    async def memory_delete(self, cid: str, key: str) -> None:
        """Delete one entry (absent is fine)."""

    # -- data access
    @abc.abstractmethod
    async def data_query(self, cid: str, datasets: list[str], member_id: str | None) -> Json:
        """One status (and data when available) per dataset."""

    @abc.abstractmethod
    async def data_request(self, cid: str, request: Mapping[str, Any]) -> Json:
        """Send a consent card (private chats only)."""

    @abc.abstractmethod
    async def data_read_result(self, cid: str, request_id: str) -> Json:
        """A one-time location/calendar result."""

    # -- widgets
    @abc.abstractmethod
    async def widget_call(
        self, cid: str, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> Json:
        """One widget operation: ``path`` relative to ``/internal/v1`` (``widgets/…``, ``messages``)."""

    # -- proactive
    @abc.abstractmethod
    async def proactive_subscribe(self, cid: str, key: str, request: Mapping[str, Any]) -> Json:
        """Create, or update and re-enable, a subscription by key."""

    @abc.abstractmethod
    async def proactive_list(self, cid: str) -> Json:
        """All subscriptions of the conversation, closed ones included."""

    @abc.abstractmethod
    async def proactive_unsubscribe(self, cid: str, key: str) -> bool:
        """Close one; whether it was found."""

    @abc.abstractmethod
    async def proactive_unsubscribe_all(self, cid: str) -> int:
        """Close every active one; how many."""
