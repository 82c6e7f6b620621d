"""buddy — declarative chat companions: one ``buddy.yaml``, validated, compiled and run.

The package root imports nothing, so the ``buddy`` command starts fast (a warm start's
client reads only ``__path__`` and ``__version__``): the loader and its dependencies
(pydantic, Jinja2, PyYAML) are imported on first use of :func:`load`, the errors (and
with them ``typing`` and ``dataclasses``) on first use of one.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
    from buddy.compile.blueprint import Blueprint
    from buddy.compile.cache import load
    from buddy.compile.compiler import check
    from buddy.errors import BuddyError, Issue, ManifestError, PlatformError, ToolError
    from buddy.runtime.agent import Agent

__version__ = "0.1.0"

__all__ = [
    "DATA_ACCESS_CAPABILITIES",
    "Agent",
    "Blueprint",
    "BuddyError",
    "Issue",
    "ManifestError",
    "PlatformError",
    "ToolError",
    "__version__",
    "check",
    "load",
]

_LAZY = {
    "load": "buddy.compile.cache",
    "check": "buddy.compile.compiler",
    "Blueprint": "buddy.compile.blueprint",
    "DATA_ACCESS_CAPABILITIES": "buddy.capabilities.data.datasets",
    "Agent": "buddy.runtime.agent",
    **dict.fromkeys(
        ("BuddyError", "Issue", "ManifestError", "PlatformError", "ToolError"), "buddy.errors"
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'buddy' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
