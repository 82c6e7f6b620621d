"""``resources:`` compiled: the Markdown files of the folder it names (``resources`` by
default), each and all together under the resource limits, indexed by path."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from buddy.capabilities.resources.compiled import Resource
from buddy.capabilities.resources.limits import read_resources
from buddy.compile.project import inside, searched

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["compile_resources"]


def compile_resources(context: SectionContext) -> tuple[Resource, ...]:
    """The resource index, sorted by path (empty when there is no folder, or a file is
    refused: the problems are reported)."""
    folder = context.folder()
    if folder is None:
        return ()
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if searched(d))
        for filename in sorted(filenames):
            file = Path(dirpath) / filename
            if filename.startswith(".") or not filename.endswith(".md"):
                continue
            if not inside(file, folder):  # a symlink leading out
                continue
            found.append(file)
    # Regular files only, each and all together under the resource limits.
    contents, problems = read_resources((file, str(file)) for file in found)
    if problems:
        for problem in problems:
            context.report(problem)
        return ()
    out: list[Resource] = []
    for file, content in zip(found, contents, strict=True):
        rel = PurePosixPath(file.relative_to(folder).as_posix())
        out.append(
            Resource(str(rel), file.resolve(), len(content), hashlib.sha256(content).hexdigest())
        )
        context.depends_on(file)
    return tuple(sorted(out, key=lambda r: r.path))
