"""Whatever a model or a tool produces, the turn's record is one the platform takes and
can serve back: tool arguments nested deeper than the platform keeps, or too big, or not
JSON at all, and tool results too big, are kept as text cut to the platform's limits, and
the turn is committed and answered (a 200-deep argument used to make the conversation
unanswerable)."""

from __future__ import annotations

import json

import pytest

from buddy.platform.limits import STEP_CONTENT_BYTES, STEP_CONTENT_DEPTH
from buddy.platform.protocol.values import step_content_refusal
from buddy.runtime.loop import bounded
from buddy.testing import TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.runtime.test_data_visibility import CARDIO

pytestmark = pytest.mark.anyio


def nested(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


@pytest.mark.parametrize(
    ("raw", "kept_as_text"),
    [
        (nested(STEP_CONTENT_DEPTH), False),
        (nested(STEP_CONTENT_DEPTH + 1), True),
        (nested(100_000), True),  # deeper than Python's recursion: json.loads gives up
        ("{not json", True),
        ('{"text": "' + "长" * (STEP_CONTENT_BYTES // 3) + '"}', True),
        ('{"text": "' + "a" * (STEP_CONTENT_BYTES - 100) + '"}', False),
        ('{"n": NaN}', True),  # Python reads it; JSON cannot carry it
        ('{"text": "\\ud800"}', True),  # a lone surrogate: not valid Unicode
    ],
)
async def test_tool_arguments_are_recorded_within_the_platforms_limits(
    platform: LocalPlatform, raw: str, kept_as_text: bool
) -> None:
    tokens = await platform.register("cardio")
    conv = await platform.conversation("cardio-dev")
    model = TestModel([call("remember", raw=raw), "好的。"])
    async with running_buddy(platform, CARDIO, model, tokens["dev_token"]):
        await platform.wait_acked("cardio-dev", await platform.say(conv["id"], "记一下"))
    (turn,) = await platform.turns(conv["id"])
    assert turn["reply"] == "好的。"
    (recorded,) = [s["content"] for s in turn["steps"] if s["type"] == "tool_call"]
    assert isinstance(recorded, str) == kept_as_text
    size = len(json.dumps(recorded, ensure_ascii=False, separators=(",", ":")).encode())
    assert size <= STEP_CONTENT_BYTES + 2


@pytest.mark.parametrize(
    "text",
    ["长" * STEP_CONTENT_BYTES, "\n" * (STEP_CONTENT_BYTES // 2 + 1), "\x01" * 50_000, "a\ud800b"],
)
def test_every_bounded_text_is_one_the_platform_takes(text: str) -> None:
    assert step_content_refusal(0, text) is not None
    assert step_content_refusal(0, bounded(text)) is None


def test_bounded_cuts_text_to_the_byte_limit_and_says_so() -> None:
    text = "长" * STEP_CONTENT_BYTES
    cut = bounded(text)
    assert len(cut.encode()) <= STEP_CONTENT_BYTES
    assert cut.endswith(f"…[cut: {STEP_CONTENT_BYTES} characters in all]")
    assert step_content_refusal(0, cut) is None
    assert bounded("短") == "短"
    assert bounded({"a": [1, 2]}) == {"a": [1, 2]}
