"""The body of ``buddy diff``: compare compiled buddies between two versions (and, with
``--replay``, what their scenarios do on each)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from buddy.cli.commands import find_manifests
from buddy.errors import BuddyError
from buddy.review.diff import Report, Side, compare
from buddy.review.git import checkout, toplevel
from buddy.review.report import MAX_COMMENT_CHARS, markdown, text

if TYPE_CHECKING:
    from buddy.review.replay import Replay

__all__ = ["diff"]

EXIT_OK, EXIT_CHANGED, EXIT_USAGE = 0, 1, 2
WORK_TREE = "work tree"


def diff(
    paths: Sequence[str],
    git_rev: str | None,
    fmt: str,
    exit_code: bool,
    *,
    replaying: bool = False,
) -> int:
    """``buddy diff OLD NEW`` or ``buddy diff --git REV [PATH...]``, with ``--replay``.

    Args:
        paths: ``OLD NEW`` (directories or ``buddy.yaml`` files); with ``git_rev``, the
            paths that limit which buddies are compared (all when empty).
        git_rev: Compare this revision with the work tree instead of two paths.
        fmt: ``text`` or ``markdown`` (a pull-request comment).
        exit_code: Exit 1 when anything changed, or when nothing compiled on either side;
            with ``replaying``, when behaviour differs (:attr:`Replay.changed`).
        replaying: Also run the scenarios of every buddy the change touches on both
            sides and print what differs step by step.

    Returns:
        0, or 1 with ``exit_code`` when anything changed or nothing compiled (with
        ``replaying``: when behaviour differs); 2 on a usage error (a missing path, no
        buddies, not a git repository, an unknown revision).
    """
    try:
        if git_rev is None:
            report, replayed = _compare_paths(paths, replaying)
        else:
            report, replayed = _compare_git(git_rev, paths, replaying)
    except BuddyError as exc:
        print(f"buddy diff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if fmt == "markdown":
        shown = markdown(report)
        if replayed is not None:
            from buddy.review import replay_report

            room = MAX_COMMENT_CHARS - len(shown)
            shown += "\n" + replay_report.markdown(replayed, max_chars=room)
    else:
        shown = text(report)
        if replayed is not None:
            from buddy.review import replay_report

            shown += "\n" + replay_report.text(replayed)
    sys.stdout.write(shown)
    if replayed is not None:
        return EXIT_CHANGED if exit_code and replayed.changed else EXIT_OK
    # Nothing compiled: "no changes" would be no review at all — under --exit-code that
    # fails as a change does.
    failed = report.changed or report.nothing_compiled
    return EXIT_CHANGED if exit_code and failed else EXIT_OK


def _compared(old: Side, new: Side, replaying: bool) -> tuple[Report, Replay | None]:
    """The views compared and, when ``replaying``, the scenarios: the sides' processes
    start first, and import the runtime while the views are compared."""
    if not replaying:
        return compare(old, new), None
    from buddy.review.replay import Sides

    with Sides() as sides:
        report = compare(old, new)
        return report, sides.replay(report)


def _side(raw: str) -> tuple[Path, tuple[Path, ...], str]:
    """The root, manifests and display prefix of a path given on the command line."""
    path = Path(raw)
    if not path.exists():
        raise BuddyError(f"{raw}: no such file or directory")
    root = path if path.is_dir() else path.parent
    display = root.as_posix()
    return root.resolve(), tuple(find_manifests(path)), "" if display == "." else display


def _compare_paths(paths: Sequence[str], replaying: bool) -> tuple[Report, Replay | None]:
    if len(paths) != 2:
        raise BuddyError("give two paths (OLD NEW), or --git REV [PATH...]")
    (old_root, old_found, old_display), (new_root, new_found, new_display) = map(_side, paths)
    if not old_found and not new_found:
        raise BuddyError(f"no buddy.yaml found in {paths[0]} or {paths[1]}")
    old = Side(old_root, paths[0], old_found, old_display)
    new = Side(new_root, paths[1], new_found, new_display)
    return _compared(old, new, replaying)


def _selector(raw: str, repo: Path) -> str:
    """A PATH argument as a path relative to the repository's top level ("" = all)."""
    absolute = (Path.cwd() / raw).resolve()
    if not absolute.is_relative_to(repo):
        raise BuddyError(f"{raw}: outside the repository {repo}")
    rel = absolute.relative_to(repo).as_posix()
    return "" if rel == "." else rel


def _found(root: Path, selectors: Iterable[str]) -> tuple[Path, ...]:
    """The manifests under ``root`` that the selectors name, as `buddy validate` finds them."""
    found: set[Path] = set()
    for selector in selectors:
        target = root / selector if selector else root
        if target.exists():
            found.update(find_manifests(target))
    return tuple(sorted(found))


def _compare_git(rev: str, paths: Sequence[str], replaying: bool) -> tuple[Report, Replay | None]:
    repo = toplevel(Path.cwd())
    selectors = [_selector(p, repo) for p in paths] or [""]
    with checkout(repo, rev) as snapshot:
        for raw, selector in zip(paths, selectors, strict=False):
            if not _found(snapshot, [selector]) and not _found(repo, [selector]):
                raise BuddyError(f"{raw}: no buddy.yaml found (in {rev} or the work tree)")
        old = Side(snapshot, rev, _found(snapshot, selectors))
        new = Side(repo, WORK_TREE, _found(repo, selectors))
        if not old.manifests and not new.manifests:
            raise BuddyError(f"no buddy.yaml found (in {rev} or the work tree)")
        # Inside the block: the replay runs the revision's files before they are removed.
        return _compared(old, new, replaying)
