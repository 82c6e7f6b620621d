"""The compiled buddy: frozen dataclasses the runtime consumes.

Pydantic models describe what an author writes; these describe what the runtime holds —
every name resolved, every default filled in, every path absolute, every schema final.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

# A resolved model reference: defined with the models (which must not import compile).
from buddy.models.base import ModelSpec

if TYPE_CHECKING:
    from buddy.compile.persona import PersonaRenderer

__all__ = [
    "Blueprint",
    "DenyHook",
    "HandlerHook",
    "HandlerRef",
    "ModelSpec",
    "ToolSpec",
]

ToolKind = Literal["platform", "custom", "declarative"]
When = Literal["always", "proactive", "group", "private"]


@dataclass(frozen=True, slots=True)
class HandlerRef:
    """A plugin function, located without importing it.

    Attributes:
        reference: As written, ``module:function``.
        module: Dotted module name.
        function: Function name.
        file: The module's source file.
        root: The directory to put on ``sys.path`` to import ``module``; empty for
            installed entry-point packages.
        is_async: Whether the function is ``async def`` (``None`` when not a plain def).
    """

    reference: str
    module: str
    function: str
    file: Path
    root: Path | None
    is_async: bool | None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool the model can call.

    Attributes:
        name: The final tool name.
        kind: ``platform``, ``custom`` or ``declarative``.
        description: What the model reads (widget tools list each type's modules and fields).
        parameters: JSON Schema of the arguments (type object).
        label: What the user sees while it runs; empty for none.
        handler: The plugin function of a custom tool.
        uses: The operation of a declarative tool, e.g. ``memory.write``.
        templates: A declarative tool's templates by field (``key``, ``text``, ``reply`` …).
        ends_turn: Whether a successful call ends the turn (question and consent cards).
        timeout_seconds: Per-call limit for a custom tool's body, or ``None``.
        execute: A platform tool's body, ``module:function`` (its capability's).
        reads_data: A platform tool whose result may carry user data.
    """

    name: str
    kind: ToolKind
    description: str
    parameters: Mapping[str, Any]
    label: str = ""
    handler: HandlerRef | None = None
    uses: str | None = None
    templates: Mapping[str, str] = field(default_factory=dict)
    ends_turn: bool = False
    timeout_seconds: float | None = None
    execute: str = ""
    reads_data: bool = False


@dataclass(frozen=True, slots=True)
class DenyHook:
    """Refuse calls of ``tools`` in turns matching ``when``, telling the model ``reason``."""

    tools: tuple[str, ...]
    when: When
    reason: str


@dataclass(frozen=True, slots=True)
class HandlerHook:
    """A plugin hook function; ``tools`` limits which calls reach it (empty = all)."""

    handler: HandlerRef
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Blueprint:
    """A compiled buddy, ready for the runtime.

    Attributes:
        name: The manifest's slug.
        title: Display title (the name when none is given).
        description: One paragraph, or empty.
        manifest: The buddy's ``buddy.yaml``.
        profile: The selected profile, or ``None``.
        model: The model, after profile and override.
        model_origin: Where :attr:`model` came from: ``manifest``, ``profile`` (the
            selected profile's) or ``override`` (``--model``, ``BUDDY_MODEL``).
        manifest_model: The manifest's own model (``provider:name``), whatever was
            chosen over it.
        profiles: ``(name, provider:name)`` of each profile's model, in the manifest's
            order (for review: a profile's model shows in ``render`` and ``diff``).
        persona: Renders the system prompt for a conversation.
        tools: Every tool, in the manifest's order.
        before_hooks: ``before_tool_call`` rules, in order.
        after_hooks: ``after_tool_call`` rules, in order.
        sections: Each capability's manifest section, compiled (``Section.key`` → its
            compile function's value). The core reads none of them by name; a
            capability reads its own, typed, through its ``compiled.declared``.
        files: Every file the compiled buddy depends on (manifests, templates, traits,
            plugins, widget schemas, resources) — for reload and for review.
        facades: ``(attribute, module:Class)`` of each capability's part of the
            ``conversation`` object, from the registry at compile time.
        prompts: ``(section key, module:function)`` of each section persona templates see
            (:func:`buddy.extend.persona_layer`).
        placements: ``(section key, module:function)`` of each section's default place in
            the system prompt (``Section.placed``; :mod:`buddy.compile.placement`).
        layers: ``module:function`` of each capability's conversation layer
            (``Capability.layer``), from the registry at compile time.
    """

    name: str
    title: str
    description: str
    manifest: Path
    profile: str | None
    model: ModelSpec
    persona: PersonaRenderer
    tools: tuple[ToolSpec, ...]
    before_hooks: tuple[DenyHook | HandlerHook, ...]
    after_hooks: tuple[HandlerHook, ...]
    files: tuple[Path, ...]
    sections: Mapping[str, Any] = field(default_factory=dict)
    facades: tuple[tuple[str, str], ...] = ()
    prompts: tuple[tuple[str, str], ...] = ()
    placements: tuple[tuple[str, str], ...] = ()
    layers: tuple[str, ...] = ()
    model_origin: str = "manifest"
    manifest_model: str = ""
    profiles: tuple[tuple[str, str], ...] = ()

    @property
    def directory(self) -> Path:
        """The buddy's directory."""
        return self.manifest.parent

    def tool(self, name: str) -> ToolSpec:
        """The tool called ``name``.

        Raises:
            KeyError: No such tool.
        """
        for spec in self.tools:
            if spec.name == name:
                return spec
        raise KeyError(name)
