"""What a capability is — :class:`Capability` and its parts — and the registry that plugs
the registered capabilities into the core (:mod:`buddy.capabilities` says how a folder is
laid out and re-exports every name here)."""

from __future__ import annotations

import copy
import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from buddy.capabilities import resolve
from buddy.errors import CapabilityError

if TYPE_CHECKING:
    from pathlib import Path

    from buddy.compile.blueprint import Blueprint
    from buddy.errors import Issue
    from buddy.manifest.yamlio import Document
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
    "data_tools",
    "declarative_uses",
    "event_kinds",
    "facades",
    "obj",
    "pages",
    "panels",
    "prompts",
    "register_module",
    "registry",
    "resolve",
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

#: The keys of ``buddy.yaml`` that are the manifest's own, whatever its capabilities (and
#: the compiled view's own sections).
RESERVED_SECTIONS = frozenset(
    {
        "version",
        "name",
        "title",
        "description",
        "extends",
        "model",
        "persona",
        "tools",
        "hooks",
        "profiles",
        "buddy",
        "profile",
        "conversation",
        "system_prompt",
        "files",
    }
)
#: The step keys and ``expect:`` keys of scenario files that are the format's own.
RESERVED_STEP_KEYS = frozenset({"user", "as", "click", "advance", "model", "expect"})
RESERVED_EXPECT_KEYS = frozenset(
    {"reply", "no_reply", "messages", "tool_called", "tool_result", "denied", "question"}
)
#: What ``conversation`` has of its own, whatever its capabilities.
RESERVED_ATTRIBUTES = frozenset({"id", "kind", "client", "resource", "members", "turn", "parts"})
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_TOOL = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_EXECUTE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_PAGE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[\w-]+\.js$")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool's description and parameters may depend on, per buddy.

    Attributes:
        sections: The buddy's compiled manifest sections, by key (the widget tools list
            each widget type's modules; the subscription tool lists the declared
            subscriptions, which the model may subscribe by key alone).
    """

    sections: Mapping[str, Any] = field(default_factory=dict)


Text = str | Callable[[ToolContext], str]
Schema = Mapping[str, Any] | Callable[[ToolContext], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class PlatformTool:
    """One model tool a capability offers, as a manifest lists it by name.

    Attributes:
        name: The tool name (``^[a-z][a-z0-9_]*$``), unique across the registry.
        label: What a user interface shows while it runs (``正在…``).
        description: What the model reads: text, or a function of the buddy's
            :class:`ToolContext`.
        parameters: The JSON Schema of its arguments, or a function of the context.
        execute: ``module:function`` of the body, ``async (call_id, params,
            conversation) -> ToolResult``; imported on first use.
        ends_turn: The turn stops after the step that called it (a card waits for the user).
        reads_data: Its result may carry user data: the record keeps dataset statuses only.
    """

    name: str
    label: str
    description: Text
    parameters: Schema
    execute: str
    ends_turn: bool = False
    reads_data: bool = False

    def describe(self, context: ToolContext) -> str:
        """The description for a buddy."""
        return self.description(context) if callable(self.description) else self.description

    def schema(self, context: ToolContext) -> dict[str, Any]:
        """The parameter schema for a buddy (a fresh copy)."""
        value = self.parameters(context) if callable(self.parameters) else self.parameters
        return copy.deepcopy(dict(value))


@dataclass(frozen=True, slots=True)
class Section:
    """What a capability adds to ``buddy.yaml``: one top-level key, its check, its
    compiled form and what ``buddy render`` shows of it.

    Attributes:
        key: The manifest key (``^[a-z][a-z0-9_]*$``), unique across the registry and not
            one of the manifest's own.
        model: ``module:attribute`` of the type of its value: a pydantic model (strict,
            like every manifest model) or an annotated type (a folder name); standard
            library and pydantic only: ``buddy validate`` imports it.
        default: The value of an absent key (a folder's usual name); ``None``: an absent
            key is ``None``.
        compile: ``module:function``, ``(context: SectionContext) -> value``: the checks
            that need more than the value (other files, the whole manifest), reported on
            the context with their location, and the compiled value the runtime reads
            (``blueprint.sections[key]``); ``None``: the buddy has none of it (it is
            neither in ``blueprint.sections`` nor rendered).
        render: ``module:function``, ``(value, root: Path) -> JSON data``: its part of the
            compiled view (``view(blueprint)[key]``).
        heading: Its heading in the Markdown view; ``{count}`` in it stands for the
            number of items of the rendered part (``Resources ({count})``).
        markdown: ``module:function``, ``(shown) -> list[str]``: the Markdown blocks of
            the rendered part; ``""``: one JSON block.
        codes: The error codes its model's validators raise (``PydanticCustomError``
            types), reported as they are instead of ``invalid-value``.
        prompt: ``module:function``, ``(value, example: bool) -> JSON data``: what persona
            templates see of it under its key (``{{ memory.card }}``): with ``example``,
            a fixed, representative one (``buddy validate`` and ``render`` show the prompt
            with it); without, a conversation's before anything is known. ``""``: none.
    """

    key: str
    model: str
    compile: str
    render: str
    heading: str
    markdown: str = ""
    codes: frozenset[str] = frozenset()
    default: str | None = None
    prompt: str = ""


class SectionContext(Protocol):
    """What a section's compile function is given (the compiler implements it).

    Attributes:
        key: The section's manifest key.
        value: Its validated model, or ``None`` when the manifest has no such key.
        doc: The merged manifest document (for locating problems in it).
        directory: The buddy's folder.
        root: The project root.
    """

    key: str
    value: Any
    doc: Document
    directory: Path
    root: Path

    def declared_in(self) -> Path:
        """The manifest file that wrote the key (an ``extends`` base, say)."""
        ...

    def error(
        self,
        path: tuple[str | int, ...],
        code: str,
        message: str,
        hint: str = "",
        *,
        key: bool = False,
    ) -> None:
        """Report a problem at ``path`` inside the section (``()``: the key itself)."""
        ...

    def report(self, issue: Issue) -> None:
        """Report a problem located elsewhere (another file)."""
        ...

    def depends_on(self, path: Path) -> None:
        """Another file the compiled buddy depends on (reload and review watch it)."""
        ...

    def inside(self, path: Path) -> bool:
        """Whether ``path`` (followed through symlinks) is inside the project."""
        ...

    def outside_file(self, file: Path, name: str) -> Issue:
        """``file-outside-project`` for ``file``, shown as ``name``."""
        ...

    def shared(self, name: str) -> Path | None:
        """The shared file ``name`` (a relative path such as ``relations/debt.yaml``) on
        the persona search path, as trait files are found: the buddy's folder, the folder
        of the manifest that wrote the key, each ``personas/`` up to the project root,
        installed packs; ``None`` when none has it."""
        ...

    def search_path(self) -> list[Path]:
        """Where :meth:`shared` looks, in order (for hints)."""
        ...

    def folder(self) -> Path | None:
        """The directory the section's value names (relative to the manifest that wrote
        it), checked to be inside the project; ``None`` (reported when the manifest named
        it) when it is missing or outside."""
        ...


@dataclass(frozen=True, slots=True)
class Uses:
    """A declarative tool kind a capability offers: a manifest tool with ``uses: <name>``
    whose fields are templates of the call's arguments, and no Python of its own.

    Attributes:
        name: The ``uses`` value (``memory.write``), unique across the registry.
        model: ``module:Class`` of the tool's manifest model, a subclass of
            :class:`buddy.manifest.schema.DeclarativeTool` whose ``TEMPLATES`` names the
            fields that are templates (standard library and pydantic only).
        execute: ``module:function``, ``async (rendered, conversation) -> ToolResult |
            None``: ``rendered`` holds each template field rendered with the arguments;
            ``None`` answers the ``reply`` template.
        reply: The ``reply`` template when the manifest gives none (``""``: none).
        schemas: ``module:attribute`` of ``{field: JSON Schema}``: a parameter derived from
            a template that is exactly ``{{ name }}`` of that field gets that schema (a
            memory key's rules); others are strings.
    """

    name: str
    model: str
    execute: str
    reply: str = ""
    schemas: str = ""


@dataclass(frozen=True, slots=True)
class EventKind:
    """How the runtime turns a platform event of one type into a turn.

    Attributes:
        type: The event type (``proactive``, ``consent_result`` …).
        user: ``module:function``, ``(payload) -> str``: what the model reads as the turn's
            user message.
        history: What stands for the turn's user message in later turns' history.
        prompt: ``module:function``, ``(blueprint) -> str``: appended to the system prompt
            for this turn (``""``: nothing).
        unasked: Nobody asked for this turn (a proactive run): the turn state says so
            (``when: proactive`` hooks, ``proactive.is_running()``), and a reply that is
            empty, :attr:`skip`, or a failure says nothing.
        skip: For an unasked turn: the reply that means "nothing worth saying".
    """

    type: str
    user: str
    history: str
    prompt: str = ""
    unasked: bool = False
    skip: str = ""


@dataclass(frozen=True, slots=True)
class StepAction:
    """A step action a capability adds to ``buddy test`` scenario files (``grant:``).

    Attributes:
        key: The step key (``^[a-z][a-z0-9_]*$``), unique across the registry and not one
            of the format's own.
        model: ``module:attribute`` of the type of its value (pydantic, strict).
        description: What it does, for the JSON Schema and the docs.
        run: ``module:function``, ``async (value, path, run: buddy.testing.parts.StepRun)
            -> None``: do it on the dev platform (``run.fail(path, message)`` for a step
            the conversation cannot take); ``path`` is the value's in the file.
        check: ``module:function``, ``(value, path, check: buddy.testing.parts.StepCheck)
            -> None``: the rules that need the scenario or the buddy (``""``: none).
        turn: It can start a turn, so the step may script ``model:`` responses.
        modifies: It goes with the step's action instead of being one (``extract:``
            scripts what the turn that action starts will get): a step may have it
            besides its action, which must start a turn; it runs just before it.
    """

    key: str
    model: str
    description: str
    run: str
    check: str = ""
    turn: bool = False
    modifies: bool = False


@dataclass(frozen=True, slots=True)
class StepExpect:
    """An ``expect:`` key a capability adds to scenario files (``widget:``, ``memory:``).

    Attributes:
        key: The key, unique across the registry and not one of the format's own.
        model: ``module:attribute`` of the type of its value (pydantic, strict).
        description: What must hold, for the JSON Schema and the docs.
        verify: ``module:function``, ``(value, seen, state, exact) -> (failures, notes)``:
            the :class:`~buddy.testing.expectations.Miss` es, their paths relative to the
            ``expect:`` mapping (so starting with the key); ``exact`` is ``False`` against
            a real model (skip exact comparisons of model-written text, with a note).
        state: ``module:function``, ``async (run, seen) -> value``: what it reads of the
            platform after the step (``run``: a :class:`buddy.testing.parts.StepRun`),
            fetched once per step for every key that names the same function (``""``:
            ``state`` is ``None``).
        check: ``module:function``, ``(value, path, check: buddy.testing.parts.StepCheck)
            -> None``: the rules that need the buddy (``""``: none).
    """

    key: str
    model: str
    description: str
    verify: str
    state: str = ""
    check: str = ""


@dataclass(frozen=True, slots=True)
class Capability:
    """A platform capability as it registers.

    Attributes:
        name: Its id (``^[a-z][a-z0-9_]*$``), the folder's name for a built-in.
        title: What it is, for docs and errors.
        tools: The model tools it offers, in the order they are listed.
        startup: ``module:function`` run when a buddy connects to a platform, before
            its first event: ``async (client, blueprint) -> None`` (uploads what the
            platform must know of the buddy); ``""`` for nothing. A failure stops the
            start.
        attribute: The name of its part of the ``conversation`` object
            (``conversation.memory``); ``""`` for none.
        facade: ``module:Class`` of that part: a :class:`~buddy.capabilities.turn.Bound`
            made with ``(client, conversation_id)`` and, in the runtime, configured
            with the buddy's blueprint (``Bound.configure``).
        section: What it adds to ``buddy.yaml``, if anything.
        events: The platform event types it turns into turns, besides the user's messages.
        uses: The declarative tool kinds it offers (``uses: memory.write`` …).
        playground: ``module:function``, ``(blueprint) -> {key: JSON data}``: what its
            panel in the playground shows of the buddy, merged into the buddy's entry of
            the page's state (``widgets``, ``subscriptions`` …); ``""`` for nothing.
        page: ``package:file.js``: its script in the playground page, a file of that
            package, registering through ``window.playground`` (``panel``, ``card``,
            ``event``; :mod:`buddy.playground.app`); ``""`` for none.
        platform: The module of its dev-platform part (tables, routes, scheduler work;
            :mod:`buddy.platform.dev.parts` says what it holds), imported only by the dev
            platform; ``""`` for none.
        actions: Its step actions in scenario files.
        expects: Its ``expect:`` keys in scenario files.
        layer: ``module:function`` of its conversation layer: ``(blueprint, client, model,
            layer_model) -> layer | None``, made once per running buddy (``None``: the
            buddy declares nothing it acts on); compiled into the buddies that have its
            section (capabilities that share one layer name the same function: it is
            made once). A layer takes part in every turn
            (:class:`buddy.capabilities.turn.Layer`): it hears each event before the
            turn, gives persona templates their live context and the system prompt its
            part, and hears each committed turn. ``""`` for none.
    """

    name: str
    title: str
    tools: tuple[PlatformTool, ...] = ()
    startup: str = ""
    platform: str = ""
    attribute: str = ""
    facade: str = ""
    section: Section | None = None
    playground: str = ""
    page: str = ""
    events: tuple[EventKind, ...] = ()
    uses: tuple[Uses, ...] = ()
    actions: tuple[StepAction, ...] = ()
    expects: tuple[StepExpect, ...] = ()
    layer: str = ""


@dataclass
class Registry:
    """The registered capabilities and their tools, by name."""

    capabilities: dict[str, Capability] = field(default_factory=dict)
    tools: dict[str, PlatformTool] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # tool name -> capability name
    # What one capability alone may have ("tool 'x'", "section 'data'" …) -> its owner.
    claimed: dict[str, str] = field(default_factory=dict)

    def add(self, capability: Capability, where: str) -> None:
        """Register ``capability`` (from ``where``, for errors), checking every part.

        Raises:
            CapabilityError: A part is missing or wrong, or a name is taken.
        """
        for problem in _problems(capability, where):
            raise CapabilityError(where, problem)
        if capability.name in self.capabilities:
            raise CapabilityError(where, f"the name {capability.name!r} is registered already")
        claims = list(_claims(capability))
        for claim in claims:
            owner = self.claimed.get(claim)
            if owner is not None:
                raise CapabilityError(
                    where, f"{claim} is registered already by capability {owner!r}"
                )
        self.capabilities[capability.name] = capability
        self.claimed.update(dict.fromkeys(claims, capability.name))
        for tool in capability.tools:
            self.tools[tool.name] = tool
            self.owners[tool.name] = capability.name

    def tool_names(self) -> tuple[str, ...]:
        """Every platform tool's name, in registration order."""
        return tuple(self.tools)

    def __iter__(self) -> Iterator[Capability]:
        return iter(self.capabilities.values())


def _claims(capability: Capability) -> Iterator[str]:
    """What ``capability`` claims that no other may: its manifest section, declarative
    kinds, event types, ``conversation`` attribute and tools."""
    if capability.section is not None:
        yield f"section {capability.section.key!r}"
    yield from (f"uses {use.name!r}" for use in capability.uses)
    yield from (f"event type {kind.type!r}" for kind in capability.events)
    yield from (f"step action {action.key!r}" for action in capability.actions)
    yield from (f"expect key {expect.key!r}" for expect in capability.expects)
    if capability.attribute:
        yield f"conversation.{capability.attribute}"
    yield from (f"tool {tool.name!r}" for tool in capability.tools)


def _problems(capability: Any, where: str) -> Iterator[str]:
    if not isinstance(capability, Capability):
        yield f"CAPABILITY must be a buddy.capabilities.Capability, not {type(capability).__name__}"
        return
    if not _NAME.match(capability.name):
        yield f"name {capability.name!r} must match {_NAME.pattern}"
    if not capability.title:
        yield "title is empty"
    if not isinstance(capability.tools, tuple):
        yield "tools must be a tuple of PlatformTool"
        return
    yield from _tool_problems(capability.tools)
    yield from _part_problems(capability)
    if capability.section is not None:
        yield from _section_problems(capability.section)


def _tool_problems(tools: tuple[Any, ...]) -> Iterator[str]:
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        part = f"tools[{index}]"
        if not isinstance(tool, PlatformTool):
            yield f"{part} must be a PlatformTool, not {type(tool).__name__}"
            continue
        if not _TOOL.match(tool.name):
            yield f"{part}: name {tool.name!r} must match {_TOOL.pattern}"
        if tool.name in seen:
            yield f"{part}: tool {tool.name!r} appears twice"
        seen.add(tool.name)
        if not tool.label:
            yield f"{part} ({tool.name}): label is empty"
        if not (callable(tool.description) or tool.description):
            yield f"{part} ({tool.name}): description is empty"
        if not (callable(tool.parameters) or isinstance(tool.parameters, Mapping)):
            yield f"{part} ({tool.name}): parameters must be a JSON Schema mapping or a function"
        if not _EXECUTE.match(tool.execute):
            yield f"{part} ({tool.name}): execute {tool.execute!r} must be 'module:function'"


def _part_problems(capability: Capability) -> Iterator[str]:
    for part in ("startup", "playground", "layer"):
        reference = getattr(capability, part)
        if reference and not _EXECUTE.match(reference):
            yield f"{part} {reference!r} must be 'module:function'"
    if capability.page and not _PAGE.match(capability.page):
        yield f"page {capability.page!r} must be 'package:file.js'"
    if capability.platform and not _MODULE.match(capability.platform):
        yield f"platform {capability.platform!r} must be a dotted module name"
    if bool(capability.attribute) != bool(capability.facade):
        yield "attribute and facade go together: name both or neither"
    elif capability.attribute and not _NAME.match(capability.attribute):
        yield f"attribute {capability.attribute!r} must match {_NAME.pattern}"
    elif capability.attribute in RESERVED_ATTRIBUTES:
        yield f"attribute {capability.attribute!r} is the conversation's own"
    if capability.facade and not _EXECUTE.match(capability.facade):
        yield f"facade {capability.facade!r} must be 'module:Class'"
    for index, use in enumerate(capability.uses):
        if not isinstance(use, Uses):
            yield f"uses[{index}] must be a Uses, not {type(use).__name__}"
            continue
        for part in ("model", "execute") + (("schemas",) if use.schemas else ()):
            if not _EXECUTE.match(getattr(use, part)):
                yield f"uses[{index}] ({use.name}): {part} {getattr(use, part)!r} must be 'module:attribute'"
    for index, kind in enumerate(capability.events):
        if not isinstance(kind, EventKind):
            yield f"events[{index}] must be an EventKind, not {type(kind).__name__}"
            continue
        for part in ("user",) + (("prompt",) if kind.prompt else ()):
            if not _EXECUTE.match(getattr(kind, part)):
                yield f"events[{index}] ({kind.type}): {part} {getattr(kind, part)!r} must be 'module:function'"
        if not kind.history:
            yield f"events[{index}] ({kind.type}): history is empty"
    yield from _scenario_problems(capability)


def _scenario_problems(capability: Capability) -> Iterator[str]:
    kinds = (
        ("actions", StepAction, RESERVED_STEP_KEYS, ("model", "run", "check")),
        ("expects", StepExpect, RESERVED_EXPECT_KEYS, ("model", "verify", "state", "check")),
    )
    for name, kind, reserved, parts in kinds:
        for index, item in enumerate(getattr(capability, name)):
            if not isinstance(item, kind):
                yield f"{name}[{index}] must be a {kind.__name__}, not {type(item).__name__}"
                continue
            where = f"{name}[{index}] ({item.key})"
            if not _NAME.match(item.key):
                yield f"{where}: key must match {_NAME.pattern}"
            elif item.key in reserved:
                yield f"{where}: key is the scenario format's own"
            if not item.description:
                yield f"{where}: description is empty"
            for part in parts:
                reference = getattr(item, part)
                if (reference or part in ("model", "run", "verify")) and not _EXECUTE.match(
                    reference
                ):
                    yield f"{where}: {part} {reference!r} must be 'module:attribute'"


def _section_problems(section: Any) -> Iterator[str]:
    if not isinstance(section, Section):
        yield f"section must be a buddy.capabilities.Section, not {type(section).__name__}"
        return
    if not _NAME.match(section.key):
        yield f"section: key {section.key!r} must match {_NAME.pattern}"
    elif section.key in RESERVED_SECTIONS:
        yield f"section: key {section.key!r} is the manifest's own"
    optional = tuple(p for p in ("markdown", "prompt") if getattr(section, p))
    for part in ("model", "compile", "render", *optional):
        reference = getattr(section, part)
        if not _EXECUTE.match(reference):
            yield f"section ({section.key}): {part} {reference!r} must be 'module:attribute'"
    if not section.heading:
        yield f"section ({section.key}): heading is empty"


def register_module(target: Registry, module: ModuleType | str) -> Capability:
    """Register the ``CAPABILITY`` of ``module`` (a module or its dotted name).

    Raises:
        CapabilityError: The module cannot be imported, has no ``CAPABILITY``, or a part
            of it is wrong.
    """
    name = module if isinstance(module, str) else module.__name__
    if isinstance(module, str):
        try:
            module = importlib.import_module(module)
        except ImportError as exc:
            raise CapabilityError(name, f"cannot be imported: {exc}") from exc
    capability: Any = getattr(module, "CAPABILITY", None)
    if capability is None:
        raise CapabilityError(name, "has no CAPABILITY (a buddy.capabilities.Capability)")
    target.add(capability, name)
    assert isinstance(capability, Capability)  # add() refused anything else
    return capability


def _entry_points() -> Iterator[tuple[str, str]]:
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        yield point.name, point.value


@cache
def registry() -> Registry:
    """The capabilities of this process: the built-ins, then the entry points (unless
    :data:`AUTOLOAD_OFF` is set), each checked as it registers.

    Raises:
        CapabilityError: A capability is broken (naming it and the part).
    """
    found = Registry()
    for module in BUILTINS:
        register_module(found, module)
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


def obj(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed JSON Schema object (what every tool's parameters are)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }
