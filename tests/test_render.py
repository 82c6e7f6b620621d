"""`buddy render`: the compiled view is deterministic and matches the committed snapshots.

Set BUDDY_UPDATE_SNAPSHOTS=1 to rewrite the snapshots after an intended change, then
review the diff like any other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import buddy
from buddy.compile.render import render_json, render_markdown
from tests.conftest import REPO

SNAPSHOTS = Path(__file__).parent / "snapshots"
EXAMPLES = ["aunt-tu", "cardio", "xiaoman"]
CASES = [
    (b, kind, fmt) for b in EXAMPLES for kind in ("private", "group") for fmt in ("md", "json")
]


def _render(name: str, kind: str, fmt: str) -> str:
    blueprint = buddy.load(REPO / "manifests" / name)
    return (render_markdown if fmt == "md" else render_json)(blueprint, conversation=kind)


@pytest.mark.parametrize(("name", "kind", "fmt"), CASES, ids=["-".join(c) for c in CASES])
def test_snapshot(name: str, kind: str, fmt: str) -> None:
    snapshot = SNAPSHOTS / f"{name}.{kind}.{fmt}"
    text = _render(name, kind, fmt)
    if os.environ.get("BUDDY_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", EXAMPLES)
def test_byte_identical_across_processes_and_directories(name: str, tmp_path: Path) -> None:
    outputs = []
    for cwd in (REPO, tmp_path):
        result = subprocess.run(
            [sys.executable, "-m", "buddy", "render", str(REPO / "manifests" / name)],
            cwd=cwd,
            capture_output=True,
            check=True,
        )
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0] == (SNAPSHOTS / f"{name}.private.md").read_bytes()


def test_view_shows_what_the_model_and_platform_get() -> None:
    view = json.loads(_render("cardio", "group", "json"))
    assert view["conversation"]["kind"] == "group"
    assert "#m_" in view["system_prompt"]
    names = [t["name"] for t in view["tools"]]
    assert "data_access_query" in names
    assert all("parameters" in t and t["description"] for t in view["tools"])
    assert [r["id"] for r in view["data"]["requirements"]]
    assert all(r["title"] and r["schema_version"] for r in view["data"]["requirements"])
    assert view["proactive"]["subscriptions"]
    widget_tool = next(t for t in view["tools"] if t["name"] == "widget_write_record")
    for widget in view["widgets"]:
        for module in widget["modules"]:
            assert module["name"] in widget_tool["description"]
            for field in module["record"].get("properties", {}):
                assert field in widget_tool["description"]
