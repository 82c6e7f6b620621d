"""``conversation.memory``: this conversation's long-term memory on the platform."""

from __future__ import annotations

from typing import Any

from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX
from buddy.errors import ToolError
from buddy.extend.turn import DATA_READ_REFUSAL, Bound
from buddy.platform.api import path_segment

__all__ = ["Memory"]


class Memory(Bound):
    """This conversation's long-term memory (key → text) on the platform.

    After the turn read user data, writes are refused (the contract's rule: a value
    written then could keep the data after its grant is revoked). Keys starting with
    ``auto:`` are automatic memory's: :meth:`write` and :meth:`delete` refuse them, and
    only the layer itself writes them (:meth:`write_reserved`).
    """

    async def list(self) -> list[dict[str, Any]]:
        """All entries (``key``, ``text``, ``updated_at``), sorted by key."""
        entries: list[dict[str, Any]] = (await self._call("GET", "memory"))["entries"]
        return entries

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

    async def write_reserved(self, key: str, text: str) -> None:
        """Overwrite the entry ``key``, an ``auto:`` key included: for automatic memory
        itself, which keeps its facts there. The data-visibility rule holds the same.

        Raises:
            ToolError: The turn read user data.
        """
        if self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="写记忆"))
        await self._call("PUT", f"memory/{path_segment(key)}", {"text": text})

    async def delete_reserved(self, key: str) -> None:
        """Delete the entry ``key``, an ``auto:`` key included: for automatic memory
        itself (a fact evicted or dropped)."""
        await self._call("DELETE", f"memory/{path_segment(key)}")


def _refuse_reserved(key: str, what: str) -> None:
    if key.startswith(AUTO_KEY_PREFIX):
        raise ToolError(
            f"「{AUTO_KEY_PREFIX}」开头的记忆由自动记忆管理，不能用工具{what}；换一个键名。"
        )
