"""What every capability's ``conversation`` facade shares: the conversation it is bound
to, the current turn's state, and the one-turn data-visibility rule's wording.

The runtime replaces :attr:`Bound.turn` at the start of every turn
(``buddy.runtime.state.RuntimeConversation``); outside the runtime a facade keeps a fresh
:class:`TurnState`, in which nothing was read, so nothing is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.platform.api import PlatformClient

__all__ = ["DATA_READ_REFUSAL", "Bound", "Injected", "Layer", "Layered", "TurnState"]

#: What the model reads when a write is refused after a data read (``{what}``: 写记忆 …).
DATA_READ_REFUSAL = (
    "这一轮已经读过用户授权的数据：为了让用户撤销授权时能真正收回，"
    "本轮不能再{what}。想让结论以后还在，就在回复里直接说出来。"
)


@dataclass
class TurnState:
    """What happened so far in the current turn.

    Attributes:
        unasked: Nobody asked for this turn: the platform started it (a proactive run; an
            ``EventKind`` with ``unasked``).
        data_read: Whether user data has been read (and so the model has seen it).
        question: The question card a tool sent this turn (it ends the turn).
        ended: Whether a tool ended the turn (question or consent card).
    """

    unasked: bool = False
    data_read: bool = False
    question: dict[str, Any] | None = None
    ended: bool = False


@dataclass
class Bound:
    """A facade bound to one conversation on a platform, and to the current turn.

    Attributes:
        client: The platform client.
        cid: The conversation id.
        turn: The current turn's state.
        strict: Refuse this capability's writes after a data read, beyond the contract's
            rule (``data: {after_read: strict}``).
    """

    client: PlatformClient
    cid: str
    turn: TurnState = field(default_factory=TurnState)
    strict: bool = False

    @classmethod
    def prepare(cls, blueprint: Blueprint) -> None:
        """Read, once when a buddy starts (before its first event), what every
        conversation of it shares (the resources' files); by default nothing.

        Raises:
            BuddyError: The buddy cannot start (a file is gone, over a limit …).
        """

    def configure(self, blueprint: Blueprint) -> None:
        """Take what the buddy's manifest says about this capability (the runtime calls
        it once per conversation); by default nothing."""

    async def opened(self, kind: str) -> None:
        """The runtime built the conversation (on its first event since the buddy
        started, with its ``kind``); by default nothing.

        Raises:
            PlatformError: A call failed; the conversation is built again on its next event.
        """

    async def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One protocol call for this conversation (``path`` under ``/internal/v1``)."""
        return await self.client.request(method, path, cid=self.cid, body=body)


@dataclass(frozen=True, slots=True)
class Injected:
    """A message a layer puts into one turn's history, for the model only: it is not
    committed and later turns do not see it (a lore entry at a depth).

    Attributes:
        depth: How many messages from the end it goes (0: after the turn's own message,
            1: just before it, …; deeper than the history: at its start).
        role: Who it speaks as. A ``system`` message goes as one on the providers that
            take system messages among the others, as a marked user text on the rest.
        text: What the model reads.
    """

    depth: int
    role: Literal["system", "user", "assistant"]
    text: str


@dataclass(frozen=True, slots=True)
class Layered:
    """What a conversation layer gives one turn.

    Attributes:
        context: Persona template variables by section key (``memory``, ``character``,
            ``lore``), replacing the blueprint's conversation-start ones.
        prompt: Text appended to the system prompt (its own ``##`` section), or ``""``.
        injected: Messages for this turn's history only (:class:`Injected`).
    """

    context: Mapping[str, Any] = field(default_factory=dict)
    prompt: str = ""
    injected: tuple[Injected, ...] = ()


class Layer(Protocol):
    """A capability's conversation layer (``Capability.layer``), driven by the runtime.

    ``conversation`` is the runtime's conversation object, ``event`` the platform event
    the turn answers (``type``, ``id``, ``payload``, ``created_at`` in platform seconds).
    """

    async def before(self, conversation: Any, event: Any) -> Layered:
        """The turn is about to be built: take the event in, and answer what the turn's
        prompt gets. Never raises; bounded in time by the layer's own settings."""
        ...

    async def after(self, conversation: Any, event: Any, turn: Mapping[str, Any]) -> None:
        """The turn was committed (``turn``: what was committed). Never raises."""
        ...

    def closed(self, conversation_id: str) -> None:
        """The runtime dropped the conversation's session (it may come back)."""
        ...

    def inspect(self, conversation_id: str) -> dict[str, Any]:
        """What the layer knows of the conversation in this process, as JSON data (the
        playground's inspector; ``{}`` when nothing)."""
        ...

    async def settled(self) -> None:
        """Wait until the layer's background work for every conversation is done."""
        ...

    async def close(self) -> None:
        """Stop the layer's background work."""
        ...
