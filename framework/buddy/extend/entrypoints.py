"""Entry points of the installed distributions, read without :mod:`importlib.metadata`.

Importing :mod:`importlib.metadata` (email, zipfile, csv …) costs a cold ``buddy validate``
more than reading the few ``entry_points.txt`` files does, and every compile asks for
three groups (``buddy.capabilities``, ``buddy.personas``, ``buddy.plugins``). So this
module reads them the way :func:`importlib.metadata.entry_points` does — the ``*.dist-info``
and ``*.egg-info`` folders of each folder on :data:`sys.path`, in that order, a
distribution seen twice counted once (the first wins), each file's ``[group]`` sections
and ``name = value`` lines — and hands anything it does not handle the same way (a zip
file or an egg on the path, a finder of distributions other than the path's, a file it
cannot read) to :mod:`importlib.metadata` itself.
"""

from __future__ import annotations

import os
import re
import sys
from importlib.machinery import PathFinder

__all__ = ["entry_points"]

_SEPARATORS = re.compile(r"[-_.]+")


def entry_points(group: str) -> list[tuple[str, str]]:
    """``(name, value)`` of every entry point of ``group``, in the order
    :func:`importlib.metadata.entry_points` lists them."""
    try:
        found = _read(group)
    except (OSError, UnicodeDecodeError, ValueError, _Unusual):
        found = None
    if found is None:
        from importlib.metadata import entry_points as listed

        return [(e.name, e.value) for e in listed(group=group)]
    return found


class _Unusual(Exception):
    """Something :mod:`importlib.metadata` reads in a way this module does not."""


def _read(group: str) -> list[tuple[str, str]]:
    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        raise _Unusual
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                raise _Unusual  # a zip file: importlib.metadata reads inside it
            continue
        if os.path.basename(folder).lower().endswith(".egg"):
            raise _Unusual
        for info in _infos(folder):
            base = os.path.basename(info)
            if not base.endswith((".dist-info", ".egg-info")):
                raise _Unusual  # `.DIST-INFO`: importlib.metadata reads its name inside
            name = _normalized(base)
            if name in seen:
                continue
            seen.add(name)
            text = _text(os.path.join(info, "entry_points.txt"))
            if text is not None:
                found.extend(_pairs(text, group))
    return found


def _infos(folder: str) -> list[str]:
    """The metadata folders in ``folder``, grouped by name in the order a listing first
    shows each (as importlib.metadata's ``Lookup`` keeps them)."""
    groups: dict[str, list[str]] = {}
    try:
        children = os.listdir(folder)
    except OSError:
        return []
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            name = _SEPARATORS.sub("_", low.rpartition(".")[0].partition("-")[0])
            groups.setdefault(name, []).append(os.path.join(folder, child))
    return [info for infos in groups.values() for info in infos]


def _normalized(base: str) -> str:
    """A distribution's name as importlib.metadata compares them, from its folder's name."""
    stem = base.rpartition(".")[0].partition("-")[0]
    return _SEPARATORS.sub("-", stem).lower().replace("-", "_")


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None


def _pairs(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of ``[group]`` in an ``entry_points.txt``."""
    found: list[tuple[str, str]] = []
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        name, equals, value = line.partition("=")
        if not equals:
            raise _Unusual  # importlib.metadata fails on it: let it say so
        if section == group:
            found.append((name.strip(), value.strip()))
    return found
