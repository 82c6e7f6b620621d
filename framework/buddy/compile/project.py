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

import contextlib
import os
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from buddy.errors import Issue

__all__ = [
    "ROOT_MARKERS",
    "SKIP_DIRS",
    "find_project_root",
    "inside",
    "not_regular",
    "one_look",
    "read_file",
    "resolved",
    "searched",
    "size_text",
    "unmarked_root_note",
    "write_cache",
]

ROOT_MARKERS = (".git", "pyproject.toml")
# Besides these, every folder whose name starts with a dot is skipped.
SKIP_DIRS = frozenset({"node_modules", "venv", ".venv", "__pycache__"})

_KIND = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


_RESOLVED: ContextVar[dict[Path, Path] | None] = ContextVar("buddy_resolved", default=None)
_ROOTS: ContextVar[dict[Path, Path] | None] = ContextVar("buddy_roots", default=None)


@contextlib.contextmanager
def one_look() -> Iterator[None]:
    """Within it, :func:`resolved` follows the symlinks of each path once and
    :func:`find_project_root` looks for the root of each folder once: a compile asks for
    the same few folders dozens of times. Within another one, the outer one's look holds
    (a batch of compiles, :func:`buddy.compile.compiler.batch`, shares one)."""
    if _RESOLVED.get() is not None:
        yield
        return
    paths, roots = _RESOLVED.set({}), _ROOTS.set({})
    try:
        yield
    finally:
        _ROOTS.reset(roots)
        _RESOLVED.reset(paths)


def resolved(path: Path) -> Path:
    """``path.resolve()``, remembered within :func:`one_look` (errors are not)."""
    memo = _RESOLVED.get()
    if memo is None:
        return path.resolve()
    found = memo.get(path)
    if found is None:
        found = memo[path] = path.resolve()
    return found


def searched(name: str) -> bool:
    """Whether a folder called ``name`` is looked into when walking a project."""
    return name not in SKIP_DIRS and not name.startswith(".")


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` holding ``.git`` or ``pyproject.toml``.

    Falls back to ``start`` itself, so a lone buddy never searches the whole disk.
    """
    start = resolved(start)
    memo = _ROOTS.get()
    if memo is not None and start in memo:
        return memo[start]
    found = start
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in ROOT_MARKERS):
            found = directory
            break
    if memo is not None:
        memo[start] = found
    return found


def unmarked_root_note(root: Path) -> str:
    """A hint's sentence when ``root`` is a fallback — no ``.git`` or ``pyproject.toml``
    was found at or above the manifest, so the project is the manifest's own directory
    and nothing above it (plugins, templates, trait files) is looked at; ``""`` when
    ``root`` is a real project root."""
    if any((root / marker).exists() for marker in ROOT_MARKERS):
        return ""
    return (
        f"; note: no project root was found (buddy takes the nearest directory at or above"
        f" the manifest holding .git or pyproject.toml), so only {root} is searched —"
        " if your project's files are above it, run `git init` there or add an empty"
        " pyproject.toml"
    )


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, symlinks followed, lies inside ``root`` (a resolved directory).

    A name no file can have (a NUL byte) is judged as written: it is then reported
    missing, not outside.
    """
    try:
        real = resolved(path)
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


def not_regular(path: Path) -> str | None:
    """What ``path`` is when it is there but is not a regular file (``"a FIFO (named
    pipe)"``, ``"a directory"``), for a message; ``None`` for a regular file or nothing.

    Only looks (``os.stat``, symlinks followed): nothing is opened.
    """
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None
    if kind == stat.S_IFREG:
        return None
    return "a directory" if kind == stat.S_IFDIR else _KIND.get(kind, "a special file")


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
        message=f"the file has {size} bytes; the limit is {limit} ({size_text(limit)})",
        hint="split large content into several files",
    )


def size_text(limit: int) -> str:
    """A byte limit as people read it (``16 MiB``, ``1000 bytes``)."""
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


def write_cache(target: Path, data: bytes) -> bool:
    """Write the cache file ``target`` so that a reader sees the old file or the new one,
    never half of one; ``False`` when it cannot be written (a read-only checkout, a file
    where the folder would go): the cache is then not kept.

    A cache folder this makes gets a ``.gitignore`` of ``*`` (as pytest and mypy do for
    theirs), so a cache beside a shared template never shows up as untracked.
    """
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        if not target.parent.is_dir():
            with contextlib.suppress(FileExistsError):  # another process made it meanwhile
                target.parent.mkdir()
                (target.parent / ".gitignore").write_text(_CACHE_IGNORE, encoding="utf-8")
        temporary.write_bytes(data)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    return True


_CACHE_IGNORE = "# made by buddy: caches, never committed\n*\n"
