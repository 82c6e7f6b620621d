"""YAML events in, plain data out — every node located, checked as a reviewer needs.

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

:func:`buddy.manifest.yamlio.parse_document` runs them: :class:`EventParser` and
:func:`read_events` give the checked events, :class:`Builder` the located data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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

from buddy.errors import Issue, ParseError
from buddy.manifest.document import Document, Loc, YamlPath

__all__ = [
    "DEPTH_HINT",
    "DEPTH_MESSAGE",
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "Builder",
    "DepthError",
    "EventParser",
    "copy_data",
    "read_events",
]

MAX_ALIAS_EXPANSION = 10_000
# Far deeper than any manifest or JSON Schema needs, and far from Python's recursion limit
# (composing, building and validating recurse a few frames per level).
MAX_DEPTH = 64
DEPTH_MESSAGE = f"the document nests more than {MAX_DEPTH} levels deep"
DEPTH_HINT = "flatten the structure"


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_PLAIN_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP, _SEQ, _MAP}


class _Resolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core-schema resolution (see the module docstring)."""

    yaml_implicit_resolvers = {}  # noqa: RUF012 - PyYAML's own class-level table, replaced


class DepthError(yaml.composer.ComposerError):
    """The document nests deeper than :data:`MAX_DEPTH` (raised while reading events)."""


if yaml.__with_libyaml__:
    # libyaml's C parser emits the events, several times faster than PyYAML's own.
    from yaml.cyaml import CParser  # type: ignore[attr-defined]

    class EventParser(CParser, _Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _Resolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class EventParser(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _Resolver
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            _Resolver.__init__(self)


_STARTS = (ScalarEvent, SequenceStartEvent, MappingStartEvent)
_ENDS = (SequenceEndEvent, MappingEndEvent)


def read_events(loader: EventParser) -> list[Any]:
    """The events of the one document in the stream (``[]`` for none), checked as PyYAML's
    composer checks them — one document, no undefined alias, no anchor defined twice —
    and for nesting deeper than :data:`MAX_DEPTH`.

    Composing no node graph: :class:`Builder` turns the events into data in one walk.
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
                raise DepthError(DEPTH_HINT, None, DEPTH_MESSAGE, event.start_mark)
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
# The first characters a plain scalar other than a string can start with: any other plain
# scalar, and every quoted one, is a string without asking the resolver (what it would
# answer; most scalars of a manifest are such texts and names).
_NOT_ONLY_TEXT = frozenset(first for first in _Resolver.yaml_implicit_resolvers if first)
assert None not in _Resolver.yaml_implicit_resolvers and not _Resolver.yaml_path_resolvers


class _Anchored:
    """A node with an anchor: its data, how many nodes it expands to, how deep it is, and
    for a scalar the mapping key it makes (``None`` for a mapping or a list)."""

    __slots__ = ("data", "height", "key", "size")

    def __init__(self, data: Any, size: int, height: int, key: Any = None) -> None:
        self.data = data
        self.size = size
        self.height = height
        self.key = key


class Builder:
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
                value, implicit = event.value, event.implicit
                text = not implicit[0] or (value != "" and value[0] not in _NOT_ONLY_TEXT)
                tag = _STR if text else self.resolve(ScalarNode, value, implicit)
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
            raise self.fail(event.start_mark, "yaml-depth-limit", DEPTH_MESSAGE, DEPTH_HINT)
        self._expand(event, target.size)
        self.deepest = max(self.deepest, len(path) + target.height)
        return copy_data(target.data)

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
                    value, implicit = key_event.value, key_event.implicit
                    text = not implicit[0] or (value != "" and value[0] not in _NOT_ONLY_TEXT)
                    tag = _STR if text else self.resolve(ScalarNode, value, implicit)
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


def copy_data(value: Any) -> Any:
    """A copy of plain data (what :class:`Builder` makes: no shared parts, and every
    leaf immutable)."""
    if isinstance(value, dict):
        return {key: copy_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_data(item) for item in value]
    return value
