"""What the dev platform remembers of how a conversation came about, beyond its messages,
events and turns: the world's doings that leave only their latest state behind (a clock
moved, a dataset granted or revoked, a member's data replaced, a trigger fired) and the
companion layer's extractor answers, which never reach the platform otherwise.

:mod:`buddy.testing.record` reads both, with the conversation's events and turn records,
to write the conversation as a scenario file. The routes that act as the world write the
journal inside their own transactions (:func:`journal_in`); a ``buddy dev`` or ``buddy
chat`` session hands the layer's answers to :func:`keep_answer`. Both are bounded: the
journal keeps the last :data:`JOURNAL_KEPT` doings of the platform, and the answers the
last :data:`ANSWERS_KEPT` of each conversation (deleted with it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buddy.platform.dev.core import Platform

__all__ = [
    "ANSWERS_KEPT",
    "ANSWER_CHARS",
    "JOURNAL_KEPT",
    "JOURNAL_TABLES",
    "answers_of",
    "journal_in",
    "journal_of",
    "keep_answer",
    "keep_answers_of",
]

#: The world's doings kept (platform-wide; the oldest go first).
JOURNAL_KEPT = 10_000
#: The extractor answers kept per conversation (the oldest go first).
ANSWERS_KEPT = 500
#: An answer is kept up to this many characters (an extractor answers a short JSON object).
ANSWER_CHARS = 16_000

JOURNAL_TABLES = """
CREATE TABLE IF NOT EXISTS dev_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    action TEXT NOT NULL,
    identity TEXT,
    member_id TEXT,
    body TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS dev_answers (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    answer TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS dev_answers_conversation ON dev_answers (conversation_id, seq);
"""


def journal_in(
    conn: sqlite3.Connection,
    action: str,
    at: float,
    body: dict[str, Any],
    *,
    identity: str | None = None,
    member_id: str | None = None,
) -> None:
    """Note one doing of the world inside a caller's transaction.

    Args:
        conn: The caller's connection.
        action: ``advance``, ``grant``, ``revoke``, ``data``, ``data_reset`` or ``trigger``.
        at: The platform time it happened (for ``advance``: before the clock moved, so
            what the move fired comes after it).
        body: What was done (``{"seconds": …}``, ``{"dataset": …}``, …).
        identity: The identity it concerns, if one.
        member_id: The member it concerns, if one.
    """
    conn.execute(
        "INSERT INTO dev_journal (action, identity, member_id, body, at) VALUES (?, ?, ?, ?, ?)",
        (action, identity, member_id, json.dumps(body, ensure_ascii=False), at),
    )
    conn.execute(
        "DELETE FROM dev_journal WHERE seq <= (SELECT MAX(seq) FROM dev_journal) - ?",
        (JOURNAL_KEPT,),
    )


def journal_of(conn: sqlite3.Connection, after: float = 0.0) -> list[dict[str, Any]]:
    """The journal from platform time ``after`` on, oldest first (``body`` parsed)."""
    rows = conn.execute(
        "SELECT seq, action, identity, member_id, body, at FROM dev_journal WHERE at >= ?"
        " ORDER BY seq",
        (after,),
    ).fetchall()
    return [{**dict(r), "body": json.loads(r["body"])} for r in rows]


def keep_answer(
    conn: sqlite3.Connection, conversation_id: str, event_id: str, answer: str, at: float
) -> None:
    """Keep what the extractor answered for the message of ``event_id`` (a conversation
    deleted meanwhile keeps nothing)."""
    if not conn.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone():
        return
    conn.execute(
        "INSERT INTO dev_answers (conversation_id, event_id, answer, at) VALUES (?, ?, ?, ?)",
        (conversation_id, event_id, answer[:ANSWER_CHARS], at),
    )
    conn.execute(
        "DELETE FROM dev_answers WHERE conversation_id = ? AND seq NOT IN (SELECT seq FROM"
        " dev_answers WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?)",
        (conversation_id, conversation_id, ANSWERS_KEPT),
    )


def answers_of(conn: sqlite3.Connection, conversation_id: str) -> dict[str, str]:
    """Event id → the extractor's answer for that message (the last one, if asked twice)."""
    rows = conn.execute(
        "SELECT event_id, answer FROM dev_answers WHERE conversation_id = ? ORDER BY seq",
        (conversation_id,),
    ).fetchall()
    return {str(r["event_id"]): str(r["answer"]) for r in rows}


def keep_answers_of(layers: Iterable[object], platform: Platform | None) -> None:
    """Have each conversation layer that reports its extractor's answers (``on_answer``:
    the companion layer) keep them in ``platform``'s database, as a ``buddy dev`` or
    ``buddy chat`` session running in the platform's process does (``None``: a platform
    not in this process, which keeps nothing)."""
    if platform is None:
        return

    async def keep(conversation_id: str, event_id: str, answer: str) -> None:
        at = platform.clock.time()
        await platform.store.write(
            lambda conn: keep_answer(conn, conversation_id, event_id, answer, at)
        )

    for layer in layers:
        if hasattr(layer, "on_answer"):
            setattr(layer, "on_answer", keep)  # noqa: B010 (any layer that has the attribute)
