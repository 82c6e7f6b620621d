"""The resources capability's limits, and the one reader that holds files to them.

Standard library only: the compiler, the compiled-buddy cache and the runtime use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from buddy.compile.project import read_file, size_text
from buddy.errors import Issue

__all__ = ["MAX_RESOURCES_BYTES", "MAX_RESOURCE_BYTES", "read_resources"]

# Every resource is held in memory by a running buddy and hashed at every compile. One
# file is served whole to the model: 1 MiB of text is more than any model's context
# holds, and is the limit of every other file the loader reads.
MAX_RESOURCE_BYTES = 1024 * 1024
# All resources together: what a buddy process keeps in memory for them.
MAX_RESOURCES_BYTES = 16 * 1024 * 1024


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
                    f"the resources add up to more than {size_text(MAX_RESOURCES_BYTES)} "
                    f"({MAX_RESOURCES_BYTES} bytes) with this file",
                    "keep only what the model needs in resources/; a running buddy holds "
                    "every resource in memory",
                )
            )
            break
        contents.append(content)
    return contents, issues
