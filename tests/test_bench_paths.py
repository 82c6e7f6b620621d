"""Nothing in the repository points outside it: a fresh clone must rerun everything it describes.

Every file that git would track is searched for the workplace's shared folder (by its absolute
path, or by a relative one climbing out of the checkout to it) and for the absolute path of
this checkout, which a script or a doc copied from the working machine would carry. What git ignores is left
out: the root ``.gitignore``'s entries, ``.git``, and folders whose own ``.gitignore`` ignores
everything (pytest's, mypy's, ruff's and Hypothesis's caches write one).
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from tests.conftest import REPO

# Built from parts, so that this file does not contain what it looks for.
SHARED = "/".join(("", "work", "shared"))
SHARED_RELATIVE = "/".join(("..", "shared", ""))


def _ignored_patterns() -> list[str]:
    patterns = [".git/"]
    for raw in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith(("#", "!")):
            patterns.append(line)
    return patterns


def _is_ignored(relative: str, is_dir: bool, patterns: list[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        if pattern.endswith("/") and not is_dir:
            continue
        bare = pattern.rstrip("/")
        if "/" in bare:  # anchored at the root, as git reads a pattern with an inner slash
            if fnmatch.fnmatchcase(relative, bare.lstrip("/")):
                return True
        elif fnmatch.fnmatchcase(name, bare):
            return True
    return False


def _ignores_itself(folder: Path) -> bool:
    own = folder / ".gitignore"
    if not own.is_file():
        return False
    lines = own.read_text(encoding="utf-8", errors="replace").splitlines()
    return "*" in (line.strip() for line in lines)


def _tracked_files() -> list[Path]:
    patterns = _ignored_patterns()
    found: list[Path] = []
    for top, dirs, files in os.walk(REPO):
        here = Path(top)
        base = here.relative_to(REPO).as_posix()
        prefix = "" if base == "." else base + "/"
        dirs[:] = [
            d
            for d in dirs
            if not _is_ignored(prefix + d, True, patterns) and not _ignores_itself(here / d)
        ]
        found += [here / f for f in files if not _is_ignored(prefix + f, False, patterns)]
    return found


def test_the_walk_sees_the_repository_and_skips_what_git_ignores() -> None:
    files = {path.relative_to(REPO).as_posix() for path in _tracked_files()}
    assert {"README.md", "bench/compare.sh", "bench/WORKLOAD.md", "pyproject.toml"} <= files
    assert not [f for f in files if f.startswith((".venv/", ".git/", "bench/.peers/"))]
    assert not [f for f in files if "__pycache__/" in f]


def test_no_file_points_at_the_shared_folder_or_this_checkout() -> None:
    needles = [SHARED, SHARED_RELATIVE, str(REPO)]
    hits: list[str] = []
    for path in _tracked_files():
        data = path.read_bytes()
        for needle in needles:
            if needle.encode() not in data:
                continue
            text = data.decode("utf-8", errors="replace")
            hits += [
                f"{path.relative_to(REPO)}:{number}: {line.strip()[:120]}"
                for number, line in enumerate(text.splitlines(), start=1)
                if needle in line
            ]
    assert not hits, (
        "files point outside the repository (write a path relative to the checkout, or keep "
        "what they need under bench/ or docs/):\n" + "\n".join(hits)
    )
