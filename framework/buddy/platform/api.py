"""How the runtime talks to a platform: the :class:`PlatformClient` transport.

A platform client carries protocol calls — a method, a path under ``/internal/v1``, the
conversation it is for and a JSON body — and the event stream with its acknowledgements.
It knows no capability: each capability's ``conversation`` facade
(``buddy/capabilities/<name>/conversation.py``) builds its own calls and speaks through
:meth:`PlatformClient.request`. An adapter for another platform is one new module
implementing the transport (:mod:`buddy.platform.client` is the buddy platform's). This
module imports nothing heavy, so code that runs turns without a platform
(``buddy.Agent``) does not pay for an HTTP stack.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from buddy.platform.protocol.events import Event

__all__ = ["API_ROOT", "Json", "PlatformClient", "path_segment"]

Json = Any
#: Where the protocol's calls live on a platform; :meth:`PlatformClient.request` paths
#: are relative to it.
API_ROOT = "/internal/v1"


def path_segment(value: str) -> str:
    """``value`` as one URL path segment of a protocol path. Dots are encoded too: an id or
    key such as ``..`` would otherwise be resolved by the HTTP client into another endpoint.
    A lone surrogate is sent as its (invalid) UTF-8 bytes, for the platform to refuse with
    the segment's own error rather than the client failing to encode it."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="").replace(".", "%2E")


class PlatformClient(abc.ABC):
    """The transport between the runtime and a platform.

    Four operations make a platform: :meth:`request`, :meth:`events`, :meth:`ack` and
    :meth:`close`. The conversation records every buddy needs (the conversation's
    members, its turns and summary) are written here on top of :meth:`request`; each
    capability's calls are written in its own facade.
    """

    @abc.abstractmethod
    async def request(
        self,
        method: str,
        path: str,
        *,
        cid: str | None = None,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        missing_ok: bool = False,
    ) -> Json:
        """One protocol call.

        Args:
            method: The HTTP method (``GET``, ``PUT`` …).
            path: Relative to :data:`API_ROOT`, segments encoded with :func:`path_segment`
                (``memory/%E7%94%9F%E6%97%A5``); ``""`` is the root itself.
            cid: The conversation the call is for (``X-Conversation-Id``), if any.
            body: The JSON body.
            params: Query parameters.
            missing_ok: Answer ``None`` instead of raising for a 404.

        Returns:
            The decoded JSON answer, or ``None`` for an empty one.

        Raises:
            PlatformError: The platform refused the call (its status and reason) or could
                not be reached (status 0).
        """

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

    # -- conversation records: what every buddy needs, whatever its capabilities

    async def conversation_info(self, cid: str) -> Json:
        """Kind and members of a conversation."""
        return await self.request("GET", "conversation", cid=cid)

    async def commit_turn(self, cid: str, turn: Mapping[str, Any]) -> Json:
        """Commit one turn's output (idempotent on its event id)."""
        return await self.request("POST", "conversation/turns", cid=cid, body=turn)

    async def turns(self, cid: str, after: float = 0) -> Json:
        """Stored turn records, oldest first."""
        # The most the platform answers at once; compaction keeps a conversation's recent
        # part (after its summary) well below it.
        params = {"after": after, "limit": 1000}
        return await self.request("GET", "conversation/turns", cid=cid, params=params)

    async def put_summary(self, cid: str, text: str, covers_until: float) -> Json:
        """Store a compaction summary."""
        body = {"text": text, "covers_until": covers_until}
        return await self.request("PUT", "conversation/summary", cid=cid, body=body)

    async def get_summary(self, cid: str) -> Json | None:
        """The compaction summary, or ``None``."""
        return await self.request("GET", "conversation/summary", cid=cid, missing_ok=True)
