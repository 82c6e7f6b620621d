"""The companion layer in a served buddy: the prompt of every turn gets it, and the
one-turn data-visibility rule holds for what it stores — proven from the platform's
memory, the stored records and the order of the buddy's requests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion.engine import STATE_KEY
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.testing import Reply, TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import Write, grant_data
from tests.runtime.test_companion import Gate, said

pytestmark = pytest.mark.anyio

SECRET = 987654
MANIFEST = """\
name: mem
model: test
tools: [data_access_query]
persona:
  prompt: '记得：{{ memory.card }}'
memory:
  auto: true
  relations: [allergy]
  wait_ms: 0
data:
  requirements:
    - id: health.sleep
      purpose: 看看你睡得怎么样
"""


class Recording(HttpPlatformClient):
    """Records every request's method and path, in order; ``on`` runs on a path."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[str, str]] = []
        self.on: dict[str, asyncio.Event] = {}

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.log.append((method, path))
        answer = await super().request(method, path, **kwargs)
        for prefix, event in self.on.items():
            if path.startswith(prefix):
                event.set()
        return answer


async def test_no_layer_write_happens_in_the_rest_of_a_turn_that_read_data(
    platform: LocalPlatform, write: Write
) -> None:
    blueprint = buddy.load(write({"buddy.yaml": MANIFEST}))
    tokens = await platform.register("mem")
    conv = await platform.conversation("mem-dev")
    cid, member = conv["id"], conv["members"][0]["member_id"]
    peanut = {"subject": "user", "item": "花生", "kind": "过敏"}
    gate = Gate([said([{"relation": "allergy", "slots": peanut}])])
    client = Recording(platform.url, tokens["dev_token"], backoff=Backoff(0.05, 0.5))
    client.on["data-access/query"] = gate.release  # the extractor answers after the read
    model = TestModel(
        [
            Reply(calls=[call("data_access_query", {"datasets": ["health.sleep"]})]),
            Reply(text=f"你睡了 {SECRET} 分钟，我记着你对花生过敏。"),
        ]
    )
    async with running_buddy(
        platform, blueprint, model, "", client=client, layer_model=gate
    ) as server:
        items = [{"date": "2026-11-30", "asleep_minutes": SECRET}]
        await grant_data(platform, "mem-dev", member, "health.sleep", items)
        event = await platform.say(cid, "花生我是碰不得的。我昨晚睡得怎么样")
        await platform.wait_acked("mem-dev", event)
        await server.buddy.layers[0].settled()
    commit = client.log.index(("POST", "conversation/turns"))
    read = client.log.index(("POST", "data-access/query"))
    writes = [
        i
        for i, (m, p) in enumerate(client.log)
        if (m == "PUT" and p.startswith("memory/")) or (m, p) == ("POST", "memory")
    ]
    assert writes and all(i > commit for i in writes), client.log[read:]
    # What the user typed is remembered; nothing the model said after the read is.
    response = await platform.http.get(
        "/internal/v1/memory",
        headers={"Authorization": f"Bearer {tokens['dev_token']}", "X-Conversation-Id": cid},
    )
    stored = {e["key"]: e["text"] for e in response.json()["entries"]}
    assert any(k.startswith("auto:allergy:") for k in stored)
    assert str(SECRET) not in json.dumps(stored, ensure_ascii=False)
    assert STATE_KEY not in stored  # no character, nothing asked: no state to keep
    turn = (await platform.turns(cid))[-1]
    assert turn["data_read"] is True
    assert gate.requests[0].messages[-1].content == "花生我是碰不得的。我昨晚睡得怎么样"


async def test_a_served_turn_sees_what_was_said_before_and_a_rebuilt_one_reads_it_back(
    platform: LocalPlatform, write: Write
) -> None:
    manifest = MANIFEST.replace("  wait_ms: 0\n", "").replace("[allergy]", "[nickname]")
    blueprint = buddy.load(write({"buddy.yaml": manifest}))
    tokens = await platform.register("mem")
    conv = await platform.conversation("mem-dev")
    model = TestModel(["好的小鱼。", "小鱼早。"])
    quiet = TestModel(default=said())  # "早" has no pattern: the extractor finds nothing
    token = tokens["dev_token"]
    async with running_buddy(platform, blueprint, model, token, layer_model=quiet) as server:
        event = await platform.say(conv["id"], "叫我小鱼")
        await platform.wait_acked("mem-dev", event)
        await server.buddy.layers[0].settled()
    assert model.requests[0].system == "记得：- 称呼：小鱼"
    # a new process: the layer reads its memory back from the platform
    async with running_buddy(platform, blueprint, model, token, layer_model=quiet):
        event = await platform.say(conv["id"], "早")
        await platform.wait_acked("mem-dev", event)
    assert model.requests[1].system == "记得：- 称呼：小鱼"
