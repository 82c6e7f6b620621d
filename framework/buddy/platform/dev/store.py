"""SQLite storage for the dev platform, off the event loop.

One connection lives on one worker thread: every read and write runs there, so the event
loop never blocks on disk and writes are serialised without locks. The database runs in
WAL mode with ``synchronous=FULL``: a write whose transaction returned has reached the
disk before the HTTP response that acknowledges it is sent, so a ``kill -9`` loses nothing
that was acknowledged.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["Store"]

T = TypeVar("T")


class Store:
    """An SQLite database used through :meth:`write` and :meth:`read`.

    Args:
        path: The database file, or ``":memory:"``.
        schemas: DDL scripts (``CREATE TABLE IF NOT EXISTS …``) run at :meth:`open`.
    """

    def __init__(self, path: str, schemas: Iterable[str]) -> None:
        self.path = path
        self.schemas = tuple(schemas)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="buddy-sqlite")
        self._conn: sqlite3.Connection | None = None

    def _open(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        for script in self.schemas:
            conn.executescript(script)
        self._conn = conn

    async def open(self) -> None:
        """Open the database and create missing tables."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._open)

    async def close(self) -> None:
        """Close the connection and stop the worker thread."""

        def _close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, _close)
        self._executor.shutdown(wait=True)

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        if conn is None:
            raise RuntimeError("the store is not open")
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in one transaction; committed when this returns."""
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self._transaction, fn
        )

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` for reading (a consistent snapshot: same transaction machinery)."""
        return await self.write(fn)
