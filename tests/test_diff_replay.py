"""`buddy diff --replay`: the touched buddies' scenarios run on both sides and compared
step by step (framework/buddy/review/replay.py, replay_report.py).

Each test builds two copies of a small project — a shared persona template, a trait file
and a relation spec of the project's own, one buddy using all three, and a scenario file
with a private quarrel, a fact said twice and a group greeting — changes one thing on
the new side and reads what the replay says.

The sides run in this process (:class:`_InProcess` stands for the pools of
:class:`~buddy.review.replay.Sides`; what crosses to a side and back is still pickled): the
projects here have no plugins, so two versions of one never meet. Two tests keep the
sides' own processes: :data:`IN_PROCESSES`, and the example of docs/review.md (the example
buddies' plugins, both versions).
"""

from __future__ import annotations

import pickle
import re
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from buddy.cli.main import main
from buddy.compile.persona import BUILT_IN_PACK, EXAMPLE_NOW
from buddy.review import replay as replay_module
from buddy.review.replay_side import SideJob, run_side
from buddy.review.report import COMMENT_MARKER
from tests.conftest import REPO
from tests.test_diff import committed

TEMPLATE = "你是{{ buddy.name }}，说话简短。\n"
TRAIT = "name: calm\nanger_sensitivity: 1.4\n"
RELATION = """\
relation: likes
version: 1
title: 喜好
risk: R0
note: 测试用。
slots:
  subject: { type: party, required: true, title: 谁 }
  object: { type: text, required: true, max_chars: 20, title: 对象 }
  stance: { type: choice, required: true, choices: [喜欢, 不喜欢], title: 态度 }
value: stance
key: [subject, object]
conflict: last_write_wins
"""
BUDDY = """\
name: moody
model: test
persona:
  template: base.md.j2
  traits: [traits/calm.yaml]
memory:
  auto: true
  relations: [likes]
character: {}
"""
SCENARIOS = """\
scenarios:
  - name: a quarrel
    steps:
      - user: 随便吧
        extract: { appraisal: { offence: 0.2 } }
        model: [行。]
        expect:
          mood: { anger: 0.28 }
      - user: 好吧
        model: [嗯。]
  - name: likes
    steps:
      - user: 我喜欢茶
        extract:
          facts: [{ relation: likes, slots: { subject: user, object: 茶, stance: 喜欢 } }]
        model: [好。]
      - user: 我不喜欢茶了
        extract:
          facts: [{ relation: likes, slots: { subject: user, object: 茶, stance: 不喜欢 } }]
        model: [好吧。]
        expect:
          facts: [{ relation: likes, slots: { object: 茶 }, value: 不喜欢 }]
  - name: in a group
    conversation: { kind: group, members: [甲, 乙] }
    steps:
      - user: 大家好
        as: 甲
        model: [你好。]
      - user: 在吗
        as: 乙
        model: [在。]
"""
FILES = {
    "pyproject.toml": "",
    "personas/base.md.j2": TEMPLATE,
    "personas/traits/calm.yaml": TRAIT,
    "personas/relations/likes.yaml": RELATION,
    "moody/buddy.yaml": BUDDY,
    "moody/tests/moody.yaml": SCENARIOS,
}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


#: Tests whose sides run in processes of their own, as `buddy diff --replay` runs them.
IN_PROCESSES = {"test_a_trait_number_shows_as_a_mood_change_at_the_step_it_bites"}


class _InProcess:
    """A process pool of one that runs each job in this process when it is submitted; the
    job and its result are pickled and read back, as they would be crossing processes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            result = fn(*pickle.loads(pickle.dumps(args)))
            future.set_result(pickle.loads(pickle.dumps(result)))
        except BaseException as exc:  # as a pool gives it: on .result()
            future.set_exception(exc)
        return future

    def shutdown(self, *args: object, **kwargs: object) -> None:
        pass


@pytest.fixture
def sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[Path, Path]:
    """`old` and `new`, two identical copies of the project; the working directory is
    their parent. The sides run in this process unless the test is in :data:`IN_PROCESSES`."""
    if request.node.name not in IN_PROCESSES:
        monkeypatch.setattr(replay_module, "ProcessPoolExecutor", _InProcess)
    for side in ("old", "new"):
        for name, text in FILES.items():
            path = tmp_path / side / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "old", tmp_path / "new"


def _replay(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["diff", "old", "new", "--replay", *extra])
    captured = capsys.readouterr()
    assert captured.err == ""
    return code, captured.out


def _behaviour(out: str) -> str:
    """The replay's part of the output (after the compiled view's)."""
    return out[out.index("behaviour (--replay):") :]


def test_a_trait_number_shows_as_a_mood_change_at_the_step_it_bites(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(sides[1] / "personas/traits/calm.yaml", "1.4", "0.6")
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    behaviour = _behaviour(out)
    assert behaviour.startswith(
        "behaviour (--replay): 1 buddy touched, 3 scenarios replayed: 1 differs\n"
        "\n"
        "=== moody: 1 of 3 scenarios differ\n"
        "--- moody/tests/moody.yaml:2 a quarrel (old PASS, new FAIL)\n"
        "step 1, line 4: user: 随便吧\n"
        "  mood anger: old 0.00 → 0.28 | new 0.00 → 0.12\n"
    )
    # Where it bit, and only there: the next step moves nothing (its prompt still says
    # how it feels, which differs as at step 1).
    step2 = behaviour[behaviour.index("step 2, line 9: user: 好吧\n") :]
    assert step2 == "step 2, line 9: user: 好吧\n  system prompt: the same change as at step 1\n"


def test_an_expectation_that_holds_on_one_side_only_is_listed(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(sides[1] / "personas/traits/calm.yaml", "1.4", "0.6")
    _, out = _replay(capsys)
    assert (
        "  expect mood: holds on old, fails on new\n"
        "    new: mood.anger: expected anger 0.28, got 0.12\n"
    ) in out
    # The other scenarios hold alike on both sides: not listed.
    assert "likes (" not in out and "in a group (" not in out


def test_a_line_added_to_a_shared_template_shows_in_every_steps_prompt(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(sides[1] / "personas/base.md.j2", "说话简短。\n", "说话简短。\n记住对方说过的话。\n")
    _, out = _replay(capsys)
    behaviour = _behaviour(out)
    steps = re.findall(r"^step \d+, line \d+: .*$", behaviour, re.M)
    # Every step of every scenario, private and group, and nothing else differs.
    assert steps == [
        "step 1, line 4: user: 随便吧",
        "step 2, line 9: user: 好吧",
        "step 1, line 13: user: 我喜欢茶",
        "step 2, line 17: user: 我不喜欢茶了",
        "step 1, line 26: user (as 甲): 大家好",
        "step 2, line 29: user (as 乙): 在吗",
    ]
    # In each step's prompt: shown, or — the same hunk as an earlier step's — said so.
    shown = behaviour.count("   你是moody，说话简短。\n  +记住对方说过的话。\n")
    same = behaviour.count("\n  system prompt: the same change as at step 1\n")
    assert (shown, same) == (4, 2)  # the card in the prompt changes the hunk at step 2 of likes
    assert "in a group (PASS on both)" in behaviour
    assert "mood " not in behaviour and "expect " not in behaviour and "fact " not in behaviour


def test_a_relation_policy_change_shows_as_a_facts_status_change(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(sides[1] / "personas/relations/likes.yaml", "last_write_wins", "dispute")
    code, out = _replay(capsys)
    assert code == 0  # without --exit-code a difference is not a failure
    assert (
        "--- moody/tests/moody.yaml:11 likes (old PASS, new FAIL)\n"
        "step 2, line 17: user: 我不喜欢茶了\n"
        '  fact likes(subject=user, object=茶): old kept "喜欢" → kept "不喜欢" | '
        'new kept "喜欢" → disputed "喜欢" (also said: "不喜欢")\n'
        "  card: old - 喜好：对象 茶，态度 喜欢 → - 喜好：对象 茶，态度 不喜欢 | "
        "new - 喜好：对象 茶，态度 喜欢 → - 喜好：对象 茶，态度 喜欢（说法不一：喜欢 / 不喜欢，先问清楚）\n"
        "  expect facts: holds on old, fails on new\n"
        '    new: facts[0]: expected likes kept = "不喜欢", got disputed = "喜欢"\n'
    ) in out
    # The first time it is said the policy has nothing to decide: step 1 is the same.
    assert "step 1, line 13" not in out


def test_a_changed_script_shows_the_replies_that_diverge(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the scenario file changed: the buddy's view did not, it is replayed anyway."""
    _edit(sides[1] / "moody/tests/moody.yaml", "model: [在。]", "model: [在呢。]")
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    assert out.startswith("buddy diff old -> new: no changes: 1 buddy compared")
    assert _behaviour(out).endswith(
        "--- moody/tests/moody.yaml:23 in a group (PASS on both)\n"
        "step 2, line 29: user (as 乙): 在吗\n"
        "  --- calls and replies (old)\n"
        "  +++ calls and replies (new)\n"
        "  @@ -1 +1 @@\n"
        "  -text: 在。\n"
        "  +text: 在呢。\n"
    )


def test_a_scenario_on_one_side_only_and_an_unreadable_file_are_listed(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tests = sides[1] / "moody/tests"
    (tests / "moody.yaml").write_text(
        SCENARIOS + "  - name: new one\n    steps:\n      - user: 早\n        model: [早。]\n",
        encoding="utf-8",
    )
    (tests / "bad.yaml").write_text(
        "scenarios:\n  - name: x\n    steps:\n      - usr: 1\n", encoding="utf-8"
    )
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    assert _behaviour(out) == (
        "behaviour (--replay): 1 buddy touched, 4 scenarios replayed: 1 differs, "
        "1 scenario file cannot be read\n"
        "\n"
        "=== moody: 1 of 4 scenarios differ\n"
        "cannot read moody/tests/bad.yaml (new):\n"
        "  moody/tests/bad.yaml:4:9: error: unknown key `usr` [scenarios[0].steps[0].usr]\n"
        "--- moody/tests/moody.yaml:32 new one (old absent, new PASS)\n"
    )


def test_exit_code_is_about_behaviour(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # A trait file's comment: the buddy is touched (a file it depends on changed), its
    # scenarios do the same on both sides.
    trait = sides[1] / "personas/traits/calm.yaml"
    trait.write_text(TRAIT + "# 注释\n", encoding="utf-8")
    assert main(["diff", "old", "new", "--exit-code"]) == 1  # the compiled view's answer
    capsys.readouterr()
    code, out = _replay(capsys, "--exit-code")
    assert code == 0
    assert _behaviour(out) == (
        "behaviour (--replay): 1 buddy touched, 3 scenarios replayed: the same behaviour\n"
        "\n"
        "=== moody: the same behaviour (3 scenarios)\n"
    )
    _edit(trait, "1.4", "0.6")
    assert _replay(capsys, "--exit-code")[0] == 1


def test_nothing_touched_nothing_replayed(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _replay(capsys, "--exit-code")
    assert (code, out) == (
        0,
        "buddy diff old -> new: no changes: 1 buddy compared, every compiled view is the same\n"
        "\n"
        "behaviour (--replay): nothing to replay: no buddy's files or scenarios changed\n",
    )


def test_a_buddy_that_does_not_compile_on_one_side_says_why(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(sides[1] / "moody/buddy.yaml", "relations: [likes]", "relations: [likez]")
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    behaviour = _behaviour(out)
    assert behaviour.startswith(
        "behaviour (--replay): 1 buddy touched, 0 scenarios replayed: 1 buddy cannot run on one side\n"
        "\n"
        "=== moody: cannot replay on new\n"
        "cannot run on new: it does not compile:\n"
        "  moody/buddy.yaml:8:15: error: "
    )
    assert str(sides[1]) not in out


def test_a_buddy_missing_on_one_side_says_so(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(sides[0] / "moody")
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    assert _behaviour(out) == (
        "behaviour (--replay): 1 buddy touched, 0 scenarios replayed: 1 buddy cannot run on one side\n"
        "\n"
        "=== moody: cannot replay on old\n"
        "cannot run on old: no moody/buddy.yaml in old\n"
    )


def test_markdown_is_a_collapsible_comment_per_buddy_and_scenario(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _edit(sides[1] / "personas/traits/calm.yaml", "1.4", "0.6")
    _edit(sides[1] / "personas/relations/likes.yaml", "last_write_wins", "dispute")
    code, out = _replay(capsys, "--format", "markdown", "--exit-code")
    assert code == 1
    assert out.startswith(COMMENT_MARKER + "\n")
    behaviour = out[out.index("### Behaviour (`--replay`)") :]
    assert behaviour.startswith(
        "### Behaviour (`--replay`)\n"
        "\n"
        "1 buddy touched, 3 scenarios replayed: 2 differ.\n"
        "\n"
        "<details>\n"
        "<summary><code>moody</code> · 2 of 3 scenarios differ</summary>\n"
        "\n"
        "<details>\n"
        "<summary><code>moody/tests/moody.yaml:2</code> · a quarrel · PASS on old, FAIL on new"
        " · 2 steps differ</summary>\n"
        "\n"
        "**Step 1** · line 4 · `user: 随便吧`\n"
        "\n"
        "| | `old` | `new` |\n"
        "|---|---|---|\n"
        "| mood anger | 0.00 → 0.28 | 0.00 → 0.12 |\n"
        "\n"
        "- `expect: mood` holds on `old`, fails on `new`\n"
        "  - `new`: mood.anger: expected anger 0.28, got 0.12\n"
        "\n"
        "System prompt:\n"
        "\n"
        "```diff\n"
    )
    assert behaviour.count("<details>") == behaviour.count("</details>") == 3
    assert "<code>moody/tests/moody.yaml:11</code> · likes · PASS on old, FAIL on new" in out


def test_a_long_markdown_replay_leaves_scenarios_out(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from buddy.review import replay_report
    from buddy.review.diff import Side, compare
    from buddy.review.replay import replay

    _edit(sides[1] / "personas/base.md.j2", "说话简短。\n", "说话简短。\n记住对方说过的话。\n")
    found = [Side(s.resolve(), s.name, (s.resolve() / "moody/buddy.yaml",)) for s in sides]
    result = replay(compare(*found), processes=1)
    full = replay_report.markdown(result, max_chars=100_000)
    short = replay_report.markdown(result, max_chars=len(full) - 10)
    assert short.count("Left out: the comment would be too long") == 1
    assert short.count("<details>") == short.count("</details>") == 4


def test_one_side_runs_offline_and_starts_at_the_views_instant(sides: tuple[Path, Path]) -> None:
    """A side run in this process (where the suite's guard refuses any address but
    loopback's): the platform clock starts when the compiled view's does."""
    job = SideJob(
        str(sides[0].resolve()), "old", "", ("moody/buddy.yaml",), EXAMPLE_NOW.timestamp()
    )
    (trace,) = run_side(job)
    assert trace.problem == "" and trace.files == ("moody/tests/moody.yaml",)
    assert [(s.name, s.passed, len(s.steps)) for s in trace.scenarios] == [
        ("a quarrel", True, 2),
        ("likes", True, 2),
        ("in a group", True, 2),
    ]
    quarrel = trace.scenarios[0]
    assert dict(quarrel.start)["mood anger"] == "0.00"
    assert dict(quarrel.steps[0].state)["mood anger"] == "0.28"
    assert quarrel.steps[0].checked == (("mood", ()),)
    assert quarrel.steps[1].checked is None  # no expect:
    group = trace.scenarios[2]
    assert "mood anger toward 甲" in dict(group.steps[0].state)


# ---------------------------------------------------------------- --git


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh git repository holding the example buddies, their plugins and the project's
    own copies of the shared templates, committed once; the working directory."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "project"
    cache = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "manifests", root / "manifests", ignore=cache)
    shutil.copytree(BUILT_IN_PACK, root / "manifests" / "personas", ignore=cache)
    shutil.copytree(REPO / "plugins", root / "plugins", ignore=cache)
    committed(root)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_example_in_docs_review_md(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/review.md's replay: the tsundere trait made less touchy, against HEAD."""
    doc = (REPO / "docs" / "review.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Behaviour: buddy diff --replay") :]
    match = re.search(r"^```text\n(buddy diff HEAD -> work tree.*?)^```$", section, re.S | re.M)
    assert match is not None
    _edit(
        repo / "manifests/personas/traits/tsundere.yaml",
        "anger_sensitivity: 1.4        # 一点就着",
        "anger_sensitivity: 0.6",
    )
    code = main(["diff", "--git", "HEAD", "--replay", "--exit-code"])
    out = capsys.readouterr().out
    assert (code, out) == (1, match.group(1))
    assert list((repo.parent / "tmp").iterdir()) == []  # the checkout is gone


TOOLS = """\
tools:
  - name: remember
    uses: memory.write
    description: 把一条关于对方的印象记下来。
    key: "{{ topic }}"
    text: "{{ text }}"
  - name: recall
    uses: memory.list
    description: 看看之前都记下了什么。
"""


def test_a_changed_tool_shows_in_the_tools_offered_at_every_step(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for side in sides:
        (side / "moody/buddy.yaml").write_text(BUDDY + TOOLS, encoding="utf-8")
    _edit(
        sides[1] / "moody/buddy.yaml", "对方的印象记下来。", "对方的印象记下来，同一主题覆盖旧的。"
    )
    _edit(sides[1] / "moody/buddy.yaml", '"{{ topic }}"', '"{{ about }}"')
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    behaviour = _behaviour(out)
    hunk = (
        "step 1, line 4: user: 随便吧\n"
        "  --- tools (old)\n"
        "  +++ tools (new)\n"
        "  @@ -1,21 +1,21 @@\n"
        "  -remember: 把一条关于对方的印象记下来。\n"
        "  +remember: 把一条关于对方的印象记下来，同一主题覆盖旧的。\n"
        "     parameters: {\n"
        '       "additionalProperties": false,\n'
        '       "properties": {\n'
        '  -      "text": {\n'
    )
    assert hunk in behaviour
    assert '  -      "topic": {\n  +      "about": {\n' in behaviour
    # The tools of every step of every scenario changed; shown once a scenario.
    steps = re.findall(r"^step \d+, line \d+: .*$", behaviour, re.M)
    assert len(steps) == 6
    assert behaviour.count("  --- tools (old)\n") == 3
    assert behaviour.count("\n  tools: the same change as at step 1\n") == 3
    # What the model was told otherwise, and what it did, is the same.
    assert "system prompt" not in behaviour and "calls and replies" not in behaviour
    assert behaviour.count("(PASS on both)") == 3


BOOK = """\
title: 茶事
entries:
  - name: 茶
    keys: [茶]
    content: 他们常在巷口的茶馆见面。
"""


def test_a_lore_key_changed_shows_the_entry_out_of_the_prompt_where_it_was_in(
    sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for side in sides:
        (side / "moody/buddy.yaml").write_text(BUDDY + "lore: lore\n", encoding="utf-8")
        (side / "moody/lore").mkdir()
        (side / "moody/lore/tea.yaml").write_text(BOOK, encoding="utf-8")
    _edit(sides[1] / "moody/lore/tea.yaml", "keys: [茶]", "keys: [茶馆]")
    code, out = _replay(capsys, "--exit-code")
    assert code == 1
    # Only where a message mentions 茶 (and the book scans back over it: step 2 too).
    assert _behaviour(out) == (
        "behaviour (--replay): 1 buddy touched, 3 scenarios replayed: 1 differs\n"
        "\n"
        "=== moody: 1 of 3 scenarios differ\n"
        "--- moody/tests/moody.yaml:11 likes (PASS on both)\n"
        "step 1, line 13: user: 我喜欢茶\n"
        "  lore in: old — → tea/茶 | new — → none\n"
        "  --- system prompt (old)\n"
        "  +++ system prompt (new)\n"
        "  @@ -5,6 +5,3 @@\n"
        "   \n"
        "   ## 你现在的心情\n"
        "   你心情平稳。\n"
        "  -\n"
        "  -## 背景设定\n"
        "  -他们常在巷口的茶馆见面。\n"
        "step 2, line 17: user: 我不喜欢茶了\n"
        "  system prompt: the same change as at step 1\n"
    )
