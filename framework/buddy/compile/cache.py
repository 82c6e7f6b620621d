"""The compiled-buddy cache behind :func:`buddy.load`: a restart skips the loader.

Compiling a buddy is cheap; importing what compiles it (PyYAML, pydantic and the manifest
models) is most of a cold start. So, like Python's ``__pycache__``, :func:`load` keeps the
compiled :class:`~buddy.compile.blueprint.Blueprint` in ``__pycache__/`` next to the
``buddy.yaml`` and uses it while nothing it was compiled from has changed.

"Nothing has changed" is checked without trusting the compiler to list every place it
looked: the fingerprint covers where the ``buddy.yaml`` is (so a copied folder, its
``__pycache__`` included, compiles its own), the path and contents of every file the
blueprint depends on, the names of every file and folder under the project root (so a
new template or plugin that would now shadow another one counts), buddy's own source,
the interpreter, and the folders on ``sys.path`` (whose times change when a package is
installed or upgraded). A
cache that cannot be read, written or fingerprinted is simply not used. Like a ``.pyc``,
the cache is trusted as much as the project folder it sits in.

Set ``BUDDY_NO_CACHE=1`` (or pass ``cache=False``) to always compile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from buddy.compile.project import find_project_root, not_regular, read_file, searched, write_cache

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["MAX_FILES", "cache_file", "fingerprint", "load"]

log = logging.getLogger("buddy.compile.cache")

FORMAT = b"buddy-blueprint-cache 2"
# A project tree larger than this is not fingerprinted: walking it could cost more than
# compiling, so such projects always compile.
MAX_FILES = 20_000
# A file the compile depended on that is larger than this is not fingerprinted (the
# compile refuses such files anyway): the buddy compiles instead.
MAX_FILE_BYTES = 1024 * 1024
_PACKAGE = Path(__file__).resolve().parents[1]


def load(
    path: str | os.PathLike[str],
    *,
    profile: str | None = None,
    model: str | None = None,
    cache: bool = True,
) -> Blueprint:
    """Load, validate and compile a buddy, reusing the cached compile when it is current.

    Args:
        path: A ``buddy.yaml`` or the directory holding one.
        profile: A profile of the manifest's ``profiles`` to apply (its model wins).
        model: A model reference (``provider:name``) overriding everything for this run.
        cache: Use and refresh ``__pycache__/`` next to the manifest (also off when the
            environment sets ``BUDDY_NO_CACHE``).

    Returns:
        The compiled buddy.

    Raises:
        ManifestError: Carrying every located problem found (a buddy with problems is
            never cached).
    """
    manifest = Path(path)
    manifest = manifest / "buddy.yaml" if manifest.is_dir() else manifest
    use = cache and not os.environ.get("BUDDY_NO_CACHE")
    target = cache_file(manifest, profile, model) if use else None
    if target is not None:
        cached = _read(target, manifest)
        if cached is not None:
            return cached
    from buddy.compile.compiler import load as compile_buddy
    from buddy.compile.sandbox import no_disk_cache

    with contextlib.nullcontext() if use else no_disk_cache():
        blueprint = compile_buddy(manifest, profile=profile, model=model)
    if target is not None:
        _write(target, blueprint)
    return blueprint


def cache_file(manifest: Path, profile: str | None, model: str | None) -> Path:
    """Where the compile of ``manifest`` with ``profile`` and ``model`` is cached."""
    choice = hashlib.sha256(repr((profile, model)).encode()).hexdigest()[:12]
    return manifest.resolve().parent / "__pycache__" / f"{manifest.stem}.{choice}.blueprint"


def fingerprint(manifest: Path, files: tuple[Path, ...]) -> bytes | None:
    """What a compile of ``manifest`` depended on; ``None`` when it cannot be taken.

    It covers where ``manifest`` is (its resolved path) and where each of ``files`` is
    (resolved, as the compiler lists them), so it holds only for that folder: a copy of
    the folder, ``__pycache__`` and all, does not match it.
    """
    digest = hashlib.sha256(FORMAT)
    digest.update(f"{sys.version}|{sys.platform}|{manifest.resolve()}".encode())
    try:
        root = find_project_root(manifest.resolve().parent)
        for count, name in enumerate(_names(root), 1):
            if count > MAX_FILES:
                return None
            digest.update(f"{name}\n".encode(errors="surrogateescape"))
        for file in files:
            if not file.is_absolute():  # the compiler lists resolved paths, never these
                return None
            digest.update(f"\0{file}\0".encode(errors="surrogateescape"))
            # Regular files only, of bounded size: a file swapped for a FIFO or a huge
            # one since the compile must not hang or exhaust a start; it compiles again.
            content = read_file(file, str(file), MAX_FILE_BYTES)
            if not isinstance(content, bytes):
                return None
            digest.update(hashlib.sha256(content).digest())
        for name in _names(_PACKAGE):
            info = os.stat(_PACKAGE / name)
            digest.update(f"{name}:{info.st_size}:{info.st_mtime_ns}\n".encode())
        for directory in sys.path:
            if directory and os.path.isdir(directory):
                digest.update(f"{directory}:{os.stat(directory).st_mtime_ns}".encode())
    except OSError:
        return None
    return digest.digest()


def _names(top: Path) -> Iterator[str]:
    """The relative name of every file and folder under ``top``, in a stable order."""
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(top / relative) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            if entry.is_dir(follow_symlinks=False):
                if searched(entry.name):
                    pending.append(name)
                    yield f"{name}/"
            else:
                yield name


def _read(target: Path, manifest: Path) -> Blueprint | None:
    """The blueprint cached in ``target`` when it is a current compile of ``manifest``."""
    if not_regular(target) is not None:  # a FIFO would block the reader: a miss, replaced
        return None
    try:
        with target.open("rb") as stream:
            stored, data = pickle.load(stream)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a cache from another version, truncated, or unreadable
        log.debug("ignoring the compiled-buddy cache %s: %s", target, exc)
        return None
    from buddy.compile.blueprint import Blueprint

    # Taken for the manifest being loaded, not the one the cache names: a cache copied with
    # its folder (`cp -r`) fingerprinted the original's path and files, so it misses here.
    if not isinstance(data, Blueprint) or stored != fingerprint(manifest, data.files):
        return None
    return data if data.manifest == manifest else dataclasses.replace(data, manifest=manifest)


def _write(target: Path, blueprint: Blueprint) -> None:
    taken = fingerprint(blueprint.manifest, blueprint.files)
    if taken is None:
        return
    data = pickle.dumps((taken, blueprint), pickle.HIGHEST_PROTOCOL)
    if not write_cache(target, data):  # a read-only checkout compiles every time
        log.debug("cannot write the compiled-buddy cache %s", target)
