"""The capability contract: what a capability is — :class:`Capability` and its parts —
and the checks a capability passes when it registers.

Standard library and :mod:`buddy.errors` only: the core (manifest, compile, runtime,
platform, testing) imports this package, never ``buddy.capabilities``. Every part that
names code does so as a ``module:function`` reference; :data:`HOOKS` declares each one's
signature, and :func:`verify` checks a capability's references against it — the module
can be found, the function is defined there, its parameters and ``async`` match — from the
module's source, without importing it (imports stay lazy), as pluggy checks a hook
implementation against its hookspec when a plugin registers.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from buddy.errors import Issue
    from buddy.manifest.yamlio import Document

__all__ = [
    "RESERVED_ATTRIBUTES",
    "RESERVED_EXPECT_KEYS",
    "RESERVED_SECTIONS",
    "RESERVED_STEP_KEYS",
    "Capability",
    "EventKind",
    "PlatformTool",
    "Section",
    "SectionContext",
    "StepAction",
    "StepExpect",
    "ToolContext",
    "Uses",
    "claims",
    "obj",
    "problems",
    "references",
]

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
    {"reply", "no_reply", "messages", "tool_called", "tool_result", "denied", "question", "prompt"}
)
#: What ``conversation`` has of its own, whatever its capabilities.
RESERVED_ATTRIBUTES = frozenset({"id", "kind", "client", "members", "turn", "parts"})
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
        copied: dict[str, Any] = _copied(dict(value))
        return copied


def _copied(value: Any) -> Any:
    """A deep copy of a JSON Schema: plain data copied by hand (several times faster than
    :func:`copy.deepcopy`, and a compile copies every listed platform tool's schema),
    anything else by :func:`copy.deepcopy`."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return value
    return copy.deepcopy(value)


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
        placed: ``module:function``, ``(value) -> str | tuple[str, str]``: the part's
            text in the system prompt when the persona template does not place it (reads
            nothing of the value under the key): added after what the template rendered,
            in registry order (``""`` from it: nothing to say this turn); a pair is
            ``(before, after)``: the first goes before the template's text (lore an
            entry puts before the persona). ``""``: the section has no
            default place, so a template that never places it is reported by
            ``buddy validate``.
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
    placed: str = ""


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
        show: ``module:function``, ``(state) -> {label: text}``: what a replay
            (``buddy diff --replay``) shows of ``state`` after every step — whether or
            not the step expects the key — so two versions of a buddy can be compared
            label by label (``mood anger`` → ``0.35``); ``""``: nothing.
        record: ``module:function``, ``(state, seen) -> value | None``: the key's value
            as it stands after a step (what ``verify`` passes), written into a scenario
            recorded from a real conversation (:mod:`buddy.testing.record`) where it
            changed; ``None``: nothing worth writing (``""``: never recorded).
    """

    key: str
    model: str
    description: str
    verify: str
    state: str = ""
    check: str = ""
    show: str = ""
    record: str = ""


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
        facade: ``module:Class`` of that part: a :class:`~buddy.extend.turn.Bound`
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
            (:class:`buddy.extend.turn.Layer`): it hears each event before the
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


def claims(capability: Capability) -> Iterator[str]:
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


def problems(capability: Any, where: str) -> Iterator[str]:
    if not isinstance(capability, Capability):
        yield f"CAPABILITY must be a buddy.extend.Capability, not {type(capability).__name__}"
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
        (
            "expects",
            StepExpect,
            RESERVED_EXPECT_KEYS,
            ("model", "verify", "state", "check", "show"),
        ),
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
        yield f"section must be a buddy.extend.Section, not {type(section).__name__}"
        return
    if not _NAME.match(section.key):
        yield f"section: key {section.key!r} must match {_NAME.pattern}"
    elif section.key in RESERVED_SECTIONS:
        yield f"section: key {section.key!r} is the manifest's own"
    optional = tuple(p for p in ("markdown", "prompt", "placed") if getattr(section, p))
    for part in ("model", "compile", "render", *optional):
        reference = getattr(section, part)
        if not _EXECUTE.match(reference):
            yield f"section ({section.key}): {part} {reference!r} must be 'module:attribute'"
    if not section.heading:
        yield f"section ({section.key}): heading is empty"
    if section.placed and not section.prompt:
        yield f"section ({section.key}): placed needs a prompt (templates see nothing to place)"


def obj(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed JSON Schema object (what every tool's parameters are)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def references(capability: Capability) -> Iterator[tuple[str, str, str]]:
    """``(where, hook, module:attribute)`` of every code reference ``capability`` makes
    (a well-formed one: :func:`problems` reports the rest), ``hook`` naming its signature in
    :data:`buddy.extend.refs.HOOKS`."""
    parts: list[tuple[str, str, str]] = [
        (f"tools[{i}] ({t.name}): execute", "PlatformTool.execute", t.execute)
        for i, t in enumerate(capability.tools)
    ]
    for part in ("startup", "facade", "playground", "layer"):
        parts.append((part, f"Capability.{part}", getattr(capability, part)))
    if capability.platform and _MODULE.match(capability.platform):
        for name in ("TABLES", "router"):  # what the dev platform reads of every part
            parts.append(("platform", "Capability.platform", f"{capability.platform}:{name}"))
    section = capability.section
    if section is not None:
        for part in ("model", "compile", "render", "markdown", "prompt", "placed"):
            parts.append(
                (f"section ({section.key}): {part}", f"Section.{part}", getattr(section, part))
            )
    for i, use in enumerate(capability.uses):
        for part in ("model", "execute", "schemas"):
            parts.append((f"uses[{i}] ({use.name}): {part}", f"Uses.{part}", getattr(use, part)))
    for i, kind in enumerate(capability.events):
        for part in ("user", "prompt"):
            parts.append(
                (f"events[{i}] ({kind.type}): {part}", f"EventKind.{part}", getattr(kind, part))
            )
    steps: tuple[tuple[str, tuple[StepAction | StepExpect, ...], tuple[str, ...]], ...] = (
        ("actions", capability.actions, ("model", "run", "check")),
        (
            "expects",
            capability.expects,
            ("model", "verify", "state", "check", "show", "record"),
        ),
    )
    for name, items, fields in steps:
        hook = "StepAction" if name == "actions" else "StepExpect"
        for i, item in enumerate(items):
            for part in fields:
                parts.append(
                    (f"{name}[{i}] ({item.key}): {part}", f"{hook}.{part}", getattr(item, part))
                )
    return ((w, h, r) for w, h, r in parts if r and _EXECUTE.match(r))
