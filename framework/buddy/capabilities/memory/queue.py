"""Extraction off the reply path: per conversation one job at a time, in the order the
messages came, and a reply that waits for its own message's job only so long.

The rules of the seed, kept here so the runtime cannot get them wrong: messages of one
conversation are extracted in order, one at a time (two quick messages never land out of
order); a reply waits at most ``memory.wait_ms`` for its message's facts, then goes on
with what was known before while the job finishes; a job that fails or hangs means "no
new memory from this message" — it is logged and counted, and never breaks, delays
beyond the bound, or blocks the next message's job. Conversations do not wait for each
other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["Extractions"]

log = logging.getLogger("buddy.memory")

Job = Callable[[], Awaitable[object]]


class Extractions:
    """The extraction jobs of every conversation of one buddy.

    Args:
        limit: How long one job may run (seconds) before it is given up.
    """

    def __init__(self, limit: float = 30.0) -> None:
        self.limit = limit
        self.failures = 0
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._running: set[asyncio.Task[None]] = set()

    def submit(self, conversation: str, job: Job) -> asyncio.Task[None]:
        """Run ``job`` after the conversation's earlier jobs; answers its task (which never
        raises: a failure is logged and counted)."""
        previous = self._tails.get(conversation)

        async def run() -> None:
            if previous is not None:  # its outcome is its own; only its end matters here
                await asyncio.wait([previous])
            try:
                await asyncio.wait_for(job(), self.limit)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # no new memory from this message, nothing more
                self.failures += 1
                log.warning("no new memory from a message of %s: %r", conversation, exc)

        task = asyncio.get_running_loop().create_task(run())
        self._tails[conversation] = task
        self._running.add(task)

        def forget(done: asyncio.Task[None]) -> None:
            self._running.discard(done)
            if self._tails.get(conversation) is done:
                del self._tails[conversation]

        task.add_done_callback(forget)
        return task

    async def settled(self, conversation: str, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the conversation's jobs submitted so far;
        ``True`` when they are done (the jobs go on either way)."""
        tail = self._tails.get(conversation)
        if tail is None:
            return True
        try:
            await asyncio.wait_for(asyncio.shield(tail), timeout)
        except TimeoutError:
            return False
        return True

    async def drained(self) -> None:
        """Wait until every conversation's jobs — those submitted meanwhile too — are done."""
        while self._tails:
            await asyncio.wait(list(self._tails.values()))

    def pending(self) -> int:
        """Conversations with a job not yet done."""
        return len(self._tails)

    async def close(self) -> None:
        """Cancel every job not yet done and wait for them to stop."""
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._tails.clear()
