"""A :class:`~buddy.review.diff.Report` as text (terminals) or Markdown (pull-request comments).

Both are deterministic: the same two versions give the same bytes, wherever they are
checked out.
"""

from __future__ import annotations

import re
from html import escape

from buddy.errors import Issue
from buddy.review.diff import BuddyDiff, Report

__all__ = ["COMMENT_MARKER", "MAX_COMMENT_CHARS", "describe", "markdown", "text"]

# The first line of a Markdown report, so a workflow can find and update its own comment.
COMMENT_MARKER = "<!-- buddy-diff -->"
# GitHub refuses comments over 65,536 characters; diffs that would not fit are left out.
MAX_COMMENT_CHARS = 60_000


def describe(entry: BuddyDiff) -> str:
    """A short status for one buddy, e.g. ``changed``, ``now invalid``, ``added``."""
    if entry.status == "added":
        return "added (invalid)" if entry.new_issues else "added"
    if entry.status == "removed":
        return "removed"
    if entry.status == "affected":
        return "still invalid" if entry.new_issues else "view unchanged"
    if entry.new_issues and not entry.old_issues:
        return "now invalid"
    if entry.old_issues and not entry.new_issues:
        return "now valid"
    if entry.old_issues and entry.new_issues:
        return "still invalid"
    return "changed"


def _counts(entry: BuddyDiff) -> str:
    if entry.diff or entry.group_diff:
        return f"+{entry.added_lines} -{entry.removed_lines}"
    if entry.new_issues:
        n = len(entry.new_issues)
        return f"{n} problem{'s' if n != 1 else ''}"
    return ""


def _headline(report: Report) -> str:
    n = report.compared
    noun = "buddy" if n == 1 else "buddies"
    if report.nothing_compiled:
        return (
            f"nothing compiled: {n} {noun} compared, none compiles on either side, so no"
            " view could be compared (the problems are below)"
        )
    stuck = len(report.uncompiled)
    tail = f"; {stuck} compile on neither side (problems below)" if stuck else ""
    if not report.changed:
        return f"no changes: {n} {noun} compared, every compiled view is the same" + tail
    tally: dict[str, int] = {}
    for entry in report.buddies:
        tally[entry.status] = tally.get(entry.status, 0) + 1
    parts = [f"{tally[s]} {s}" for s in ("changed", "added", "removed", "affected") if s in tally]
    return f"{n} {noun} compared: " + ", ".join(parts) + tail


def _issue_lines(issues: tuple[Issue, ...]) -> list[str]:
    out = []
    for i in issues:
        where = f"{i.file}:{i.line}:{i.column}" if i.line else i.file
        field = f" [{i.path}]" if i.path else ""
        out.append(f"{where}: error: {i.message}{field} ({i.code})")
        if i.hint:
            out.append(f"    hint: {i.hint}")
    return out


def _problems(report: Report, entry: BuddyDiff) -> list[tuple[str, tuple[Issue, ...]]]:
    """Whose problems to show, by side label: the new side's, and the old side's if different."""
    shown = []
    # An `affected` buddy's problems are the same on both sides (else it would be `changed`).
    if entry.old_issues and entry.status != "affected":
        shown.append((report.old.label, entry.old_issues))
    if entry.new_issues:
        shown.append((report.new.label, entry.new_issues))
    return shown


def text(report: Report) -> str:
    """The report for a terminal: a summary, shared files, then each buddy's diff."""
    out = [f"buddy diff {report.old.label} -> {report.new.label}: {_headline(report)}"]
    if report.shared:
        out += ["", "changed shared files (and the buddies that depend on them):"]
        for change in report.shared:
            out.append(f"  {change.file}: {', '.join(change.buddies)}")
    for entry in report.buddies:
        head = f"=== {entry.name}: {describe(entry)}"
        counts = _counts(entry)
        out += ["", head + (f" ({counts})" if counts else "")]
        if entry.changed_files:
            out.append("changed files it depends on: " + ", ".join(entry.changed_files))
        for side, issues in _problems(report, entry):
            out.append(f"problems in {side}:")
            out += ["  " + line for line in _issue_lines(issues)]
        if entry.diff:
            out.append(entry.diff.rstrip("\n"))
        if entry.group_diff:
            out.append(entry.group_diff.rstrip("\n"))
    for name, issues in report.uncompiled:
        out += ["", f"=== {name}: compiles on neither side"]
        out += ["  " + line for line in _issue_lines(issues)]
    return "\n".join(out) + "\n"


def _fence(body: str, lang: str) -> str:
    """A code block whose fence is longer than any backtick run inside (views have them)."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body.rstrip(chr(10))}\n{ticks}\n"


def _code(value: str) -> str:
    """Inline code for a table cell (paths may not contain backticks or pipes safely)."""
    return "`" + value.replace("`", "'").replace("|", "\\|") + "`"


def _details(report: Report, entry: BuddyDiff) -> str:
    counts = _counts(entry)
    summary = f"<code>{escape(entry.name)}</code> · {describe(entry)}" + (
        f" · {counts}" if counts else ""
    )
    parts = [f"<details>\n<summary>{summary}</summary>\n"]
    if entry.changed_files:
        files = ", ".join(_code(f) for f in entry.changed_files)
        parts.append(f"Changed files it depends on: {files}\n")
    for side, issues in _problems(report, entry):
        lines = "\n".join(_issue_lines(issues))
        parts.append(f"Problems in {_code(side)}:\n\n" + _fence(lines, "text"))
    if entry.diff:
        parts.append(_fence(entry.diff, "diff"))
    if entry.group_diff:
        parts.append("Group conversation system prompt:\n\n" + _fence(entry.group_diff, "diff"))
    if entry.status == "affected":
        parts.append(
            "The compiled view is the same; review the changed files themselves "
            "(plugin code, for example, is not part of the view).\n"
        )
    parts.append("</details>\n")
    return "\n".join(parts)


def markdown(report: Report, *, max_chars: int = MAX_COMMENT_CHARS) -> str:
    """The report as a pull-request comment.

    A summary table, the changed shared files, then one collapsible ``<details>`` per
    buddy with its diff. Diffs that would push the comment past ``max_chars`` are left
    out with a note (run ``buddy diff`` locally to see them).
    """
    headline = _headline(report)
    head = [
        COMMENT_MARKER,
        f"### buddy diff: `{report.old.label}` → `{report.new.label}`\n",
        headline[0].upper() + headline[1:] + ".\n",
    ]
    if report.buddies:
        rows = ["| buddy | change | view | changed files it depends on |", "|---|---|---|---|"]
        for entry in report.buddies:
            files = "<br>".join(_code(f) for f in entry.changed_files)
            rows.append(f"| {_code(entry.name)} | {describe(entry)} | {_counts(entry)} | {files} |")
        head.append("\n".join(rows) + "\n")
    if report.shared:
        lines = ["**Changed shared files** and the buddies that depend on them:\n"]
        for change in report.shared:
            lines.append(f"- {_code(change.file)}: " + ", ".join(map(_code, change.buddies)))
        head.append("\n".join(lines) + "\n")
    if report.uncompiled:
        lines = ["**Compile on neither side** (their views could not be compared):\n"]
        for name, issues in report.uncompiled:
            lines.append(f"- {_code(name)}")
            lines += [f"  - {escape(line.strip())}" for line in _issue_lines(issues)]
        head.append("\n".join(lines) + "\n")
    out = "\n".join(head)
    for entry in report.buddies:
        block = _details(report, entry)
        if len(out) + len(block) + 1 > max_chars:
            block = (
                f"<details>\n<summary><code>{escape(entry.name)}</code> · {describe(entry)}</summary>\n\n"
                "Diff left out: the comment would be too long. "
                "Run `buddy diff` locally to see it.\n\n</details>\n"
            )
        out += "\n" + block
    return out
