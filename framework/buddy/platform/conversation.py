"""The ``conversation`` object: the registered capabilities' parts, bound to one
conversation.

Each part is a registered capability's facade (``Capability.attribute`` and ``facade``,
in ``buddy/capabilities/<name>/conversation.py``), including what the one-turn
data-visibility rule does to it; this module names none of them. A part is an attribute
(``conversation.memory``) and an entry of :attr:`Conversation.parts`; the built-in ones
are typed for editors by :class:`buddy.capabilities.conversation.BuiltinConversation`.

Custom tool bodies and hooks receive it. Every platform failure raises
:class:`~buddy.errors.PlatformError` with the HTTP status and the platform's reason
(inside a tool, the model sees that reason).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from buddy.extend.turn import Bound
from buddy.platform.api import PlatformClient

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["Conversation", "Kind", "part_classes", "prepare"]

Kind = Literal["private", "group"]

# ``module:Class`` → the class, resolved once per process.
_CLASSES: dict[str, type[Bound]] = {}


def _facade(reference: str) -> type[Bound]:
    found = _CLASSES.get(reference)
    if found is None:
        from buddy.errors import CapabilityError
        from buddy.extend import resolve

        found = resolve(reference)
        if not (isinstance(found, type) and issubclass(found, Bound)):
            raise CapabilityError(reference, "facade is not a buddy.extend.turn.Bound")
        _CLASSES[reference] = found
    return found


# A blueprint's facades (by identity) → their classes: a conversation may be made per turn.
_PARTS: dict[int, tuple[object, dict[str, type[Bound]]]] = {}
_PARTS_MAX = 16


def part_classes(facades: Iterable[tuple[str, str]] | None = None) -> dict[str, type[Bound]]:
    """The class of each part, by attribute: of ``facades`` (``(attribute,
    module:Class)``, a blueprint's), or of every registered capability."""
    if facades is None:
        from buddy.extend import facades as registered

        facades = registered()
    known = _PARTS.get(id(facades))
    if known is not None and known[0] is facades:
        return known[1]
    classes = {attribute: _facade(reference) for attribute, reference in facades}
    if isinstance(facades, tuple):  # immutable: its classes can be kept
        if len(_PARTS) >= _PARTS_MAX:
            del _PARTS[next(iter(_PARTS))]
        _PARTS[id(facades)] = (facades, classes)
    return classes


def prepare(blueprint: Blueprint) -> None:
    """Let every part of ``blueprint`` read what its conversations share
    (``Bound.prepare``): once when the buddy starts, before its first event.

    Raises:
        BuddyError: A part cannot start (a resource file is gone …).
    """
    for cls in part_classes(blueprint.facades).values():
        cls.prepare(blueprint)


class Conversation:
    """One conversation's capabilities, as tool bodies and hooks receive them.

    Args:
        client: The platform transport.
        conversation_id: The conversation id.
        kind: ``private`` or ``group``.
        facades: ``(attribute, module:Class)`` of its parts; by default every registered
            capability's (a blueprint carries them compiled: ``blueprint.facades``).

    Attributes:
        id: The conversation id.
        kind: ``private`` or ``group``.
        parts: Every capability part, by attribute (each is an attribute too:
            ``conversation.memory``, ``conversation.resource`` …).
    """

    def __init__(
        self,
        client: PlatformClient,
        conversation_id: str,
        kind: Kind,
        *,
        facades: Iterable[tuple[str, str]] | None = None,
    ) -> None:
        self.id = conversation_id
        self.kind: Kind = kind
        self.client = client
        self.parts: dict[str, Bound] = {
            attribute: cls(client, conversation_id)
            for attribute, cls in part_classes(facades).items()
        }
        for attribute, part in self.parts.items():
            setattr(self, attribute, part)

    if not TYPE_CHECKING:  # to a type checker, a part is an attribute of a typed view

        def __getattr__(self, name: str) -> Any:
            # Only reached for a name that is no attribute: say which parts there are.
            parts = ", ".join(sorted(self.__dict__.get("parts", ()))) or "none"
            raise AttributeError(f"conversation has no part {name!r} (its parts: {parts})")
