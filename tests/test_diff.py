"""`buddy diff`: compiled views compared between two paths, or a git revision and the work tree.

The git tests build their own repository (a copy of manifests/ and plugins/, the shared
persona templates buddy ships as the project's own manifests/personas/, plus a buddy that
uses no shared template) so they never depend on this repository's history.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import buddy
from buddy.cli.main import main
from buddy.compile.persona import BUILT_IN_PACK
from buddy.compile.render import render_markdown
from buddy.review import Side, compare
from buddy.review.report import COMMENT_MARKER, markdown
from tests.conftest import REPO, Write

PLAIN = """\
name: plain
model: offline
persona:
  prompt: 我是 {{ buddy.name }}。
"""
GROUPY = """\
name: groupy
model: offline
persona:
  prompt: |
    我是 {{ buddy.name }}。
    {% if conversation.kind == "group" %}群里少说话。{% endif %}
"""

NO_CACHE = shutil.ignore_patterns("__pycache__")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _buddy(root: Path, name: str, text: str) -> Path:
    path = root / name / "buddy.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- two paths


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical copies of a project with an inline-prompt buddy."""
    old, new = tmp_path / "old", tmp_path / "new"
    for side in (old, new):
        _buddy(side, "plain", PLAIN)
        _buddy(side, "groupy", GROUPY)
    return old, new


def test_identical_sides_exit_0_even_with_exit_code(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = sides
    code, out, _ = _run(["diff", str(old), str(new), "--exit-code"], capsys)
    assert code == 0
    assert "no changes: 2 buddies compared" in out


def test_a_changed_prompt_is_a_unified_diff_of_the_view(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = sides
    monkeypatch.chdir(old.parent)
    _edit(new / "plain" / "buddy.yaml", "我是", "你好，我是")
    code, out, _ = _run(["diff", "old", "new"], capsys)
    assert code == 0  # without --exit-code a change is not a failure
    assert out == (
        "buddy diff old -> new: 2 buddies compared: 1 changed\n"
        "\n"
        "=== plain: changed (+1 -1)\n"
        "changed files it depends on: plain/buddy.yaml\n"
        "--- a/plain (old)\n"
        "+++ b/plain (new)\n"
        "@@ -16,7 +16,7 @@ ## System prompt (private conversation, now = 2026-01-05T09:00:00+08:00)\n"
        " ## System prompt (private conversation, now = 2026-01-05T09:00:00+08:00)\n"
        " \n"
        " ```text\n"
        "-我是 plain。\n"
        "+你好，我是 plain。\n"
        " ```\n"
        " \n"
        " ## Tools (0)\n"
    )
    assert main(["diff", "old", "new", "--exit-code"]) == 1


def test_paths_may_be_manifest_files_or_buddy_folders(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = sides
    _edit(new / "plain" / "buddy.yaml", "model: offline", "model: test")
    code, out, _ = _run(
        ["diff", str(old / "plain"), str(new / "plain" / "buddy.yaml"), "--exit-code"], capsys
    )
    assert code == 1
    assert "1 buddy compared: 1 changed" in out
    assert '-  "ref": "offline:offline",' in out
    assert '+  "ref": "test:test",' in out


def test_added_and_removed_buddies(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = sides
    shutil.rmtree(new / "groupy")
    _buddy(new, "fresh", PLAIN.replace("plain", "fresh"))
    report = compare(*(_side(p) for p in sides))
    assert [(b.name, b.status) for b in report.buddies] == [
        ("fresh", "added"),
        ("groupy", "removed"),
    ]
    added = report.buddies[0]
    assert added.diff.startswith("--- /dev/null\n+++ b/fresh (new)\n")
    assert "+我是 fresh。" in added.diff
    assert report.buddies[1].diff == ""  # a removed buddy is listed, not diffed
    code, out, _ = _run(["diff", str(old), str(new), "--exit-code"], capsys)
    assert code == 1
    assert "=== fresh: added" in out
    assert "=== groupy: removed" in out


def _side(path: Path) -> Side:
    from buddy.cli.commands import find_manifests

    return Side(path, path.name, tuple(find_manifests(path)), path.name)


def test_a_buddy_invalid_on_one_side_shows_its_located_errors(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = sides
    monkeypatch.chdir(old.parent)
    _edit(new / "plain" / "buddy.yaml", "  prompt:", "  style: warm\n  prompt:")
    code, out, _ = _run(["diff", "old", "new", "--exit-code"], capsys)
    assert code == 1
    assert "=== plain: now invalid (1 problem)" in out
    assert "problems in new:" in out
    assert "new/plain/buddy.yaml:4:3: error: unknown key `style` [persona.style]" in out
    # The other way round, the fixed buddy's whole view is shown.
    code, out, _ = _run(["diff", "new", "old"], capsys)
    assert "=== plain: now valid" in out
    assert "problems in new:" in out
    assert "+++ b/plain (old)" in out
    assert "+我是 plain。" in out


def test_the_same_problems_on_both_sides_are_not_a_change(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = sides
    for side in sides:
        _edit(side / "plain" / "buddy.yaml", "  prompt:", "  style: warm\n  prompt:")
    code, out, _ = _run(["diff", str(old), str(new), "--exit-code"], capsys)
    assert (code, "no changes" in out) == (0, True)


def test_copies_inside_one_project_compare_equal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The view names files relative to the project root (old/… and new/… here); the
    # side's own prefix is dropped so identical copies have identical views.
    (tmp_path / "pyproject.toml").write_text("")
    for side in ("old", "new"):
        shutil.copytree(REPO / "manifests", tmp_path / side)
        shutil.copytree(BUILT_IN_PACK, tmp_path / side / "personas", ignore=NO_CACHE)
    shutil.copytree(REPO / "plugins", tmp_path / "plugins")
    code, out, _ = _run(
        ["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--exit-code"], capsys
    )
    assert (code, out) == (
        0,
        f"buddy diff {tmp_path}/old -> {tmp_path}/new: no changes: 3 buddies compared, every compiled "
        "view is the same\n",
    )
    _edit(tmp_path / "new" / "personas" / "coach.md.j2", "陪他练", "陪他练、督促他")
    report = compare(_side(tmp_path / "old"), _side(tmp_path / "new"))
    assert [(b.name, b.status) for b in report.buddies] == [("cardio", "changed")]
    assert [(s.file, s.buddies) for s in report.shared] == [("personas/coach.md.j2", ("cardio",))]


def test_a_group_only_change_shows_the_group_prompt_diff(sides: tuple[Path, Path]) -> None:
    _edit(sides[1] / "groupy" / "buddy.yaml", "群里少说话。", "群里多听少说。")
    (entry,) = compare(*(_side(p) for p in sides)).buddies
    assert (entry.name, entry.status, entry.diff) == ("groupy", "changed", "")
    assert entry.group_diff.startswith(
        "--- a/groupy (old, group conversation system prompt)\n"
        "+++ b/groupy (new, group conversation system prompt)\n"
    )
    assert "-群里少说话。" in entry.group_diff
    assert (entry.added_lines, entry.removed_lines) == (1, 1)


def test_a_prompt_change_in_both_conversations_is_shown_once(sides: tuple[Path, Path]) -> None:
    _edit(sides[1] / "groupy" / "buddy.yaml", "我是", "我就是")
    (entry,) = compare(*(_side(p) for p in sides)).buddies
    assert "+我就是 groupy。" in entry.diff
    assert entry.group_diff == ""


def test_the_group_diff_leaves_out_hunks_the_view_diff_has(tmp_path: Path) -> None:
    lines = [f"第{i}条。" for i in range(12)]
    prompt = "\n".join(f"    {line}" for line in lines)
    text = (
        "name: long\nmodel: offline\npersona:\n  prompt: |\n"
        f"{prompt}\n"
        '    {% if conversation.kind == "group" %}群里少说话。{% endif %}\n'
    )
    _buddy(tmp_path / "old", "long", text)
    new = _buddy(tmp_path / "new", "long", text)
    _edit(new, "第1条。", "第一条。")
    _edit(new, "群里少说话。", "群里多听。")
    (entry,) = compare(_side(tmp_path / "old"), _side(tmp_path / "new")).buddies
    assert "+第一条。" in entry.diff and "群里" not in entry.diff
    assert entry.group_diff.count("@@ ") == 1  # the first hunk is the view diff's
    assert "+群里多听。" in entry.group_diff and "第一条" not in entry.group_diff


def test_hunk_headers_name_the_section(tmp_path: Path) -> None:
    text = """\
name: tooly
model: offline
persona:
  prompt: 你好。
tools:
  - name: remember
    uses: memory.write
    description: 记下来。
    key: "{{ topic }}"
    text: "{{ text }}"
"""
    _buddy(tmp_path / "old", "tooly", text)
    _edit(_buddy(tmp_path / "new", "tooly", text), "记下来。", "把重要的事记下来。")
    (entry,) = compare(_side(tmp_path / "old"), _side(tmp_path / "new")).buddies
    (header,) = [line for line in entry.diff.splitlines() if line.startswith("@@")]
    assert header.endswith(" @@ ### `remember` · declarative")


@pytest.mark.parametrize(
    "argv",
    [
        ["diff"],
        ["diff", "only-one"],
        ["diff", "a", "b", "c"],
        ["diff", "/nonexistent/old", "/nonexistent/new"],
    ],
)
def test_usage_errors_exit_2(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert err.startswith("buddy diff: ")


def test_two_sides_without_buddies_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code, _, err = _run(["diff", str(tmp_path / "a"), str(tmp_path / "b")], capsys)
    assert code == 2
    assert "no buddy.yaml found" in err


# ---------------------------------------------------------------- markdown


def test_markdown_is_a_pull_request_comment(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(sides[0].parent)
    _edit(sides[1] / "plain" / "buddy.yaml", "我是", "你好，我是")
    _buddy(sides[1], "fresh", PLAIN.replace("plain", "fresh"))
    code, out, _ = _run(["diff", "old", "new", "--format", "markdown", "--exit-code"], capsys)
    assert code == 1
    assert out.startswith(f"{COMMENT_MARKER}\n### buddy diff: `old` → `new`\n")
    assert "3 buddies compared: 1 changed, 1 added." in out
    assert "| buddy | change | view | changed files it depends on |" in out
    assert "| `plain` | changed | +1 -1 | `plain/buddy.yaml` |" in out
    assert "| `fresh` | added | +" in out
    assert out.count("<details>") == 2 == out.count("</details>")
    assert "<summary><code>plain</code> · changed · +1 -1</summary>" in out
    # The view itself has ``` fences: the diff block's fence is longer, so it stays one block.
    assert "\n````diff\n--- a/plain (old)\n" in out
    assert "\n ```text\n-我是 plain。\n+你好，我是 plain。\n ```\n" in out
    assert main(["diff", "old", "new", "--format", "markdown"]) == 0
    assert capsys.readouterr().out == out  # deterministic


def test_markdown_without_changes_still_says_so(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(["diff", *map(str, sides), "--format", "markdown"], capsys)
    assert code == 0
    assert "No changes: 2 buddies compared, every compiled view is the same." in out
    assert "<details>" not in out


def test_markdown_leaves_out_diffs_that_would_not_fit(sides: tuple[Path, Path]) -> None:
    _edit(sides[1] / "plain" / "buddy.yaml", "我是", "你好，我是")
    _edit(sides[1] / "groupy" / "buddy.yaml", "我是", "你好，我是")
    report = compare(*(_side(p) for p in sides))
    full = markdown(report)
    short = markdown(report, max_chars=len(full) - 10)
    assert short.count("Diff left out") == 1
    assert short.count("<details>") == 2
    assert len(short) < len(full)


# ---------------------------------------------------------------- --git


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def committed(root: Path) -> None:
    """Make ``root`` a git repository with everything in it committed once."""
    _git(root.parent, "init", "-q", str(root))
    _git(root, "add", "-A")
    _git(
        root,
        "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false",
        "commit", "-q", "-m", "buddies",
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh git repository: the example buddies, their plugins, and `plain` (no shared
    template), committed once; the working directory is its top level."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "project"
    shutil.copytree(REPO / "manifests", root / "manifests")
    # The project's own copies of the shared templates (they win over the shipped ones).
    shutil.copytree(BUILT_IN_PACK, root / "manifests" / "personas", ignore=NO_CACHE)
    shutil.copytree(REPO / "plugins", root / "plugins", ignore=NO_CACHE)
    _buddy(root / "manifests", "plain", PLAIN)
    committed(root)
    # Temporary checkouts go here, so a test can see they are cleaned up.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(root)
    return root


def _git_report(repo: Path, *paths: str) -> list[tuple[str, str, tuple[str, ...]]]:
    from buddy.cli.diff import _found
    from buddy.review.git import checkout

    with checkout(repo, "HEAD") as snapshot:
        old = Side(snapshot, "HEAD", _found(snapshot, paths or [""]))
        new = Side(repo, "work tree", _found(repo, paths or [""]))
        report = compare(old, new)
    return [(b.name, b.status, b.changed_files) for b in report.buddies]


@needs_git
def test_git_without_changes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["diff", "--git", "HEAD", "--exit-code"], capsys)
    assert (code, out) == (
        0,
        "buddy diff HEAD -> work tree: no changes: 4 buddies compared, every compiled view "
        "is the same\n",
    )
    assert list((repo.parent / "tmp").iterdir()) == []  # the checkout is gone


@needs_git
def test_git_shared_template_change_lists_exactly_its_users(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(repo / "manifests/personas/companion.md.j2", "不是客服", "不是客服机器人")
    code, out, _ = _run(["diff", "--git", "HEAD", "--exit-code"], capsys)
    assert code == 1
    assert "4 buddies compared: 3 changed" in out
    assert (
        "changed shared files (and the buddies that depend on them):\n"
        "  manifests/personas/companion.md.j2: manifests/aunt-tu, manifests/cardio, "
        "manifests/xiaoman\n"
    ) in out
    assert "=== manifests/aunt-tu: changed (+1 -1)" in out
    assert "=== manifests/cardio: changed (+1 -1)" in out
    assert "+你是小涂阿姨，在聊天里陪着对方的搭子，不是客服机器人，也不是百科全书。" in out
    assert "+你是阿燃，在聊天里陪着对方的搭子，不是客服机器人，也不是百科全书。" in out
    assert "plain" not in out
    assert str(repo) not in out and "buddy-diff-" not in out


@needs_git
def test_the_example_in_docs_review_md(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = (REPO / "docs" / "review.md").read_text(encoding="utf-8")
    match = re.search(r"^```text\n(buddy diff HEAD -> work tree.*?)^```$", doc, re.S | re.M)
    assert match is not None
    _edit(repo / "manifests/personas/coach.md.j2", "现在的水平、", "现在的水平和目标、")
    _edit(repo / "manifests/aunt-tu/buddy.yaml", "maximum: 7", "maximum: 14")
    plugin = repo / "plugins/aunt_tu.py"
    plugin.write_text(plugin.read_text(encoding="utf-8") + "# tweak\n", encoding="utf-8")
    code, out, _ = _run(["diff", "--git", "HEAD"], capsys)
    assert (code, out) == (0, match.group(1))


@needs_git
def test_git_template_used_by_one_buddy(repo: Path) -> None:
    _edit(repo / "manifests/personas/coach.md.j2", "陪他练", "陪他练、督促他")
    assert _git_report(repo) == [
        ("manifests/cardio", "changed", ("manifests/personas/coach.md.j2",))
    ]


@needs_git
def test_git_trait_file(repo: Path) -> None:
    trait = repo / "manifests/personas/traits/gentle.yaml"
    trait.write_text(trait.read_text(encoding="utf-8") + "# 注释\n", encoding="utf-8")
    # The file changed, the view did not: the buddy is listed as affected.
    assert _git_report(repo) == [
        ("manifests/aunt-tu", "affected", ("manifests/personas/traits/gentle.yaml",))
    ]


@needs_git
def test_git_plugin_change_lists_only_its_buddy(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = repo / "plugins/aunt_tu.py"
    plugin.write_text(plugin.read_text(encoding="utf-8") + "\n# tweak\n", encoding="utf-8")
    code, out, _ = _run(["diff", "--git", "HEAD", "--format", "markdown", "--exit-code"], capsys)
    assert code == 1
    assert "| `manifests/aunt-tu` | view unchanged |  | `plugins/aunt_tu.py` |" in out
    assert "- `plugins/aunt_tu.py`: `manifests/aunt-tu`\n" in out
    assert "cardio" not in out and "plain" not in out
    assert "plugin code, for example, is not part of the view" in out


@needs_git
def test_git_paths_limit_the_buddies(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(repo / "manifests/personas/companion.md.j2", "不是客服", "不是客服机器人")
    code, out, _ = _run(["diff", "--git", "HEAD", "manifests/cardio", "--exit-code"], capsys)
    assert code == 1
    assert "1 buddy compared: 1 changed" in out
    assert "manifests/cardio" in out and "aunt-tu" not in out


@needs_git
def test_git_paths_are_relative_to_the_working_directory(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _edit(repo / "manifests/plain/buddy.yaml", "我是", "我就是")
    monkeypatch.chdir(repo / "manifests")
    code, out, _ = _run(["diff", "--git", "HEAD", "plain", "--exit-code"], capsys)
    assert code == 1
    assert "=== manifests/plain: changed (+1 -1)" in out


@needs_git
def test_git_added_removed_and_broken(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _buddy(repo / "manifests", "fresh", PLAIN.replace("plain", "fresh"))  # untracked
    shutil.rmtree(repo / "manifests/cardio")
    _edit(repo / "manifests/plain/buddy.yaml", "  prompt:", "  style: warm\n  prompt:")
    code, out, _ = _run(["diff", "--git", "HEAD"], capsys)
    assert code == 0
    assert "5 buddies compared: 1 changed, 1 added, 1 removed" in out
    assert "=== manifests/cardio: removed" in out
    assert "=== manifests/fresh: added" in out
    assert "=== manifests/plain: now invalid (1 problem)" in out
    assert "  manifests/plain/buddy.yaml:4:3: error: unknown key `style`" in out


@needs_git
def test_git_revision_is_materialised_faithfully(repo: Path) -> None:
    # A commit after HEAD~0: compare the previous commit with a work tree equal to HEAD.
    _edit(repo / "manifests/plain/buddy.yaml", "我是", "我就是")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "second")
    assert main(["diff", "--git", "HEAD", "--exit-code"]) == 0
    assert main(["diff", "--git", "HEAD~1", "--exit-code"]) == 1


@needs_git
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diff", "--git", "no-such-rev"], "unknown revision 'no-such-rev'"),
        (["diff", "--git", "HEAD", "/"], "outside the repository"),
        (["diff", "--git", "HEAD", "nowhere"], "nowhere: no buddy.yaml found"),
    ],
)
def test_git_usage_errors_exit_2(
    repo: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert message in err


@needs_git
def test_git_outside_a_repository_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(outside)
    code, _, err = _run(["diff", "--git", "HEAD"], capsys)
    assert code == 2
    assert "not inside a git work tree" in err


@pytest.mark.parametrize(
    "name", ["buddy.review", "buddy.review.diff", "buddy.review.git", "buddy.review.report"]
)
def test_all_names_exist(name: str) -> None:
    import importlib

    module = importlib.import_module(name)
    for member in module.__all__:
        assert hasattr(module, member), f"{name}.{member}"


# ---------------------------------------------------------------- the companion layer


def test_a_changed_trait_number_shows_in_the_prompt_and_the_character_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = (
        "name: mood\nmodel: test\npersona:\n  prompt: 气{{ character.anger }} 信任{{ character.trust }}\n"
        "  traits: traits/t.yaml\ncharacter: true\n"
    )
    for side in ("old", "new"):
        _buddy(tmp_path / side, "mood", manifest)
        (tmp_path / side / "mood" / "traits").mkdir()
        (tmp_path / side / "mood" / "traits" / "t.yaml").write_text("trust_damage: 1.0\n", "utf-8")
    (tmp_path / "new" / "mood" / "traits" / "t.yaml").write_text("trust_damage: 0.5\n", "utf-8")
    code, out, _ = _run(
        ["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--exit-code"], capsys
    )
    assert code == 1
    assert "changed files it depends on: mood/traits/t.yaml" in out
    # the example mood (just after a sharp remark) costs half the trust now
    assert "-气0.35 信任0.2\n+气0.35 信任0.35\n" in out
    assert '-      "value": 1.0,\n+      "value": 0.5,\n' in out


def test_a_changed_relation_spec_shows_in_every_buddy_using_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = (
        "relation: mood\nversion: 1\ntitle: 心情\nnote: n\nrisk: R0\n"
        "slots:\n  subject: { type: party, required: true }\n  value: { type: text, required: true }\n"
        "value: value\nconflict: last_write_wins\n"
    )
    for side in ("old", "new"):
        root = tmp_path / side
        for name in ("one", "two"):
            _buddy(
                root,
                name,
                f"name: {name}\nmodel: test\npersona:\n  prompt: hi\nmemory:\n  relations: [mood]\n",
            )
        (root / "personas" / "relations").mkdir(parents=True)
        (root / "personas" / "relations" / "mood.yaml").write_text(spec, "utf-8")
        (root / ".git").mkdir()
    _edit(tmp_path / "new" / "personas" / "relations" / "mood.yaml", "last_write_wins", "dispute")
    code, out, _ = _run(["diff", str(tmp_path / "old"), str(tmp_path / "new")], capsys)
    assert code == 0
    assert out.count('-  "conflict": "last_write_wins",\n+  "conflict": "dispute",\n') == 2
    assert "2 buddies compared: 2 changed" in out


BROKEN = (
    PLAIN
    + """\
tools:
  - name: log
    description: 记一笔。
    parameters: { type: object }
    handler: plugins.missing:log
"""
)


def test_a_tree_where_nothing_compiles_says_so_and_fails_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A copied manifests/ folder without the project's plugins/: nothing compiles on
    # either side, and "no changes" would tell the reviewer nothing.
    (tmp_path / "pyproject.toml").write_text("")
    for side in ("old", "new"):
        for name in ("a", "b"):
            _buddy(tmp_path / side, name, BROKEN.replace("plain", name))
    code, out, _ = _run(
        ["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--exit-code"], capsys
    )
    assert code == 1
    assert out.startswith(
        f"buddy diff {tmp_path}/old -> {tmp_path}/new: nothing compiled: 2 buddies compared, "
        "none compiles on either side"
    )
    assert out.count("compiles on neither side\n") == 2
    assert "error: module `plugins.missing` not found" in out
    assert _run(["diff", str(tmp_path / "old"), str(tmp_path / "new")], capsys)[0] == 0


def test_one_buddy_compiling_on_neither_side_is_named_beside_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    for side in ("old", "new"):
        _buddy(tmp_path / side, "a", BROKEN.replace("plain", "a"))
        _buddy(tmp_path / side, "b", PLAIN.replace("plain", "b"))
    code, out, _ = _run(
        ["diff", str(tmp_path / "old"), str(tmp_path / "new"), "--exit-code"], capsys
    )
    assert code == 0  # b compiled and is the same; a is reported, not a change
    assert "no changes: 2 buddies compared, every compiled view is the same; 1 compile on" in out
    assert "=== a: compiles on neither side" in out


def test_render_names_every_profile_and_what_chose_the_model(write: Write) -> None:
    path = write(
        {"buddy.yaml": PLAIN + "profiles:\n  dev: { model: ollama:qwen3 }\n  ci: { model: test }\n"}
    )
    shown = render_markdown(buddy.load(path))
    assert "From the manifest.\n" in shown
    assert "## Profiles (2)\n\n- `dev`: `ollama:qwen3`\n- `ci`: `test:test`\n" in shown
    assert "From the profile `ci`, over the manifest's `offline:offline`." in render_markdown(
        buddy.load(path, profile="ci")
    )
    assert (
        "From `--model` / `BUDDY_MODEL`, over the profile `dev`'s `ollama:qwen3`."
        in render_markdown(buddy.load(path, profile="dev", model="offline"))
    )
    assert "over the manifest's `offline:offline`" in render_markdown(
        buddy.load(path, model="test")
    )
