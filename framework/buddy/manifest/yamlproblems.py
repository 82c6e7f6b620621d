"""PyYAML's parse errors, said as the likely mistake.

The parser names what its grammar expected (``mapping values are not allowed here``,
``expected <block end>, but found '<block mapping start>'``) — and both of its parsers,
libyaml's and the pure-Python one, say it differently. An author's mistake behind them
is nearly always one of a few: a value with ``: `` in it, a key indented off its
mapping, a line in a list that is not an item, an unclosed bracket or quote, a tab, a
line that starts with ``:``, an anchor defined twice. Each is told here as a sentence
naming the lines involved, with the fix (a tab shown as ``\\t``, never raw); a problem not
recognised keeps the parser's words. The location stays where the parser stopped.
"""

from __future__ import annotations

import re

import yaml

__all__ = ["explain"]

# What YAML counts as a line break (as the parser's marks do).
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
# `key: value` at the start of a line (after any `- `), the value not empty.
_KEY_VALUE = re.compile(r"^\s*(?:-\s+)*([^\s#'\"{\[][^:#]*?|'[^']*'|\"[^\"]*\"):\s+(\S.*)$")
_KEY = re.compile(r"^\s*(?:-\s+)*([^\s:#][^:#]*?):(?:\s|$)")


def explain(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, str]:
    """``(message, hint)`` for a parse error of ``text`` (a tab in them shown as ``\\t``)."""
    message, hint = _explain(exc, text)
    return message.replace("\t", "\\t"), hint.replace("\t", "\\t")


def _explain(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, str]:
    problem = exc.problem or "invalid YAML"
    context = exc.context or ""
    lines = _LINE_BREAK.split(text)
    mark, opened = exc.problem_mark, exc.context_mark
    row = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
    column = mark.column if mark is not None else 0
    on = f" on line {opened.line + 1}" if opened is not None else ""
    at_line_start = row[:column].strip() == ""

    if problem.startswith("found undefined alias"):  # (its name may read as anything below)
        name = problem.removeprefix("found undefined alias").strip(" '")
        return (
            f"YAML: `*{name}` refers to an anchor `&{name}` that is not defined before it",
            "`*` starts an alias: quote the value if the `*` is meant as text",
        )
    if context.startswith("found duplicate anchor") and opened is not None:
        name = context.removeprefix("found duplicate anchor").partition(";")[0].strip()[1:-1]
        return (
            f"YAML: the anchor `&{name}` is defined twice: first on line {opened.line + 1},"
            f" column {opened.column + 1}, and again here",
            f"give each anchor its own name (and each `*{name}` the name of the one it means),"
            f" or remove one `&{name}`",
        )
    if "tab character" in problem or (
        row[column : column + 1] == "\t"
        and ("cannot start any token" in problem or "'\\t'" in problem)
    ):
        return _tab(row, column, at_line_start)
    if at_line_start and row[column : column + 1] == ":":
        return _missing_key(row[column + 1 :].strip())
    if problem in (
        "block sequence entries are not allowed in this context",  # libyaml
        "sequence entries are not allowed here",  # PyYAML
    ):
        return _item_after_key(row, column)
    if problem.startswith("mapping values are not allowed"):
        return _colon(lines, mark.line if mark is not None else 0, row, column)
    if "block mapping" in context and (
        problem.startswith("expected <block end>") or problem == "did not find expected key"
    ):
        if not at_line_start:
            return (
                "YAML: unexpected text after the value on this line",
                "a value that goes on after a closing quote must be quoted whole; inside "
                "single quotes a quote is written twice ('it''s')",
            )
        above = " or ".join(f"column {c} (line {n})" for c, n in _levels(lines, mark))
        return (
            f"YAML: this line is indented to column {column + 1}, but the keys above it start"
            f" in {above or 'other columns'}",
            "keys of one mapping start in the same column: indent it like the key it belongs"
            " beside",
        )
    if "block collection" in context:
        return (
            f"YAML: this line is inside a list (it starts{on}) but is not a `- ` item",
            "start it with `- `, indent it under the item it belongs to, or indent it less"
            " to end the list",
        )
    if problem == "could not find expected ':'":
        return (
            f"YAML: the text{on} reads as a key, but no `:` follows it",
            "write `key: value`; a line that continues a value belongs inside it (quote the"
            " value, or write it as a `|` block)",
        )
    if "cannot start any token" in problem:
        start = row[column : column + 1] or "this character"
        return (
            f"YAML: a plain value cannot start with `{start}`",
            f"quote the value: {_quoted(row[column:].strip())}",
        )
    for bracket, closing in (("sequence", "]"), ("mapping", "}")):
        if f"flow {bracket}" in context:
            opening = "[" if closing == "]" else "{"
            return (
                f"YAML: the `{opening}` opened{on} is not closed where YAML expected `,` or"
                f" `{closing}`",
                f"close it with `{closing}`, separate its items with `,`, and quote an item"
                " that contains `:`, `,` or a bracket",
            )
    if "quoted scalar" in context:
        return (
            f"YAML: the quoted value opened{on} is never closed",
            "add the closing quote (inside single quotes a quote is written twice: 'it''s')",
        )
    if problem == "but found another document":
        return (
            "YAML: a second document starts here",
            "the file holds a single document: remove the `---` line, or what follows it",
        )
    return f"YAML: {problem}", context


def _tab(row: str, column: int, in_indentation: bool) -> tuple[str, str]:
    """A tab where YAML wants a space: in the indentation, or after `key:`, `-` or a value
    (libyaml reads some of these as spaces; PyYAML's own parser refuses them all)."""
    if in_indentation:
        return (
            "YAML: a tab in the indentation",
            "YAML indents with spaces only: replace the tab with spaces",
        )
    head, after = row[:column].rstrip(" \t"), row[column:].lstrip(" \t")
    before = head.split()[-1] if head.split() else head
    if len(before) > 30:
        before = "…" + before[-29:]
    if not after:
        return (
            f"YAML: a tab (`\\t`) at the end of the line, after `{before}`",
            "remove it: YAML separates with spaces only",
        )
    fixed = f"{head} {after}".strip()
    example = f": `{fixed}`" if len(fixed) <= 60 and "\t" not in fixed else ""
    return (
        f"YAML: a tab (`\\t`) after `{before}`, where YAML needs a space",
        f"replace the tab with a space{example}",
    )


def _item_after_key(row: str, column: int) -> tuple[str, str]:
    """``key: - item``: a block list cannot start on its key's line."""
    same_line = _KEY_VALUE.match(row)
    if same_line is None or same_line.start(2) != column:
        return (
            "YAML: a list item (`- `) cannot start here",
            "put each `- ` item on its own line, indented under its key",
        )
    key, value = same_line.group(1), same_line.group(2).strip()
    return (
        f"YAML: a list item (`- `) cannot start on the line of its key `{key}`",
        f"put each `- ` item on its own line below `{key}:`, indented; if the `-` is text,"
        f" quote the value: `{key}: {_quoted(value)}`",
    )


def _missing_key(rest: str) -> tuple[str, str]:
    """A line that starts with `:` (a value with no key before it)."""
    message = "YAML: this line starts with `:`, but no key comes before it"
    if not rest:
        return message, "write the key before the `:` (`key: value`)"
    return (
        message,
        f"write the key before the `:` (`key: {rest}`); if `: {rest}` is text, quote the"
        " value it belongs to",
    )


def _colon(lines: list[str], line: int, row: str, column: int) -> tuple[str, str]:
    """``mapping values are not allowed here``: a `: ` inside a value, or a key indented
    under one that already has a value."""
    same_line = _KEY_VALUE.match(row)
    if same_line and same_line.start(2) <= column:
        key, value = same_line.group(1), same_line.group(2).strip()
        return (
            f"YAML: the value of `{key}` contains `: `, which YAML reads as the start of a mapping",
            f"quote the value: `{key}: {_quoted(value)}`",
        )
    key = _KEY.match(row)
    above = next(
        (
            (n, lines[n])
            for n in range(line - 1, -1, -1)
            if lines[n].strip() and not lines[n].lstrip().startswith("#")
        ),
        None,
    )
    if key and above is not None:
        n, text = above
        parent = _KEY_VALUE.match(text)
        if parent and _indent(text) < _indent(row):
            return (
                f"YAML: `{key.group(1)}` is indented under `{parent.group(1)}` (line {n + 1}),"
                " which already has a value on its line",
                f"indent `{key.group(1)}` like the keys beside it; to nest it, leave "
                f"`{parent.group(1)}:` with no value on its line",
            )
    return (
        "YAML: a `:` here starts a mapping where YAML cannot begin one",
        "check this line's indentation, and quote a value that contains `: `",
    )


def _levels(lines: list[str], mark: yaml.Mark | None) -> list[tuple[int, int]]:
    """The columns keys start in above ``mark``'s line, each with the line nearest it:
    what the line could have been aligned with."""
    levels: list[tuple[int, int]] = []
    for n in range(mark.line - 1 if mark is not None else -1, -1, -1):
        text = lines[n]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        start = _item_start(text)
        if not levels or start < levels[-1][0] - 1:
            levels.append((start + 1, n + 1))
        if start == 0:
            break
    return levels[:3]


def _item_start(line: str) -> int:
    """Where a line's content starts, past any `- ` list markers."""
    match = re.match(r"\s*(?:-\s+)*", line)
    return match.end() if match else 0


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _quoted(value: str) -> str:
    if "\t" in value or ('"' not in value and "\\" not in value):  # a tab as its escape
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
        return f'"{escaped}"'
    return "'" + value.replace("'", "''") + "'"
