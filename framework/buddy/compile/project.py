"""What a buddy project is on disk: where its root is, which folders are never searched,
and how a file of it is read.

Two rules hold for every file the loader (and the runtime) reads:

* **Inside the project.** A file or folder counts as the project's only if it lies inside
  the project root *after following symlinks* (:func:`inside`). Whatever a buddy reads is
  compiled in, uploaded to the platform or served to the model, so a symlink or a ``..``
  may not pull in anything from elsewhere on the disk. It is checked before the file is
  opened, so nothing outside is ever read.
* **A bounded, regular file.** :func:`read_file` opens only regular files (a FIFO would
  block the reader forever, a device never ends) and refuses one over its size limit
  before reading it (and, should it grow meanwhile, after reading one byte past the
  limit).

Standard library only, so the command line, the compiled-buddy cache and the runtime can
use it without importing the loader.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from buddy.errors import Issue

__all__ = [
    "MAX_RESOURCES_BYTES",
    "MAX_RESOURCE_BYTES",
    "ROOT_MARKERS",
    "SKIP_DIRS",
    "find_project_root",
    "inside",
    "read_file",
    "read_resources",
    "searched",
]

ROOT_MARKERS = (".git", "pyproject.toml")
# Besides these, every folder whose name starts with a dot is skipped.
SKIP_DIRS = frozenset({"node_modules", "venv", ".venv", "__pycache__"})

# Every resource is held in memory by a running buddy and hashed at every compile. One
# file is served whole to the model: 1 MiB of text is more than any model's context
# holds, and is the limit of every other file the loader reads.
MAX_RESOURCE_BYTES = 1024 * 1024
# All resources together: what a buddy process keeps in memory for them.
MAX_RESOURCES_BYTES = 16 * 1024 * 1024

_KIND = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def searched(name: str) -> bool:
    """Whether a folder called ``name`` is looked into when walking a project."""
    return name not in SKIP_DIRS and not name.startswith(".")


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding ``.git`` or ``pyproject.toml``.

    Falls back to ``start`` itself, so a lone buddy never searches the whole disk.
    """
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in ROOT_MARKERS):
            return directory
    return start


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, symlinks followed, lies inside ``root`` (a resolved directory).

    A name no file can have (a NUL byte) is judged as written: it is then reported
    missing, not outside.
    """
    try:
        real = path.resolve()
    except (OSError, ValueError):
        real = Path(os.path.abspath(path))
    return real.is_relative_to(root)


def read_file(path: Path, shown: str, limit: int, *, what: str = "file") -> bytes | Issue:
    """The bytes of the regular file ``path``, or the located :class:`Issue` refusing it.

    Args:
        path: The file to read (symlinks are followed; check :func:`inside` first).
        shown: The name to locate issues at.
        limit: The most bytes the file may have (``file-too-large`` beyond it).
        what: What the file is, for the messages (``"resource"``).

    Returns:
        The content, or an issue coded ``file-not-found`` (also for a directory),
        ``file-not-regular`` (a FIFO, device or socket) or ``file-too-large``.
    """
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
        if kind != stat.S_IFREG:
            return _not_regular(shown, kind, what)
        # O_NONBLOCK: should the name be swapped for a FIFO after the check, opening it
        # must not wait for a writer; fstat below then refuses it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return Issue.of_file(shown, "file-not-found", "no such file")
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Issue.of_file(shown, "file-not-found", f"cannot read the file: {reason}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _not_regular(shown, stat.S_IFMT(info.st_mode), what)
        if info.st_size > limit:
            return _too_large(shown, info.st_size, limit)
        with os.fdopen(fd, "rb", closefd=False) as stream:
            content = stream.read(limit + 1)
    except OSError as exc:
        return Issue.of_file(shown, "file-not-found", f"cannot read the file: {exc.strerror}")
    finally:
        os.close(fd)
    if len(content) > limit:  # it grew after fstat
        return _too_large(shown, len(content), limit)
    return content


def read_resources(files: Iterable[tuple[Path, str]]) -> tuple[list[bytes], list[Issue]]:
    """Read resource files under both limits: :data:`MAX_RESOURCE_BYTES` each and
    :data:`MAX_RESOURCES_BYTES` together.

    The one place both limits are enforced: the compiler indexes resources with it and a
    running buddy loads them with it, so a file that changed since the compile is held to
    the same rules.

    Each must also be UTF-8 text (``resource-encoding``), as a running buddy serves it.

    Args:
        files: ``(path, shown)`` pairs; ``shown`` is the name to locate issues at.

    Returns:
        ``(contents, issues)``: every file's content in order when ``issues`` is empty
        (reading stops at the file that takes the total over the limit).
    """
    contents: list[bytes] = []
    issues: list[Issue] = []
    total = 0
    for path, shown in files:
        content = read_file(path, shown, MAX_RESOURCE_BYTES, what="resource")
        if isinstance(content, Issue):
            issues.append(content)
            continue
        try:
            content.decode("utf-8")  # a running buddy serves resources as text
        except UnicodeDecodeError as exc:
            issues.append(
                Issue(
                    file=shown,
                    line=content[: exc.start].count(b"\n") + 1,
                    column=1,
                    path="",
                    code="resource-encoding",
                    message="the resource is not valid UTF-8",
                    hint="save the file as UTF-8",
                )
            )
            continue
        total += len(content)
        if total > MAX_RESOURCES_BYTES:
            issues.append(
                Issue.of_file(
                    shown,
                    "resources-too-large",
                    f"the resources add up to more than {_size(MAX_RESOURCES_BYTES)} "
                    f"({MAX_RESOURCES_BYTES} bytes) with this file",
                    "keep only what the model needs in resources/; a running buddy holds "
                    "every resource in memory",
                )
            )
            break
        contents.append(content)
    return contents, issues


def _not_regular(shown: str, kind: int, what: str) -> Issue:
    if kind == stat.S_IFDIR:
        return Issue.of_file(shown, "file-not-found", "this is a directory, not a file")
    return Issue.of_file(
        shown,
        "file-not-regular",
        f"this {what} is {_KIND.get(kind, 'not a regular file')}, not a regular file",
        "replace it with an ordinary file",
    )


def _too_large(shown: str, size: int, limit: int) -> Issue:
    return Issue(
        file=shown,
        line=1,
        column=1,
        path="",
        code="file-too-large",
        message=f"the file has {size} bytes; the limit is {limit} ({_size(limit)})",
        hint="split large content into several files",
    )


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
