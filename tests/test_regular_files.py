"""Only regular files are read as part of a buddy: a FIFO (which would block its reader
forever), a device or a socket in the place of one is refused at once, located at its path.

Every check runs in a child process with a timeout, so a regression fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MINIMAL, Write

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")

TIMEOUT = 20  # seconds: each of these finishes in about one


def _python(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` in ``cwd``; a run that blocks fails the test."""
    try:
        return subprocess.run(
            [sys.executable, *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`python {' '.join(argv)}` still running after {TIMEOUT} s")


def _buddy(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _python("-m", "buddy", *argv, cwd=cwd)


def _validate(project: Path, *paths: str) -> tuple[int, list[dict[str, object]]]:
    run = _buddy("validate", "--format", "json", *paths, cwd=project)
    if run.returncode == 2:  # a usage error: no JSON report
        return run.returncode, [{"message": run.stderr}]
    return run.returncode, json.loads(run.stdout)["errors"]


def _not_regular(errors: list[dict[str, object]], file: str) -> None:
    assert [(e["file"], e["code"]) for e in errors] == [(file, "file-not-regular")], errors
    message = str(errors[0]["message"])
    assert "FIFO" in message and "not a regular file" in message, message


@pytest.mark.parametrize("given", [".", "buddy.yaml"])
def test_a_manifest_that_is_a_fifo_is_refused_by_validate(project: Path, given: str) -> None:
    """`mkfifo buddy.yaml; buddy validate .` ends, non-zero, naming the file."""
    os.mkfifo(project / "buddy.yaml")
    code, errors = _validate(project, given)
    assert code == 1
    _not_regular(errors, "buddy.yaml")


def test_a_manifest_that_is_a_fifo_is_reported_in_text_too(project: Path) -> None:
    os.mkfifo(project / "buddy.yaml")
    run = _buddy("validate", ".", cwd=project)
    assert run.returncode == 1
    assert "buddy.yaml: error: this file is a FIFO (named pipe), not a regular file" in run.stdout


def test_a_fifo_among_several_buddies_does_not_stop_the_others(write: Write, project: Path) -> None:
    write({"a/buddy.yaml": MINIMAL})
    (project / "b").mkdir()
    os.mkfifo(project / "b" / "buddy.yaml")
    code, errors = _validate(project, ".")
    assert code == 1
    _not_regular(errors, "b/buddy.yaml")


def test_load_refuses_a_manifest_that_is_a_fifo(project: Path) -> None:
    """`buddy.load` (so `buddy chat` and `buddy run`) raises, located, and does not wait."""
    os.mkfifo(project / "buddy.yaml")
    code = (
        "import buddy\n"
        "try:\n    buddy.load('.')\n"
        "except buddy.ManifestError as exc:\n    print(exc)\n"
    )
    run = _python("-c", code, cwd=project)
    assert "FIFO (named pipe), not a regular file" in run.stdout, run.stdout + run.stderr
    assert "file-not-regular" in run.stdout


def test_a_resource_that_is_a_fifo_is_refused(write: Write, project: Path) -> None:
    write({"buddy.yaml": MINIMAL, "resources/a.md": "A\n"})
    os.mkfifo(project / "resources" / "pipe.md")
    code, errors = _validate(project, ".")
    assert code == 1
    assert [(e["file"], e["code"]) for e in errors] == [("resources/pipe.md", "file-not-regular")]
    assert "FIFO" in str(errors[0]["message"])


def test_a_persona_template_that_is_a_fifo_is_refused(write: Write, project: Path) -> None:
    """A template is never opened unless it is a file: the manifest's reference is refused."""
    write({"buddy.yaml": "name: case\nmodel: test\npersona:\n  template: p.md.j2\n"})
    os.mkfifo(project / "p.md.j2")
    code, errors = _validate(project, ".")
    assert code == 1
    assert [(e["file"], e["path"]) for e in errors] == [("buddy.yaml", "persona.template")]


def test_an_extended_manifest_that_is_a_fifo_is_named_as_one(write: Write, project: Path) -> None:
    write({"buddy.yaml": "extends: base.yaml\n" + MINIMAL})
    os.mkfifo(project / "base.yaml")
    code, errors = _validate(project, ".")
    assert code == 1
    assert [(e["file"], e["line"], e["path"]) for e in errors] == [("buddy.yaml", 1, "extends")]
    message = str(errors[0]["message"])
    assert "'base.yaml'" in message and "a FIFO (named pipe), not a regular file" in message


def _refused_at(errors: list[dict[str, object]], file: str, path: str, name: str) -> None:
    """One ``file-not-regular`` error at ``file``'s ``path``, naming ``name`` as a FIFO."""
    assert [(e["file"], e["path"], e["code"]) for e in errors] == [
        (file, path, "file-not-regular")
    ], errors
    message = str(errors[0]["message"])
    assert name in message and "a FIFO (named pipe), not a regular file" in message, message


def test_a_persona_template_that_is_a_fifo_is_named_as_one(write: Write, project: Path) -> None:
    write({"buddy.yaml": "name: case\nmodel: test\npersona:\n  template: p.md.j2\n"})
    os.mkfifo(project / "p.md.j2")
    code, errors = _validate(project, ".")
    assert code == 1
    _refused_at(errors, "buddy.yaml", "persona.template", "p.md.j2")
    assert str(project / "p.md.j2") in str(errors[0]["hint"])


def test_an_included_template_that_is_a_fifo_is_named_as_one(write: Write, project: Path) -> None:
    write(
        {
            "buddy.yaml": "name: case\nmodel: test\npersona:\n  template: t.md.j2\n",
            "t.md.j2": "hello\n{% include 'part.md.j2' %}\n",
        }
    )
    os.mkfifo(project / "part.md.j2")
    code, errors = _validate(project, ".")
    assert code == 1
    _refused_at(errors, "t.md.j2", "persona.template", "part.md.j2")
    assert errors[0]["line"] == 2


def test_a_persona_trait_file_that_is_a_fifo_is_named_as_one(write: Write, project: Path) -> None:
    write({"buddy.yaml": MINIMAL + "  traits: t.yaml\n"})
    os.mkfifo(project / "t.yaml")
    code, errors = _validate(project, ".")
    assert code == 1
    _refused_at(errors, "buddy.yaml", "persona.traits", "t.yaml")


def test_a_character_trait_file_that_is_a_fifo_is_named_as_one(write: Write, project: Path) -> None:
    write({"buddy.yaml": MINIMAL + "character: traits/t.yaml\n"})
    (project / "traits").mkdir()
    os.mkfifo(project / "traits" / "t.yaml")
    code, errors = _validate(project, ".")
    assert code == 1
    _refused_at(errors, "buddy.yaml", "character", "traits/t.yaml")


@pytest.mark.parametrize("reference", ["debt", "relations/debt.yaml"])
def test_a_relation_spec_that_is_a_fifo_is_refused_not_replaced(
    write: Write, project: Path, reference: str
) -> None:
    """A FIFO `relations/debt.yaml` does not fall back to the shipped `debt` spec."""
    write({"buddy.yaml": MINIMAL + f"memory:\n  relations: [{reference}]\n"})
    (project / "relations").mkdir()
    os.mkfifo(project / "relations" / "debt.yaml")
    code, errors = _validate(project, ".")
    assert code == 1
    _refused_at(errors, "buddy.yaml", "memory.relations[0]", reference)


def test_a_lore_book_that_is_a_fifo_is_refused(write: Write, project: Path) -> None:
    write({"buddy.yaml": MINIMAL + "lore: lore\n"})
    (project / "lore").mkdir()
    os.mkfifo(project / "lore" / "pipe.yaml")
    code, errors = _validate(project, ".")
    assert code == 1
    _not_regular(errors, "lore/pipe.yaml")


def test_a_widget_schema_that_is_a_fifo_is_refused(write: Write, project: Path) -> None:
    write({"buddy.yaml": MINIMAL})
    (project / "widgets" / "log").mkdir(parents=True)
    os.mkfifo(project / "widgets" / "log" / "schema.json")
    code, errors = _validate(project, ".")
    assert code == 1
    _not_regular(errors, "widgets/log/schema.json")


@pytest.mark.parametrize("given", [".", "tests/pipe.yaml"])
def test_a_scenario_file_that_is_a_fifo_is_refused(write: Write, project: Path, given: str) -> None:
    write({"buddy.yaml": MINIMAL})
    (project / "tests").mkdir()
    os.mkfifo(project / "tests" / "pipe.yaml")
    run = _buddy("test", given, cwd=project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL tests/pipe.yaml (invalid scenario file)" in run.stdout
    assert (
        "tests/pipe.yaml: error: this file is a FIFO (named pipe), not a regular file"
        " (file-not-regular)" in run.stdout
    )


def test_a_plugin_module_that_is_a_fifo_is_named_as_one(write: Write, project: Path) -> None:
    tool = '{name: t, description: d, parameters: {type: object}, handler: "plugins.m:f"}'
    write({"buddy.yaml": MINIMAL + f"tools:\n  - {tool}\n"})
    (project / "plugins").mkdir()
    os.mkfifo(project / "plugins" / "m.py")
    code, errors = _validate(project, ".")
    assert code == 1
    _refused_at(errors, "buddy.yaml", "tools[0].handler", "plugins/m.py")


def test_diff_does_not_read_a_fifo_where_the_other_side_has_a_file(
    write: Write, project: Path
) -> None:
    """`buddy diff` compares the files either side depends on; a FIFO is not opened."""
    manifest = MINIMAL + "  traits: t.yaml\n"
    write({"old/buddy.yaml": manifest, "old/t.yaml": "mood: calm\n", "new/buddy.yaml": manifest})
    os.mkfifo(project / "new" / "t.yaml")
    run = _buddy("diff", "old", "new", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FIFO (named pipe), not a regular file" in run.stdout, run.stdout


def test_read_card_refuses_a_fifo(project: Path) -> None:
    os.mkfifo(project / "card.json")
    code = (
        "from pathlib import Path\nfrom buddy.cards import read_card\nfrom buddy.errors import CardError\n"
        "try:\n    read_card(Path('card.json'))\n"
        "except CardError as exc:\n    print(exc)\n"
    )
    run = _python("-c", code, cwd=project)
    assert "card.json: this file is a FIFO (named pipe), not a regular file" in run.stdout, (
        run.stdout + run.stderr
    )


def test_import_card_refuses_a_fifo(project: Path) -> None:
    os.mkfifo(project / "pipe.json")
    run = _buddy("import-card", "pipe.json", "--dir", "out", cwd=project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pipe.json: this file is a FIFO (named pipe), not a regular file" in run.stderr


@pytest.mark.parametrize(
    ("fifo", "options"),
    [("card.json", ()), ("card.png", ()), ("picture.png", ("--image", "picture.png"))],
)
def test_export_card_refuses_a_fifo(
    write: Write, project: Path, fifo: str, options: tuple[str, ...]
) -> None:
    """The buddy's card.json and card.png, and the `--image` given."""
    write({"buddy.yaml": MINIMAL})
    os.mkfifo(project / fifo)
    run = _buddy("export-card", ".", *options, "--out", "x.png", cwd=project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"{fifo}: this file is a FIFO (named pipe), not a regular file" in run.stderr


def test_a_schema_copy_that_is_a_fifo_is_refused(project: Path) -> None:
    """`buddy schema --write` (and `init`) compares the copy there before writing it."""
    (project / ".buddy").mkdir()
    os.mkfifo(project / ".buddy" / "buddy.schema.json")
    run = _buddy("schema", "--write", cwd=project)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "cannot write " in run.stderr
    assert (
        ".buddy/buddy.schema.json: this file is a FIFO (named pipe), not a regular file"
        in run.stderr
    )


def test_cache_files_that_are_fifos_are_not_read(write: Write, project: Path) -> None:
    """The compiled-buddy and template caches in `__pycache__/`: a FIFO there is a miss."""
    write({"buddy.yaml": "name: case\nmodel: test\npersona:\n  template: p.md.j2\n"})
    write({"p.md.j2": "hello\n"})
    code = "import buddy\nprint(buddy.load('.').name)\n"
    first = _python("-c", code, cwd=project)
    assert first.stdout == "case\n", first.stdout + first.stderr
    cached = sorted(p for p in (project / "__pycache__").iterdir() if p.suffix != "")
    assert {p.suffix for p in cached} == {".blueprint", ".jinja"}, cached
    for file in cached:
        file.unlink()
        os.mkfifo(file)
    run = _python("-c", code, cwd=project)
    assert run.stdout == "case\n", run.stdout + run.stderr
