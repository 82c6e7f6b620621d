"""What the dev platform is made of: the core conversation part and every registered
capability's ``platform`` module, each checked when the app is made.

A part is a module with:

``TABLES``
    The DDL of its tables (``CREATE TABLE IF NOT EXISTS …``).
``router``
    Its ``/internal/v1`` routes (a FastAPI ``APIRouter``, without start-up or shut-down
    handlers), authenticated through :func:`buddy.platform.dev.core.identity` /
    :func:`~buddy.platform.dev.core.conversation`.
``dev_router`` (optional)
    Its ``/dev`` routes, behind :func:`~buddy.platform.dev.core.admin`.
``tick`` (optional)
    ``async (platform) -> None``: scheduler work, run every second and whenever the dev
    clock is advanced.
``EVENT_GATES`` (optional)
    Event type → :class:`~buddy.platform.dev.core.EventGate`: what a turn commit answering
    an event of that type must pass, and what it counts once shown.
``REVISION`` (optional)
    ``(conn, conversation_id) -> int``: the part's revision of a conversation's state,
    which moves on with every change of it; the gateway stamps it on each event it
    delivers (``revisions``: part name → revision), read in the same transaction.
``PATH_CODES`` (optional)
    Path prefix → the error code a segment under it that is not UTF-8 answers (the code of
    the limit on that segment).
``STATUSES``, ``LINKS`` (optional)
    For the OpenAPI document: statuses operations answer beyond the common ones, and
    links from operations that make something to those that use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from fastapi import APIRouter

from buddy.errors import CapabilityError
from buddy.extend import registry
from buddy.platform.dev.core import EventGate, Platform, Revision

__all__ = ["CORE", "PlatformPart", "parts"]

#: The part every platform has, whatever its capabilities: conversations, turns, events.
CORE = "buddy.platform.dev.conversations"

Tick = Callable[[Platform], Awaitable[None]]


@dataclass(frozen=True)
class PlatformPart:
    """One part of the dev platform, as :func:`parts` checked it."""

    name: str
    tables: str
    routers: tuple[APIRouter, ...]
    tick: Tick | None = None
    gates: Mapping[str, EventGate] = field(default_factory=dict)
    revision: Revision | None = None
    path_codes: Mapping[str, str] = field(default_factory=dict)
    statuses: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    links: Mapping[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)


def _load(name: str, module: ModuleType) -> PlatformPart:
    where = f"{name} ({module.__name__})"

    def wrong(problem: str) -> CapabilityError:
        return CapabilityError(where, f"platform part: {problem}")

    tables = getattr(module, "TABLES", None)
    if not isinstance(tables, str):
        raise wrong("TABLES must be the DDL of its tables (a str)")
    router = getattr(module, "router", None)
    if not isinstance(router, APIRouter):
        raise wrong("router must be a fastapi.APIRouter")
    routers = [router]
    dev = getattr(module, "dev_router", None)
    if dev is not None:
        if not isinstance(dev, APIRouter):
            raise wrong("dev_router must be a fastapi.APIRouter")
        routers.append(dev)
    if any(r.on_startup or r.on_shutdown for r in routers):
        # Every app shares the routes as included once (app._included), without these.
        raise wrong("a router may have no startup or shutdown handlers: scheduler work is tick")
    tick = getattr(module, "tick", None)
    if tick is not None and not callable(tick):
        raise wrong("tick must be an async function of the platform")
    gates = getattr(module, "EVENT_GATES", {})
    if not all(isinstance(g, EventGate) for g in gates.values()):
        raise wrong("EVENT_GATES must map event types to EventGate")
    revision = getattr(module, "REVISION", None)
    if revision is not None and not callable(revision):
        raise wrong("REVISION must be a function of a connection and a conversation id")
    return PlatformPart(
        name,
        tables,
        tuple(routers),
        tick,
        gates,
        revision,
        getattr(module, "PATH_CODES", {}),
        getattr(module, "STATUSES", {}),
        getattr(module, "LINKS", {}),
    )


def parts() -> Iterator[PlatformPart]:
    """The core part, then each registered capability's ``platform`` part, in order.

    Raises:
        CapabilityError: A part cannot be imported or is wrong (naming its capability).
    """
    yield _load("conversation", importlib.import_module(CORE))
    for capability in registry():
        if not capability.platform:
            continue
        try:
            module = importlib.import_module(capability.platform)
        except ImportError as exc:
            raise CapabilityError(
                capability.name, f"platform part {capability.platform!r} cannot be imported: {exc}"
            ) from exc
        yield _load(capability.name, module)
