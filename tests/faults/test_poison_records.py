"""A stored record the readers cannot serve (an older version stored it, or it was
damaged) never makes a conversation unanswerable: the turns read answers 200 with the
bad steps redacted, and the buddy answers the next message — also after a restart."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.models.testing import TestModel
from buddy.testing.local import LocalPlatform, running_buddy

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
AUNT = buddy.load(REPO / "manifests" / "aunt-tu")


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def _poison(db: Path, conversation_id: str, how: str) -> None:
    """Rewrite the conversation's stored turn as an older version could have written it."""
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute(
            "SELECT record FROM turns WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        record = json.loads(raw)
        if how == "deep":  # accepted before the depth limit; pydantic stops at ~200
            record["steps"] = [
                {"type": "tool_call", "tool": "t", "call_id": "c1", "content": _deep(300)}
            ]
            text = json.dumps(record)
        elif how == "nan":  # json.dumps writes NaN, which JSON cannot carry back
            record["steps"] = [{"type": "tool_result", "call_id": "c1", "content": [float("nan")]}]
            text = json.dumps(record)
        elif how == "bad-step":
            record["steps"] = [{"type": "nonsense", "content": 1}, "not a step"]
            text = json.dumps(record)
        else:  # truncated JSON
            text = raw[: len(raw) // 2]
        conn.execute(
            "UPDATE turns SET record = ? WHERE conversation_id = ?", (text, conversation_id)
        )


@pytest.mark.parametrize("how", ["deep", "nan", "bad-step", "truncated"])
async def test_a_poisoned_record_keeps_the_conversation_answerable(
    tmp_path: Path, how: str
) -> None:
    db = tmp_path / "platform.db"
    async with LocalPlatform(str(db)) as platform:
        tokens = await platform.register("aunt-tu")
        conv = await platform.conversation("aunt-tu-dev", "private", ["小王"])
        model = TestModel(["第一句。", "第二句。"])
        async with running_buddy(platform, AUNT, model, tokens["dev_token"]):
            first = await platform.say(conv["id"], "你好")
            await platform.wait_acked("aunt-tu-dev", first)
        _poison(db, conv["id"], how)

        (turn,) = await platform.turns(conv["id"])  # 200, not 500
        assert all(step["redacted"] for step in turn["steps"])
        if how != "truncated":
            assert turn["user_text"] == "你好"

        # A rebuilt conversation (a new buddy process) reads the record and answers.
        async with running_buddy(platform, AUNT, model, tokens["dev_token"]):
            second = await platform.say(conv["id"], "还在吗")
            await platform.wait_acked("aunt-tu-dev", second)
    model.assert_complete()

    async with LocalPlatform(str(db)) as restarted:  # and after a platform restart
        said = [
            m["body"].get("text")
            for m in await restarted.transcript(conv["id"])
            if m["sender"] == "buddy"
        ]
        assert said == ["第一句。", "第二句。"]
        assert len(await restarted.turns(conv["id"])) == 2
