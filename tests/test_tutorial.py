"""docs/tutorial.md, followed to the letter in an empty directory.

The page's convention: every ```sh block is a command run in the tutorial's directory, in
order; a ```yaml block right after a "`path`:" line is written to that file before the next
command; a ```text block right after a command is (an excerpt of) its output — each of its
lines, except `…`, appears in the real output, in order. The `buddy dev` command is started
in the background on a free port, as tests/test_playground.py starts it, and step 7 of the
page is done in Chromium with that module's helpers.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests import test_playground
from tests.conftest import REPO, venv_environment
from tests.test_playground import Dev, new_conversation, running_dev, send

browser = test_playground.browser  # its Chromium fixture, requested by name below

TUTORIAL = REPO / "docs" / "tutorial.md"
#: The Chinese page: the same steps (commands, files, outputs) with Chinese prose.
TUTORIAL_ZH = REPO / "docs" / "tutorial.zh-CN.md"
FENCE = re.compile(r"^(`{3,})(\w*)\n(.*?)^\1$", re.M | re.S)
FILE_LABEL = re.compile(r"^`([^`]+)`:$")
ELLIPSIS = "…"
# What the offline model answers to the proactive turn (it echoes the platform's prompt).
PROACTIVE_REPLY = (
    "[离线模型] 你说的是：[主动服务触发] 运动后问候："
    '对方刚运动完，问问感觉怎么样，提醒补水和拉伸。（触发："workout.completed"）'
)
# What differs from one run to the next in `buddy dev`'s output.
VOLATILE = [
    (re.compile(r"^\[\d\d:\d\d:\d\d\]"), "[TIME]"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"db \S+platform\.db"), "db DB"),
]


@dataclass
class Step:
    """One thing the reader does: run ``text`` (``kind == "sh"``) or write it to ``path``."""

    kind: str
    text: str
    path: str = ""
    output: str = ""  # the page's ```text block shown after a command


def steps(markdown: str) -> list[Step]:
    found: list[Step] = []
    command_end = -1  # where the last ```sh block ended
    for match in FENCE.finditer(markdown):
        _, lang, body = match.groups()
        before = markdown[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        label = FILE_LABEL.match(before)
        if lang == "sh":
            found.append(Step("sh", body))
            command_end = match.end()
        elif lang == "yaml" and label:
            found.append(Step("file", body, path=label.group(1)))
        elif lang == "text" and not markdown[command_end : match.start()].strip():
            found[-1].output = body  # directly after the command's block
    return found


def _normal(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def assert_shown(shown: str, actual: str, command: str) -> None:
    """Every line of ``shown`` but `…` is a line of ``actual``, in the same order."""
    lines = iter(_normal(line) for line in actual.splitlines())
    for line in shown.splitlines():
        if line.strip() == ELLIPSIS:
            continue
        wanted = _normal(line)
        assert any(got == wanted for got in lines), (
            f"the page shows {line!r} for `{command}`, which printed:\n{actual}"
        )


def _environment() -> dict[str, str]:
    return venv_environment(PYTHONUNBUFFERED="1")


@contextmanager
def buddy_dev(command: str, cwd: Path) -> Iterator[Dev]:
    """``command`` (``buddy dev …``) running in ``cwd`` on a free port, stopped by Ctrl-C."""
    with running_dev(shlex.split(command)[2:], cwd, _environment()) as dev:
        yield dev


def fire_a_trigger_in_the_page(chromium: Browser, dev: Dev) -> str:
    """Step 6 of the page; returns the conversation's id."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(dev.url)
        expect(page.locator("#buddy-status")).to_have_attribute("data-status", "running")
        conversation = new_conversation(page, "demo", "private", "小王")
        send(page, "你好")
        expect(page.locator(".msg.buddy").last).to_contain_text("[离线模型] 你说的是：你好")

        page.click(".tab[data-tab=proactive]")
        expect(page.locator("#subs [data-key=after-workout]")).to_contain_text("active")
        page.select_option("#trigger-type", "workout.completed")
        page.click("#trigger-fire")
        turn = page.locator(".turn.proactive").last
        expect(turn.locator(".tag.proactive")).to_have_text("proactive")
        expect(turn).to_contain_text("运动后问候")
        expect(turn).to_contain_text("when a workout is finished")
        expect(page.locator(".msg.buddy").last).to_contain_text(PROACTIVE_REPLY)
        fired = page.locator("#runs .run[data-key=after-workout]").first
        expect(fired).to_have_attribute("data-status", "fired")

        page.click("#trigger-fire")  # the page says: skipped, within the cooldown
        skipped = page.locator("#runs .run[data-key=after-workout][data-status=skipped]")
        expect(skipped).to_contain_text("cooldown")
    finally:
        context.close()
    assert errors == [], errors
    return conversation


def platform_get(dev: Dev, path: str, **params: str) -> object:
    """``GET path`` on the dev platform with the admin token the page uses."""
    with urllib.request.urlopen(f"{dev.url}api/config") as response:
        token = json.load(response)["admin_token"]
    platform = dev.url.removesuffix("playground/")
    answer = httpx.get(
        f"{platform}{path}", params=params, headers={"Authorization": f"Bearer {token}"}
    )
    answer.raise_for_status()
    return answer.json()


def test_the_page_has_the_steps_it_promises() -> None:
    markdown = TUTORIAL.read_text(encoding="utf-8")
    assert PROACTIVE_REPLY in markdown  # step 7 shows the reply the test sees
    found = steps(markdown)
    commands = [s.text.strip() for s in found if s.kind == "sh"]
    assert commands[0] == "buddy init demo"
    assert commands[-1] == "buddy dev demo --model offline"
    assert [s.path for s in found if s.kind == "file"] == [
        "demo/buddy.yaml",  # a proactive subscription
        "demo/buddy.yaml",  # then a memory
        "demo/tests/memory.yaml",
    ]
    assert all(s.output for s in found if s.kind == "sh")


def test_the_chinese_page_has_exactly_the_english_pages_steps() -> None:
    # Run once (below, on the English page), true for both: every command, every file
    # written and every output shown are the same, in the same order.
    english = steps(TUTORIAL.read_text(encoding="utf-8"))
    chinese = steps(TUTORIAL_ZH.read_text(encoding="utf-8"))
    assert chinese == english
    assert TUTORIAL.read_text(encoding="utf-8").splitlines()[2] == (
        "English · [中文](tutorial.zh-CN.md)"
    )
    assert (
        TUTORIAL_ZH.read_text(encoding="utf-8").splitlines()[2] == "[English](tutorial.md) · 中文"
    )


def test_every_command_of_the_tutorial_runs(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    found = steps(TUTORIAL.read_text(encoding="utf-8"))
    for step in found:
        if step.kind == "file":
            target = tmp_path / step.path
            if target.exists():  # an edit: what was there is kept, as the page says
                assert step.text.startswith(target.read_text(encoding="utf-8"))
            target.write_text(step.text, encoding="utf-8")
            continue
        command = step.text.strip()
        if command.startswith("buddy dev "):
            break
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", step.text],
            cwd=tmp_path,
            env=_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, f"`{command}` exited {result.returncode}:\n{result.stdout}"
        assert_shown(step.output, result.stdout, command)
    else:
        pytest.fail("the tutorial has no `buddy dev` step")

    chromium = request.getfixturevalue("browser")  # skips, saying why, without Chromium
    with buddy_dev(command, tmp_path) as dev:
        assert_shown(step.output, dev.output(), command)
        conversation = fire_a_trigger_in_the_page(chromium, dev)
        runs = platform_get(
            dev, "dev/proactive/runs", identity="demo-dev", conversation_id=conversation
        )
        turns = platform_get(dev, f"dev/conversations/{conversation}/turns")
    assert isinstance(runs, dict)
    assert isinstance(turns, list)
    fired, skipped = runs["runs"]
    assert (fired["subscription_key"], fired["status"]) == ("after-workout", "fired")
    assert (skipped["status"], skipped["gate"]) == ("skipped", "cooldown")
    (turn,) = [t for t in turns if t["event_id"] == fired["event_id"]]
    assert turn["proactive"] is True
    assert turn["reply"].startswith(PROACTIVE_REPLY)
