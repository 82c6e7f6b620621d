"""``conversation.data_access``: user-authorised data, bound to one conversation.

This is where the one-turn data-visibility rule starts: a query or a one-time result
that answers ``available`` marks the turn (``turn.data_read``), and a consent card ends
it, whoever sends it (the ``data_access_request`` tool or any tool's code).
"""

from __future__ import annotations

from typing import Any, Literal

from buddy.extend.turn import Bound
from buddy.platform.api import path_segment

__all__ = ["DataAccess"]


def _available(results: Any) -> bool:
    items = results if isinstance(results, list) else [results]
    return any(isinstance(r, dict) and r.get("status") == "available" for r in items)


class DataAccess(Bound):
    """User-authorised data: query granted datasets, send consent cards, read one-time results."""

    async def query(
        self, datasets: list[str], member_id: str | None = None
    ) -> list[dict[str, Any]]:
        """One result per dataset: ``status`` and, when ``available``, ``data.items``.

        Args:
            datasets: 1–8 dataset ids from the catalogue.
            member_id: In groups, the member whose data to read (required there).
        """
        body: dict[str, Any] = {"datasets": datasets}
        if member_id is not None:
            body["member_id"] = member_id
        results: list[dict[str, Any]] = (await self._call("POST", "data-access/query", body))[
            "results"
        ]
        if _available(results):
            self.turn.data_read = True
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
        """Send a consent card (private chats only); answers ``request_id`` and
        ``message_id``. The turn ends after the tool step that sent it."""
        body: dict[str, Any] = {"kind": kind, "reason": reason, "idempotency_key": idempotency_key}
        if datasets is not None:
            body["datasets"] = datasets
        if calendar_days is not None:
            body["calendar_days"] = calendar_days
        result: dict[str, Any] = await self._call("POST", "data-access/requests", body)
        self.turn.ended = True
        return result

    async def read_result(self, request_id: str) -> dict[str, Any]:
        """A location/calendar card's one-time result: ``available`` + data, or ``unavailable``."""
        result: dict[str, Any] = await self._call(
            "GET", f"data-access/results/{path_segment(request_id)}"
        )
        if _available(result):
            self.turn.data_read = True
        return result
