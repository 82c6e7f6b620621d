"""The pytest plugin (`buddy.testing.pytest_plugin`): a project's own pytest runs its
buddies' scenarios, opt-in, each a test item failing with its located message.

Every run is a real `pytest` in a subprocess of a small project written into the
pytester directory: the plugin is found through its installed `pytest11` entry point, as
in a user's project, and nothing it imports stays behind in this process.
"""

from __future__ import annotations

import re
import shlex
import shutil
import xml.etree.ElementTree as ET

import pytest

from buddy.testing import pytest_plugin
from tests.conftest import REPO

pytest_plugins = ["pytester"]

BUDDY = """\
name: tiny
model: test
persona:
  prompt: 你是一个测试用的小伙伴。
tools:
  - name: remember
    uses: memory.write
    description: 记下一条
    key: "{{ topic }}"
    text: "{{ text }}"
"""
PASSING = """\
scenarios:
  - name: 打招呼
    steps:
      - user: 你好
        model: [你好呀]
        expect: { reply: 你好呀 }
  - name: 记住口味
    steps:
      - user: 我不吃香菜
        model:
          - call: remember
            args: { topic: 忌口, text: 不吃香菜 }
          - 记住了。
        expect:
          memory: { 忌口: 不吃香菜 }
"""
FAILING = """\
- name: 回复不对
  steps:
    - user: 你好
      model: [你好呀]
      expect:
        reply: 早上好
"""
LOCATED = (
    'tiny/tests/a_broken.yaml:6:16: expected the reply "早上好", got "你好呀" '
    "[[0].steps[0].expect.reply]"
)
PYTHON_TEST = "def test_python():\n    assert True\n"
# Plugins of this environment the runs do not need (they only slow each one down; a user's
# project has none of them): buddy's plugin is still found by its entry point.
QUIET = (
    *("-p", "no:schemathesis", "-p", "no:hypothesispytest", "-p", "no:cacheprovider"),
    *("-p", "no:anyio", "-p", "no:xdist", "-p", "no:xdist.looponfail"),
)


@pytest.fixture(autouse=True)
def _bytecode_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs may keep the bytecode of what they import, even where this process writes
    none (``PYTHONDONTWRITEBYTECODE``): pytest rewrites the asserts of every module of a
    plugin's package (buddy's, for its plugin), and each run after the first reads them
    rewritten instead of rewriting them again."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with Python tests in `tests/` and one buddy, `tiny/`, whose scenario
    files are `a_broken.yaml` (one failing scenario) and `chat.yaml` (two passing)."""
    pytester.makefile(".toml", pyproject="")  # the buddy's project root
    pytester.mkpydir("tests")
    (pytester.path / "tests" / "test_code.py").write_text(PYTHON_TEST, encoding="utf-8")
    scenarios = pytester.path / "tiny" / "tests"
    scenarios.mkdir(parents=True)
    (scenarios.parent / "buddy.yaml").write_text(BUDDY, encoding="utf-8")
    (scenarios / "chat.yaml").write_text(PASSING, encoding="utf-8")
    (scenarios / "a_broken.yaml").write_text(FAILING, encoding="utf-8")
    return pytester


def _configure(pytester: pytest.Pytester, scenarios: str | None) -> None:
    lines = ["[pytest]", "testpaths = tests"]
    if scenarios is not None:
        lines.append(f"buddy_scenarios = {scenarios}")
    pytester.makefile(".ini", pytest="\n".join(lines) + "\n")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*QUIET, *args, timeout=120)


def test_without_configuration_nothing_is_collected(project: pytest.Pytester) -> None:
    _configure(project, None)
    result = _run(project, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/test_code.py::test_python PASSED*"])
    assert "buddy scenarios" not in result.stdout.str()
    # Not even when pytest is pointed at the buddy itself.
    result = _run(project, "tiny")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_scenarios_are_items_and_a_failure_is_located(project: pytest.Pytester) -> None:
    _configure(project, "tiny")
    result = _run(project, "-v", "-rf")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "buddy scenarios: tiny",
            "tests/test_code.py::test_python PASSED*",
            "tiny/tests/a_broken.yaml::回复不对 FAILED*",
            "tiny/tests/chat.yaml::打招呼 PASSED*",
            "tiny/tests/chat.yaml::记住口味 PASSED*",
            "*_ scenario: 回复不对 _*",
            LOCATED,
            "(the scenario starts at tiny/tests/a_broken.yaml:1)",
            "FAILED tiny/tests/a_broken.yaml::回复不对 - tiny/tests/a_broken.yaml:6:16: *",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_command_line_option_alone_opts_in(project: pytest.Pytester) -> None:
    _configure(project, None)
    # A buddy.yaml stands for its buddy's scenario files.
    result = _run(project, "--buddy-scenarios", "tiny/buddy.yaml", "-k", "chat")
    result.assert_outcomes(passed=2, deselected=2)


def test_k_selects_by_scenario_and_file_name(project: pytest.Pytester) -> None:
    _configure(project, "tiny")
    result = _run(project, "-v", "-k", "口味 or broken")
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    result.stdout.fnmatch_lines(
        ["*a_broken.yaml::回复不对 FAILED*", "*chat.yaml::记住口味 PASSED*"]
    )


def test_x_stops_at_the_first_failing_scenario(project: pytest.Pytester) -> None:
    _configure(project, "tiny")
    result = _run(project, "-x", "tiny")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])


def test_junitxml_has_a_case_per_scenario_with_the_located_failure(
    project: pytest.Pytester,
) -> None:
    _configure(project, "tiny")
    _run(project, "--junitxml=out/report.xml")
    root = ET.parse(project.path / "out" / "report.xml").getroot()
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    assert set(cases) == {
        ("tests.test_code", "test_python"),
        ("tiny.tests.a_broken.yaml", "回复不对"),
        ("tiny.tests.chat.yaml", "打招呼"),
        ("tiny.tests.chat.yaml", "记住口味"),
    }
    failure = cases["tiny.tests.a_broken.yaml", "回复不对"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith(LOCATED)
    assert [c.find("failure") for k, c in cases.items() if k[1] != "回复不对"] == [None] * 3


def test_a_format_error_is_a_located_collection_error(project: pytest.Pytester) -> None:
    _configure(project, "tiny")
    (project.path / "tiny" / "tests" / "a_broken.yaml").write_text(
        "- name: x\n  steps: [{usr: 你好}]\n", encoding="utf-8"
    )
    result = _run(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting tiny/tests/a_broken.yaml*",
            "tiny/tests/a_broken.yaml: invalid scenario file",
            "tiny/tests/a_broken.yaml:2:12: error: unknown key `usr` [[0].steps[0].usr] "
            "(unknown-key)",
            "    hint: did you mean `user`?",
        ]
    )


def test_an_invalid_buddy_fails_the_collection_of_its_files(project: pytest.Pytester) -> None:
    _configure(project, "tiny")
    (project.path / "tiny" / "buddy.yaml").write_text(BUDDY.replace("model:", "modle:"))
    result = _run(project, "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        ["tiny/tests/a_broken.yaml: its buddy is invalid", "tiny/buddy.yaml:2:1: error: *"]
    )


def test_a_scenario_file_is_collected_once(project: pytest.Pytester) -> None:
    # No testpaths: pytest walks the whole project, roots included; nothing is added twice.
    project.makefile(".ini", pytest="[pytest]\nbuddy_scenarios = tiny\n")
    result = _run(project, "--collect-only", "-q")
    listed = [line for line in result.stdout.lines if "::" in line]
    assert sorted(listed) == [
        "tests/test_code.py::test_python",
        "tiny/tests/a_broken.yaml::回复不对",
        "tiny/tests/chat.yaml::打招呼",
        "tiny/tests/chat.yaml::记住口味",
    ]


def test_a_missing_root_is_a_usage_error(project: pytest.Pytester) -> None:
    _configure(project, "nowhere")
    result = _run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert re.search(r"buddy_scenarios \(in .*\): .*nowhere: no such file", result.stderr.str())


def _doc_block(language: str, starting: str) -> str:
    doc = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    section = doc[doc.index("### In pytest") :]
    blocks: list[str] = re.findall(rf"^```{language}\n(.*?)^```$", section, re.S | re.M)
    return next(b for b in blocks if b.startswith(starting))


def test_the_docs_run_is_real(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _doc_block("toml", "# pyproject.toml\n")
    shown = _doc_block("text", "$ pytest ")
    command, *expected = shown.splitlines()
    # The example buddies, with the mistake of docs/testing.md §6, configured as shown.
    shutil.copytree(REPO / "manifests", pytester.path / "manifests")
    shutil.copytree(REPO / "plugins", pytester.path / "plugins")
    (pytester.path / "pyproject.toml").write_text(config, encoding="utf-8")
    data = pytester.path / "manifests" / "cardio" / "tests" / "data.yaml"
    text = data.read_text(encoding="utf-8")
    data.write_text(text.replace("睡眠: null }", "睡眠: 2026-11-29 睡了 987654 分钟 }"), "utf-8")
    monkeypatch.setenv("COLUMNS", "80")
    # On a CI system (CI or BUILD_NUMBER set) pytest prints each failure's whole message in
    # the short summary instead of cutting it to the terminal width, as the docs show it.
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    monkeypatch.delenv("BUDDY_MODEL", raising=False)
    result = _run(pytester, *shlex.split(command)[2:])
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    def timeless(lines: list[str]) -> list[str]:
        return [re.sub(r" in \d+\.\d+s$", " in N.NNs", line) for line in lines]

    assert timeless(result.outlines) == timeless(expected)


def test_the_entry_point_is_declared() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points.pytest11]\nbuddy = "buddy.testing.pytest_plugin"' in text


def test_all_names_exist() -> None:
    assert all(hasattr(pytest_plugin, name) for name in pytest_plugin.__all__)
