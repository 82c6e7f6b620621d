"""SQLite storage for the dev platform, off the event loop.

One connection lives on one worker thread: every read and write of a database file runs
there, so the event loop never blocks on disk and writes are serialised. An in-memory
database (``":memory:"``: ``buddy.Agent``'s platform, ``buddy test``'s) has no disk to wait
for, and handing each transaction to the thread and back cost more than the transaction:
its transactions run on the calling thread, whole (nothing awaits inside one), one at a
time (a lock, for a store used from more than one thread). The database runs in
WAL mode with ``synchronous=FULL``: a write whose transaction returned has reached the
disk before the HTTP response that acknowledges it is sent, so a ``kill -9`` loses nothing
that was acknowledged. Transactions that changed rows are counted (:attr:`Store.changes`):
a test in this process waits on them (:meth:`Store.changed`) instead of polling.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["Store"]

T = TypeVar("T")


# DDL scripts → an in-memory database made by them, copied into each new in-memory store:
# copying its pages takes ~0.4 ms, running the scripts ~1.4 ms (and `buddy test` opens a
# store per scenario). Never written to after it is made.
_BLANKS: dict[tuple[str, ...], sqlite3.Connection] = {}
_BLANKS_LOCK = threading.Lock()


def _copy_blank(schemas: tuple[str, ...], into: sqlite3.Connection) -> None:
    with _BLANKS_LOCK:  # stores open on their own threads
        if schemas not in _BLANKS:
            blank = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            for script in schemas:
                blank.executescript(script)
            _BLANKS[schemas] = blank
        _BLANKS[schemas].backup(into)


class Store:
    """An SQLite database used through :meth:`write` and :meth:`read`.

    Args:
        path: The database file, or ``":memory:"``.
        schemas: DDL scripts (``CREATE TABLE IF NOT EXISTS …``) run at :meth:`open` (for
            ``":memory:"`` run once per process, and the database they made copied).
    """

    def __init__(self, path: str, schemas: Iterable[str]) -> None:
        self.path = path
        self.schemas = tuple(schemas)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="buddy-sqlite")
        self._conn: sqlite3.Connection | None = None
        self.changes = 0  # transactions committed that changed rows, so far
        self._changed = asyncio.Event()  # set, and replaced, at each of them
        self._inline = path == ":memory:"  # transactions run on the caller's thread
        self._lock = threading.Lock()  # one transaction at a time, whatever the thread

    def _open(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        if self.path == ":memory:":
            _copy_blank(self.schemas, conn)
        else:
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

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> tuple[T, bool]:
        conn = self._conn
        if conn is None:
            raise RuntimeError("the store is not open")
        with self._lock:
            before = conn.total_changes
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result, conn.total_changes != before

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._inline:
            # Nothing to wait for in memory: the hand-off to the worker thread and back
            # costs more than the statements themselves, so they run here.
            result, changed = self._transaction(fn)
        else:
            result, changed = await asyncio.get_running_loop().run_in_executor(
                self._executor, self._transaction, fn
            )
        if changed:
            self.changes += 1
            event, self._changed = self._changed, asyncio.Event()
            event.set()
        return result

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in one transaction; committed when this returns."""
        return await self._run(fn)

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` for reading (a consistent snapshot: same transaction machinery)."""
        return await self._run(fn)

    async def changed(self, count: int) -> None:
        """Until more than ``count`` transactions changed rows (``count`` is
        :attr:`changes` read before looking): how a test waits for the platform to move
        on without polling it."""
        while self.changes <= count:
            await self._changed.wait()
