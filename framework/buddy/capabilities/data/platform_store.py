"""The data tables' queries the routes share: declared versions, a member's data, grant
states, the one-time results' expiry (:mod:`buddy.capabilities.data.platform`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Literal

from buddy.capabilities.data import simulate
from buddy.capabilities.data.wire import GrantState
from buddy.errors import Reject

__all__ = [
    "check_identity",
    "check_member",
    "declared_versions",
    "erase_expired",
    "grant_states",
    "items_of",
]


def declared_versions(conn: sqlite3.Connection, identity_name: str) -> dict[str, str]:
    """The grant version of each dataset the identity declares now."""
    rows = conn.execute(
        "SELECT dataset, version FROM data_declarations WHERE identity = ?", (identity_name,)
    ).fetchall()
    return {r["dataset"]: r["version"] for r in rows}


def items_of(
    conn: sqlite3.Connection, member_id: str, dataset: str, now: float
) -> tuple[Literal["simulated", "override"], list[dict[str, Any]] | None]:
    """A member's data of one dataset now: its override, else the simulation."""
    row = conn.execute(
        "SELECT items FROM data_overrides WHERE member_id = ? AND dataset = ?",
        (member_id, dataset),
    ).fetchone()
    if row is None:
        return "simulated", simulate.simulate(member_id, dataset, now)
    items: list[dict[str, Any]] | None = None if row["items"] is None else json.loads(row["items"])
    return "override", items


def erase_expired(conn: sqlite3.Connection, now: float) -> None:
    """One-time results are erased once expired: the platform keeps no stale user data."""
    conn.execute(
        "UPDATE data_requests SET result = NULL WHERE result IS NOT NULL AND expires_at < ?",
        (now,),
    )


def check_identity(conn: sqlite3.Connection, identity_name: str) -> None:
    """Refuse an identity no buddy has (404 ``buddy_not_found``)."""
    buddy_id = identity_name.removesuffix("-dev")
    if not conn.execute("SELECT 1 FROM buddies WHERE buddy_id = ?", (buddy_id,)).fetchone():
        raise Reject(404, "buddy_not_found", f"no buddy for identity {identity_name}")


def check_member(conn: sqlite3.Connection, member_id: str) -> None:
    """Refuse a member the platform does not know (404 ``member_not_found``)."""
    if not conn.execute("SELECT 1 FROM users WHERE member_id = ?", (member_id,)).fetchone():
        raise Reject(404, "member_not_found", f"no member {member_id}")


def grant_states(
    conn: sqlite3.Connection, identity_name: str, member_id: str, datasets: list[str]
) -> list[GrantState]:
    """Whether the member granted each dataset to the identity at its declared version."""
    declared = {
        r["dataset"]: r
        for r in conn.execute(
            "SELECT dataset, purpose, version FROM data_declarations WHERE identity = ?",
            (identity_name,),
        ).fetchall()
    }
    grants = {
        r["dataset"]: r["version"]
        for r in conn.execute(
            "SELECT dataset, version FROM data_grants WHERE identity = ? AND member_id = ?",
            (identity_name, member_id),
        ).fetchall()
    }
    states = []
    for dataset in datasets:
        row = declared.get(dataset)
        version = row["version"] if row else None
        states.append(
            GrantState(
                identity=identity_name,
                member_id=member_id,
                dataset=dataset,
                declared=row is not None,
                purpose=row["purpose"] if row else None,
                version=version,
                granted_version=grants.get(dataset),
                granted=version is not None and grants.get(dataset) == version,
            )
        )
    return states
