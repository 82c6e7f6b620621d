"""Plain YAML in, plain data out — with the file, line and column of every node.

Rules (why: a buddy.yaml is config a reviewer reads, not a program):

* PyYAML's *safe* composer only; every node's tag must be a plain-data tag, so
  ``!!python/object`` and friends are refused rather than silently ignored.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent
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


class _Alias:
    """A use of an anchor, kept apart so expansion can be counted and located."""

    __slots__ = ("mark", "target")

    def __init__(self, target: Node, mark: yaml.Mark) -> None:
        self.target = target
        self.mark = mark


class _Resolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core-schema resolution (see the module docstring)."""

    yaml_implicit_resolvers = {}  # noqa: RUF012 - PyYAML's own class-level table, replaced


class _DepthError(yaml.composer.ComposerError):
    """The document nests deeper than :data:`MAX_DEPTH` (raised while composing)."""


class _Composer(yaml.composer.Composer):
    """PyYAML's composer, except that a use of an anchor stays visible as an ``_Alias``.

    It also stops at nesting deeper than :data:`MAX_DEPTH`: it recurses once per level.
    """

    depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):  # type: ignore[attr-defined]
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            target = super().compose_node(parent, index)
            assert target is not None
            return _Alias(target, mark)  # type: ignore[return-value]
        if self.depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            raise _DepthError(_DEPTH_HINT, None, _DEPTH_MESSAGE, mark)  # context: the hint
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


if yaml.__with_libyaml__:
    # libyaml's C parser emits the events; composition stays in Python (above), so alias
    # handling and locations are the same — and parsing is several times faster.
    from yaml.cyaml import CParser  # type: ignore[attr-defined]

    class _Loader(_Composer, CParser, _Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _Resolver.__init__(self)
            _Composer.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _Composer, _Resolver
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            _Composer.__init__(self)
            _Resolver.__init__(self)


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


class _Builder:
    """Turns the composed node graph into plain data, recording locations."""

    def __init__(self, file: str, lines: list[str]) -> None:
        self.doc = Document(file=file, data=None)
        self.lines = lines
        self.expanded = 0
        self.alias_mark: yaml.Mark | None = None
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

    def build(self, node: Node | _Alias, path: YamlPath, stack: tuple[int, ...] = ()) -> Any:
        if isinstance(node, _Alias):
            if id(node.target) in stack:
                raise self.fail(node.mark, "yaml-alias-limit", "an alias refers to itself")
            # Nodes reached through an alias are located at the alias, where the author looks.
            self._place(path, node.mark, stack)
            if not stack:
                self.alias_mark = node.mark
            return self.build(node.target, path, (*stack, id(node.target)))
        if len(path) >= MAX_DEPTH:  # reachable only through aliases: composing stops earlier
            mark = self.alias_mark if stack else node.start_mark
            raise self.fail(mark, "yaml-depth-limit", _DEPTH_MESSAGE, _DEPTH_HINT)
        if stack:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_EXPANSION:
                raise self.fail(
                    self.alias_mark,
                    "yaml-alias-limit",
                    f"aliases expand to more than {MAX_ALIAS_EXPANSION} nodes",
                    "use aliases for small repeated blocks only",
                )
        self._place(path, node.start_mark, stack)
        if node.tag not in _PLAIN_TAGS:
            raise self.fail(
                node.start_mark,
                "yaml-tag",
                f"the tag {node.tag!r} is not allowed",
                "buddy.yaml is plain data: remove the tag",
            )
        if isinstance(node, ScalarNode):
            return self._scalar(node, path, stack)
        if isinstance(node, SequenceNode):
            return [self.build(item, (*path, i), stack) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self._mapping(node, path, stack)
        raise self.fail(node.start_mark, "yaml-syntax", "unsupported node")  # pragma: no cover

    def _place(self, path: YamlPath, mark: yaml.Mark, stack: tuple[int, ...]) -> None:
        if not stack:
            self.doc.values.setdefault(path, self.loc(mark))

    def _mapping(self, node: MappingNode, path: YamlPath, stack: tuple[int, ...]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, _Alias) or not isinstance(key_node, ScalarNode):
                mark = key_node.mark if isinstance(key_node, _Alias) else key_node.start_mark
                raise self.fail(mark, "yaml-syntax", "mapping keys must be plain scalars")
            if key_node.tag not in _PLAIN_TAGS:
                raise self.fail(
                    key_node.start_mark, "yaml-tag", f"the tag {key_node.tag!r} is not allowed"
                )
            key = self._scalar(key_node, path, stack)
            if isinstance(key, bool | float) or key is None:
                key = key_node.value
            try:
                duplicate = key in out
            except TypeError:  # an unhashable key (cannot happen for scalars)  # pragma: no cover
                duplicate = False
            if duplicate:
                raise self.fail(
                    key_node.start_mark,
                    "yaml-duplicate-key",
                    f"duplicate key {key!r}",
                    f"the key {key!r} appears earlier in this mapping; keep one",
                )
            child = (*path, key)
            if not stack:
                self.doc.keys.setdefault(child, self.loc(key_node.start_mark))
            out[key] = self.build(value_node, child, stack)
        return out

    def _scalar(self, node: ScalarNode, path: YamlPath, stack: tuple[int, ...]) -> Any:
        tag = node.tag
        text: str = node.value
        if node.style in ("|", ">") and not stack:
            self.doc.blocks.setdefault(path, self._block_start(node))
        if tag == _STR:
            return text
        # A tag written explicitly (`!!bool yes`) must still spell a value of its type.
        if tag == _NULL:
            if text not in ("", "~", "null", "Null", "NULL"):
                raise self.fail(node.start_mark, "yaml-syntax", f"{text!r} is not null")
            return None
        if tag == _BOOL:
            if text.lower() not in ("true", "false"):
                raise self.fail(
                    node.start_mark, "yaml-syntax", f"{text!r} is not a boolean (true or false)"
                )
            return text.lower() == "true"
        if tag == _INT:
            try:
                if text.startswith(("0x", "0o")):
                    return int(text[2:], 16 if text[1] == "x" else 8)
                return int(text, 10)
            except ValueError:
                raise self.fail(
                    node.start_mark, "yaml-syntax", f"{text!r} is not an integer"
                ) from None
        if tag == _FLOAT:
            try:
                return float(
                    text.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                )
            except ValueError:
                raise self.fail(
                    node.start_mark, "yaml-syntax", f"{text!r} is not a number"
                ) from None
        if not self.constructor.timestamp_regexp.match(text):  # e.g. `!!timestamp soon`
            raise self.fail(node.start_mark, "yaml-syntax", f"{text!r} is not a timestamp")
        try:
            return self.constructor.construct_yaml_timestamp(node)
        except ValueError as exc:
            raise self.fail(node.start_mark, "yaml-syntax", f"invalid timestamp: {exc}") from None

    def _block_start(self, node: ScalarNode) -> Loc:
        # The text starts on the line after the `|` or `>` header, even when that line is
        # blank; the first line with text gives the indentation.
        first = node.start_mark.line + 1
        for index in range(first, len(self.lines)):
            line = self.lines[index]
            if line.strip():
                return Loc(self.doc.file, first + 1, len(line) - len(line.lstrip(" ")) + 1)
        return self.loc(node.start_mark)  # pragma: no cover - empty block


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
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or "invalid YAML"
        message, hint = f"YAML: {problem}", exc.context or ""
        if isinstance(exc, _DepthError):
            code = "yaml-depth-limit"
        elif "could not determine a constructor" in problem or "tag" in problem:
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
    builder = _Builder(file, text.splitlines())
    if root is None:
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
    data = builder.build(root, ())
    if not isinstance(data, dict) and not (allow_list and isinstance(data, list)):
        raise builder.fail(
            root.start_mark if not isinstance(root, _Alias) else root.mark,
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
    try:
        return parse_document(text, file, allow_list=allow_list)
    except ParseError as exc:
        return exc.issue


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
