"""Proactive subscriptions: operations and limits, the scheduler, event triggers, the gates.

Time is the platform's clock: tests read it (GET /dev/clock), create schedules relative to
it and move it forward (POST /dev/clock). Quiet hours and daily limits depend on local
time, so those tests first move the clock to a known local time of day.
"""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import httpx
import pytest

from buddy.capabilities.proactive import limits
from buddy.capabilities.proactive.conversation import ProactiveService
from buddy.capabilities.proactive.wire import SUBSCRIPTION_KEY_CHARS
from buddy.errors import PlatformError
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.platform.protocol.events import Event
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio

SH = "Asia/Shanghai"
LA = "America/Los_Angeles"
SUBS = "/internal/v1/proactive/subscriptions"
NO_QUIET = {"start": "00:00", "end": "00:00", "timezone": SH}
BASE: dict[str, Any] = {
    "title": "跑后复盘",
    "reason": "跑完步结合最近的聊天做一次简短复盘",
    "trigger": "workout.completed",
}


# ---------------------------------------------------------------- helpers


async def clock(dev: Dev) -> float:
    response = await dev.http.get("/dev/clock", headers=dev.admin)
    assert response.status_code == 200, response.text
    now: float = response.json()["time"]
    return now


async def advance(dev: Dev, seconds: float) -> None:
    response = await dev.http.post(
        "/dev/clock", headers=dev.admin, json={"advance_seconds": seconds}
    )
    assert response.status_code == 200, response.text


async def goto_local(dev: Dev, tz: str, hour: int, minute: int, second: int = 30) -> datetime:
    """Move the clock forward to the next moment that is hour:minute:second in ``tz``."""
    now = await clock(dev)
    local = datetime.fromtimestamp(now, ZoneInfo(tz))
    target = local.replace(hour=hour, minute=minute, second=second, microsecond=0)
    if target.timestamp() <= now + 1:
        target = (local + timedelta(days=1)).replace(
            hour=hour, minute=minute, second=second, microsecond=0
        )
    await advance(dev, target.timestamp() - now)
    return target


def iso(t: float, tz: str = SH) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(tz)).isoformat()


def schedule(at: float, interval: int | None = None) -> dict[str, Any]:
    trigger: dict[str, Any] = {"type": "schedule", "at": iso(at)}
    if interval is not None:
        trigger["interval_minutes"] = interval
    return trigger


async def put(
    dev: Dev, conv_id: str, key: str, *, dev_identity: bool = False, **fields: Any
) -> httpx.Response:
    body = {**BASE, **fields}
    return await dev.http.put(
        f"{SUBS}/{quote(key, safe='')}", headers=dev.auth(conv_id, dev=dev_identity), json=body
    )


async def subscribe(dev: Dev, conv_id: str, key: str, **fields: Any) -> dict[str, Any]:
    response = await put(dev, conv_id, key, **fields)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def listed(dev: Dev, conv_id: str) -> list[dict[str, Any]]:
    response = await dev.http.get(SUBS, headers=dev.auth(conv_id))
    assert response.status_code == 200, response.text
    subscriptions: list[dict[str, Any]] = response.json()["subscriptions"]
    return subscriptions


async def unsubscribe(dev: Dev, conv_id: str, key: str) -> bool:
    response = await dev.http.delete(f"{SUBS}/{quote(key, safe='')}", headers=dev.auth(conv_id))
    assert response.status_code == 200, response.text
    found: bool = response.json()["found"]
    return found


async def fire(
    dev: Dev, member_id: str, type_: str = "workout.completed", dataset: str | None = None
) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"identity": dev.buddy_id, "member_id": member_id, "type": type_}
    if dataset is not None:
        body["dataset"] = dataset
    response = await dev.http.post("/dev/triggers", headers=dev.admin, json=body)
    assert response.status_code == 200, response.text
    runs: list[dict[str, Any]] = response.json()["runs"]
    return runs


async def fire_one(dev: Dev, member_id: str) -> dict[str, Any]:
    (run,) = await fire(dev, member_id)
    return run


async def proactive_events(dev: Dev, identity: str = "demo") -> list[dict[str, Any]]:
    response = await dev.http.get("/dev/events", headers=dev.admin, params={"identity": identity})
    assert response.status_code == 200, response.text
    return [e for e in response.json() if e["type"] == "proactive"]


async def runs_of(dev: Dev, identity: str = "demo") -> list[dict[str, Any]]:
    response = await dev.http.get(
        "/dev/proactive/runs", headers=dev.admin, params={"identity": identity}
    )
    assert response.status_code == 200, response.text
    runs: list[dict[str, Any]] = response.json()["runs"]
    return runs


async def commit(dev: Dev, conv_id: str, event_id: str, reply: str | None) -> dict[str, Any]:
    response = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers=dev.auth(conv_id),
        json={"event_id": event_id, "reply": reply},
    )
    assert response.status_code == 200, response.text
    committed: dict[str, Any] = response.json()
    return committed


async def buddy_said(dev: Dev, conv_id: str) -> list[str]:
    response = await dev.http.get(f"/dev/conversations/{conv_id}/messages", headers=dev.admin)
    assert response.status_code == 200, response.text
    return [m["body"]["text"] for m in response.json() if m["sender"] == "buddy"]


async def private(dev: Dev) -> tuple[str, str]:
    """A private conversation: its id and its member."""
    conv = await dev.conversation()
    return conv["id"], conv["members"][0]["member_id"]


# ---------------------------------------------------------------- operations


async def test_subscribe_answers_the_subscription_with_defaults(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    before = await clock(dev)
    created = await subscribe(dev, conv_id, "run-review")
    assert created["key"] == "run-review"
    assert created["title"] == BASE["title"]
    assert created["trigger"] == "workout.completed"
    assert created["quiet_hours"] == {"start": "22:30", "end": "08:00", "timezone": SH}
    assert created["cooldown_minutes"] == limits.COOLDOWN_DEFAULT
    assert created["daily_limit"] == limits.DAILY_LIMIT_DEFAULT
    assert created["status"] == "active"
    assert created["created_at"] == created["updated_at"] >= before
    partial = await subscribe(dev, conv_id, "partial", quiet_hours={"timezone": LA})
    assert partial["quiet_hours"] == {"start": "22:30", "end": "08:00", "timezone": LA}


@pytest.mark.parametrize(
    "trigger",
    [
        "sleep.ready",
        {"type": "sleep.ready"},
        {"type": "workout.completed"},
        {"type": "data.updated", "dataset": None},
        {"type": "data.updated", "dataset": "health.sleep"},
        {"type": "schedule", "at": "2030-12-07T20:00:00+08:00", "interval_minutes": None},
        {"type": "schedule", "at": "2030-12-07T20:00:00-05:00", "interval_minutes": 10080},
    ],
)
async def test_every_trigger_form_round_trips(dev: Dev, trigger: Any) -> None:
    conv_id, _ = await private(dev)
    assert (await subscribe(dev, conv_id, "k", trigger=trigger))["trigger"] == trigger
    assert (await listed(dev, conv_id))[0]["trigger"] == trigger


async def test_same_key_updates_and_list_is_sorted_by_key(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    first = await subscribe(dev, conv_id, "b")
    await subscribe(dev, conv_id, "a.1")
    await subscribe(dev, conv_id, "c_2")
    await advance(dev, 5)
    updated = await subscribe(
        dev, conv_id, "b", title="新标题", trigger="sleep.ready", cooldown_minutes=0, daily_limit=20
    )
    assert updated["created_at"] == first["created_at"]
    assert updated["updated_at"] > first["updated_at"]
    assert (
        updated["title"],
        updated["trigger"],
        updated["cooldown_minutes"],
        updated["daily_limit"],
    ) == (
        "新标题",
        "sleep.ready",
        0,
        20,
    )
    subscriptions = await listed(dev, conv_id)
    assert [s["key"] for s in subscriptions] == ["a.1", "b", "c_2"]
    assert subscriptions[1] == updated


def _too(field: str, n: int, limit: int) -> str:
    return f"{field} is {n} characters; the limit is {limit}"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"title": "x" * limits.SUBSCRIPTION_TITLE_CHARS}, None),
        ({"title": "x" * (limits.SUBSCRIPTION_TITLE_CHARS + 1)}, _too("title", 101, 100)),
        ({"title": ""}, "title must not be empty"),
        ({"reason": "理" * limits.SUBSCRIPTION_REASON_CHARS}, None),
        ({"reason": "理" * (limits.SUBSCRIPTION_REASON_CHARS + 1)}, _too("reason", 501, 500)),
        ({"reason": ""}, "reason must not be empty"),
        ({"cooldown_minutes": 0}, None),
        ({"cooldown_minutes": -1}, "cooldown_minutes is -1; it must be from 0 to 10080"),
        ({"cooldown_minutes": limits.COOLDOWN_MAX}, None),
        (
            {"cooldown_minutes": limits.COOLDOWN_MAX + 1},
            "cooldown_minutes is 10081; it must be from 0 to 10080",
        ),
        ({"daily_limit": limits.DAILY_LIMIT_MIN}, None),
        ({"daily_limit": limits.DAILY_LIMIT_MIN - 1}, "daily_limit is 0; it must be from 1 to 20"),
        ({"daily_limit": limits.DAILY_LIMIT_MAX}, None),
        ({"daily_limit": limits.DAILY_LIMIT_MAX + 1}, "daily_limit is 21; it must be from 1 to 20"),
        ({"trigger": schedule(2e9, limits.INTERVAL_MIN)}, None),
        (
            {"trigger": schedule(2e9, limits.INTERVAL_MIN - 1)},
            "trigger.interval_minutes is 59; it must be from 60 to 525600",
        ),
        ({"trigger": schedule(2e9, limits.INTERVAL_MAX)}, None),
        (
            {"trigger": schedule(2e9, limits.INTERVAL_MAX + 1)},
            "trigger.interval_minutes is 525601; it must be from 60 to 525600",
        ),
    ],
)
async def test_field_limits_on_both_sides(
    dev: Dev, fields: dict[str, Any], reason: str | None
) -> None:
    conv_id, _ = await private(dev)
    response = await put(dev, conv_id, "k", **fields)
    if reason is None:
        assert response.status_code == 200, response.text
        assert {k: response.json()[k] for k in fields} == fields
    else:
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "subscription_invalid"
        assert reason in response.json()["reason"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {**BASE, "trigger": "workout.done"},
            "trigger must be one of workout.completed, sleep.ready",
        ),
        ({**BASE, "trigger": 5}, "trigger must be one of"),
        ({**BASE, "trigger": {"type": "weekly"}}, "trigger type 'weekly' is not one of"),
        ({**BASE, "trigger": {}}, "trigger needs a type"),
        ({**BASE, "trigger": {"type": "schedule"}}, "trigger.at is required"),
        (
            {**BASE, "trigger": {"type": "schedule", "at": "2030-01-01T08:00:00"}},
            "trigger.at: `at` needs a UTC offset",
        ),
        (
            {**BASE, "trigger": {"type": "schedule", "at": "next monday"}},
            "trigger.at must be an ISO-8601 date-time",
        ),
        (
            {**BASE, "trigger": {"type": "schedule", "at": "2030-01-01T08:00:00Z", "every": 5}},
            "unknown field trigger.every",
        ),
        (
            {**BASE, "trigger": {"type": "data.updated", "dataset": "health.mood"}},
            "is not in the capability catalogue",
        ),
        (
            {**BASE, "trigger": {"type": "sleep.ready", "dataset": "health.sleep"}},
            "unknown field trigger.dataset",
        ),
        (
            {**BASE, "quiet_hours": {"start": "24:00"}},
            "quiet_hours.start: `24:00` is not a time of day",
        ),
        ({**BASE, "quiet_hours": {"end": "7:00"}}, "quiet_hours.end: `7:00` is not a time of day"),
        ({**BASE, "quiet_hours": {"timezone": "Asia/Shangai"}}, "did you mean `Asia/Shanghai`?"),
        ({**BASE, "quiet_hours": {"timezone": "UTC+8"}}, "is not an IANA timezone"),
        ({**BASE, "quiet_hours": {"from": "22:00"}}, "unknown field quiet_hours.from"),
        ({**BASE, "quiet_hours": "22:00-08:00"}, "quiet_hours must be a JSON object"),
        (
            {**BASE, "cooldown_minutes": "30"},
            "cooldown_minutes must be an integer, not the string '30'",
        ),
        ({**BASE, "cooldown_minutes": 30.5}, "cooldown_minutes must be an integer"),
        ({**BASE, "daily_limit": True}, "daily_limit must be an integer, not the boolean true"),
        ({**BASE, "title": 7}, "title must be a string"),
        ({**BASE, "key": "k"}, "unknown field key"),
        ({**BASE, "activate": "manual"}, "unknown field activate"),
        ({"reason": "r", "trigger": "sleep.ready"}, "title is required"),
        ({"title": "t", "reason": "r"}, "trigger is required"),
        ([BASE], "the body must be a JSON object"),
    ],
)
async def test_invalid_bodies_are_subscription_invalid(dev: Dev, body: Any, reason: str) -> None:
    conv_id, _ = await private(dev)
    response = await dev.http.put(f"{SUBS}/k", headers=dev.auth(conv_id), json=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "subscription_invalid"
    assert reason in response.json()["reason"], response.json()["reason"]
    assert await listed(dev, conv_id) == []


async def test_malformed_json_is_subscription_invalid(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    response = await dev.http.put(
        f"{SUBS}/k",
        headers={**dev.auth(conv_id), "Content-Type": "application/json"},
        content=b'{"title": ',
    )
    assert response.status_code == 400
    assert response.json()["code"] == "subscription_invalid"


async def test_several_problems_are_reported_together(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    body = {
        "title": "",
        "reason": "r" * 501,
        "trigger": "x",
        "daily_limit": 0,
        "cooldown_minutes": -1,
    }
    response = await dev.http.put(f"{SUBS}/k", headers=dev.auth(conv_id), json=body)
    reason = response.json()["reason"]
    assert reason.startswith("title must not be empty; reason is 501 characters")
    assert reason.endswith("and 2 more problems")


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("a" * SUBSCRIPTION_KEY_CHARS, None),
        ("a" * (SUBSCRIPTION_KEY_CHARS + 1), "key is 65 characters; the limit is 64"),
        ("0", None),
        ("weekly-review.v2_b", None),
        ("-a", "key '-a' is invalid"),
        (".a", "key '.a' is invalid"),
        ("_a", "key '_a' is invalid"),
        ("Weekly", "key 'Weekly' is invalid"),
        ("a b", "key 'a b' is invalid"),
        ("a/b", "key 'a/b' is invalid"),
        ("复盘", "key '复盘' is invalid"),
        ("", "key must not be empty"),
    ],
)
async def test_key_rules(dev: Dev, key: str, reason: str | None) -> None:
    conv_id, _ = await private(dev)
    response = await put(dev, conv_id, key)
    if reason is None:
        assert response.status_code == 200, response.text
        assert response.json()["key"] == key
    else:
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "subscription_invalid"
        assert reason in response.json()["reason"]


async def test_group_conversations_cannot_subscribe(dev: Dev) -> None:
    group = await dev.conversation("group")
    response = await put(dev, group["id"], "k")
    assert response.status_code == 400
    assert response.json()["code"] == "proactive_private_only"
    assert "private" in response.json()["reason"]
    # Reading and closing in a group is harmless: there is nothing there.
    assert await listed(dev, group["id"]) == []
    assert await unsubscribe(dev, group["id"], "k") is False


async def test_auth_and_headers(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    response = await dev.http.put(f"{SUBS}/k", headers={"X-Conversation-Id": conv_id}, json=BASE)
    assert response.status_code == 401
    response = await dev.http.put(f"{SUBS}/k", headers=dev.auth(), json=BASE)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert "X-Conversation-Id" in response.json()["reason"]
    response = await dev.http.get(SUBS, headers=dev.auth("c_nope"))
    assert response.status_code == 404
    # Another identity (the dev token) does not see this conversation.
    response = await dev.http.get(SUBS, headers=dev.auth(conv_id, dev=True))
    assert response.status_code == 404
    response = await dev.http.post(
        "/dev/triggers",
        headers=dev.auth(),
        json={"identity": "demo", "member_id": "m", "type": "sleep.ready"},
    )
    assert response.status_code == 401


async def test_twenty_active_per_user_and_reenabling_counts(dev: Dev) -> None:
    conv_id, member = await private(dev)
    for i in range(limits.SUBSCRIPTIONS_ACTIVE_MAX):
        await subscribe(dev, conv_id, f"s{i:02d}")
    response = await put(dev, conv_id, "s20")
    assert response.status_code == 409
    assert response.json()["code"] == "subscriptions_limit"
    assert "the limit is 20" in response.json()["reason"]
    # Updating an active one is not a new one.
    assert (await subscribe(dev, conv_id, "s00", title="改名"))["title"] == "改名"
    assert await unsubscribe(dev, conv_id, "s00") is True
    await subscribe(dev, conv_id, "s20")
    # Re-enabling the closed one would make a 21st active.
    response = await put(dev, conv_id, "s00")
    assert response.status_code == 409
    assert await unsubscribe(dev, conv_id, "s01") is True
    assert (await subscribe(dev, conv_id, "s00"))["status"] == "active"
    statuses = {s["key"]: s["status"] for s in await listed(dev, conv_id)}
    assert sum(1 for s in statuses.values() if s == "active") == limits.SUBSCRIPTIONS_ACTIVE_MAX
    assert statuses["s01"] == "closed"
    # The limit is per user: the same member in another private conversation shares it …
    same = await dev.http.post(
        "/dev/conversations",
        headers=dev.admin,
        json={
            "identity": "demo",
            "kind": "private",
            "members": [{"name": "小王", "member_id": member}],
        },
    )
    assert (await put(dev, same.json()["id"], "other")).status_code == 409
    # … another user has their own twenty, and so has the dev identity.
    other_id, _ = await private(dev)
    assert (await put(dev, other_id, "s00")).status_code == 200
    mine = await dev.conversation(dev=True)
    assert (await put(dev, mine["id"], "s00", dev_identity=True)).status_code == 200


async def test_list_includes_closed_and_unsubscribe_says_found(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    await subscribe(dev, conv_id, "a")
    await subscribe(dev, conv_id, "b")
    assert await unsubscribe(dev, conv_id, "a") is True
    assert await unsubscribe(dev, conv_id, "a") is True  # still there, still closed
    assert await unsubscribe(dev, conv_id, "nope") is False
    assert await unsubscribe(dev, conv_id, "Not A Key") is False
    subscriptions = await listed(dev, conv_id)
    assert [(s["key"], s["status"]) for s in subscriptions] == [("a", "closed"), ("b", "active")]
    reenabled = await subscribe(dev, conv_id, "a")
    assert reenabled["status"] == "active"


async def test_unsubscribe_all_counts_the_active_ones(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    for key in ("a", "b", "c"):
        await subscribe(dev, conv_id, key)
    await unsubscribe(dev, conv_id, "b")
    other_id, _ = await private(dev)
    await subscribe(dev, other_id, "a")
    response = await dev.http.delete(SUBS, headers=dev.auth(conv_id))
    assert response.status_code == 200
    assert response.json() == {"closed": 2}
    again = await dev.http.delete(SUBS, headers=dev.auth(conv_id))
    assert again.json() == {"closed": 0}
    assert {s["status"] for s in await listed(dev, conv_id)} == {"closed"}
    assert [s["status"] for s in await listed(dev, other_id)] == ["active"]


async def test_unsubscribe_cancels_pending_runs_and_skips_their_commit(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "gone", quiet_hours=NO_QUIET)
    await subscribe(dev, conv_id, "kept", quiet_hours=NO_QUIET)
    runs = await fire(dev, member)
    assert [r["status"] for r in runs] == ["fired", "fired"]
    events = {e["payload"]["subscription_key"]: e for e in await proactive_events(dev)}
    assert all(e["acked_at"] is None for e in events.values())
    assert await unsubscribe(dev, conv_id, "gone") is True
    after = {e["payload"]["subscription_key"]: e for e in await proactive_events(dev)}
    assert after["gone"]["acked_at"] is not None  # not delivered again
    assert after["kept"]["acked_at"] is None
    cancelled = {r["subscription_key"]: r for r in await runs_of(dev)}
    assert cancelled["gone"]["status"] == "cancelled"
    assert cancelled["gone"]["gate"] == "subscription_closed"
    assert cancelled["kept"]["status"] == "fired"
    skipped = await commit(dev, conv_id, events["gone"]["id"], "跑得不错！")
    assert skipped == {"status": "skipped", "reason": "subscription closed", "message_ids": []}
    shown = await commit(dev, conv_id, events["kept"]["id"], "今天跑得不错！")
    assert shown["status"] == "committed"
    assert await buddy_said(dev, conv_id) == ["今天跑得不错！"]


async def test_a_cancelled_run_stays_cancelled_after_re_enabling(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "again", quiet_hours=NO_QUIET, cooldown_minutes=0)
    await fire(dev, member)
    (event,) = await proactive_events(dev)
    assert await unsubscribe(dev, conv_id, "again") is True
    await subscribe(dev, conv_id, "again", quiet_hours=NO_QUIET, cooldown_minutes=0)
    assert (await commit(dev, conv_id, event["id"], "hi"))["reason"] == "subscription closed"
    assert await buddy_said(dev, conv_id) == []


async def test_unsubscribe_all_cancels_pending_runs(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "a", quiet_hours=NO_QUIET)
    await fire(dev, member)
    await dev.http.delete(SUBS, headers=dev.auth(conv_id))
    (event,) = await proactive_events(dev)
    assert event["acked_at"] is not None
    assert (await commit(dev, conv_id, event["id"], "hi"))["reason"] == "subscription closed"


# ---------------------------------------------------------------- the scheduler


async def test_schedule_fires_at_then_on_a_fixed_grid_and_missed_runs_once(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    at = int(await clock(dev)) + 600
    trigger = schedule(at, 60)
    await subscribe(
        dev,
        conv_id,
        "hourly",
        trigger=trigger,
        quiet_hours=NO_QUIET,
        cooldown_minutes=0,
        daily_limit=20,
    )
    await advance(dev, 300)
    assert await proactive_events(dev) == []
    await advance(dev, 400)
    (event,) = await proactive_events(dev)
    assert event["conversation_id"] == conv_id
    payload = event["payload"]
    assert payload.keys() == {"subscription_key", "title", "reason", "trigger", "fired_at"}
    assert (payload["subscription_key"], payload["title"], payload["reason"]) == (
        "hourly",
        BASE["title"],
        BASE["reason"],
    )
    assert payload["trigger"] == {**trigger, "interval_minutes": 60}
    assert at + 100 <= payload["fired_at"] <= at + 110
    await advance(dev, 3600)  # at + 3700: the 2nd run
    assert len(await proactive_events(dev)) == 2
    await advance(dev, 5 * 3600)  # at + 21700: five runs missed, one fires
    assert len(await proactive_events(dev)) == 3
    runs = await runs_of(dev)
    assert [r["due_at"] for r in runs] == [at, at + 3600, at + 7200]
    assert [r["status"] for r in runs] == ["fired"] * 3
    assert all(r["trigger_type"] == "schedule" for r in runs)
    # Then the fixed grid again: the next run is at + 7 h, not 1 h after the catch-up.
    await advance(dev, 3400)  # at + 25100
    assert len(await proactive_events(dev)) == 3
    await advance(dev, 200)  # at + 25300
    assert len(await proactive_events(dev)) == 4
    assert (await runs_of(dev))[-1]["due_at"] == at + 7 * 3600


async def test_a_one_time_schedule_fires_once(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    at = int(await clock(dev)) + 60
    await subscribe(dev, conv_id, "once", trigger=schedule(at), quiet_hours=NO_QUIET)
    await advance(dev, 120)
    assert len(await proactive_events(dev)) == 1
    await advance(dev, 30 * 86400)
    assert len(await proactive_events(dev)) == 1
    (info,) = (
        await dev.http.get(
            "/dev/proactive/subscriptions", headers=dev.admin, params={"identity": "demo"}
        )
    ).json()["subscriptions"]
    assert info["status"] == "active"
    assert info["next_run_at"] is None


async def test_an_at_in_the_past_waits_for_the_next_interval(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    now = int(await clock(dev))
    await subscribe(dev, conv_id, "past-once", trigger=schedule(now - 3600), quiet_hours=NO_QUIET)
    await subscribe(
        dev, conv_id, "past-hourly", trigger=schedule(now - 5400, 60), quiet_hours=NO_QUIET
    )
    await advance(dev, 1700)  # now + 1700: the grid point now + 1800 is not yet due
    assert await proactive_events(dev) == []
    await advance(dev, 200)
    (event,) = await proactive_events(dev)
    assert event["payload"]["subscription_key"] == "past-hourly"
    assert (await runs_of(dev))[0]["due_at"] == now + 1800


async def test_updating_keeps_the_schedule_and_a_new_trigger_or_reenabling_reschedules(
    dev: Dev,
) -> None:
    conv_id, _ = await private(dev)
    at = int(await clock(dev)) + 60
    fields = {"trigger": schedule(at, 60), "quiet_hours": NO_QUIET, "cooldown_minutes": 0}

    async def next_run() -> float | None:
        response = await dev.http.get(
            "/dev/proactive/subscriptions", headers=dev.admin, params={"identity": "demo"}
        )
        value: float | None = response.json()["subscriptions"][0]["next_run_at"]
        return value

    await subscribe(dev, conv_id, "k", **fields)
    assert await next_run() == at
    await advance(dev, 120)
    assert await next_run() == at + 3600
    await subscribe(dev, conv_id, "k", **{**fields, "title": "新名字"})
    assert await next_run() == at + 3600
    await subscribe(dev, conv_id, "k", **{**fields, "trigger": schedule(at + 600, 60)})
    assert await next_run() == at + 600
    await unsubscribe(dev, conv_id, "k")
    assert await next_run() is None
    await advance(dev, 7200)  # closed: nothing fires
    assert len(await proactive_events(dev)) == 1
    await subscribe(dev, conv_id, "k", **{**fields, "trigger": schedule(at + 600, 60)})
    assert await next_run() == at + 600 + 2 * 3600  # the next grid point after now
    assert len(await proactive_events(dev)) == 1  # re-enabling does not fire missed runs


async def test_overlapping_ticks_fire_a_due_run_once(dev: Dev) -> None:
    from buddy.capabilities.proactive import platform as proactive

    conv_id, _ = await private(dev)
    now = await clock(dev)
    await subscribe(dev, conv_id, "soon", trigger=schedule(int(now) + 60, 60), quiet_hours=NO_QUIET)
    platform = dev.app.state.platform
    platform.clock.offset += 120  # moved without the listeners: only tick() notices
    await asyncio.gather(*(proactive.tick(platform) for _ in range(5)))
    assert len(await proactive_events(dev)) == 1


# ---------------------------------------------------------------- event triggers


async def test_event_triggers_match_type_dataset_member_and_identity(dev: Dev) -> None:
    conv_id, member = await private(dev)
    subscriptions = {
        "w": "workout.completed",
        "w-map": {"type": "workout.completed"},
        "s": "sleep.ready",
        "d-any": {"type": "data.updated"},
        "d-sleep": {"type": "data.updated", "dataset": "health.sleep"},
        "w-closed": "workout.completed",
        "sched": schedule(2e9),
    }
    for key, trigger in subscriptions.items():
        await subscribe(
            dev, conv_id, key, trigger=trigger, quiet_hours=NO_QUIET, cooldown_minutes=0
        )
    await unsubscribe(dev, conv_id, "w-closed")

    async def keys(type_: str, dataset: str | None = None, who: str = member) -> list[str]:
        return [r["subscription_key"] for r in await fire(dev, who, type_, dataset)]

    assert await keys("workout.completed") == ["w", "w-map"]
    assert await keys("sleep.ready") == ["s"]
    assert await keys("data.updated", "health.sleep") == ["d-any", "d-sleep"]
    assert await keys("data.updated", "health.steps") == ["d-any"]
    assert await keys("data.updated") == ["d-any"]
    _, stranger = await private(dev)
    assert await keys("workout.completed", who=stranger) == []
    events = await proactive_events(dev)
    assert len(events) == 7
    assert {e["conversation_id"] for e in events} == {conv_id}
    assert {e["payload"]["subscription_key"] for e in events} == {
        "w",
        "w-map",
        "s",
        "d-any",
        "d-sleep",
    }
    # The dev identity's subscriptions are its own.
    response = await dev.http.post(
        "/dev/triggers",
        headers=dev.admin,
        json={"identity": "demo-dev", "member_id": member, "type": "workout.completed"},
    )
    assert response.json() == {"runs": []}


def _trigger(**fields: Any) -> dict[str, Any]:
    return {"identity": "demo", "member_id": "m_1", "type": "sleep.ready", **fields}


@pytest.mark.parametrize(
    ("body", "status", "code", "reason"),
    [
        (_trigger(identity="nobody"), 404, "buddy_not_found", "no buddy for identity nobody"),
        (_trigger(type="schedule"), 400, "invalid_request", "type"),
        (
            _trigger(dataset="health.sleep"),
            400,
            "invalid_request",
            "dataset is only for data.updated, not sleep.ready",
        ),
        (
            _trigger(type="data.updated", dataset="health.slep"),
            400,
            "invalid_request",
            "`health.slep` is not in the capability catalogue (did you mean `health.sleep`?)",
        ),
        (_trigger(extra=1), 400, "invalid_request", "extra"),
        ({"identity": "demo", "type": "sleep.ready"}, 400, "invalid_request", "member_id"),
        (_trigger(type="data.updated", dataset="health.sleep"), 200, None, None),
    ],
)
async def test_dev_trigger_errors(
    dev: Dev, body: dict[str, Any], status: int, code: str | None, reason: str | None
) -> None:
    response = await dev.http.post("/dev/triggers", headers=dev.admin, json=body)
    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["code"] == code
        assert reason is not None
        assert reason in response.json()["reason"]


# ---------------------------------------------------------------- gates at firing


async def test_quiet_hours_across_midnight(dev: Dev) -> None:
    conv_id, member = await private(dev)
    quiet = {"start": "22:00", "end": "07:00", "timezone": SH}
    await subscribe(dev, conv_id, "night", quiet_hours=quiet, cooldown_minutes=0, daily_limit=20)
    expected = [
        ((21, 59, 30), "fired"),
        ((22, 0, 30), "skipped"),
        ((23, 59, 30), "skipped"),
        ((0, 0, 30), "skipped"),
        ((3, 0, 0), "skipped"),
        ((6, 59, 30), "skipped"),
        ((7, 0, 0), "fired"),
        ((12, 0, 0), "fired"),
    ]
    for (hour, minute, second), status in expected:
        await goto_local(dev, SH, hour, minute, second)
        run = await fire_one(dev, member)
        assert run["status"] == status, (hour, minute, run)
        if status == "skipped":
            assert run["gate"] == "quiet_hours"
            assert (
                run["reason"]
                == f"quiet hours: it is {hour:02d}:{minute:02d} in {SH}, within 22:00–07:00"
            )
            assert run["event_id"] is None
    assert len(await proactive_events(dev)) == 3


async def test_quiet_hours_within_one_day_and_none_when_start_equals_end(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(
        dev,
        conv_id,
        "a-day",
        quiet_hours={"start": "09:00", "end": "17:00", "timezone": SH},
        cooldown_minutes=0,
    )
    await subscribe(dev, conv_id, "b-none", quiet_hours=NO_QUIET, cooldown_minutes=0)
    for (hour, minute), a_status in [
        ((8, 59), "fired"),
        ((9, 0), "skipped"),
        ((16, 59), "skipped"),
        ((17, 0), "fired"),
    ]:
        await goto_local(dev, SH, hour, minute, 10)
        runs = await fire(dev, member)
        assert [r["status"] for r in runs] == [a_status, "fired"], (hour, minute)


async def test_quiet_hours_use_the_subscriptions_timezone(dev: Dev) -> None:
    conv_id, member = await private(dev)
    for key, tz in (("la", LA), ("sh", SH)):
        await subscribe(
            dev,
            conv_id,
            key,
            quiet_hours={"start": "22:00", "end": "08:00", "timezone": tz},
            cooldown_minutes=0,
        )
    # 03:00 in Shanghai is 11:00 or 12:00 (DST) of the day before in Los Angeles.
    await goto_local(dev, SH, 3, 0)
    by_key = {r["subscription_key"]: r for r in await fire(dev, member)}
    assert by_key["sh"]["status"] == "skipped"
    assert f"in {SH}" in by_key["sh"]["reason"]
    assert by_key["la"]["status"] == "fired"
    # 14:00 in Shanghai is 22:00 or 23:00 in Los Angeles: the same instant, the other way round.
    await goto_local(dev, SH, 14, 0)
    by_key = {r["subscription_key"]: r for r in await fire(dev, member)}
    assert by_key["sh"]["status"] == "fired"
    assert by_key["la"]["status"] == "skipped"
    assert f"in {LA}" in by_key["la"]["reason"]


async def test_cooldown_counts_from_the_last_shown_message(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET, cooldown_minutes=30, daily_limit=20)
    first = await fire_one(dev, member)
    assert (await commit(dev, conv_id, first["event_id"], "第一条"))["status"] == "committed"
    await advance(dev, 10 * 60)
    blocked = await fire_one(dev, member)
    assert blocked["status"] == "skipped"
    assert blocked["gate"] == "cooldown"
    assert "was shown 10 minutes ago; the cooldown is 30 minutes" in blocked["reason"]
    await advance(dev, 21 * 60)
    third = await fire_one(dev, member)
    assert third["status"] == "fired"
    # Fired but not yet shown does not start the cooldown …
    fourth = await fire_one(dev, member)
    assert fourth["status"] == "fired"
    # … showing does, also at commit time.
    assert (await commit(dev, conv_id, third["event_id"], "第二条"))["status"] == "committed"
    late = await commit(dev, conv_id, fourth["event_id"], "第三条")
    assert late["status"] == "skipped"
    assert late["reason"].startswith("cooldown: ")
    assert await buddy_said(dev, conv_id) == ["第一条", "第二条"]


async def test_zero_cooldown_allows_back_to_back_messages(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET, cooldown_minutes=0, daily_limit=3)
    for text in ("一", "二", "三"):
        run = await fire_one(dev, member)
        assert (await commit(dev, conv_id, run["event_id"], text))["status"] == "committed"
    assert (await fire_one(dev, member))["gate"] == "daily_limit"


async def test_daily_limit_counts_shown_messages_in_the_local_day(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(
        dev,
        conv_id,
        "k",
        quiet_hours={"start": "00:00", "end": "00:00", "timezone": LA},
        cooldown_minutes=0,
        daily_limit=2,
    )
    afternoon = await goto_local(dev, LA, 15, 0)
    for text in ("一", "二"):
        run = await fire_one(dev, member)
        assert (await commit(dev, conv_id, run["event_id"], text))["status"] == "committed"
    blocked = await fire_one(dev, member)
    assert blocked["gate"] == "daily_limit"
    assert blocked["reason"] == (
        f"daily limit: 2 proactive messages of k were shown on {afternoon.date()} in {LA}; the limit is 2"
    )
    # 17:00 in Los Angeles is already the next day in UTC: still the same local day.
    await advance(dev, 2 * 3600)
    assert (await fire_one(dev, member))["gate"] == "daily_limit"
    await goto_local(dev, LA, 23, 59, 0)
    assert (await fire_one(dev, member))["gate"] == "daily_limit"
    # Local midnight resets it.
    await goto_local(dev, LA, 0, 0, 30)
    assert (await fire_one(dev, member))["status"] == "fired"


# ---------------------------------------------------------------- gates at commit time


async def test_commit_gate_skips_a_reply_that_arrives_in_quiet_hours(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(
        dev, conv_id, "k", quiet_hours={"start": "22:00", "end": "08:00", "timezone": SH}
    )
    await goto_local(dev, SH, 21, 50, 0)
    run = await fire_one(dev, member)
    assert run["status"] == "fired"
    await advance(dev, 20 * 60)  # the model took its time: 22:10 now
    skipped = await commit(dev, conv_id, run["event_id"], "晚上好")
    assert skipped == {
        "status": "skipped",
        "reason": f"quiet hours: it is 22:10 in {SH}, within 22:00–08:00",
        "message_ids": [],
    }
    assert await buddy_said(dev, conv_id) == []
    turns = (
        await dev.http.get("/internal/v1/conversation/turns", headers=dev.auth(conv_id))
    ).json()
    assert turns[0]["proactive"] is True
    assert turns[0]["reply"] is None
    # A skipped reply was not shown, so it starts no cooldown: the morning run passes.
    await goto_local(dev, SH, 8, 0, 30)
    morning = await fire_one(dev, member)
    assert morning["status"] == "fired"
    assert (await commit(dev, conv_id, morning["event_id"], "早上好"))["status"] == "committed"
    assert await buddy_said(dev, conv_id) == ["早上好"]


async def test_a_reply_within_the_limits_is_committed_and_counted(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET, cooldown_minutes=0, daily_limit=1)
    first, second = await fire_one(dev, member), await fire_one(dev, member)
    assert (first["status"], second["status"]) == ("fired", "fired")  # nothing shown yet
    shown = await commit(dev, conv_id, first["event_id"], "今天练得怎么样？")
    assert shown["status"] == "committed"
    assert len(shown["message_ids"]) == 1
    late = await commit(dev, conv_id, second["event_id"], "再问一次")
    assert late["status"] == "skipped"
    assert late["reason"].startswith("daily limit: 1 proactive messages of k were shown")
    assert (await fire_one(dev, member))["gate"] == "daily_limit"
    assert await buddy_said(dev, conv_id) == ["今天练得怎么样？"]
    # Committing the same event again is a duplicate and counts nothing more.
    again = await commit(dev, conv_id, first["event_id"], "今天练得怎么样？")
    assert again["status"] == "duplicate"


async def test_a_model_skip_shows_nothing_and_does_not_count(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET, daily_limit=1)
    run = await fire_one(dev, member)
    skipped = await commit(dev, conv_id, run["event_id"], None)
    assert skipped == {"status": "committed", "reason": "", "message_ids": []}
    assert await buddy_said(dev, conv_id) == []
    # Neither cooldown (120 min) nor the daily limit (1) saw a message.
    again = await fire_one(dev, member)
    assert again["status"] == "fired"
    assert (await commit(dev, conv_id, again["event_id"], "嗨"))["status"] == "committed"
    assert (await fire_one(dev, member))["gate"] == "cooldown"


async def test_gates_count_per_subscription(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "a", quiet_hours=NO_QUIET, daily_limit=1)
    await subscribe(dev, conv_id, "b", quiet_hours=NO_QUIET, daily_limit=1)
    run_a, _ = await fire(dev, member)
    await commit(dev, conv_id, run_a["event_id"], "a")
    by_key = {r["subscription_key"]: r["status"] for r in await fire(dev, member)}
    assert by_key == {"a": "skipped", "b": "fired"}


# ---------------------------------------------------------------- dev views, lifecycle


async def test_runs_are_listed_with_reasons(dev: Dev) -> None:
    conv_id, member = await private(dev)
    other_id, other_member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET, daily_limit=1)
    await subscribe(dev, other_id, "k", quiet_hours=NO_QUIET)
    run = await fire_one(dev, member)
    await commit(dev, conv_id, run["event_id"], "嗨")
    await fire_one(dev, member)
    await fire_one(dev, other_member)
    runs = await runs_of(dev)
    assert [(r["conversation_id"], r["status"], r["gate"]) for r in runs] == [
        (conv_id, "fired", None),
        (conv_id, "skipped", "cooldown"),
        (other_id, "fired", None),
    ]
    assert runs[0]["event_id"] == run["event_id"]
    assert runs[0]["trigger_type"] == "workout.completed"
    assert runs[0]["due_at"] is None
    only = await dev.http.get(
        "/dev/proactive/runs",
        headers=dev.admin,
        params={"identity": "demo", "conversation_id": other_id},
    )
    assert [r["conversation_id"] for r in only.json()["runs"]] == [other_id]
    assert await runs_of(dev, "demo-dev") == []


async def test_deleting_the_conversation_deletes_its_subscriptions_and_runs(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET)
    run = await fire_one(dev, member)
    await commit(dev, conv_id, run["event_id"], "嗨")
    assert (
        await dev.http.delete(f"/dev/conversations/{conv_id}", headers=dev.admin)
    ).status_code == 204
    response = await dev.http.get(
        "/dev/proactive/subscriptions", headers=dev.admin, params={"identity": "demo"}
    )
    assert response.json() == {"subscriptions": []}
    assert await runs_of(dev) == []
    assert await fire(dev, member) == []


async def test_cooldown_reason_right_after_a_message(dev: Dev) -> None:
    conv_id, member = await private(dev)
    await subscribe(dev, conv_id, "k", quiet_hours=NO_QUIET)
    run = await fire_one(dev, member)
    await commit(dev, conv_id, run["event_id"], "嗨")
    blocked = await fire_one(dev, member)
    assert blocked["reason"] == (
        "cooldown: the last proactive message of k was shown less than a minute ago;"
        f" the cooldown is {limits.COOLDOWN_DEFAULT} minutes"
    )


async def test_openapi_documents_the_proactive_endpoints(dev: Dev) -> None:
    spec = (await dev.http.get("/openapi.json")).json()
    path = spec["paths"]["/internal/v1/proactive/subscriptions/{key}"]
    body = path["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"].endswith("/SubscriptionRequest")
    assert path["put"]["responses"]["200"]["content"]["application/json"]["schema"][
        "$ref"
    ].endswith("/SubscriptionOut")
    key = next(p for p in path["put"]["parameters"] if p["name"] == "key")
    assert key["schema"]["pattern"] == "^[a-z0-9][a-z0-9._-]{0,63}$"
    assert "delete" in path
    assert set(spec["paths"]["/internal/v1/proactive/subscriptions"]) == {"get", "delete"}
    assert "post" in spec["paths"]["/dev/triggers"]
    assert "get" in spec["paths"]["/dev/proactive/runs"]


# ---------------------------------------------------------------- over real sockets


async def test_live_subscribe_fire_deliver_and_commit(live: Dev) -> None:
    conv_id, member = await private(live)
    client = HttpPlatformClient(live.url, live.token, backoff=Backoff(0.01, 0.05, random.Random(1)))
    service = ProactiveService(client, conv_id)
    try:
        at = int(await clock(live)) + 3600
        created = await service.subscribe(
            "weekly-review",
            {**BASE, "trigger": schedule(at, 7 * 24 * 60), "quiet_hours": NO_QUIET},
        )
        assert created["status"] == "active"
        with pytest.raises(PlatformError) as invalid:
            await service.subscribe("Bad Key", BASE)
        assert invalid.value.status == 400
        assert "key 'Bad Key' is invalid" in invalid.value.reason
        stream = client.events()
        await advance(live, 3600 + 5)

        async def first() -> Event:
            async for event in stream:
                return event
            raise AssertionError("the stream ended")

        event = await asyncio.wait_for(first(), 10)
        assert event.type == "proactive"
        assert event.conversation_id == conv_id
        assert event.payload["subscription_key"] == "weekly-review"
        committed = await commit(live, conv_id, event.id, "这周练了三次，不错！")
        assert committed["status"] == "committed"
        await client.ack(event.id)
        await stream.aclose()  # type: ignore[attr-defined]
        # An event trigger with no matching subscription, then list and close over the wire.
        assert await fire(live, member, "sleep.ready") == []
        assert [s["key"] for s in await service.list()] == ["weekly-review"]
        assert await service.unsubscribe("weekly-review") is True
        assert await service.unsubscribe("weekly-review") is True
        assert await service.unsubscribe_all() == 0
        assert await buddy_said(live, conv_id) == ["这周练了三次，不错！"]
    finally:
        await client.close()


async def test_text_that_is_not_utf8_is_refused(dev: Dev) -> None:
    conv_id, _ = await private(dev)
    raw = b'{"title": "\\ud800", "reason": "r", "trigger": "sleep.ready"}'
    response = await dev.http.put(
        f"{SUBS}/k", headers={**dev.auth(conv_id), "Content-Type": "application/json"}, content=raw
    )
    assert response.status_code == 400
    assert response.json()["code"] == "subscription_invalid"
    assert response.json()["reason"].startswith("title is not valid UTF-8")
    raw = b'{"identity": "demo", "member_id": "\\udc00", "type": "sleep.ready"}'
    response = await dev.http.post(
        "/dev/triggers", headers={**dev.admin, "Content-Type": "application/json"}, content=raw
    )
    assert response.status_code == 400
