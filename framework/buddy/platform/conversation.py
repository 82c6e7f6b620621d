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

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from buddy.extend.turn import Bound
from buddy.platform.api import PlatformClient

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["Conversation", "Kind", "Parts", "part_classes", "prepare"]

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


class Parts(Mapping[str, Bound]):
    """A conversation's parts by attribute, each made when first used (a turn touches few
    of them, and some callers make a conversation per turn). Iterating makes them all.

    Args:
        classes: Each part's class, by attribute.
        make: Makes the part of an attribute from its class.
    """

    def __init__(
        self, classes: Mapping[str, type[Bound]], make: Callable[[type[Bound]], Bound]
    ) -> None:
        self._classes = classes
        self._make = make
        self._made: dict[str, Bound] = {}

    def __getitem__(self, attribute: str) -> Bound:
        part = self._made.get(attribute)
        if part is None:
            part = self._made[attribute] = self._make(self._classes[attribute])
        return part

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)

    def made(self) -> Iterator[Bound]:
        """The parts made so far."""
        return iter(self._made.values())


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
            ``conversation.memory``, ``conversation.resource`` …), made when first used.
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
        self.parts = Parts(part_classes(facades), self._made)

    def _made(self, cls: type[Bound]) -> Bound:
        """A part of this conversation, made now (a runtime conversation configures it)."""
        return cls(self.client, self.id)

    if not TYPE_CHECKING:  # to a type checker, a part is an attribute of a typed view

        def __getattr__(self, name: str) -> Any:
            # Only reached for a name that is no attribute yet: a part, made on first use.
            parts = self.__dict__.get("parts")
            if parts is not None and name in parts:
                part = parts[name]
                setattr(self, name, part)
                return part
            shown = ", ".join(sorted(parts or ())) or "none"
            raise AttributeError(f"conversation has no part {name!r} (its parts: {shown})")
