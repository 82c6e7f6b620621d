"""Extraction off the reply path: in order per conversation, a bounded wait, failures and
hangs contained, conversations independent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from buddy.capabilities.companion.queue import Extractions

pytestmark = pytest.mark.anyio


async def test_jobs_of_a_conversation_run_one_at_a_time_in_order() -> None:
    jobs = Extractions()
    seen: list[str] = []
    running = 0

    def job(name: str, delay: float) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            nonlocal running
            running += 1
            assert running == 1  # one at a time
            await asyncio.sleep(delay)
            seen.append(name)
            running -= 1

        return run

    for name, delay in (("a", 0.03), ("b", 0.0), ("c", 0.01)):
        jobs.submit("c1", job(name, delay))
    assert await jobs.settled("c1", timeout=1)
    assert seen == ["a", "b", "c"] and jobs.pending() == 0


async def test_a_reply_waits_only_so_long_and_the_job_still_finishes() -> None:
    jobs = Extractions()
    done = asyncio.Event()

    async def slow() -> None:
        await asyncio.sleep(0.05)
        done.set()

    jobs.submit("c1", slow)
    assert await jobs.settled("c1", timeout=0.01) is False  # the reply goes on
    assert not done.is_set()
    assert await jobs.settled("c1", timeout=1) and done.is_set()
    assert await jobs.settled("c1", timeout=0)  # nothing waits any more


async def test_a_failure_or_a_hang_is_no_new_memory_and_blocks_nothing() -> None:
    jobs = Extractions(limit=0.02)
    after: list[str] = []

    async def broken() -> None:
        raise RuntimeError("extractor answered 500")

    async def hangs() -> None:
        await asyncio.sleep(10)

    async def fine() -> None:
        after.append("ok")

    for job in (broken, hangs, fine):
        jobs.submit("c1", job)
    assert await jobs.settled("c1", timeout=1)
    assert after == ["ok"] and jobs.failures == 2


async def test_conversations_do_not_wait_for_each_other() -> None:
    jobs = Extractions()
    gate = asyncio.Event()

    async def stuck() -> None:
        await gate.wait()

    async def quick() -> None:
        return None

    jobs.submit("slow", stuck)
    jobs.submit("fast", quick)
    assert await jobs.settled("fast", timeout=0.5)
    assert not await jobs.settled("slow", timeout=0.01)
    gate.set()
    assert await jobs.settled("slow", timeout=0.5)


async def test_close_cancels_what_is_left() -> None:
    jobs = Extractions()

    async def forever() -> None:
        await asyncio.sleep(10)

    task = jobs.submit("c1", forever)
    second = jobs.submit("c1", forever)
    await jobs.close()
    assert task.cancelled() and second.cancelled() and jobs.pending() == 0


async def test_drained_waits_for_every_conversation_and_jobs_added_meanwhile() -> None:
    jobs = Extractions()
    seen: list[str] = []

    def job(name: str, then: str | None = None) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await asyncio.sleep(0.01)
            seen.append(name)
            if then is not None:  # a job that queues another (a save after a message)
                jobs.submit("c2", job(then))

        return run

    jobs.submit("c1", job("a", then="c"))
    jobs.submit("c2", job("b"))
    await asyncio.wait_for(jobs.drained(), 5)
    assert sorted(seen) == ["a", "b", "c"] and jobs.pending() == 0
    await asyncio.wait_for(jobs.drained(), 1)  # nothing left: at once


class _Stop(BaseException):
    """Not an ``Exception``: a signal to stop, as a framework's own cancellation is."""


async def test_a_job_that_raises_cancellation_or_a_base_exception_is_not_swallowed() -> None:
    jobs = Extractions()
    after: list[str] = []

    async def cancelled() -> None:
        raise asyncio.CancelledError

    async def stops() -> None:
        raise _Stop

    async def fine() -> None:
        after.append("ok")

    first = jobs.submit("c1", cancelled)
    second = jobs.submit("c1", stops)
    jobs.submit("c1", fine)
    assert await jobs.settled("c1", timeout=1)
    assert first.cancelled()
    assert isinstance(second.exception(), _Stop)
    assert after == ["ok"] and jobs.failures == 0 and jobs.pending() == 0  # not a failure


@pytest.mark.parametrize("when", ["called", "awaited"])
def test_keyboard_interrupt_in_a_job_reaches_the_loop(when: str) -> None:
    # Its own event loop: the interrupt stops the loop it is raised in, as Ctrl-C should.
    submitted: list[asyncio.Task[None]] = []

    async def interrupted() -> None:
        raise KeyboardInterrupt

    def job() -> Awaitable[None]:
        if when == "called":
            raise KeyboardInterrupt
        return interrupted()

    async def main() -> None:
        submitted.append(Extractions().submit("c1", job))
        await asyncio.sleep(5)  # the interrupt ends this at once

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    task = submitted[0]
    assert task.done() and (task.cancelled() or isinstance(task.exception(), KeyboardInterrupt))


async def test_a_queued_job_cancelled_while_it_waits_keeps_the_order_of_the_rest() -> None:
    jobs = Extractions()
    gate = asyncio.Event()
    seen: list[str] = []

    def job(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            if name == "a":
                await gate.wait()
            seen.append(name)

        return run

    jobs.submit("c1", job("a"))
    waiting = jobs.submit("c1", job("b"))
    jobs.submit("c1", job("c"))
    await asyncio.sleep(0.01)
    waiting.cancel()  # "b" never runs: no new memory from its message
    await asyncio.sleep(0.01)
    assert seen == []  # "c" still waits for "a", which has not ended
    assert not await jobs.settled("c1", timeout=0.01)  # no CancelledError for the caller
    gate.set()
    assert await jobs.settled("c1", timeout=1)
    assert seen == ["a", "c"] and waiting.cancelled()
    assert jobs.failures == 0 and jobs.pending() == 0
