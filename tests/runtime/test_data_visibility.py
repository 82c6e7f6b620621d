"""User data is visible for one turn only — proven from what the platform stored.

After the model has seen user data in a turn: data-access results are stored as dataset
statuses only; tool arguments (even data the model copied into them), tool results, step
text and reasoning are redacted; the final reply keeps its text, not its reasoning;
memory writes and question cards are refused for the rest of the turn. Steps before the
read are stored as usual, and the next turn's history holds no data either.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import buddy
from buddy.testing import Reply, TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import REPO, grant_data

pytestmark = pytest.mark.anyio

CARDIO = buddy.load(REPO / "manifests" / "cardio")
SECRET_DATE = "2026-11-29-SECRETDAY"
SECRET_MINUTES = 987654
SECRETS = (SECRET_DATE, str(SECRET_MINUTES))


async def _granted_member(platform: LocalPlatform) -> tuple[str, dict[str, str], str]:
    tokens = await platform.register("cardio")
    conv = await platform.conversation("cardio-dev")
    member = conv["members"][0]["member_id"]
    async with running_buddy(platform, CARDIO, TestModel(["嗨"]), tokens["dev_token"]):
        event = await platform.say(conv["id"], "你好")  # the buddy uploads its declaration at start
        await platform.wait_acked("cardio-dev", event)
    items = [{"date": SECRET_DATE, "asleep_minutes": SECRET_MINUTES}]
    await grant_data(platform, "cardio-dev", member, "health.sleep", items)
    return conv["id"], tokens, member


async def test_nothing_after_the_read_is_stored(platform: LocalPlatform) -> None:
    conversation_id, tokens, _ = await _granted_member(platform)
    model = TestModel(
        [
            Reply(
                text="先记一下目标。",
                calls=[call("remember", {"topic": "目标", "text": "下月跑半马"})],
            ),
            Reply(
                reasoning="看看睡眠",
                calls=[call("data_access_query", {"datasets": ["health.sleep"]})],
            ),
            Reply(
                text=f"你睡了 {SECRET_MINUTES} 分钟",
                reasoning=f"数据是 {SECRET_DATE}",
                calls=[
                    call(
                        "remember",
                        {"topic": "睡眠", "text": f"{SECRET_DATE} 睡了 {SECRET_MINUTES}"},
                    ),
                    call(
                        "ask_question",
                        {"question": f"{SECRET_MINUTES} 分钟够吗？", "options": ["够", "不够"]},
                    ),
                    call("widget_create", {"type": "training-log", "title": f"睡眠 {SECRET_DATE}"}),
                ],
            ),
            Reply(
                text=f"昨晚睡得不错（{SECRET_MINUTES}），今天正常练。",
                reasoning=f"{SECRET_DATE} 很好",
            ),
        ]
    )
    async with running_buddy(platform, CARDIO, model, tokens["dev_token"]):
        event = await platform.say(conversation_id, "我昨晚睡得怎么样")
        await platform.wait_acked("cardio-dev", event)
    model.assert_complete()

    # Within the turn the model saw the data …
    seen = json.loads(model.requests[2].messages[-1].content)
    assert seen[0]["data"]["items"][0]["asleep_minutes"] == SECRET_MINUTES
    # … and its memory write and question card after the read were refused.
    refusals = {m.name: m for m in model.requests[3].messages[-3:]}
    assert refusals["remember"].is_error and "读过用户授权的数据" in refusals["remember"].content
    assert refusals["ask_question"].is_error
    # The contract refuses only memory and question cards; a widget write runs (its
    # arguments redacted in the record) unless the manifest says `after_read: strict`.
    assert not refusals["widget_create"].is_error

    turn = (await platform.turns(conversation_id))[-1]
    stored = json.dumps(turn, ensure_ascii=False)
    assert str(SECRET_MINUTES) in turn["reply"]  # the final reply keeps its text …
    for secret in SECRETS:
        assert secret not in stored.replace(turn["reply"], ""), secret  # … and nothing else has it
    steps = turn["steps"]
    # Before the read: stored as usual.
    assert steps[0] == {**steps[0], "type": "text", "content": "先记一下目标。"}
    assert steps[1]["content"] == {"topic": "目标", "text": "下月跑半马"}
    assert steps[2]["content"] == "记下了。"
    # The read itself: statuses only.
    read = next(s for s in steps if s["type"] == "tool_result" and s["tool"] == "data_access_query")
    assert read["content"] == {"health.sleep": "available"}
    after = steps[steps.index(read) + 1 :]
    assert after, "steps after the read are recorded (redacted), not dropped"
    for step in after[:-1]:
        assert step["redacted"] is True and step["content"] is None, step
    assert after[-1] == {**after[-1], "type": "text", "redacted": False}  # the final reply text
    assert turn["data_read"] is True

    memory = await platform.http.get(
        "/internal/v1/memory",
        headers={
            "Authorization": f"Bearer {tokens['dev_token']}",
            "X-Conversation-Id": conversation_id,
        },
    )
    assert [e["key"] for e in memory.json()["entries"]] == ["目标"]
    transcript = json.dumps(await platform.transcript(conversation_id), ensure_ascii=False)
    assert "够吗" not in transcript  # no question card went out

    # The next turn — in this process, and after a restart — sees statuses, not values.
    for round_ in range(2):
        follow = TestModel(["好。"])
        async with running_buddy(platform, CARDIO, follow, tokens["dev_token"]):
            event = await platform.say(conversation_id, f"谢谢{round_}")
            await platform.wait_acked("cardio-dev", event)
        history = json.dumps(
            [
                m.content + json.dumps([c.arguments for c in m.tool_calls])
                for m in follow.requests[0].messages[:-1]
            ],
            ensure_ascii=False,
        )
        assert "available" in history
        for secret in SECRETS:
            assert secret not in history.replace(turn["reply"], "")


PEEK_BUDDY = """\
name: peek
model: test
persona:
  prompt: 你好
tools:
  - name: peek
    description: 看一眼睡眠
    parameters: {type: object}
    handler: plugins.peek:peek
data:
  requirements:
    - {id: health.sleep, purpose: 看睡眠}
"""
PEEK_PLUGIN = """\
async def peek(conversation, params):
    (sleep,) = await conversation.data_access.query(["health.sleep"])
    return sleep
"""


async def test_a_custom_tool_that_reads_data_has_its_result_redacted(
    platform: LocalPlatform, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "buddy.yaml").write_text(PEEK_BUDDY, encoding="utf-8")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "peek.py").write_text(PEEK_PLUGIN)
    blueprint = buddy.load(tmp_path)
    tokens = await platform.register("peek")
    conv = await platform.conversation("peek-dev")
    member = conv["members"][0]["member_id"]
    model = TestModel([call("peek"), "看过了。", "嗯。"])
    async with running_buddy(platform, blueprint, model, tokens["dev_token"]):
        await platform.dev(
            "PUT",
            "/grants",
            json={
                "identity": "peek-dev",
                "member_id": member,
                "dataset": "health.sleep",
                "granted": True,
            },
        )
        await platform.dev(
            "PUT",
            "/data",
            json={"member_id": member, "dataset": "health.sleep", "items": [{"date": SECRET_DATE}]},
        )
        event = await platform.say(conv["id"], "看看")
        await platform.wait_acked("peek-dev", event)
        assert SECRET_DATE in model.requests[1].messages[-1].content  # the model saw it …
        event = await platform.say(conv["id"], "然后呢")
        await platform.wait_acked("peek-dev", event)
    turn = (await platform.turns(conv["id"]))[0]
    assert turn["data_read"] is True
    result = turn["steps"][1]
    assert result == {
        **result,
        "type": "tool_result",
        "tool": "peek",
        "redacted": True,
        "content": None,
    }
    assert SECRET_DATE not in json.dumps(await platform.turns(conv["id"]), ensure_ascii=False)
    assert SECRET_DATE not in json.dumps(
        [m.content for m in model.requests[2].messages], ensure_ascii=False
    )


async def test_statuses_survive_an_after_hook_that_replaces_the_result(
    platform: LocalPlatform,
) -> None:
    conversation_id, tokens, member = await _granted_member(platform)
    # cardio's trim_result after-hook shortens results over 4000 characters.
    items = [{"date": f"{SECRET_DATE}-{i}", "asleep_minutes": SECRET_MINUTES} for i in range(120)]
    await platform.dev(
        "PUT", "/data", json={"member_id": member, "dataset": "health.sleep", "items": items}
    )
    model = TestModel([call("data_access_query", {"datasets": ["health.sleep"]}), "看过了。"])
    async with running_buddy(platform, CARDIO, model, tokens["dev_token"]):
        event = await platform.say(conversation_id, "看看睡眠")
        await platform.wait_acked("cardio-dev", event)
    assert len(model.requests[1].messages[-1].content) <= 4000  # the hook did replace it
    turn = (await platform.turns(conversation_id))[-1]
    read = next(s for s in turn["steps"] if s["type"] == "tool_result")
    assert read["content"] == {"health.sleep": "available"}
