"""A widget record that breaks its module's schema: the model gets the field and the rule
in Chinese — checked before the request when the widget's type is known in this
conversation, else after the platform's 400 — while a real platform failure keeps the
contract's generic 「平台请求失败（HTTP …）」."""

from __future__ import annotations

from typing import Any

import pytest

import buddy
from buddy.capabilities.widgets.records import record_problems
from buddy.errors import PlatformError
from buddy.testing import TestModel, call
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

AUNT = buddy.load(REPO / "manifests" / "aunt-tu")
DISHES = next(m.record for t in AUNT.sections["widgets"] for m in t.modules if m.name == "dishes")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"name": "红烧肉", "day": 1}, "`data` 缺少必填字段 `meal`"),
        ({"name": "红烧肉", "day": "一", "meal": "晚"}, '`data.day` 应为整数，收到 "一"'),
        ({"name": "红烧肉", "day": 9, "meal": "晚"}, "`data.day` 不能大于 7"),
        ({"name": "红烧肉", "day": 1, "meal": "宵夜"}, '`data.meal` 只能是 "早"、"午"、"晚" 之一'),
        ({"name": "", "day": 1, "meal": "晚"}, "`data.name` 至少 1 个字"),
        (
            {"name": "鱼", "day": 1, "meal": "晚", "spicy": True},
            "`data` 有不认识的字段 `spicy`（可用：day、meal、name、notes）",
        ),
    ],
)
def test_each_rule_is_said_in_chinese_with_its_field(data: dict[str, Any], said: str) -> None:
    assert record_problems(DISHES, data) == [said]


def test_a_valid_record_has_no_problems_and_at_most_three_are_named() -> None:
    assert record_problems(DISHES, {"name": "鱼", "day": 1, "meal": "晚"}) == []
    assert len(record_problems(DISHES, {"day": "x", "meal": 1, "x": 1, "notes": 5})) == 3


def _write(widget: str, data: dict[str, Any]) -> Any:
    return call(
        "widget_write_record",
        {"widget_id": widget, "module": "dishes", "record_id": "d1", "data": data},
    )


async def test_a_record_is_refused_with_its_reason_before_any_request() -> None:
    async with buddy.Agent(AUNT, TestModel([])) as agent:
        created = await agent.conversation.widget.create("menu", "菜单")
        widget = created["id"]
        calls = agent.client.request
        seen: list[str] = []

        async def counted(method: str, path: str, **kwargs: Any) -> Any:
            seen.append(f"{method} {path}")
            return await calls(method, path, **kwargs)

        agent.client.request = counted  # type: ignore[method-assign]
        with pytest.raises(PlatformError) as refused:
            await agent.conversation.widget.write_record(
                widget, "dishes", "d1", {"name": "红烧肉", "day": 9, "meal": "晚"}
            )
        assert (refused.value.status, refused.value.code) == (400, "record_schema_mismatch")
        assert refused.value.reason == (
            f"记录不符合小挂件 {widget}（menu）的 dishes 模块：`data.day` 不能大于 7。改好 data 再调。"
        )
        assert seen == []  # refused here: the platform was not asked


async def test_a_widget_of_an_earlier_process_is_explained_after_the_platforms_400() -> None:
    async with buddy.Agent(AUNT, TestModel([])) as agent:
        widget = (await agent.conversation.widget.create("menu", "菜单"))["id"]
        agent.conversation.widget._types = None  # as if created by another process
        with pytest.raises(PlatformError) as refused:
            await agent.conversation.widget.write_record(
                widget, "dishes", "d1", {"name": "红烧肉", "day": 1}
            )
        assert (refused.value.status, refused.value.code) == (400, "record_schema_mismatch")
        assert "`data` 缺少必填字段 `meal`" in refused.value.reason


async def test_code_written_to_the_contract_catches_a_bad_record_as_the_platforms_400() -> None:
    async with buddy.Agent(AUNT, TestModel([])) as agent:
        widget = (await agent.conversation.widget.create("menu", "菜单"))["id"]
        caught: PlatformError | None = None
        try:
            await agent.conversation.widget.write_record(
                widget, "dishes", "d1", {"name": "红烧肉", "day": 9, "meal": "晚"}
            )
        except PlatformError as exc:
            if exc.status != 400:
                raise
            caught = exc
        assert caught is not None and caught.code == "record_schema_mismatch"
        assert "`data.day` 不能大于 7" in caught.reason
        assert "`data.day` 不能大于 7" in str(caught)


async def test_a_tool_call_gets_the_argument_error_and_a_platform_failure_stays_generic() -> None:
    async with buddy.Agent(AUNT, TestModel([])) as agent:
        widget = (await agent.conversation.widget.create("menu", "菜单"))["id"]
        model = TestModel(
            [
                _write(widget, {"name": "红烧肉", "day": 1, "meal": "宵夜"}),
                _write("w_missing", {"name": "红烧肉", "day": 1, "meal": "晚"}),
                "好。",
            ]
        )
        agent.loop.model = model
        outcome = await agent.run("写进菜单")
        results = [s for s in outcome.steps if s["type"] == "tool_result"]
        assert results[0]["is_error"] and '`data.meal` 只能是 "早"、"午"、"晚" 之一' in str(
            results[0]["content"]
        )
        assert "平台请求失败" not in str(results[0]["content"])  # the reason is ours: shown
        assert results[1]["is_error"] and str(results[1]["content"]).startswith(
            "平台请求失败（HTTP 404）"
        )
