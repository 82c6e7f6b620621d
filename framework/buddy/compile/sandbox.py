"""The sandboxed Jinja2 environment every buddy template runs in, and its guards.

Templates run in Jinja2's ``SandboxedEnvironment`` with ``StrictUndefined`` (an
undefined name is an error, never an empty string) and autoescape off (prompts are not
HTML), loaded from a search path (:func:`buddy.compile.persona.search_path`) by a loader
that refuses what is not a regular file, and compiled once (:class:`_TemplateCache`).

The sandbox stops templates from reaching Python internals; on top of it every render
has a budget, because a manifest under review must not be able to hang ``buddy
validate`` or the runtime: at most :data:`RENDER_STEPS_MAX` loop iterations and calls
(nested ``range`` loops, recursive macros), :data:`RENDER_SECONDS_MAX` seconds, no
string or list longer than :data:`VALUE_CHARS_MAX` made by ``*``, ``+`` or ``~``, no
integer power over :data:`POWER_BITS_MAX` bits (Jinja would fold a constant one while
compiling), no width over :data:`VALUE_CHARS_MAX` in ``center``/``indent``/``ljust``… or in
a ``%`` or ``str.format`` spec (and none taken from an argument), since those allocate in
one C call that no budget can interrupt, and at most :data:`VALUE_CHARS_MAX` characters of
output. Template files
that are symlinks leading out of the search path are not served.
"""

from __future__ import annotations

import hashlib
import os
import re
import string
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

from buddy.compile.memo import disk_caches, no_disk_cache
from buddy.compile.project import not_regular, resolved, write_cache

__all__ = [
    "INLINE_NAME",
    "POWER_BITS_MAX",
    "RENDER_SECONDS_MAX",
    "RENDER_STEPS_MAX",
    "VALUE_CHARS_MAX",
    "TemplateNotRegular",
    "make_environment",
    "no_disk_cache",
]

INLINE_NAME = "<persona.prompt>"
RENDER_STEPS_MAX = 100_000  # loop iterations and calls in one render
RENDER_SECONDS_MAX = 5.0  # a backstop; a persona renders in milliseconds
VALUE_CHARS_MAX = 1_000_000  # a string or list built by an operator, and the output
POWER_BITS_MAX = 16_384  # about 4,900 decimal digits (Python prints at most 4,300)


class TemplateNotRegular(jinja2.TemplateError):
    """The template ``name`` is found on the search path, at ``filename``, but is not a
    regular file (``kind``: a FIFO, a directory…): it is refused, never opened (a FIFO
    would block the reader forever) nor passed over for a file further on the path.

    Not a :class:`jinja2.TemplateNotFound`, so ``{% include … ignore missing %}`` does
    not skip it silently.
    """

    def __init__(self, name: str, filename: str, kind: str) -> None:
        super().__init__(f"template {name!r} is {kind}, not a regular file")
        self.name = name
        self.filename = filename
        self.kind = kind


class _Loader(jinja2.FileSystemLoader):
    """A file loader that remembers every template file it served, and refuses one that
    is not a regular file (:class:`TemplateNotRegular`)."""

    def __init__(self, searchpath: Sequence[Path], seen: set[Path]) -> None:
        super().__init__([str(p) for p in searchpath], encoding="utf-8", followlinks=False)
        self.seen = seen
        self.roots = tuple(resolved(Path(p)) for p in searchpath)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        pieces = jinja2.loaders.split_template_path(template)
        for directory, root in zip(self.searchpath, self.roots, strict=True):
            candidate = Path(directory, *pieces)
            # The first one there is the one meant; os.path.exists is False (not an
            # error) for a name too long.
            if os.path.exists(candidate) and resolved(candidate).is_relative_to(root):
                kind = not_regular(candidate)
                if kind is not None:
                    raise TemplateNotRegular(template, str(candidate), kind)
                break
        source, filename, uptodate = super().get_source(environment, template)
        # Names cannot contain `..` (Jinja refuses them), but a symlink could lead out.
        if not any(resolved(Path(filename)).is_relative_to(root) for root in self.roots):
            raise jinja2.TemplateNotFound(template)
        self.seen.add(Path(filename))
        return source, filename, uptodate


class _TemplateCache(jinja2.BytecodeCache):
    """Compiled templates: in memory for the process, and on disk for the next one.

    Jinja keys each entry by template name and file name and checks a checksum of the
    source, so a changed file is recompiled; a shared persona template is compiled once
    per process, not once per buddy that extends it (memory, bounded, oldest out). A
    template *file* is also kept in the ``__pycache__/`` beside it, like a ``.pyc``: the
    next ``buddy validate``, ``dev`` or start after an edit of the manifest does not
    compile the unchanged templates again (an inline prompt is part of the manifest, the
    file being edited, so it stays in memory). A folder that cannot be written only costs
    the compile. The key also covers this module and Jinja's version, since the
    generated code depends on both.
    """

    memory: dict[str, bytes] = {}  # noqa: RUF012 - shared by every environment
    size = 512

    def __init__(self, disk: bool) -> None:
        self.disk = disk
        self.files: dict[str, Path] = {}  # key -> where it is kept on disk

    def get_bucket(
        self, environment: jinja2.Environment, name: str, filename: str | None, source: str
    ) -> jinja2.bccache.Bucket:
        key = self.get_cache_key(f"{_code_version()}|{name}", filename)
        bucket = jinja2.bccache.Bucket(environment, key, self.get_source_checksum(source))
        code = self.memory.get(key)
        if code is not None:
            bucket.bytecode_from_string(code)  # reset when the source changed since
            if bucket.code is not None:
                return bucket
        if self.disk and filename and name != INLINE_NAME:
            file = Path(filename).parent / "__pycache__" / f"template-{key[:32]}.jinja"
            self.files[key] = file
            try:
                if not_regular(file) is None:  # a FIFO would block the reader: a miss
                    with file.open("rb") as stream:
                        bucket.load_bytecode(stream)
            except FileNotFoundError:
                pass
            except Exception:  # unreadable, truncated or from another version: compile
                bucket.reset()
            if bucket.code is not None:
                self._remember(bucket)
        return bucket

    def set_bucket(self, bucket: jinja2.bccache.Bucket) -> None:
        self._remember(bucket)
        file = self.files.get(bucket.key)
        if file is not None:
            write_cache(file, bucket.bytecode_to_string())

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:  # pragma: no cover
        raise NotImplementedError  # get_bucket does it

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:  # pragma: no cover
        raise NotImplementedError  # set_bucket does it

    def _remember(self, bucket: jinja2.bccache.Bucket) -> None:
        self.memory.pop(bucket.key, None)
        self.memory[bucket.key] = bucket.bytecode_to_string()
        while len(self.memory) > self.size:
            del self.memory[next(iter(self.memory))]


@cache
def _code_version() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(getattr(jinja2, "__version__", "").encode())
    return digest.hexdigest()[:16]


def _on_disk() -> bool:
    return disk_caches()


class _Budget:
    """What one render may still spend."""

    def __init__(self) -> None:
        self.steps = RENDER_STEPS_MAX
        self.deadline = time.monotonic() + RENDER_SECONDS_MAX

    def spend(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise SecurityError(
                f"the template ran more than {RENDER_STEPS_MAX} steps (loop iterations "
                "and calls); a persona must render quickly"
            )
        if time.monotonic() > self.deadline:
            raise SecurityError(f"the template ran longer than {RENDER_SECONDS_MAX:g} seconds")


_BUDGET: ContextVar[_Budget | None] = ContextVar("buddy_template_budget", default=None)


def _spend() -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.spend()


def _check_size(value: Any, what: str) -> Any:
    if isinstance(value, str | list | tuple) and len(value) > VALUE_CHARS_MAX:
        raise SecurityError(
            f"{what} would be {len(value)} characters or items long; the limit is {VALUE_CHARS_MAX}"
        )
    return value


_PRINTF_FIELD = re.compile(r"%[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


def _check_width(width: Any, what: str) -> None:
    if isinstance(width, int) and width > VALUE_CHARS_MAX:
        raise SecurityError(f"{what} asks for a width of {width}; the limit is {VALUE_CHARS_MAX}")


def _check_printf(template: str) -> None:
    """A ``%`` format whose width or precision would allocate a huge string is refused."""
    for match in _PRINTF_FIELD.finditer(template):
        for number in match.groups():
            if number == "*":
                raise SecurityError("a `%` format may not take its width from an argument")
            if number is not None:
                _check_width(int(number), "a `%` format")


def _check_format_spec(template: str) -> None:
    """The same for ``str.format``: fixed widths only, none over the limit."""
    for _, _, spec, _ in string.Formatter().parse(template):
        if spec and "{" in spec:
            raise SecurityError("a format spec may not take its width from an argument")
        for number in re.findall(r"\d+", spec or ""):
            _check_width(int(number), "a format spec")


class _Guard(NodeTransformer):
    """Routes every loop's items and every ``~`` through the environment's checks.

    The checks are read as ``environment.<name>``, which template code cannot rebind.
    """

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Call(
            nodes.EnvironmentAttribute("budgeted_items"), [node.iter], [], None, None
        )
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return nodes.Call(nodes.EnvironmentAttribute("sized_concat"), [node], [], None, None)


class _BudgetedTemplate(jinja2.Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        """Render within a fresh :class:`_Budget`, refusing output over the size limit."""
        # new_context copies what it is given: a single mapping need not be copied first.
        given = args[0] if len(args) == 1 and not kwargs and isinstance(args[0], dict) else None
        context = self.new_context(given if given is not None else dict(*args, **kwargs))
        token = _BUDGET.set(_Budget())
        try:
            parts: list[str] = []
            size = 0
            for part in self.root_render_func(context):
                size += len(part)
                if size > VALUE_CHARS_MAX:
                    raise SecurityError(
                        f"the template's output is over {VALUE_CHARS_MAX} characters"
                    )
                parts.append(part)
            return "".join(parts)
        except Exception:
            self.environment.handle_exception()  # re-raised, with template line numbers
        finally:
            _BUDGET.reset(token)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    if n > 100 or max > 1000:
        raise SecurityError("lipsum is limited to 100 paragraphs of at most 1000 words")
    return generate_lorem_ipsum(n, html, min, max)


def _center(value: str, width: int = 80) -> str:
    _check_width(width, "center")
    return str(value).center(width)


def _indent(value: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    if isinstance(width, int):
        _check_width(width * (str(value).count("\n") + 1), "indent")
    return jinja2.filters.do_indent(value, width, first, blank)


def _format(value: str, *args: Any, **kwargs: Any) -> str:
    _check_printf(str(value))
    return jinja2.filters.do_format(value, *args, **kwargs)


class _BudgetedEnvironment(SandboxedEnvironment):
    """The sandbox, with the per-render budget described in the module docstring."""

    template_class = _BudgetedTemplate
    # Intercepted operators are also never folded into constants while compiling.
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals["lipsum"] = _lipsum
        self.filters["center"] = _center
        self.filters["indent"] = _indent
        self.filters["format"] = _format

    def _generate(
        self,
        source: nodes.Template,
        name: str | None,
        filename: str | None,
        defer_init: bool = False,
    ) -> str:
        # Jinja's documented hook between parsing and code generation.
        guarded = _Guard().visit(source)
        return super()._generate(guarded, name, filename, defer_init)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Every call made by template code (functions, methods, macros) is a step.

        A string method that would allocate its width at once (``'x'.center(10**10)``)
        is refused before it runs.
        """
        _spend()
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, str) and getattr(obj, "__name__", "") in _WIDTH_METHODS and args:
            _check_width(args[0], f"str.{obj.__name__}")
        return super().call(context, obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` and ``format_map``, whose widths are checked when looked up."""
        owner = getattr(value, "__self__", None)
        if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map"):
            _check_format_spec(owner)
        return super().wrap_str_format(value)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """``*``, ``**``, ``+`` and ``%``, refused when the result would be huge."""
        if operator == "**" and isinstance(left, int) and isinstance(right, int):
            bits = abs(left).bit_length() * right if abs(left) > 1 else 0
            if bits > POWER_BITS_MAX:
                raise SecurityError(
                    f"{left} ** {right} would have about {bits} bits; the limit is {POWER_BITS_MAX}"
                )
        elif operator == "%" and isinstance(left, str):
            _check_printf(left)
        elif operator == "*":
            sequence, count = (right, left) if isinstance(left, int) else (left, right)
            if (
                isinstance(sequence, str | list | tuple)
                and isinstance(count, int)
                and len(sequence) * count > VALUE_CHARS_MAX
            ):
                raise SecurityError(
                    f"repeating {len(sequence)} items {count} times would make "
                    f"{len(sequence) * count}; the limit is {VALUE_CHARS_MAX}"
                )
        result = super().call_binop(context, operator, left, right)
        return _check_size(result, f"the result of {operator}")

    def budgeted_items(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """A loop's items, each one a step of the render's budget."""
        for item in iterable:
            _spend()
            yield item

    def sized_concat(self, value: str) -> str:
        """The result of ``~``, refused when it is over the size limit."""
        checked: str = _check_size(value, "the result of ~")
        return checked


def make_environment(
    path: Sequence[Path], inline: str | None = None, seen: set[Path] | None = None
) -> SandboxedEnvironment:
    """A sandboxed, strict environment over ``path``; ``inline`` is served as ``INLINE_NAME``."""
    files = _Loader(path, seen if seen is not None else set())
    loaders: list[jinja2.BaseLoader] = [files]
    if inline is not None:
        loaders.insert(
            0,
            jinja2.FunctionLoader(
                lambda name: (inline, INLINE_NAME, lambda: True) if name == INLINE_NAME else None
            ),
        )
    return _BudgetedEnvironment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=False,
        bytecode_cache=_TemplateCache(_on_disk()),
    )
