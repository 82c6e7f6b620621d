"""``conversation.resource``: the buddy's resources, read once when the buddy starts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from buddy.capabilities.resources.compiled import Resource, declared
from buddy.capabilities.resources.limits import read_resources
from buddy.errors import ManifestError, ResourceNotFoundError
from buddy.extend.turn import Bound

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["ResourceShelf", "Resources"]


class Resources:
    """The buddy's Markdown resources, read once when the process starts.

    Args:
        files: Path relative to ``resources/`` (``/``-separated) → text.
    """

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(sorted(files.items()))

    @classmethod
    def load(cls, resources: Iterable[Any]) -> Resources:
        """Read the files of a blueprint's resource index (``blueprint.sections["resources"]``).

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


# The files of each resource index a process runs (one per buddy version: ``buddy dev``
# reloads), by the index's identity: a conversation is made per turn in some uses, and
# hashing the index for each would cost more than the rest of the part.
_SHELVES: dict[int, tuple[tuple[Resource, ...], Resources]] = {}
_SHELVES_MAX = 8
_EMPTY = Resources({})


def _loaded(index: tuple[Resource, ...]) -> Resources:
    if not index:
        return _EMPTY
    found = _SHELVES.get(id(index))
    if found is None or found[0] is not index:  # new, or an id reused by another index
        if len(_SHELVES) >= _SHELVES_MAX:
            del _SHELVES[next(iter(_SHELVES))]
        found = _SHELVES[id(index)] = (index, Resources.load(index))
    return found[1]


class ResourceShelf(Bound):
    """``conversation.resource``: the buddy's resources (:class:`Resources`), read once
    when the buddy starts (:meth:`prepare`) and shared by its conversations."""

    shelf: Resources = _EMPTY

    @classmethod
    def prepare(cls, blueprint: Blueprint) -> None:
        """Read the buddy's resources (a failure stops the start).

        Raises:
            ManifestError: A resource is no longer a regular UTF-8 file, or is over a limit.
        """
        _loaded(declared(blueprint))

    def configure(self, blueprint: Blueprint) -> None:
        self.shelf = _loaded(declared(blueprint))

    def list(self) -> list[str]:
        """Every resource path, sorted."""
        return self.shelf.list()

    def read(self, file: str) -> str:
        """The text of ``file``, exactly as :meth:`list` gives it.

        Raises:
            ResourceNotFoundError: No such resource.
        """
        return self.shelf.read(file)
