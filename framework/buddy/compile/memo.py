"""Results of the loader's pure checks, kept between processes.

Some checks cost far more than what they look at: the JSON Schema meta-validation of a
tool's ``parameters`` imports jsonschema, and a relation spec's patterns are compiled by
``regex``'s pure-Python parser. Their results depend only on their input (a schema's
canonical JSON, a spec file's bytes and where it is) and on the code that checks it. So,
as the compiled templates beside a template file, a compile keeps them in
``__pycache__/buddy.checks`` beside the manifest (:func:`kept_checks`), and the next one —
after an edit of the manifest, say — looks each up (:func:`recall`) before checking again.

Only what a check computes is kept, never a verdict on a manifest: every located problem
still comes from the checks run on the manifest being compiled, and a check whose input
is not in the file is simply run. Results are used only in the environment they were
made in (:func:`stamp`): buddy's own source files (names, sizes, times), the interpreter,
and the folders on ``sys.path`` (installing or upgrading jsonschema or ``regex`` touches
them); the file keeps those of the last few environments. Like a ``.pyc``, it is trusted as much
as the folder it sits in. ``BUDDY_NO_CACHE`` (and :func:`no_disk_cache`) turn it off, as
they turn off every cache on disk.

Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

from buddy.compile.project import not_regular, write_cache

__all__ = ["MISSING", "disk_caches", "keep", "kept_checks", "no_disk_cache", "recall", "stamp"]

FORMAT = "buddy-checks 2"
#: Results kept in one file for one environment at most (the newest win): a manifest has
#: a few dozen.
MAX_ENTRIES = 512
#: Environments kept in one file at most (the newest win): ``buddy validate`` and
#: ``python -m buddy validate`` see different ``sys.path`` folders, so two are common.
MAX_ENVIRONMENTS = 4
#: What :func:`recall` returns for a result not kept.
MISSING = object()
_PACKAGE = Path(__file__).resolve().parents[1]

_DISK: ContextVar[bool] = ContextVar("buddy_disk_caches", default=True)


@contextlib.contextmanager
def no_disk_cache() -> Iterator[None]:
    """Within it nothing is kept on disk or read from it: compiled templates stay in
    memory, check results are not kept (``buddy.load(cache=False)``; ``BUDDY_NO_CACHE``
    has the same effect everywhere)."""
    token = _DISK.set(False)
    try:
        yield
    finally:
        _DISK.reset(token)


def disk_caches() -> bool:
    """Whether caches on disk are used here (not within :func:`no_disk_cache`, and not
    with ``BUDDY_NO_CACHE`` set)."""
    return _DISK.get() and not os.environ.get("BUDDY_NO_CACHE")


class _Memo:
    """The results kept for one manifest, read on the first look-up."""

    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest
        self.file: Path | None = None
        self.kept: dict[bytes, dict[tuple[str, Any], Any]] = {}  # by environment
        self.entries: dict[tuple[str, Any], Any] | None = None  # this environment's
        self.added = False

    def _loaded(self) -> dict[tuple[str, Any], Any]:
        if self.entries is None:
            self.entries = {}
            with contextlib.suppress(Exception):  # missing, unreadable or another version
                # Found on the first look-up: a compile answered from memory needs no file.
                self.file = self.manifest.resolve().parent / "__pycache__" / "buddy.checks"
                if not_regular(self.file) is None:  # a FIFO would block the reader
                    with self.file.open("rb") as stream:
                        kept, environments = pickle.load(stream)
                    if kept == FORMAT and isinstance(environments, dict):
                        self.kept = environments
                        entries = environments.get(stamp())
                        self.entries = entries if isinstance(entries, dict) else {}
        return self.entries

    def get(self, key: tuple[str, Any]) -> Any:
        return self._loaded().get(key, MISSING)

    def put(self, key: tuple[str, Any], value: Any) -> None:
        entries = self._loaded()
        entries.pop(key, None)
        entries[key] = value
        while len(entries) > MAX_ENTRIES:
            del entries[next(iter(entries))]
        self.added = True

    def save(self) -> None:
        if self.added and self.entries is not None and self.file is not None:
            with contextlib.suppress(Exception):  # a value that does not pickle: not kept
                environments = {k: v for k, v in self.kept.items() if k != stamp()}
                environments[stamp()] = self.entries
                while len(environments) > MAX_ENVIRONMENTS:
                    del environments[next(iter(environments))]
                data = pickle.dumps((FORMAT, environments), pickle.HIGHEST_PROTOCOL)
                write_cache(self.file, data)  # a read-only folder checks again next time


_CURRENT: ContextVar[_Memo | None] = ContextVar("buddy_checks", default=None)


@contextlib.contextmanager
def kept_checks(manifest: Path) -> Iterator[None]:
    """Within it, :func:`recall` and :func:`keep` use the results kept for ``manifest``
    (``__pycache__/buddy.checks`` beside it), and new ones are written at the end."""
    if not disk_caches():
        yield
        return
    memo = _Memo(manifest)
    token = _CURRENT.set(memo)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        memo.save()


def recall(kind: str, key: Any) -> Any:
    """The result kept for ``key`` (hashable, picklable) of the check ``kind``, or
    :data:`MISSING` (also outside :func:`kept_checks`)."""
    memo = _CURRENT.get()
    return MISSING if memo is None else memo.get((kind, key))


def keep(kind: str, key: Any, value: Any) -> None:
    """Keep ``value``, the result of the check ``kind`` for ``key``, for the next compile."""
    memo = _CURRENT.get()
    if memo is not None:
        memo.put((kind, key), value)


@cache
def stamp() -> bytes:
    """The environment check results are valid in: the interpreter, buddy's source files
    (name, size and time of each) and the folders on ``sys.path`` (their times)."""
    files: list[tuple[str, int, int]] = []
    pending = [str(_PACKAGE)]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as scan:
            for entry in scan:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                else:
                    info = entry.stat()
                    files.append((entry.path, info.st_size, info.st_mtime_ns))
    folders = []
    for directory in sys.path:
        with contextlib.suppress(OSError):
            folders.append((directory, os.stat(directory or ".").st_mtime_ns))
    made_in = (sys.version, sys.platform, tuple(sorted(files)), tuple(folders))
    return hashlib.sha256(repr(made_in).encode(errors="surrogateescape")).digest()
