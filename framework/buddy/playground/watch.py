"""What hot reload watches: the files of a buddy as ``(mtime_ns, size)`` snapshots, what
changed between two, and the project plugins to forget before a new version starts
(:class:`~buddy.playground.session.DevSession` polls; see its module for why polling).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

__all__ = [
    "POLL_SECONDS",
    "SETTLE_SECONDS",
    "Snapshot",
    "changed_files",
    "purge_plugins",
    "scan",
    "shown",
]

POLL_SECONDS = 0.3
SETTLE_SECONDS = 0.1  # after a change is seen, wait this long for the editor to finish writing

Snapshot = dict[str, tuple[int, int] | None]


def shown(file: str | Path) -> str:
    """A path relative to the working directory when it is below it."""
    text = str(file)
    if not text or text.startswith("<"):
        return text
    try:
        return Path(text).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return text


def scan(files: set[str]) -> Snapshot:
    """``file → (mtime_ns, size)``, ``None`` for a file that does not exist."""
    snapshot: Snapshot = {}
    for file in files:
        try:
            stat = os.stat(file)
        except OSError:
            snapshot[file] = None
        else:
            snapshot[file] = (stat.st_mtime_ns, stat.st_size)
    return snapshot


def changed_files(old: Snapshot, new: Snapshot) -> list[str]:
    """The files whose ``(mtime_ns, size)`` differ between ``old`` and ``new``, sorted."""
    return sorted(f for f in new.keys() | old.keys() if old.get(f) != new.get(f))


def purge_plugins() -> None:
    """Forget imported project plugins so the next start imports their current code.

    Plugins of a project live in a package namespace ``_buddy_plugins_<hash>``
    (:mod:`buddy.runtime.plugins`); the namespaces stay, their modules go. A server that is
    still running keeps the functions it already loaded.
    """
    for name in [n for n in sys.modules if n.startswith("_buddy_plugins_") and "." in n]:
        del sys.modules[name]
    importlib.invalidate_caches()
