"""One turn, run in one place whoever runs it — the buddy server, ``buddy.Agent``,
``buddy test``: an event becomes a turn.

1. The event's kind: a user's message, or a type a capability turns into a turn
   (:class:`~buddy.extend.EventKind`: its words for the model, its system-prompt part,
   whether nobody asked for it). The turn's state starts fresh (``unasked`` for those).
2. Every conversation layer takes the event in (``Layer.before``) and gives the turn its
   persona context and prompt part.
3. The system prompt: the persona rendered with that context (a declared part the
   template does not place added at its default place, :mod:`buddy.compile.placement`),
   the conversation's summary, the layers' parts, the kind's part. The last few are kept
   per conversation (:attr:`TurnRunner.sent`), for the playground and scenario files.
4. The agent loop: model → tools → model … (:class:`~buddy.runtime.loop.AgentLoop`).
5. The reply: an unasked turn that answered its kind's skip marker, nothing, a failure or
   the step limit says nothing.
6. The commit: what the platform stores of the turn (the reply, the question card, the
   steps as the loop redacted them, whether user data was read), through the caller's
   ``commit`` — the server's retries it; ``buddy.Agent``'s goes to its in-process platform.
7. The turn is over: the conversation's turn state is fresh again (what the one-turn data
   rule refused in it, a layer's background write may do now), and every layer hears the
   committed turn (``Layer.after``).

What the caller keeps — history, acknowledgement, compaction, retries — is the caller's.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from buddy.compile.blueprint import Blueprint
from buddy.compile.placement import Landing, system_prompt
from buddy.extend import persona_layer, resolve
from buddy.models.base import Message
from buddy.platform.limits import TURN_STEPS_MAX
from buddy.runtime.loop import STEP_LIMIT, AgentEvent, AgentLoop, TurnOutcome
from buddy.runtime.state import RuntimeConversation, TurnState

if TYPE_CHECKING:
    from buddy.extend import EventKind
    from buddy.extend.turn import Injected, Layer, Layered
    from buddy.platform.protocol.events import Event

__all__ = ["Commit", "LocalEvent", "Turn", "TurnRunner", "kept_steps"]

#: What stores a turn: ``(conversation id, turn) -> the platform's answer``.
Commit = Callable[[str, dict[str, Any]], Awaitable[Mapping[str, Any]]]


def kept_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``steps`` within the platform's :data:`~buddy.platform.limits.TURN_STEPS_MAX`: a
    turn of more (a model that called hundreds of tools at once) keeps its first ones and
    a text step saying how many were left out, so its commit is taken."""
    if len(steps) <= TURN_STEPS_MAX:
        return steps
    kept = steps[: TURN_STEPS_MAX - 1]
    note = f"[这一轮还有 {len(steps) - len(kept)} 步没有记下：一轮最多记 {TURN_STEPS_MAX} 步]"
    return [*kept, {"type": "text", "content": note}]


@dataclass(frozen=True, slots=True)
class LocalEvent:
    """An event its caller made rather than a platform delivered (``buddy.Agent``'s turns
    that nothing stores): the fields of a platform :class:`~buddy.platform.protocol.events.
    Event` a turn reads, without validating what the caller built itself."""

    id: str
    type: str
    conversation_id: str
    payload: dict[str, Any]
    created_at: float
    revisions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn that ran and was committed.

    Attributes:
        outcome: What the agent loop did (reply, steps, messages, error …).
        record: What was committed: ``event_id``, ``reply`` (``None``: nothing said),
            ``question``, ``steps``, ``data_read``.
        committed: The platform's answer to the commit (``status``: ``duplicate`` when it
            was committed before, ``skipped`` when its gates stopped the reply); ``{}``
            when nothing stored it.
    """

    outcome: TurnOutcome
    record: dict[str, Any]
    committed: Mapping[str, Any]


#: System prompts kept per conversation (:attr:`TurnRunner.sent`), and conversations kept.
SENT_KEPT = 5
SENT_CONVERSATIONS = 64


@dataclass(frozen=True, slots=True)
class Sent:
    """The system prompt one turn sent, and where each declared part landed in it.

    Attributes:
        event: The event the turn answered.
        system: The system prompt.
        landings: Each declared part's place (:class:`~buddy.compile.placement.Landing`).
        context: What the persona template was given of the sections, by key
            (``memory``, ``character``, ``lore``).
        injected: The messages the layers put into the turn's history
            (:class:`~buddy.extend.turn.Injected`).
    """

    event: str
    system: str
    landings: tuple[Landing, ...]
    context: Mapping[str, Any]
    injected: tuple[Injected, ...] = ()


class TurnRunner:
    """How every turn of one buddy runs (made once per running buddy).

    Args:
        blueprint: The buddy.
        loop: Its agent loop (model, tools, hooks).
        layers: Its conversation layers.
        kinds: The event types capabilities turn into turns; by default the registry's
            (:func:`~buddy.extend.event_kinds`), read on the first event that is not a
            message — a buddy that only answers messages never loads the registry.
    """

    def __init__(
        self,
        blueprint: Blueprint,
        loop: AgentLoop,
        layers: Sequence[Layer],
        kinds: Mapping[str, EventKind] | None = None,
    ) -> None:
        self.blueprint = blueprint
        self.loop = loop
        self.layers = tuple(layers)
        self._kinds = kinds
        #: The last :data:`SENT_KEPT` system prompts of the last :data:`SENT_CONVERSATIONS`
        #: conversations (newest last), by conversation id.
        self.sent: OrderedDict[str, deque[Sent]] = OrderedDict()

    @property
    def kinds(self) -> Mapping[str, EventKind]:
        """The event types capabilities turn into turns, by type."""
        if self._kinds is None:
            from buddy.extend import event_kinds

            self._kinds = event_kinds()
        return self._kinds

    def handles(self, event_type: str) -> bool:
        """Whether an event of this type becomes a turn (a message, or a registered kind)."""
        return event_type == "message" or event_type in self.kinds

    async def run(
        self,
        conversation: RuntimeConversation,
        event: Event | LocalEvent,
        history: list[Message],
        commit: Commit | None,
        *,
        summary: str = "",
        emit: Callable[[AgentEvent], None] | None = None,
    ) -> Turn:
        """Run the turn ``event`` starts, commit it (``commit``: ``None`` when nothing
        stores it), and let the layers hear it.

        Raises:
            PlatformError: The commit failed (the layers heard nothing).
        """
        kind = None if event.type == "message" else self.kinds.get(event.type)
        unasked = kind is not None and kind.unasked
        conversation.turn = TurnState(unasked=unasked)
        layered = (
            [await layer.before(conversation, event) for layer in self.layers]
            if self.layers
            else []
        )
        injected = tuple(one for part in layered for one in part.injected)
        system = self.system(
            conversation, kind, layered, summary, event=str(event.id), injected=injected
        )
        outcome = await self.loop.run(
            system,
            history,
            self.user(conversation, event, kind),
            conversation,
            emit,
            injected,
        )
        record = {
            "event_id": event.id,
            "reply": self._reply(outcome, kind) if unasked else outcome.reply,
            "question": conversation.turn.question,
            "steps": steps if len(steps := outcome.steps) <= TURN_STEPS_MAX else kept_steps(steps),
            "data_read": outcome.data_read,
        }
        committed = {} if commit is None else await commit(conversation.id, record)
        if conversation.turn.data_read:  # the turn is over: nothing is read between turns
            conversation.turn = TurnState()
        for layer in self.layers:
            await layer.after(conversation, event, record)
        return Turn(outcome, record, committed)

    def system(
        self,
        conversation: RuntimeConversation,
        kind: EventKind | None,
        layered: Sequence[Layered],
        summary: str = "",
        *,
        event: str = "",
        injected: tuple[Injected, ...] = (),
    ) -> str:
        """The turn's system prompt (kept in :attr:`sent`, with the ``injected`` messages
        the turn's history gets)."""
        given: dict[str, Any] = {}
        for part in layered:
            given.update(part.context)
        context = persona_layer(self.blueprint, example=False, given=given)
        prompt, landings = system_prompt(
            self.blueprint.persona,
            self.blueprint.placements,
            context,
            kind=conversation.kind,
            conversation_id=conversation.id,
            event=event,
        )
        if summary:
            prompt += f"\n\n## 之前聊过的内容（摘要）\n{summary}"
        prompt += "".join(f"\n\n{part.prompt}" for part in layered if part.prompt)
        if kind is not None and kind.prompt:
            prompt += resolve(kind.prompt)(self.blueprint)
        self._keep(conversation.id, Sent(event, prompt, landings, context, injected))
        return prompt

    def _keep(self, conversation_id: str, sent: Sent) -> None:
        kept = self.sent.pop(conversation_id, None) or deque(maxlen=SENT_KEPT)
        kept.append(sent)
        self.sent[conversation_id] = kept
        while len(self.sent) > SENT_CONVERSATIONS:
            self.sent.popitem(last=False)

    @staticmethod
    def user(
        conversation: RuntimeConversation, event: Event | LocalEvent, kind: EventKind | None
    ) -> Message:
        """What the model reads as the turn's user message."""
        payload = event.payload
        if kind is not None:  # a capability's event: its own words for the model
            return Message("user", resolve(kind.user)(payload))
        text = str(payload.get("text", ""))
        if conversation.kind == "group":
            sender = payload.get("sender") or {}
            return Message("user", f"[{sender.get('name')} #{sender.get('member_id')}] {text}")
        return Message("user", text)

    @staticmethod
    def _reply(outcome: TurnOutcome, kind: EventKind | None) -> str | None:
        """An unasked turn's reply: ``None`` when it says nothing."""
        reply = outcome.reply
        if kind is None:
            return reply
        if reply is not None and reply.strip() in (kind.skip, ""):
            return None  # nothing worth saying
        if outcome.error is not None or reply == STEP_LIMIT:
            return None  # nobody asked: an unasked turn that failed says nothing
        return reply
