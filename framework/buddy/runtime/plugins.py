"""Import the plugin functions a blueprint names — only now, at run time.

Each project root gets its own package namespace (``_buddy_plugins_<hash>``) whose path is
that root, so ``plugins.x`` of two different projects never collide in one process, and
relative imports inside a plugin package work as usual.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

from buddy.compile.blueprint import HandlerRef

__all__ = ["load_handler"]


def _namespace(root: str) -> str:
    name = "_buddy_plugins_" + hashlib.sha256(root.encode()).hexdigest()[:12]
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [root]
        sys.modules[name] = package
    return name


def load_handler(ref: HandlerRef) -> Callable[..., Any]:
    """The function ``ref`` names (importing its module on first use).

    Raises:
        ImportError: The module cannot be imported (the error says why).
        AttributeError: The module has no such name.
    """
    if ref.root is None:
        module = importlib.import_module(ref.module)  # an installed `buddy.plugins` entry point
    else:
        module = importlib.import_module(f"{_namespace(str(ref.root))}.{ref.module}")
    function = getattr(module, ref.function)
    if not callable(function):
        raise TypeError(f"{ref.reference} is not callable")
    return function  # type: ignore[no-any-return]
