"""``buddy dev`` and its playground, driven in a real browser.

One ``buddy dev`` process (the real command, ``--model offline``) runs copies of the two
example buddies for the whole module; Playwright drives Debian's Chromium
(``/usr/bin/chromium``, which ``.ci/run`` installs) against its page. Each test opens its
own conversation, so the tests do not depend on each other's order; the two reload tests
edit the copy of aunt-tu and put it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from buddy.compile.compiler import load
from buddy.compile.persona import BUILT_IN_PACK
from buddy.compile.render import view
from buddy.playground.session import DevSession
from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

NO_CHROMIUM = (
    "Debian's chromium is not installed at /usr/bin/chromium "
    "(.ci/run installs it: apt-get install chromium)"
)

expect.set_options(timeout=10_000)


# ------------------------------------------------------------------ the buddy dev process


@dataclass
class Dev:
    """A running ``buddy dev`` and everything it printed."""

    process: subprocess.Popen[str]
    root: Path
    url: str = ""
    lines: list[str] = field(default_factory=list)

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_output(self, text: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not printed within {timeout}s:\n{self.output()}")

    def lines_after(self, mark: int) -> str:
        return "\n".join(self.lines[mark:])


def _copy_examples(root: Path) -> None:
    """aunt-tu, cardio, xiaoman, the shared personas (copies of the ones buddy ships: a
    project's own win over those) and the plugins, as a project of their own."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("aunt-tu", "cardio", "xiaoman"):
        shutil.copytree(REPO / "manifests" / name, root / "manifests" / name, ignore=ignore)
    shutil.copytree(BUILT_IN_PACK, root / "manifests" / "personas", ignore=ignore)
    shutil.copytree(REPO / "plugins", root / "plugins", ignore=ignore)
    (root / "pyproject.toml").write_text("")


@contextlib.contextmanager
def running_dev(
    arguments: list[str], cwd: Path, env: dict[str, str] | None = None
) -> Iterator[Dev]:
    """``buddy dev ARGUMENTS --port 0`` running in ``cwd``, stopped with Ctrl-C at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "buddy", "dev", *arguments, "--port", "0"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**(env or os.environ), "PYTHONUNBUFFERED": "1"},
    )
    session = Dev(process, cwd)

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            session.lines.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        session.wait_for_output("playground on ", timeout=30)
        found = re.search(r"playground on (\S+)", session.output())
        assert found is not None
        session.url = found.group(1)
        yield session
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)
        if process.stdout is not None:
            process.stdout.close()
    assert process.returncode == 0, session.output()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    root = tmp_path_factory.mktemp("playground")
    _copy_examples(root)
    with running_dev(
        ["manifests/aunt-tu", "manifests/cardio", "manifests/xiaoman", "--model", "offline"],
        root,
    ) as session:
        yield session


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(NO_CHROMIUM)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, dev: Dev) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(dev.url)
    expect(page.locator("#buddy-status")).to_have_attribute("data-status", "running")
    yield page
    context.close()
    assert errors == [], errors


# ------------------------------------------------------------------ acting as a person


def new_conversation(page: Page, buddy: str, kind: str = "private", members: str = "小王") -> str:
    page.select_option("#buddy-select", buddy)
    expect(page.locator("#buddy-model")).to_contain_text(f"{buddy}-dev")
    page.check(f"#new-conv input[value={kind}]")
    page.fill("#new-members", members)
    before = page.locator("#conversations li[data-id]").count()
    page.click("#new-create")
    expect(page.locator("#conversations li[data-id]")).to_have_count(before + 1)
    active = page.locator("#conversations li.active")
    expect(active).to_have_attribute("data-kind", kind)
    conversation = active.get_attribute("data-id")
    assert conversation is not None
    return conversation


def send(page: Page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def call(page: Page, tool: str, arguments: Mapping[str, object]) -> None:
    send(page, f"/call {tool} {json.dumps(arguments, ensure_ascii=False)}")


def last_reply(page: Page) -> str:
    return page.locator(".msg.buddy").last.inner_text()


# ------------------------------------------------------------------ the tests


def test_validate_does_not_import_the_playground() -> None:
    code = (
        "import sys\nfrom buddy.cli.main import main\n"
        "main(['validate', 'manifests/aunt-tu'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('buddy.playground')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_token_is_given_only_to_loopback_host_names(dev: Dev) -> None:
    with urllib.request.urlopen(f"{dev.url}api/config") as response:
        assert json.load(response)["admin_token"].startswith("adm_")
    rebinding = urllib.request.Request(f"{dev.url}api/config", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebinding)
    assert refused.value.code == 403
    refused.value.close()
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(f"{dev.url}api/state")
    assert anonymous.value.code == 401
    anonymous.value.close()


def test_each_capabilitys_script_is_served_and_nothing_else_of_its_package(dev: Dev) -> None:
    with urllib.request.urlopen(f"{dev.url}api/config") as response:
        parts = json.load(response)["parts"]
    assert parts == [
        f"/playground/parts/{n}.js" for n in ("memory", "proactive", "data", "widgets")
    ]
    root = dev.url.removesuffix("playground/")
    with urllib.request.urlopen(f"{root}playground/parts/widgets.js") as response:
        assert response.headers["Content-Type"].startswith("text/javascript")
        assert "window.playground.panel(" in response.read().decode()
    for name in ("questions", "widgets.py", "..%2Fwidgets%2Fplatform"):
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{root}playground/parts/{name}.js")
        assert missing.value.code == 404, name
        missing.value.close()


def test_chat_shows_replies_and_every_tool_step(page: Page) -> None:
    new_conversation(page, "aunt-tu")
    send(page, "你好")
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：你好")
    expect(page.locator(".msg.buddy .who").last).to_have_text("小涂阿姨")

    call(page, "resource_list", {})
    step = page.locator(".step[data-tool=resource_list]")
    expect(step).to_contain_text("正在翻资料")  # the tool's label
    expect(step).to_contain_text("recipes/fanqie-chaodan.md")  # its result

    call(page, "plan_menu", {"people": 30, "days": 1})
    denied = page.locator(".step.denied[data-tool=plan_menu]")
    expect(denied).to_contain_text("正在排菜单")
    expect(denied).to_contain_text("denied by a hook")
    expect(denied).to_contain_text('{"people":30,"days":1}')
    expect(denied).to_contain_text("摆酒席")


def test_clicking_a_question_option_sends_it(page: Page) -> None:
    new_conversation(page, "aunt-tu")
    call(page, "ask_question", {"question": "几个人吃？", "options": ["一个人", "两个人"]})
    card = page.locator(".question").last
    expect(card).to_contain_text("几个人吃？")
    card.locator(".option", has_text="两个人").click()
    expect(page.locator(".msg.user").last).to_contain_text("clicked an option")
    expect(page.locator(".msg.user").last).to_contain_text("两个人")
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：两个人")
    expect(card.locator(".option.chosen")).to_have_text("两个人")
    expect(card.locator(".option").first).to_be_disabled()


def test_a_recorded_playground_conversation_replays_identically(page: Page, dev: Dev) -> None:
    new_conversation(page, "xiaoman")
    send(page, "叫我小鱼")
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：叫我小鱼")
    call(page, "ask_question", {"question": "晚饭吃了吗", "options": ["吃了", "没吃"]})
    page.locator(".question").last.locator(".option", has_text="吃了").click()
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：吃了")

    mark = len(dev.lines)
    page.click("#save-scenario")
    saved = page.locator("#saved-scenario")
    expect(saved).to_have_text(re.compile(r"^manifests/xiaoman/tests/recorded-[-0-9a-f]+\.yaml$"))
    path = dev.root / saved.inner_text()
    text = path.read_text(encoding="utf-8")
    assert "- user: 叫我小鱼" in text and "- click: 吃了" in text
    assert "facts: [{ relation: nickname, slots: { subject: user }, value: 小鱼 }]" in text
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "test", str(path)],
        cwd=dev.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("1 passed, 0 failed"), result.stdout
    dev.wait_for_output("saved as manifests/xiaoman/tests/recorded-")
    assert "reloaded" not in dev.lines_after(mark)  # a scenario file changes nothing it runs

    # saving again: the page asks before it overwrites the file
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.click("#save-scenario")
    expect(saved).to_have_text(saved.inner_text())
    deadline = time.monotonic() + 10
    while not asked and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert asked and "exists" in asked[0]


def test_granting_a_data_card_and_the_redacted_record(page: Page) -> None:
    new_conversation(page, "cardio")
    call(
        page,
        "data_access_request",
        {"kind": "healthkit", "reason": "看看你最近睡得怎么样", "datasets": ["health.sleep"]},
    )
    card = page.locator(".consent").last
    expect(card).to_have_attribute("data-status", "pending")
    expect(card).to_contain_text("看看你最近睡得怎么样")
    card.locator(".grant").click()
    expect(card).to_have_attribute("data-status", "granted")
    expect(page.locator(".turn").last).to_contain_text("consent granted · healthkit")
    expect(page.locator(".msg.buddy").last).to_contain_text("用户同意了 healthkit 授权")

    call(page, "data_access_query", {"datasets": ["health.sleep"]})
    step = page.locator(".step[data-tool=data_access_query]").last
    expect(step).to_contain_text('{"health.sleep":"available"}')
    expect(step).to_contain_text("only dataset statuses kept")
    expect(page.locator(".turn-head .tag.data").last).to_have_text("read user data")
    # The model saw the values (the offline model echoes them); the record did not keep them.
    expect(page.locator(".msg.buddy").last).to_contain_text("asleep_minutes")

    page.click(".tab[data-tab=data]")
    expect(page.locator("#grants tr[data-dataset='health.sleep']")).to_have_attribute(
        "data-granted", "true"
    )


def test_a_location_card_is_answered_and_read_once(page: Page) -> None:
    new_conversation(page, "cardio")
    call(page, "data_access_request", {"kind": "location", "reason": "看看附近有没有跑道"})
    card = page.locator(".consent").last
    expect(card).to_contain_text("data access · location")
    card.locator(".grant", has_text="Share location").click()
    expect(card).to_have_attribute("data-status", "granted")
    expect(page.locator(".turn").last).to_contain_text("consent granted · location")
    request = card.get_attribute("data-request")
    call(page, "data_access_read_result", {"request_id": request})
    step = page.locator(".step[data-tool=data_access_read_result]").last
    expect(step).to_contain_text('{"result":"available"}')
    expect(step).to_contain_text("only dataset statuses kept")
    expect(page.locator(".msg.buddy").last).to_contain_text("latitude")


def test_a_widget_is_rendered_from_its_schema_with_records_and_cards(page: Page) -> None:
    new_conversation(page, "aunt-tu")
    call(page, "widget_create", {"type": "menu", "title": "下周菜单"})
    created = page.locator(".step[data-tool=widget_create]")
    expect(created).to_contain_text("w_")
    found = re.search(r"w_[0-9a-f]+", created.inner_text())
    assert found is not None
    widget = found.group(0)
    dish = {"name": "红烧肉", "day": 1, "meal": "晚"}
    record = {"widget_id": widget, "module": "dishes", "record_id": "d1", "data": dish}
    call(page, "widget_write_record", record)
    expect(page.locator(".step[data-tool=widget_write_record]")).to_contain_text("revision")
    call(page, "widget_send", {"widget_id": widget})
    expect(page.locator(f".widget-card[data-widget={widget}]")).to_contain_text("下周菜单")

    page.click(".tab[data-tab=widgets]")
    panel = page.locator(f".widget[data-id={widget}]")
    expect(panel).to_contain_text("下周菜单")
    expect(panel).to_contain_text("菜单 · ")  # the type's title from schema.json
    dishes = panel.locator(".module[data-module=dishes]")
    expect(dishes).to_contain_text("每日菜品")  # the module's title
    expect(dishes.locator("thead")).to_contain_text("name*")  # columns from the record schema
    expect(dishes.locator("thead")).to_contain_text("notes")
    expect(dishes.locator("tr[data-record=d1]")).to_contain_text("红烧肉")
    expect(panel.locator(".module[data-module=shopping]")).to_contain_text("no records")
    expect(page.locator(f".sent-card[data-widget={widget}]")).to_contain_text("下周菜单")


def test_memory_can_be_inspected_and_edited(page: Page) -> None:
    new_conversation(page, "aunt-tu")
    call(page, "remember", {"topic": "口味", "text": "家里人口味清淡"})
    expect(page.locator(".step[data-tool=remember]")).to_contain_text("记下了：口味")
    page.click(".tab[data-tab=memory]")
    entry = page.locator(".mem-entry[data-key='口味']")
    expect(entry.locator("textarea")).to_have_value("家里人口味清淡")
    entry.locator("textarea").fill("不吃辣")
    entry.locator(".mem-save").click()
    page.fill("#mem-key", "忌口")
    page.fill("#mem-text", "香菜")
    page.click("#mem-add")
    expect(page.locator(".mem-entry[data-key='忌口'] textarea")).to_have_value("香菜")
    page.reload()
    expect(page.locator(".tab.active")).to_have_text("Memory")
    expect(page.locator(".mem-entry[data-key='口味'] textarea")).to_have_value("不吃辣")
    page.locator(".mem-entry[data-key='忌口'] .mem-delete").click()
    expect(page.locator(".mem-entry")).to_have_count(1)


def test_a_group_conversation_speaks_as_the_chosen_member(page: Page) -> None:
    new_conversation(page, "aunt-tu", "group", "小王, 小李，小张")
    # The members stay in the order typed, in the list and in the sender menu.
    expect(page.locator("#conversations li.active div").first).to_have_text("小王、小李、小张")
    expect(page.locator("#composer-sender option")).to_have_text(["小王", "小李", "小张"])
    expect(page.locator("#composer-sender")).to_be_visible()
    page.select_option("#composer-sender", label="小王")
    send(page, "今晚吃什么？")
    expect(page.locator(".msg.user .who").last).to_have_text("小王")
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：今晚吃什么？")


def test_a_trigger_fires_a_proactive_turn_and_the_clock_moves(page: Page) -> None:
    new_conversation(page, "cardio")
    send(page, "你好")  # the first message turns on the on_first_message subscriptions
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：你好")
    subscription = {
        "key": "run-review",
        "title": "跑后复盘",
        "reason": "跑完步帮你复盘这次训练",
        "trigger": "workout.completed",
        "quiet_hours": {"start": "00:00", "end": "00:00", "timezone": "Asia/Shanghai"},
        "cooldown_minutes": 60,
    }
    call(page, "proactive_subscribe", subscription)
    expect(page.locator(".step[data-tool=proactive_subscribe]")).to_contain_text("run-review")

    page.click(".tab[data-tab=proactive]")
    expect(page.locator("#subs [data-key=run-review]")).to_contain_text("active")
    expect(page.locator("#subs [data-key=post-run]")).to_be_visible()
    page.select_option("#trigger-type", "workout.completed")
    page.click("#trigger-fire")
    started = page.locator(".toast", has_text="started a proactive turn")
    expect(started).to_contain_text("workout.completed: ")
    expect(started).to_contain_text("run-review started a proactive turn")
    _assert_clear_of_the_composer(page, started)
    turn = page.locator(".turn.proactive").last
    expect(turn).to_contain_text("跑后复盘")
    expect(turn).to_contain_text("when a workout is finished")  # the trigger, in words
    expect(page.locator(".msg.buddy").last).to_contain_text("[主动服务触发] 跑后复盘")
    expect(page.locator("#runs .run[data-key=run-review]").first).to_have_attribute(
        "data-status", "fired"
    )

    page.click("#trigger-fire")  # within the cooldown: skipped, with the gate's reason
    cooling = page.locator(".toast", has_text="cooling down")
    expect(cooling).to_contain_text("workout.completed: no turn — ")
    expect(cooling).to_contain_text("run-review is cooling down (60 min)")
    expect(cooling).not_to_contain_text("fired")
    _assert_clear_of_the_composer(page, cooling)
    skipped = page.locator(".run-line.skipped", has_text="run-review")
    expect(skipped).to_contain_text("cooldown")
    expect(page.locator("#runs .run[data-key=run-review][data-status=skipped]")).to_contain_text(
        "cooldown: the last proactive message of run-review was shown"
    )

    before = page.locator("#clock-now").inner_text()
    page.click(".clock-advance[data-seconds='86400']")
    expect(page.locator("#clock-now")).not_to_have_text(before)
    expect(page.locator("#clock-now")).to_contain_text("ahead of real time")


def test_a_schedule_subscription_reads_as_a_sentence(page: Page) -> None:
    new_conversation(page, "cardio")
    send(page, "你好")  # turns on weekly-review: from 2026-12-07 20:00, every 7 days
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：你好")
    at = "2030-01-02T08:00:00+08:00"
    for key, trigger in (
        ("stretch", {"type": "schedule", "at": at}),
        ("daily-stretch", {"type": "schedule", "at": at, "interval_minutes": 1440}),
    ):
        call(
            page,
            "proactive_subscribe",
            {"key": key, "title": "拉伸", "reason": "提醒拉伸", "trigger": trigger},
        )
        expect(
            page.locator(f".step[data-tool=proactive_subscribe]:has-text('{key}')")
        ).to_have_count(1)
    page.click(".tab[data-tab=proactive]")
    subs = page.locator("#subs")
    expect(subs.locator("[data-key=stretch] .note")).to_contain_text(
        re.compile(r"^once, at 2030/01/02\s?周三 08:00 · ")
    )
    expect(subs.locator("[data-key=daily-stretch] .note")).to_contain_text(
        re.compile(r"^from 2030/01/02\s?周三 08:00, every 1 day · ")
    )
    expect(subs.locator("[data-key=weekly-review] .note")).to_contain_text(
        re.compile(r"^from 2026/12/07\s?周一 20:00, every 7 days · ")
    )
    expect(subs).not_to_contain_text("schedule")  # no trigger as JSON


def _assert_clear_of_the_composer(page: Page, toast: Locator) -> None:
    note, composer = toast.bounding_box(), page.locator("#composer").bounding_box()
    assert note is not None and composer is not None
    assert note["y"] + note["height"] <= composer["y"], (note, composer)


@pytest.mark.parametrize("width", [1024, 1280])
def test_the_clock_controls_stay_on_one_line(page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    new_conversation(page, "cardio")
    page.click(".tab[data-tab=proactive]")
    controls = page.locator("#clock-controls > *")
    expect(controls).to_have_count(6)  # four buttons, the minutes, and their button
    boxes = [box for box in (c.bounding_box() for c in controls.all()) if box is not None]
    assert len(boxes) == 6
    assert max(b["y"] for b in boxes) - min(b["y"] for b in boxes) < 2, boxes


def test_the_buddy_tab_shows_the_prompts_the_hooks_and_the_subscriptions(
    page: Page, dev: Dev
) -> None:
    shown = view(load(dev.root / "manifests" / "cardio"))
    group = view(load(dev.root / "manifests" / "cardio"), conversation="group")
    new_conversation(page, "cardio")
    page.click(".tab[data-tab=buddy]")
    prompt = page.locator("#buddy-prompt pre.prompt")
    expect(prompt).to_have_attribute("data-kind", "private")
    expect(prompt).to_have_text(shown["system_prompt"])
    expect(prompt).not_to_contain_text("## 在群里")
    page.click(".prompt-kind[data-kind=group]")
    expect(prompt).to_have_attribute("data-kind", "group")
    expect(prompt).to_have_text(group["system_prompt"])
    expect(prompt).to_contain_text("## 在群里")

    hooks = page.locator("#buddy-hooks .hook")
    expect(hooks).to_have_count(3)
    expect(hooks.nth(0)).to_contain_text("deny widget_write_record, widget_create, remember")
    expect(hooks.nth(0)).to_contain_text("when proactive")
    expect(hooks.nth(1)).to_contain_text("plugins.cardio:guard on data_access_request")
    expect(hooks.nth(2)).to_have_attribute("data-hook", "after_tool_call")
    expect(hooks.nth(2)).to_contain_text("plugins.cardio:trim_result")

    proactive = page.locator("#buddy-proactive")
    expect(proactive.locator("tr[data-key]")).to_have_count(3)
    post_run = proactive.locator("tr[data-key=post-run]")
    expect(post_run).to_contain_text("workout.completed")
    expect(post_run).to_contain_text("quiet 23:00–06:30 · cooldown 60 min · 2/day")
    expect(proactive.locator("pre.prompt")).to_contain_text("这是主动服务的回合")


def _edit(manifest: Path, old: str, new: str) -> str:
    text = manifest.read_text(encoding="utf-8")
    assert old in text
    manifest.write_text(text.replace(old, new, 1), encoding="utf-8")
    return text


def test_editing_the_manifest_reloads_the_buddy_and_keeps_the_conversation(
    page: Page, dev: Dev
) -> None:
    conversation = new_conversation(page, "aunt-tu")
    send(page, "第一句")
    expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：第一句")
    generation = int(page.locator("#buddy-status").get_attribute("data-generation") or 0)
    manifest = dev.root / "manifests" / "aunt-tu" / "buddy.yaml"
    mark = len(dev.lines)
    original = _edit(manifest, "title: 小涂阿姨", "title: 小涂阿姨二号")
    edited = time.monotonic()
    try:
        expect(page.locator("#buddy-title")).to_have_text("小涂阿姨二号", timeout=4000)
        assert time.monotonic() - edited < 4
        status = page.locator("#buddy-status")
        expect(status).to_have_attribute("data-generation", str(generation + 1))
        dev.wait_for_output("reloaded in", timeout=5)
        reloaded = re.search(r"reloaded in ([0-9.]+) s", dev.lines_after(mark))
        assert reloaded is not None
        assert float(reloaded.group(1)) < 2.0
        # Same conversation, its history still there, answered by the new version.
        expect(page.locator("#conversations li.active")).to_have_attribute("data-id", conversation)
        expect(page.locator(".msg.user").first).to_contain_text("第一句")
        send(page, "第二句")
        expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：第二句")
        expect(page.locator(".msg.buddy .who").last).to_have_text("小涂阿姨二号")
    finally:
        manifest.write_text(original, encoding="utf-8")
    expect(page.locator("#buddy-title")).to_have_text("小涂阿姨")


def test_an_invalid_edit_shows_located_errors_and_the_old_buddy_keeps_answering(
    page: Page, dev: Dev
) -> None:
    new_conversation(page, "aunt-tu")
    manifest = dev.root / "manifests" / "aunt-tu" / "buddy.yaml"
    mark = len(dev.lines)
    original = _edit(manifest, "title: 小涂阿姨", "titel: 小涂阿姨")
    try:
        problems = page.locator("#problems")
        expect(problems).to_be_visible()
        expect(problems).to_contain_text("manifests/aunt-tu/buddy.yaml:4:1")
        expect(problems).to_contain_text("unknown key `titel`")
        expect(problems).to_contain_text("still running the last good version")
        expect(page.locator("#buddy-status")).to_have_attribute("data-status", "error")
        dev.wait_for_output("buddy.yaml:4:1", timeout=5)
        assert "1 problem; still running version" in dev.lines_after(mark)
        send(page, "还在吗")
        expect(page.locator(".msg.buddy").last).to_contain_text("你说的是：还在吗")
        expect(page.locator(".msg.buddy .who").last).to_have_text("小涂阿姨")
    finally:
        manifest.write_text(original, encoding="utf-8")
    expect(page.locator("#problems")).to_be_hidden()
    expect(page.locator("#buddy-status")).to_have_attribute("data-status", "running")


# ------------------------------------------------------------------ the session, in-process


async def _turn(session: DevSession, conversation: str, text: str) -> str:
    """A user writes; the buddy's answer once the event was acknowledged."""
    headers = {"Authorization": f"Bearer {session.admin_token}"}
    async with httpx.AsyncClient(base_url=session.url, headers=headers) as http:
        sent = await http.post(f"/dev/conversations/{conversation}/messages", json={"text": text})
        sent.raise_for_status()
        event = sent.json()["event_id"]
        identity = session.buddies[0].identity
        for _ in range(500):
            events = (await http.get("/dev/events", params={"identity": identity})).json()
            if any(e["id"] == event and e["acked_at"] for e in events):
                break
            await asyncio.sleep(0.02)
        messages = (await http.get(f"/dev/conversations/{conversation}/messages")).json()
    return str(messages[-1]["body"].get("text"))


async def _conversation(session: DevSession, identity: str) -> str:
    headers = {"Authorization": f"Bearer {session.admin_token}"}
    async with httpx.AsyncClient(base_url=session.url, headers=headers) as http:
        body = {"identity": identity, "kind": "private", "members": [{"name": "小王"}]}
        created = await http.post("/dev/conversations", json=body)
        created.raise_for_status()
        return str(created.json()["id"])


def _run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``asyncio.run`` in a thread of its own: Playwright's sync API keeps a loop in this one."""
    failures: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(scenario())
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def _session(root: Path, *names: str) -> DevSession:
    manifests = [root / "manifests" / name / "buddy.yaml" for name in names]
    # poll() is called by hand: a watcher in the background would race the edits.
    return DevSession(manifests, model="offline", poll_seconds=3600, out=io.StringIO())


def test_a_plugin_edit_takes_effect_and_the_conversation_carries_on(tmp_path: Path) -> None:
    _copy_examples(tmp_path)
    plugin = tmp_path / "plugins" / "aunt_tu.py"

    async def scenario() -> None:
        async with _session(tmp_path, "aunt-tu") as session:
            conversation = await _conversation(session, "aunt-tu-dev")
            big = '/call plan_menu {"people": 30, "days": 1}'
            assert "摆酒席" in await _turn(session, conversation, big)
            _edit(plugin, "摆酒席的规模了", "办喜宴的规模了")
            assert await session.poll() == ["aunt-tu"]
            assert session.buddies[0].generation == 2
            assert "办喜宴" in await _turn(session, conversation, big)
            out = session.out
            assert isinstance(out, io.StringIO)
            assert "plugins/aunt_tu.py changed — reloaded in" in out.getvalue()

    _run(scenario)


def test_a_shared_file_reloads_exactly_the_buddies_that_use_it(tmp_path: Path) -> None:
    _copy_examples(tmp_path)
    personas = tmp_path / "manifests" / "personas"

    def touch(path: Path) -> None:
        path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")

    async def scenario() -> None:
        async with _session(tmp_path, "aunt-tu", "cardio") as session:
            assert await session.poll() == []
            touch(personas / "coach.md.j2")  # cardio's template extends it; aunt-tu's does not
            assert await session.poll() == ["cardio"]
            touch(personas / "traits" / "gentle.yaml")
            assert await session.poll() == ["aunt-tu"]
            touch(personas / "companion.md.j2")  # both extend it
            assert await session.poll() == ["aunt-tu", "cardio"]
            touch(tmp_path / "manifests" / "cardio" / "widgets" / "training-log" / "schema.json")
            assert await session.poll() == ["cardio"]
            assert [(b.status, b.generation) for b in session.buddies] == [
                ("running", 3),
                ("running", 4),
            ]

    _run(scenario)


def test_a_buddy_invalid_at_start_runs_once_it_is_fixed(tmp_path: Path) -> None:
    _copy_examples(tmp_path)
    manifest = tmp_path / "manifests" / "aunt-tu" / "buddy.yaml"
    original = _edit(manifest, "title: 小涂阿姨", "titel: 小涂阿姨")

    async def scenario() -> None:
        async with _session(tmp_path, "aunt-tu") as session:
            (dev,) = session.buddies
            assert (dev.status, dev.server, dev.generation) == ("error", None, 0)
            state = session.state()["buddies"][0]
            assert state["problems"][0]["line"] == 4
            assert state["problems"][0]["code"] == "unknown-key"
            manifest.write_text(original, encoding="utf-8")
            assert await session.poll() == ["aunt-tu"]
            assert (dev.status, dev.generation) == ("running", 1)
            conversation = await _conversation(session, "aunt-tu-dev")
            assert "你说的是：在吗" in await _turn(session, conversation, "在吗")

    _run(scenario)


def test_the_event_stream_carries_the_agent_loop_and_reloads(tmp_path: Path) -> None:
    _copy_examples(tmp_path)

    async def scenario() -> None:
        async with _session(tmp_path, "aunt-tu") as session:
            conversation = await _conversation(session, "aunt-tu-dev")
            headers = {"Authorization": f"Bearer {session.admin_token}"}
            seen: list[dict[str, Any]] = []
            async with (
                httpx.AsyncClient(base_url=session.url, headers=headers) as http,
                http.stream("GET", "/playground/api/events") as stream,
            ):
                assert stream.headers["content-type"].startswith("text/event-stream")
                lines = stream.aiter_lines()
                assert await anext(lines) == "event: hello"
                await _turn(session, conversation, "/call resource_list {}")
                async for line in lines:
                    item = json.loads(line.removeprefix("data: ")) if line[:1] == "d" else {}
                    if item.get("kind") == "agent":
                        seen.append(item)
                        if item["type"] == "agent_end":
                            break
                types = [e["type"] for e in seen]
                assert types[0] == "agent_start"
                assert {"tool_execution_start", "tool_execution_end"} <= set(types)
                start = next(e for e in seen if e["type"] == "tool_execution_start")
                assert start["data"]["name"] == "resource_list"
                assert start["conversation_id"] == conversation
                assert start["identity"] == "aunt-tu-dev"

                manifest = tmp_path / "manifests" / "aunt-tu" / "buddy.yaml"
                _edit(manifest, "title: 小涂阿姨", "title: 涂阿姨")
                await session.poll()
                async for line in lines:
                    if line.startswith("data: ") and '"kind":"state"' in line:
                        assert json.loads(line.removeprefix("data: "))["buddy"] == "aunt-tu"
                        break
                state = session.state()["buddies"][0]
                assert (state["title"], state["generation"]) == ("涂阿姨", 2)

    _run(scenario)


# ------------------------------------------------------------------ the companion tab
# With --model offline the extractor's answers are not JSON: only the relations'
# patterns take facts, and the character's appraisal is neutral (the mood is still
# recorded for every message).


def _memory(dev: Dev, buddy: str, conversation: str) -> dict[str, str]:
    """The conversation's memory entries (key → text), read as the buddy."""
    token = httpx.get(f"{dev.url}api/config").json()["admin_token"]
    state = httpx.get(f"{dev.url}api/state", headers={"Authorization": f"Bearer {token}"}).json()
    entry = next(b for b in state["buddies"] if b["key"] == buddy)
    headers = {"Authorization": f"Bearer {entry['dev_token']}", "X-Conversation-Id": conversation}
    base = dev.url.removesuffix("/playground/")
    answer = httpx.get(f"{base}/internal/v1/memory", headers=headers).json()
    return {e["key"]: e["text"] for e in answer["entries"]}


def test_the_companion_tab_shows_a_fact_and_the_context_and_forgets(page: Page, dev: Dev) -> None:
    conversation = new_conversation(page, "aunt-tu")
    send(page, "我对花生过敏")
    expect(page.locator(".msg.buddy").last).to_contain_text("我对花生过敏")
    page.click(".tab[data-tab=companion]")
    fact = page.locator(".fact[data-relation=allergy]")
    expect(fact).to_have_count(1)  # the extraction may end after the reply: expect waits
    expect(fact.locator(".fact-relation")).to_have_text("过敏与忌口")
    expect(fact.locator(".fact-slots")).to_contain_text("食物 花生")
    expect(fact.locator(".fact-value")).to_have_text("过敏")
    expect(fact).to_have_attribute("data-status", "kept")
    expect(fact).to_contain_text("「我对花生过敏」")  # the message it came from
    report = page.locator(".turn-report").first
    card = report.locator(".part[data-part='memory.card']")
    expect(card).to_have_count(1)
    expect(card).not_to_have_attribute("data-chars", "0")  # the fact was in time
    expect(report).to_contain_text("/ 2000 chars")
    expect(report).to_contain_text("facts in time")
    expect(page.locator("svg.mood-plot")).to_have_count(0)  # aunt-tu has no character

    page.click(".tab[data-tab=memory]")
    expect(page.locator(".mem-auto")).to_have_text("1 automatic entry: 1 fact — see Companion")
    expect(page.locator(".mem-entry")).to_have_count(0)

    page.click(".tab[data-tab=companion]")
    key = fact.get_attribute("data-key")
    assert key is not None and key.startswith("auto:allergy:")
    assert key in _memory(dev, "aunt-tu", conversation)
    fact.locator(".fact-forget").click()
    expect(page.locator(".fact")).to_have_count(0)
    page.reload()
    expect(page.locator(".tab.active")).to_have_text("Companion")
    expect(page.locator("#ledger")).to_contain_text("No facts yet.")
    assert key not in _memory(dev, "aunt-tu", conversation)


def test_the_companion_tab_edits_a_fact_and_plots_the_character(page: Page, dev: Dev) -> None:
    conversation = new_conversation(page, "xiaoman")
    page.click(".tab[data-tab=companion]")
    send(page, "叫我小鱼")
    fact = page.locator(".fact[data-relation=nickname]")
    expect(fact.locator(".fact-value")).to_have_text("小鱼")
    expect(fact.locator(".fact-relation")).to_have_text("称呼")
    expect(fact).to_have_attribute("data-status", "kept")
    plot = page.locator("svg.mood-plot")
    expect(plot).to_have_count(1)
    for series in ("anger", "sadness", "trust"):
        expect(plot.locator(f"path[data-series={series}]")).to_have_count(1)
    expect(page.locator(".mood-value[data-series=trust]")).to_have_text("trust 0.50")
    expect(page.locator(".legend")).to_contain_text("1 message felt")
    report = page.locator(".turn-report").first
    expect(report.locator(".part[data-part=character]")).to_have_count(1)

    fact.locator(".fact-edit").click()
    page.fill(".fact-value-input", "鱼鱼")
    page.press(".fact-value-input", "Enter")
    expect(fact.locator(".fact-value")).to_have_text("鱼鱼")
    stored = json.loads(_memory(dev, "xiaoman", conversation)[fact.get_attribute("data-key") or ""])
    assert (stored["value"], stored["status"]) == ("鱼鱼", "kept")

    send(page, "今天好累")
    expect(page.locator(".legend")).to_contain_text("2 messages felt")
    expect(page.locator(".turn-report")).to_have_count(2)
    expect(fact.locator(".fact-value")).to_have_text("鱼鱼")  # the edit is what the layer reads


def test_the_companion_tab_keeps_a_groups_members_apart(page: Page, dev: Dev) -> None:
    conversation = new_conversation(page, "xiaoman", "group", "小王, 小李")
    page.click(".tab[data-tab=companion]")
    page.select_option("#composer-sender", label="小王")
    send(page, "叫我老王")
    expect(page.locator(".fact[data-relation=nickname]")).to_have_count(1)
    page.select_option("#composer-sender", label="小李")
    send(page, "叫我阿明")
    groups = page.locator(".member-facts")
    expect(groups).to_have_count(2)
    # who spoke last first, each member's name over their own facts
    expect(groups.locator(".member-name")).to_have_text(
        [re.compile(r"^小李 #m_"), re.compile(r"^小王 #m_")]
    )
    expect(groups.nth(0).locator(".fact-value")).to_have_text("阿明")
    expect(groups.nth(1).locator(".fact-value")).to_have_text("老王")
    moods = page.locator(".mood-member")
    expect(moods).to_have_count(2)
    expect(moods.locator(".member-name")).to_have_text([re.compile("^小李"), re.compile("^小王")])
    expect(moods.locator("svg.mood-plot")).to_have_count(2)
    expect(moods.nth(1).locator(".legend")).to_contain_text("1 message felt")
    stored = _memory(dev, "xiaoman", conversation)
    subjects = sorted(
        json.loads(t)["slots"]["subject"]
        for k, t in stored.items()
        if k.startswith("auto:nickname:")
    )
    assert len(subjects) == 2 and all(s.startswith("m_") for s in subjects)


def test_the_inspector_shows_each_parts_text_where_it_landed_and_the_prompt(page: Page) -> None:
    new_conversation(page, "xiaoman")
    page.click(".tab[data-tab=companion]")
    send(page, "今天好累")
    report = page.locator(".turn-report").first
    card = report.locator(".part-detail[data-part='memory.card']")
    expect(card.locator(".part-empty")).to_have_text(
        "size 0: nothing known yet — the card is empty"
    )
    expect(card.locator(".tag.where")).to_have_text("placed by the template")
    mood = report.locator(".part-detail[data-part=character]")
    expect(mood.locator(".part-empty")).to_contain_text(
        "size 0: given to the template as numbers (anger 0.00, sadness"
    )
    expect(mood.locator(".part-empty")).to_contain_text("its size in the prompt is the template's")
    expect(mood.locator(".part-text")).to_have_text("你心情平稳。")
    lore = report.locator(".part-detail[data-part='lore:school/同桌']")
    expect(lore.locator(".part-text")).to_have_text(
        "你们是高中三年的同桌，你坐靠窗那边，总借他的橡皮不还。"
    )
    expect(lore.locator(".tag.where")).to_have_text("placed by the template")
    expect(lore.locator(".part-empty")).to_have_count(0)

    send(page, "叫我小鱼")
    expect(page.locator(".turn-report")).to_have_count(2)
    report = page.locator(".turn-report").first  # newest first
    expect(report.locator(".said")).to_have_text("「叫我小鱼」")
    card = report.locator(".part-detail[data-part='memory.card']")
    expect(card.locator(".part-text")).to_have_text("- 称呼：小鱼")
    expect(card.locator(".part-empty")).to_have_count(0)
    whole = report.locator("details.system-prompt")
    expect(whole.locator("summary")).to_contain_text("The whole system prompt (")
    expect(whole.locator("pre.prompt")).to_be_hidden()
    whole.locator("summary").click()
    expect(whole.locator("pre.prompt")).to_contain_text("## 你记得的关于对方")
    expect(whole.locator("pre.prompt")).to_contain_text("- 称呼：小鱼")
    expect(whole.locator("pre.prompt")).to_contain_text("## 你现在的心情")


def test_the_inspector_shows_a_part_added_after_the_template(page: Page, dev: Dev) -> None:
    template = dev.root / "manifests" / "xiaoman" / "xiaoman.md.j2"
    new_conversation(page, "xiaoman")
    status = page.locator("#buddy-status")
    generation = int(status.get_attribute("data-generation") or 0)
    # The child empties the companion block but reads the card: memory is placed, the
    # mood and the lore are added after the template's text.
    original = _edit(
        template,
        "{% block rules -%}",
        "{% block companion %}{{ memory.card }}{% endblock %}\n{% block rules -%}",
    )
    try:
        expect(status).to_have_attribute("data-generation", str(generation + 1))
        expect(status).to_have_attribute("data-status", "running")
        page.click(".tab[data-tab=companion]")
        send(page, "今天好累")
        report = page.locator(".turn-report").first
        added = r"^added after the template's text \({} there: \d+ chars, heading included\)$"
        where: dict[str, str | re.Pattern[str]] = {
            "memory.card": "placed by the template",
            "character": re.compile(added.format("character")),
            "lore:school/同桌": re.compile(added.format("lore")),
        }
        for part, said in where.items():
            tag = report.locator(f".part-detail[data-part='{part}'] .tag.where")
            expect(tag).to_have_text(said)
        whole = report.locator("details.system-prompt")
        whole.locator("summary").click()
        expect(whole.locator("pre.prompt")).to_contain_text("## 你现在的心情 你心情平稳。")
    finally:
        template.write_text(original, encoding="utf-8")
    expect(status).to_have_attribute("data-generation", str(generation + 2))


def test_the_quarrel_line_is_drawn_over_the_trust_line(page: Page) -> None:
    new_conversation(page, "xiaoman")
    page.click(".tab[data-tab=companion]")
    send(page, "你好")
    plot = page.locator("svg.mood-plot")
    expect(plot.locator("text.quarrel-label")).to_have_text("quarrel ≥ 0.50")
    expect(page.locator(".mood-value[data-series=trust]")).to_have_text("trust 0.50")
    line = plot.locator("line.quarrel")
    line.scroll_into_view_if_needed()
    box = line.bounding_box()
    assert box is not None
    # Trust starts at 0.50, on the quarrel line: at the line's first dash the line is on top.
    top = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).getAttribute('class')",
        [box["x"] + 2, box["y"] + box["height"] / 2],
    )
    assert top == "quarrel"
    strokes = page.evaluate(
        """() => ['line.quarrel', 'path.series.trust', 'path.series.anger']
          .map((s) => getComputedStyle(document.querySelector(`svg.mood-plot ${s}`)).stroke)"""
    )
    assert len(set(strokes)) == 3, strokes  # drawn in a colour of its own


def test_the_inspector_shows_a_lore_entry_put_into_the_history(page: Page, dev: Dev) -> None:
    """An entry at a depth is a message of the turn's history: the inspector says so, and
    lists the messages the layer put there."""
    book = dev.root / "manifests" / "xiaoman" / "lore" / "school.yaml"
    new_conversation(page, "xiaoman")
    status = page.locator("#buddy-status")
    generation = int(status.get_attribute("data-generation") or 0)
    original = _edit(
        book, "    always: true\n", "    always: true\n    position: depth\n    depth: 1\n"
    )
    try:
        expect(status).to_have_attribute("data-generation", str(generation + 1))
        expect(status).to_have_attribute("data-status", "running")
        page.click(".tab[data-tab=companion]")
        send(page, "今天好累")
        report = page.locator(".turn-report").first
        tag = report.locator(".part-detail[data-part='lore:school/同桌'] .tag.where")
        expect(tag).to_have_text("a system message 1 from the end of the history")
        injected = report.locator("details.injected")
        expect(injected.locator("summary")).to_have_text(
            "Messages put into this turn's history (1)"
        )
        injected.locator("summary").click()
        message = injected.locator(".injected-message")
        expect(message).to_have_attribute("data-depth", "1")
        expect(message.locator("pre")).to_have_text(
            "你们是高中三年的同桌，你坐靠窗那边，总借他的橡皮不还。"
        )
    finally:
        book.write_text(original, encoding="utf-8")
    expect(status).to_have_attribute("data-generation", str(generation + 2))
