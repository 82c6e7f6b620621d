"""`buddy init`: a new buddy validates, renders and passes its own scenario at once."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

import buddy
from buddy.cli.commands import schema_text
from buddy.cli.init import GITIGNORE, manifest_text, slug, write_gitignore
from buddy.cli.main import main
from buddy.compile.cache import cache_file
from buddy.compile.persona import BUILT_IN_PACK
from buddy.testing import scenarios
from buddy.testing.scenarios import read_suite, run_scenario
from tests.conftest import REPO
from tests.test_schemas import assert_current_schemas, schema_target


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def repo_like(project: Path) -> Path:
    """A project laid out like this repository, with the committed schemas, and a shared
    persona template of its own that extends one buddy ships."""
    (project / "manifests" / "personas").mkdir(parents=True)
    (project / "manifests" / "personas" / "mentor.md.j2").write_text(
        '{% extends "companion.md.j2" %}'
        "{% block identity %}{{ super() }}\n你也是对方学做饭的师傅。{% endblock %}",
        encoding="utf-8",
    )
    (project / "docs").mkdir()
    shutil.copy(REPO / "docs" / "buddy.schema.json", project / "docs")
    (project / "docs" / "scenario.schema.json").write_text("{}\n")
    return project


def _passes_its_scenarios(directory: Path) -> None:
    blueprint = buddy.load(directory)
    files = sorted((directory / "tests").glob("*.yaml"))
    assert [f.name for f in files] == ["smoke.yaml"]
    suite = read_suite(files[0], blueprint)
    assert suite.issues == []
    assert len(suite.scenarios) == 1
    result = asyncio.run(run_scenario(blueprint, suite, 0))
    assert result.failures == [], result.log


def test_init_validate_render_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(["init", "demo"], capsys)
    assert code == 0
    assert out.startswith(
        "created demo/buddy.yaml\ncreated demo/tests/smoke.yaml\ncreated demo/.gitignore\n"
    )
    assert "buddy validate demo" in out
    assert main(["validate", "demo"]) == 0
    assert capsys.readouterr().out == "ok: 1 buddy valid\n"
    assert main(["render", "demo"]) == 0
    view = capsys.readouterr().out
    assert view.startswith("# demo (`demo`)\n")
    assert "你是demo，在聊天里陪着对方的搭子。" in view
    assert main(["render", "demo", "--conversation", "group"]) == 0
    assert "这是群聊" in capsys.readouterr().out
    assert main(["validate", "demo", "--profile", "ci"]) == 0
    _passes_its_scenarios(tmp_path / "demo")


@pytest.mark.skipif(
    importlib.util.find_spec("buddy.cli.scenarios") is None, reason="`buddy test` not built yet"
)
def test_buddy_test_passes_on_a_new_buddy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "demo"]) == 0
    assert main(["test", "demo"]) == 0
    capsys.readouterr()


def test_git_ignores_the_compiled_buddy_cache_and_bytecode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.delenv("BUDDY_NO_CACHE", raising=False)
    assert main(["init", "demo", "--dir", str(tmp_path)]) == 0
    assert f"created {(tmp_path / 'demo' / '.gitignore').as_posix()}\n" in capsys.readouterr().out
    demo = tmp_path / "demo"
    buddy.load(demo)  # writes the cache
    cached = cache_file(demo / "buddy.yaml", None, None)
    assert cached.is_file()
    (demo / "plugins").mkdir()
    (demo / "plugins" / "tools.pyc").write_bytes(b"")
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert sorted(listed) == [
        "?? .buddy/buddy.schema.json",  # to commit: the editor's schemas for everyone
        "?? .buddy/scenario.schema.json",
        "?? demo/.gitignore",
        "?? demo/buddy.yaml",
        "?? demo/tests/smoke.yaml",
    ]


def test_an_existing_gitignore_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("mine\n")
    assert write_gitignore(tmp_path) is None
    assert (tmp_path / ".gitignore").read_text() == "mine\n"
    (tmp_path / "new").mkdir()
    assert write_gitignore(tmp_path / "new") == tmp_path / "new" / ".gitignore"
    assert (tmp_path / "new" / ".gitignore").read_text(encoding="utf-8") == GITIGNORE


def test_the_manifest_is_offline_with_a_ci_profile(tmp_path: Path) -> None:
    assert main(["init", "demo", "--dir", str(tmp_path)]) == 0
    blueprint = buddy.load(tmp_path / "demo")
    assert blueprint.model.ref == "offline:offline"
    assert buddy.load(tmp_path / "demo", profile="ci").model.ref == "test:test"
    assert blueprint.persona.template is None  # an inline prompt


def test_outside_this_repository_the_schema_lines_resolve_to_current_schemas(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["init", "demo", "--dir", "buddies"]) == 0
    out = capsys.readouterr().out
    demo = project / "buddies" / "demo"
    text = (demo / "buddy.yaml").read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../../.buddy/buddy.schema.json\n")
    assert_current_schemas(demo / "buddy.yaml", demo / "tests" / "smoke.yaml", project / ".buddy")
    assert out.startswith(
        "created buddies/demo/buddy.yaml\n"
        "created buddies/demo/tests/smoke.yaml\n"
        "created buddies/demo/.gitignore\n"
        "created .buddy/buddy.schema.json\n"
        "created .buddy/scenario.schema.json\n"
        "next: "
    )


def test_init_refreshes_a_stale_schema_and_leaves_a_current_one(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["init", "one"]) == 0
    (project / ".buddy" / "scenario.schema.json").write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["init", "two"]) == 0
    out = capsys.readouterr().out
    assert "updated .buddy/scenario.schema.json\n" in out
    assert "buddy.schema.json" not in out  # current: not rewritten, not printed
    fresh = schema_target(project / "two" / "tests" / "smoke.yaml").read_text(encoding="utf-8")
    assert fresh == scenarios.schema_text()


def test_a_lone_buddy_keeps_its_schemas_in_its_own_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No .git or pyproject.toml above: the buddy's directory is the project root.
    assert main(["init", "demo", "--dir", str(tmp_path)]) == 0
    demo = tmp_path / "demo"
    assert schema_target(demo / "buddy.yaml") == demo / ".buddy" / "buddy.schema.json"
    assert schema_target(demo / "tests" / "smoke.yaml") == demo / ".buddy" / "scenario.schema.json"
    assert (demo / ".buddy" / "buddy.schema.json").read_text(encoding="utf-8") == schema_text()
    assert (
        f"created {(demo / '.buddy' / 'buddy.schema.json').as_posix()}" in capsys.readouterr().out
    )


def test_a_schema_folder_that_cannot_be_written_is_a_warning(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".buddy").write_text("", encoding="utf-8")  # a file where the folder goes
    assert main(["init", "demo", "--dir", str(project)]) == 0
    captured = capsys.readouterr()
    assert "buddy init: warning: cannot write the editor's schemas" in captured.err
    assert "`buddy schema --write`" in captured.err
    assert (project / "demo" / "buddy.yaml").is_file()


def test_inside_this_kind_of_repository_the_schema_line_is_a_relative_path(
    repo_like: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = repo_like / "manifests"
    assert main(["init", "demo", "--dir", str(parent)]) == 0
    text = (parent / "demo" / "buddy.yaml").read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../../docs/buddy.schema.json\n")
    scenario = (parent / "demo" / "tests" / "smoke.yaml").read_text(encoding="utf-8")
    assert scenario.startswith(
        "# yaml-language-server: $schema=../../../docs/scenario.schema.json\n"
    )
    assert (parent / "demo" / "tests" / "../../../docs/scenario.schema.json").is_file()
    capsys.readouterr()


def test_in_this_repository_the_schema_line_matches_the_examples() -> None:
    text = manifest_text("demo", REPO / "manifests" / "demo")
    example = (REPO / "manifests" / "aunt-tu" / "buddy.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == example.splitlines()[0]


def test_persona_extends_a_shared_template(
    repo_like: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = repo_like / "manifests"
    code, _, err = _run(["init", "pal", "--persona", "mentor.md.j2", "--dir", str(parent)], capsys)
    assert (code, err) == (0, "")
    text = (parent / "pal" / "buddy.yaml").read_text(encoding="utf-8")
    assert "  template: mentor.md.j2" in text
    blueprint = buddy.load(parent / "pal")
    assert blueprint.persona.template == "mentor.md.j2"
    assert (parent / "personas" / "mentor.md.j2").resolve() in blueprint.files
    assert BUILT_IN_PACK / "companion.md.j2" in blueprint.files  # the one it extends
    prompt = blueprint.persona.render(kind="private")
    assert "你是pal，在聊天里陪着对方的搭子" in prompt
    assert "你也是对方学做饭的师傅。" in prompt
    _passes_its_scenarios(parent / "pal")


def test_persona_not_found_suggests_a_close_name(
    repo_like: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = repo_like / "manifests"
    code, _, err = _run(
        ["init", "pal", "--persona", "companon.md.j2", "--dir", str(parent)], capsys
    )
    assert code == 2
    assert "persona template `companon.md.j2` not found on the search path" in err
    assert "did you mean `companion.md.j2`?" in err
    assert not (parent / "pal").exists()


def test_persona_elsewhere_in_the_project_suggests_dir(
    repo_like: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_like)
    code, _, err = _run(["init", "pal", "--persona", "mentor.md.j2"], capsys)
    assert code == 2
    assert "it is in manifests/personas; create the buddy next to it: --dir manifests" in err
    assert not (repo_like / "pal").exists()


def test_persona_nowhere(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["init", "pal", "--persona", "nothing.txt", "--dir", str(project)], capsys)
    assert code == 2
    assert "persona template `nothing.txt` not found" in err
    assert "looked up in the personas/ folders above it, then in template packs" in err
    assert err.endswith("; buddy ships coach.md.j2, companion.md.j2\n")
    assert not (project / "pal").exists()


def test_a_template_that_needs_variables_is_created_and_explained(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "personas").mkdir()
    (project / "personas" / "chef.md.j2").write_text("你是擅长{{ specialty }}的厨师。\n")
    code, out, err = _run(
        ["init", "chef", "--persona", "chef.md.j2", "--dir", str(project)], capsys
    )
    assert code == 1
    assert "created" in out
    assert "specialty" in err
    assert "needs attention" in err
    assert (project / "chef" / "buddy.yaml").is_file()


def test_refuses_an_existing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "notes.txt").write_text("mine")
    code, _, err = _run(["init", "demo", "--dir", str(tmp_path)], capsys)
    assert code == 2
    assert "already exists" in err
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["notes.txt"]


def test_refuses_an_existing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "demo").write_text("")
    assert main(["init", "demo", "--dir", str(tmp_path)]) == 2
    capsys.readouterr()


def test_a_missing_parent_is_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "demo", "--dir", str(tmp_path / "a" / "b")]) == 0
    assert main(["validate", str(tmp_path / "a" / "b" / "demo")]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("My Buddy", "my-buddy"),
        ("Demo", "demo"),
        ("a_b", "a-b"),
        ("-demo", "demo"),
        ("demo/x", "demo-x"),
        ("..", ""),
        ("小助手", ""),
        ("a" * 64, "a" * 63),
    ],
)
def test_refuses_invalid_names(
    name: str, suggestion: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["init", "--dir", str(tmp_path), "--", name], capsys)
    assert code == 2
    assert f"invalid name {name!r}" in err
    if suggestion:
        assert f"did you mean `{suggestion}`?" in err
    else:
        assert "did you mean" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["a", "0", "1e3", "0x1f", "a" * 63, "my-buddy-2"])
def test_accepts_valid_names(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", name, "--dir", str(tmp_path)]) == 0
    assert main(["validate", str(tmp_path / name)]) == 0
    capsys.readouterr()


def test_slug() -> None:
    assert slug("Tea Pal!") == "tea-pal"
    assert slug("---") == ""
