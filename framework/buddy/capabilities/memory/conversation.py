"""``conversation.memory``: this conversation's long-term memory on the platform."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX
from buddy.errors import ToolError
from buddy.extend.turn import DATA_READ_REFUSAL, Bound
from buddy.platform.api import path_segment

__all__ = ["PLAIN_KEPT", "Entries", "Memory"]

#: How many revisions made by plain writes (:meth:`Memory.plain`) a part remembers.
PLAIN_KEPT = 64
#: Memory entries as the platform lists them (``key``, ``text``, ``updated_at``).
Entries = list[dict[str, Any]]


@dataclass
class Memory(Bound):
    """This conversation's long-term memory (key → text) on the platform.

    After the turn read user data, writes are refused (the contract's rule: a value
    written then could keep the data after its grant is revoked). Keys starting with
    ``auto:`` are automatic memory's: :meth:`write` and :meth:`delete` refuse them, and
    only the layer itself writes them (:meth:`write_reserved`, :meth:`apply_reserved`).

    On a platform that keeps one (docs/protocol.md §6) every change moves the
    conversation's memory revision on by exactly one, and each write's answer says which
    revision it made. The part remembers those its own writes made without touching an
    ``auto:`` key (:meth:`plain`): automatic memory can then tell, from the revision an
    event carries, that nothing it keeps changed since it last read — without reading.
    """

    _plain: set[int] = field(default_factory=set, init=False, repr=False)

    async def list(self) -> list[dict[str, Any]]:
        """All entries (``key``, ``text``, ``updated_at``), sorted by key."""
        entries, _ = await self.read()
        return entries

    async def read(self) -> tuple[Entries, int | None]:
        """All entries, sorted by key, and the revision they are at (``None`` from a
        platform that keeps none)."""
        answer = await self._call("GET", "memory")
        entries: Entries = answer["entries"]
        return entries, _revision(answer)

    async def write(self, key: str, text: str) -> None:
        """Overwrite the entry ``key`` (limits: key ≤ 64 chars, no whitespace or ``/``; text ≤ 16 KB).

        Raises:
            ToolError: The turn read user data, or the key is automatic memory's (``auto:``).
        """
        _refuse_reserved(key, "写")
        await self.write_reserved(key, text)

    async def delete(self, key: str) -> None:
        """Delete the entry ``key``; deleting an absent key succeeds.

        Raises:
            ToolError: The key is automatic memory's (``auto:``).
        """
        _refuse_reserved(key, "删")
        await self.delete_reserved(key)

    async def write_reserved(self, key: str, text: str) -> int | None:
        """Overwrite the entry ``key``, an ``auto:`` key included: for automatic memory
        itself, which keeps its facts there. The data-visibility rule holds the same.

        Returns:
            The revision the write made (``None`` from a platform that keeps none).

        Raises:
            ToolError: The turn read user data.
        """
        if self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="写记忆"))
        answer = await self._call("PUT", f"memory/{path_segment(key)}", {"text": text})
        return self._made(answer, (key,))

    async def delete_reserved(self, key: str) -> None:
        """Delete the entry ``key``, an ``auto:`` key included: for automatic memory
        itself (a fact evicted or dropped)."""
        await self._call("DELETE", f"memory/{path_segment(key)}")

    async def apply_reserved(
        self, writes: Sequence[tuple[str, str]], deletes: Sequence[str] = ()
    ) -> int | None:
        """Delete ``deletes``, then write ``writes`` (``(key, text)``, in order), in one
        request the platform applies whole or not at all (``POST /internal/v1/memory``);
        ``auto:`` keys included: automatic memory's save. The data-visibility rule holds
        for every write in it.

        Returns:
            The revision the batch made (``None`` from a platform that keeps none).

        Raises:
            ToolError: The turn read user data (and the batch writes).
            PlatformError: Refused, nothing applied: an item breaks a rule of its single
                request (400, the reason names it), or the platform has no batches (404
                or 405: write one entry at a time).
        """
        if writes and self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="写记忆"))
        body = {"deletes": list(deletes), "writes": [{"key": k, "text": t} for k, t in writes]}
        answer = await self._call("POST", "memory", body)
        return self._made(answer, [*deletes, *(key for key, _ in writes)])

    def plain(self, revision: int) -> bool:
        """Whether ``revision`` was made by one of this part's writes that touched no
        ``auto:`` key (of the last :data:`PLAIN_KEPT`): a change automatic memory can
        ignore."""
        return revision in self._plain

    def _made(self, answer: Any, keys: Iterable[str]) -> int | None:
        revision = _revision(answer)
        if revision is not None and not any(k.startswith(AUTO_KEY_PREFIX) for k in keys):
            self._plain.add(revision)
            if len(self._plain) > PLAIN_KEPT:
                self._plain.discard(min(self._plain))
        return revision


def _revision(answer: Any) -> int | None:
    revision = answer.get("revision") if isinstance(answer, Mapping) else None
    return revision if isinstance(revision, int) and not isinstance(revision, bool) else None


def _refuse_reserved(key: str, what: str) -> None:
    if key.startswith(AUTO_KEY_PREFIX):
        raise ToolError(
            f"「{AUTO_KEY_PREFIX}」开头的记忆由自动记忆管理，不能用工具{what}；换一个键名。"
        )
