"""The store: transactions that changed rows are counted and can be waited on; in-memory
stores start from one copy of their tables, each its own database."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator

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
