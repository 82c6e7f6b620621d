"""The ``conversation`` object: SPEC §4's capabilities, bound to one conversation.

Each part is its capability's facade (``buddy/capabilities/<name>/conversation.py``,
re-exported here), including what the one-turn data-visibility rule does to it.

Custom tool bodies and hooks receive it. Every platform failure raises
:class:`~buddy.errors.PlatformError` with the HTTP status and the platform's reason
(inside a tool, the model sees that reason).
"""

from __future__ import annotations

from typing import Literal

from buddy.capabilities.data.conversation import DataAccess
from buddy.capabilities.memory.conversation import Memory
from buddy.capabilities.proactive.conversation import ProactiveService
from buddy.capabilities.resources.conversation import Resources
from buddy.capabilities.widgets.conversation import Widgets
from buddy.platform.api import PlatformClient

__all__ = ["Conversation", "DataAccess", "Memory", "ProactiveService", "Resources", "Widgets"]

Kind = Literal["private", "group"]


class Conversation:
    """One conversation's capabilities, as tool bodies and hooks receive them.

    Attributes:
        id: The conversation id.
        kind: ``private`` or ``group``.
        resource: The buddy's resources (read at process start).
        memory: Long-term memory.
        data_access: User-authorised data.
        widget: Widgets.
        proactive: Proactive subscriptions, and whether this turn is proactive.
    """

    def __init__(
        self, client: PlatformClient, conversation_id: str, kind: Kind, resources: Resources
    ) -> None:
        self.id = conversation_id
        self.kind: Kind = kind
        self.client = client
        self.resource = resources
        self.memory = Memory(client, conversation_id)
        self.data_access = DataAccess(client, conversation_id)
        self.widget = Widgets(client, conversation_id)
        self.proactive = ProactiveService(client, conversation_id)
