"""``buddy dev PATH…``: the dev platform, the named buddies and the web playground.

Everything runs in this process, on loopback: the platform (SQLite, a temporary file
unless ``--db``), each buddy as its dev identity, and the page at ``/playground/``. Edits
to a buddy's files reload it (:mod:`buddy.playground.session`). Ctrl-C (or SIGTERM) stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["dev"]


def _manifests(paths: Sequence[str], err: TextIO) -> list[Path] | None:
    from buddy.cli.commands import find_manifests

    found: list[Path] = []
    for path in paths:
        if not Path(path).exists():
            print(f"buddy dev: {path}: no such file or directory", file=err)
            return None
        manifests = list(find_manifests(Path(path)))
        if not manifests:
            print(f"buddy dev: {path}: no buddy.yaml here", file=err)
            return None
        found.extend(m for m in manifests if m.resolve() not in {f.resolve() for f in found})
    return found


async def _serve(
    manifests: list[Path],
    port: int,
    db: str,
    model: str | None,
    profile: str | None,
    out: TextIO,
    idle_seconds: float | None,
) -> None:
    from buddy.playground.session import DevSession

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    session = DevSession(
        manifests,
        db=db,
        port=port,
        model=model,
        profile=profile,
        out=out,
        idle_seconds=idle_seconds,
    )
    try:
        await session.start()
        print(
            f"buddy dev: playground on {session.playground_url}  (platform {session.url}, "
            f"db {db}; Ctrl-C stops)",
            file=out,
            flush=True,
        )
        await stop.wait()
    finally:
        await session.close()


def dev(
    paths: Sequence[str],
    port: int,
    db: str | None,
    model: str | None,
    profile: str | None,
    idle_seconds: float | None = None,
) -> int:
    """Run the playground until interrupted; returns the exit code.

    ``idle_seconds`` shortens the 30-minute recycle of an idle conversation (testing).
    """
    manifests = _manifests(paths, sys.stderr)
    if manifests is None:
        return 2
    with tempfile.TemporaryDirectory(prefix="buddy-dev-") as scratch:
        database = db or str(Path(scratch) / "platform.db")
        try:
            asyncio.run(_serve(manifests, port, database, model, profile, sys.stdout, idle_seconds))
        except KeyboardInterrupt:
            pass
        except OSError as exc:  # the port is taken, say
            print(f"buddy dev: {exc}", file=sys.stderr)
            return 2
    return 0
