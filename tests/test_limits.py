"""Every static limit of SPEC §4 and the manifest, on both sides of the bound."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import buddy

BASE: dict[str, Any] = {
    "name": "limits",
    "model": {"name": "gpt-5", "temperature": 1, "fallbacks": ["kimi-k3"]},
    "persona": {"prompt": "hi"},
    "tools": [
        "ask_question",
        {
            "name": "lookup",
            "label": "查",
            "description": "查一下",
            "parameters": {"type": "object"},
            "handler": "plugins.tools:lookup",
        },
    ],
    "hooks": {
        "before_tool_call": [{"deny": ["ask_question"], "when": "proactive", "reason": "不查"}]
    },
    "data": {"requirements": [{"id": "health.sleep", "purpose": "作息"}]},
    "proactive": {
        "prompt": "主动",
        "subscriptions": [
            {
                "key": "weekly",
                "title": "复盘",
                "reason": "每周",
                "trigger": {
                    "type": "schedule",
                    "at": "2026-12-07T20:00:00+08:00",
                    "interval_minutes": 10080,
                },
                "quiet_hours": {"start": "22:30", "end": "08:00", "timezone": "Asia/Shanghai"},
            }
        ],
    },
}
SUB = ("proactive", "subscriptions", 0)


def _sub(n: int) -> dict[str, Any]:
    return {"key": f"s{n}", "title": "t", "reason": "r", "trigger": "sleep.ready"}


# (path, valid value, invalid value, expected code)
LIMITS: list[tuple[tuple[Any, ...], Any, Any, str]] = [
    (("name",), "a" * 63, "a" * 64, "pattern"),
    (("name",), "a", "", "pattern"),
    (("name",), "0-a", "-a", "pattern"),
    (("title",), "题" * 100, "题" * 101, "length"),
    (("title",), "题", "", "length"),
    (("description",), "d" * 1000, "d" * 1001, "length"),
    (("version",), 1, 2, "enum"),
    (("model", "temperature"), 0, -0.1, "range"),
    (("model", "temperature"), 2, 2.01, "range"),
    (("model", "top_p"), 1, 1.01, "range"),
    (("model", "top_p"), 0.01, 0, "range"),
    (("model", "max_tokens"), 1, 0, "range"),
    (("model", "fallbacks"), ["kimi-k3"] * 8, ["kimi-k3"] * 9, "length"),
    (("persona", "prompt"), "x", "", "length"),
    (("tools", 1, "name"), "n" * 64, "n" * 65, "pattern"),
    (("tools", 1, "name"), "a-Z_9", "a.b", "pattern"),
    (("tools", 1, "label"), "标" * 64, "标" * 65, "length"),
    (("tools", 1, "description"), "述" * 1024, "述" * 1025, "length"),
    (("tools", 1, "description"), "述", "", "length"),
    (("tools", 1, "timeout_seconds"), 600, 601, "range"),
    (("tools", 1, "timeout_seconds"), 0.5, 0, "range"),
    (("hooks", "before_tool_call", 0, "reason"), "因" * 500, "因" * 501, "length"),
    (("hooks", "before_tool_call", 0, "reason"), "因", "", "length"),
    (("hooks", "before_tool_call", 0, "deny"), ["ask_question"], [], "length"),
    (("data", "requirements", 0, "purpose"), "用" * 200, "用" * 201, "length"),
    (("data", "requirements", 0, "purpose"), "用", "", "length"),
    (("proactive", "prompt"), "p" * 4000, "p" * 4001, "length"),
    (
        ("proactive", "subscriptions"),
        [_sub(n) for n in range(20)],
        [_sub(n) for n in range(21)],
        "length",
    ),
    ((*SUB, "key"), "k" * 64, "k" * 65, "pattern"),
    ((*SUB, "key"), "a._-9", "_a", "pattern"),
    ((*SUB, "key"), "9a", "Weekly", "pattern"),
    ((*SUB, "title"), "题" * 100, "题" * 101, "length"),
    ((*SUB, "title"), "题", "", "length"),
    ((*SUB, "reason"), "因" * 500, "因" * 501, "length"),
    ((*SUB, "reason"), "因", "", "length"),
    ((*SUB, "trigger", "interval_minutes"), 60, 59, "range"),
    ((*SUB, "trigger", "interval_minutes"), 525600, 525601, "range"),
    ((*SUB, "trigger", "at"), "2026-12-07T20:00:00Z", "2026-12-07T20:00:00", "datetime-offset"),
    ((*SUB, "cooldown_minutes"), 0, -1, "range"),
    ((*SUB, "cooldown_minutes"), 10080, 10081, "range"),
    ((*SUB, "daily_limit"), 1, 0, "range"),
    ((*SUB, "daily_limit"), 20, 21, "range"),
    ((*SUB, "quiet_hours", "start"), "23:59", "24:00", "time-format"),
    ((*SUB, "quiet_hours", "end"), "00:00", "8:00", "time-format"),
    ((*SUB, "quiet_hours", "timezone"), "Europe/Berlin", "Mars/Base", "timezone"),
    ((*SUB, "activate"), "manual", "later", "enum"),
    ((*SUB, "trigger"), "workout.completed", "run.finished", "enum"),
]


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _check(project: Path, data: dict[str, Any]) -> list[str]:
    (project / "plugins").mkdir(exist_ok=True)
    (project / "plugins" / "tools.py").write_text("def lookup(conversation, params): ...\n")
    (project / "buddy.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    _, issues = buddy.check(project)
    return [i.code for i in issues]


def test_base_is_valid(project: Path) -> None:
    assert _check(project, BASE) == []


@pytest.mark.parametrize(
    ("path", "good", "bad", "code"),
    LIMITS,
    ids=[".".join(map(str, p)) + f"-{c}" for p, _, _, c in LIMITS],
)
def test_limit(project: Path, path: tuple[Any, ...], good: Any, bad: Any, code: str) -> None:
    assert _check(project, _set(BASE, path, good)) == []
    assert _check(project, _set(BASE, path, bad)) == [code]


def test_requirement_count(project: Path) -> None:
    # The catalogue has six datasets; 33 entries are refused for their number before
    # anything else, and all six distinct ones are fine.
    from buddy import DATA_ACCESS_CAPABILITIES

    six = [{"id": d, "purpose": "p"} for d in DATA_ACCESS_CAPABILITIES]
    assert _check(project, _set(BASE, ("data", "requirements"), six)) == []
    many = [{"id": "health.sleep", "purpose": f"p{n}"} for n in range(33)]
    assert _check(project, _set(BASE, ("data", "requirements"), many)) == ["length"]
