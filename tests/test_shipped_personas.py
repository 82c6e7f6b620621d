"""The shared persona templates and trait files ship with buddy: a fresh project outside
this repository finds them (the built-in pack, last on the search path)."""

from __future__ import annotations

import fnmatch
import re
import shutil
import tomllib
from pathlib import Path

import pytest

import buddy
from buddy.cli.main import main
from buddy.compile.persona import BUILT_IN_PACK, search_path
from buddy.compile.render import view
from tests.conftest import REPO

TRAITS = ["aloof", "gentle", "steady", "tsundere"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _outside(path: Path) -> None:
    assert not path.resolve().is_relative_to(REPO)
    assert not any((p / "manifests").exists() for p in (path, *path.parents))


@pytest.mark.parametrize("marked", [False, True], ids=["lone", "project"])
@pytest.mark.parametrize("template", ["companion.md.j2", "coach.md.j2"])
def test_init_with_a_shipped_template_outside_this_repository(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    marked: bool,
    template: str,
) -> None:
    _outside(tmp_path)
    if marked:
        (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(["init", "x", "--persona", template], capsys)
    assert (code, err) == (0, "")
    code, out, _ = _run(["validate", "x"], capsys)
    assert (code, out) == (0, "ok: 1 buddy valid\n")
    code, out, _ = _run(["render", "x"], capsys)
    assert code == 0
    assert "你是x，在聊天里陪着对方的搭子，不是客服，也不是百科全书。" in out


@pytest.mark.parametrize("trait", TRAITS)
def test_a_shipped_trait_file_resolves_outside_this_repository(project: Path, trait: str) -> None:
    _outside(project)
    manifest = project / "pal" / "buddy.yaml"
    manifest.parent.mkdir()
    manifest.write_text(
        "name: pal\nmodel: test\npersona:\n"
        f"  template: companion.md.j2\n  traits: traits/{trait}.yaml\n",
        encoding="utf-8",
    )
    blueprint, issues = buddy.check(manifest)
    assert issues == []
    assert blueprint is not None
    assert blueprint.persona.traits["name"] == trait


def test_the_references_complete_example_validates_in_a_fresh_project(project: Path) -> None:
    _outside(project)
    text = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    example = re.search(r"A complete, valid manifest.*?^```yaml\n(.*?)^```$", text, re.S | re.M)
    assert example is not None
    (project / "tea-pal").mkdir()
    (project / "tea-pal" / "buddy.yaml").write_text(example.group(1), encoding="utf-8")
    # Its handler is a plugin of this repository's: the project brings its own copy.
    (project / "plugins").mkdir()
    shutil.copy(REPO / "plugins" / "aunt_tu.py", project / "plugins")
    _, issues = buddy.check(project / "tea-pal")
    assert issues == []


def test_the_pack_is_package_data() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["buddy"]
    files = [
        f.relative_to(BUILT_IN_PACK.parent).as_posix()
        for f in sorted(BUILT_IN_PACK.rglob("*"))
        if f.is_file() and "__pycache__" not in f.parts
    ]
    assert sorted(Path(f).name for f in files if "/traits/" in f) == [f"{t}.yaml" for t in TRAITS]
    assert {"personas/companion.md.j2", "personas/coach.md.j2"} <= set(files)
    for file in files:
        assert any(fnmatch.fnmatch(file, g) for g in globs), (file, globs)


def test_the_pack_is_last_and_a_projects_own_file_wins(project: Path) -> None:
    manifest = project / "a" / "pal" / "buddy.yaml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        "name: pal\nmodel: test\npersona:\n  template: companion.md.j2\n"
        "  traits: traits/gentle.yaml\n",
        encoding="utf-8",
    )
    assert search_path(manifest.parent, project)[-1] == BUILT_IN_PACK
    shipped = view(buddy.load(manifest))
    assert shipped["files"] == [
        "a/pal/buddy.yaml",
        "buddy:personas/companion.md.j2",
        "buddy:personas/traits/gentle.yaml",
    ]
    (project / "personas" / "traits").mkdir(parents=True)
    (project / "personas" / "companion.md.j2").write_text("我的 {{ traits.persona }}")
    (project / "a" / "personas" / "traits").mkdir(parents=True)
    (project / "a" / "personas" / "traits" / "gentle.yaml").write_text("persona: 自己的\n")
    own = view(buddy.load(manifest, cache=False))
    assert own["system_prompt"] == "我的 自己的"
    assert own["files"] == [
        "a/pal/buddy.yaml",
        "a/personas/traits/gentle.yaml",
        "personas/companion.md.j2",
    ]
