"""``conversation.echo``: the echo capability's part of the conversation object."""

from __future__ import annotations

from typing import Any

from buddy.compile.blueprint import Blueprint
from buddy.extend.turn import Bound
from tests.capabilities.echo.compiled import EchoSettings


class Echo(Bound):
    """Echoes kept by the platform, one list per conversation, said as ``echo:`` says."""

    settings = EchoSettings()

    def configure(self, blueprint: Blueprint) -> None:
        self.settings = blueprint.sections.get("echo", EchoSettings())

    async def keep(self, text: str) -> dict[str, Any]:
        """Store ``text``; answers ``{"text", "count"}`` (how many this conversation has)."""
        kept: dict[str, Any] = await self._call("POST", "echo", {"text": text})
        return kept

    async def list(self) -> list[str]:
        """Every text kept, oldest first."""
        listed: list[str] = (await self._call("GET", "echo"))["texts"]
        return listed
