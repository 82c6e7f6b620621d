"""``conversation.resource``: the buddy's resources, read once when the process starts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from buddy.capabilities.resources.limits import read_resources
from buddy.errors import ManifestError, ResourceNotFoundError

__all__ = ["Resources"]


class Resources:
    """The buddy's Markdown resources, read once when the process starts.

    Args:
        files: Path relative to ``resources/`` (``/``-separated) → text.
    """

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(sorted(files.items()))

    @classmethod
    def load(cls, resources: Iterable[Any]) -> Resources:
        """Read the files of a blueprint's resource index (``blueprint.resources``).

        The files are read under the compiler's rules (regular files, the per-file and
        total size limits of :mod:`buddy.compile.project`): one may have changed since
        the compile, and a FIFO or a 3 GiB file must not hang or exhaust the process.

        Raises:
            ManifestError: A resource is no longer a regular UTF-8 file, or is over a
                limit.
        """
        index = list(resources)
        contents, issues = read_resources((r.file, str(r.file)) for r in index)
        if issues:
            raise ManifestError(issues)
        files = {r.path: c.decode("utf-8") for r, c in zip(index, contents, strict=True)}
        return cls(files)

    def list(self) -> list[str]:
        """Every resource path, sorted."""
        return list(self._files)

    def read(self, file: str) -> str:
        """The text of ``file``, exactly as :meth:`list` gives it.

        Raises:
            ResourceNotFoundError: No such resource.
        """
        try:
            return self._files[file]
        except KeyError:
            raise ResourceNotFoundError(
                f"没有这份资料：{file}（要照 resource_list 给的路径原样填）"
            ) from None
