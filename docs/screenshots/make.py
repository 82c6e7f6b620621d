"""Make the playground screenshots in this folder (docs/playground.md shows them).

    .venv/bin/python docs/screenshots/make.py             # all of them
    .venv/bin/python docs/screenshots/make.py companion   # the screens named

Runs a ``buddy dev`` session in this process over a temporary copy of the example buddies,
with a small scripted model (so a turn can call several tools, as a real model would), and
drives the page with Playwright in Debian's Chromium (``/usr/bin/chromium``). Chinese text
needs a CJK font on the machine (Debian: ``apt-get install fonts-wqy-microhei``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from playwright.async_api import Page, async_playwright, expect

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "framework"))

from buddy.compile.blueprint import Blueprint  # noqa: E402
from buddy.models import registry  # noqa: E402
from buddy.models.base import Model, ModelRequest, ModelResponse  # noqa: E402
from buddy.models.testing import OfflineModel, Reply, call  # noqa: E402
from buddy.playground.session import DevSession  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 860}

# What the scripted model does for a user message (one Reply per model step), or for a
# proactive turn by the subscription's title; anything else gets the offline model.
SCRIPTS: Mapping[str, Sequence[Reply]] = {
    "帮我排两天菜单，家里三口人，口味清淡": [
        Reply(
            calls=[
                call("plan_menu", {"people": 3, "days": 2, "taste": "清淡"}),
                call("resource_list", {}),
            ]
        ),
        Reply(calls=[call("remember", {"topic": "口味", "text": "家里三口人，口味清淡"})]),
        Reply(
            text="好嘞，两天的清淡菜单排好了：第一天番茄炒蛋配清炒时蔬，第二天清蒸鱼。口味我也记下了。"
        ),
    ],
    "公司年会 40 个人，帮我排一天菜单": [
        Reply(calls=[call("plan_menu", {"people": 40, "days": 1})]),
        Reply(text="四十个人是酒席的规模啦，建议订餐馆或者请厨师上门，我帮你列个点菜思路？"),
    ],
    "想学道拿手菜": [
        Reply(
            calls=[
                call(
                    "ask_question",
                    {"question": "想先学哪一道？", "options": ["番茄炒蛋", "红烧肉", "清蒸鱼"]},
                )
            ]
        ),
    ],
    "把这两天的菜做成菜单发我": [
        Reply(calls=[call("widget_create", {"type": "menu", "title": "这两天的菜单"})]),
    ],
    "看看我这周睡得怎么样": [
        Reply(calls=[call("data_access_query", {"datasets": ["health.sleep"]})]),
        Reply(calls=[call("proactive_list", {})]),
        Reply(
            text="这周你平均每晚睡了六个多小时，周三只睡了五个钟头。今天别上强度，轻松跑 5 公里就行。"
        ),
    ],
    "帮我开个睡眠提醒": [
        Reply(calls=[call("proactive_subscribe", {"key": "sleep-check"})]),
        Reply(text="开好了：睡眠数据一更新我就看一眼，睡得不好就提醒你降强度。"),
    ],
    "你好": [Reply(text="哟，来了？今天练什么，还是又想偷懒？")],
    "改坏了还在吗？": [Reply(text="在呢，还是刚才那个我：你改坏的那版没上线。")],
    "[授权卡结果]": [Reply(text="收到。我只在你问的时候看睡眠数据，看完不记下来。")],
    "跑后小结": [Reply(text="刚跑完？配速比上周稳多了，最后一公里别老冲刺，心率顶得太高。")],
    "睡眠提醒": [Reply(text="[[skip]]")],
}


class ScriptedModel(Model):
    """Follows :data:`SCRIPTS`, else behaves like the offline model (``/call`` works)."""

    name = "test:scripted"

    def __init__(self) -> None:
        self.offline = OfflineModel()
        self.widget_step = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        messages = request.messages
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        text = messages[last_user].content
        step = sum(1 for m in messages[last_user + 1 :] if m.role == "assistant")
        script = SCRIPTS.get(text)
        if script is None and text.startswith("[授权卡结果]"):
            script = SCRIPTS["[授权卡结果]"]
        if script is None and text.startswith("[主动服务触发]"):
            title = text.removeprefix("[主动服务触发] ").split("：", 1)[0]
            script = SCRIPTS.get(title)
        if script is None or step >= len(script):
            if script is not None:
                return ModelResponse(text="好了。", model=self.name)
            return await self.offline.request(request)
        reply = script[step]
        return ModelResponse(
            text=reply.text,
            tool_calls=tuple(reply.calls),
            finish_reason="tool_calls" if reply.calls else "stop",
            model=self.name,
        )


def scripted(_: Blueprint) -> Model:
    return ScriptedModel()


# What the companion layer's extractor answers for a user message of xiaoman (the facts
# its patterns do not take, and how the message felt); anything else: nothing.
APPRAISALS: Mapping[str, object] = {
    "叫我小鱼": {"facts": [], "appraisal": {"care": 0.2}},
    "我不吃香菜": {
        "facts": [
            {
                "relation": "preference",
                "slots": {"subject": "user", "object": "香菜", "stance": "不喜欢"},
            }
        ]
    },
    "你烦不烦啊，别管我了": {"facts": [], "appraisal": {"offence": 0.8}},
    "对不起，昨天是我太冲了，加班加到崩溃": {
        "facts": [],
        "appraisal": {"apology": 0.9, "care": 0.3, "explained": True},
    },
    "上次那顿火锅算我欠你的": {
        "facts": [
            {
                "relation": "debt",
                "slots": {
                    "debtor": "user",
                    "creditor": "buddy",
                    "item": "火锅",
                    "quantity": 1,
                    "unit": "顿",
                },
            }
        ]
    },
}


class ScriptedExtractor(Model):
    """The companion layer's extractor for the screenshots: follows :data:`APPRAISALS`."""

    name = "test:extractor"

    async def request(self, request: ModelRequest) -> ModelResponse:
        said = APPRAISALS.get(request.messages[-1].content, {"facts": []})
        return ModelResponse(text=json.dumps(said, ensure_ascii=False), model=self.name)


def _extractor(*_: object, **__: object) -> Model:
    return ScriptedExtractor()


async def send(page: Page, text: str) -> None:
    count = await page.locator(".msg").count()
    await page.fill("#composer-text", text)
    await page.press("#composer-text", "Enter")
    await expect(page.locator(".msg")).not_to_have_count(count)
    await page.wait_for_timeout(400)
    await expect(page.locator(".turn.pending")).to_have_count(0)


async def new_conversation(page: Page, buddy: str, members: str = "小王") -> None:
    await page.select_option("#buddy-select", buddy)
    await expect(page.locator("#buddy-model")).to_contain_text(f"{buddy}-dev")
    await page.fill("#new-members", members)
    count = await page.locator("#conversations li[data-id]").count()
    await page.click("#new-create")
    await expect(page.locator("#conversations li[data-id]")).to_have_count(count + 1)


async def shot(page: Page, name: str) -> None:
    await page.wait_for_timeout(700)
    await page.evaluate("document.querySelectorAll('.toast').forEach((t) => t.remove())")
    path = HERE / f"{name}.png"
    await page.screenshot(path=str(path))
    print(f"{path.relative_to(REPO)}: {path.stat().st_size // 1024} KB")


def _until_morning(now: float) -> float:
    """Seconds until the next 09:00 in Asia/Shanghai (out of every example's quiet hours)."""
    zone = ZoneInfo("Asia/Shanghai")
    local = datetime.fromtimestamp(now, zone)
    morning = local.replace(hour=9, minute=0, second=0, microsecond=0)
    if morning <= local:
        morning += timedelta(days=1)
    return morning.timestamp() - now


async def main(only: Sequence[str] = ()) -> None:
    """Make every screenshot, or those of the screens named in ``only``."""
    with tempfile.TemporaryDirectory(prefix="buddy-shots-") as scratch:
        root = Path(scratch)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "tests")
        for name in ("aunt-tu", "cardio", "xiaoman", "personas"):
            shutil.copytree(REPO / "manifests" / name, root / "manifests" / name, ignore=ignore)
        shutil.copytree(REPO / "plugins", root / "plugins", ignore=ignore)
        (root / "pyproject.toml").write_text("")
        os.chdir(root)  # paths on the page are shown relative to here
        manifests = [Path(f"manifests/{n}/buddy.yaml") for n in ("aunt-tu", "cardio", "xiaoman")]
        # The companion layer makes its extractor from the manifest's model (it is never
        # the turn's model): here, the scripted one above.
        registry.resolve = _extractor
        async with (
            DevSession(manifests, model_factory=scripted, out=sys.stdout) as session,
            async_playwright() as playwright,
        ):
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = await browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            await page.goto(session.playground_url)
            await expect(page.locator("#buddy-status")).to_have_attribute("data-status", "running")
            for screen in (chat, question_and_widgets, data, proactive, companion):
                if not only or screen.__name__ in only:
                    await screen(page)
            if not only or "error" in only:
                await error(page, root)
            await browser.close()


async def chat(page: Page) -> None:
    """A chat with every tool step: labels, arguments, results, a hook's denial; memory."""
    await new_conversation(page, "aunt-tu")
    await send(page, "帮我排两天菜单，家里三口人，口味清淡")
    await send(page, "公司年会 40 个人，帮我排一天菜单")
    await page.click(".tab[data-tab=memory]")
    await shot(page, "chat")


async def question_and_widgets(page: Page) -> None:
    """A question card; a widget rendered from its schema, its records, the card sent."""
    await new_conversation(page, "aunt-tu")
    await send(page, "想学道拿手菜")
    await page.click(".tab[data-tab=buddy]")
    await shot(page, "question")

    await send(page, "把这两天的菜做成菜单发我")
    text = await page.locator(".step[data-tool=widget_create]").last.inner_text()
    found = re.search(r"w_[0-9a-f]+", text)
    assert found is not None, text
    widget = found.group(0)
    dishes = [
        ("d1", {"name": "番茄炒蛋", "day": 1, "meal": "午"}),
        ("d2", {"name": "清炒时蔬", "day": 1, "meal": "晚", "notes": "少放盐"}),
        ("d3", {"name": "清蒸鱼", "day": 2, "meal": "晚"}),
    ]
    for record, data in dishes:
        arguments = {"widget_id": widget, "module": "dishes", "record_id": record, "data": data}
        await send(page, f"/call widget_write_record {json.dumps(arguments, ensure_ascii=False)}")
    shopping = {"item": "鲈鱼", "amount": "一条", "bought": False}
    arguments = {"widget_id": widget, "module": "shopping", "record_id": "s1", "data": shopping}
    await send(page, f"/call widget_write_record {json.dumps(arguments, ensure_ascii=False)}")
    await send(page, f'/call widget_send {{"widget_id": "{widget}"}}')
    await page.click(".tab[data-tab=widgets]")
    await shot(page, "widgets")


async def data(page: Page) -> None:
    """A data card granted, then a turn that read data: only statuses and redactions kept."""
    await new_conversation(page, "cardio")
    request = {"kind": "healthkit", "reason": "看看你最近睡得怎么样", "datasets": ["health.sleep"]}
    await send(page, f"/call data_access_request {json.dumps(request, ensure_ascii=False)}")
    await page.locator(".consent .grant").last.click()
    await expect(page.locator(".consent").last).to_have_attribute("data-status", "granted")
    await page.wait_for_timeout(600)
    await send(page, "看看我这周睡得怎么样")
    await page.click(".tab[data-tab=data]")
    await page.select_option("#data-dataset", "health.sleep")
    await shot(page, "data")


async def proactive(page: Page) -> None:
    """Subscriptions, a trigger that speaks, a run its cooldown skipped, a turn that said
    nothing, and the clock."""
    await new_conversation(page, "cardio")
    await send(page, "你好")
    await send(page, "帮我开个睡眠提醒")
    await page.click(".tab[data-tab=proactive]")
    clock = await page.evaluate(
        "async () => (await (await fetch('/dev/clock', {headers: {Authorization: "
        "'Bearer ' + S.token}})).json()).time"
    )
    await page.fill("#clock-minutes", str(round(_until_morning(float(clock)) / 60)))
    await page.click("text=min →")
    await page.wait_for_timeout(500)
    await page.select_option("#trigger-type", "workout.completed")
    await page.click("#trigger-fire")
    await expect(page.locator(".turn.proactive")).to_have_count(1)
    await page.wait_for_timeout(600)
    await page.click("#trigger-fire")
    await expect(page.locator(".run-line.skipped")).to_have_count(1)
    await page.select_option("#trigger-type", "data.updated")
    await page.select_option("#trigger-dataset", "health.sleep")
    await page.click("#trigger-fire")
    await expect(page.locator(".turn.proactive")).to_have_count(2)
    await shot(page, "proactive")


async def advance(page: Page, seconds: float) -> None:
    await page.evaluate(
        "async (s) => fetch('/dev/clock', {method: 'POST', headers: {Authorization: "
        "'Bearer ' + S.token, 'Content-Type': 'application/json'}, "
        "body: JSON.stringify({advance_seconds: s})})",
        seconds,
    )
    await page.wait_for_timeout(300)


async def companion(page: Page) -> None:
    """The companion layer: the ledger (a kept fact, one awaiting confirmation), the
    character's state over a quarrel and its making up, and each turn's context."""
    await new_conversation(page, "xiaoman")
    await page.click(".tab[data-tab=companion]")
    await send(page, "叫我小鱼")
    await send(page, "我不吃香菜")
    await advance(page, 3 * 3600)
    await send(page, "你烦不烦啊，别管我了")
    await advance(page, 8 * 3600)
    await send(page, "对不起，昨天是我太冲了，加班加到崩溃")
    await advance(page, 2 * 3600)
    await send(page, "上次那顿火锅算我欠你的")
    await expect(page.locator(".fact[data-relation=debt]")).to_have_count(1)
    await expect(page.locator(".legend")).to_contain_text("5 messages felt")
    await page.set_viewport_size({"width": VIEWPORT["width"], "height": 1320})  # the whole tab
    await shot(page, "companion")
    await page.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]


async def error(page: Page, root: Path) -> None:
    """An invalid edit: located problems, and the last good version still answering."""
    await new_conversation(page, "aunt-tu")
    manifest = root / "manifests" / "aunt-tu" / "buddy.yaml"
    text = manifest.read_text(encoding="utf-8")
    broken = text.replace("title: 小涂阿姨", "titel: 小涂阿姨").replace(
        "  - resource_read\n", "  - resource_reed\n"
    )
    manifest.write_text(broken, encoding="utf-8")
    await expect(page.locator("#problems")).to_be_visible()
    await send(page, "改坏了还在吗？")
    await page.click(".tab[data-tab=buddy]")
    await shot(page, "error")
    manifest.write_text(text, encoding="utf-8")
    await expect(page.locator("#problems")).to_be_hidden()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
