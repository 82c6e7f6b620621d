"""The ``conversation`` object: SPEC §4's capabilities, bound to one conversation.

Each part is a registered capability's facade (``Capability.attribute`` and ``facade``,
in ``buddy/capabilities/<name>/conversation.py``), including what the one-turn
data-visibility rule does to it. The built-in parts are re-exported here and typed below
for editors; a third-party capability's part is made the same way.

Custom tool bodies and hooks receive it. Every platform failure raises
:class:`~buddy.errors.PlatformError` with the HTTP status and the platform's reason
(inside a tool, the model sees that reason).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from buddy.capabilities.data.conversation import DataAccess
from buddy.capabilities.memory.conversation import Memory
from buddy.capabilities.proactive.conversation import ProactiveService
from buddy.capabilities.resources.conversation import Resources
from buddy.capabilities.turn import Bound
from buddy.capabilities.widgets.conversation import Widgets
from buddy.platform.api import PlatformClient

__all__ = ["Conversation", "DataAccess", "Memory", "ProactiveService", "Resources", "Widgets"]

Kind = Literal["private", "group"]

# ``module:Class`` → the class, resolved once per process.
_CLASSES: dict[str, type[Bound]] = {}


def _facade(reference: str) -> type[Bound]:
    found = _CLASSES.get(reference)
    if found is None:
        from buddy.capabilities import resolve
        from buddy.errors import CapabilityError

        found = resolve(reference)
        if not (isinstance(found, type) and issubclass(found, Bound)):
            raise CapabilityError(reference, "facade is not a buddy.capabilities.turn.Bound")
        _CLASSES[reference] = found
    return found


class Conversation:
    """One conversation's capabilities, as tool bodies and hooks receive them.

    Args:
        client: The platform transport.
        conversation_id: The conversation id.
        kind: ``private`` or ``group``.
        resources: The buddy's resources (read at process start).
        facades: ``(attribute, module:Class)`` of its parts; by default every registered
            capability's (a blueprint carries them compiled: ``blueprint.facades``).

    Attributes:
        id: The conversation id.
        kind: ``private`` or ``group``.
        resource: The buddy's resources (read at process start).
        memory: Long-term memory.
        data_access: User-authorised data.
        widget: Widgets.
        proactive: Proactive subscriptions, and whether this turn is proactive.
        parts: Every capability part, by attribute: the four above and any other
            registered capability's (set as an attribute too; typed code reads a
            third-party part from here).
    """

    memory: Memory
    data_access: DataAccess
    widget: Widgets
    proactive: ProactiveService

    def __init__(
        self,
        client: PlatformClient,
        conversation_id: str,
        kind: Kind,
        resources: Resources,
        *,
        facades: Iterable[tuple[str, str]] | None = None,
    ) -> None:
        self.id = conversation_id
        self.kind: Kind = kind
        self.client = client
        self.resource = resources
        if facades is None:
            from buddy.capabilities import facades as registered

            facades = registered()
        self.parts: dict[str, Bound] = {
            attribute: _facade(reference)(client, conversation_id)
            for attribute, reference in facades
        }
        for attribute, part in self.parts.items():
            setattr(self, attribute, part)
