"""The CI recipes, tested as far as they can be offline: the GitHub Actions job and the
pre-commit configuration of docs/review.md ("In CI"), and the hooks this repository ships
in `.pre-commit-hooks.yaml`, run on a sample project as pre-commit would run them."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from buddy.cli.main import _parser
from tests.conftest import REPO, Write, venv_environment

DOC = (REPO / "docs" / "review.md").read_text(encoding="utf-8")
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"

# pre-commit's own schema of a hook in `.pre-commit-hooks.yaml` (pre_commit/clientlib.py,
# MANIFEST_HOOK_DICT): required keys, every key, and the values some keys take.
REQUIRED = {"id", "name", "entry", "language"}
MANIFEST_KEYS = REQUIRED | {
    "alias",
    "files",
    "exclude",
    "types",
    "types_or",
    "exclude_types",
    "additional_dependencies",
    "args",
    "always_run",
    "fail_fast",
    "pass_filenames",
    "description",
    "language_version",
    "log_file",
    "minimum_pre_commit_version",
    "require_serial",
    "stages",
    "verbose",
}
BOOLEANS = {"always_run", "fail_fast", "pass_filenames", "require_serial", "verbose"}
LISTS = {"types", "types_or", "exclude_types", "additional_dependencies", "args", "stages"}
STAGES = {
    "commit-msg",
    "post-checkout",
    "post-commit",
    "post-merge",
    "post-rewrite",
    "pre-commit",
    "pre-merge-commit",
    "pre-push",
    "pre-rebase",
    "prepare-commit-msg",
    "manual",
}
# The shell's operators end a command (what `buddy …` is given stops there).
OPERATORS = {">", ">>", "<", "|", "||", "&", "&&", ";", "("}

SAMPLE = {
    "pyproject.toml": "",
    "README.md": "# a project\n",
    "manifests/tiny/buddy.yaml": """\
        name: tiny
        model: test
        persona:
          prompt: 你是一个测试用的小伙伴。
        """,
    "manifests/tiny/tests/chat.yaml": """\
        - name: 打招呼
          steps:
            - user: 你好
              model: [你好呀]
              expect: { reply: 你好呀 }
        """,
}


def _section(title: str) -> str:
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else len(DOC)]


def _yaml_blocks(text: str) -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M)]


CI = _section("In CI")


def _workflow() -> dict[Any, Any]:
    (workflow, *_) = [b for b in _yaml_blocks(CI) if isinstance(b, dict) and "jobs" in b]
    assert isinstance(workflow, dict)
    return workflow


def _steps() -> list[dict[str, Any]]:
    (job,) = _workflow()["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _commands(script: str) -> list[list[str]]:
    """Each simple command of a shell script, as words (up to an operator)."""
    commands: list[list[str]] = [[]]
    for line in script.replace("\\\n", " ").splitlines():
        if line.strip().startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        for word in lexer:
            if word in OPERATORS or set(word) <= set("<>|&;"):
                commands.append([])
            else:
                commands[-1].append(word)
        commands.append([])
    return [c for c in commands if c]


def _buddy_commands(steps: list[dict[str, Any]]) -> list[list[str]]:
    return [c[1:] for s in steps if "run" in s for c in _commands(s["run"]) if c[0] == "buddy"]


def _parses(argv: list[str]) -> Any:
    """``buddy ARGV`` as the command line reads it; a usage error fails the test."""
    try:
        return _parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"`buddy {shlex.join(argv)}` is not a valid buddy command")


# ---------------------------------------------------------------- the GitHub Actions job


def test_the_workflow_runs_on_pull_requests_and_may_comment() -> None:
    workflow = _workflow()
    # YAML 1.1 reads the key `on` as True (PyYAML does); GitHub reads it as "on".
    assert "pull_request" in workflow[True]
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert all("uses" in s or "run" in s for s in _steps())


def test_the_workflow_buddy_commands_are_valid() -> None:
    commands = _buddy_commands(_steps())
    assert commands, "no buddy command in the workflow"
    for argv in commands:
        _parses(argv)
    (diff,) = commands
    args = _parses(diff)
    assert (args.command, args.format, args.git) == ("diff", "markdown", "origin/$BASE")
    assert getattr(args, "replay", False) is True
    assert not args.exit_code  # a difference is for the reviewer, not a failed job


def test_the_base_is_fetched_before_the_diff_and_the_diff_is_commented() -> None:
    steps = _steps()
    (replay,) = [s for s in steps if "buddy diff" in s.get("run", "")]
    assert replay["env"] == {"BASE": "${{ github.base_ref }}"}
    commands = _commands(replay["run"])
    fetch = next(i for i, c in enumerate(commands) if c[:2] == ["git", "fetch"])
    diff = next(i for i, c in enumerate(commands) if c[:2] == ["buddy", "diff"])
    assert fetch < diff
    assert "--depth=1" in commands[fetch] and "origin" in commands[fetch]
    assert "+refs/heads/$BASE:refs/remotes/origin/$BASE" in commands[fetch]
    assert "> buddy-replay.md" in replay["run"]
    later = steps[steps.index(replay) + 1 :]
    comments = [c for s in later if "run" in s for c in _commands(s["run"]) if c[0] == "gh"]
    assert [c[:3] for c in comments] == [["gh", "pr", "comment"]] * 2
    assert all(c[c.index("--body-file") + 1] == "buddy-replay.md" for c in comments)
    assert "--edit-last" in comments[0] and "--edit-last" not in comments[1]
    (comment,) = [s for s in later if "gh pr comment" in s.get("run", "")]
    assert comment["env"]["GH_TOKEN"] == "${{ github.token }}"


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True)


_GIT_ENV = venv_environment(
    GIT_AUTHOR_NAME="ci",
    GIT_AUTHOR_EMAIL="ci@example.com",
    GIT_COMMITTER_NAME="ci",
    GIT_COMMITTER_EMAIL="ci@example.com",
    GIT_CONFIG_GLOBAL="/dev/null",
    GIT_CONFIG_NOSYSTEM="1",
)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_replay_step_runs_in_a_shallow_clone(tmp_path: Path) -> None:
    # GitHub's side, offline: a repository whose `main` is the base, and the pull request
    # checked out as actions/checkout does it (one commit deep), with the change on top.
    base = tmp_path / "base"
    for name, text in SAMPLE.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(textwrap.dedent(text), encoding="utf-8")
    _git("init", "-q", "-b", "main", cwd=base)
    _git("add", "-A", cwd=base)
    _git("commit", "-qm", "base", cwd=base)
    _git("clone", "-q", "--bare", str(base), str(tmp_path / "origin.git"), cwd=tmp_path)
    url = (tmp_path / "origin.git").as_uri()
    _git("clone", "-q", "--depth=1", "--no-tags", url, "pr", cwd=tmp_path)
    checkout = tmp_path / "pr"
    manifest = checkout / "manifests" / "tiny" / "buddy.yaml"
    manifest.write_text(manifest.read_text("utf-8").replace("测试用的", "陪聊的"), "utf-8")
    _git("commit", "-qam", "change", cwd=checkout)

    (replay,) = [s for s in _steps() if "buddy diff" in s.get("run", "")]
    summary = tmp_path / "summary.md"
    env = {**_GIT_ENV, "BASE": "main", "GITHUB_STEP_SUMMARY": str(summary)}
    done = subprocess.run(
        ["bash", "-e", "-c", replay["run"]],
        cwd=checkout,
        env={**{k: v for k, v in env.items() if not k.startswith("BUDDY_")}, "BUDDY_WARM": "0"},
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    comment = (checkout / "buddy-replay.md").read_text(encoding="utf-8")
    assert comment.startswith("<!-- buddy-diff -->\n")
    assert "`origin/main`" in comment and "manifests/tiny" in comment
    assert "打招呼" in comment  # the scenario was replayed
    assert summary.read_text(encoding="utf-8") == comment


def test_commands_are_read_up_to_the_shells_operators() -> None:
    script = 'a "x y" > f\n# buddy no\nb 1 \\\n  2 || c && d; e | f\n'
    assert _commands(script) == [["a", "x y"], ["f"], ["b", "1", "2"], ["c"], ["d"], ["e"], ["f"]]


# ---------------------------------------------------------------- pre-commit


def _hooks() -> list[dict[str, Any]]:
    hooks = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    assert isinstance(hooks, list)
    return hooks


def test_the_shipped_hooks_follow_pre_commits_schema() -> None:
    hooks = _hooks()
    assert [h["id"] for h in hooks] == ["buddy-validate", "buddy-test"]
    for hook in hooks:
        assert REQUIRED <= set(hook) <= MANIFEST_KEYS, hook["id"]
        assert all(isinstance(hook[k], str) for k in ("id", "name", "entry", "description"))
        assert hook["language"] == "python"  # pre-commit pip-installs this repository
        assert all(isinstance(hook[k], bool) for k in BOOLEANS & set(hook))
        for key in LISTS & set(hook):
            assert all(isinstance(v, str) for v in hook[key]), (hook["id"], key)
        assert set(hook.get("stages", [])) <= STAGES
        re.compile(hook.get("files", ""))
        re.compile(hook.get("exclude", "^$"))
        argv = shlex.split(hook["entry"])
        assert argv[0] == "buddy"
        _parses([*argv[1:], *hook.get("args", [])])


@pytest.mark.parametrize(
    ("path", "runs"),
    [
        ("manifests/tiny/buddy.yaml", True),
        ("manifests/tiny/tests/chat.yaml", True),
        ("manifests/personas/companion.md.j2", True),
        ("manifests/tiny/lore/城市.yaml", True),
        ("plugins/tiny.py", True),
        ("README.md", False),
        ("docs/avatar.png", False),
    ],
)
def test_the_hooks_run_when_a_buddys_file_changes(path: str, runs: bool) -> None:
    for hook in _hooks():
        # pre-commit: `files` and `exclude` are searched for in the path (re.search).
        selected = bool(re.search(hook.get("files", ""), path)) and not re.search(
            hook.get("exclude", "^$"), path
        )
        assert selected is runs, (hook["id"], path)


def _hook_command(hook_id: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a hook's command in ``cwd`` as pre-commit does (``entry`` split like a shell
    would, then ``args``; no file names: ``pass_filenames: false``)."""
    (hook,) = [h for h in _hooks() if h["id"] == hook_id]
    assert hook["pass_filenames"] is False
    argv = [*shlex.split(hook["entry"]), *hook.get("args", [])]
    return subprocess.run(
        argv,
        cwd=cwd,
        env=venv_environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_hooks_pass_on_a_sample_project(project: Path, write: Write) -> None:
    write(SAMPLE)
    validate = _hook_command("buddy-validate", project)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    tested = _hook_command("buddy-test", project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.splitlines() == [
        "PASS 打招呼 (manifests/tiny/tests/chat.yaml:1)",
        "1 passed, 0 failed",
    ]


def test_the_hooks_fail_on_a_broken_buddy_with_located_messages(
    project: Path, write: Write
) -> None:
    write({**SAMPLE, "manifests/tiny/buddy.yaml": "name: tiny\nmodle: test\n"})
    validate = _hook_command("buddy-validate", project)
    assert validate.returncode == 1
    assert "manifests/tiny/buddy.yaml:2:1: error: " in validate.stdout
    scenarios = SAMPLE["manifests/tiny/tests/chat.yaml"]
    broken = scenarios.replace("{ reply: 你好呀 }", "{ reply: 早 }")
    write({**SAMPLE, "manifests/tiny/tests/chat.yaml": broken})
    tested = _hook_command("buddy-test", project)
    assert tested.returncode == 1
    assert (
        'manifests/tiny/tests/chat.yaml:5:24: expected the reply "早", got "你好呀"'
        in tested.stdout
    )


def test_the_docs_pre_commit_configuration_uses_the_shipped_hooks() -> None:
    (config,) = [b for b in _yaml_blocks(CI) if isinstance(b, dict) and "repos" in b]
    (repo,) = config["repos"]
    assert set(repo) == {"repo", "rev", "hooks"}
    shipped = {h["id"]: h for h in _hooks()}
    for hook in repo["hooks"]:
        # A hook in a project's configuration may set any key of the manifest but `id`'s
        # own definition; its `id` names a shipped hook.
        assert hook["id"] in shipped
        assert set(hook) <= MANIFEST_KEYS
        argv = shlex.split(shipped[hook["id"]]["entry"])[1:]
        _parses([*argv, *hook.get("args", shipped[hook["id"]].get("args", []))])
    assert [h["id"] for h in repo["hooks"]] == list(shipped)
