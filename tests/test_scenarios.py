"""Scenario tests (`buddy test`): located format errors, located failures, the command's
output, JUnit XML, exit codes, the committed JSON Schema, and the docs' examples."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import date, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import buddy
from buddy.cli import scenarios as cli
from buddy.testing.expectations import Expect, Observed, State, check, subset
from buddy.testing.scenarios import (
    ACTIONS,
    Suite,
    duration_seconds,
    read_suite,
    run_scenario,
    schema_text,
)
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

AUNT = buddy.load(REPO / "manifests" / "aunt-tu")
CARDIO = buddy.load(REPO / "manifests" / "cardio")
XIAOMAN = buddy.load(REPO / "manifests" / "xiaoman")
BLUEPRINTS = {"aunt-tu": AUNT, "cardio": CARDIO, "xiaoman": XIAOMAN}
EXAMPLES = sorted((REPO / "manifests").glob("*/tests/*.yaml"))
DOC = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
SCHEMA = json.loads((REPO / "docs" / "scenario.schema.json").read_text(encoding="utf-8"))

TINY = """\
name: tiny
model: test
persona:
  prompt: 你是一个测试用的小伙伴。
tools:
  - ask_question
  - name: remember
    uses: memory.write
    description: 记下一条
    key: "{{ topic }}"
    text: "{{ text }}"
"""
TINY_SCENARIOS = """\
scenarios:
  - name: 打招呼
    steps:
      - user: 你好
        model: [你好呀]
        expect: { reply: 你好呀 }
  - name: 记住口味
    steps:
      - user: 我不吃香菜
        model:
          - call: remember
            args: { topic: 忌口, text: 不吃香菜 }
          - 记住了。
        expect:
          memory: { 忌口: 不吃香菜 }
          reply: { contains: 记住 }
"""
BROKEN = """\
- name: 回复不对
  steps:
    - user: 你好
      model: [你好呀]
      expect:
        reply: 早上好
    - user: 这一步不会运行
      model: [嗯]
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one small buddy, `tiny/`, and its passing scenarios; cwd is the project."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tiny" / "tests").mkdir(parents=True)
    (tmp_path / "tiny" / "buddy.yaml").write_text(TINY, encoding="utf-8")
    (tmp_path / "tiny" / "tests" / "chat.yaml").write_text(TINY_SCENARIOS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BUDDY_MODEL", raising=False)
    return tmp_path / "tiny"


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example buddies (without their scenarios); cwd is the copy's root."""
    shutil.copytree(
        REPO / "manifests", tmp_path / "manifests", ignore=shutil.ignore_patterns("tests")
    )
    shutil.copytree(REPO / "plugins", tmp_path / "plugins")
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _suite(tmp_path: Path, text: str, blueprint: Any = AUNT) -> Suite:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return read_suite(path, blueprint, display="scenario.yaml")


# ---------------------------------------------------------------- the format


FORMAT_MISTAKES = [
    pytest.param(
        "- name: a\n  steps:\n    - usr: 你好\n",
        [(3, 7, "unknown-key")],
        "did you mean `user`?",
        id="unknown-step-key",
    ),
    pytest.param(
        "scenario:\n  - name: a\n",
        [(1, 1, "missing-key"), (1, 1, "unknown-key")],
        "did you mean `scenarios`?",
        id="unknown-top-key",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - user: 你好\n      click: 一\n",
        [(4, 7, "step-kind")],
        "split them into two steps",
        id="two-actions",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - advance: 2x\n    - advance: true\n",
        [(3, 16, "duration"), (4, 16, "type")],
        "",
        id="durations",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - data: { dataset: health.sleep, items: [] }\n      model: [好]\n",
        [(4, 7, "model-without-turn")],
        "put `model:` on the step that makes the buddy answer",
        id="model-without-turn",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - user: 你好\n      model:\n        - call: plan_mnu\n",
        [(5, 17, "unknown-tool")],
        "did you mean `plan_menu`?",
        id="unknown-tool",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - user: 你好\n      model:\n        - call: widget_send\n"
        '          args: { widget_id: "{{ widget_create.id }}" }\n',
        [(6, 30, "placeholder")],
        "earlier responses",
        id="placeholder-before-the-call",
    ),
    pytest.param(
        "- name: a\n  conversation: { kind: group, members: [小李, 小王] }\n  steps:\n"
        "    - user: 你好\n    - user: 在吗\n      as: 小张\n",
        [(4, 7, "member-required"), (6, 11, "member-unknown")],
        "members: 小李, 小王",
        id="group-members",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - user: 你好\n      expect: { reply: { matches: '(' } }\n",
        [(4, 35, "regex")],
        "",
        id="regex",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - consent: yes\n    - trigger: { type: schedule }\n",
        [(3, 16, "enum"), (4, 24, "enum")],
        "",
        id="enums",
    ),
    pytest.param(
        "- name: a\n  steps:\n    - expect: { widget: { type: menu, module: dish } }\n",
        [(3, 47, "unknown-widget")],
        "did you mean `dishes`?",
        id="widget-module",
    ),
    pytest.param(
        "- name: a\n  steps: [{user: 一}]\n- name: a\n  steps: [{user: 二}]\n",
        [(3, 9, "duplicate-name")],
        "",
        id="duplicate-names",
    ),
    pytest.param("- name: a\n  steps: [\n", [(3, 1, "yaml-syntax")], "", id="yaml-syntax"),
    pytest.param("just text\n", [(1, 1, "yaml-not-mapping")], "", id="not-a-list"),
]


@pytest.mark.parametrize(("text", "where", "hint"), FORMAT_MISTAKES)
def test_format_errors_are_located(
    tmp_path: Path, text: str, where: list[tuple[int, int, str]], hint: str
) -> None:
    suite = _suite(tmp_path, text)
    assert [(i.line, i.column, i.code) for i in suite.issues] == where, suite.issues
    assert all(i.file == "scenario.yaml" for i in suite.issues)
    assert suite.scenarios == []
    if hint:
        assert any(hint in i.hint or hint in i.message for i in suite.issues), suite.issues


KEY_MISTAKES = [
    pytest.param(
        "expect: { mood: { angry: 0.5 } }",
        (3, 25, "unknown-key", "unknown key `angry`", "did you mean `anger`?"),
        id="mood-near",
    ),
    pytest.param(
        "expect: { mood: { calm: 0.5 } }",
        (3, 25, "unknown-key", "unknown key `calm`", "allowed keys: anger, sadness, trust, member"),
        id="mood-far",
    ),
    pytest.param(
        "expect: { mood: { 1: 0.5 } }",
        (3, 25, "unknown-key", "unknown key `1`", "allowed keys: anger, sadness, trust, member"),
        id="mood-number",
    ),
    pytest.param(
        "extract: { appraisal: { offense: 0.5 } }\n      user: 你好",
        (3, 31, "unknown-key", "unknown key `offense`", "did you mean `offence`?"),
        id="appraisal",
    ),
    pytest.param(
        "expect: { memory: { '': x } }",
        (3, 27, "length", "keys of `[0].steps[0].expect.memory` must not be empty", ""),
        id="memory-empty-key",
    ),
    pytest.param(
        "expect: { subscriptions: { 1: active } }",
        (
            3,
            34,
            "type",
            "keys of `[0].steps[0].expect.subscriptions` must be strings (got the number 1)",
            "quote the key",
        ),
        id="subscriptions-number-key",
    ),
]


@pytest.mark.parametrize(("step", "issue"), KEY_MISTAKES)
def test_a_wrong_key_is_named_for_what_is_wrong(
    tmp_path: Path, step: str, issue: tuple[int, int, str, str, str]
) -> None:
    # A key outside a mapping's fixed keys is unknown (not "must be a string"), like a
    # key outside a model's fields; only a key that is not a string is told to be quoted.
    suite = _suite(tmp_path, f"- name: a\n  steps:\n    - {step}\n")
    (found,) = suite.issues
    line, column, code, message, hint = issue
    assert (found.line, found.column, found.code, found.hint) == (line, column, code, hint)
    assert found.message.startswith(message), found.message


COMPANION_MISTAKES = [
    pytest.param(
        "expect: { facts: [{ relation: debt, slots: { iten: 奶茶 } }] }",
        "iten",
        ("unknown-slot", "the relation debt has no slot `iten`", "did you mean `item`?"),
        id="facts-slot",
    ),
    pytest.param(
        "expect: { facts: [{ relation: dept, status: absent }] }",
        "dept",
        ("unknown-relation", "xiaoman declares no relation `dept`", "did you mean `debt`?"),
        id="facts-relation",
    ),
    pytest.param(
        "expect: { facts: [{ relation: allergy }] }",
        "allergy",
        (
            "unknown-relation",
            "xiaoman declares no relation `allergy`",
            "relations: nickname, preference, debt",
        ),
        id="facts-relation-far",
    ),
    pytest.param(
        "expect: { lore: [同桌, 班主] }",
        "班主",
        ("unknown-lore", "xiaoman has no lore entry `班主`", "did you mean `班主任`?"),
        id="lore-name",
    ),
    pytest.param(
        "expect: { lore: [schol/奶茶] }",
        "schol/奶茶",
        ("unknown-lore", "xiaoman has no lore entry `schol/奶茶`", "did you mean `school/奶茶`?"),
        id="lore-book",
    ),
    pytest.param(
        "expect: { mood: { trsut: 0.5 } }",
        "trsut",
        ("unknown-key", "unknown key `trsut`", "did you mean `trust`?"),
        id="mood-key",
    ),
    pytest.param(
        "extract: { facts: [{ relation: debt, slots: { debtor: user, iten: 奶茶 } }] }\n"
        "      user: 你好",
        "iten",
        ("unknown-slot", "the relation debt has no slot `iten`", "did you mean `item`?"),
        id="extract-slot",
    ),
    pytest.param(
        "extract: { facts: [{ relation: nicknam, slots: { name: 阿明 } }] }\n      user: 你好",
        "nicknam",
        ("unknown-relation", "xiaoman declares no relation `nicknam`", "did you mean `nickname`?"),
        id="extract-relation",
    ),
]


@pytest.mark.parametrize(("step", "where", "issue"), COMPANION_MISTAKES)
def test_companion_expectations_are_checked_against_the_buddy_when_read(
    tmp_path: Path, step: str, where: str, issue: tuple[str, str, str]
) -> None:
    # Relations and slots against the buddy's relation specs, lore entries against its
    # books, mood keys against the fixed ones: located at the word, with did-you-mean,
    # before any step runs (not "expected a debt fact, got debt kept 2" after).
    suite = _suite(tmp_path, f"- name: a\n  steps:\n    - {step}\n", XIAOMAN)
    (found,) = suite.issues
    code, message, hint = issue
    column = len("    - ") + step.index(where) + 1
    assert (found.line, found.column, found.code, found.hint) == (3, column, code, hint)
    assert found.message.startswith(message), found.message
    assert suite.scenarios == []


@pytest.mark.parametrize(
    ("step", "code"),
    [
        ("expect: { mood: { anger: 0.5 } }", "character-undeclared"),
        ("expect: { lore: [奶茶] }", "lore-undeclared"),
        ("expect: { card: '' }", "memory-undeclared"),
        ("expect: { facts: [{ relation: allergy }] }", "memory-undeclared"),
    ],
)
def test_companion_expectations_need_what_they_read(tmp_path: Path, step: str, code: str) -> None:
    (tmp_path / "buddy.yaml").write_text(TINY, encoding="utf-8")
    suite = _suite(tmp_path, f"- name: a\n  steps:\n    - {step}\n", buddy.load(tmp_path))
    assert [(i.line, i.code) for i in suite.issues] == [(3, code)], suite.issues


def test_buddy_test_refuses_a_misspelt_expectation_before_running(
    examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = examples / "manifests/xiaoman/tests/bad.yaml"
    path.parent.mkdir()
    path.write_text(
        "- name: a\n  steps:\n    - user: 行吧，算我欠你一杯奶茶\n      model: [好]\n"
        "      expect:\n        facts: [{ relation: debt, slots: { iten: 奶茶 } }]\n"
        "        lore: [同座]\n",
        encoding="utf-8",
    )
    assert cli.test(["manifests/xiaoman"], None, None, None) == 1
    out = capsys.readouterr().out
    assert "bad.yaml:6:44: error: the relation debt has no slot `iten`" in out
    assert "did you mean `item`?" in out
    assert "bad.yaml:7:16: error: xiaoman has no lore entry `同座`" in out
    assert "entries: 同桌, 奶茶, 天台, 班主任" in out
    assert "expected a debt fact" not in out
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    # A format error in one step does not hide the buddy-related errors of the others.
    text = (
        "- name: a\n  steps:\n    - usr: 你好\n    - grant: { dataset: health.sleep }\n"
        "    - user: 你好\n      model: [{ call: plan_mnu }]\n"
    )
    codes = [i.code for i in _suite(tmp_path, text).issues]
    assert codes == ["unknown-key", "dataset-not-declared", "unknown-tool"]


def test_list_and_mapping_forms_are_the_same(tmp_path: Path) -> None:
    listed = _suite(tmp_path, BROKEN)
    mapped = _suite(
        tmp_path, "scenarios:\n" + "".join(f"  {line}\n" for line in BROKEN.splitlines())
    )
    assert [s for _, s in listed.scenarios] == [s for _, s in mapped.scenarios]
    assert [p for p, _ in listed.scenarios] == [(0,)]
    assert [p for p, _ in mapped.scenarios] == [("scenarios", 0)]


@pytest.mark.parametrize(
    ("text", "seconds"), [("45s", 45), ("90m", 5400), ("1h30m", 5400), ("1d", 86400), (7, 7)]
)
def test_durations(text: str | int, seconds: int) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize(
    "path", EXAMPLES, ids=[f"{p.parent.parent.name}/{p.name}" for p in EXAMPLES]
)
def test_example_scenarios_are_valid(path: Path) -> None:
    suite = read_suite(path, BLUEPRINTS[path.parent.parent.name])
    assert suite.issues == []
    assert suite.scenarios


def test_example_scenarios_cover_the_format() -> None:
    used: set[str] = set()
    for path in EXAMPLES:
        for _, scenario in read_suite(path).scenarios:
            for step in scenario.steps:
                used |= {"as" if f == "as_" else f for f in step.model_fields_set}
                if step.expect is not None:
                    used |= step.expect.model_fields_set
    assert set(ACTIONS) - {"revoke"} <= used
    assert set(Expect.model_fields) <= used
    assert {"as", "model"} <= used


def test_schema_is_current() -> None:
    committed = (REPO / "docs" / "scenario.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(), (
        "docs/scenario.schema.json is stale: run `buddy schema --write docs`"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, date | datetime):
        return value.isoformat()  # what an editor sees: YAML 1.2 has no date type
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_schema_accepts_the_examples_and_flags_mistakes() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for path in EXAMPLES:
        suite = read_suite(path)
        assert suite.doc is not None
        errors = list(validator.iter_errors(_plain(suite.doc.data)))
        assert not errors, f"{path}: {errors[0].message}"
    for step in (
        {"usr": "你好"},
        {"user": "你好", "click": "一"},
        {"advance": "2x"},
        {"user": "你好", "model": [{"call": "a", "calls": ["b"]}]},
        {"user": "你好", "expect": {"reply": {"contain": "好"}}},
    ):
        assert not validator.is_valid({"scenarios": [{"name": "a", "steps": [step]}]}), step


def test_every_format_key_is_in_the_docs() -> None:
    def properties(node: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    found |= set(value)
                found |= properties(value)
        elif isinstance(node, list):
            for item in node:
                found |= properties(item)
        return found

    missing = sorted(k for k in properties(SCHEMA) if f"`{k}`" not in DOC)
    assert not missing, f"document these keys in docs/testing.md: {missing}"


# ---------------------------------------------------------------- expectations, offline


def _redaction(turn: dict[str, Any], values: set[str]) -> list[str]:
    seen = Observed(turns=[turn])
    failures, _ = check(Expect(stored_redacted=True), seen, State(stored_redacted=values))
    return [m.message for m in failures]


STORED_OK = {
    "data_read": True,
    "reply": "睡得不错",
    "steps": [
        {"type": "tool_call", "tool": "data_access_query", "content": {"datasets": ["s"]}},
        {"type": "tool_result", "tool": "data_access_query", "content": {"s": "available"}},
        {"type": "tool_call", "tool": "remember", "redacted": True, "content": None},
        {"type": "text", "content": "睡得不错", "redacted": False},
    ],
}


def test_the_redaction_check_catches_what_must_not_be_stored() -> None:
    assert _redaction(STORED_OK, {"987654"}) == []
    leaked = json.loads(json.dumps(STORED_OK))
    leaked["steps"][2] = {"type": "tool_call", "tool": "remember", "content": {"t": "987654"}}
    problems = _redaction(leaked, {"987654"})
    assert any("not redacted" in p for p in problems)
    assert any("user-data values: 987654" in p for p in problems)
    values = json.loads(json.dumps(STORED_OK))
    values["steps"][1]["content"] = {"s": "available", "items": [{"asleep_minutes": 987654}]}
    assert any("not statuses only" in p for p in _redaction(values, {"987654"}))
    assert _redaction({**STORED_OK, "data_read": False}, set()) == [
        "expected a turn that read user data, but no turn of this step did"
    ]


@pytest.mark.parametrize(
    ("expected", "actual", "holds"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": [1, 2]}, {"a": [1, 2, 3]}, False),
        ({"a": 5}, {"a": 5.0}, True),
    ],
)
def test_argument_and_record_subsets(expected: Any, actual: Any, holds: bool) -> None:
    assert subset(expected, actual) is holds


# ---------------------------------------------------------------- running


async def test_a_broken_expectation_fails_with_a_located_message(tmp_path: Path) -> None:
    suite = _suite(tmp_path, BROKEN)
    result = await run_scenario(AUNT, suite, 0)
    assert not result.passed
    (failure,) = result.failures  # the scenario stopped at its failing step
    assert (failure.file, failure.line, failure.column) == ("scenario.yaml", 6, 16)
    assert failure.path == "[0].steps[0].expect.reply"
    assert str(failure) == (
        'scenario.yaml:6:16: expected the reply "早上好", got "你好呀" [[0].steps[0].expect.reply]'
    )


SCRIPT_MISMATCHES = [
    pytest.param(
        "      model:\n        - call: resource_list\n",
        (4, 7),
        "the buddy asked the model for response 2 of this step, but `model:` scripts 1",
        id="too-few",
    ),
    pytest.param(
        "      model: [好, 多余的]\n",
        (4, 18),
        "this step scripts 2 model responses but the buddy asked for 1",
        id="too-many",
    ),
    pytest.param(
        "",
        (3, 7),
        "the buddy asked the model for response 1 of this step, but the step has no `model:`",
        id="none",
    ),
    pytest.param(
        "      model:\n        - call: widget_create\n          args: { type: menu, title: 菜单 }\n"
        '        - call: widget_send\n          args: { widget_id: "{{ widget_create.idd }}" }\n'
        "        - 好\n",
        (8, 30),
        "`{{ widget_create.idd }}`: the result of widget_create has no `idd` (it has: id)",
        id="placeholder-value",
    ),
]


@pytest.mark.parametrize(("model", "where", "message"), SCRIPT_MISMATCHES)
async def test_scripted_responses_must_match_the_turns(
    tmp_path: Path, model: str, where: tuple[int, int], message: str
) -> None:
    suite = _suite(tmp_path, "- name: a\n  steps:\n    - user: 你好\n" + model)
    assert suite.issues == []
    result = await run_scenario(AUNT, suite, 0)
    assert [(f.line, f.column) for f in result.failures] == [where], result.failures
    assert message in result.failures[0].message


ISOLATED = """\
- name: 授权、写数据、记下
  steps:
    - grant: { dataset: health.sleep }
    - data: { dataset: health.sleep, items: [{ date: 2026-11-29, asleep_minutes: 987654 }] }
    - user: 记一下我下月跑半马
      model:
        - call: remember
          args: { topic: 目标, text: 下月跑半马 }
        - 记下了。
      expect: { memory: { 目标: 下月跑半马 } }
- name: 下一个场景看不到上一个的
  steps:
    - user: 我睡得怎么样
      model:
        - call: data_access_query
          args: { datasets: [health.sleep] }
        - 不知道。
      expect:
        tool_result: { tool: data_access_query, contains: notGranted }
        memory_keys: []
        messages: 1
"""


@pytest.mark.parametrize("sockets", [False, True], ids=["in-process", "sockets"])
async def test_a_scenario_sees_nothing_of_the_one_before(tmp_path: Path, sockets: bool) -> None:
    # Every scenario gets a platform of its own (its apps share only FastAPI's routes): the
    # grant, the data and the memory of the first are not in the second's.
    suite = _suite(tmp_path, ISOLATED, CARDIO)
    assert suite.issues == []
    for index in range(2):
        result = await run_scenario(CARDIO, suite, index, sockets=sockets)
        assert result.passed, [str(f) for f in result.failures]


# ---------------------------------------------------------------- the command


def test_progress_located_failures_and_summary(
    tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tiny / "tests" / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    assert cli.test(["tiny"], None, None, None) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "FAIL 回复不对 (tiny/tests/broken.yaml:1)",
        '    tiny/tests/broken.yaml:6:16: expected the reply "早上好", got "你好呀" '
        "[[0].steps[0].expect.reply]",
        "PASS 打招呼 (tiny/tests/chat.yaml:2)",
        "PASS 记住口味 (tiny/tests/chat.yaml:7)",
        "2 passed, 1 failed",
    ]


def test_junit_xml(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "tests" / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    (tiny / "tests" / "invalid.yaml").write_text("- name: x\n  steps: [{usr: 你好}]\n")
    assert cli.test(["tiny"], None, "out/junit.xml", None) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "2 passed, 2 failed"
    root = ET.parse("out/junit.xml").getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {
        "tiny/tests/broken.yaml",
        "tiny/tests/chat.yaml",
        "tiny/tests/invalid.yaml",
    }
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["打招呼"].get("classname") == "tiny.chat"
    assert cases["打招呼"].find("failure") is None
    failure = cases["回复不对"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("tiny/tests/broken.yaml:6:16: expected the reply")
    assert (cases["回复不对"].get("file"), cases["回复不对"].get("line")) == (
        "tiny/tests/broken.yaml",
        "1",
    )
    error = cases["(invalid scenario file)"].find("error")
    assert error is not None and "tiny/tests/invalid.yaml:2:12" in (error.text or "")


def test_k_selects_scenarios_by_name(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.test(["tiny"], None, None, "口味") == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "PASS 记住口味 (tiny/tests/chat.yaml:7)",
        "(1 deselected by -k '口味')",
        "1 passed, 0 failed",
    ]
    assert cli.test(["tiny"], None, None, "没有这个") == 2
    assert "no scenario matches -k" in capsys.readouterr().err


def test_a_scenario_file_can_be_named_alone(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "tests" / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    assert cli.test(["tiny/tests/chat.yaml"], None, None, None) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 passed, 0 failed"


def test_usage_errors(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.test(["nowhere"], None, None, None) == 2
    assert "nowhere: no such file or directory" in capsys.readouterr().err
    (tiny.parent / "empty").mkdir()
    assert cli.test(["empty"], None, None, None) == 2
    assert "no buddy.yaml found" in capsys.readouterr().err
    shutil.rmtree(tiny / "tests")
    assert cli.test(["tiny"], None, None, None) == 2
    assert "no scenario files" in capsys.readouterr().err


def test_a_buddy_without_scenarios_is_reported(
    tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tiny.parent / "quiet").mkdir()
    (tiny.parent / "quiet" / "buddy.yaml").write_text(TINY.replace("name: tiny", "name: quiet"))
    assert cli.test(["."], None, "report.xml", "打招呼") == 0
    assert capsys.readouterr().out.splitlines() == [
        "no scenarios: quiet (add tests/*.yaml)",
        "PASS 打招呼 (tiny/tests/chat.yaml:2)",
        "(1 deselected by -k '打招呼')",
        "1 passed, 0 failed",
    ]
    root = ET.parse("report.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("2", "0", "1")
    (case,) = [c for c in root.iter("testcase") if c.get("name") == "(no scenarios)"]
    assert (case.get("classname"), case.get("file")) == ("quiet", "quiet")
    assert case.find("skipped") is not None

    assert cli.test(["."], None, "report.xml", "打招呼", require_scenarios=True) == 1
    assert capsys.readouterr().out.splitlines() == [
        "FAIL quiet (no scenarios: add tests/*.yaml)",
        "PASS 打招呼 (tiny/tests/chat.yaml:2)",
        "(1 deselected by -k '打招呼')",
        "1 passed, 1 failed",
    ]
    root = ET.parse("report.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("2", "1", "0")
    from buddy.cli.main import main

    assert main(["test", ".", "--require-scenarios"]) == 1
    assert "FAIL quiet (no scenarios" in capsys.readouterr().out


def test_profile_compiles_each_buddy_with_that_profile(
    tiny: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from buddy.cli.main import main
    from buddy.testing import scenarios

    (tiny / "buddy.yaml").write_text(TINY + "profiles:\n  ci: { model: offline }\n")
    models: list[str] = []
    real = scenarios.run_scenario

    async def spy(blueprint: Any, *args: Any, **kwargs: Any) -> Any:
        models.append(blueprint.model.ref)
        return await real(blueprint, *args, **kwargs)

    monkeypatch.setattr(scenarios, "run_scenario", spy)
    monkeypatch.delenv("BUDDY_PROFILE", raising=False)
    assert main(["test", "tiny", "-k", "打招呼"]) == 0
    assert main(["test", "tiny", "-k", "打招呼", "--profile", "ci"]) == 0
    monkeypatch.setenv("BUDDY_PROFILE", "ci")
    assert main(["test", "tiny", "-k", "打招呼"]) == 0
    assert models == ["test:test", "offline:offline", "offline:offline"]  # still scripted
    capsys.readouterr()
    assert main(["test", "tiny", "--profile", "nope"]) == 1
    out = capsys.readouterr().out
    assert "FAIL tiny/tests/chat.yaml (its buddy is invalid)" in out
    assert "unknown profile `nope` [profiles] (unknown-profile)" in out


def test_an_invalid_buddy_fails_its_scenario_files(
    tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tiny / "buddy.yaml").write_text(TINY.replace("model: test", "model: test\ncolour: red"))
    assert cli.test(["tiny"], None, None, None) == 1
    out = capsys.readouterr().out
    assert "FAIL tiny/tests/chat.yaml (its buddy is invalid)" in out
    assert "tiny/buddy.yaml:3:1: error: unknown key `colour`" in out
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_a_real_model_skips_exact_text_with_a_note(
    tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `test` with no script answers "(test model reply)" to everything: exact replies
    # cannot hold, `contains` still must.
    (tiny / "tests" / "chat.yaml").write_text(
        "- name: 打招呼\n  steps:\n    - user: 你好\n      model: [ignored]\n"
        "      expect:\n        reply: 你好呀\n        no_reply: false\n"
        "    - user: 再来\n      expect: { reply: { contains: test model } }\n",
        encoding="utf-8",
    )
    assert cli.test(["tiny"], "test", None, None) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "PASS 打招呼 (tiny/tests/chat.yaml:1)"
    assert out[1] == (
        "    note: tiny/tests/chat.yaml:6:16: exact reply not checked against a real model "
        "[[0].steps[0].expect.reply]"
    )
    assert out[-1] == "1 passed, 0 failed"


def test_buddy_test_manifests_passes() -> None:
    env = {k: v for k, v in os.environ.items() if k != "BUDDY_MODEL"}
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "test", "manifests/"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"\d+ passed, 0 failed", lines[-1]), lines[-1]
    assert int(lines[-1].split()[0]) == len(lines) - 1 >= 14
    assert all(line.startswith("PASS ") for line in lines[:-1])


# ---------------------------------------------------------------- the docs' examples


def _doc_blocks(language: str) -> list[tuple[str, str]]:
    """``(the paragraph before, body)`` of each fenced block of ``language``."""
    blocks = []
    previous_end = 0
    for match in re.finditer(rf"^```{language}\n(.*?)^```\n", DOC, re.S | re.M):
        blocks.append((DOC[previous_end : match.start()], match.group(1)))
        previous_end = match.end()
    return blocks


def test_the_docs_examples_are_the_example_files() -> None:
    checked = 0
    source: Path | None = None
    for before, body in _doc_blocks("yaml"):
        named = re.findall(r"[Ff]rom\s+`(manifests/[\w./-]+\.yaml)`", before)
        if named:
            source = REPO / named[-1]
        elif "from the same file" not in before:
            continue  # the broken file of §7, checked below
        assert source is not None
        assert body in source.read_text(encoding="utf-8"), f"not in {source}:\n{body}"
        checked += 1
    assert checked >= 6


def test_the_docs_error_example_is_real(examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (before, body), *_ = [(b, y) for b, y in _doc_blocks("yaml") if "held this" in b]
    path = re.findall(r"`(manifests/[\w./-]+\.yaml)`", before)[-1]
    (examples / path).parent.mkdir(parents=True, exist_ok=True)
    (examples / path).write_text(body, encoding="utf-8")
    shown = next(t for _, t in _doc_blocks("text") if t.startswith(f"$ buddy test {path}\n"))
    assert cli.test([path], None, None, None) == 1
    assert capsys.readouterr().out == shown.split("\n", 1)[1]


def test_the_docs_failure_example_is_real(
    examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = "manifests/cardio/tests/data.yaml"
    text = (REPO / data).read_text(encoding="utf-8")
    wrong = text.replace("睡眠: null }", "睡眠: 2026-11-29 睡了 987654 分钟 }")
    assert wrong != text
    (examples / data).parent.mkdir(parents=True, exist_ok=True)
    (examples / data).write_text(wrong, encoding="utf-8")
    shown = next(
        t for _, t in _doc_blocks("text") if t.startswith("$ buddy test manifests/cardio\n")
    )
    failing = [line for line in shown.splitlines() if line.startswith(("FAIL", "    "))]
    assert cli.test(["manifests/cardio"], None, None, "读过数据后") == 1
    out = capsys.readouterr().out.splitlines()
    assert out[: len(failing)] == failing


def test_the_docs_first_run_is_real(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("BUDDY_MODEL", raising=False)
    command = "$ buddy test manifests/aunt-tu/tests/cards.yaml\n"
    shown = next(t for _, t in _doc_blocks("text") if t.startswith(command))
    assert cli.test([command.rsplit(maxsplit=1)[-1]], None, None, None) == 0
    assert capsys.readouterr().out == shown.removeprefix(command)


@pytest.mark.parametrize(
    "module",
    [
        "buddy.testing.scenarios",
        "buddy.testing.scenario_format",
        "buddy.testing.expectations",
        "buddy.cli.scenarios",
    ],
)
def test_all_names_exist(module: str) -> None:
    imported = importlib.import_module(module)
    for name in imported.__all__:
        assert hasattr(imported, name), f"{module}.{name}"


async def test_an_action_the_platform_refuses_fails_with_its_code_and_reason(
    tmp_path: Path,
) -> None:
    # The dev platform's answer reaches the failure as PlatformError fields (status, code,
    # reason), not parsed back out of an exception's text.
    text = "- name: a\n  steps:\n    - data: {dataset: health.sleep, items: [{nope: 1}]}\n"
    result = await run_scenario(AUNT, _suite(tmp_path, text), 0)
    (failure,) = result.failures
    assert (failure.line, failure.column, failure.path) == (3, 7, "[0].steps[0].data")
    assert failure.message.startswith(
        "the platform refused (400 item_field_unknown): items.0.nope is not a field of health.sleep"
    )
