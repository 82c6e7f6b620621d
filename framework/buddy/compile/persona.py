"""Persona templates: the search path, and rendering a system prompt.

Names are looked up on a search path: the buddy's directory, then every ``personas/``
directory from there up to the project root, then installed template packs (entry-point
group ``buddy.personas``), then the shared templates and trait files buddy ships
(:data:`BUILT_IN_PACK`). Templates render in the sandbox of :mod:`buddy.compile.sandbox`
(strict undefined names, a budget per render); a failure is located at the template file
and line where it happened (:func:`describe_failure`).

Card macros: every environment has the global :func:`card_macro`, which the prompt of an
imported card calls for each of the card's macros (``{{ card_macro('{{random:a,b}}') }}``,
see :mod:`buddy.cards.prompt`). A render for a turn replaces them (seeded by the event id,
``pick`` by the conversation id); a render of :meth:`PersonaRenderer.context` without an
event (a card's export) leaves them as the card wrote them.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from buddy.compile.macros import CARD_MACRO, Expander
from buddy.compile.project import find_project_root, not_regular, resolved
from buddy.compile.sandbox import (
    INLINE_NAME,
    POWER_BITS_MAX,
    RENDER_SECONDS_MAX,
    RENDER_STEPS_MAX,
    VALUE_CHARS_MAX,
    TemplateNotRegular,
)

# The sandbox's, re-exported: tests patch them here.
from buddy.compile.sandbox import _BudgetedEnvironment as _BudgetedEnvironment  # noqa: PLC0414
from buddy.compile.sandbox import _TemplateCache as _TemplateCache  # noqa: PLC0414
from buddy.compile.sandbox import make_environment as _sandboxed

__all__ = [
    "BUILT_IN_PACK",
    "CARD_MACRO",
    "EXAMPLE_EVENT",
    "EXAMPLE_NOW",
    "INLINE_NAME",
    "POWER_BITS_MAX",
    "RENDER_SECONDS_MAX",
    "RENDER_STEPS_MAX",
    "RESERVED_NAMES",
    "VALUE_CHARS_MAX",
    "PersonaRenderer",
    "TemplateFailure",
    "TemplateNotRegular",
    "card_macro",
    "find_project_root",
    "make_environment",
    "search_path",
]

RESERVED_NAMES = ("traits", "buddy", "conversation", "now")
# The instant `validate` and `render` use for `now`, so their output is reproducible.
EXAMPLE_NOW = datetime(2026, 1, 5, 9, 0, tzinfo=timezone(timedelta(hours=8)))
# The event id `validate` and `render` seed card macros with (`{{random:…}}`, `{{roll:…}}`).
EXAMPLE_EVENT = "example"
# Where a render's context keeps the turn's card macro expander: not a name a template can
# write, so no persona var can shadow it.
_EXPANDER = "card macros"
# The shared templates (companion.md.j2, coach.md.j2) and trait files (traits/*.yaml) that
# ship with buddy: last on every search path, so a project's own file of the name wins.
BUILT_IN_PACK = Path(__file__).resolve().parents[1] / "personas"


@jinja2.pass_context
def card_macro(context: jinja2.runtime.Context, text: str) -> str:
    """``text`` (a card macro as written: ``{{random:a,b}}``) replaced for this render's
    turn; as it is in a render without a turn (a card's export reads the macros back)."""
    expander = context.get(_EXPANDER)
    if not isinstance(expander, Expander):
        return text
    return expander(str(text))


def make_environment(
    path: Sequence[Path], inline: str | None = None, seen: set[Path] | None = None
) -> SandboxedEnvironment:
    """The sandbox's environment (:func:`buddy.compile.sandbox.make_environment`), with
    :func:`card_macro`."""
    environment = _sandboxed(path, inline, seen)
    environment.globals[CARD_MACRO] = card_macro
    return environment


@cache
def _pack_directories() -> tuple[Path, ...]:
    """Directories of installed template packs (entry points ``buddy.personas``).

    An entry point names a package; its directory is found without importing it.
    """
    import importlib.util

    from buddy.extend.entrypoints import entry_points

    def listed(entry: tuple[str, str]) -> str:  # as importlib.metadata's EntryPoint prints
        return f"EntryPoint(name={entry[0]!r}, value={entry[1]!r}, group='buddy.personas')"

    found: list[Path] = []
    for _, value in sorted(entry_points("buddy.personas"), key=listed):
        spec = importlib.util.find_spec(value.split(":")[0].split(".")[0])
        if spec is not None and spec.submodule_search_locations:
            base = Path(next(iter(spec.submodule_search_locations)))
            rest = value.split(":")[0].split(".")[1:]
            found.append(base.joinpath(*rest))
    return tuple(found)


def search_path(buddy_dir: Path, root: Path) -> list[Path]:
    """Where template and trait names are looked up, in order."""
    buddy_dir = resolved(buddy_dir)
    path = [buddy_dir]
    for directory in (buddy_dir, *buddy_dir.parents):
        candidate = directory / "personas"
        if candidate.is_dir():
            path.append(candidate)
        if directory == root:
            break
    path.extend(_pack_directories())
    path.append(BUILT_IN_PACK)
    return path


@dataclass(frozen=True, slots=True)
class TemplateFailure:
    """Where a template failed: the template file (or ``INLINE_NAME``), its line and
    column, and why; ``undefined`` is the top-level name a template used undefined."""

    file: str
    line: int
    code: str
    message: str
    column: int = 1
    undefined: str | None = None


_UNDEFINED = re.compile(r"^'([A-Za-z_][A-Za-z0-9_]*)' is undefined$")
_NO_ATTRIBUTE = re.compile(r"has no attribute '([A-Za-z_][A-Za-z0-9_]*)'$")
_TAG = re.compile(r"\{\{.*?(?:\}\}|$)|\{%.*?(?:%\}|$)")


def describe_failure(
    exc: BaseException, fallback: str, inline: str | None = None
) -> TemplateFailure:
    """Locate a Jinja error at the template file and line where it happened — and, for an
    undefined name, its column (``inline``: the text of ``INLINE_NAME``)."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return TemplateFailure(
            exc.filename or exc.name or fallback, exc.lineno, "template-syntax", exc.message or ""
        )
    file, line = fallback, 0
    tb: types.TracebackType | None = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if (
            name == INLINE_NAME
            or name.endswith((".j2", ".jinja", ".jinja2"))
            or (Path(name).is_file() and not name.endswith(".py"))
        ):
            file, line = name, tb.tb_lineno
        tb = tb.tb_next
    if isinstance(exc, jinja2.TemplateNotFound):
        return TemplateFailure(file, line, "template-not-found", f"template {exc.name!r} not found")
    if isinstance(exc, TemplateNotRegular):
        return TemplateFailure(
            file,
            line,
            "file-not-regular",
            f"template {exc.name!r} ({exc.filename}) is {exc.kind}, not a regular file",
        )
    if isinstance(exc, jinja2.UndefinedError):
        message = exc.message or str(exc)
        top = _UNDEFINED.match(message)
        attribute = _NO_ATTRIBUTE.search(message)
        # Jinja reports the line only: find the name on it (inside a tag, where it is used).
        pattern = (
            rf"(?<![\w.]){top.group(1)}\b"
            if top
            else rf"(?<=[.'\"]){attribute.group(1)}\b"
            if attribute
            else None
        )
        text = inline if file == INLINE_NAME else _read(file)
        column = _column(text, line, pattern) if pattern and text is not None else 1
        return TemplateFailure(
            file, line, "template-undefined", message, column, top.group(1) if top else None
        )
    return TemplateFailure(file, line, "template-error", f"{type(exc).__name__}: {exc}")


def _read(file: str) -> str | None:
    if not_regular(Path(file)) is not None:  # swapped for a FIFO since: never opened
        return None
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _column(text: str, line: int, pattern: str) -> int:
    """The 1-based column of ``pattern`` on ``line`` of ``text``, first inside a ``{{ }}``
    or ``{% %}`` tag; 1 when it is not there."""
    lines = re.split(r"\r\n|\r|\n", text)  # Jinja's line breaks
    if not 1 <= line <= len(lines):
        return 1
    row = lines[line - 1]
    for tag in _TAG.finditer(row):
        found = re.search(pattern, tag.group())
        if found:
            return tag.start() + found.start() + 1
    found = re.search(pattern, row)
    return found.start() + 1 if found else 1


class PersonaRenderer:
    """Renders a buddy's system prompt for one conversation.

    Built once per compiled buddy; :meth:`render` is called per conversation (the
    template is compiled on first use and cached by the environment).
    """

    def __init__(
        self,
        *,
        path: Sequence[Path],
        template: str | None,
        inline: str | None,
        traits: Mapping[str, Any],
        variables: Mapping[str, Any],
        buddy: Mapping[str, str],
    ) -> None:
        self.path = tuple(path)
        self.template = template
        self.inline = inline
        self.traits = types.MappingProxyType(dict(traits))
        self.variables = types.MappingProxyType(dict(variables))
        self.buddy = types.MappingProxyType(dict(buddy))
        self.files: set[Path] = set()
        self._env = make_environment(self.path, inline, self.files)
        # Compiled on first render and kept: the environment never reloads a template
        # (``auto_reload`` is off), so asking it again each turn only costs a lookup.
        self._template: jinja2.Template | None = None

    def __reduce__(self) -> tuple[Callable[..., PersonaRenderer], tuple[Any, ...]]:
        # Pickled by its inputs (for the compiled-buddy cache); the environment is rebuilt.
        arguments = (self.path, self.template, self.inline)
        mappings = (dict(self.traits), dict(self.variables), dict(self.buddy))
        return _restore_renderer, (arguments, mappings, frozenset(self.files))

    @property
    def name(self) -> str:
        """The template's name, or ``INLINE_NAME`` for an inline prompt."""
        return self.template or INLINE_NAME

    def context(
        self,
        *,
        kind: str = "private",
        conversation_id: str = "",
        now: datetime | None = None,
        layer: Mapping[str, Any] | None = None,
        event: str | None = None,
    ) -> dict[str, Any]:
        """The names a template sees; ``layer``: what it sees of the buddy's sections
        (:func:`buddy.extend.persona_layer`: ``memory``, ``character``, ``lore``);
        ``event``: the turn's event id, which card macros are replaced with (``None``:
        they are left as written)."""
        # Plain dicts (not the read-only views held here): error messages then name a
        # `dict object` rather than an implementation type.
        context = {
            **self.variables,
            **(layer or {}),
            "traits": dict(self.traits),
            "buddy": dict(self.buddy),
            "conversation": {"kind": kind, "id": conversation_id},
            "now": now or datetime.now(UTC).astimezone(),
        }
        if event is not None:
            # One expander a render: the second `{{random:a,b}}` of a prompt draws anew.
            user = self.variables.get("user")
            context[_EXPANDER] = Expander(
                char=self.buddy.get("title", ""),
                user=user if isinstance(user, str) else "",
                seed=event,
                stable=conversation_id or event,
            )
        return context

    def render(
        self,
        *,
        kind: str = "private",
        conversation_id: str = "",
        now: datetime | None = None,
        layer: Mapping[str, Any] | None = None,
        event: str = EXAMPLE_EVENT,
    ) -> str:
        """The system prompt for a conversation of ``kind`` (``private`` or ``group``);
        ``event``: the turn's event id, the seed of card macros (``random``, ``roll``;
        ``pick`` is seeded by ``conversation_id``).

        Raises:
            jinja2.TemplateError: The template failed (validation makes this unlikely).
        """
        template = self._template
        if template is None:
            template = self._template = self._env.get_template(self.name)
        context = self.context(
            kind=kind, conversation_id=conversation_id, now=now, layer=layer, event=event
        )
        return template.render(context)

    def templates(self) -> Iterator[str]:
        """Every template name on the search path (for "did you mean")."""
        try:
            yield from self._env.list_templates(
                # Not the compiled templates kept in __pycache__/ (`template-….jinja`).
                filter_func=lambda n: (
                    n.endswith((".j2", ".jinja", ".jinja2", ".md", ".txt"))
                    and "__pycache__" not in n.split("/")
                )
            )
        except (TypeError, OSError):  # pragma: no cover - a loader that cannot list
            return


def _restore_renderer(
    arguments: tuple[tuple[Path, ...], str | None, str | None],
    mappings: tuple[dict[str, Any], dict[str, Any], dict[str, str]],
    files: frozenset[Path],
) -> PersonaRenderer:
    path, template, inline = arguments
    traits, variables, buddy = mappings
    renderer = PersonaRenderer(
        path=path, template=template, inline=inline, traits=traits, variables=variables, buddy=buddy
    )
    renderer.files.update(files)
    return renderer
