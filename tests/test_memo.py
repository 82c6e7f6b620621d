"""The check results a compile keeps for the next one (``__pycache__/buddy.checks``): used
only for the same input in the same environment, never a verdict, never in the way."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import buddy
from buddy.compile import memo
from buddy.manifest import tool_models
from tests.conftest import MINIMAL, Write
from tests.test_memory_relations import SPEC  # a relation file with patterns and examples

TOOL = """\
tools:
  - name: lookup
    description: Look a word up.
    handler: plugins.tools:lookup
    parameters:
      type: object
      properties: {word: {type: string}}
      required: [word]
"""
PLUGIN = {"plugins/__init__.py": "", "plugins/tools.py": "def lookup(conversation, params): ...\n"}
MEMORY = "memory:\n  relations: [relations/owes.yaml]\n"


@pytest.fixture(autouse=True)
def _on_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUDDY_NO_CACHE", raising=False)
    tool_models.schema_problem.cache_clear()  # the process's own cache answers first


def _kept(manifest: Path) -> Path:
    return manifest.parent / "__pycache__" / "buddy.checks"


def _forget_in_memory() -> None:
    """As a new process starts: nothing known but what is on disk."""
    tool_models.schema_problem.cache_clear()


def _refuse_schema_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    import jsonschema

    def refused(schema: object) -> None:
        raise AssertionError("checked again")

    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", refused)


def test_a_schema_checked_once_is_not_checked_again(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL, **PLUGIN})
    first = buddy.check(manifest)
    assert first[1] == [] and _kept(manifest).is_file()
    _forget_in_memory()
    _refuse_schema_checks(monkeypatch)
    # An edit elsewhere in the manifest: its unchanged schema is known.
    manifest.write_text(manifest.read_text().replace("case", "edited"), encoding="utf-8")
    blueprint, issues = buddy.check(manifest)
    assert issues == [] and blueprint is not None and blueprint.name == "edited"


def test_a_schema_problem_kept_is_reported_as_found(write: Write) -> None:
    bad = TOOL.replace("{type: string}", "{type: 3}")
    manifest = write({"buddy.yaml": MINIMAL + bad, **PLUGIN})
    found = buddy.check(manifest)[1]
    assert [i.code for i in found] == ["tool-schema"]
    _forget_in_memory()
    assert buddy.check(manifest)[1] == found


def test_a_relation_spec_kept_is_used_until_its_file_changes(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write({"buddy.yaml": MINIMAL + MEMORY, "relations/owes.yaml": SPEC})
    blueprint = buddy.check(manifest)[0]
    assert blueprint is not None and _kept(manifest).is_file()

    from buddy.capabilities.datafiles import DataFiles

    def refused(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(DataFiles, "parse", refused)
    again = buddy.check(manifest)[0]
    assert again is not None and again.sections["memory"] == blueprint.sections["memory"]
    monkeypatch.undo()
    monkeypatch.delenv("BUDDY_NO_CACHE", raising=False)
    spec = manifest.parent / "relations" / "owes.yaml"
    spec.write_text(SPEC.replace("effect: delta", "effect: set"), encoding="utf-8")
    assert {i.code for i in buddy.check(manifest)[1]} == {"relation-spec"}


def test_a_spec_with_problems_is_not_kept(write: Write) -> None:
    spec = SPEC.replace("effect: delta", "effect: set")
    manifest = write({"buddy.yaml": MINIMAL + MEMORY, "relations/owes.yaml": spec})
    found = buddy.check(manifest)[1]
    assert {i.code for i in found} == {"relation-spec"}
    assert not _kept(manifest).exists()
    assert buddy.check(manifest)[1] == found


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_nothing_is_kept_with_the_cache_off(
    write: Write, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL + MEMORY, "relations/owes.yaml": SPEC, **PLUGIN})
    if how == "environment":
        monkeypatch.setenv("BUDDY_NO_CACHE", "1")
        buddy.check(manifest)
    else:
        buddy.load(manifest, cache=False)
    assert not (manifest.parent / "__pycache__").exists()


def test_results_from_another_environment_are_not_used(
    write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL, **PLUGIN})
    buddy.check(manifest)
    kept = _kept(manifest)
    form, environments = pickle.loads(kept.read_bytes())
    (entries,) = environments.values()
    # A result for the same schema, as if an older jsonschema had said otherwise.
    forged = dict.fromkeys(entries, ((), "forged"))
    kept.write_bytes(pickle.dumps((form, {b"another environment": forged})))
    _forget_in_memory()
    assert buddy.check(manifest)[1] == []
    now = pickle.loads(kept.read_bytes())[1]
    assert list(now) == [b"another environment", memo.stamp()]  # both kept
    assert now[memo.stamp()] == entries


def test_a_few_environments_are_kept(write: Write, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL, **PLUGIN})
    for number in range(memo.MAX_ENVIRONMENTS + 2):
        monkeypatch.setattr(memo, "stamp", lambda number=number: b"environment %d" % number)
        _forget_in_memory()
        assert buddy.check(manifest)[1] == []
    kept = pickle.loads(_kept(manifest).read_bytes())[1]
    assert len(kept) == memo.MAX_ENVIRONMENTS
    assert list(kept)[-1] == b"environment %d" % (memo.MAX_ENVIRONMENTS + 1)


@pytest.mark.parametrize("content", [b"", b"not a pickle", b"\x80\x05K\x01."])
def test_a_damaged_file_is_replaced(write: Write, content: bytes) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL, **PLUGIN})
    buddy.check(manifest)
    _kept(manifest).write_bytes(content)
    _forget_in_memory()
    assert buddy.check(manifest)[1] == []
    assert _kept(manifest).read_bytes() != content


def test_a_fifo_in_its_place_is_not_read(write: Write) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL, **PLUGIN})
    buddy.check(manifest)
    _kept(manifest).unlink()
    os.mkfifo(_kept(manifest))
    _forget_in_memory()
    assert buddy.check(manifest)[1] == []  # did not block


def test_an_unwritable_folder_still_checks(write: Write) -> None:
    manifest = write({"buddy.yaml": MINIMAL + TOOL, **PLUGIN})
    (manifest.parent / "__pycache__").write_text("a file where the cache folder would go")
    assert buddy.check(manifest)[1] == []
    _forget_in_memory()
    assert buddy.check(manifest)[1] == []


def test_the_stamp_follows_buddys_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before = memo.stamp()
    memo.stamp.cache_clear()
    monkeypatch.setattr(memo, "_PACKAGE", tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        assert memo.stamp() != before
    finally:
        memo.stamp.cache_clear()
