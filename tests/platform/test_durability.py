"""kill -9 in the middle of acknowledged writes: after a restart, every one is there."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.platform.conftest import ADMIN, free_port

pytestmark = pytest.mark.anyio
HEADERS = {"Authorization": f"Bearer {ADMIN}"}
STARTUP_SECONDS = 60.0  # for `buddy platform` to answer


@contextlib.asynccontextmanager
async def platform_process(db: Path, port: int) -> AsyncIterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "buddy",
            "platform",
            "--db",
            str(db),
            "--port",
            str(port),
            "--admin-token",
            ADMIN,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            # A process start, not the property under test: generous for a loaded machine
            # (the suite's other workers), and over as soon as the process has exited.
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/dev/clock", headers=HEADERS)).status_code == 200:
                        break
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("the platform did not start")
                await asyncio.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


async def test_sigkill_loses_no_acknowledged_write(tmp_path: Path) -> None:
    db = tmp_path / "platform.db"
    port = free_port()
    acknowledged: list[str] = []
    async with (
        platform_process(db, port) as process,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http,
    ):
        created = (
            await http.post("/dev/buddies", headers=HEADERS, json={"buddy_id": "durable"})
        ).json()
        conv = (
            await http.post(
                "/dev/conversations",
                headers=HEADERS,
                json={"identity": "durable", "kind": "private", "members": [{"name": "u"}]},
            )
        ).json()

        async def writer(lane: int) -> None:
            for i in range(10_000):
                text = f"lane{lane}-{i}"
                try:
                    response = await http.post(
                        f"/dev/conversations/{conv['id']}/messages",
                        headers=HEADERS,
                        json={"text": text},
                    )
                except httpx.HTTPError:
                    return  # the process died under us: this write was not acknowledged
                if response.status_code == 201:
                    acknowledged.append(text)

        buddy = created["token"]
        acked_memory: dict[str, int] = {}

        async def memory_writer(lane: int) -> None:
            headers = {"Authorization": f"Bearer {buddy}", "X-Conversation-Id": conv["id"]}
            for i in range(10_000):
                key = f"k{lane}-{i % 16}"
                try:
                    response = await http.put(
                        f"/internal/v1/memory/{key}", headers=headers, json={"text": str(i)}
                    )
                except httpx.HTTPError:
                    return
                if response.status_code == 200:
                    acked_memory[key] = i

        writers = [asyncio.create_task(writer(lane)) for lane in range(3)]
        writers += [asyncio.create_task(memory_writer(lane)) for lane in range(2)]
        while len(acknowledged) < 120:
            await asyncio.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
        await asyncio.gather(*writers)
    assert len(acknowledged) >= 120
    async with (
        platform_process(db, port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        transcript = (
            await http.get(f"/dev/conversations/{conv['id']}/messages", headers=HEADERS)
        ).json()
        stored = {m["body"]["text"] for m in transcript}
        missing = [t for t in acknowledged if t not in stored]
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
        events = (
            await http.get("/dev/events", headers=HEADERS, params={"identity": "durable"})
        ).json()
        assert {e["payload"]["text"] for e in events} >= set(acknowledged)
        memory = (
            await http.get(
                "/internal/v1/memory",
                headers={"Authorization": f"Bearer {buddy}", "X-Conversation-Id": conv["id"]},
            )
        ).json()["entries"]
        stored_memory = {e["key"]: int(e["text"]) for e in memory}
        assert acked_memory
        # Each key holds its last acknowledged value, or a later one whose answer was cut off.
        assert all(stored_memory.get(k, -1) >= v for k, v in acked_memory.items())
