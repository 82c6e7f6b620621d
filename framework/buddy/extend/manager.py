"""The registry: the capabilities of this process, registered in order — the built-ins
named in :data:`BUILTINS`, then the ``buddy.capabilities`` entry points — each checked
against the contract as it registers (:func:`buddy.extend.contract.problems`), and what the
core asks of them all (their sections, tools, event kinds, layers …).

The built-ins are registered exactly as a third-party capability is, by module name, as
pytest loads its own plugins: nothing here imports ``buddy.capabilities`` but through
:func:`register_module`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from buddy.errors import CapabilityError
from buddy.extend import resolve
from buddy.extend.contract import (
    Capability,
    EventKind,
    PlatformTool,
    Section,
    StepAction,
    StepExpect,
    Uses,
    claims,
    problems,
    references,
)
from buddy.extend.refs import verify

if TYPE_CHECKING:
    from pathlib import Path

    from buddy.compile.blueprint import Blueprint
    from buddy.platform.api import PlatformClient

__all__ = [
    "AUTOLOAD_OFF",
    "BUILTINS",
    "ENTRY_POINT_GROUP",
    "Registry",
    "data_tools",
    "declarative_uses",
    "event_kinds",
    "facades",
    "layers",
    "pages",
    "panels",
    "placements",
    "prompts",
    "register_module",
    "registry",
    "sections",
    "start",
    "step_actions",
    "step_expects",
]

#: The built-in capabilities, in the order their tools are listed (schema, docs) and their
#: manifest sections rendered (as `buddy render` has always shown them: proactive, data,
#: resources, widget types).
BUILTINS = (
    "buddy.capabilities.questions.capability",
    "buddy.capabilities.memory.capability",
    "buddy.capabilities.character.capability",
    "buddy.capabilities.lore.capability",
    "buddy.capabilities.proactive.capability",
    "buddy.capabilities.data.capability",
    "buddy.capabilities.resources.capability",
    "buddy.capabilities.widgets.capability",
)
#: The entry-point group third-party capabilities register under.
ENTRY_POINT_GROUP = "buddy.capabilities"
#: Set (to anything) to skip the entry points: only the built-ins (tests, reproducible runs).
AUTOLOAD_OFF = "BUDDY_DISABLE_CAPABILITY_AUTOLOAD"


@dataclass
class Registry:
    """The registered capabilities and their tools, by name."""

    capabilities: dict[str, Capability] = field(default_factory=dict)
    tools: dict[str, PlatformTool] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # tool name -> capability name
    # What one capability alone may have ("tool 'x'", "section 'data'" …) -> its owner.
    claimed: dict[str, str] = field(default_factory=dict)

    def add(self, capability: Capability, where: str, *, verified: bool = False) -> None:
        """Register ``capability`` (from ``where``, for errors), checking every part's form
        and, when ``verified``, its code references (:func:`register_module`).

        Raises:
            CapabilityError: A part is missing or wrong, or a name is taken.
        """
        for problem in problems(capability, where):
            raise CapabilityError(where, problem)
        for problem in verify(references(capability)) if verified else ():
            raise CapabilityError(where, problem)
        if capability.name in self.capabilities:
            raise CapabilityError(where, f"the name {capability.name!r} is registered already")
        claimed = list(claims(capability))
        for claim in claimed:
            owner = self.claimed.get(claim)
            if owner is not None:
                raise CapabilityError(
                    where, f"{claim} is registered already by capability {owner!r}"
                )
        self.capabilities[capability.name] = capability
        self.claimed.update(dict.fromkeys(claimed, capability.name))
        for tool in capability.tools:
            self.tools[tool.name] = tool
            self.owners[tool.name] = capability.name

    def tool_names(self) -> tuple[str, ...]:
        """Every platform tool's name, in registration order."""
        return tuple(self.tools)

    def __iter__(self) -> Iterator[Capability]:
        return iter(self.capabilities.values())


def register_module(
    target: Registry, module: ModuleType | str, *, verified: bool = True
) -> Capability:
    """Register the ``CAPABILITY`` of ``module`` (a module or its dotted name), checking
    its parts' form and, when ``verified``, every code reference against its hook's
    signature (:func:`buddy.extend.refs.verify`: from the sources, importing nothing).

    The built-ins register with ``verified=False`` at every start (their references are
    verified by the test suite, ``tests/test_capabilities.py``, and reading ~50 sources
    would cost a cold ``buddy validate`` a third of its time); a third-party capability is
    always verified.

    Raises:
        CapabilityError: The module cannot be imported, has no ``CAPABILITY``, a part of
            it is wrong, or a reference names a missing module or function, or one whose
            signature is not its hook's.
    """
    name = module if isinstance(module, str) else module.__name__
    if isinstance(module, str):
        try:
            module = importlib.import_module(module)
        except ImportError as exc:
            raise CapabilityError(name, f"cannot be imported: {exc}") from exc
    capability: Any = getattr(module, "CAPABILITY", None)
    if capability is None:
        raise CapabilityError(name, "has no CAPABILITY (a buddy.extend.Capability)")
    target.add(capability, name, verified=verified)
    assert isinstance(capability, Capability)  # add() refused anything else
    return capability


def _entry_points() -> Iterator[tuple[str, str]]:
    from buddy.extend.entrypoints import entry_points

    yield from entry_points(ENTRY_POINT_GROUP)


@cache
def registry() -> Registry:
    """The capabilities of this process: the built-ins, then the entry points (unless
    :data:`AUTOLOAD_OFF` is set), each checked as it registers.

    Raises:
        CapabilityError: A capability is broken (naming it and the part).
    """
    found = Registry()
    for module in BUILTINS:
        register_module(found, module, verified=False)
    if not os.environ.get(AUTOLOAD_OFF):
        for point, value in _entry_points():
            module = value.partition(":")[0]
            if module in BUILTINS:
                continue  # an old install listing a built-in: it is registered already
            try:
                register_module(found, module)
            except CapabilityError as exc:
                raise CapabilityError(f"entry point {point!r} ({value})", exc.problem) from exc
    return found


async def start(client: PlatformClient, blueprint: Blueprint) -> None:
    """Run every registered capability's ``startup`` for ``blueprint``, in order.

    Raises:
        PlatformError: An upload failed; the buddy must not start.
    """
    for capability in registry():
        if capability.startup:
            await resolve(capability.startup)(client, blueprint)


def facades() -> tuple[tuple[str, str], ...]:
    """``(attribute, module:Class)`` of every registered ``conversation`` part, in order
    (compiled into each blueprint, so a runtime started from the cache needs no registry)."""
    return tuple((c.attribute, c.facade) for c in registry() if c.attribute)


def sections() -> tuple[Section, ...]:
    """Every registered manifest section, in registry order."""
    return tuple(c.section for c in registry() if c.section is not None)


def prompts() -> tuple[tuple[str, str], ...]:
    """``(section key, module:function)`` of every section persona templates see, in
    registry order (compiled into each blueprint, as :func:`facades` are)."""
    return tuple((s.key, s.prompt) for s in sections() if s.prompt)


def placements() -> tuple[tuple[str, str], ...]:
    """``(section key, module:function)`` of every section's default place in the system
    prompt (``Section.placed``), in registry order (compiled into each blueprint)."""
    return tuple((s.key, s.placed) for s in sections() if s.placed)


def layers(present: Iterable[str]) -> tuple[str, ...]:
    """``module:function`` of the conversation layers of the capabilities whose section
    is among ``present`` (a blueprint's section keys), in registry order, each once."""
    keys = set(present)
    found = (c.layer for c in registry() if c.layer and c.section and c.section.key in keys)
    return tuple(dict.fromkeys(found))


def declarative_uses() -> tuple[Uses, ...]:
    """Every registered declarative tool kind, in registry order."""
    return tuple(use for capability in registry() for use in capability.uses)


def step_actions() -> tuple[StepAction, ...]:
    """Every registered scenario step action, in registry order."""
    return tuple(action for capability in registry() for action in capability.actions)


def step_expects() -> tuple[StepExpect, ...]:
    """Every registered scenario ``expect:`` key, in registry order."""
    return tuple(expect for capability in registry() for expect in capability.expects)


def event_kinds() -> dict[str, EventKind]:
    """Every registered event kind, by event type."""
    return {kind.type: kind for capability in registry() for kind in capability.events}


def panels(blueprint: Blueprint) -> dict[str, Any]:
    """Every registered capability's playground panel data for ``blueprint``."""
    shown: dict[str, Any] = {}
    for capability in registry():
        if capability.playground:
            shown.update(resolve(capability.playground)(blueprint))
    return shown


def pages() -> dict[str, Path]:
    """Every registered capability's playground script, by capability name (the file,
    whether or not it exists: the playground reports a missing one)."""
    from importlib.resources import files
    from pathlib import Path

    found: dict[str, Path] = {}
    for capability in registry():
        if capability.page:
            package, _, name = capability.page.partition(":")
            found[capability.name] = Path(str(files(package) / name))
    return found


def data_tools() -> frozenset[str]:
    """The registered platform tools whose results may carry user data."""
    return frozenset(t.name for t in registry().tools.values() if t.reads_data)
