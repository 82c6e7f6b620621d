"""The store: transactions that changed rows are counted and can be waited on; in-memory
stores start from one copy of their tables, each its own database, and run their
transactions on the caller's thread, each whole."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from buddy.platform.dev.store import Store

pytestmark = pytest.mark.anyio
SCHEMA = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    opened = Store(":memory:", [SCHEMA])
    await opened.open()
    yield opened
    await opened.close()


def _insert(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO notes (text) VALUES ('a')")


def _count(conn: sqlite3.Connection) -> int:
    count: int = conn.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
    return count


async def test_only_transactions_that_changed_rows_are_counted(store: Store) -> None:
    waiting = asyncio.create_task(store.changed(store.changes))
    await store.read(_count)
    await store.write(lambda conn: conn.execute("UPDATE notes SET text = 'b'"))  # no row

    def insert_then_fail(conn: sqlite3.Connection) -> None:
        _insert(conn)
        raise ValueError("rolled back")

    with pytest.raises(ValueError, match="rolled back"):
        await store.write(insert_then_fail)
    await asyncio.sleep(0)
    assert (store.changes, waiting.done()) == (0, False)
    await store.write(_insert)
    await asyncio.wait_for(waiting, 1)
    assert store.changes == 1
    await asyncio.wait_for(store.changed(0), 1)  # already past: returns at once


async def test_in_memory_stores_are_separate_databases(store: Store) -> None:
    other = Store(":memory:", [SCHEMA])
    await other.open()
    try:
        await store.write(_insert)
        assert (await store.read(_count), await other.read(_count)) == (1, 0)
    finally:
        await other.close()


async def test_an_in_memory_store_runs_its_transactions_on_the_callers_thread(
    store: Store, tmp_path: Path
) -> None:
    """No hop to the worker thread for an in-memory database (nothing to wait for); a
    database file's transactions still run on the store's thread, off the event loop."""
    here = threading.get_ident()
    assert await store.write(lambda conn: threading.get_ident()) == here
    on_file = Store(str(tmp_path / "notes.db"), [SCHEMA])
    await on_file.open()
    try:
        assert await on_file.write(lambda conn: threading.get_ident()) != here
        assert await on_file.read(lambda conn: threading.get_ident()) != here
    finally:
        await on_file.close()


async def test_an_in_memory_store_used_from_two_threads_keeps_transactions_whole(
    store: Store,
) -> None:
    """Each transaction runs whole, one at a time, whichever thread's loop runs it."""

    def add_two(conn: sqlite3.Connection) -> None:
        _insert(conn)
        time.sleep(0.001)  # the other thread's transaction may not start in between
        _insert(conn)

    async def many() -> None:
        for _ in range(20):
            await store.write(add_two)

    other = threading.Thread(target=lambda: asyncio.run(many()))
    other.start()
    await many()
    await asyncio.to_thread(other.join)
    assert await store.read(_count) == 80
