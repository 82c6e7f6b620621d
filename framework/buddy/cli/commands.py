"""The bodies of ``buddy validate``, ``render`` and ``schema``."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from buddy.compile.project import read_file, searched
from buddy.errors import Issue

__all__ = ["find_manifests", "is_base", "render", "schema", "schema_text", "shown", "validate"]


#: A base manifest's mark, as written at the top level (``abstract: true``).
_ABSTRACT = re.compile(r"^abstract:[ \t]*true[ \t]*(?:#.*)?$", re.MULTILINE)


def is_base(manifest: Path) -> bool:
    """Whether ``manifest`` marks itself a base for ``extends`` (``abstract: true``).

    Read as the loader reads it (:func:`~buddy.compile.project.read_file`): a FIFO, device
    or over-large file is not opened or not read, and is no base — validating it says why.
    """
    from buddy.manifest.yamlio import MAX_FILE_BYTES  # the loader's limit

    content = read_file(manifest, str(manifest), MAX_FILE_BYTES)
    if isinstance(content, Issue):
        return False
    return bool(_ABSTRACT.search(content.decode("utf-8", errors="replace")))


def find_manifests(path: Path) -> Iterator[Path]:
    """``path`` itself when a file; else every ``buddy.yaml`` under it, sorted — bases
    (``abstract: true``) left out: they are not buddies."""
    if path.is_file():
        yield path
        return
    if (path / "buddy.yaml").is_file() and not is_base(path / "buddy.yaml"):
        yield path / "buddy.yaml"
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if searched(d))
        if "buddy.yaml" in filenames and not is_base(Path(dirpath) / "buddy.yaml"):
            yield Path(dirpath) / "buddy.yaml"


def _shown(file: str) -> str:
    """A path relative to the working directory when it is below it."""
    if not file or file.startswith("<"):
        return file
    try:
        return Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return file


def _relocated(issue: Issue) -> Issue:
    return issue.shown_as(_shown(issue.file))


def _github(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def validate(paths: Sequence[str], fmt: str, *, profile: str | None, model: str | None) -> int:
    """``buddy validate``: exit 0 valid, 1 invalid, 2 usage error."""
    manifests: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            print(f"buddy validate: {raw}: no such file or directory", file=sys.stderr)
            return 2
        # Any path but a directory is a manifest to check: a FIFO there is refused, located.
        found = list(find_manifests(path)) if path.is_dir() else [path]
        if not found:
            print(f"buddy validate: {raw}: no buddy.yaml found", file=sys.stderr)
            return 2
        manifests.extend(found)

    from buddy.compile.compiler import batch, diagnose

    issues: list[Issue] = []
    warnings: list[Issue] = []
    invalid = 0
    with batch():
        for manifest in manifests:
            _, found_issues, found_warnings = diagnose(manifest, profile=profile, model=model)
            invalid += bool(found_issues)
            issues.extend(_relocated(i) for i in found_issues)
            warnings.extend(_relocated(i) for i in found_warnings)

    if fmt == "json":
        print(
            json.dumps(
                {
                    "ok": not issues,
                    "errors": [i.to_dict() for i in issues],
                    "warnings": [i.to_dict() for i in warnings],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    elif fmt == "github":
        for severity, listed in (("error", issues), ("warning", warnings)):
            for i in listed:
                text = _github(f"{i.message}" + (f" — {i.hint}" if i.hint else ""))
                where = f"file={i.file}" + (f",line={i.line},col={i.column}" if i.line else "")
                print(f"::{severity} {where},title=buddy {i.code}::{text}")
    else:
        for severity, listed in (("error", issues), ("warning", warnings)):
            for i in listed:
                where = f"{i.file}:{i.line}:{i.column}" if i.line else i.file
                field = f" [{i.path}]" if i.path else ""
                print(f"{where}: {severity}: {i.message}{field} ({i.code})")
                if i.hint:
                    print(f"    hint: {i.hint}")
        count = len(manifests)
        noun = "buddy" if count == 1 else "buddies"
        noted = f", {len(warnings)} warning(s)" if warnings else ""
        if issues:
            print(
                f"{len(issues)} problem(s) in {invalid} of {count} {noun}{noted}", file=sys.stderr
            )
        else:
            # A clean run's verdict is its output; the problem count above is a diagnostic.
            print(f"ok: {count} {noun} valid{noted}")
    return 1 if issues else 0


def render(
    path: str,
    fmt: str,
    conversation: str,
    now: str | None,
    *,
    profile: str | None,
    model: str | None,
) -> int:
    """``buddy render``: print the compiled view, or the problems and exit 1."""
    moment = None
    if now is not None:
        try:
            moment = datetime.fromisoformat(now)
        except ValueError:
            print(f"buddy render: --now {now!r} is not an ISO-8601 instant", file=sys.stderr)
            return 2
        if moment.tzinfo is None:
            print(
                "buddy render: --now needs a UTC offset, e.g. 2026-01-05T09:00:00+08:00",
                file=sys.stderr,
            )
            return 2
    target = Path(path)
    if not target.exists():
        print(f"buddy render: {path}: no such file or directory", file=sys.stderr)
        return 2

    from buddy.compile.compiler import check
    from buddy.compile.render import render_json, render_markdown

    blueprint, issues = check(target, profile=profile, model=model)
    if blueprint is None:
        for i in map(_relocated, issues):
            print(str(i), file=sys.stderr)
        return 1
    out = render_json if fmt == "json" else render_markdown
    sys.stdout.write(out(blueprint, conversation=conversation, now=moment))
    return 0


def schema_text() -> str:
    """The JSON Schema of buddy.yaml, as committed in docs/buddy.schema.json."""
    from buddy.manifest.jsonschema import manifest_json_schema

    return json.dumps(manifest_json_schema(), ensure_ascii=False, indent=2) + "\n"


def shown(path: Path) -> str:
    """``path`` as a command prints it: relative to the working directory when inside it."""
    absolute = path.absolute()
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def schema(scenario: bool = False, write: str | None = None) -> int:
    """``buddy schema [--scenario | --write [DIR]]``.

    Prints the JSON Schema of ``buddy.yaml`` (with ``scenario``, of scenario files), or
    writes both into the folder ``write`` — ``""`` for where the ``$schema`` lines of the
    project's files point (:func:`buddy.schemas.refresh`) — and prints each file with
    what was done to it (created, updated, unchanged).

    Returns:
        0; 2 when ``write`` cannot be written.
    """
    from buddy import schemas

    if write is None:
        sys.stdout.write(schemas.text(schemas.SCENARIO if scenario else schemas.MANIFEST))
        return 0
    try:
        done = schemas.write(Path(write)) if write else schemas.refresh(Path.cwd())
    except OSError as exc:
        print(f"buddy schema: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for path, status in done:
        print(f"{status} {shown(path)}")
    return 0
