"""A custom tool's ``format`` is checked like the rest of its ``parameters``: a value that
is not of the format never reaches the handler, and the model reads why, in Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest

import buddy
from buddy.models.base import Message
from buddy.platform.client import HttpPlatformClient
from buddy.runtime.hooks import HookRunner
from buddy.runtime.loop import AgentLoop
from buddy.runtime.state import RuntimeConversation
from buddy.runtime.tools import build_tools
from buddy.testing import TestModel, call

pytestmark = pytest.mark.anyio

MANIFEST = """\
name: formats
model: test
persona:
  prompt: 你好
tools:
  - name: plan
    description: d
    parameters:
      type: object
      properties:
        day: {type: string, format: date}
        at: {type: string, format: date-time}
        clock: {type: string, format: time}
        mail: {type: string, format: email}
        site: {type: string, format: uri}
      additionalProperties: false
    handler: "plugins.f:plan"
"""
PLUGIN = """\
import json
from datetime import date, datetime, time
from pathlib import Path

def plan(conversation, params):
    if "day" in params:
        date.fromisoformat(params["day"])  # a traceback if 「明天」 got through
    if "at" in params:
        datetime.fromisoformat(params["at"])
    with Path(__file__).with_name("calls.jsonl").open("a", encoding="utf-8") as calls:
        calls.write(json.dumps(params, ensure_ascii=False) + "\\n")
    return "排好了"
"""


@pytest.fixture
def parts(tmp_path: Path) -> tuple[buddy.Blueprint, RuntimeConversation, Path]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "buddy.yaml").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "f.py").write_text(PLUGIN, encoding="utf-8")
    blueprint = buddy.load(tmp_path)
    conversation = RuntimeConversation(
        HttpPlatformClient("http://127.0.0.1:9", "t"), "c1", "private"
    )
    return blueprint, conversation, tmp_path / "plugins" / "calls.jsonl"


def _called(calls: Path) -> list[str]:
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


async def _results(
    blueprint: buddy.Blueprint, conversation: RuntimeConversation, *args: dict[str, str]
) -> list[Message]:
    model = TestModel([*(call("plan", a) for a in args), "done"])
    loop = AgentLoop(model, build_tools(blueprint), HookRunner(blueprint))
    await loop.run("sys", [], Message("user", "排一下"), conversation)
    model.assert_complete()
    return [m for m in model.requests[-1].messages if m.role == "tool"]


async def test_a_date_that_is_not_a_date_is_an_error_the_model_reads(
    parts: tuple[buddy.Blueprint, RuntimeConversation, Path],
) -> None:
    blueprint, conversation, calls = parts
    refused, taken = await _results(blueprint, conversation, {"day": "明天"}, {"day": "2026-12-03"})
    assert refused.is_error
    assert refused.content == '参数不符合要求：day: "明天" 不是 date 格式（如 2026-12-03）'
    assert not taken.is_error and taken.content == "排好了"
    assert _called(calls) == ['{"day": "2026-12-03"}']  # the handler saw only the good one


@pytest.mark.parametrize(
    ("field", "bad", "good", "said"),
    [
        (
            "at",
            "明天早上八点",
            "2026-12-03T08:00:00+08:00",
            "date-time 格式（如 2026-12-03T08:00:00+08:00）",
        ),
        ("at", "2026-12-03T08:00:00", "2026-12-03T08:00:00Z", "date-time 格式"),  # no offset
        ("at", "2026-02-30T08:00:00Z", "2026-12-03t08:00:00.5-05:00", "date-time 格式"),
        ("clock", "8点", "08:00:00+08:00", "time 格式（如 08:30:00+08:00）"),
        ("mail", "小明", "xm@example.com", "email 格式（如 name@example.com）"),
    ],
)
async def test_other_formats_are_checked_too(
    parts: tuple[buddy.Blueprint, RuntimeConversation, Path],
    field: str,
    bad: str,
    good: str,
    said: str,
) -> None:
    blueprint, conversation, calls = parts
    refused, taken = await _results(blueprint, conversation, {field: bad}, {field: good})
    assert refused.is_error and refused.content.startswith(
        f'参数不符合要求：{field}: "{bad}" 不是 {said}'
    )
    assert not taken.is_error
    assert len(_called(calls)) == 1


async def test_a_format_not_checked_passes_and_the_validator_is_built_once(
    parts: tuple[buddy.Blueprint, RuntimeConversation, Path],
) -> None:
    blueprint, _, _ = parts
    tool = build_tools(blueprint)["plan"]
    assert tool.validate({"site": "随便写"}) is None  # `uri` is not among the formats checked
    first = tool._validator
    assert tool.validate({"day": "明天"}) is not None
    assert tool._validator is first
