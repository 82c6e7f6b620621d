"""`buddy.schemas`: the shipped schemas are current, `buddy schema --scenario` and
`--write`, and where the `$schema` lines of the files buddy writes point."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

from buddy import schemas
from buddy.cli.commands import schema_text
from buddy.cli.main import main
from buddy.schemas import MANIFEST, NAMES, SCENARIO, place, project_line, refresh, shipped
from buddy.testing import scenarios
from tests.conftest import REPO

PREFIX = "# yaml-language-server: $schema="


def schema_target(file: Path) -> Path:
    """The schema the first line of ``file`` points at, resolved as editors resolve it:
    relative to the file's directory."""
    first = file.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(PREFIX), f"{file}: {first!r}"
    return (file.parent / first.removeprefix(PREFIX)).resolve()


def assert_current_schemas(manifest: Path, scenario: Path, folder: Path) -> None:
    """The first lines of a written manifest and scenario file point at current copies
    of their schemas in ``folder``."""
    manifest_schema = schema_target(manifest)
    assert manifest_schema == folder / "buddy.schema.json"
    assert manifest_schema.read_text(encoding="utf-8") == schema_text()
    scenario_schema = schema_target(scenario)
    assert scenario_schema == folder / "scenario.schema.json"
    assert scenario_schema.read_text(encoding="utf-8") == scenarios.schema_text()


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_copies_are_current(name: str) -> None:
    assert shipped(name).read_text(encoding="utf-8") == schemas.text(name), (
        f"framework/buddy/schemas/{name} is stale: run `buddy schema --write framework/buddy/schemas`"
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_copies_are_package_data(name: str) -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["buddy"]
    assert any(fnmatch.fnmatch(f"schemas/{name}", g) for g in globs), globs


def test_the_schemas_are_made_by_the_commands_functions() -> None:
    assert schemas.text(MANIFEST) == schema_text()
    assert schemas.text(SCENARIO) == scenarios.schema_text()
    with pytest.raises(ValueError, match=r"the schemas are buddy\.schema\.json"):
        schemas.text("nope.json")


def test_schema_prints_the_manifest_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == schema_text()


def test_schema_scenario_prints_the_scenario_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--scenario"]) == 0
    assert capsys.readouterr().out == scenarios.schema_text()


def test_write_puts_both_into_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["schema", "--write", "out/schemas"]) == 0
    assert capsys.readouterr().out == (
        "created out/schemas/buddy.schema.json\ncreated out/schemas/scenario.schema.json\n"
    )
    assert (tmp_path / "out" / "schemas" / MANIFEST).read_text(encoding="utf-8") == schema_text()
    written = (tmp_path / "out" / "schemas" / SCENARIO).read_text(encoding="utf-8")
    assert written == scenarios.schema_text()

    (tmp_path / "out" / "schemas" / SCENARIO).write_text("{}\n", encoding="utf-8")
    assert main(["schema", "--write", "out/schemas"]) == 0
    assert capsys.readouterr().out == (
        "unchanged out/schemas/buddy.schema.json\nupdated out/schemas/scenario.schema.json\n"
    )
    written = (tmp_path / "out" / "schemas" / SCENARIO).read_text(encoding="utf-8")
    assert written == scenarios.schema_text()


def test_write_defaults_to_the_project_roots_buddy_folder(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "buddies").mkdir()
    monkeypatch.chdir(project / "buddies")
    assert main(["schema", "--write"]) == 0
    folder = project / ".buddy"
    assert capsys.readouterr().out == (
        f"created {(folder / MANIFEST).as_posix()}\ncreated {(folder / SCENARIO).as_posix()}\n"
    )
    assert (folder / MANIFEST).read_text(encoding="utf-8") == schema_text()
    assert (folder / SCENARIO).read_text(encoding="utf-8") == scenarios.schema_text()


def test_write_refreshes_the_schemas_a_project_keeps_in_docs(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "docs").mkdir()
    (project / "docs" / MANIFEST).write_text("{}\n", encoding="utf-8")
    monkeypatch.chdir(project)
    assert main(["schema", "--write"]) == 0
    assert capsys.readouterr().out == (
        "updated docs/buddy.schema.json\ncreated .buddy/scenario.schema.json\n"
    )
    assert (project / "docs" / MANIFEST).read_text(encoding="utf-8") == schema_text()


def test_write_and_scenario_do_not_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["schema", "--scenario", "--write"])
    assert exited.value.code == 2
    assert "not allowed with argument --scenario" in capsys.readouterr().err


def test_write_into_a_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("taken").write_text("", encoding="utf-8")
    assert main(["schema", "--write", "taken"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("buddy schema: cannot write taken")


def test_in_this_repository_the_lines_point_at_docs() -> None:
    buddy_dir = REPO / "manifests" / "demo"
    assert project_line(MANIFEST, buddy_dir) == f"{PREFIX}../../docs/buddy.schema.json\n"
    assert project_line(SCENARIO, buddy_dir, buddy_dir / "tests") == (
        f"{PREFIX}../../../docs/scenario.schema.json\n"
    )
    assert [place(REPO, n) for n in NAMES] == [REPO / "docs" / n for n in NAMES]


def test_a_lone_buddys_scenarios_point_into_the_buddy(tmp_path: Path) -> None:
    # No project root above: the buddy's directory is the root, not its tests/ folder.
    line = project_line(SCENARIO, tmp_path / "demo", tmp_path / "demo" / "tests")
    assert line == f"{PREFIX}../.buddy/scenario.schema.json\n"


def test_elsewhere_the_lines_point_at_the_buddy_folder(project: Path) -> None:
    buddy_dir = project / "a" / "b"
    assert project_line(MANIFEST, buddy_dir) == f"{PREFIX}../../.buddy/buddy.schema.json\n"
    assert project_line(SCENARIO, buddy_dir, buddy_dir / "tests") == (
        f"{PREFIX}../../../.buddy/scenario.schema.json\n"
    )
    assert [p for p, _ in refresh(buddy_dir)] == [project / ".buddy" / n for n in NAMES]
    assert [s for _, s in refresh(buddy_dir)] == ["unchanged", "unchanged"]
