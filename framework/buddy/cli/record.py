"""``buddy test --record CONVERSATION --db FILE [-o FILE] [PATH]``: a conversation kept in
a ``buddy dev`` or ``buddy chat`` database, written as a scenario file of the buddy that
had it (:mod:`buddy.testing.record`; docs/testing.md). The file goes into the buddy's
``tests/`` under a name made from the conversation, or to ``-o``; an existing file is
never overwritten. Exit 0 when written, 1 when the conversation cannot be recorded or the
file exists, 2 on a usage error."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from buddy.cli.commands import find_manifests
from buddy.errors import ManifestError

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["record_command"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
LATEST = "latest"


def _buddy(paths: Sequence[str], name: str, profile: str | None) -> tuple[Path, Blueprint]:
    """The buddy called ``name`` under ``paths``: its directory and blueprint.

    Raises:
        LookupError: None is called so.
        ManifestError: It is not valid.
    """
    import buddy

    found: list[str] = []
    for raw in paths:
        for manifest in find_manifests(Path(raw)):
            blueprint = buddy.load(manifest, profile=profile)
            if blueprint.name == name:
                return manifest.parent, blueprint
            found.append(blueprint.name)
    where = ", ".join(paths)
    raise LookupError(
        f"no buddy called {name} under {where}" + (f" (found: {', '.join(found)})" if found else "")
    )


def record_command(
    paths: Sequence[str],
    conversation: str,
    db: str | None,
    output: str | None,
    *,
    profile: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Record ``conversation`` (an id, or ``latest``) of the database ``db`` as a scenario
    file; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    from buddy.testing.record import (
        RecordError,
        head_lines,
        latest_conversation,
        open_database,
        read_conversation,
        record,
        scenario_file,
    )

    if db is None:
        print(
            "buddy test: --record needs --db FILE (the buddy dev or buddy chat database)", file=err
        )
        return EXIT_USAGE
    try:
        conn = open_database(Path(db))
    except RecordError as exc:
        print(f"buddy test: {exc}", file=err)
        return EXIT_USAGE
    try:
        cid = latest_conversation(conn) if conversation == LATEST else conversation
        found = read_conversation(conn, cid)
    except RecordError as exc:
        print(f"buddy test: {db}: {exc}", file=err)
        return EXIT_FAILED
    finally:
        conn.close()
    try:
        directory, blueprint = _buddy(paths or ["."], found.identity.removesuffix("-dev"), profile)
    except LookupError as exc:
        print(f"buddy test: {exc}", file=err)
        return EXIT_USAGE
    except ManifestError as exc:
        print(exc, file=err)
        return EXIT_FAILED
    target = Path(output) if output else scenario_file(directory / "tests", found)
    if target.exists():
        print(f"buddy test: {target} exists; remove it or choose another with -o", file=err)
        return EXIT_FAILED
    source = f"`buddy test --record {cid} --db {db}`"
    try:
        recording = asyncio.run(
            record(blueprint, found, head=head_lines(found, directory, target, source))
        )
    except RecordError as exc:
        print(f"buddy test: conversation {cid}: {exc}", file=err)
        return EXIT_FAILED
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("x", encoding="utf-8") as file:  # never over a file made meanwhile
        file.write(recording.text)
    for note in recording.notes:
        print(f"note: {note}", file=out)
    print(f"recorded conversation {cid} as {target}", file=out)
    return EXIT_OK
