"""The `buddy` command: validate formats and exit codes, render, schema, import hygiene."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from buddy.cli.commands import schema_text
from buddy.cli.main import main
from tests.conftest import MINIMAL, REPO, Write

BROKEN = """\
name: Bad Name
model: test
persona:
  prompt: hi
  style: warm
"""


def test_validate_examples_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(REPO / "manifests")]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("ok: 3 buddies valid\n", "")


def test_validate_text_reports_every_problem(
    write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write({"buddy.yaml": BROKEN})
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "buddy.yaml:1:7: error:" in out
    assert "buddy.yaml:5:3: error: unknown key `style`" in out
    assert "hint:" in out


def test_validate_summary_ok_on_stdout_problem_count_on_stderr(
    write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write({"buddy.yaml": MINIMAL})
    assert main(["validate", str(path)]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("ok: 1 buddy valid\n", "")
    path.write_text(BROKEN, encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert "ok:" not in captured.out
    assert captured.err == "2 problem(s) in 1 of 1 buddy\n"


def test_validate_json_is_normative(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write({"buddy.yaml": BROKEN})
    assert main(["validate", "--format", "json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [(e["line"], e["column"], e["code"]) for e in report["errors"]] == [
        (1, 7, "pattern"),
        (5, 3, "unknown-key"),
    ]
    for error in report["errors"]:
        assert set(error) == {"file", "line", "column", "path", "code", "message", "hint"}
    assert report["errors"][1]["path"] == "persona.style"


def test_validate_json_ok(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write({"buddy.yaml": MINIMAL})
    assert main(["validate", "--format", "json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "errors": [], "warnings": []}


def test_validate_github_annotations(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write({"buddy.yaml": BROKEN})
    assert main(["validate", "--format", "github", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("::error file=")
    assert ",line=5,col=3,title=buddy unknown-key::unknown key `style`" in lines[1]


@pytest.mark.parametrize(
    "argv",
    [["validate", "/nonexistent/path"], ["validate"], ["render"], ["nope"], []],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    assert code == 2
    capsys.readouterr()


def test_validate_directory_without_manifest_is_usage_error(project: Path) -> None:
    assert main(["validate", str(project)]) == 2


def test_render_invalid_exits_1(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write({"buddy.yaml": BROKEN})
    assert main(["render", str(path)]) == 1
    assert "unknown key" in capsys.readouterr().err


def test_render_rejects_naive_now(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(REPO / "manifests/aunt-tu"), "--now", "2026-01-01T00:00:00"]) == 2
    capsys.readouterr()


def test_profile_and_model_override(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    path = write({"buddy.yaml": MINIMAL + "profiles:\n  dev: { model: ollama:qwen3 }\n"})
    assert main(["render", str(path), "--format", "json", "--profile", "dev"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["ref"] == "ollama:qwen3"
    assert main(["render", str(path), "--format", "json", "--model", "deepseek-chat"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["ref"] == "deepseek:deepseek-chat"
    assert main(["validate", str(path), "--profile", "prod"]) == 1
    assert "unknown profile `prod`" in capsys.readouterr().out


def test_environment_selects_profile(
    write: Write, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write({"buddy.yaml": MINIMAL + "profiles:\n  ci: { model: offline }\n"})
    monkeypatch.setenv("BUDDY_PROFILE", "ci")
    assert main(["render", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["ref"] == "offline:offline"
    monkeypatch.setenv("BUDDY_MODEL", "nosuchprovider:x")
    assert main(["validate", str(path)]) == 1
    assert "<--model>" in capsys.readouterr().out


def test_schema_is_committed_and_fresh() -> None:
    committed = (REPO / "docs" / "buddy.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(), (
        "docs/buddy.schema.json is stale: run `buddy schema --write docs`"
    )


def test_examples_point_editors_at_the_schema() -> None:
    for manifest in sorted((REPO / "manifests").glob("*/buddy.yaml")):
        first = manifest.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../../docs/buddy.schema.json", manifest


HEAVY = (
    "httpx",
    "websockets",
    "starlette",
    "fastapi",
    "uvicorn",
    "buddy.runtime",
    "buddy.platform.dev",
    "buddy.platform.client",
)


@pytest.mark.parametrize("argv", [["--help"], ["validate", "manifests"]])
def test_cli_imports_no_runtime_or_network_stack(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from buddy.cli.main import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules"
        f" if any(m == h or m.startswith(h + '.') for h in {HEAVY!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_help_imports_no_loader_dependencies() -> None:
    code = (
        "import sys\nfrom buddy.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pydantic', 'jinja2', 'yaml', 'jsonschema') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_console_script_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "buddy", "validate", "--format", "json", "manifests/aunt-tu"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["ok"] is True


def test_the_commands_listed_are_the_parsers() -> None:
    """``COMMANDS`` (a command named first builds only its own parser) is every subcommand."""
    import argparse

    from buddy.cli.main import COMMANDS, _parser

    (action,) = (a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(action.choices) == COMMANDS
    for command in COMMANDS:
        (only,) = (
            a for a in _parser(command)._actions if isinstance(a, argparse._SubParsersAction)
        )
        assert list(only.choices) == [command]
        assert only.choices[command].format_help() == action.choices[command].format_help()
