"""Extraction off the reply path: in order per conversation, a bounded wait, failures and
hangs contained, conversations independent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from buddy.capabilities.memory.queue import Extractions

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
