"""Fault injection for the end-to-end paths: a platform behind a fault-injecting ASGI
middleware, the platform as a process that can be killed, a model provider on loopback
that can hold its answers, `buddy run` as a process, and a buddy project using them all."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import buddy
from buddy.runtime import server as server_module
from buddy.testing.local import LocalPlatform, free_port
from tests.conftest import REPO
from tests.models.conftest import FakeProvider, Scripted

IDENTITY = "faulty-dev"  # what the dev token of the registered buddy "faulty" acts as
API_KEY = {"OPENAI_COMPATIBLE_API_KEY": "sk-test"}
MANIFEST = """\
name: faulty
model:
  provider: openai-compatible
  name: primary
  base_url: {url}/v1
{fallbacks}persona:
  prompt: 你好，我是测试用的伙伴。
tools:
  - name: remember
    uses: memory.write
    description: 记下一件事。
    parameters:
      type: object
      properties:
        topic: {{type: string, pattern: "^[^\\\\s/]+$"}}
        text: {{type: string}}
      required: [topic, text]
    key: "{{{{ topic }}}}"
    text: "{{{{ text }}}}"
    reply: "记下了：{{{{ topic }}}}。"
"""
FALLBACK = """\
  fallbacks:
    - {{provider: openai-compatible, name: backup, base_url: {url}/v1}}
"""


async def until(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(f"{what}: not within {timeout}s")
        await asyncio.sleep(0.02)


def write_project(root: Path, model_url: str, *, fallback: bool = False) -> buddy.Blueprint:
    """A buddy project whose model is an OpenAI-compatible server at ``model_url``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    fallbacks = FALLBACK.format(url=model_url) if fallback else ""
    text = MANIFEST.format(url=model_url, fallbacks=fallbacks)
    (root / "buddy.yaml").write_text(text, encoding="utf-8")
    return buddy.load(root)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Where the buddy project is written (the model URL is only known in the test)."""
    return tmp_path / "faulty"


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's retry delays shortened a hundredfold, so tests wait milliseconds."""
    monkeypatch.setattr(server_module, "PLATFORM_BACKOFF", 0.005)
    monkeypatch.setattr(server_module, "TURN_RETRY_BACKOFF", 0.01)


async def buddy_said(platform: LocalPlatform, conversation_id: str) -> list[str]:
    """The texts the buddy showed the user in a conversation, in order."""
    return [
        m["body"]["text"]
        for m in await platform.transcript(conversation_id)
        if m["sender"] == "buddy" and m["kind"] == "text"
    ]


async def memory(platform: LocalPlatform, token: str, conversation_id: str) -> dict[str, str]:
    """The conversation's memory entries, key → text, read with the buddy's token."""
    response = await platform.http.get(
        "/internal/v1/memory",
        headers={"Authorization": f"Bearer {token}", "X-Conversation-Id": conversation_id},
    )
    response.raise_for_status()
    return {e["key"]: e["text"] for e in response.json()["entries"]}


async def unacknowledged(platform: LocalPlatform, identity: str = IDENTITY) -> list[str]:
    """Ids of the events the platform still waits an acknowledgement for."""
    return [e["id"] for e in await platform.events(identity) if e["acked_at"] is None]


# --- The platform behind a fault-injecting middleware ----------------------------------


@dataclass
class Fault:
    """One injected failure of the platform's HTTP API.

    Attributes:
        method: The HTTP method it hits (``*``: any).
        path: A regular expression the whole request path must match.
        status: Answer this error status instead of the platform's answer.
        delay: Seconds the answer is held. Before the platform sees the request, unless
            ``after_platform``: uvicorn then drops the request of a client that gave up
            meanwhile, so nothing is stored.
        drop: Start the answer, then close the connection without finishing it.
        after_platform: Let the platform handle the request first (its writes are
            stored), then hold and replace its answer.
        times: How many requests it hits (``None``: all of them until removed).
        hits: How many it hit so far.
    """

    method: str
    path: str
    status: int | None = None
    delay: float = 0.0
    drop: bool = False
    after_platform: bool = False
    times: int | None = None
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return self.method in ("*", method) and re.fullmatch(self.path, path) is not None


Asgi = Callable[..., Any]


class FaultInjector:
    """ASGI middleware failing the HTTP requests that a :class:`Fault` matches."""

    def __init__(self, app: Asgi, faults: list[Fault]) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: dict[str, Any], receive: Asgi, send: Asgi) -> None:
        fault = None
        if scope["type"] == "http":
            fault = next(
                (f for f in self.faults if f.matches(scope["method"], scope["path"])), None
            )
        if fault is None:
            await self.app(scope, receive, send)
            return
        fault.hits += 1
        answer: list[dict[str, Any]] = []
        if fault.after_platform:

            async def keep(message: dict[str, Any]) -> None:
                answer.append(message)

            await self.app(scope, receive, keep)
        await asyncio.sleep(fault.delay)
        if fault.drop:
            headers = [(b"content-length", b"100")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            return  # uvicorn closes the connection mid-answer
        if fault.status is not None:
            answer = _error(fault.status)
        elif not fault.after_platform:
            await self.app(scope, receive, send)
            return
        for message in answer:
            await send(message)


def _error(status: int) -> list[dict[str, Any]]:
    body = json.dumps({"status": status, "code": "injected", "reason": "injected fault"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


class FaultyPlatform(LocalPlatform):
    """The dev platform on loopback behind :class:`FaultInjector`; ``inject`` adds a fault."""

    def __init__(self) -> None:
        super().__init__()
        self.faults: list[Fault] = []

    def app(self) -> Any:
        return FaultInjector(super().app(), self.faults)

    def inject(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault


@pytest.fixture
async def faulty() -> AsyncIterator[FaultyPlatform]:
    platform = FaultyPlatform()
    async with platform:
        yield platform


# --- The platform as a process ---------------------------------------------------------


class PlatformProcess(LocalPlatform):
    """The dev platform served by `buddy platform` in its own process, on one SQLite file
    and one port, so that it can be killed and started again where it was."""

    def __init__(self, db: Path) -> None:
        super().__init__(str(db), port=free_port())
        self.log = db.with_suffix(".log")
        self.process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> PlatformProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()
        await self.kill()

    async def start(self) -> None:
        """Start the process and wait until it answers."""
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "buddy",
                "platform",
                "--db",
                self.db,
                "--port",
                str(self.port),
                "--admin-token",
                self.admin_token,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=log,
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while loop.time() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if (await self.http.get("/dev/clock", headers=self.admin)).status_code == 200:
                    return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the platform did not start: {self.log.read_text()}")

    async def kill(self) -> None:
        """``kill -9``."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()


# --- A model provider that can hold its answers ----------------------------------------


class Provider(FakeProvider):
    """:class:`FakeProvider` that notes when each request arrived and, while ``hold`` is
    set, keeps every request waiting (the model is thinking) until it is cleared."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []
        self.released = asyncio.Event()
        self.released.set()

    def hold(self) -> None:
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.arrived.append(asyncio.get_running_loop().time())
        await self.released.wait()
        await super()._exchange(reader, writer)


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    fake = Provider()
    await fake.start()
    try:
        yield fake
    finally:
        fake.release()
        await fake.stop()


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    chunk = {"id": "chatcmpl-f", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"


def says(text: str) -> Scripted:
    """A streamed reply."""
    body = _chunk({"role": "assistant", "content": text}) + _chunk({}, "stop") + "data: [DONE]\n\n"
    return Scripted([body.encode()])


def calls(name: str, arguments: str) -> Scripted:
    """A streamed tool call; ``arguments`` as sent, JSON or not."""
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    body = (
        _chunk({"role": "assistant", "tool_calls": [call]})
        + _chunk({}, "tool_calls")
        + "data: [DONE]\n\n"
    )
    return Scripted([body.encode()])


def fails(status: int, retry_after: str | None = None) -> Scripted:
    """An error answer, with ``Retry-After`` when given."""
    body = json.dumps({"error": {"message": f"scripted {status}", "type": "server_error"}})
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return Scripted([body.encode()], status=status, headers=headers)


# --- `buddy run` as a process ------------------------------------------------------------


class BuddyProcess:
    """`buddy run` of a project against a platform, with its standard error collected."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        assert process.stderr is not None
        self._reading = asyncio.create_task(self._read(process.stderr))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        async for line in stream:
            self.lines.append(line.decode(errors="replace"))

    def logged(self, text: str) -> bool:
        """Whether a line of its log contains ``text``."""
        return any(text in line for line in self.lines)

    async def exit_code(self, timeout: float = 30) -> int:
        """Wait for the process to end; its exit code."""
        code = await asyncio.wait_for(self.process.wait(), timeout)
        await self._reading
        return code

    async def kill(self) -> None:
        """``kill -9``."""
        self.process.send_signal(signal.SIGKILL)
        await self.exit_code()


@contextlib.asynccontextmanager
async def buddy_run(
    project: Path, platform: LocalPlatform, token: str, *args: str
) -> AsyncIterator[BuddyProcess]:
    """`buddy run` of ``project`` against ``platform`` (``args`` added to the command),
    killed when the block ends if it is still running."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "buddy",
        "run",
        str(project),
        *args,
        cwd=REPO,
        env={**os.environ, **API_KEY, "BUDDY_TOKEN": token, "BUDDY_PLATFORM_URL": platform.url},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    running = BuddyProcess(process)
    try:
        yield running
    finally:
        if process.returncode is None:
            await running.kill()
