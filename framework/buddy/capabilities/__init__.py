"""Platform capabilities, one folder each, and the registry that plugs them into the core.

A capability is everything about one thing the platform can do — resources, question
cards, memory, user data, widgets, proactive service — kept in its own package
``buddy/capabilities/<name>/``, with the same file name for the same role in every one:

``__init__.py``
    What it is (a docstring): importing a part of it imports nothing else.
``capability.py``
    ``CAPABILITY``: the :class:`Capability` the registry takes (its name and parts).
``tools.py``
    Its model tools as :class:`PlatformTool` declarations: names, labels, descriptions
    and parameter schemas, built from its own limits. Standard library only: ``buddy
    validate`` reads them.
``execute.py``
    What each tool does at run time, bound to the ``conversation`` object; imported by
    the runtime on first use only.
``conversation.py``
    Its part of the ``conversation`` object (a :class:`~buddy.capabilities.turn.Bound`),
    with what the one-turn data-visibility rule does to it; it speaks to the platform
    through the ``PlatformClient`` transport.
``startup.py``
    What the platform must know before the buddy's first event.
``manifest.py``, ``compile.py``, ``compiled.py``, ``render.py``
    Its ``buddy.yaml`` section (:class:`Section`): the pydantic model, the checks that need
    more than one value and the compiled form (``compiled.py`` is standard library only: a
    cached start unpickles it), and what ``buddy render`` shows.
``wire.py``, ``platform.py``
    Its protocol bodies, and its part of the dev platform (tables, routes, scheduler
    work; :mod:`buddy.platform.dev.parts`).
``scenario.py``
    Its words in ``buddy test`` scenario files: step actions (:class:`StepAction`) and
    expectations (:class:`StepExpect`), run against the dev platform.
``playground.py``, ``playground.js``
    Its part of the playground: what its panel shows of a buddy (data in the page's
    state), and its script (its tab, its cards in the chat, how its events read).

The core — manifest, compile, runtime, the platform transport and dev app, the
playground, render — iterates :func:`registry` and names no capability's tool. The
registry and the part types are in :mod:`buddy.capabilities.plugin`, re-exported here and
imported on first use: a start from the compiled-buddy cache imports the compiled parts
and the ``conversation`` parts of capabilities, never the registry. The built-ins are
registered exactly as a third-party capability is: a module with ``CAPABILITY``, loaded
by :func:`register_module` (the built-ins by the names in :data:`BUILTINS`, their
``capability`` modules, like pytest's own plugins; others through the ``buddy.capabilities``
entry-point group, skipped while ``BUDDY_DISABLE_CAPABILITY_AUTOLOAD`` is set, as the
test suite does). Registration checks every part's form and names the capability and the
part that is missing or wrong (:class:`~buddy.errors.CapabilityError`), as pluggy does for
hook implementations; parts that would import more than the standard library are checked
where they are loaded (the dev platform's, a section's model).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buddy.capabilities.plugin import (
        AUTOLOAD_OFF,
        BUILTINS,
        ENTRY_POINT_GROUP,
        RESERVED_ATTRIBUTES,
        RESERVED_EXPECT_KEYS,
        RESERVED_SECTIONS,
        RESERVED_STEP_KEYS,
        Capability,
        EventKind,
        PlatformTool,
        Registry,
        Section,
        SectionContext,
        StepAction,
        StepExpect,
        ToolContext,
        Uses,
        data_tools,
        declarative_uses,
        event_kinds,
        facades,
        layers,
        obj,
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
    from buddy.capabilities.turn import Layer
    from buddy.compile.blueprint import Blueprint
    from buddy.models.base import Model
    from buddy.platform.api import PlatformClient

__all__ = [
    "AUTOLOAD_OFF",
    "BUILTINS",
    "ENTRY_POINT_GROUP",
    "RESERVED_ATTRIBUTES",
    "RESERVED_EXPECT_KEYS",
    "RESERVED_SECTIONS",
    "RESERVED_STEP_KEYS",
    "Capability",
    "EventKind",
    "PlatformTool",
    "Registry",
    "Section",
    "SectionContext",
    "StepAction",
    "StepExpect",
    "ToolContext",
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
    "prompts",
    "register_module",
    "registry",
    "resolve",
    "sections",
    "start",
    "step_actions",
    "step_expects",
]


def resolve(reference: str) -> Any:
    """The object a ``module:attribute`` reference of a capability part names (here, not
    in :mod:`~buddy.capabilities.plugin`: a cached start resolves the ``conversation``
    parts and needs no registry)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def persona_layer(blueprint: Blueprint, *, example: bool) -> dict[str, Any]:
    """What persona templates see of the buddy's sections (``memory``, ``character``,
    ``lore`` …), by key: a representative example (``buddy validate``, ``render``,
    ``diff``), or a conversation's before anything is known. Read from the blueprint, so
    a start from the cache needs no registry."""
    return {
        key: resolve(reference)(blueprint.sections[key], example)
        for key, reference in blueprint.prompts
        if key in blueprint.sections
    }


def conversation_layers(
    blueprint: Blueprint, client: PlatformClient, model: Model, layer_model: Model | None
) -> tuple[Layer, ...]:
    """The conversation layers of the buddy's capabilities (``Capability.layer``) that it
    declares something for, made for one running buddy. Read from the blueprint, so a
    start from the cache needs no registry."""
    made = (resolve(r)(blueprint, client, model, layer_model) for r in blueprint.layers)
    return tuple(layer for layer in made if layer is not None)


def __getattr__(name: str) -> Any:
    if name in __all__:
        from buddy.capabilities import plugin

        value = getattr(plugin, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
