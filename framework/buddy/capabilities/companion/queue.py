"""Extraction off the reply path: per conversation one job at a time, in the order the
messages came, and a reply that waits for its own message's job only so long.

The rules of the seed, kept here so the runtime cannot get them wrong: messages of one
conversation are extracted in order, one at a time (two quick messages never land out of
order); a reply waits at most ``memory.wait_ms`` for its message's facts, then goes on
with what was known before while the job finishes; a job that fails or hangs means "no
new memory from this message" — it is logged and counted, and never breaks, delays
beyond the bound, or blocks the next message's job. Conversations do not wait for each
other.

Only an ``Exception`` is a job's failure. Cancellation, ``KeyboardInterrupt`` and
``SystemExit`` are not swallowed: they end the job's task as they came (a cancelled task
is cancelled), and the jobs after it still run, in order — a job cancelled while it waits
for its turn drops out of the line, and the next one still waits for every job before it.
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
        self._lines: dict[str, list[asyncio.Task[None]]] = {}  # jobs not done, in order
        self._running: set[asyncio.Task[None]] = set()

    def submit(self, conversation: str, job: Job) -> asyncio.Task[None]:
        """Run ``job`` after the conversation's earlier jobs; answers its task (which raises
        nothing but what is not an ``Exception``: a failure is logged and counted)."""
        line = self._lines.setdefault(conversation, [])
        earlier = list(line)

        async def run() -> None:
            # Every earlier job, not only the last: one cancelled while it waited its turn
            # has ended before those ahead of it. Their outcomes are their own.
            if earlier:
                await asyncio.wait(earlier)
            try:
                async with asyncio.timeout(self.limit):  # in this task: no task more per job
                    await job()
            except Exception as exc:  # no new memory from this message, nothing more
                self.failures += 1
                log.warning("no new memory from a message of %s: %r", conversation, exc)

        task = asyncio.get_running_loop().create_task(run())
        line.append(task)
        self._running.add(task)

        def forget(done: asyncio.Task[None]) -> None:
            self._running.discard(done)
            line = self._lines.get(conversation)
            if line is not None and done in line:
                line.remove(done)
                if not line:
                    del self._lines[conversation]

        task.add_done_callback(forget)
        return task

    async def settled(self, conversation: str, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the conversation's jobs submitted so far;
        ``True`` when they are done (the jobs go on either way, and how one ended — a
        cancelled one too — is not the caller's)."""
        line = self._lines.get(conversation)
        if not line:
            return True
        _, left = await asyncio.wait(list(line), timeout=timeout)
        return not left

    async def drained(self) -> None:
        """Wait until every conversation's jobs — those submitted meanwhile too — are done."""
        while self._lines:
            await asyncio.wait([task for line in self._lines.values() for task in line])

    def pending(self) -> int:
        """Conversations with a job not yet done."""
        return len(self._lines)

    async def close(self) -> None:
        """Cancel every job not yet done and wait for them to stop."""
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._lines.clear()
