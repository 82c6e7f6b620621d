"""A base manifest (`abstract: true`): a supported form for `extends` targets — skipped by
discovery, accepted by `extends`, refused as a buddy of its own, accepted by the editor's
schema without a buddy's required keys; a child of a base is accepted there too."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import buddy
from buddy.cli.commands import find_manifests
from buddy.cli.main import main
from buddy.errors import ManifestError
from buddy.manifest.yamlio import parse_document
from tests.conftest import REPO, Write

BASE = """\
abstract: true   # a base: children extend it
title: 基础搭子
model: test
persona:
  prompt: 你好，我是{{ buddy.title }}，喜欢{{ food }}。
  vars: { food: 火锅 }
"""
CHILD = """\
extends: ../base/buddy.yaml
name: noodles
persona:
  vars: { food: 面条 }
"""


def _project(write: Write) -> Path:
    return write({"base/buddy.yaml": BASE, "noodles/buddy.yaml": CHILD}).parent.parent


def test_discovery_skips_a_base_and_its_children_are_buddies(write: Write) -> None:
    root = _project(write)
    assert [p.parent.name for p in find_manifests(root)] == ["noodles"]
    assert list(find_manifests(root / "base")) == []
    child = buddy.load(root / "noodles")
    assert (child.name, child.title) == ("noodles", "基础搭子")
    assert "面条" in child.persona.render(kind="private", conversation_id="c")


def test_validate_and_test_of_a_folder_with_a_base_pass(
    write: Write, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(write)
    monkeypatch.chdir(root)
    assert main(["validate", "."]) == 0
    shown = capsys.readouterr()
    assert "1 buddy valid" in shown.out + shown.err
    assert "missing required key" not in shown.out + shown.err


def test_a_base_is_not_a_buddy_of_its_own(write: Write) -> None:
    root = _project(write)
    with pytest.raises(ManifestError) as caught:
        buddy.load(root / "base" / "buddy.yaml")
    (issue,) = caught.value.issues
    assert (issue.code, issue.path, issue.line) == ("manifest-abstract", "abstract", 1)
    assert "validate one of those" in issue.hint


def test_abstract_is_not_inherited_and_false_is_a_buddy(write: Write) -> None:
    root = write({"buddy.yaml": "abstract: false\nname: a\nmodel: test\npersona: {prompt: hi}\n"})
    assert buddy.load(root).name == "a"


SCHEMA = jsonschema.Draft202012Validator(
    json.loads((REPO / "docs" / "buddy.schema.json").read_text(encoding="utf-8"))
)


def _errors(text: str) -> list[str]:
    return [e.message for e in SCHEMA.iter_errors(parse_document(text, "x").data)]


def test_the_editor_schema_accepts_a_base_and_a_child_as_validate_does() -> None:
    assert _errors(BASE) == []  # no name: a base
    assert _errors(CHILD) == []  # no model: it comes from the base
    assert _errors("title: x\n") != []  # a buddy without its required keys
    assert _errors("abstract: false\ntitle: x\n") != []


def test_without_a_project_root_the_hint_says_how_the_root_is_found(tmp_path: Path) -> None:
    # A project without .git or pyproject.toml: its plugins/ and traits/ are above the
    # buddy, so they are not searched — the hint must say why and how to fix it.
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "running.py").write_text("async def log(p, c):\n    return 'ok'\n")
    buddy_dir = tmp_path / "buddies" / "runner"
    buddy_dir.mkdir(parents=True)
    (buddy_dir / "buddy.yaml").write_text(
        "name: runner\nmodel: test\npersona:\n  prompt: hi\n  traits: traits/calm.yaml\n"
        "tools:\n  - name: log\n    description: d\n    parameters: {type: object}\n"
        "    handler: plugins.running:log\n",
        encoding="utf-8",
    )
    with pytest.raises(ManifestError) as caught:
        buddy.load(buddy_dir)
    hints = {i.code: i.hint for i in caught.value.issues}
    for code in ("handler-module-missing", "trait-not-found"):
        assert "no project root was found" in hints[code], hints
        assert "git init" in hints[code] and "pyproject.toml" in hints[code]
    (tmp_path / "pyproject.toml").write_text("")  # marked: plugins/ is found
    with pytest.raises(ManifestError) as again:
        buddy.load(buddy_dir)
    assert {i.code for i in again.value.issues} == {"trait-not-found"}
    assert "no project root" not in again.value.issues[0].hint
