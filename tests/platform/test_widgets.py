"""Widgets: types, widgets, records with revisions, presentation, cards, forwarding."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import httpx
import pytest

from buddy.capabilities.widgets.limits import WIDGET_SUMMARY_CHARS, WIDGET_TITLE_CHARS
from buddy.capabilities.widgets.platform import ValidatorCache, validator_cache
from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio

TYPES = "/internal/v1/widget-types"
WIDGETS = "/internal/v1/widgets"
MESSAGES = "/internal/v1/messages"

DISH = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "price": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}
MENU = {
    "type": "menu",
    "title": "菜单",
    "description": "一周的菜单",
    "modules": {
        "dishes": {"title": "菜", "record": DISH},
        "notes": {"record": {"type": "object"}},
    },
}
CHECKLIST = {
    "type": "checklist",
    "title": "清单",
    "modules": {
        "items": {"record": {"type": "object", "properties": {"done": {"type": "boolean"}}}}
    },
}


class Setup:
    """A conversation with the menu and checklist types declared."""

    def __init__(self, dev: Dev, conv: dict[str, Any]) -> None:
        self.dev = dev
        self.conv = conv
        self.headers = dev.auth(conv["id"])

    async def create(self, title: str = "本周菜单", **extra: Any) -> str:
        response = await self.dev.http.post(
            WIDGETS, headers=self.headers, json={"type": "menu", "title": title, **extra}
        )
        assert response.status_code in (200, 201), response.text
        widget_id: str = response.json()["id"]
        return widget_id

    async def write(
        self, widget_id: str, record_id: str, data: Any, module: str = "dishes", **extra: Any
    ) -> httpx.Response:
        return await self.dev.http.put(
            f"{WIDGETS}/{widget_id}/{module}/{record_id}",
            headers=self.headers,
            json={"data": data, **extra},
        )

    async def read(self, widget_id: str) -> httpx.Response:
        return await self.dev.http.get(f"{WIDGETS}/{widget_id}", headers=self.headers)

    async def listed(self) -> list[dict[str, Any]]:
        response = await self.dev.http.get(WIDGETS, headers=self.headers)
        assert response.status_code == 200, response.text
        widgets: list[dict[str, Any]] = response.json()["widgets"]
        return widgets

    async def send(self, widget_id: str, key: str) -> httpx.Response:
        return await self.dev.http.post(
            MESSAGES, headers=self.headers, json={"widget_id": widget_id, "idempotency_key": key}
        )

    async def playground(self) -> dict[str, Any]:
        response = await self.dev.http.get(
            f"/dev/conversations/{self.conv['id']}/widgets", headers=self.dev.admin
        )
        assert response.status_code == 200, response.text
        view: dict[str, Any] = response.json()
        return view


async def declare(
    dev: Dev, types: list[dict[str, Any]], *, dev_token: bool = False
) -> httpx.Response:
    return await dev.http.put(TYPES, headers=dev.auth(dev=dev_token), json={"types": types})


async def setup(dev: Dev, kind: str = "private") -> Setup:
    response = await declare(dev, [MENU, CHECKLIST])
    assert response.status_code == 200, response.text
    return Setup(dev, await dev.conversation(kind))


async def count(dev: Dev, sql: str, *args: Any) -> int:
    def run(conn: sqlite3.Connection) -> int:
        (n,) = conn.execute(sql, args).fetchone()
        return int(n)

    result: int = await dev.app.state.platform.store.read(run)
    return result


def error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code, body
    reason: str = body["reason"]
    assert reason
    return reason


# ---------------------------------------------------------------- types


async def test_declare_types(dev: Dev) -> None:
    response = await declare(dev, [MENU, CHECKLIST])
    assert response.status_code == 200
    assert response.json() == {"types": ["checklist", "menu"]}
    # The whole set is replaced: checklist is gone.
    assert (await declare(dev, [MENU])).json() == {"types": ["menu"]}
    conv = await dev.conversation()
    gone = await dev.http.post(
        WIDGETS, headers=dev.auth(conv["id"]), json={"type": "checklist", "title": "t"}
    )
    error(gone, 400, "widget_type_unknown")
    # An empty list clears the set.
    assert (await declare(dev, [])).json() == {"types": []}
    cleared = await dev.http.post(
        WIDGETS, headers=dev.auth(conv["id"]), json={"type": "menu", "title": "t"}
    )
    error(cleared, 400, "widget_type_unknown")


async def test_types_belong_to_the_identity(dev: Dev) -> None:
    await declare(dev, [MENU])
    mine = await dev.conversation(dev=True)
    response = await dev.http.post(
        WIDGETS, headers=dev.auth(mine["id"], dev=True), json={"type": "menu", "title": "t"}
    )
    error(response, 400, "widget_type_unknown")
    await declare(dev, [MENU], dev_token=True)
    response = await dev.http.post(
        WIDGETS, headers=dev.auth(mine["id"], dev=True), json={"type": "menu", "title": "t"}
    )
    assert response.status_code == 201
    assert (await dev.http.put(TYPES, json={"types": []})).status_code == 401


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ({"type": "objekt"}, "type"),
        ({"type": "object", "properties": {"a": {"type": 5}}}, "properties/a/type"),
        ({"type": "object", "properties": {"a": {"pattern": "("}}}, "properties/a/pattern"),
        ({"type": "object", "required": "name"}, "required"),
        ({"type": "object", "minProperties": -1}, "minProperties"),
    ],
)
async def test_invalid_record_schema_is_400(dev: Dev, record: dict[str, Any], where: str) -> None:
    bad = {"type": "menu", "title": "菜单", "modules": {"dishes": {"record": record}}}
    reason = error(await declare(dev, [CHECKLIST, bad]), 400, "widget_schema_invalid")
    assert "widget type menu, module dishes" in reason
    assert f"at {where}:" in reason
    # Nothing of a refused upload is kept.
    conv = await dev.conversation()
    response = await dev.http.post(
        WIDGETS, headers=dev.auth(conv["id"]), json={"type": "checklist", "title": "t"}
    )
    error(response, 400, "widget_type_unknown")


@pytest.mark.parametrize(
    "record", [{"type": "array"}, {"properties": {}}, {}, {"type": ["object"]}]
)
async def test_record_schema_must_be_of_type_object(dev: Dev, record: dict[str, Any]) -> None:
    bad = {"type": "menu", "title": "菜单", "modules": {"dishes": {"record": record}}}
    reason = error(await declare(dev, [bad]), 400, "widget_schema_invalid")
    assert "type: object" in reason


@pytest.mark.parametrize(
    "types",
    [
        [{**MENU, "type": "Menu"}],
        [{**MENU, "type": ""}],
        [{**MENU, "modules": {}}],
        [{**MENU, "modules": {"Bad Name": {"record": {"type": "object"}}}}],
        [{**MENU, "extra": 1}],
        [{**MENU, "title": ""}],
        [{**MENU, "title": "x" * 101}],
        [{**MENU, "modules": {"a": {"record": {"type": "object"}, "extra": 1}}}],
        [{k: v for k, v in MENU.items() if k != "title"}],
    ],
)
async def test_malformed_type_declarations_are_400(dev: Dev, types: list[dict[str, Any]]) -> None:
    error(await declare(dev, types), 400, "invalid_request")


async def test_duplicate_type_is_400(dev: Dev) -> None:
    reason = error(await declare(dev, [MENU, MENU]), 400, "widget_type_duplicate")
    assert "menu" in reason


async def test_deeply_nested_schema_is_refused(dev: Dev) -> None:
    record: dict[str, Any] = {"type": "object"}
    for _ in range(70):
        record = {"type": "object", "properties": {"a": record}}
    bad = {"type": "menu", "title": "菜单", "modules": {"dishes": {"record": record}}}
    reason = error(await declare(dev, [bad]), 400, "invalid_request")
    assert "nests deeper than" in reason


# ---------------------------------------------------------------- create, list, read


async def test_create_list_read(dev: Dev) -> None:
    s = await setup(dev)
    assert await s.listed() == []
    widget_id = await s.create()
    assert widget_id.startswith("w_")
    (listed,) = await s.listed()
    assert listed == {
        "id": widget_id,
        "type": "menu",
        "title": "本周菜单",
        "can_edit": True,
        "presentation": {"summary": None, "image_media_id": None},
        "created_at": listed["created_at"],
        "updated_at": listed["created_at"],
    }
    full = (await s.read(widget_id)).json()
    assert full == {**listed, "modules": {"dishes": {"records": []}, "notes": {"records": []}}}
    second = await s.create("第二份")
    assert [w["id"] for w in await s.listed()] == [widget_id, second]


async def test_widgets_are_per_conversation(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    other = Setup(dev, await dev.conversation())
    assert await other.listed() == []
    error(await other.read(widget_id), 404, "widget_not_found")
    error(await other.write(widget_id, "r", {"name": "x"}), 404, "widget_not_found")


async def test_idempotent_create(dev: Dev) -> None:
    s = await setup(dev)
    body = {"type": "menu", "title": "本周菜单", "idempotency_key": "create-1"}
    first = await dev.http.post(WIDGETS, headers=s.headers, json=body)
    again = await dev.http.post(WIDGETS, headers=s.headers, json=body)
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json() == first.json()
    assert len(await s.listed()) == 1
    other_key = await dev.http.post(
        WIDGETS, headers=s.headers, json={**body, "idempotency_key": "create-2"}
    )
    assert other_key.status_code == 201
    assert other_key.json()["id"] != first.json()["id"]
    # Keys are per conversation.
    elsewhere = Setup(dev, await dev.conversation())
    there = await dev.http.post(WIDGETS, headers=elsewhere.headers, json=body)
    assert there.status_code == 201
    assert there.json()["id"] != first.json()["id"]
    # Concurrent retries still make one widget.
    retries = await asyncio.gather(
        *(
            dev.http.post(WIDGETS, headers=s.headers, json={**body, "idempotency_key": "burst"})
            for _ in range(8)
        )
    )
    assert sorted(r.status_code for r in retries) == [200] * 7 + [201]
    assert len({r.json()["id"] for r in retries}) == 1
    assert len(await s.listed()) == 3


@pytest.mark.parametrize(
    ("title", "status"),
    [
        ("x" * WIDGET_TITLE_CHARS, 201),
        ("x" * (WIDGET_TITLE_CHARS + 1), 400),
        ("菜" * WIDGET_TITLE_CHARS, 201),  # characters, not bytes
        ("菜" * (WIDGET_TITLE_CHARS + 1), 400),
        ("x", 201),
        ("", 400),
    ],
)
async def test_title_limit_on_create_and_rename(dev: Dev, title: str, status: int) -> None:
    s = await setup(dev)
    created = await dev.http.post(WIDGETS, headers=s.headers, json={"type": "menu", "title": title})
    assert created.status_code == status, created.text
    widget_id = await s.create("原名")
    renamed = await dev.http.put(f"{WIDGETS}/{widget_id}", headers=s.headers, json={"title": title})
    assert renamed.status_code == (200 if status == 201 else 400), renamed.text
    if status == 400:
        assert "title" in error(created, 400, "invalid_request")
        assert "title" in error(renamed, 400, "invalid_request")
        assert [w["title"] for w in await s.listed()] == ["原名"]
    else:
        assert renamed.json()["title"] == title


@pytest.mark.parametrize(
    "body",
    [
        {"type": "menu"},
        {"title": "t"},
        {"type": "menu", "title": "t", "extra": 1},
        {"type": "menu", "title": "t", "idempotency_key": ""},
        {"type": "menu", "title": "t", "idempotency_key": "k" * 201},
        {"type": "", "title": "t"},
    ],
)
async def test_malformed_create_is_400(dev: Dev, body: dict[str, Any]) -> None:
    s = await setup(dev)
    error(await dev.http.post(WIDGETS, headers=s.headers, json=body), 400, "invalid_request")
    assert await s.listed() == []


async def test_unknown_type_is_400(dev: Dev) -> None:
    s = await setup(dev)
    response = await dev.http.post(WIDGETS, headers=s.headers, json={"type": "nope", "title": "t"})
    assert "nope" in error(response, 400, "widget_type_unknown")


async def test_unknown_widget_is_404(dev: Dev) -> None:
    s = await setup(dev)
    error(await s.read("w_nope"), 404, "widget_not_found")
    error(
        await dev.http.get(f"{WIDGETS}/w_nope/dishes", headers=s.headers), 404, "widget_not_found"
    )


async def test_rename_keeps_the_id_and_cards_follow(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create("旧名")
    assert (await s.send(widget_id, "send-1")).status_code == 202
    await dev.http.post("/dev/clock", headers=dev.admin, json={"advance_seconds": 30})
    renamed = await dev.http.put(
        f"{WIDGETS}/{widget_id}", headers=s.headers, json={"title": "新名"}
    )
    assert renamed.status_code == 200
    assert renamed.json()["id"] == widget_id
    assert renamed.json()["title"] == "新名"
    assert renamed.json()["updated_at"] >= renamed.json()["created_at"] + 30
    (card,) = (await s.playground())["cards"]
    assert card["title"] == "新名"
    assert card["deleted"] is False
    error(
        await dev.http.put(f"{WIDGETS}/w_nope", headers=s.headers, json={"title": "x"}),
        404,
        "widget_not_found",
    )


# ---------------------------------------------------------------- records


async def test_records_write_read_overwrite(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    first = await s.write(widget_id, "d1", {"name": "番茄炒蛋", "price": 12})
    assert first.status_code == 200
    assert first.json() == {"revision": 1}
    assert (await s.write(widget_id, "d2", {"name": "米饭"})).json() == {"revision": 1}
    assert (await s.write(widget_id, "d1", {"name": "番茄炒蛋", "tags": ["家常"]})).json() == {
        "revision": 2
    }
    note = await s.write(widget_id, "n1", {"anything": [1, {"goes": None}]}, module="notes")
    assert note.json() == {"revision": 1}
    module = await dev.http.get(f"{WIDGETS}/{widget_id}/dishes", headers=s.headers)
    assert module.status_code == 200
    records = module.json()["records"]
    # Whole-record overwrite (the price is gone) and first-written order.
    assert [(r["record_id"], r["data"], r["revision"]) for r in records] == [
        ("d1", {"name": "番茄炒蛋", "tags": ["家常"]}, 2),
        ("d2", {"name": "米饭"}, 1),
    ]
    full = (await s.read(widget_id)).json()
    assert full["modules"]["dishes"]["records"] == records
    assert full["modules"]["notes"]["records"][0]["data"] == {"anything": [1, {"goes": None}]}
    assert full["updated_at"] >= full["created_at"]


async def test_unknown_module_is_404(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    reason = error(
        await dev.http.get(f"{WIDGETS}/{widget_id}/drinks", headers=s.headers),
        404,
        "module_not_found",
    )
    assert "drinks" in reason
    error(await s.write(widget_id, "r", {"name": "x"}, module="drinks"), 404, "module_not_found")
    error(
        await dev.http.delete(f"{WIDGETS}/{widget_id}/drinks/r", headers=s.headers),
        404,
        "module_not_found",
    )


@pytest.mark.parametrize(
    ("existing", "expected", "status", "revision"),
    [
        (0, None, 200, 1),
        (0, 0, 200, 1),
        (0, 1, 409, None),
        (0, 2, 409, None),
        (1, 0, 409, None),  # 0 = must not exist
        (1, 1, 200, 2),
        (1, 2, 409, None),
        (1, None, 200, 2),
        (3, 3, 200, 4),
        (3, 2, 409, None),
        (3, 4, 409, None),
    ],
)
async def test_expected_revision(
    dev: Dev, existing: int, expected: int | None, status: int, revision: int | None
) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    for _ in range(existing):
        await s.write(widget_id, "d1", {"name": "旧"})
    extra: dict[str, Any] = {} if expected is None else {"expected_revision": expected}
    response = await s.write(widget_id, "d1", {"name": "新"}, **extra)
    records = (await dev.http.get(f"{WIDGETS}/{widget_id}/dishes", headers=s.headers)).json()
    if status == 200:
        assert response.json() == {"revision": revision}
        assert records["records"][0]["data"] == {"name": "新"}
    else:
        reason = error(response, 409, "revision_conflict")
        assert "d1" in reason
        assert [r["data"] for r in records["records"]] == ([{"name": "旧"}] if existing else [])


async def test_concurrent_writes_with_the_same_expected_revision_conflict(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    await s.write(widget_id, "d1", {"name": "v1"})
    responses = await asyncio.gather(
        *(s.write(widget_id, "d1", {"name": f"v{i}"}, expected_revision=1) for i in range(5))
    )
    assert sorted(r.status_code for r in responses) == [200, 409, 409, 409, 409]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"name": "x", "price": "12"}, "$.price"),
        ({"name": "x", "price": -1}, "$.price"),
        ({"name": ""}, "$.name"),
        ({"price": 1}, "$"),  # name is required
        ({"name": "x", "colour": "red"}, "$"),  # no additional properties
        ({"name": "x", "tags": ["a", 2]}, "$.tags[1]"),
    ],
)
async def test_record_must_match_the_module_schema(
    dev: Dev, data: dict[str, Any], path: str
) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    reason = error(await s.write(widget_id, "d1", data), 400, "record_schema_mismatch")
    assert f"module dishes at {path}:" in reason
    records = (await dev.http.get(f"{WIDGETS}/{widget_id}/dishes", headers=s.headers)).json()
    assert records == {"records": []}


@pytest.mark.parametrize(
    ("body", "content"),
    [
        ({"data": "not an object"}, None),
        ({"data": [1]}, None),
        ({"data": {"name": "x"}, "expected_revision": -1}, None),
        ({"data": {"name": "x"}, "expected_revision": "1"}, None),
        ({"data": {"name": "x"}, "expected_revision": 2**80}, None),
        ({"data": {"name": "x"}, "extra": 1}, None),
        ({}, None),
        (None, b'{"data": {"name": "x", "price": NaN}}'),
        (None, b'{"data": {"name": "\\ud800"}}'),
        (None, b'{"data": {"\\udc00": 1}}'),
    ],
)
async def test_malformed_record_writes_are_400(
    dev: Dev, body: dict[str, Any] | None, content: bytes | None
) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    response = await dev.http.put(
        f"{WIDGETS}/{widget_id}/notes/r1",
        headers={**s.headers, "Content-Type": "application/json"},
        json=body,
        content=content,
    )
    error(response, 400, "invalid_request")


@pytest.mark.parametrize(("depth", "status"), [(32, 200), (33, 400)])
async def test_record_nesting_limit(dev: Dev, depth: int, status: int) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    data: dict[str, Any] = {}
    for _ in range(depth - 1):
        data = {"a": data}
    response = await s.write(widget_id, "r1", data, module="notes")
    assert response.status_code == status, response.text
    if status == 400:
        assert "nests deeper than 32 levels" in error(response, 400, "invalid_request")


@pytest.mark.parametrize(("length", "status"), [(128, 200), (129, 400)])
async def test_record_id_length(dev: Dev, length: int, status: int) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    response = await s.write(widget_id, "r" * length, {"name": "x"})
    assert response.status_code == status, response.text


async def test_unresolvable_reference_in_a_schema_is_400_not_500(dev: Dev) -> None:
    odd = {
        "type": "odd",
        "title": "t",
        "modules": {
            "m": {"record": {"type": "object", "properties": {"a": {"$ref": "#/$defs/none"}}}},
            "loop": {"record": {"type": "object", "properties": {"a": {"$ref": "#"}}}},
        },
    }
    assert (await declare(dev, [odd])).status_code == 200
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    created = await dev.http.post(WIDGETS, headers=headers, json={"type": "odd", "title": "t"})
    widget_id = created.json()["id"]
    response = await dev.http.put(
        f"{WIDGETS}/{widget_id}/m/r", headers=headers, json={"data": {"a": 1}}
    )
    assert "module m" in error(response, 400, "widget_schema_invalid")
    # A self-reference is fine as long as the data is finite.
    nested: dict[str, Any] = {}
    for _ in range(31):
        nested = {"a": nested}
    ok = await dev.http.put(f"{WIDGETS}/{widget_id}/loop/r", headers=headers, json={"data": nested})
    assert ok.status_code == 200, ok.text


async def test_delete_record(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    await s.write(widget_id, "d1", {"name": "x"})
    await s.write(widget_id, "d2", {"name": "y"})
    deleted = await dev.http.delete(f"{WIDGETS}/{widget_id}/dishes/d1", headers=s.headers)
    assert deleted.status_code == 204
    again = await dev.http.delete(f"{WIDGETS}/{widget_id}/dishes/d1", headers=s.headers)
    assert "d1" in error(again, 404, "record_not_found")
    records = (await dev.http.get(f"{WIDGETS}/{widget_id}/dishes", headers=s.headers)).json()
    assert [r["record_id"] for r in records["records"]] == ["d2"]
    # A record written again after its deletion starts over at revision 1.
    assert (await s.write(widget_id, "d1", {"name": "x"})).json() == {"revision": 1}


# ---------------------------------------------------------------- validators


async def test_validators_are_built_once_per_type_and_schema(dev: Dev) -> None:
    s = await setup(dev)
    cache = validator_cache(dev.app.state.platform)
    assert isinstance(cache, ValidatorCache)
    before = cache.builds
    widget_id = await s.create()
    other = await s.create("另一份")
    for i in range(5):
        assert (await s.write(widget_id, f"d{i}", {"name": "x"})).status_code == 200
        assert (await s.write(other, f"n{i}", {}, module="notes")).status_code == 200
    assert cache.builds == before + 1
    # The same schemas uploaded again (a runtime restart) reuse the validators.
    await declare(dev, [MENU, CHECKLIST])
    await s.write(widget_id, "d9", {"name": "x"})
    assert cache.builds == before + 1
    # A changed schema is used at once, also by widgets created before the change.
    stricter = {
        **MENU,
        "modules": {
            **MENU["modules"],  # type: ignore[dict-item]
            "dishes": {"record": {**DISH, "required": ["name", "price"]}},
        },
    }
    await declare(dev, [stricter, CHECKLIST])
    refused = await s.write(widget_id, "d10", {"name": "x"})
    assert "price" in error(refused, 400, "record_schema_mismatch")
    assert cache.builds == before + 2


async def test_widget_of_an_undeclared_type_cannot_be_written(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    await s.write(widget_id, "d1", {"name": "x"})
    await declare(dev, [CHECKLIST])
    error(await s.write(widget_id, "d2", {"name": "y"}), 400, "widget_type_unknown")
    # Its records stay readable.
    full = (await s.read(widget_id)).json()
    assert [r["record_id"] for r in full["modules"]["dishes"]["records"]] == ["d1"]


# ---------------------------------------------------------------- presentation


@pytest.mark.parametrize(
    ("summary", "status"),
    [
        ("x" * WIDGET_SUMMARY_CHARS, 200),
        ("x" * (WIDGET_SUMMARY_CHARS + 1), 400),
        ("菜" * WIDGET_SUMMARY_CHARS, 200),
        ("菜" * (WIDGET_SUMMARY_CHARS + 1), 400),
    ],
)
async def test_summary_limit(dev: Dev, summary: str, status: int) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    response = await dev.http.put(
        f"{WIDGETS}/{widget_id}/presentation", headers=s.headers, json={"summary": summary}
    )
    assert response.status_code == status, response.text
    listed = (await s.listed())[0]["presentation"]
    if status == 200:
        assert response.json()["presentation"]["summary"] == summary
        assert listed["summary"] == summary
    else:
        assert "summary" in error(response, 400, "invalid_request")
        assert listed["summary"] is None


async def test_presentation_set_keep_and_remove(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    url = f"{WIDGETS}/{widget_id}/presentation"
    both = await dev.http.put(
        url, headers=s.headers, json={"summary": "三菜一汤", "image_media_id": "media_1"}
    )
    assert both.status_code == 200
    assert both.json()["presentation"] == {"summary": "三菜一汤", "image_media_id": "media_1"}
    assert both.json()["id"] == widget_id
    # Absent or null: unchanged.
    kept = await dev.http.put(url, headers=s.headers, json={"summary": "两菜一汤"})
    assert kept.json()["presentation"] == {"summary": "两菜一汤", "image_media_id": "media_1"}
    kept = await dev.http.put(url, headers=s.headers, json={"image_media_id": None})
    assert kept.json()["presentation"] == {"summary": "两菜一汤", "image_media_id": "media_1"}
    # "" removes the field.
    no_cover = await dev.http.put(url, headers=s.headers, json={"image_media_id": ""})
    assert no_cover.json()["presentation"] == {"summary": "两菜一汤", "image_media_id": None}
    none = await dev.http.put(url, headers=s.headers, json={"summary": "", "image_media_id": ""})
    assert none.json()["presentation"] == {"summary": None, "image_media_id": None}
    assert (await s.read(widget_id)).json()["presentation"] == none.json()["presentation"]
    error(await dev.http.put(url, headers=s.headers, json={"cover": "x"}), 400, "invalid_request")
    error(
        await dev.http.put(f"{WIDGETS}/w_nope/presentation", headers=s.headers, json={}),
        404,
        "widget_not_found",
    )


# ---------------------------------------------------------------- send


async def test_send_is_idempotent(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    first = await s.send(widget_id, "send-1")
    again = await s.send(widget_id, "send-1")
    assert first.status_code == 202
    assert again.status_code == 202
    assert again.json() == first.json()
    assert first.json()["message_id"].startswith("msg_")
    burst = await asyncio.gather(*(s.send(widget_id, "send-2") for _ in range(6)))
    assert len({r.json()["message_id"] for r in burst}) == 1
    transcript = (
        await dev.http.get(f"/dev/conversations/{s.conv['id']}/messages", headers=dev.admin)
    ).json()
    assert [(m["sender"], m["kind"], m["body"]) for m in transcript] == [
        ("buddy", "widget", {"widget_id": widget_id}),
        ("buddy", "widget", {"widget_id": widget_id}),
    ]
    assert transcript[0]["id"] == first.json()["message_id"]


@pytest.mark.parametrize(
    "body",
    [
        {"widget_id": "w_x"},
        {"idempotency_key": "k"},
        {"widget_id": "w_x", "idempotency_key": ""},
        {"widget_id": "w_x", "idempotency_key": "k", "text": "hi"},
    ],
)
async def test_malformed_send_is_400(dev: Dev, body: dict[str, Any]) -> None:
    s = await setup(dev)
    error(await dev.http.post(MESSAGES, headers=s.headers, json=body), 400, "invalid_request")


async def test_send_needs_a_live_widget(dev: Dev) -> None:
    s = await setup(dev)
    error(await s.send("w_nope", "k1"), 404, "widget_not_found")
    widget_id = await s.create()
    await dev.http.delete(f"{WIDGETS}/{widget_id}", headers=s.headers)
    error(await s.send(widget_id, "k2"), 404, "widget_not_found")
    other = Setup(dev, await dev.conversation())
    error(await other.send(await s.create(), "k3"), 404, "widget_not_found")


# ---------------------------------------------------------------- delete


async def test_delete_widget(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create("要删的")
    kept = await s.create("留着的")
    await s.write(widget_id, "d1", {"name": "x"})
    await s.write(widget_id, "n1", {}, module="notes")
    await s.send(widget_id, "card")
    deleted = await dev.http.delete(f"{WIDGETS}/{widget_id}", headers=s.headers)
    assert deleted.status_code == 204
    assert [w["id"] for w in await s.listed()] == [kept]
    error(await s.read(widget_id), 404, "widget_not_found")
    error(
        await dev.http.get(f"{WIDGETS}/{widget_id}/dishes", headers=s.headers),
        404,
        "widget_not_found",
    )
    error(await s.write(widget_id, "d2", {"name": "y"}), 404, "widget_not_found")
    error(
        await dev.http.put(f"{WIDGETS}/{widget_id}", headers=s.headers, json={"title": "x"}),
        404,
        "widget_not_found",
    )
    error(
        await dev.http.put(f"{WIDGETS}/{widget_id}/presentation", headers=s.headers, json={}),
        404,
        "widget_not_found",
    )
    error(
        await dev.http.delete(f"{WIDGETS}/{widget_id}/dishes/d1", headers=s.headers),
        404,
        "widget_not_found",
    )
    again = await dev.http.delete(f"{WIDGETS}/{widget_id}", headers=s.headers)
    error(again, 404, "widget_not_found")
    assert (
        await count(dev, "SELECT COUNT(*) FROM widget_records WHERE widget_id = ?", widget_id) == 0
    )
    # The card that was sent stays, showing the widget as deleted under its last title.
    view = await s.playground()
    (card,) = view["cards"]
    assert card["widget_id"] == widget_id
    assert card["title"] == "要删的"
    assert card["deleted"] is True
    assert [w["id"] for w in view["widgets"]] == [kept]


async def test_idempotency_key_of_a_deleted_widget_answers_its_id(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create(idempotency_key="k")
    await dev.http.delete(f"{WIDGETS}/{widget_id}", headers=s.headers)
    response = await dev.http.post(
        WIDGETS, headers=s.headers, json={"type": "menu", "title": "t", "idempotency_key": "k"}
    )
    assert response.status_code == 200
    assert response.json() == {"id": widget_id}


# ---------------------------------------------------------------- forwarding


async def forwarded(dev: Dev) -> tuple[Setup, Setup, str]:
    source = await setup(dev)
    target = Setup(dev, await dev.conversation())
    widget_id = await source.create("共享菜单")
    await source.write(widget_id, "d1", {"name": "原来的"})
    response = await dev.http.post(
        f"/dev/widgets/{widget_id}/forward",
        headers=dev.admin,
        json={"conversation_id": target.conv["id"]},
    )
    assert response.status_code == 201, response.text
    assert response.json()["can_edit"] is False
    return source, target, widget_id


async def test_forwarded_widget_is_readable_and_live(dev: Dev) -> None:
    source, target, widget_id = await forwarded(dev)
    own = await target.create("自己的")
    listed = await target.listed()
    assert [(w["id"], w["can_edit"]) for w in listed] == [(widget_id, False), (own, True)]
    assert (await source.listed())[0]["can_edit"] is True
    # Reads show the source's current content.
    await source.write(widget_id, "d1", {"name": "改过的"})
    await dev.http.put(f"{WIDGETS}/{widget_id}", headers=source.headers, json={"title": "新名"})
    full = (await target.read(widget_id)).json()
    assert full["can_edit"] is False
    assert full["title"] == "新名"
    assert full["modules"]["dishes"]["records"][0]["data"] == {"name": "改过的"}
    module = await dev.http.get(f"{WIDGETS}/{widget_id}/dishes", headers=target.headers)
    assert module.json()["records"][0]["revision"] == 2
    # It may be sent as a card there.
    assert (await target.send(widget_id, "share")).status_code == 202
    # Once the source deletes it, it is gone here too.
    await dev.http.delete(f"{WIDGETS}/{widget_id}", headers=source.headers)
    assert [w["id"] for w in await target.listed()] == [own]
    error(await target.read(widget_id), 404, "widget_not_found")
    (card,) = (await target.playground())["cards"]
    assert card["deleted"] is True


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("PUT", "", {"title": "改名"}),
        ("PUT", "/dishes/d2", {"data": {"name": "x"}}),
        ("PUT", "/dishes/d1", {"data": {"name": "x"}, "expected_revision": 1}),
        ("DELETE", "/dishes/d1", None),
        ("DELETE", "", None),
        ("PUT", "/presentation", {"summary": "x"}),
        ("PUT", "/presentation", {}),
    ],
)
async def test_forwarded_widget_is_read_only(
    dev: Dev, method: str, suffix: str, body: dict[str, Any] | None
) -> None:
    source, target, widget_id = await forwarded(dev)
    response = await dev.http.request(
        method, f"{WIDGETS}/{widget_id}{suffix}", headers=target.headers, json=body
    )
    assert widget_id in error(response, 403, "widget_read_only")
    full = (await source.read(widget_id)).json()
    assert full["title"] == "共享菜单"
    assert full["presentation"] == {"summary": None, "image_media_id": None}
    assert [(r["record_id"], r["revision"]) for r in full["modules"]["dishes"]["records"]] == [
        ("d1", 1)
    ]


async def test_forward_errors(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create()
    url = f"/dev/widgets/{widget_id}/forward"
    same = await dev.http.post(url, headers=dev.admin, json={"conversation_id": s.conv["id"]})
    error(same, 400, "widget_forward_invalid")
    other_identity = await dev.conversation(dev=True)
    response = await dev.http.post(
        url, headers=dev.admin, json={"conversation_id": other_identity["id"]}
    )
    error(response, 400, "widget_forward_invalid")
    missing = await dev.http.post(url, headers=dev.admin, json={"conversation_id": "c_nope"})
    error(missing, 404, "conversation_not_found")
    target = await dev.conversation()
    nowhere = await dev.http.post(
        "/dev/widgets/w_nope/forward", headers=dev.admin, json={"conversation_id": target["id"]}
    )
    error(nowhere, 404, "widget_not_found")
    unauthorised = await dev.http.post(
        url, headers=dev.auth(), json={"conversation_id": target["id"]}
    )
    assert unauthorised.status_code == 401
    # Forwarding twice is harmless: listed once.
    for _ in range(2):
        again = await dev.http.post(url, headers=dev.admin, json={"conversation_id": target["id"]})
        assert again.status_code == 201
    assert len(await Setup(dev, target).listed()) == 1


# ---------------------------------------------------------------- playground, deletion


async def test_playground_view(dev: Dev) -> None:
    s = await setup(dev)
    widget_id = await s.create("菜单")
    await s.write(widget_id, "d1", {"name": "面"})
    await dev.http.put(
        f"{WIDGETS}/{widget_id}/presentation", headers=s.headers, json={"summary": "一碗面"}
    )
    sent = (await s.send(widget_id, "k")).json()
    view = await s.playground()
    (widget,) = view["widgets"]
    assert widget["modules"]["dishes"]["records"][0]["data"] == {"name": "面"}
    assert view["cards"] == [
        {
            "message_id": sent["message_id"],
            "widget_id": widget_id,
            "title": "菜单",
            "deleted": False,
            "presentation": {"summary": "一碗面", "image_media_id": None},
            "sent_at": view["cards"][0]["sent_at"],
        }
    ]
    missing = await dev.http.get("/dev/conversations/c_nope/widgets", headers=dev.admin)
    error(missing, 404, "conversation_not_found")
    assert (
        await dev.http.get(f"/dev/conversations/{s.conv['id']}/widgets", headers=dev.auth())
    ).status_code == 401


async def test_deleting_the_conversation_deletes_its_widgets(dev: Dev) -> None:
    source, target, widget_id = await forwarded(dev)
    await source.send(widget_id, "card")
    await target.send(widget_id, "card")
    await source.create("另一个", idempotency_key="k")
    tables = {
        "widgets": "SELECT COUNT(*) FROM widgets WHERE conversation_id = ?",
        "records": "SELECT COUNT(*) FROM widget_records r JOIN widgets w ON w.id = r.widget_id"
        " WHERE w.conversation_id = ?",
        "sends": "SELECT COUNT(*) FROM widget_sends WHERE conversation_id = ?",
    }
    assert {k: await count(dev, q, source.conv["id"]) for k, q in tables.items()} == {
        "widgets": 2,
        "records": 1,
        "sends": 1,
    }
    assert await count(dev, "SELECT COUNT(*) FROM widget_refs WHERE widget_id = ?", widget_id) == 1
    gone = await dev.http.delete(f"/dev/conversations/{source.conv['id']}", headers=dev.admin)
    assert gone.status_code == 204
    assert {k: await count(dev, q, source.conv["id"]) for k, q in tables.items()} == {
        "widgets": 0,
        "records": 0,
        "sends": 0,
    }
    assert await count(dev, "SELECT COUNT(*) FROM widget_refs WHERE widget_id = ?", widget_id) == 0
    error(await source.read(widget_id), 404, "conversation_not_found")
    # In the other conversation the reference is gone and its card shows the widget deleted.
    assert await target.listed() == []
    (card,) = (await target.playground())["cards"]
    assert card == {**card, "deleted": True, "title": None}


# ---------------------------------------------------------------- over a real socket


async def test_widgets_over_a_real_socket(live: Dev) -> None:
    assert (await declare(live, [MENU])).status_code == 200
    s = Setup(live, await live.conversation())
    body = {"type": "menu", "title": "菜单", "idempotency_key": "c1"}
    created = await live.http.post(WIDGETS, headers=s.headers, json=body)
    assert created.status_code == 201
    assert (await live.http.post(WIDGETS, headers=s.headers, json=body)).status_code == 200
    widget_id = created.json()["id"]
    assert (await s.write(widget_id, "d1", {"name": "汤"}, expected_revision=0)).json() == {
        "revision": 1
    }
    error(
        await s.write(widget_id, "d1", {"name": "汤"}, expected_revision=0),
        409,
        "revision_conflict",
    )
    error(await s.write(widget_id, "d1", {"name": 1}), 400, "record_schema_mismatch")
    sent = await s.send(widget_id, "s1")
    assert sent.status_code == 202
    assert (await s.send(widget_id, "s1")).json() == sent.json()
    target = Setup(live, await live.conversation())
    await live.http.post(
        f"/dev/widgets/{widget_id}/forward",
        headers=live.admin,
        json={"conversation_id": target.conv["id"]},
    )
    error(
        await live.http.put(f"{WIDGETS}/{widget_id}", headers=target.headers, json={"title": "x"}),
        403,
        "widget_read_only",
    )
    assert (await target.read(widget_id)).json()["modules"]["dishes"]["records"][0]["data"] == {
        "name": "汤"
    }
    assert (await live.http.delete(f"{WIDGETS}/{widget_id}", headers=s.headers)).status_code == 204
    assert (await s.playground())["cards"][0]["deleted"] is True
