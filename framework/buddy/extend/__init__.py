"""The contract between buddy's core and its capabilities, below both.

A capability — a built-in folder under ``buddy/capabilities/`` or a third-party package —
is a module with ``CAPABILITY``, a :class:`Capability` whose parts name their code as
``module:function`` references. The core (manifest, compile, runtime, platform, testing,
models) imports this package and never ``buddy.capabilities``: it reaches every
capability through :func:`registry` and through the references a compiled buddy keeps.

- :mod:`buddy.extend.contract` — :class:`Capability` and its parts, and their form checks.
- :mod:`buddy.extend.refs` — :data:`~buddy.extend.refs.HOOKS`, the signature of every
  hook, and :func:`~buddy.extend.refs.verify`, which checks a capability's references
  against them from the sources when it registers (imports stay lazy).
- :mod:`buddy.extend.manager` — the registered capabilities and what the core asks of
  them (sections, tools, event kinds, layers …).
- :mod:`buddy.extend.turn` — what every ``conversation`` part and conversation layer is
  given: :class:`~buddy.extend.turn.Bound`, :class:`~buddy.extend.turn.TurnState`,
  :class:`~buddy.extend.turn.Layer`.

This package imports only :mod:`buddy.errors` and the standard library. Its names are
re-exported here and imported on first use: a start from the compiled-buddy cache needs
:func:`resolve`, :func:`persona_layer` and :func:`conversation_layers` only, never the
registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.extend.contract import (
        RESERVED_ATTRIBUTES,
        RESERVED_EXPECT_KEYS,
        RESERVED_SECTIONS,
        RESERVED_STEP_KEYS,
        Capability,
        EventKind,
        PlatformTool,
        Section,
        SectionContext,
        StepAction,
        StepExpect,
        ToolContext,
        Uses,
        obj,
    )
    from buddy.extend.manager import (
        AUTOLOAD_OFF,
        BUILTINS,
        ENTRY_POINT_GROUP,
        Registry,
        data_tools,
        declarative_uses,
        event_kinds,
        facades,
        layers,
        pages,
        panels,
        prompts,
        register_module,
        registry,
        sections,
        start,
        step_actions,
        step_expects,
    )
    from buddy.extend.refs import HOOKS, Hook, verify
    from buddy.extend.turn import DATA_READ_REFUSAL, Bound, Injected, Layer, Layered, TurnState
    from buddy.models.base import Model
    from buddy.platform.api import PlatformClient

__all__ = [
    "AUTOLOAD_OFF",
    "BUILTINS",
    "DATA_READ_REFUSAL",
    "ENTRY_POINT_GROUP",
    "HOOKS",
    "RESERVED_ATTRIBUTES",
    "RESERVED_EXPECT_KEYS",
    "RESERVED_SECTIONS",
    "RESERVED_STEP_KEYS",
    "Bound",
    "Capability",
    "EventKind",
    "Hook",
    "Injected",
    "Layer",
    "Layered",
    "PlatformTool",
    "Registry",
    "Section",
    "SectionContext",
    "StepAction",
    "StepExpect",
    "ToolContext",
    "TurnState",
    "Uses",
    "conversation_layers",
    "data_tools",
    "declarative_uses",
    "event_kinds",
    "facades",
    "layers",
    "obj",
    "pages",
    "panels",
    "persona_layer",
    "placements",
    "prompts",
    "register_module",
    "registry",
    "resolve",
    "sections",
    "start",
    "step_actions",
    "step_expects",
    "verify",
]

_HOMES = {
    "contract": (
        "RESERVED_ATTRIBUTES RESERVED_EXPECT_KEYS RESERVED_SECTIONS RESERVED_STEP_KEYS "
        "Capability EventKind PlatformTool Section SectionContext StepAction StepExpect "
        "ToolContext Uses obj"
    ),
    "refs": "HOOKS Hook verify",
    "manager": (
        "AUTOLOAD_OFF BUILTINS ENTRY_POINT_GROUP Registry data_tools declarative_uses "
        "event_kinds facades layers pages panels placements prompts register_module registry sections "
        "start step_actions step_expects"
    ),
    "turn": "DATA_READ_REFUSAL Bound Injected Layer Layered TurnState",
}
_HOME = {name: module for module, names in _HOMES.items() for name in names.split()}


def resolve(reference: str) -> Any:
    """The object a ``module:attribute`` reference names, importing its module."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def persona_layer(
    blueprint: Blueprint, *, example: bool, given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What persona templates see of the buddy's sections (``memory``, ``character``,
    ``lore`` …), by key: a representative example (``buddy validate``, ``render``,
    ``diff``), or a conversation's before anything is known — with what a turn's layers
    ``given`` (by key) in place of a section's own, which is then not computed (the lore
    scan of a turn runs once). Read from the blueprint, so a start from the cache needs
    no registry."""
    given = given or {}
    context = {
        key: resolve(reference)(blueprint.sections[key], example)
        for key, reference in blueprint.prompts
        if key in blueprint.sections and key not in given
    }
    context.update(given)
    return context


def conversation_layers(
    blueprint: Blueprint, client: PlatformClient, model: Model, layer_model: Model | None
) -> tuple[Layer, ...]:
    """The conversation layers of the buddy's capabilities (``Capability.layer``) that it
    declares something for, made for one running buddy. Read from the blueprint, so a
    start from the cache needs no registry."""
    made = (resolve(r)(blueprint, client, model, layer_model) for r in blueprint.layers)
    return tuple(layer for layer in made if layer is not None)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"buddy.extend.{module}"), name)
    globals()[name] = value
    return value
