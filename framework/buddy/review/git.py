"""A git revision as a directory: what ``buddy diff --git REV`` compares the work tree with.

The revision's tree is streamed out of ``git archive`` into a temporary directory, so
the repository itself is never touched (no worktree bookkeeping, no hooks, no index).
The directory gets an empty ``.git`` folder: the project root of its buddies is then
the repository's top level, as it is in the work tree, and shared personas and plugins
resolve the same way on both sides.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from buddy.errors import BuddyError

__all__ = ["checkout", "resolve", "toplevel"]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise BuddyError("git is not installed (needed by --git)") from None


def toplevel(directory: Path) -> Path:
    """The top level of the git work tree holding ``directory``.

    Raises:
        BuddyError: ``directory`` is not inside a git work tree, or git is missing.
    """
    result = _git(directory, "rev-parse", "--show-toplevel")
    if result.returncode != 0:
        raise BuddyError(f"{directory}: not inside a git work tree")
    return Path(result.stdout.strip()).resolve()


def resolve(repo: Path, rev: str) -> str:
    """The commit id ``rev`` names.

    Raises:
        BuddyError: ``rev`` names no commit here (with a hint for shallow clones).
    """
    result = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if result.returncode != 0 or not result.stdout.strip():
        raise BuddyError(
            f"unknown revision {rev!r}; in a shallow or single-branch clone fetch it first, "
            f"e.g. `git fetch --depth=1 origin main`"
        )
    return result.stdout.strip()


def _extract(repo: Path, commit: str, dest: Path) -> None:
    process = subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        # A stream ("r|"): the archive is never held in memory whole. The "data" filter
        # refuses absolute paths, links out of the directory and special files (Python
        # before 3.11.4 has no filters; git archive writes neither of those anyway).
        with tarfile.open(fileobj=process.stdout, mode="r|") as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(dest, filter="data")
            else:  # pragma: no cover
                archive.extractall(dest)
    except (tarfile.TarError, OSError) as exc:
        process.kill()
        process.wait()
        raise BuddyError(f"could not extract {commit[:12]}: {exc}") from None
    finally:
        process.stdout.close()
    error = process.stderr.read().decode(errors="replace").strip()
    process.stderr.close()
    if process.wait() != 0:
        raise BuddyError(f"git archive {commit[:12]} failed: {error}")


@contextmanager
def checkout(repo: Path, rev: str) -> Iterator[Path]:
    """Materialise revision ``rev`` of ``repo`` in a temporary directory, removed on exit.

    Args:
        repo: The top level of a git work tree.
        rev: Any revision naming a commit (``HEAD``, ``origin/main``, a sha …).

    Yields:
        The directory holding the revision's files (with an empty ``.git`` folder
        marking it as the project root).

    Raises:
        BuddyError: ``rev`` is unknown or git failed.
    """
    commit = resolve(repo, rev)
    temporary = Path(tempfile.mkdtemp(prefix="buddy-diff-"))
    try:
        root = temporary / repo.name
        root.mkdir()
        _extract(repo, commit, root)
        (root / ".git").mkdir(exist_ok=True)
        yield root
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
