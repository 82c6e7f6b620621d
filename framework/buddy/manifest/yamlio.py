"""Plain YAML in, plain data out — with the file, line and column of every node.

Rules (why: a buddy.yaml is config a reviewer reads, not a program):

* PyYAML's parser (libyaml's when built with it) gives the events; they become data in
  one walk, checked as PyYAML's safe composer checks them, with no node graph and no
  constructor. Every node's tag must be a plain-data tag, so ``!!python/object`` and
  friends are refused rather than silently ignored.
* Scalars are resolved the YAML 1.2 way: only ``true``/``false`` are booleans
  (``on``, ``yes``, ``no`` stay strings) and there are no base-60 numbers
  (``22:30`` is the string ``"22:30"``, not 1350) and no implicit octal.
* Duplicate mapping keys are errors (PyYAML keeps the last one silently).
* Alias expansion is bounded, so a "billion laughs" document is refused at once.
* Nesting is bounded (:data:`MAX_DEPTH` levels, aliases expanded), so a deep document
  is a located issue rather than a ``RecursionError``.
* Files larger than :data:`MAX_FILE_BYTES`, and anything but a regular file (a FIFO would
  block the reader), are refused before parsing.

JSON files (widget schemas, ``data-access.json``) are read by :func:`load_json`: strict
JSON, under the same depth and size limits, located the same way.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from buddy.compile.project import read_file
from buddy.errors import Issue, ParseError
from buddy.manifest.yamlproblems import explain

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "Document",
    "Loc",
    "ParseError",
    "YamlPath",
    "format_path",
    "load_document",
    "load_json",
    "parse_document",
]

MAX_FILE_BYTES = 1024 * 1024
MAX_ALIAS_EXPANSION = 10_000
# Far deeper than any manifest or JSON Schema needs, and far from Python's recursion limit
# (composing, building and validating recurse a few frames per level).
MAX_DEPTH = 64
_DEPTH_MESSAGE = f"the document nests more than {MAX_DEPTH} levels deep"
_DEPTH_HINT = "flatten the structure"

YamlPath = tuple[str | int, ...]

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_PLAIN_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP, _SEQ, _MAP}


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a file; ``line`` and ``column`` are 1-based."""

    file: str
    line: int
    column: int


@dataclass(slots=True)
class Document:
    """A parsed YAML (or JSON) file.

    Attributes:
        file: The file's path as given.
        data: The plain data: dicts, lists, str, int, float, bool, None, datetime.
        values: Location of each value node, by path.
        keys: Location of each mapping key, by the path of its value.
        blocks: For block scalars (``|`` / ``>``), where their text starts.
    """

    file: str
    data: Any
    values: dict[YamlPath, Loc] = field(default_factory=dict)
    keys: dict[YamlPath, Loc] = field(default_factory=dict)
    blocks: dict[YamlPath, Loc] = field(default_factory=dict)


def format_path(path: YamlPath) -> str:
    """``("tools", 2, "name")`` → ``tools[2].name``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class _Resolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core-schema resolution (see the module docstring)."""

    yaml_implicit_resolvers = {}  # noqa: RUF012 - PyYAML's own class-level table, replaced


class _DepthError(yaml.composer.ComposerError):
    """The document nests deeper than :data:`MAX_DEPTH` (raised while reading events)."""


if yaml.__with_libyaml__:
    # libyaml's C parser emits the events, several times faster than PyYAML's own.
    from yaml.cyaml import CParser  # type: ignore[attr-defined]

    class _Loader(CParser, _Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _Resolver
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            _Resolver.__init__(self)


_STARTS = (ScalarEvent, SequenceStartEvent, MappingStartEvent)
_ENDS = (SequenceEndEvent, MappingEndEvent)


def _read_events(loader: _Loader) -> list[Any]:
    """The events of the one document in the stream (``[]`` for none), checked as PyYAML's
    composer checks them — one document, no undefined alias, no anchor defined twice —
    and for nesting deeper than :data:`MAX_DEPTH`.

    Composing no node graph: :class:`_Builder` turns the events into data in one walk.
    """
    get: Callable[[], Any] = loader.get_event
    get()  # StreamStartEvent
    event = get()
    if isinstance(event, StreamEndEvent):
        return []
    start = event.start_mark  # DocumentStartEvent
    events: list[Any] = []  # PyYAML's events (their marks are typed loosely)
    anchors: dict[str, yaml.Mark] = {}
    depth = 0
    while True:
        event = get()
        kind = type(event)
        if kind is DocumentEndEvent:
            break
        if kind is AliasEvent:
            if event.anchor not in anchors:
                raise yaml.composer.ComposerError(
                    None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                )
        elif kind in _STARTS:
            if depth >= MAX_DEPTH:
                raise _DepthError(_DEPTH_HINT, None, _DEPTH_MESSAGE, event.start_mark)
            anchor = event.anchor
            if anchor is not None:
                if anchor in anchors:
                    raise yaml.composer.ComposerError(
                        f"found duplicate anchor {anchor!r}; first occurrence",
                        anchors[anchor],
                        "second occurrence",
                        event.start_mark,
                    )
                anchors[anchor] = event.start_mark
            if kind is not ScalarEvent:
                depth += 1
        elif kind in _ENDS:
            depth -= 1
        events.append(event)
    event = get()
    if not isinstance(event, StreamEndEvent):
        raise yaml.composer.ComposerError(
            "expected a single document in the stream",
            start,
            "but found another document",
            event.start_mark,
        )
    return events


def _resolver(tag: str, pattern: str, first: str) -> None:
    _Resolver.add_implicit_resolver(tag, re.compile(pattern, re.X), list(first))


_resolver(_BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_resolver(_INT, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789")
_resolver(
    _FLOAT,
    r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""",
    "-+.0123456789",
)
_resolver(_NULL, r"^(?:~|null|Null|NULL)$", "~nN")
_Resolver.add_implicit_resolver(_NULL, re.compile(r"^$"), [""])
_resolver(
    _TIMESTAMP,
    r"""^(?:[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}
        |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}
         (?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$""",
    "0123456789",
)


# What YAML counts as a line break (as the parser's marks do).
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


class _Anchored:
    """A node with an anchor: its data, how many nodes it expands to, how deep it is, and
    for a scalar the mapping key it makes (``None`` for a mapping or a list)."""

    __slots__ = ("data", "height", "key", "size")

    def __init__(self, data: Any, size: int, height: int, key: Any = None) -> None:
        self.data = data
        self.size = size
        self.height = height
        self.key = key


class _Builder:
    """Turns a document's events into plain data in one walk, recording locations.

    A use of an anchor (``*name``) is a copy of the anchored data, located at the alias
    (where the author looks) and counted by the nodes it expands to, so a "billion laughs"
    document is refused before anything large is built.
    """

    def __init__(self, file: str, lines: list[str], events: list[Any]) -> None:
        self.doc = Document(file=file, data=None)
        self.lines = lines
        self.events = events
        self.next = 0
        self.expanded = 0  # nodes added by aliases
        self.built = 0  # nodes built from events
        self.deepest = 0  # the longest path reached, aliases expanded
        # None while the anchored node is still being built (an alias to it refers to itself)
        self.anchors: dict[str, _Anchored | None] = {}
        self.resolve: Callable[[type[Node], str | None, Any], str] = _Resolver().resolve
        self.constructor = yaml.constructor.SafeConstructor()

    def loc(self, mark: yaml.Mark) -> Loc:
        return Loc(self.doc.file, mark.line + 1, mark.column + 1)

    def fail(self, mark: yaml.Mark | None, code: str, message: str, hint: str = "") -> ParseError:
        loc = self.loc(mark) if mark else Loc(self.doc.file, 1, 1)
        return ParseError(
            Issue(
                file=loc.file,
                line=loc.line,
                column=loc.column,
                path="",
                code=code,
                message=message,
                hint=hint,
            )
        )

    def build(self, path: YamlPath) -> Any:
        """The data of the next node, whose value is at ``path``."""
        event = self.events[self.next]
        self.next += 1
        kind = type(event)
        self.doc.values.setdefault(path, self.loc(event.start_mark))
        if kind is AliasEvent:
            return self._alias(event, path)
        anchor = event.anchor
        if anchor is not None:
            self.anchors[anchor] = None
            before = (self.built, self.expanded, self.deepest)
            self.deepest = len(path)
        self.built += 1
        self.deepest = max(self.deepest, len(path))
        if kind is ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                tag = self.resolve(ScalarNode, event.value, event.implicit)
            self._check_tag(tag, event.start_mark)
            data = self._scalar(tag, event, path)
        elif kind is SequenceStartEvent:
            self._check_tag(self._collection_tag(event, SequenceNode), event.start_mark)
            data = []
            while type(self.events[self.next]) is not SequenceEndEvent:
                data.append(self.build((*path, len(data))))
            self.next += 1
        else:
            self._check_tag(self._collection_tag(event, MappingNode), event.start_mark)
            data = self._mapping(path)
        if anchor is not None:
            built, expanded, deepest = before
            size = self.built - built + self.expanded - expanded
            key = _key(data, event.value) if kind is ScalarEvent else None
            self.anchors[anchor] = _Anchored(data, size, self.deepest - len(path), key)
            self.deepest = max(deepest, self.deepest)
        return data

    def _alias(self, event: Any, path: YamlPath) -> Any:
        target = self._target(event)
        if len(path) + target.height >= MAX_DEPTH:
            raise self.fail(event.start_mark, "yaml-depth-limit", _DEPTH_MESSAGE, _DEPTH_HINT)
        self._expand(event, target.size)
        self.deepest = max(self.deepest, len(path) + target.height)
        return _copy(target.data)

    def _target(self, event: Any) -> _Anchored:
        target = self.anchors[event.anchor]  # defined: the events were checked
        if target is None:
            raise self.fail(event.start_mark, "yaml-alias-limit", "an alias refers to itself")
        return target

    def _expand(self, event: Any, size: int) -> None:
        self.expanded += size
        if self.expanded > MAX_ALIAS_EXPANSION:
            raise self.fail(
                event.start_mark,
                "yaml-alias-limit",
                f"aliases expand to more than {MAX_ALIAS_EXPANSION} nodes",
                "use aliases for small repeated blocks only",
            )

    def _alias_key(self, event: Any) -> Any:
        """The key an alias written as a key (``*name : value``) stands for, as PyYAML
        reads it: the anchored scalar's. An alias to a mapping or a list is refused."""
        kind = type(event)  # (not narrowing: PyYAML types an event's marks loosely)
        if kind is not AliasEvent:
            raise self.fail(event.start_mark, "yaml-syntax", "mapping keys must be plain scalars")
        target = self._target(event)
        if target.key is None:
            what = "a mapping" if isinstance(target.data, dict) else "a list"
            raise self.fail(
                event.start_mark,
                "yaml-syntax",
                f"the key `*{event.anchor}` refers to {what}, but a mapping key must be a"
                " plain scalar",
                f"write the key as text, or put `&{event.anchor}` on a scalar",
            )
        self._expand(event, target.size)
        return target.key

    def _collection_tag(self, event: Any, node: type[Node]) -> str:
        tag: str | None = event.tag
        if tag is None or tag == "!":
            return str(self.resolve(node, None, event.implicit))
        return tag

    def _check_tag(self, tag: str, mark: yaml.Mark) -> None:
        if tag not in _PLAIN_TAGS:
            raise self.fail(
                mark,
                "yaml-tag",
                f"the tag {tag!r} is not allowed",
                "buddy.yaml is plain data: remove the tag",
            )

    def _mapping(self, path: YamlPath) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        events = self.events
        while type(events[self.next]) is not MappingEndEvent:
            key_event = events[self.next]
            kind = type(key_event)  # (not narrowing: PyYAML types an event's marks loosely)
            self.next += 1
            if kind is not ScalarEvent:
                key = self._alias_key(key_event)
            else:
                self.built += 1
                tag = key_event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(ScalarNode, key_event.value, key_event.implicit)
                if tag not in _PLAIN_TAGS:
                    raise self.fail(
                        key_event.start_mark, "yaml-tag", f"the tag {tag!r} is not allowed"
                    )
                data = self._scalar(tag, key_event, path)
                key = (  # inline `_key`: this is the hot path
                    key_event.value if isinstance(data, bool | float) or data is None else data
                )
                if key_event.anchor is not None:  # `&name key:`: `*name` is the key's data
                    self.anchors[key_event.anchor] = _Anchored(data, 1, 0, key)
            if key in out:
                raise self.fail(
                    key_event.start_mark,
                    "yaml-duplicate-key",
                    f"duplicate key {key!r}",
                    f"the key {key!r} appears earlier in this mapping; keep one",
                )
            child = (*path, key)
            self.doc.keys.setdefault(child, self.loc(key_event.start_mark))
            out[key] = self.build(child)
        self.next += 1
        return out

    def _scalar(self, tag: str, event: Any, path: YamlPath) -> Any:
        text: str = event.value
        mark = event.start_mark
        if event.style in ("|", ">"):
            self.doc.blocks.setdefault(path, self._block_start(mark))
        if tag == _STR:
            return text
        # A tag written explicitly (`!!bool yes`) must still spell a value of its type.
        if tag == _NULL:
            if text not in ("", "~", "null", "Null", "NULL"):
                raise self.fail(mark, "yaml-syntax", f"{text!r} is not null")
            return None
        if tag == _BOOL:
            if text.lower() not in ("true", "false"):
                raise self.fail(mark, "yaml-syntax", f"{text!r} is not a boolean (true or false)")
            return text.lower() == "true"
        if tag == _INT:
            try:
                if text.startswith(("0x", "0o")):
                    return int(text[2:], 16 if text[1] == "x" else 8)
                return int(text, 10)
            except ValueError:
                raise self.fail(mark, "yaml-syntax", f"{text!r} is not an integer") from None
        if tag == _FLOAT:
            try:
                return float(
                    text.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                )
            except ValueError:
                raise self.fail(mark, "yaml-syntax", f"{text!r} is not a number") from None
        if not self.constructor.timestamp_regexp.match(text):  # e.g. `!!timestamp soon`
            raise self.fail(mark, "yaml-syntax", f"{text!r} is not a timestamp")
        try:
            return self.constructor.construct_yaml_timestamp(ScalarNode(tag, text, mark, mark))
        except ValueError as exc:
            raise self.fail(mark, "yaml-syntax", f"invalid timestamp: {exc}") from None

    def _block_start(self, mark: yaml.Mark) -> Loc:
        # The text starts on the line after the `|` or `>` header, even when that line is
        # blank; the first line with text gives the indentation.
        first = mark.line + 1
        for index in range(first, len(self.lines)):
            line = self.lines[index]
            if line.strip():
                return Loc(self.doc.file, first + 1, len(line) - len(line.lstrip(" ")) + 1)
        return self.loc(mark)  # pragma: no cover - empty block


def _key(data: Any, text: str) -> Any:
    """The mapping key a scalar makes: its data, but its text when that is a boolean, a
    float or null (so ``true:`` is the key ``"true"``)."""
    return text if isinstance(data, bool | float) or data is None else data


def parse_document(text: str, file: str, *, allow_list: bool = False) -> Document:
    """Parse YAML text into a located :class:`Document`.

    Args:
        text: The YAML.
        file: The file name to locate issues in.
        allow_list: Accept a top-level list too (scenario files); else only a mapping.

    Raises:
        ParseError: carrying the :class:`Issue`; :func:`load_document` returns it instead.
    """
    loader = _Loader(text)
    try:
        events = _read_events(loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or "invalid YAML"
        message, hint = f"YAML: {problem}", exc.context or ""
        if isinstance(exc, _DepthError):
            code = "yaml-depth-limit"
        elif "could not determine a constructor" in problem or (
            "tag" in problem and "alias" not in problem  # not `found undefined alias 'tag'`
        ):
            code = "yaml-tag"
        else:
            code = "yaml-syntax"
            message, hint = explain(exc, text)
        raise ParseError(
            Issue(
                file=file,
                line=line,
                column=col,
                path="",
                code=code,
                message=message,
                hint=hint,
            )
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses anywhere, e.g. NUL
        raise ParseError(_bad_character(text, file, exc.character)) from None
    finally:
        loader.dispose()
    if not events:
        raise ParseError(
            Issue(
                file=file,
                line=1,
                column=1,
                path="",
                code="yaml-not-mapping",
                message="the file is empty",
                hint="write a mapping",
            )
        )
    builder = _Builder(file, text.splitlines(), events)
    data = builder.build(())
    if not isinstance(data, dict) and not (allow_list and isinstance(data, list)):
        raise builder.fail(
            events[0].start_mark,
            "yaml-not-mapping",
            "the top level must be a mapping of keys to values",
        )
    builder.doc.data = data
    return builder.doc


def _bad_character(text: str, file: str, character: int | str) -> Issue:
    code = character if isinstance(character, int) else ord(character[:1] or "\0")
    # The reader stops at the first character it refuses, so that is its first occurrence
    # (its own position counts UTF-8 bytes with libyaml, characters without).
    before = _LINE_BREAK.split(text[: max(text.find(chr(code)), 0)])
    return Issue(
        file=file,
        line=len(before),
        column=len(before[-1]) + 1,
        path="",
        code="yaml-syntax",
        message=f"YAML: the character U+{code:04X} is not allowed in a YAML file",
        hint=f'remove it, or write it as an escape inside double quotes: "\\u{code:04x}"',
    )


def load_document(
    path: Path, display: str | None = None, *, allow_list: bool = False
) -> Document | Issue:
    """Read and parse a YAML file, or return the :class:`Issue` that stops it.

    Only a regular file of at most :data:`MAX_FILE_BYTES` is read (see
    :func:`buddy.compile.project.read_file`).
    """
    file = display or str(path)
    text = _read_text(path, file, "yaml-syntax")
    if isinstance(text, Issue):
        return _with_split_hint(text)
    key = (file, allow_list, text)
    parsed = _PARSED.get(key)
    if parsed is None:
        try:
            parsed = parse_document(text, file, allow_list=allow_list)
        except ParseError as exc:
            return exc.issue
        if len(text) <= _PARSED_TEXT_MAX:
            _PARSED[key] = parsed
        while len(_PARSED) > _PARSED_MAX:
            del _PARSED[next(iter(_PARSED))]
    # Each caller gets its own data: a compile may merge into it.
    return dataclasses.replace(
        parsed,
        data=_copy(parsed.data),
        values=dict(parsed.values),
        keys=dict(parsed.keys),
        blocks=dict(parsed.blocks),
    )


def _copy(value: Any) -> Any:
    """A copy of plain data (what :class:`_Builder` makes: no shared parts, and every
    leaf immutable)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


# The documents parsed in this process, by file name and text: a shared trait file or
# relation spec read by every buddy of a project is parsed once (the text is read and
# compared every time, so an edited file is parsed again).
_PARSED: dict[tuple[str, bool, str], Document] = {}
_PARSED_MAX = 256
_PARSED_TEXT_MAX = 64 * 1024  # larger files are not kept: 256 of them stay a few MiB


def _read_text(path: Path, file: str, code: str) -> str | Issue:
    """The UTF-8 text of a regular file of at most :data:`MAX_FILE_BYTES` (a BOM is
    dropped), or the issue refusing it (``code`` for bytes that are not UTF-8)."""
    raw = read_file(path, file, MAX_FILE_BYTES)
    if isinstance(raw, Issue):
        return raw
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Issue(
            file=file,
            line=line,
            column=1,
            path="",
            code=code,
            message="the file is not valid UTF-8",
        )


def _with_split_hint(issue: Issue) -> Issue:
    if issue.code != "file-too-large":
        return issue
    return dataclasses.replace(issue, hint="split large content into resources/ or trait files")


# ---------------------------------------------------------------- strict JSON

# One JSON token: a string (escapes skipped, possibly unterminated), a bracket, or a bare
# word (number, true, false, null — or what strict JSON refuses, such as NaN).
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]|[^\s\[\]{},:"]+', re.S)


class _NotStrict(Exception):
    """A token the json module would turn into a value strict JSON does not have."""

    def __init__(self, token: str, message: str) -> None:
        self.token = token
        self.message = message


def _refuse_constant(token: str) -> Any:
    raise _NotStrict(token, f"`{token}` is not a JSON value")


def _finite_float(token: str) -> float:
    value = float(token)
    if value in (float("inf"), float("-inf")):
        raise _NotStrict(token, f"the number `{token}` is out of range (it would be infinite)")
    return value


def _bounded_int(token: str) -> int:
    try:
        return int(token)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        raise _NotStrict(token, f"the number `{token[:12]}…` has too many digits") from None


def _json_position(text: str, offset: int) -> tuple[int, int]:
    # The json module's own lines and columns: only `\n` breaks a line.
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _json_too_deep(text: str) -> int | None:
    """The offset of the first value nested deeper than :data:`MAX_DEPTH`, counted as in
    YAML (in ``{"a": ["x"]}`` the object is level 1, the array 2 and ``"x"`` 3)."""
    if text.count("[") + text.count("{") < MAX_DEPTH:  # too few brackets to be too deep
        return None
    depth = 0  # open brackets around the token
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("]", "}"):
            depth -= 1
            continue
        if depth >= MAX_DEPTH:  # this value would be level depth + 1
            return match.start()
        if token in ("[", "{"):
            depth += 1
    return None


def load_json(path: Path, display: str | None = None, *, code: str) -> Document | Issue:
    """Read strict JSON (an object at the top), located like a YAML :class:`Document`.

    Strict: what the json module parses, minus what it accepts beyond the standard —
    ``NaN``, ``Infinity``, ``-Infinity`` and numbers too large for a float, none of which
    can be written back as JSON. Nesting is bounded by the same :data:`MAX_DEPTH` as YAML
    (``json-depth-limit``), checked before parsing, so a deep file is a located issue and
    never a ``RecursionError``. Only a regular file of at most :data:`MAX_FILE_BYTES` is
    read.

    Args:
        path: The file.
        display: The name to locate issues at (``path`` by default).
        code: The code of a file that is not strict JSON (``widget-json``, ``data-json``).
    """
    file = display or str(path)
    text = _read_text(path, file, code)
    if isinstance(text, Issue):
        return text
    deep = _json_too_deep(text)
    if deep is not None:
        line, column = _json_position(text, deep)
        return Issue(
            file=file,
            line=line,
            column=column,
            path="",
            code="json-depth-limit",
            message=_DEPTH_MESSAGE,
            hint=_DEPTH_HINT,
        )
    try:
        data = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as exc:
        return Issue(
            file=file,
            line=exc.lineno,
            column=exc.colno,
            path="",
            code=code,
            message=f"invalid JSON: {exc.msg}",
        )
    except _NotStrict as exc:
        where = next((m.start() for m in _JSON_TOKEN.finditer(text) if m.group() == exc.token), 0)
        line, column = _json_position(text, where)
        return Issue(
            file=file,
            line=line,
            column=column,
            path="",
            code=code,
            message=f"invalid JSON: {exc.message}",
            hint="strict JSON has ordinary numbers only",
        )
    if not isinstance(data, dict):
        return Issue(
            file=file,
            line=1,
            column=1,
            path="",
            code=code,
            message=f"{path.name} must hold a JSON object",
        )
    try:
        loaded = parse_document(text, file)  # the same text again, for node locations
    except ParseError:  # JSON that YAML cannot read (e.g. `\/`): no locations, still checked
        loaded = parse_document("{}", file)
    loaded.data = data
    return loaded
