"""User-data access: declaration and grant versions, queries, consent cards, one-time results."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from buddy.capabilities.data import simulate
from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import (
    CALENDAR_DAYS_DEFAULT,
    CALENDAR_DAYS_MAX,
    CALENDAR_DAYS_MIN,
    ONE_TIME_RESULT_SECONDS,
    QUERY_DATASETS_MAX,
    QUERY_RESPONSE_BYTES,
    REQUEST_REASON_CHARS,
)
from buddy.capabilities.data.wire import (
    DECLARATION_REQUIREMENTS_MAX,
    PURPOSE_CHARS,
    Declaration,
    grant_version,
)
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio

DECLARATION = "/internal/v1/data-access/declaration"
QUERY = "/internal/v1/data-access/query"
REQUESTS = "/internal/v1/data-access/requests"
RESULTS = "/internal/v1/data-access/results"
IDS = list(DATA_ACCESS_CAPABILITIES)
SLEEP = "health.sleep"


# ---------------------------------------------------------------- helpers


async def declare(dev: Dev, requirements: list[dict[str, Any]], *, dev_token: bool = False) -> Any:
    response = await dev.http.put(
        DECLARATION, headers=dev.auth(dev=dev_token), json={"requirements": requirements}
    )
    assert response.status_code == 200, response.text
    return response.json()


def req(dataset: str, purpose: str = "根据你最近的睡眠调整作息建议") -> dict[str, Any]:
    return {"id": dataset, "purpose": purpose}


async def chat(
    dev: Dev, kind: str = "private", members: list[str] | None = None, *, dev_token: bool = False
) -> dict[str, Any]:
    """A conversation whose members have the given ids (so one person can be in several)."""
    ids = members or (["m_wang"] if kind == "private" else ["m_wang", "m_li"])
    response = await dev.http.post(
        "/dev/conversations",
        headers=dev.admin,
        json={
            "identity": f"{dev.buddy_id}-dev" if dev_token else dev.buddy_id,
            "kind": kind,
            "members": [{"name": m.removeprefix("m_"), "member_id": m} for m in ids],
        },
    )
    assert response.status_code == 201, response.text
    info: dict[str, Any] = response.json()
    return info


async def grant(
    dev: Dev, member_id: str, dataset: str, granted: bool = True, *, identity: str = "demo"
) -> Any:
    response = await dev.http.put(
        "/dev/grants",
        headers=dev.admin,
        json={"identity": identity, "member_id": member_id, "dataset": dataset, "granted": granted},
    )
    assert response.status_code == 200, response.text
    return response.json()


async def query(
    dev: Dev,
    conv: dict[str, Any],
    datasets: list[str],
    member_id: str | None = None,
    *,
    dev_token: bool = False,
) -> Any:
    body: dict[str, Any] = {"datasets": datasets}
    if member_id is not None:
        body["member_id"] = member_id
    return await dev.http.post(QUERY, headers=dev.auth(conv["id"], dev=dev_token), json=body)


async def statuses(dev: Dev, conv: dict[str, Any], datasets: list[str], **kw: Any) -> list[str]:
    response = await query(dev, conv, datasets, **kw)
    assert response.status_code == 200, response.text
    return [r["status"] for r in response.json()["results"]]


async def ask(dev: Dev, conv: dict[str, Any], **body: Any) -> Any:
    body.setdefault("idempotency_key", "k1")
    return await dev.http.post(REQUESTS, headers=dev.auth(conv["id"]), json=body)


async def answer(dev: Dev, request_id: str, granted: bool) -> Any:
    return await dev.http.post(
        f"/dev/data-access/requests/{request_id}/answer",
        headers=dev.admin,
        json={"granted": granted},
    )


async def events(dev: Dev, identity: str = "demo") -> list[dict[str, Any]]:
    response = await dev.http.get("/dev/events", headers=dev.admin, params={"identity": identity})
    found: list[dict[str, Any]] = response.json()
    return found


async def advance(dev: Dev, seconds: float) -> None:
    response = await dev.http.post(
        "/dev/clock", headers=dev.admin, json={"advance_seconds": seconds}
    )
    assert response.status_code == 200


def rejected(response: Any, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["reason"]
    reason: str = body["reason"]
    return reason


# ---------------------------------------------------------------- declaration


async def test_declaration_answers_versions_and_is_read_back(dev: Dev) -> None:
    stored = await declare(dev, [req(SLEEP), req("health.steps", "看看你每天走了多少")])
    expected = hashlib.sha256(f"{SLEEP}|根据你最近的睡眠调整作息建议|1".encode()).hexdigest()[:16]
    assert stored["requirements"][0] == {
        "id": SLEEP,
        "purpose": "根据你最近的睡眠调整作息建议",
        "version": expected,
    }
    assert stored["requirements"][1]["version"] == grant_version(
        "health.steps", "看看你每天走了多少", 1
    )
    got = await dev.http.get(DECLARATION, headers=dev.auth())
    assert got.json() == stored
    cleared = await declare(dev, [])
    assert cleared == {"requirements": []}
    assert (await dev.http.get(DECLARATION, headers=dev.auth())).json() == {"requirements": []}


async def test_declaration_accepts_the_catalogue_expansion(dev: Dev) -> None:
    full = {
        "id": SLEEP,
        "purpose": "作息",
        "title": "睡眠",
        "source": "healthkit",
        "schema_version": 2,
    }
    stored = await declare(dev, [full])
    assert stored["requirements"][0]["version"] == grant_version(SLEEP, "作息", 2)


async def test_every_catalogue_dataset_can_be_declared(dev: Dev) -> None:
    stored = await declare(dev, [req(d) for d in IDS])
    assert [r["id"] for r in stored["requirements"]] == IDS


@pytest.mark.parametrize(
    ("purpose", "ok"),
    [
        ("用" * PURPOSE_CHARS, True),
        ("用" * (PURPOSE_CHARS + 1), False),
        ("x", True),
        ("", False),
    ],
)
async def test_purpose_length(dev: Dev, purpose: str, ok: bool) -> None:
    response = await dev.http.put(
        DECLARATION, headers=dev.auth(), json={"requirements": [req(SLEEP, purpose)]}
    )
    if ok:
        assert response.status_code == 200, response.text
    else:
        assert "purpose" in rejected(response, 400, "declaration_invalid")


async def test_count_limit_on_both_sides(dev: Dev) -> None:
    # The catalogue has 6 ids, so 32 and 33 requirements must repeat ids: at 32 the count
    # passes and the duplicate is what is refused; at 33 the count itself is refused.
    at_limit = [req(IDS[i % len(IDS)]) for i in range(DECLARATION_REQUIREMENTS_MAX)]
    over = [req(IDS[i % len(IDS)]) for i in range(DECLARATION_REQUIREMENTS_MAX + 1)]
    reason = rejected(
        await dev.http.put(DECLARATION, headers=dev.auth(), json={"requirements": at_limit}),
        400,
        "declaration_invalid",
    )
    assert "twice" in reason
    reason = rejected(
        await dev.http.put(DECLARATION, headers=dev.auth(), json={"requirements": over}),
        400,
        "declaration_invalid",
    )
    assert "at most 32" in reason
    # The model's own bound, without the duplicate check: 32 validate, 33 do not.
    assert len(Declaration.model_validate({"requirements": at_limit}).requirements) == 32
    with pytest.raises(ValueError, match="at most 32"):
        Declaration.model_validate({"requirements": over})


@pytest.mark.parametrize(
    ("body", "mentions"),
    [
        ({"requirements": [req(SLEEP), req(SLEEP, "别的用途")]}, "twice"),
        ({"requirements": [req("health.blood")]}, "health.blood"),
        ({"requirements": [{**req(SLEEP), "color": "red"}]}, "color"),
        ({"requirements": [], "extra": 1}, "extra"),
        ({"requirements": [{"id": SLEEP}]}, "purpose"),
        ({"requirements": [{**req(SLEEP), "source": "gps"}]}, "healthkit"),
        ({"requirements": [{**req(SLEEP), "schema_version": 0}]}, "schema_version"),
        ({"requirements": [{**req(SLEEP), "title": ""}]}, "title"),
        ({}, "requirements"),
        ({"requirements": "health.sleep"}, "requirements"),
    ],
)
async def test_invalid_declarations(dev: Dev, body: dict[str, Any], mentions: str) -> None:
    response = await dev.http.put(DECLARATION, headers=dev.auth(), json=body)
    assert mentions in rejected(response, 400, "declaration_invalid")


async def test_invalid_declaration_keeps_the_old_one(dev: Dev) -> None:
    stored = await declare(dev, [req(SLEEP)])
    await dev.http.put(DECLARATION, headers=dev.auth(), json={"requirements": [req("x.y")]})
    assert (await dev.http.get(DECLARATION, headers=dev.auth())).json() == stored


async def test_declaration_needs_a_token(dev: Dev) -> None:
    response = await dev.http.put(DECLARATION, json={"requirements": []})
    rejected(response, 401, "unauthorized")


# ---------------------------------------------------------------- grants and versions


async def test_changed_purpose_needs_consent_again(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP, "作息建议")])
    assert await statuses(dev, conv, [SLEEP]) == ["notGranted"]
    state = await grant(dev, "m_wang", SLEEP)
    assert state["granted"] is True
    assert state["granted_version"] == grant_version(SLEEP, "作息建议", 1)
    assert await statuses(dev, conv, [SLEEP]) == ["available"]

    await declare(dev, [req(SLEEP, "作息建议")])  # the same purpose keeps the grant
    assert await statuses(dev, conv, [SLEEP]) == ["available"]

    await declare(dev, [req(SLEEP, "换了个用途")])
    assert await statuses(dev, conv, [SLEEP]) == ["notGranted"]
    (listed,) = [
        g
        for g in (
            await dev.http.get(
                "/dev/grants", headers=dev.admin, params={"identity": "demo", "member_id": "m_wang"}
            )
        ).json()
        if g["dataset"] == SLEEP
    ]
    assert listed["granted"] is False
    assert listed["granted_version"] == grant_version(SLEEP, "作息建议", 1)
    assert listed["version"] == grant_version(SLEEP, "换了个用途", 1)
    assert listed["purpose"] == "换了个用途"

    await grant(dev, "m_wang", SLEEP)
    assert await statuses(dev, conv, [SLEEP]) == ["available"]


async def test_changed_schema_version_needs_consent_again(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP)])
    await grant(dev, "m_wang", SLEEP)
    await declare(dev, [{**req(SLEEP), "schema_version": 2}])
    assert await statuses(dev, conv, [SLEEP]) == ["notGranted"]


async def test_revoke_and_undeclare(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP)])
    await grant(dev, "m_wang", SLEEP)
    state = await grant(dev, "m_wang", SLEEP, granted=False)
    assert state["granted"] is False
    assert state["granted_version"] is None
    assert await statuses(dev, conv, [SLEEP]) == ["notGranted"]
    await grant(dev, "m_wang", SLEEP)
    await declare(dev, [])
    assert await statuses(dev, conv, [SLEEP]) == ["notDeclared"]
    # Revoking works for an undeclared dataset too.
    assert (await grant(dev, "m_wang", SLEEP, granted=False))["declared"] is False


async def test_dev_identity_has_its_own_declaration_and_grants(dev: Dev) -> None:
    prod = await chat(dev, members=["m_same"])
    mine = await chat(dev, members=["m_same"], dev_token=True)
    await declare(dev, [req(SLEEP)])
    assert await statuses(dev, mine, [SLEEP], dev_token=True) == ["notDeclared"]
    await declare(dev, [req(SLEEP)], dev_token=True)
    await grant(dev, "m_same", SLEEP)
    assert await statuses(dev, prod, [SLEEP]) == ["available"]
    assert await statuses(dev, mine, [SLEEP], dev_token=True) == ["notGranted"]
    await grant(dev, "m_same", SLEEP, identity="demo-dev")
    await grant(dev, "m_same", SLEEP, granted=False)
    assert await statuses(dev, prod, [SLEEP]) == ["notGranted"]
    assert await statuses(dev, mine, [SLEEP], dev_token=True) == ["available"]
    # A production token cannot query the dev identity's conversation, and vice versa.
    rejected(await query(dev, mine, [SLEEP]), 404, "conversation_not_found")
    rejected(await query(dev, prod, [SLEEP], dev_token=True), 404, "conversation_not_found")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"identity": "nobody", "member_id": "m_wang"}, 404, "buddy_not_found"),
        ({"identity": "demo", "member_id": "m_ghost"}, 404, "member_not_found"),
        (
            {"identity": "demo", "member_id": "m_wang", "dataset": "health.x"},
            400,
            "dataset_unknown",
        ),
        (
            {"identity": "demo", "member_id": "m_wang", "dataset": "health.steps"},
            400,
            "dataset_not_declared",
        ),
        ({"identity": "demo", "member_id": "m_wang", "extra": 1}, 400, "invalid_request"),
    ],
)
async def test_grant_errors(dev: Dev, body: dict[str, Any], status: int, code: str) -> None:
    await chat(dev)
    await declare(dev, [req(SLEEP)])
    full = {"dataset": SLEEP, "granted": True, **body}
    rejected(await dev.http.put("/dev/grants", headers=dev.admin, json=full), status, code)


async def test_dev_endpoints_need_the_admin_token(dev: Dev) -> None:
    await chat(dev)
    body = {"identity": "demo", "member_id": "m_wang", "dataset": SLEEP, "granted": True}
    rejected(await dev.http.put("/dev/grants", headers=dev.auth(), json=body), 401, "unauthorized")
    rejected(
        await dev.http.put(
            "/dev/data",
            headers=dev.auth(),
            json={"member_id": "m_wang", "dataset": SLEEP, "items": []},
        ),
        401,
        "unauthorized",
    )


# ---------------------------------------------------------------- query


async def test_every_status_in_one_group_query(dev: Dev) -> None:
    conv = await chat(dev, "group")
    await declare(
        dev, [req(d) for d in (SLEEP, "health.steps", "health.weight", "health.heart_rate")]
    )
    for dataset in (SLEEP, "health.steps", "health.weight"):
        await grant(dev, "m_wang", dataset)
    setting = {
        "conversation_id": conv["id"],
        "member_id": "m_wang",
        "dataset": "health.steps",
        "disabled": True,
    }
    assert (
        await dev.http.put("/dev/group-settings", headers=dev.admin, json=setting)
    ).json() == setting
    put = await dev.http.put(
        "/dev/data",
        headers=dev.admin,
        json={"member_id": "m_wang", "dataset": "health.weight", "items": None},
    )
    assert put.json()["items"] is None
    asked = [SLEEP, "health.steps", "health.weight", "health.mindfulness", "health.heart_rate"]
    response = await query(dev, conv, asked, "m_wang")
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["dataset"], r["status"]) for r in results] == [
        (SLEEP, "available"),
        ("health.steps", "disabledInGroup"),
        ("health.weight", "unavailable"),
        ("health.mindfulness", "notDeclared"),
        ("health.heart_rate", "notGranted"),
    ]
    assert results[0]["data"]["items"]
    assert all("data" not in r for r in results[1:])
    # The other member turned nothing off; the setting is per member and per group.
    await grant(dev, "m_li", "health.steps")
    assert await statuses(dev, conv, ["health.steps"], member_id="m_li") == ["available"]
    private = await chat(dev)
    assert await statuses(dev, private, ["health.steps"]) == ["available"]
    await dev.http.put(
        "/dev/group-settings", headers=dev.admin, json={**setting, "disabled": False}
    )
    assert await statuses(dev, conv, ["health.steps"], member_id="m_wang") == ["available"]


async def test_disabled_in_group_wins_over_not_granted(dev: Dev) -> None:
    conv = await chat(dev, "group")
    await declare(dev, [req(SLEEP)])
    setting = {
        "conversation_id": conv["id"],
        "member_id": "m_li",
        "dataset": SLEEP,
        "disabled": True,
    }
    await dev.http.put("/dev/group-settings", headers=dev.admin, json=setting)
    assert await statuses(dev, conv, [SLEEP], member_id="m_li") == ["disabledInGroup"]


async def test_overridden_data_is_answered_as_given(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP)])
    await grant(dev, "m_wang", SLEEP)
    items = [{"date": "2026-03-01", "asleep_minutes": 400}, {"date": "2026-03-02"}]
    put = await dev.http.put(
        "/dev/data",
        headers=dev.admin,
        json={"member_id": "m_wang", "dataset": SLEEP, "items": items},
    )
    assert put.json() == {
        "member_id": "m_wang",
        "dataset": SLEEP,
        "source": "override",
        "items": items,
    }
    response = await query(dev, conv, [SLEEP])
    assert response.json() == {
        "results": [{"dataset": SLEEP, "status": "available", "data": {"items": items}}]
    }
    empty = await dev.http.put(
        "/dev/data", headers=dev.admin, json={"member_id": "m_wang", "dataset": SLEEP, "items": []}
    )
    assert empty.status_code == 200
    assert await statuses(dev, conv, [SLEEP]) == ["available"]
    reset = await dev.http.delete(
        "/dev/data", headers=dev.admin, params={"member_id": "m_wang", "dataset": SLEEP}
    )
    assert reset.json()["source"] == "simulated"
    assert reset.json()["items"]
    response = await query(dev, conv, [SLEEP])
    assert response.json()["results"][0]["data"]["items"] == reset.json()["items"]


@pytest.mark.parametrize(
    ("count", "status"),
    [(1, 200), (QUERY_DATASETS_MAX, 200), (0, 400), (QUERY_DATASETS_MAX + 1, 400)],
)
async def test_query_dataset_count(dev: Dev, count: int, status: int) -> None:
    conv = await chat(dev)
    await declare(dev, [req(d) for d in IDS])
    # 8 > the catalogue's 6 ids: an id listed twice is answered twice, in order.
    datasets = [IDS[i % len(IDS)] for i in range(count)]
    response = await query(dev, conv, datasets)
    assert response.status_code == status, response.text
    if status == 200:
        assert [r["dataset"] for r in response.json()["results"]] == datasets
    else:
        assert response.json()["reason"]


async def test_query_unknown_dataset(dev: Dev) -> None:
    conv = await chat(dev)
    reason = rejected(await query(dev, conv, [SLEEP, "health.blood"]), 400, "dataset_unknown")
    assert "health.blood" in reason


@pytest.mark.parametrize(
    ("kind", "member_id", "status", "code"),
    [
        ("group", None, 400, "member_required"),
        ("group", "m_zhao", 400, "member_not_in_conversation"),
        ("group", "m_li", 200, None),
        ("private", None, 200, None),
        ("private", "m_wang", 200, None),
        ("private", "m_li", 400, "member_not_in_conversation"),
    ],
)
async def test_member_id_rules(
    dev: Dev, kind: str, member_id: str | None, status: int, code: str | None
) -> None:
    await chat(dev, "private", ["m_zhao"])  # exists, but not in the conversation below
    conv = await chat(dev, kind)
    await declare(dev, [req(SLEEP)])
    response = await query(dev, conv, [SLEEP], member_id)
    if code is None:
        assert response.status_code == status
        assert response.json()["results"][0]["status"] == "notGranted"
    else:
        rejected(response, status, code)


def sized_items(total: int) -> list[dict[str, Any]]:
    """One item whose query response (one dataset) is exactly ``total`` bytes."""
    empty = {
        "results": [{"dataset": SLEEP, "status": "available", "data": {"items": [{"date": ""}]}}]
    }
    base = len(json.dumps(empty, ensure_ascii=False, separators=(",", ":")).encode())
    return [{"date": "x" * (total - base)}]


@pytest.mark.parametrize(
    ("size", "status"), [(QUERY_RESPONSE_BYTES, 200), (QUERY_RESPONSE_BYTES + 1, 413)]
)
async def test_response_size_limit(dev: Dev, size: int, status: int) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP)])
    await grant(dev, "m_wang", SLEEP)
    put = await dev.http.put(
        "/dev/data",
        headers=dev.admin,
        json={"member_id": "m_wang", "dataset": SLEEP, "items": sized_items(size)},
    )
    assert put.status_code == 200
    response = await query(dev, conv, [SLEEP])
    if status == 200:
        assert response.status_code == 200
        assert len(response.content) == QUERY_RESPONSE_BYTES
        assert response.json()["results"][0]["status"] == "available"
    else:
        reason = rejected(response, 413, "response_too_large")
        assert "query fewer datasets" in reason
        assert str(QUERY_RESPONSE_BYTES + 1) in reason
        # Fewer datasets fit: the same member's other data still answers.
        await declare(dev, [req(SLEEP), req("health.steps")])
        await grant(dev, "m_wang", "health.steps")
        assert await statuses(dev, conv, ["health.steps"]) == ["available"]


async def test_query_needs_token_and_own_conversation(dev: Dev) -> None:
    conv = await chat(dev)
    response = await dev.http.post(
        QUERY, headers={"X-Conversation-Id": conv["id"]}, json={"datasets": [SLEEP]}
    )
    rejected(response, 401, "unauthorized")
    response = await dev.http.post(QUERY, headers=dev.auth("c_nope"), json={"datasets": [SLEEP]})
    rejected(response, 404, "conversation_not_found")
    rejected(
        await dev.http.post(
            QUERY, headers=dev.auth(conv["id"]), json={"datasets": [SLEEP], "x": 1}
        ),
        400,
        "invalid_request",
    )


# ---------------------------------------------------------------- simulated data


@pytest.mark.parametrize("dataset", IDS)
async def test_simulated_data_for_every_dataset(dev: Dev, dataset: str) -> None:
    await chat(dev)
    params = {"member_id": "m_wang", "dataset": dataset}
    first = await dev.http.get("/dev/data", headers=dev.admin, params=params)
    again = await dev.http.get("/dev/data", headers=dev.admin, params=params)
    assert first.status_code == 200
    assert first.json()["source"] == "simulated"
    assert first.json()["items"] == again.json()["items"]
    fields = set(DATA_ACCESS_CAPABILITIES[dataset].item_fields)
    now = (await dev.http.get("/dev/clock", headers=dev.admin)).json()["time"]
    items = simulate.simulate("m_other", dataset, now)
    for item in first.json()["items"] + items:
        assert item
        assert set(item) <= fields


def test_simulation_is_deterministic_and_windowed() -> None:
    now = datetime(2026, 3, 10, 12, 0, tzinfo=simulate.TIMEZONE).timestamp()
    for dataset in IDS:
        assert simulate.simulate("m_a", dataset, now) == simulate.simulate("m_a", dataset, now)
    assert simulate.simulate("m_a", SLEEP, now) != simulate.simulate("m_b", SLEEP, now)
    steps = simulate.simulate("m_a", "health.steps", now)
    assert [s["date"] for s in steps] == [f"2026-03-{d:02d}" for d in range(3, 10)]
    # A day's items depend on the member, the dataset and the day only: a day later the
    # window moves by one day and the overlapping days are unchanged.
    later = simulate.simulate("m_a", "health.steps", now + 86400)
    assert later[:-1] == steps[1:]
    start = datetime.fromtimestamp(now, simulate.TIMEZONE) - timedelta(days=simulate.WINDOW_DAYS)
    for item in simulate.simulate("m_a", "health.workouts", now):
        end = datetime.fromisoformat(item["end"])
        assert start < end <= datetime.fromtimestamp(now, simulate.TIMEZONE)
    for item in simulate.simulate("m_a", SLEEP, now):
        assert item["wake_time"].startswith(item["date"])
        assert item["asleep_minutes"] <= item["in_bed_minutes"]
    assert simulate.location("m_a", now) == simulate.location("m_a", now)
    assert simulate.calendar("m_a", now, 3)["to"] == "2026-03-12"
    with pytest.raises(KeyError):
        simulate.simulate("m_a", "health.blood", now)


async def test_simulated_window_follows_the_clock(dev: Dev) -> None:
    await chat(dev)
    params = {"member_id": "m_wang", "dataset": "health.steps"}
    before = (await dev.http.get("/dev/data", headers=dev.admin, params=params)).json()["items"]
    await advance(dev, 2 * 86400)
    after = (await dev.http.get("/dev/data", headers=dev.admin, params=params)).json()["items"]
    assert len(before) == len(after) == 7
    assert after[:5] == before[2:]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"items": [{"mood": "好"}]}, 400, "item_field_unknown"),
        ({"member_id": "m_ghost"}, 404, "member_not_found"),
        ({"dataset": "health.blood"}, 400, "dataset_unknown"),
        ({"items": [1]}, 400, "invalid_request"),
        ({"items": "none"}, 400, "invalid_request"),
    ],
)
async def test_data_override_errors(dev: Dev, body: dict[str, Any], status: int, code: str) -> None:
    await chat(dev)
    full = {"member_id": "m_wang", "dataset": SLEEP, "items": [], **body}
    rejected(await dev.http.put("/dev/data", headers=dev.admin, json=full), status, code)


async def test_data_override_refuses_non_finite_numbers(dev: Dev) -> None:
    await chat(dev)
    content = '{"member_id": "m_wang", "dataset": "health.sleep", "items": [{"date": NaN}]}'
    response = await dev.http.put(
        "/dev/data", headers={**dev.admin, "Content-Type": "application/json"}, content=content
    )
    assert response.status_code == 400


async def test_get_data_errors(dev: Dev) -> None:
    await chat(dev)
    params = {"member_id": "m_wang", "dataset": "health.blood"}
    rejected(
        await dev.http.get("/dev/data", headers=dev.admin, params=params), 400, "dataset_unknown"
    )
    params = {"member_id": "m_ghost", "dataset": SLEEP}
    rejected(
        await dev.http.get("/dev/data", headers=dev.admin, params=params), 404, "member_not_found"
    )


# ---------------------------------------------------------------- group settings


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"conversation_id": "c_nope"}, 404, "conversation_not_found"),
        ({"private": True}, 400, "group_only"),
        ({"member_id": "m_zhao"}, 400, "member_not_in_conversation"),
        ({"dataset": "health.blood"}, 400, "dataset_unknown"),
        ({"disabled": "maybe"}, 400, "invalid_request"),
    ],
)
async def test_group_setting_errors(
    dev: Dev, change: dict[str, Any], status: int, code: str
) -> None:
    group = await chat(dev, "group")
    private = await chat(dev, "private", ["m_zhao"])
    body: dict[str, Any] = {
        "conversation_id": private["id"] if change.pop("private", False) else group["id"],
        "member_id": "m_wang",
        "dataset": SLEEP,
        "disabled": True,
    }
    body.update(change)
    rejected(await dev.http.put("/dev/group-settings", headers=dev.admin, json=body), status, code)


# ---------------------------------------------------------------- consent cards


async def test_healthkit_card_grants_and_emits_consent_result(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP), req("health.steps", "看看你走了多少")])
    created = await ask(
        dev,
        conv,
        kind="healthkit",
        reason="想看看你最近睡得怎么样",
        datasets=[SLEEP, "health.steps"],
    )
    assert created.status_code == 201, created.text
    ids = created.json()
    again = await ask(
        dev,
        conv,
        kind="healthkit",
        reason="想看看你最近睡得怎么样",
        datasets=[SLEEP, "health.steps"],
    )
    assert again.status_code == 200
    assert again.json() == ids
    transcript = (
        await dev.http.get(f"/dev/conversations/{conv['id']}/messages", headers=dev.admin)
    ).json()
    (card,) = transcript
    assert card["id"] == ids["message_id"]
    assert (card["sender"], card["kind"]) == ("buddy", "consent")
    assert card["body"] == {
        "request_id": ids["request_id"],
        "kind": "healthkit",
        "reason": "想看看你最近睡得怎么样",
        "datasets": [
            {"id": SLEEP, "title": "睡眠", "purpose": "根据你最近的睡眠调整作息建议"},
            {"id": "health.steps", "title": "步数", "purpose": "看看你走了多少"},
        ],
        "status": "pending",
    }
    assert await statuses(dev, conv, [SLEEP, "health.steps"]) == ["notGranted", "notGranted"]

    answered = await answer(dev, ids["request_id"], True)
    assert answered.status_code == 200
    assert answered.json()["datasets"] == [SLEEP, "health.steps"]
    assert await statuses(dev, conv, [SLEEP, "health.steps"]) == ["available", "available"]
    (event,) = [e for e in await events(dev) if e["type"] == "consent_result"]
    assert event["id"] == answered.json()["event_id"]
    assert event["conversation_id"] == conv["id"]
    assert event["payload"] == {
        "request_id": ids["request_id"],
        "kind": "healthkit",
        "granted": True,
        "datasets": [SLEEP, "health.steps"],
    }
    transcript = (
        await dev.http.get(f"/dev/conversations/{conv['id']}/messages", headers=dev.admin)
    ).json()
    assert transcript[0]["body"]["status"] == "granted"
    rejected(await answer(dev, ids["request_id"], False), 409, "request_answered")
    # HealthKit has no one-time result: query the datasets instead.
    result = await dev.http.get(f"{RESULTS}/{ids['request_id']}", headers=dev.auth(conv["id"]))
    assert result.json() == {"status": "unavailable"}


async def test_denied_healthkit_card_grants_nothing(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP)])
    ids = (await ask(dev, conv, kind="healthkit", reason="看睡眠", datasets=[SLEEP])).json()
    denied = await answer(dev, ids["request_id"], False)
    assert denied.json()["granted"] is False
    assert await statuses(dev, conv, [SLEEP]) == ["notGranted"]
    (event,) = await events(dev)
    assert event["type"] == "consent_result"
    assert event["payload"]["granted"] is False


async def test_card_grants_at_the_version_current_when_answered(dev: Dev) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP), req("health.steps")])
    ids = (
        await ask(dev, conv, kind="healthkit", reason="看看", datasets=[SLEEP, "health.steps"])
    ).json()
    await declare(dev, [req(SLEEP, "新的用途")])  # steps no longer declared
    await answer(dev, ids["request_id"], True)
    await declare(dev, [req(SLEEP, "新的用途"), req("health.steps")])
    assert await statuses(dev, conv, [SLEEP, "health.steps"]) == ["available", "notGranted"]


async def test_idempotency_is_per_conversation(dev: Dev) -> None:
    one, two = await chat(dev), await chat(dev, members=["m_li"])
    first = (await ask(dev, one, kind="location", reason="附近")).json()
    second = (await ask(dev, two, kind="location", reason="附近")).json()
    assert first["request_id"] != second["request_id"]
    other_key = (await ask(dev, one, kind="location", reason="附近", idempotency_key="k2")).json()
    assert other_key["request_id"] != first["request_id"]
    transcript = (
        await dev.http.get(f"/dev/conversations/{one['id']}/messages", headers=dev.admin)
    ).json()
    assert len(transcript) == 2


async def test_consent_cards_are_private_only(dev: Dev) -> None:
    conv = await chat(dev, "group")
    await declare(dev, [req(SLEEP)])
    response = await ask(dev, conv, kind="healthkit", reason="看睡眠", datasets=[SLEEP])
    rejected(response, 400, "consent_private_only")
    rejected(await ask(dev, conv, kind="location", reason="附近"), 400, "consent_private_only")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"kind": "healthkit"}, 400, "request_invalid"),
        ({"kind": "healthkit", "datasets": []}, 400, "invalid_request"),
        ({"kind": "healthkit", "datasets": ["health.steps"]}, 400, "dataset_not_declared"),
        ({"kind": "healthkit", "datasets": ["health.blood"]}, 400, "dataset_unknown"),
        ({"kind": "healthkit", "datasets": [SLEEP, SLEEP]}, 400, "dataset_duplicate"),
        ({"kind": "location", "datasets": [SLEEP]}, 400, "request_invalid"),
        ({"kind": "location", "calendar_days": 3}, 400, "request_invalid"),
        ({"kind": "healthkit", "datasets": [SLEEP], "calendar_days": 3}, 400, "request_invalid"),
        ({"kind": "contacts"}, 400, "invalid_request"),
        ({"kind": "location", "idempotency_key": ""}, 400, "invalid_request"),
        ({"kind": "location", "idempotency_key": None}, 400, "invalid_request"),
        ({"kind": "location", "extra": True}, 400, "invalid_request"),
    ],
)
async def test_request_errors(dev: Dev, body: dict[str, Any], status: int, code: str) -> None:
    conv = await chat(dev)
    await declare(dev, [req(SLEEP)])
    full = {"reason": "想看看", "idempotency_key": "k", **body}
    if full["idempotency_key"] is None:
        del full["idempotency_key"]
    response = await dev.http.post(REQUESTS, headers=dev.auth(conv["id"]), json=full)
    rejected(response, status, code)
    transcript = (
        await dev.http.get(f"/dev/conversations/{conv['id']}/messages", headers=dev.admin)
    ).json()
    assert transcript == []


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("因" * REQUEST_REASON_CHARS, 201),
        ("因" * (REQUEST_REASON_CHARS + 1), 400),
        ("因", 201),
        ("", 400),
    ],
)
async def test_request_reason_length(dev: Dev, reason: str, status: int) -> None:
    conv = await chat(dev)
    response = await ask(dev, conv, kind="location", reason=reason)
    assert response.status_code == status, response.text


@pytest.mark.parametrize(
    ("days", "status"),
    [
        (CALENDAR_DAYS_MIN, 201),
        (CALENDAR_DAYS_MAX, 201),
        (CALENDAR_DAYS_MIN - 1, 400),
        (CALENDAR_DAYS_MAX + 1, 400),
        (None, 201),
    ],
)
async def test_calendar_days(dev: Dev, days: int | None, status: int) -> None:
    conv = await chat(dev)
    body: dict[str, Any] = {"kind": "calendar", "reason": "看看日程"}
    if days is not None:
        body["calendar_days"] = days
    response = await ask(dev, conv, **body)
    assert response.status_code == status, response.text
    if status != 201:
        assert "calendar_days" in response.json()["reason"]
        return
    transcript = (
        await dev.http.get(f"/dev/conversations/{conv['id']}/messages", headers=dev.admin)
    ).json()
    expected = CALENDAR_DAYS_DEFAULT if days is None else days
    assert transcript[0]["body"]["calendar_days"] == expected
    await answer(dev, response.json()["request_id"], True)
    result = await dev.http.get(
        f"{RESULTS}/{response.json()['request_id']}", headers=dev.auth(conv["id"])
    )
    data = result.json()["data"]
    assert data["days"] == expected
    first = datetime.fromisoformat(data["from"])
    assert datetime.fromisoformat(data["to"]) - first == timedelta(days=expected - 1)
    for item in data["items"]:
        assert data["from"] <= item["start"][:10] <= data["to"]


# ---------------------------------------------------------------- one-time results


async def test_location_result_expires(dev: Dev) -> None:
    conv = await chat(dev)
    ids = (await ask(dev, conv, kind="location", reason="找附近的餐馆")).json()
    url = f"{RESULTS}/{ids['request_id']}"
    headers = dev.auth(conv["id"])
    assert (await dev.http.get(url, headers=headers)).json() == {"status": "unavailable"}
    answered = await answer(dev, ids["request_id"], True)
    assert "datasets" not in answered.json()
    (event,) = await events(dev)
    assert event["type"] == "consent_result"
    assert event["payload"] == {
        "request_id": ids["request_id"],
        "kind": "location",
        "granted": True,
    }
    got = await dev.http.get(url, headers=headers)
    assert got.status_code == 200
    assert got.json()["status"] == "available"
    assert set(got.json()["data"]) == {"latitude", "longitude", "accuracy_m", "city", "captured_at"}
    await advance(dev, ONE_TIME_RESULT_SECONDS - 60)
    assert (await dev.http.get(url, headers=headers)).json()["status"] == "available"
    await advance(dev, 120)
    assert (await dev.http.get(url, headers=headers)).json() == {"status": "unavailable"}
    # Expired means erased: the platform keeps no copy of the location.
    stored = await dev.app.state.platform.store.read(
        lambda conn: conn.execute(
            "SELECT result FROM data_requests WHERE id = ?", (ids["request_id"],)
        ).fetchone()["result"]
    )
    assert stored is None


async def test_denied_location_has_no_result(dev: Dev) -> None:
    conv = await chat(dev)
    ids = (await ask(dev, conv, kind="location", reason="附近")).json()
    await answer(dev, ids["request_id"], False)
    got = await dev.http.get(f"{RESULTS}/{ids['request_id']}", headers=dev.auth(conv["id"]))
    assert got.json() == {"status": "unavailable"}
    (event,) = await events(dev)
    assert event["payload"] == {
        "request_id": ids["request_id"],
        "kind": "location",
        "granted": False,
    }


async def test_result_ids_belong_to_their_conversation(dev: Dev) -> None:
    one, two = await chat(dev), await chat(dev, members=["m_li"])
    ids = (await ask(dev, one, kind="location", reason="附近")).json()
    await answer(dev, ids["request_id"], True)
    rejected(
        await dev.http.get(f"{RESULTS}/{ids['request_id']}", headers=dev.auth(two["id"])),
        404,
        "request_not_found",
    )
    rejected(
        await dev.http.get(f"{RESULTS}/dar_nope", headers=dev.auth(one["id"])),
        404,
        "request_not_found",
    )
    rejected(await answer(dev, "dar_nope", True), 404, "request_not_found")


async def test_deleting_the_conversation_deletes_its_requests(dev: Dev) -> None:
    conv = await chat(dev)
    ids = (await ask(dev, conv, kind="location", reason="附近")).json()
    deleted = await dev.http.delete(f"/dev/conversations/{conv['id']}", headers=dev.admin)
    assert deleted.status_code == 204
    rejected(await answer(dev, ids["request_id"], True), 404, "request_not_found")


# ---------------------------------------------------------------- over real sockets


async def test_consent_flow_over_real_sockets(live: Dev) -> None:
    conv = await chat(live)
    await declare(live, [req(SLEEP)])
    assert await statuses(live, conv, [SLEEP]) == ["notGranted"]
    ids = (await ask(live, conv, kind="healthkit", reason="看睡眠", datasets=[SLEEP])).json()
    assert (await answer(live, ids["request_id"], True)).status_code == 200
    response = await query(live, conv, [SLEEP])
    assert response.headers["content-type"] == "application/json"
    assert response.json()["results"][0]["status"] == "available"
    calendar = (
        await ask(live, conv, kind="calendar", reason="看日程", idempotency_key="k2")
    ).json()
    await answer(live, calendar["request_id"], True)
    url = f"{RESULTS}/{calendar['request_id']}"
    assert (await live.http.get(url, headers=live.auth(conv["id"]))).json()["status"] == "available"
    await advance(live, ONE_TIME_RESULT_SECONDS + 1)
    assert (await live.http.get(url, headers=live.auth(conv["id"]))).json() == {
        "status": "unavailable"
    }
    assert [e["type"] for e in await events(live)] == ["consent_result", "consent_result"]
