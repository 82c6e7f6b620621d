"""How the companion engine keeps a conversation's :class:`~buddy.capabilities.companion.mind.Mind`
on the platform: reading its ``auto:`` entries back, and saving what a message changed.

**Reading back.** The platform's memory is the truth (a fact forgotten in the playground
stays forgotten), so each extraction starts from it — but reads it only when something
else may have written. An event carries the memory's revision as it was delivered
(``event.revisions["memory"]``, docs/protocol.md §4 and §6); when every change between the
mind's last read and that revision was this process's own — a save of the layer
(:attr:`Mind.written`) or a write of the memory part that touched no ``auto:`` key
(:meth:`~buddy.capabilities.memory.conversation.Memory.plain`) — the mind is what a read
would give, and the read is skipped. An event without the revision, a revision anyone
else moved (the playground, an operator, a delete whose answer names no revision), or a
save that did not all land reads back.

**Saving.** What changed is written in one request the platform applies whole (``POST
/internal/v1/memory``): a process killed mid-save leaves every entry whole, and the state
never names a fact that is not stored. Against a platform without batches (it answers 404
or 405), or when the platform refuses the batch (an entry does not fit: memory is full),
each entry is its own write, facts before the state, and what does not fit is left out
while the rest goes in. Nothing is written while a turn that read user data runs
(:func:`quiet`), and the memory part refuses it all the same.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.companion.mind import LORE_KEY, STATE_KEY, Mind, read_back, wanted
from buddy.capabilities.memory.compiled import AutoMemory
from buddy.errors import PlatformError, ToolError

if TYPE_CHECKING:
    from buddy.capabilities.memory.conversation import Memory

__all__ = ["REVISION_GAP", "Storage", "quiet"]

log = logging.getLogger("buddy.memory")

#: The most revisions an event may be ahead of the mind for each to be checked as this
#: process's own; further ahead, the layer reads back.
REVISION_GAP = 64


async def quiet(conversation: Any, mind: Mind) -> None:
    """Wait while a turn that read user data is running (its commit sets
    ``turn_done``): the layer writes nothing in the rest of such a turn."""
    while conversation.turn.data_read and not mind.turn_done.is_set():
        await mind.turn_done.wait()


class Storage:
    """The layer's reads and saves of its conversations' memory.

    Args:
        memory: The ``memory:`` section (the relations a read-back keeps).
        character: The character, if any (its moods are read back).
        lore: Whether the buddy has lore (``auto:lore`` is kept).

    Attributes:
        reads: Times a conversation's memory was read back.
        batches: Whether the platform takes a save in one request (until it answers that
            it has no batches: then one write per entry).
    """

    def __init__(self, memory: AutoMemory, character: CharacterSpec | None, lore: bool) -> None:
        self.memory = memory
        self.character = character
        self.lore = lore
        self.reads = 0
        self.batches = True

    async def refresh(
        self, conversation: Any, mind: Mind, event: Any = None, *, lore: bool = False
    ) -> None:
        """Read the layer's entries back into ``mind`` (with ``lore``, lore's part too),
        unless ``event`` says that every change since the mind's last read was this
        process's own (see the module's docstring)."""
        memory: Memory = conversation.parts["memory"]
        if event is not None and _unchanged(memory, mind, event):
            return
        entries, revision = await memory.read()
        self.reads += 1
        read_back(mind, entries, self.memory, self.character, lore=lore)
        mind.revision, mind.written = revision, set()

    async def save(self, conversation: Any, mind: Mind) -> None:
        """Write what changed and delete what went: in one request applied whole, or —
        against a platform without batches, or when the batch was refused (memory full,
        say: the other entries still go in) — one entry at a time, facts before the state."""
        kept = wanted(mind, lore=self.lore)
        # Facts before the state, so the state never names a fact that is not stored.
        changes = sorted(
            ((k, t) for k, t in kept.items() if mind.stored.get(k) != t),
            key=lambda c: c[0] in (STATE_KEY, LORE_KEY),
        )
        gone = [k for k in mind.stored if k not in kept]
        mind.unsaved = False
        if not changes and not gone:
            return
        await quiet(conversation, mind)
        memory: Memory = conversation.parts["memory"]
        try:
            if not (self.batches and await self._batch(conversation, mind, memory, changes, gone)):
                await self._one_by_one(conversation, mind, memory, changes, gone)
        except BaseException:  # failed or cancelled midway: what landed is not known
            _left_out(mind)
            raise

    async def _batch(
        self,
        conversation: Any,
        mind: Mind,
        memory: Memory,
        changes: list[tuple[str, str]],
        gone: list[str],
    ) -> bool:
        """The save in one request (``True``: done, or left whole for the next save), or
        ``False``: to be written one entry at a time."""
        try:
            revision = await memory.apply_reserved(changes, gone)
        except ToolError:  # a turn that read user data began meanwhile: the next save
            log.info("automatic memory of %s waits for the next save", conversation.id)
            _left_out(mind)
            return True
        except PlatformError as exc:
            if exc.status in (404, 405) and exc.code != "conversation_not_found":
                self.batches = False  # an older platform: one write per entry from now on
                return False
            if exc.status == 400:  # an item refused: the others go in on their own
                return False
            log.warning("automatic memory of %s not written: %s", conversation.id, exc)
            _left_out(mind)
            return True
        for key in gone:
            mind.stored.pop(key, None)
        mind.stored.update(changes)
        _wrote(mind, revision)
        return True

    async def _one_by_one(
        self,
        conversation: Any,
        mind: Mind,
        memory: Memory,
        changes: list[tuple[str, str]],
        gone: list[str],
    ) -> None:
        """Each entry its own write (each whole), facts before the state."""
        for key in gone:
            await memory.delete_reserved(key)
            mind.stored.pop(key, None)
            mind.revision = None  # a delete answers no revision: read back
        for key, text in changes:
            try:
                revision = await memory.write_reserved(key, text)
            except PlatformError as exc:  # full, say: no new memory, the rest goes on
                log.warning(
                    "automatic memory of %s not written (%s): %s", conversation.id, key, exc
                )
                _left_out(mind)
                continue
            except ToolError:  # a turn that read user data began meanwhile: the next save
                log.info("automatic memory of %s: %s waits for the next save", conversation.id, key)
                _left_out(mind)
                continue
            mind.stored[key] = text
            _wrote(mind, revision)


def _unchanged(memory: Memory, mind: Mind, event: Any) -> bool:
    """Whether every change of the conversation's memory up to the revision ``event``
    carries was this process's own — a save of the layer's, or a write of the memory part
    that touched no ``auto:`` key — since the mind last read it back (then the mind is
    what a read would give, and is now at that revision)."""
    seen = (getattr(event, "revisions", None) or {}).get("memory")
    known = mind.revision
    if not isinstance(seen, int) or known is None or seen - known > REVISION_GAP:
        return False
    if not all(r in mind.written or memory.plain(r) for r in range(known + 1, seen + 1)):
        return False
    mind.revision = max(known, seen)
    mind.written = {r for r in mind.written if r > mind.revision}
    return True


def _left_out(mind: Mind) -> None:
    """A save did not all land: saved again after the turn, and read back before the next
    message (what the mind holds is not what the platform holds)."""
    mind.unsaved = True
    mind.revision = None


def _wrote(mind: Mind, revision: int | None) -> None:
    """A save of the layer's made ``revision`` (``None``: the platform keeps none)."""
    if revision is None:
        mind.revision = None
    else:
        mind.written.add(revision)
