"""Platform capabilities, one folder each, and the registry that plugs them into the core.

A capability is everything about one thing the platform can do — resources, question
cards, memory, user data, widgets, proactive service — kept in its own package
``buddy/capabilities/<name>/``, with the same file name for the same role in every one:

``__init__.py``
    What it is (a docstring): importing a part of it imports nothing else.
``capability.py``
    ``CAPABILITY``: the :class:`Capability` the registry takes (its name and parts).
``tools.py``
    Its model tools as :class:`PlatformTool` declarations: names, labels, descriptions
    and parameter schemas, built from its own limits. Standard library only: ``buddy
    validate`` reads them.
``execute.py``
    What each tool does at run time, bound to the ``conversation`` object; imported by
    the runtime on first use only.
``conversation.py``
    Its part of the ``conversation`` object (a :class:`~buddy.extend.turn.Bound`),
    with what the one-turn data-visibility rule does to it; it speaks to the platform
    through the ``PlatformClient`` transport.
``startup.py``
    What the platform must know before the buddy's first event.
``manifest.py``, ``compile.py``, ``compiled.py``, ``render.py``
    Its ``buddy.yaml`` section (:class:`Section`): the pydantic model, the checks that need
    more than one value and the compiled form (``compiled.py`` is standard library only: a
    cached start unpickles it), and what ``buddy render`` shows.
``wire.py``, ``platform.py``
    Its protocol bodies, and its part of the dev platform (tables, routes, scheduler
    work; :mod:`buddy.platform.dev.parts`).
``scenario.py``
    Its words in ``buddy test`` scenario files: step actions (:class:`StepAction`) and
    expectations (:class:`StepExpect`), run against the dev platform.
``playground.py``, ``playground.js``
    Its part of the playground: what its panel shows of a buddy (data in the page's
    state), and its script (its tab, its cards in the chat, how its events read).

The contract these folders implement — :class:`~buddy.extend.Capability` and its parts,
the hooks' signatures, the registry — is :mod:`buddy.extend`, below the core: the core —
manifest, compile, runtime, the platform transport and dev app, testing — imports that and
never this package, and names no capability. Its names are re-exported here for code
written against ``buddy.capabilities``; a start from the compiled-buddy cache imports the
compiled parts and the ``conversation`` parts of capabilities, never the registry. The built-ins are
registered exactly as a third-party capability is: a module with ``CAPABILITY``, loaded
by :func:`register_module` (the built-ins by the names in :data:`BUILTINS`, their
``capability`` modules, like pytest's own plugins; others through the ``buddy.capabilities``
entry-point group, skipped while ``BUDDY_DISABLE_CAPABILITY_AUTOLOAD`` is set, as the
test suite does). Registration checks every part's form and names the capability and the
part that is missing or wrong (:class:`~buddy.errors.CapabilityError`), as pluggy does for
hook implementations; parts that would import more than the standard library are checked
where they are loaded (the dev platform's, a section's model).
"""

from __future__ import annotations

from typing import Any

import buddy.extend
from buddy.extend import __all__ as __all__


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(buddy.extend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
