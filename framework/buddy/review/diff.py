"""Compare the compiled views of buddies between two versions of a project.

A *side* is one version: a root directory and the ``buddy.yaml`` files found under it.
Buddies are matched by their manifest's path relative to the root. For each buddy the
deterministic Markdown view of :mod:`buddy.compile.render` is compared (the private
conversation's, plus the group conversation's system prompt when it changes
differently), and every file the buddy depends on (``Blueprint.files``: manifests,
templates, traits, plugins, widget schemas, resources) is compared byte for byte
between the sides — so a change to a shared persona template lists exactly the buddies
that use it, even when their own ``buddy.yaml`` did not change.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from buddy.compile.blueprint import Blueprint
from buddy.compile.compiler import check
from buddy.compile.persona import EXAMPLE_NOW, find_project_root
from buddy.compile.project import not_regular
from buddy.compile.render import render_markdown
from buddy.errors import Issue
from buddy.extend import persona_layer

__all__ = ["BuddyDiff", "Report", "SharedChange", "Side", "Status", "compare"]

Status = Literal["added", "removed", "changed", "affected"]


@dataclass(frozen=True, slots=True)
class Side:
    """One version of a project.

    Attributes:
        root: Buddies are matched, and dependency files compared, by their path
            relative to this directory.
        label: How the side is named in diff headers, e.g. ``HEAD`` or ``work tree``.
        manifests: The ``buddy.yaml`` files of this side to compare (below ``root``).
        display: Prefix shown before root-relative paths in problems (e.g. the
            directory as the user typed it); empty when root-relative paths are what
            a reader expects (a repository's top level).
    """

    root: Path
    label: str
    manifests: tuple[Path, ...]
    display: str = ""


@dataclass(frozen=True, slots=True)
class BuddyDiff:
    """What changed for one buddy.

    Attributes:
        key: The manifest's path relative to the sides' roots, e.g.
            ``manifests/aunt-tu/buddy.yaml``.
        name: The buddy's directory relative to the roots (its name in reports).
        status: ``added``, ``removed``, ``changed`` (its compiled view or its problems
            changed) or ``affected`` (a file it depends on changed, its view did not —
            e.g. a plugin's code).
        diff: Unified diff of the private conversation's Markdown view; for an added
            buddy the whole view; empty when the view is the same or cannot be built.
        group_diff: Unified diff of the group conversation's system prompt, when it
            changes differently from the private one; else empty.
        old_issues: Problems compiling the old side (empty when it compiled or is absent).
        new_issues: Problems compiling the new side.
        changed_files: Files the buddy depends on (on either side) that differ between
            the sides, relative to the roots.
    """

    key: str
    name: str
    status: Status
    diff: str = ""
    group_diff: str = ""
    old_issues: tuple[Issue, ...] = ()
    new_issues: tuple[Issue, ...] = ()
    changed_files: tuple[str, ...] = ()

    @property
    def added_lines(self) -> int:
        """Lines added in :attr:`diff` and :attr:`group_diff`."""
        return _count(self.diff, "+") + _count(self.group_diff, "+")

    @property
    def removed_lines(self) -> int:
        """Lines removed in :attr:`diff` and :attr:`group_diff`."""
        return _count(self.diff, "-") + _count(self.group_diff, "-")


@dataclass(frozen=True, slots=True)
class SharedChange:
    """A changed file outside the directory of buddies that depend on it.

    Attributes:
        file: Its path relative to the roots (absolute when outside both projects).
        buddies: Names of the buddies that depend on it (on either side), sorted.
    """

    file: str
    buddies: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Report:
    """The result of :func:`compare`.

    Attributes:
        old: The old side.
        new: The new side.
        compared: How many buddies were compared (found on either side).
        buddies: Every buddy with a change of any kind, sorted by manifest path.
        shared: Changed shared files (templates, traits, plugins … outside the
            directory of a buddy using them) with the buddies they affect, sorted.
        uncompiled: ``(name, problems on the new side)`` of each buddy that compiles on
            neither side with the same problems — it is in no entry, and its views could
            not be compared at all.
    """

    old: Side
    new: Side
    compared: int
    buddies: tuple[BuddyDiff, ...]
    shared: tuple[SharedChange, ...]
    uncompiled: tuple[tuple[str, tuple[Issue, ...]], ...] = ()

    @property
    def nothing_compiled(self) -> bool:
        """Whether no buddy compiled on either side (a copied tree without its plugins,
        say): "no changes" would then say nothing."""
        return bool(self.compared) and len(self.uncompiled) == self.compared

    @property
    def changed(self) -> bool:
        """Whether anything differs between the sides."""
        return bool(self.buddies)


@dataclass(frozen=True, slots=True)
class _Compiled:
    """One buddy on one side: its views, or the problems that stopped it compiling."""

    view: str = ""
    private_prompt: str = ""
    group_prompt: str = ""
    files: frozenset[str] = frozenset()
    issues: tuple[Issue, ...] = ()
    # The issues with paths relative to the root only: equal on both sides when the
    # problems are the same, wherever each side lives.
    problems: tuple[Issue, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.issues


def _body(diff: str) -> list[str]:
    """A unified diff's lines after its two file headers (a removed ``-- x`` line reads
    ``--- x``, so headers are told apart by position, not by prefix)."""
    return diff.splitlines()[2:]


def _count(diff: str, sign: str) -> int:
    return sum(1 for line in _body(diff) if line.startswith(sign))


def _key(path: Path, side: Side) -> str:
    """``path`` relative to the side's root: with ``..`` while inside its project, else absolute.

    Files above the root but inside the same project (``../personas/x.md.j2`` when the
    root is one buddy's folder) keep a relative name so they are compared with the
    other side's copy; files outside (installed template packs) are the same file on
    both sides and keep their absolute path.
    """
    path = path.resolve()
    root = side.root.resolve()
    project = find_project_root(root)
    for base in (root, project):
        if path.is_relative_to(base):
            return Path(os.path.relpath(path, root)).as_posix()
    return path.as_posix()


def _shown(rel: str, side: Side) -> str:
    if not side.display or rel.startswith("/"):
        return rel
    return Path(os.path.normpath(Path(side.display) / rel)).as_posix()


def _relocate(issue: Issue, side: Side, *, shown: bool) -> Issue:
    """An issue with root-relative paths (``shown``: as a reader sees them, with the side's
    display prefix); no temporary directory is left in its text."""
    file = issue.file
    if file and not file.startswith("<"):
        file = _key(Path(file), side)
        file = _shown(file, side) if shown else file
    root = str(side.root.resolve())
    prefix = side.display.rstrip("/") if shown and side.display else ""

    def clean(text: str) -> str:
        text = text.replace(root + os.sep, prefix + "/" if prefix else "")
        return text.replace(root, prefix or ".")

    return Issue(
        file=file,
        line=issue.line,
        column=issue.column,
        path=issue.path,
        code=issue.code,
        message=clean(issue.message),
        hint=clean(issue.hint),
    )


def _view(blueprint: Blueprint, side: Side) -> str:
    """The Markdown view, with paths relative to the side's root rather than the project's.

    The view names files relative to the project root. When a side's root is a folder
    inside the project (two copies of a buddy in one repository), the same file would
    read ``old/x/buddy.yaml`` on one side and ``new/x/buddy.yaml`` on the other; the
    root's own prefix is dropped where the view writes paths (after a backtick, a
    parenthesis or a quote) so identical buddies give identical views.
    """
    text = render_markdown(blueprint)
    prefix = Path(os.path.relpath(side.root.resolve(), find_project_root(blueprint.directory)))
    if prefix == Path(".") or prefix.parts[0] == "..":
        return text
    return re.sub(rf"(?<=[`(\"]){re.escape(prefix.as_posix())}/", "", text)


def _compile(manifest: Path, side: Side) -> _Compiled:
    blueprint, issues = check(manifest)
    if blueprint is None:
        # Without a blueprint its dependencies are unknown; the manifest is one for sure.
        return _Compiled(
            files=frozenset({_key(manifest, side)}),
            issues=tuple(_relocate(i, side, shown=True) for i in issues),
            problems=tuple(_relocate(i, side, shown=False) for i in issues),
        )
    return _Compiled(
        view=_view(blueprint, side),
        # The same conversation ids and instant as the rendered view.
        private_prompt=blueprint.persona.render(
            kind="private",
            conversation_id="example-private",
            now=EXAMPLE_NOW,
            layer=persona_layer(blueprint, example=True),
        ),
        group_prompt=blueprint.persona.render(
            kind="group",
            conversation_id="example-group",
            now=EXAMPLE_NOW,
            layer=persona_layer(blueprint, example=True),
        ),
        files=frozenset(_key(f, side) for f in blueprint.files),
    )


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@$")
_FENCE = re.compile(r"^(`{3,})")


def _sections(lines: list[str]) -> list[str]:
    """For each line, the Markdown heading above it (outside code blocks), or ``""``."""
    out: list[str] = []
    current, fence = "", ""
    for line in lines:
        out.append(current)
        opening = _FENCE.match(line)
        if fence:
            closing = line.strip()
            if closing == "`" * len(closing) and len(closing) >= len(fence):
                fence = ""
        elif opening:
            fence = opening.group(1)
        elif line.startswith("#"):
            current = line
    return out


def _unified(old: str, new: str, fromfile: str, tofile: str) -> str:
    """A unified diff whose hunk headers name the section of their first change, as git
    names the function (``@@ -20,7 +20,7 @@ ## System prompt …``)."""
    new_lines = new.splitlines()
    sections = _sections(new_lines)
    lines = list(
        difflib.unified_diff(old.splitlines(), new_lines, fromfile, tofile, n=3, lineterm="")
    )
    for index, line in enumerate(lines):
        match = _HUNK.match(line)
        if match is None:
            continue
        position = int(match.group(1)) - 1  # 0-based line of the new side
        for following in lines[index + 1 :]:
            if following.startswith(("+", "-")):
                break
            position += 1
        if 0 <= position < len(sections) and sections[position]:
            lines[index] = f"{line} {sections[position]}"
    return "\n".join(lines) + "\n" if lines else ""


def _hunks(diff: str) -> list[list[str]]:
    """The hunks of a unified diff, each its ``@@`` line and the lines after it."""
    hunks: list[list[str]] = []
    for line in _body(diff):
        if line.startswith("@@"):
            hunks.append([])
        hunks[-1].append(line)
    return hunks


def _changes(hunk: list[str]) -> list[str]:
    """The added and removed lines of a hunk, in order."""
    return [line for line in hunk[1:] if line.startswith(("+", "-"))]


def _new_hunks(diff: str, shown: str) -> str:
    """``diff`` without the hunks whose changes ``shown`` already has, or ``""``."""
    seen = [_changes(h) for h in _hunks(shown)]
    kept = [h for h in _hunks(diff) if _changes(h) not in seen]
    if not kept:
        return ""
    return "\n".join([*diff.splitlines()[:2], *(line for h in kept for line in h)]) + "\n"


def _read(side: Side, rel: str) -> bytes | None:
    file = side.root / rel
    # A file one side depends on may be a FIFO on the other (refused by its compile):
    # never opened, it would block the reader forever.
    if not_regular(file) is not None:
        return None
    try:
        return file.read_bytes()
    except OSError:
        return None


def _index(side: Side) -> dict[str, Path]:
    return {_key(m, side): m for m in side.manifests}


def _name(key: str, root: Path) -> str:
    parent = Path(key).parent.as_posix()
    # A manifest in the root itself is named after that folder.
    return parent if parent != "." else root.resolve().name


def _inside(file: str, directory: str) -> bool:
    return directory == "." or file.startswith(directory.rstrip("/") + "/")


def compare(old: Side, new: Side) -> Report:
    """Compare every buddy of ``old`` with the buddy at the same path in ``new``.

    Args:
        old: The version before the change.
        new: The version after the change.

    Returns:
        The report: one entry per buddy with a change of any kind, and the changed
        shared files with the buddies they affect. Deterministic for the same inputs.
    """
    old_index, new_index = _index(old), _index(new)
    keys = sorted(old_index.keys() | new_index.keys())
    before = {k: _compile(m, old) for k, m in old_index.items()}
    after = {k: _compile(m, new) for k, m in new_index.items()}

    dependencies = {
        k: (before[k].files if k in before else frozenset())
        | (after[k].files if k in after else frozenset())
        for k in keys
    }
    candidates = sorted(set().union(*dependencies.values())) if dependencies else []
    changed = {f for f in candidates if _read(old, f) != _read(new, f)}

    entries: list[BuddyDiff] = []
    uncompiled: list[tuple[str, tuple[Issue, ...]]] = []
    users: dict[str, list[str]] = {}
    for key in keys:
        name = _name(key, (new if key in new_index else old).root)
        touched = tuple(sorted(dependencies[key] & changed))
        directory = Path(key).parent.as_posix()
        for file in touched:
            if not _inside(file, directory):
                users.setdefault(file, []).append(name)
        was, now = before.get(key), after.get(key)
        entry = _entry(key, name, was, now, touched, old, new)
        if entry is not None:
            entries.append(entry)
        elif was is not None and now is not None and not was.valid and not now.valid:
            uncompiled.append((name, now.issues))

    shared = tuple(SharedChange(f, tuple(sorted(set(b)))) for f, b in sorted(users.items()))
    return Report(old, new, len(keys), tuple(entries), shared, tuple(uncompiled))


def _entry(
    key: str,
    name: str,
    was: _Compiled | None,
    now: _Compiled | None,
    touched: tuple[str, ...],
    old: Side,
    new: Side,
) -> BuddyDiff | None:
    if now is None:
        assert was is not None
        return BuddyDiff(key, name, "removed", old_issues=was.issues, changed_files=touched)
    a, b = f"a/{name} ({old.label})", f"b/{name} ({new.label})"
    view_diff = group_diff = ""
    group_changed = False
    if now.valid:
        base = was if was is not None and was.valid else _Compiled()
        view_diff = _unified(base.view, now.view, a if base.view else "/dev/null", b)
        suffix = ", group conversation system prompt)"
        group = _unified(
            base.group_prompt,
            now.group_prompt,
            a[:-1] + suffix if base.view else "/dev/null",
            b[:-1] + suffix,
        )
        group_changed = bool(group)
        # The group prompt mostly changes as the private one does (in the view diff
        # already): only the hunks with other changes are shown for it.
        private = _unified(base.private_prompt, now.private_prompt, a, b)
        group_diff = _new_hunks(group, private) if group else ""
    if was is None:
        return BuddyDiff(
            key, name, "added", view_diff, group_diff, new_issues=now.issues, changed_files=touched
        )
    view_changed = bool(view_diff) or group_changed or was.problems != now.problems
    if not view_changed and not touched:
        return None
    status: Status = "changed" if view_changed else "affected"
    return BuddyDiff(key, name, status, view_diff, group_diff, was.issues, now.issues, touched)
