"""The dev platform's core: auth, identities, conversations, turns, the dev endpoints."""

from __future__ import annotations

import pytest

from tests.platform.conftest import Dev

pytestmark = pytest.mark.anyio


async def test_no_endpoint_answers_without_a_token(dev: Dev) -> None:
    conv = await dev.conversation()
    for method, path in [("GET", "/internal/v1/conversation"), ("GET", "/dev/clock")]:
        response = await dev.http.request(method, path, headers={"X-Conversation-Id": conv["id"]})
        assert response.status_code == 401
        assert response.json()["reason"]
    response = await dev.http.get("/dev/clock", headers={"Authorization": f"Bearer {dev.token}"})
    assert response.status_code == 401


async def test_dev_token_is_a_separate_identity(dev: Dev) -> None:
    prod = await dev.conversation()
    response = await dev.http.get(
        "/internal/v1/conversation", headers=dev.auth(prod["id"], dev=True)
    )
    assert response.status_code == 404
    mine = await dev.conversation(dev=True)
    response = await dev.http.get(
        "/internal/v1/conversation", headers=dev.auth(mine["id"], dev=True)
    )
    assert response.status_code == 200
    assert response.json()["kind"] == "private"


async def test_members_are_answered_in_the_order_given(dev: Dev) -> None:
    names = ["小王", "小李", "小张", "阿明"]
    conv = await dev.conversation("group", names)
    assert [m["name"] for m in conv["members"]] == names
    listed = await dev.http.get(
        "/dev/conversations", headers=dev.admin, params={"identity": "demo"}
    )
    assert [m["name"] for m in listed.json()[0]["members"]] == names
    info = await dev.http.get("/internal/v1/conversation", headers=dev.auth(conv["id"]))
    assert [m["name"] for m in info.json()["members"]] == names


async def test_user_message_becomes_an_event_and_a_turn_commits_once(dev: Dev) -> None:
    conv = await dev.conversation("group")
    speaker = conv["members"][1]["member_id"]
    sent = await dev.http.post(
        f"/dev/conversations/{conv['id']}/messages",
        headers=dev.admin,
        json={"text": "你好", "member_id": speaker},
    )
    assert sent.status_code == 201
    events = (
        await dev.http.get("/dev/events", headers=dev.admin, params={"identity": "demo"})
    ).json()
    (event,) = events
    assert event["payload"]["sender"]["member_id"] == speaker
    assert event["payload"]["text"] == "你好"
    body = {
        "event_id": event["id"],
        "reply": "你好呀",
        "steps": [{"type": "text", "content": "你好呀"}],
    }
    first = await dev.http.post(
        "/internal/v1/conversation/turns", headers=dev.auth(conv["id"]), json=body
    )
    again = await dev.http.post(
        "/internal/v1/conversation/turns", headers=dev.auth(conv["id"]), json=body
    )
    assert first.json()["status"] == "committed"
    assert again.json() == {**first.json(), "status": "duplicate"}
    transcript = (
        await dev.http.get(f"/dev/conversations/{conv['id']}/messages", headers=dev.admin)
    ).json()
    assert [(m["sender"], m["body"]["text"]) for m in transcript] == [
        ("user", "你好"),
        ("buddy", "你好呀"),
    ]
    turns = (
        await dev.http.get("/internal/v1/conversation/turns", headers=dev.auth(conv["id"]))
    ).json()
    assert turns[0]["user_text"] == "你好"
    assert turns[0]["steps"][0]["content"] == "你好呀"


async def test_group_messages_need_a_member(dev: Dev) -> None:
    conv = await dev.conversation("group")
    response = await dev.http.post(
        f"/dev/conversations/{conv['id']}/messages", headers=dev.admin, json={"text": "hi"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "member_required"


async def test_question_card_and_option_click(dev: Dev) -> None:
    conv = await dev.conversation()
    await dev.http.post(
        f"/dev/conversations/{conv['id']}/messages", headers=dev.admin, json={"text": "吃啥"}
    )
    (event,) = (
        await dev.http.get("/dev/events", headers=dev.admin, params={"identity": "demo"})
    ).json()
    card = {"question": "几个人吃？", "options": ["一个", "两个"]}
    committed = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers=dev.auth(conv["id"]),
        json={"event_id": event["id"], "question": card},
    )
    (message_id,) = committed.json()["message_ids"]
    bad = await dev.http.post(
        f"/dev/conversations/{conv['id']}/options",
        headers=dev.admin,
        json={"message_id": message_id, "option": "三个"},
    )
    assert bad.status_code == 400
    click = await dev.http.post(
        f"/dev/conversations/{conv['id']}/options",
        headers=dev.admin,
        json={"message_id": message_id, "option": "两个"},
    )
    assert click.status_code == 201
    events = (
        await dev.http.get("/dev/events", headers=dev.admin, params={"identity": "demo"})
    ).json()
    assert events[-1]["payload"]["text"] == "两个"
    assert events[-1]["payload"]["option_of"] == message_id


@pytest.mark.parametrize(
    ("options", "status"),
    [
        (["a", "b"], 200),
        (["a", "b", "c", "d"], 200),
        (["a"], 400),
        (["a", "b", "c", "d", "e"], 400),
        (["a", "a"], 400),
        (["x" * 30, "b"], 200),
        (["x" * 31, "b"], 400),
    ],
)
async def test_question_card_limits(dev: Dev, options: list[str], status: int) -> None:
    conv = await dev.conversation()
    await dev.http.post(
        f"/dev/conversations/{conv['id']}/messages", headers=dev.admin, json={"text": "?"}
    )
    (event,) = (
        await dev.http.get("/dev/events", headers=dev.admin, params={"identity": "demo"})
    ).json()
    response = await dev.http.post(
        "/internal/v1/conversation/turns",
        headers=dev.auth(conv["id"]),
        json={"event_id": event["id"], "question": {"question": "q", "options": options}},
    )
    assert response.status_code == status, response.text


async def test_summary_round_trip(dev: Dev) -> None:
    conv = await dev.conversation()
    headers = dev.auth(conv["id"])
    assert (
        await dev.http.get("/internal/v1/conversation/summary", headers=headers)
    ).status_code == 404
    put = await dev.http.put(
        "/internal/v1/conversation/summary",
        headers=headers,
        json={"text": "聊过做饭", "covers_until": 5.0},
    )
    assert put.status_code == 200
    got = await dev.http.get("/internal/v1/conversation/summary", headers=headers)
    assert got.json() == {"text": "聊过做饭", "covers_until": 5.0}


async def test_clock_advances(dev: Dev) -> None:
    before = (await dev.http.get("/dev/clock", headers=dev.admin)).json()
    after = (
        await dev.http.post("/dev/clock", headers=dev.admin, json={"advance_seconds": 3600})
    ).json()
    assert after["offset"] == before["offset"] + 3600
    assert (
        await dev.http.post("/dev/clock", headers=dev.admin, json={"advance_seconds": -1})
    ).status_code == 400


async def test_text_that_is_not_unicode_is_refused_not_a_server_error(dev: Dev) -> None:
    conv = await dev.conversation()
    response = await dev.http.post(
        f"/dev/conversations/{conv['id']}/messages",
        headers={**dev.admin, "Content-Type": "application/json"},
        content=b'{"text": "bad \\ud800 text"}',
    )
    assert response.status_code == 400
    assert response.json()["reason"] == "text is not valid UTF-8: it contains an unpaired surrogate"
