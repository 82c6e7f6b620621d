"""``buddy.Agent`` runs every platform capability on the dev platform inside the process
(``DetachedClient``): the same turn that runs against a served platform in
``test_after_read`` runs here — data read after a grant, a widget made and written, a
subscription stored — with the same refusals, and a run that never calls the platform
builds none."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import buddy
from buddy.errors import PlatformError
from buddy.platform.conversation import Conversation
from buddy.platform.dev.inprocess import BUDDY_ID
from buddy.runtime.agent import DetachedClient
from buddy.testing import TestModel
from tests.conftest import REPO, Write
from tests.runtime.test_after_read import LOG_BUDDY, LOG_WIDGET, SLEEP, _log_flow

pytestmark = pytest.mark.anyio


def _logger(write: Write, after_read: str = "") -> buddy.Blueprint:
    line = f"  after_read: {after_read}\n" if after_read else ""
    return buddy.load(
        write(
            {
                "buddy.yaml": LOG_BUDDY.format(after_read=line),
                "widgets/log/schema.json": json.dumps(LOG_WIDGET),
            }
        )
    )


async def _grant_sleep(agent: buddy.Agent) -> None:
    info = await agent.client.conversation_info(agent.conversation.id)
    member = info["members"][0]["member_id"]
    platform = await agent.client.platform()
    grant = {"identity": BUDDY_ID, "member_id": member, "dataset": "health.sleep"}
    await platform.dev("PUT", "/grants", {**grant, "granted": True})
    await platform.dev(
        "PUT", "/data", {"member_id": member, "dataset": "health.sleep", "items": [SLEEP]}
    )


@pytest.mark.parametrize(("after_read", "refused"), [("", False), ("strict", True)])
async def test_a_turn_reads_data_writes_a_widget_and_subscribes_in_process(
    write: Write, after_read: str, refused: bool
) -> None:
    model = _log_flow("log", "nights", {"note": "睡得好"})
    async with buddy.Agent(_logger(write, after_read), model) as agent:
        await _grant_sleep(agent)
        outcome = await agent.run("记一下")
        results = [s for s in outcome.steps if s["type"] == "tool_result"]
        assert [r["tool"] for r in results] == [
            "data_access_query",
            "widget_create",
            "widget_write_record",
            "proactive_subscribe",
        ]
        assert outcome.data_read is True  # the grant made the query answer ``available``
        assert [r.get("is_error", False) for r in results] == [False] + [refused] * 3
        widgets = await agent.conversation.widget.list()
        subscriptions = await agent.conversation.proactive.list()
    assert len(widgets) == (0 if refused else 1)
    assert [s["key"] for s in subscriptions] == ([] if refused else ["weekly"])


async def test_unknown_datasets_and_ungranted_ones_answer_as_on_the_platform(
    write: Write,
) -> None:
    async with buddy.Agent(_logger(write), TestModel()) as agent:
        results = await agent.conversation.data_access.query(["health.sleep", "health.steps"])
        assert [r["status"] for r in results] == ["notGranted", "notDeclared"]
        with pytest.raises(PlatformError) as caught:  # the platform's own limit of 8
            await agent.conversation.data_access.query(["health.sleep"] * 9)
    assert caught.value.status == 400
    assert caught.value.reason


async def test_a_record_that_breaks_its_schema_is_refused_with_its_reason(
    write: Write,
) -> None:
    # Checked against the module's schema before the request (issue 14): Python code gets
    # the field and the rule, not the platform's bare 400 — raised as that 400 would be.
    async with buddy.Agent(_logger(write), TestModel()) as agent:
        widget = agent.conversation.widget
        created = await widget.create("log", "这周")
        with pytest.raises(PlatformError) as caught:
            await widget.write_record(created["id"], "nights", "r1", {"note": 3})
    assert caught.value.status == 400
    assert "`data.note` 应为文本，收到 3" in caught.value.reason


async def test_calls_made_in_parallel_on_a_fresh_client_share_one_conversation() -> None:
    client = DetachedClient()
    memory = Conversation(client, "local-1", "private").memory
    try:
        await asyncio.gather(*(memory.write(f"k{i}", "x") for i in range(5)))
        assert [e["key"] for e in await memory.list()] == [f"k{i}" for i in range(5)]
    finally:
        await client.close()


def test_a_run_that_never_calls_the_platform_builds_none(tmp_path: Path) -> None:
    """The platform is made on the first call: a turn without one imports no server stack
    (the benchmarks' turns, a persona check)."""
    code = (
        "import asyncio, sys, buddy\n"
        "from buddy.testing import TestModel\n"
        f"agent = buddy.Agent(buddy.load({str(REPO / 'bench' / 'workload')!r}), TestModel(['嗨']))\n"
        "print(asyncio.run(agent.run('你好')).reply)\n"
        "print(sorted(m for m in ('fastapi', 'starlette', 'buddy.platform.dev.app') if m in sys.modules))\n"
    )
    env = {**os.environ, "BUDDY_CACHE_DIR": str(tmp_path)}
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert shown.stdout.splitlines() == ["嗨", "[]"]
