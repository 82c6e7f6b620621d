"""``conversation.proactive``: the conversation's proactive subscriptions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from buddy.capabilities.data.compiled import declared as data_declared
from buddy.capabilities.proactive.compiled import declared
from buddy.errors import ToolError
from buddy.extend.turn import DATA_READ_REFUSAL, Bound
from buddy.platform.api import path_segment

if TYPE_CHECKING:
    from buddy.capabilities.proactive.compiled import SubscriptionSpec
    from buddy.compile.blueprint import Blueprint

__all__ = ["ProactiveService", "subscription_request"]

_ALL = "proactive/subscriptions"


def _one(key: str) -> str:
    return f"{_ALL}/{path_segment(key)}"


def subscription_request(spec: SubscriptionSpec) -> dict[str, Any]:
    """The platform request for a declared subscription."""
    trigger: Any = spec.trigger.type
    if spec.trigger.type == "data.updated":
        trigger = {"type": "data.updated", "dataset": spec.trigger.dataset}
    elif spec.trigger.type == "schedule":
        assert spec.trigger.at is not None
        trigger = {"type": "schedule", "at": spec.trigger.at.isoformat()}
        if spec.trigger.interval_minutes is not None:
            trigger["interval_minutes"] = spec.trigger.interval_minutes
    return {
        "title": spec.title,
        "reason": spec.reason,
        "trigger": trigger,
        "quiet_hours": {
            "start": spec.quiet_hours.start,
            "end": spec.quiet_hours.end,
            "timezone": spec.quiet_hours.timezone,
        },
        "cooldown_minutes": spec.cooldown_minutes,
        "daily_limit": spec.daily_limit,
    }


@dataclass
class ProactiveService(Bound):
    """Proactive subscriptions of this conversation (private chats only).

    A subscription the manifest declares takes its fields as defaults; a strict manifest
    (:attr:`strict`) refuses subscribing after a data read.
    """

    running: bool = False
    declared: Mapping[str, SubscriptionSpec] = field(default_factory=dict)

    def configure(self, blueprint: Blueprint) -> None:
        self.strict = data_declared(blueprint).after_read == "strict"
        self.declared = {s.key: s for s in declared(blueprint).subscriptions}

    async def subscribe(self, key: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Create, or update and re-enable, the subscription ``key``.

        Args:
            key: Stable id, 1–64 of ``[a-z0-9._-]``, starting with a letter or digit.
            request: ``title``, ``reason``, ``trigger`` and optionally ``quiet_hours``,
                ``cooldown_minutes``, ``daily_limit`` (a declared key's fields are the
                defaults).

        Raises:
            ToolError: A strict manifest, after the turn read user data.
        """
        if self.strict and self.turn.data_read:
            raise ToolError(DATA_READ_REFUSAL.format(what="订阅主动服务"))
        spec = self.declared.get(key)
        merged = {**(subscription_request(spec) if spec else {}), **(request or {})}
        subscription: dict[str, Any] = await self._call("PUT", _one(key), merged)
        return subscription

    async def list(self) -> list[dict[str, Any]]:
        """Every subscription, closed ones included."""
        subscriptions: list[dict[str, Any]] = (await self._call("GET", _ALL))["subscriptions"]
        return subscriptions

    async def unsubscribe(self, key: str) -> bool:
        """Close ``key`` (pending runs are cancelled); whether it was found."""
        return bool((await self._call("DELETE", _one(key)))["found"])

    async def unsubscribe_all(self) -> int:
        """Close every active subscription; how many were closed."""
        return int((await self._call("DELETE", _ALL))["closed"])

    async def opened(self, kind: str) -> None:
        """Subscribe the declared subscriptions that start on the first message (private
        chats), and bring an active one up to date with the manifest. A subscription the
        user or the model closed is never re-enabled by a rebuild."""
        starting = [s for s in self.declared.values() if s.activate == "on_first_message"]
        if kind != "private" or not starting:
            return
        existing = {s["key"]: s for s in await self.list()}
        for spec in starting:
            current = existing.get(spec.key)
            wanted = subscription_request(spec)
            if current is None or (current.get("status") == "active" and _changed(current, wanted)):
                await self.subscribe(spec.key, wanted)

    def is_running(self) -> bool:
        """Whether the current turn is a proactive turn."""
        return self.running or self.turn.unasked


def _changed(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    for key, value in wanted.items():
        have = current.get(key)
        if key == "trigger" and isinstance(value, dict) and isinstance(have, dict):
            if any(have.get(k) != v for k, v in value.items() if k != "at"):
                return True
            continue
        if key == "trigger" and isinstance(have, dict):
            if have.get("type") != value:
                return True
            continue
        if have != value:
            return True
    return False
