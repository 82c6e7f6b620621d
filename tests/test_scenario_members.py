"""Scenario files in a group: `facts` and `mood` name the member (`member:`) — checked
when the file is read — and what a failing expectation prints names the members."""

from __future__ import annotations

from pathlib import Path

import pytest

from buddy.testing.scenarios import run_scenario
from tests.test_scenarios import XIAOMAN, _suite

pytestmark = pytest.mark.anyio

GROUP_STEP = (
    "- name: a\n  conversation: {{ kind: group, members: [小李, 小王] }}\n  steps:\n    - {}\n"
)


@pytest.mark.parametrize(
    ("step", "code", "message"),
    [
        ("expect: { mood: { anger: 0 } }", "member-required", "in a group the mood is kept"),
        (
            "expect: { facts: [{ relation: nickname, slots: { subject: user } }] }",
            "member-required",
            "in a group each member's facts are their own",
        ),
        ("expect: { facts: [{ relation: nickname, member: 小张 }] }", "member-unknown", "'小张'"),
        ("expect: { mood: [{ member: 小张, anger: 0 }] }", "member-unknown", "'小张'"),
    ],
    ids=["mood", "facts-user", "facts-unknown", "mood-unknown"],
)
def test_group_companion_expectations_name_whose(
    tmp_path: Path, step: str, code: str, message: str
) -> None:
    # In a group facts and mood are kept per member: an expectation says whose, and the
    # member is one of the conversation's — checked when the file is read.
    suite = _suite(tmp_path, GROUP_STEP.format(step), XIAOMAN)
    (found,) = suite.issues
    assert (found.line, found.code) == (4, code), found
    assert message in found.message, found.message


GROUP_MISSES = """\
- name: 各记各的
  conversation: { kind: group, members: [小李, 小王] }
  steps:
    - user: 叫我阿明
      as: 小李
      model: [嗯。]
    - user: 这都第几回了
      as: 小王
      extract: { appraisal: { offence: 0.8 } }
      model: [哼。]
      expect:
        facts:
          - { relation: nickname, member: 小王, value: 阿明 }
          - { relation: nickname, member: 小李, value: 小明 }
        mood: [{ member: 小李, anger: 0.35 }, { member: 小王, anger: 0.35 }]
"""


async def test_a_failing_group_expectation_names_the_member(tmp_path: Path) -> None:
    suite = _suite(tmp_path, GROUP_MISSES, XIAOMAN)
    assert suite.issues == []
    result = await run_scenario(XIAOMAN, suite, 0)
    assert [(f.path, f.message) for f in result.failures] == [
        (
            "[0].steps[1].expect.facts[0]",
            'expected a nickname fact of 小王, got nickname of 小李 kept "阿明"',
        ),
        (
            "[0].steps[1].expect.facts[1]",
            'expected nickname of 小李 kept = "小明", got kept = "阿明"',
        ),
        ("[0].steps[1].expect.mood[0].anger", "expected anger 0.35 toward 小李, got 0"),
    ]
