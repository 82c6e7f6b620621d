"""The docs stay true: every manifest field is documented, and self-contained examples validate."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import buddy
from buddy.models.providers import PROVIDERS, THINKING_STYLES
from tests.conftest import REPO, normalised

DOCS = REPO / "docs"
REFERENCE = (DOCS / "manifest.md").read_text(encoding="utf-8")


def _properties(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                found.update(value)
            found |= _properties(value)
    elif isinstance(node, list):
        for item in node:
            found |= _properties(item)
    return found


def test_every_schema_field_is_in_the_reference() -> None:
    schema = json.loads((DOCS / "buddy.schema.json").read_text(encoding="utf-8"))
    fields = _properties(schema) | {"title", "description", "modules", "record"}  # widget files
    missing = sorted(f for f in fields if f"`{f}`" not in REFERENCE)
    assert not missing, f"document these fields in docs/manifest.md: {missing}"


def _blocks() -> list[tuple[str, int, str]]:
    out = []
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for match in re.finditer(r"^```yaml\n(.*?)^```", text, re.S | re.M):
            body = match.group(1)
            line = text[: match.start()].count("\n") + 1
            complete = all(re.search(rf"^{k}:", body, re.M) for k in ("name", "model", "persona"))
            needs_files = re.search(
                r"^[\s-]*(extends|template|traits|handler|resources|widgets):", body, re.M
            )
            if complete and not needs_files:
                out.append((doc.name, line, body))
    return out


BLOCKS = _blocks()


def test_there_are_self_contained_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize(("doc", "line", "body"), BLOCKS, ids=[f"{d}:{n}" for d, n, _ in BLOCKS])
def test_example_validates(project: Path, doc: str, line: int, body: str) -> None:
    (project / "buddy.yaml").write_text(body, encoding="utf-8")
    _, issues = buddy.check(project)
    assert issues == [], f"{doc}:{line}: " + "\n".join(map(str, issues))


def _tutorial_files() -> dict[str, str]:
    """The last version of every file the tutorial shows as "`path`:" + a code block."""
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    pattern = r"`([\w./-]+\.(?:yaml|j2|py|json|md))`:\n\n(`{3,4})\w*\n(.*?)^\2$"
    return {m.group(1): m.group(3) for m in re.finditer(pattern, text, re.S | re.M)}


def test_the_tutorials_finished_buddy_validates_and_renders(project: Path) -> None:
    files = _tutorial_files()
    assert {"tea-pal/buddy.yaml", "personas/friend.md.j2", "plugins/tea.py"} <= set(files)
    for name, body in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(body, encoding="utf-8")
    blueprint, issues = buddy.check(project / "tea-pal")
    assert issues == []
    assert blueprint is not None
    assert "阿茶" in blueprint.persona.render()


def test_every_platform_endpoint_is_in_the_protocol_doc() -> None:
    from buddy.platform.dev.app import create_app

    protocol = (DOCS / "protocol.md").read_text(encoding="utf-8")
    paths = create_app(":memory:").openapi()["paths"]
    missing = [
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        for method in operations
        if path not in protocol
    ]
    assert not missing, f"document these endpoints in docs/protocol.md: {missing}"
    assert "/internal/v1/gateway" in protocol


MODELS = (DOCS / "models.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_every_preset_is_documented(name: str) -> None:
    provider = PROVIDERS[name]
    heading = re.search(rf"^### `{re.escape(name)}` — (.+)$", MODELS, re.M)
    assert heading, f"docs/models.md needs a section `### `{name}` — …`"
    # The first such row is the summary table's (the styles table comes later).
    row = next(line for line in MODELS.splitlines() if line.startswith(f"| `{name}` |"))
    if provider.base_url:
        assert f"`{provider.base_url}`" in row
    if provider.api_key_env:
        assert f"`{provider.api_key_env}`" in row
    for prefix in provider.prefixes:
        assert f"`{prefix.removeprefix('^')}`" in row or prefix == r"o\d", (name, prefix)
    if provider.thinking:
        assert f"`{provider.thinking}`" in row
    for field in (*provider.pass_back, *provider.signed_pass_back):
        assert f"`{field}`" in row


def test_every_thinking_style_is_documented() -> None:
    for style in THINKING_STYLES:
        assert re.search(rf"^\| `{style}` \|", MODELS, re.M), style


def test_the_tutorials_render_output_is_what_render_prints(project: Path) -> None:
    """Section 5 of the tutorial shows `buddy render tea-pal` of the manifest just before."""
    from buddy.compile.render import render_markdown

    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    before, _, after = text.partition("````text\n$ buddy render tea-pal\n")
    manifest = re.findall(r"^```yaml\n(.*?)^```$", before, re.S | re.M)[-1]
    shown = after.split("\n````\n", 1)[0] + "\n"
    (project / "tea-pal").mkdir()
    (project / "tea-pal" / "buddy.yaml").write_text(manifest, encoding="utf-8")
    assert render_markdown(buddy.load(project / "tea-pal")) == shown


def _fenced_sh(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)\n```$", text, re.M | re.S)


def test_both_readmes_open_with_the_same_two_commands_and_ci_runs_the_second() -> None:
    english = (REPO / "README.md").read_text(encoding="utf-8")
    chinese = (REPO / "README.zh-CN.md").read_text(encoding="utf-8")
    assert english.splitlines()[2] == "English · [中文](README.zh-CN.md)"
    assert chinese.splitlines()[2] == "[English](README.md) · 中文"
    first = _fenced_sh(english.split("---", 1)[0])
    assert len(first) == 2 and _fenced_sh(chinese.split("---", 1)[0]) == first
    run, test = first
    assert "buddy chat" in run and "pytest" in test
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == test


def _shown(doc: str, command: str) -> list[str]:
    """The lines a ```text block of ``doc`` shows after ``$ command`` (up to the next
    ``$ `` line or the block's end)."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    block = text.split(f"\n$ {command}\n", 1)[1].split("\n```", 1)[0]
    return block.split("\n$ ", 1)[0].split("\n")


def _buddy(args: list[str], cwd: Path, **env: str) -> tuple[int, str]:
    """``python -m buddy ARGS`` with no model key and no ``BUDDY_*`` variable but ``env``
    (and ``BUDDY_WARM=0``: no warm start server left behind)."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    clean = {k: v for k, v in clean.items() if not k.startswith("BUDDY_")}
    clean["BUDDY_WARM"] = "0"
    done = subprocess.run(
        [sys.executable, "-m", "buddy", *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_docs_missing_key_outputs_are_real() -> None:
    """runtime.md and cli.md show what `chat` and `run` print when no model has its key."""
    code, out = _buddy(["chat", "manifests/aunt-tu"], REPO)
    assert (code, out.splitlines()) == (2, _shown("runtime.md", "buddy chat manifests/aunt-tu"))
    shown = _shown("cli.md", "buddy run manifests/cardio")
    code, out = _buddy(
        ["run", "manifests/cardio"],
        REPO,
        BUDDY_TOKEN="bdt_doc",
        BUDDY_PLATFORM_URL="http://127.0.0.1:9",
    )
    assert (code, out.splitlines()) == (2, shown)
    cli_md = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert f"$ buddy run manifests/cardio\n{shown[0]}\n$ echo $?\n2\n" in cli_md


def test_the_docs_schema_write_output_is_real(tmp_path: Path) -> None:
    """cli.md's `buddy schema --write` in this repository: both committed schemas are
    current (in a copy, so a stale one is not rewritten here)."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    for name in ("buddy.schema.json", "scenario.schema.json"):
        (tmp_path / "docs" / name).write_bytes((DOCS / name).read_bytes())
    code, out = _buddy(["schema", "--write"], tmp_path)
    assert (code, out.splitlines()) == (0, _shown("cli.md", "buddy schema --write"))


#: What differs between two `buddy dev` sessions: the clock, the port, the database, timings.
_DEV_VOLATILE = [
    (re.compile(r"^\[\d\d:\d\d:\d\d\]"), "[TIME]"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"db \S+platform\.db"), "db DB"),
    (re.compile(r"reloaded in \d+\.\d+ s"), "reloaded in N s"),
]


def _dev_normal(lines: list[str]) -> list[str]:
    return normalised(lines, _DEV_VOLATILE)


def test_the_docs_dev_session_is_real(tmp_path: Path) -> None:
    """cli.md's `buddy dev` session (and the start playground.md shows): both buddies
    start, a typo keeps version 1 running, the fix reloads it (run on a free port, in a
    copy of the examples)."""
    import shutil

    from tests.test_playground import running_dev

    command = "buddy dev manifests/aunt-tu manifests/cardio --model offline"
    shown = _shown("cli.md", command)
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("manifests", "plugins", "docs"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=ignore)
    manifest = tmp_path / "manifests" / "aunt-tu" / "buddy.yaml"
    text = manifest.read_text(encoding="utf-8")
    with running_dev(command.split()[2:], tmp_path) as dev:
        dev.wait_for_output("cardio: running as")
        manifest.write_text(text.replace("\ntitle:", "\ntitel:", 1), encoding="utf-8")
        dev.wait_for_output("still running version 1", timeout=20)
        manifest.write_text(text, encoding="utf-8")
        dev.wait_for_output("(version 2)", timeout=20)
        printed = list(dev.lines)
    assert _dev_normal(printed) == _dev_normal(shown), "\n".join(printed)
    # playground.md opens with the same command and its first three lines.
    page = (DOCS / "playground.md").read_text(encoding="utf-8")
    start = page.split(f"```sh\n{command}\n```\n\n```text\n", 1)[1].split("\n```", 1)[0]
    assert _dev_normal(start.split("\n")) == _dev_normal(printed[:3])


def test_the_python_testing_names_in_runtime_md_exist() -> None:
    """runtime.md §11 names only what there is: each row's class or function (with the
    parameters it shows), the `LocalPlatform` helpers, the model's and outcome's fields."""
    import dataclasses
    import inspect

    import buddy.testing
    import buddy.testing.local
    from buddy.runtime.loop import TurnOutcome
    from buddy.testing.local import LocalPlatform

    text = (DOCS / "runtime.md").read_text(encoding="utf-8")
    section = text.split("\n## 11. ", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(?:buddy\.)?(\w+)\(([^)]*)\)` \|", section, re.M)
    assert len(rows) >= 6
    modules = (buddy, buddy.testing, buddy.testing.local)
    for name, shown in rows:
        owner = next((m for m in modules if hasattr(m, name)), None)
        assert owner is not None, f"runtime.md §11 names `{name}`, which does not exist"
        parameters = inspect.signature(getattr(owner, name)).parameters
        for param in (p.split("=")[0].strip() for p in shown.split(",")):
            assert param in ("", "*") or param in parameters, f"`{name}` has no `{param}`"
    helpers = re.search(r"helpers that act as users: (.*?);", section, re.S)
    assert helpers is not None
    named = re.findall(r"`(\w+)`", helpers.group(1))
    assert named and [n for n in named if not hasattr(LocalPlatform, n)] == []
    model = buddy.testing.TestModel()
    for attribute in re.findall(r"`model\.(\w+)", section):
        assert hasattr(model, attribute), f"TestModel has no `{attribute}`"
    outcome = re.search(r"The outcome of `Agent\.run` has (.*?)\.\n", section, re.S)
    assert outcome is not None
    fields = {f.name for f in dataclasses.fields(TurnOutcome)}
    assert set(re.findall(r"`(\w+)`", outcome.group(1))) <= fields


def test_runtime_md_says_what_ends_a_turn() -> None:
    """§6 names every platform tool that ends a turn and the consent card sent from code
    (`conversation.data_access.request` ends it too, tests/runtime/test_after_read.py);
    nothing says only one of them does."""
    from buddy.compile.platform_tools import ENDS_TURN

    text = (DOCS / "runtime.md").read_text(encoding="utf-8")
    bullet = re.search(r"^- \*\*A tool ended the turn\*\*.*?(?=^- )", text, re.S | re.M)
    assert bullet is not None
    assert all(f"`{name}`" in bullet.group(0) for name in ENDS_TURN)
    assert "data_access.request" in bullet.group(0)
    assert not re.search(r"[Oo]nly the \S+ \S+ ends the turn", text)
