"""Plain YAML (and strict JSON) files in, located plain data out.

:func:`parse_document` turns YAML text into a :class:`Document` whose every node is
located, by the rules of :mod:`buddy.manifest.yamlbuild` (plain-data tags only, YAML 1.2
scalars, no duplicate keys, bounded aliases and nesting). :func:`load_document` reads a
file for it: files larger than :data:`MAX_FILE_BYTES`, and anything but a regular file (a
FIFO would block the reader), are refused before parsing.

JSON files (widget schemas, ``data-access.json``) are read by :func:`load_json`: strict
JSON, under the same depth and size limits, located the same way.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import yaml

from buddy.compile.project import read_file
from buddy.errors import Issue, ParseError
from buddy.manifest.document import Document, Loc, YamlPath, format_path
from buddy.manifest.yamlbuild import (
    DEPTH_HINT,
    DEPTH_MESSAGE,
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    Builder,
    DepthError,
    EventParser,
    copy_data,
    read_events,
)
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


# What YAML counts as a line break (as the parser's marks do).
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def parse_document(text: str, file: str, *, allow_list: bool = False) -> Document:
    """Parse YAML text into a located :class:`Document`.

    Args:
        text: The YAML.
        file: The file name to locate issues in.
        allow_list: Accept a top-level list too (scenario files); else only a mapping.

    Raises:
        ParseError: carrying the :class:`Issue`; :func:`load_document` returns it instead.
    """
    loader = EventParser(text)
    try:
        events = read_events(loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or "invalid YAML"
        message, hint = f"YAML: {problem}", exc.context or ""
        if isinstance(exc, DepthError):
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
    builder = Builder(file, text.splitlines(), events)
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
        data=copy_data(parsed.data),
        values=dict(parsed.values),
        keys=dict(parsed.keys),
        blocks=dict(parsed.blocks),
    )


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
            message=DEPTH_MESSAGE,
            hint=DEPTH_HINT,
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
