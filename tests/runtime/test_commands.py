"""`buddy chat` and `buddy run` as processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from buddy.testing.local import LocalPlatform, free_port
from tests.conftest import REPO, normalised

pytestmark = pytest.mark.anyio


def test_scripted_chat_with_the_offline_model() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "chat", "manifests/aunt-tu", "--model", "offline"],
        input="你好\n/call resource_list {}\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "[离线模型] 你说的是：你好" in result.stdout
    assert "recipes/hongshao-rou.md" in result.stdout
    assert "→ resource_list {}" in result.stdout


def test_chat_answers_a_question_card_by_number() -> None:
    script = '/call ask_question {"question": "几个人？", "options": ["一个", "两个"]}\n2\n'
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "chat", "manifests/aunt-tu", "--model", "offline"],
        input=script,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "  2) 两个" in result.stdout
    assert "你说的是：两个" in result.stdout


def test_chat_refuses_an_invalid_manifest(tmp_path: object) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "chat", "manifests/aunt-tu", "--model", "nosuch:x"],
        input="",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "unknown model provider" in result.stderr


async def _start(platform: LocalPlatform, token: str) -> asyncio.subprocess.Process:
    return await _run(platform, token, "--profile", "ci")


async def _until_connected(platform: LocalPlatform, conversation_id: str) -> None:
    event = await platform.say(conversation_id, "在吗")
    await platform.wait_acked("cardio-dev", event, timeout=60)


async def test_run_answers_then_stops_on_sigterm_and_is_superseded() -> None:
    async with LocalPlatform() as platform:
        tokens = await platform.register("cardio")
        conv = await platform.conversation("cardio-dev")
        first = await _start(platform, tokens["dev_token"])
        await _until_connected(platform, conv["id"])
        said = [
            m["body"]["text"]
            for m in await platform.transcript(conv["id"])
            if m["sender"] == "buddy"
        ]
        assert said == ["(test model reply)"]
        second = await _start(platform, tokens["dev_token"])
        assert await asyncio.wait_for(first.wait(), 60) == 3  # superseded
        assert first.stderr is not None
        assert "superseded" in (await first.stderr.read()).decode()
        event = await platform.say(conv["id"], "还在吗")
        await platform.wait_acked("cardio-dev", event, timeout=60)
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 60) == 0


# ---------------------------------------------------------------- cli.md's session

CLI_MD = REPO / "docs" / "cli.md"
_VOLATILE = [
    (re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "), "TIME "),
    (re.compile(r"http://127\.0\.0\.1:\d+"), "URL"),
    (re.compile(r"\bc_[0-9a-f]+"), "CONVERSATION"),
]


def _normal(lines: list[str]) -> list[str]:
    return normalised(lines, _VOLATILE)


def _session_blocks() -> list[list[str]]:
    """The ```text blocks of cli.md's `buddy run` section, as lines."""
    section = CLI_MD.read_text(encoding="utf-8").split("## `buddy run PATH`", 1)[1]
    section = section.split("\n## ", 1)[0]
    return [b.split("\n") for b in re.findall(r"^```text\n(.*?)\n```$", section, re.M | re.S)]


class _Lines:
    """A process's standard error, read line by line as it comes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.lines: list[str] = []
        assert process.stderr is not None
        self._task = asyncio.create_task(self._read(process.stderr))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        async for line in stream:
            self.lines.append(line.decode().rstrip("\n"))

    async def until(self, count: int, timeout: float = 60) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.lines) < count and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)

    async def done(self) -> list[str]:
        await asyncio.wait_for(self._task, 30)
        return self.lines


async def _run(platform: LocalPlatform, token: str, *arguments: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDDY_")}
    env |= {"BUDDY_TOKEN": token, "BUDDY_PLATFORM_URL": platform.url}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "buddy",
        "run",
        "manifests/cardio",
        *arguments,
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_the_run_session_of_cli_md_prints_what_it_shows() -> None:
    """cli.md's session, replayed: the start, a user's message, a second process that
    supersedes the first (exit 3), SIGTERM (exit 0), and an unknown token (exit 1)."""
    blocks = _session_blocks()
    start = [line for line in blocks[1] if not line.startswith(("$ ", "{"))]
    turn, superseded, stopped, failures = blocks[2], blocks[3], blocks[4], blocks[5]
    async with LocalPlatform() as platform:
        tokens = await platform.register("cardio")
        conversation = await platform.conversation("cardio-dev", members=["小周"])
        first = await _run(platform, tokens["dev_token"], "--profile", "ci")
        first_lines = _Lines(first)
        await first_lines.until(len(start))
        event = await platform.say(conversation["id"], "今天练什么")
        await platform.wait_acked("cardio-dev", event, timeout=60)
        replies = [
            m for m in await platform.transcript(conversation["id"]) if m["sender"] == "buddy"
        ]
        assert [m["body"]["text"] for m in replies] == ["(test model reply)"]
        second = await _run(platform, tokens["dev_token"], "--profile", "ci")
        second_lines = _Lines(second)
        assert await asyncio.wait_for(first.wait(), 60) == 3
        printed = await first_lines.done()
        await second_lines.until(len(start))
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 60) == 0
        last = (await second_lines.done())[len(start) :]
        refused = await _run(platform, "bdt_nope", "--profile", "ci")
        refused_lines = _Lines(refused)
        assert await asyncio.wait_for(refused.wait(), 60) == 1
        refusal = await refused_lines.done()
    assert _normal(printed) == _normal(start + turn + superseded[:1]), "\n".join(printed)
    assert superseded[1:] == ["$ echo $?", "3"]
    assert _normal(last) == _normal(stopped[:1]), "\n".join(last)
    assert stopped[1:] == ["$ echo $?", "0"]
    assert failures[0] == "$ BUDDY_TOKEN=bdt_nope buddy run manifests/cardio --profile ci"
    assert _normal(refusal) == _normal(failures[1:3]), "\n".join(refusal)
    assert failures[3:5] == ["$ echo $?", "1"]


def _shapes(value: object) -> object:
    """``value`` with each id and token cut to its prefix (``c_…``, ``bdt_…``): the random
    rest differs from run to run, the rest of the answer may not."""
    if isinstance(value, dict):
        return {k: _shapes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shapes(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"^([a-z]+_)[\w-]{8,}$", r"\1…", value)
    return value


def test_the_platform_of_cli_md_prints_and_answers_what_it_shows(tmp_path: Path) -> None:
    """The session's first terminal (`buddy platform`) and its two `curl` calls."""
    import json

    import httpx

    blocks = _session_blocks()
    assert blocks[0][0] == "$ buddy platform --db /tmp/rtdoc/demo.db"
    shown = blocks[0][1:]
    database = tmp_path / "demo.db"
    port = str(free_port())
    process = subprocess.Popen(
        [sys.executable, "-m", "buddy", "platform", "--db", str(database), "--port", port],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        printed = [process.stderr.readline().rstrip("\n") for _ in shown]
        url = re.search(r"on (http://\S+)", printed[0])
        token = printed[1].removeprefix("admin token: ")
        assert url is not None and token.startswith("adm_")
        normal = [
            re.sub(r":\d+ \(db \S+\)", ":PORT (db DB)", printed[0]),
            re.sub(r"adm_\S+", "adm_TOKEN", printed[1]),
        ]
        assert normal == [
            re.sub(r":\d+ \(db \S+\)", ":PORT (db DB)", shown[0]),
            re.sub(r"adm_\S+", "adm_TOKEN", shown[1]),
        ]
        calls = [line for line in blocks[1] if line.startswith("$ curl")]
        answers = [json.loads(line) for line in blocks[1] if line.startswith("{")]
        admin = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url.group(1), headers=admin, timeout=30) as client:
            deadline = time.monotonic() + 30  # the banner comes before the server listens
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.TransportError):
                    client.get("/openapi.json")
                    break
                time.sleep(0.05)
            for call, answer in zip(calls, answers, strict=True):
                path = re.search(r"http://127\.0\.0\.1:8700(\S+)", call)
                body = re.search(r"-d '(.*)'$", call)
                assert path is not None and body is not None
                got = client.post(path.group(1), json=json.loads(body.group(1)))
                assert got.status_code == 201, got.text
                assert _shapes(got.json()) == _shapes(answer)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
