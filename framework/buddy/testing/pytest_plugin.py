"""buddy's pytest plugin: a project's own ``pytest`` runs its buddies' scenarios too.

Registered under the ``pytest11`` entry point, and opt-in: nothing is collected unless
scenario roots are configured — the ini option ``buddy_scenarios`` (paths relative to the
configuration file) or ``--buddy-scenarios PATH`` (repeatable; it wins over the ini
option). A root is a directory searched for buddies like ``buddy test`` does, a buddy's
directory, a ``buddy.yaml`` or one scenario file.

Under the roots, every scenario file — ``tests/*.yaml`` next to a ``buddy.yaml``, the
files ``buddy test`` runs (docs/testing.md) — is a pytest file and each of its scenarios
an item, ``FILE::scenario name``, run offline with the buddy's scripted responses exactly
as ``buddy test`` runs it (:func:`buddy.testing.scenarios.run_scenario`). A failing
scenario shows its located failures (``file:line:col: …``) as ``buddy test`` prints
them; a scenario file that cannot run (a format error, or its buddy is invalid) is a
collection error listing its located problems. ``-k``, ``-x``, ``--junitxml`` and the rest
work as for any test.

Which files run: when pytest is given paths, the scenario files under those paths (and
the roots). When it is given none (it then collects its ``testpaths`` or the current
directory) or ``--buddy-scenarios`` is given, the roots' scenario files that those paths
do not already cover are added — so ``testpaths = ["tests"]`` with
``buddy_scenarios = ["manifests"]`` runs both, and ``pytest tests/test_x.py`` only that.

Every pytest session of a project with buddy installed loads this module (``-p no:buddy``
does not): it imports no more of buddy than the packages it is in until a scenario file
is collected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from buddy.compile.blueprint import Blueprint
    from buddy.errors import Issue
    from buddy.testing.scenario_format import Suite
    from buddy.testing.scenario_results import ScenarioResult

__all__ = ["ScenarioFailed", "ScenarioFile", "ScenarioItem"]

OPTION = "buddy_scenarios"
SUFFIXES = (".yaml", ".yml")

_ROOTS = pytest.StashKey[tuple[Path, ...]]()
_BUDDIES = pytest.StashKey[dict[Path, "tuple[Blueprint | None, list[Issue]]"]]()


# ---------------------------------------------------------------- hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("buddy", "buddy scenarios")
    group.addoption(
        "--buddy-scenarios",
        action="append",
        default=[],
        metavar="PATH",
        dest=OPTION,
        help="run the buddies' scenario files under PATH as tests (repeatable; "
        "overrides the buddy_scenarios ini option)",
    )
    parser.addini(
        OPTION,
        type="paths",
        default=[],
        help="buddy directories (or files) whose scenario files run as tests; "
        "empty: the buddy plugin collects nothing",
    )


def pytest_configure(config: pytest.Config) -> None:
    given: list[str] = config.getoption(OPTION)
    base = config.invocation_params.dir
    raw: list[Path] = [base / p for p in given] if given else list(config.getini(OPTION))
    for path in raw:
        if not path.exists():
            where = "--buddy-scenarios" if given else f"{OPTION} (in {config.inipath})"
            raise pytest.UsageError(f"{where}: {path}: no such file or directory")
    # A buddy.yaml stands for its buddy: the scenario files collected are below its folder.
    roots = tuple(_absolute(p.parent if p.name == "buddy.yaml" else p) for p in raw)
    config.stash[_ROOTS] = roots
    config.stash[_BUDDIES] = {}
    if roots and (given or config.args_source != pytest.Config.ArgsSource.ARGS):
        covered = [_absolute(base / arg.split("::")[0]) for arg in config.args]
        for file in _files_under(roots):
            if not any(file == c or c in file.parents for c in covered):
                config.args.append(str(file))


def pytest_report_header(config: pytest.Config) -> str | None:
    roots = config.stash.get(_ROOTS, ())
    if not roots:
        return None
    return f"buddy scenarios: {', '.join(_shown(r) for r in roots)}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    roots = parent.config.stash.get(_ROOTS, ())
    if not roots or file_path.suffix not in SUFFIXES:
        return None
    path = _absolute(file_path)
    if not any(path == root or root in path.parents for root in roots):
        return None
    if not _is_scenario_file(file_path):
        return None
    file: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
    return file


# ---------------------------------------------------------------- which files


def _absolute(path: Path) -> Path:
    # Not resolved: a symlinked checkout keeps the paths the user sees.
    return Path(path).absolute()


def _is_scenario_file(path: Path) -> bool:
    """``tests/*.yaml`` next to a ``buddy.yaml`` that is a buddy (not a base)."""
    if path.suffix not in SUFFIXES or path.parent.name != "tests":
        return False
    manifest = path.parent.parent / "buddy.yaml"
    if not manifest.is_file():
        return False
    from buddy.cli.commands import is_base

    return not is_base(manifest)


def _tests_of(buddy_dir: Path) -> list[Path]:
    tests = buddy_dir / "tests"
    return sorted(p for s in SUFFIXES for p in tests.glob(f"*{s}") if not p.is_dir())


def _files_under(roots: tuple[Path, ...]) -> Iterator[Path]:
    """The scenario files ``buddy test ROOT…`` would run, each once, in order."""
    from buddy.cli.commands import find_manifests

    seen: set[Path] = set()
    for root in roots:
        if root.is_dir() and root.name == "tests" and (root.parent / "buddy.yaml").is_file():
            files = _tests_of(root.parent)
        elif root.is_dir():
            files = [f for m in find_manifests(root) for f in _tests_of(m.parent)]
        else:
            files = [root]
        for file in files:
            if file not in seen and _is_scenario_file(file):
                seen.add(file)
                yield file


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is below it (as ``buddy test``)."""
    try:
        return path.absolute().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _issue_lines(issues: list[Issue]) -> list[str]:
    """Located problems as ``buddy test`` prints them."""
    lines: list[str] = []
    for found in issues:
        file = found.file
        if file and not file.startswith("<"):
            file = _shown(Path(file))
        where = f"{file}:{found.line}:{found.column}" if found.line else file
        field_path = f" [{found.path}]" if found.path else ""
        lines.append(f"{where}: error: {found.message}{field_path} ({found.code})")
        if found.hint:
            lines.append(f"    hint: {found.hint}")
    return lines


# ---------------------------------------------------------------- nodes


class ScenarioFile(pytest.File):
    """A scenario file: read and checked against its buddy when collected."""

    def _buddy(self) -> Blueprint:
        """The file's buddy, compiled once per session however many files it has."""
        import buddy

        buddy_dir = self.path.parent.parent
        known = self.config.stash[_BUDDIES]
        if buddy_dir not in known:
            known[buddy_dir] = buddy.check(buddy_dir)
        blueprint, issues = known[buddy_dir]
        if blueprint is None:
            lines = [f"{_shown(self.path)}: its buddy is invalid", *_issue_lines(issues)]
            raise self.CollectError("\n".join(lines))
        return blueprint

    def collect(self) -> Iterator[ScenarioItem]:
        from buddy.manifest.locate import loc_of
        from buddy.testing.scenario_format import read_suite

        blueprint = self._buddy()
        suite = read_suite(self.path, blueprint, display=_shown(self.path))
        if suite.issues:
            lines = [f"{suite.file}: invalid scenario file", *_issue_lines(suite.issues)]
            raise self.CollectError("\n".join(lines))
        assert suite.doc is not None  # a suite without issues was parsed
        for index, (path, scenario) in enumerate(suite.scenarios):
            yield ScenarioItem.from_parent(
                self,
                name=scenario.name,
                blueprint=blueprint,
                suite=suite,
                index=index,
                line=loc_of(suite.doc, path).line,
            )


class ScenarioFailed(Exception):
    """A scenario ran and failed; ``result`` holds its located failures."""

    def __init__(self, result: ScenarioResult) -> None:
        super().__init__(str(result.failures[0]))
        self.result = result


class ScenarioItem(pytest.Item):
    """One scenario of a file, run against a fresh dev platform with its scripted model."""

    def __init__(
        self, *, blueprint: Blueprint, suite: Suite, index: int, line: int, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.blueprint = blueprint
        self.suite = suite
        self.index = index
        self.line = line

    def runtest(self) -> None:
        from buddy.cli.scenarios import SCRIPTED_TIMEOUT
        from buddy.testing.scenarios import run_scenario

        # Each scenario is its own event loop, as every `buddy test` run is: nothing of one
        # (tasks, a platform's connections) can leak into the next test.
        result = asyncio.run(
            run_scenario(self.blueprint, self.suite, self.index, timeout=SCRIPTED_TIMEOUT)
        )
        if result.failures:
            raise ScenarioFailed(result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: TracebackStyle | None = None,
    ) -> str | TerminalRepr:
        """The located failures and the buddy's log, as ``buddy test`` prints them."""
        if not isinstance(excinfo.value, ScenarioFailed):
            return super().repr_failure(excinfo, style)
        result = excinfo.value.result
        # The located failure first: pytest's summary line and JUnit's `message` show it.
        lines = [str(failure) for failure in result.failures]
        lines.append(f"(the scenario starts at {result.file}:{result.line})")
        if result.log:
            lines.append("buddy log:")
            lines.extend(f"  {line}" for line in result.log.rstrip("\n").splitlines())
        return "\n".join(lines)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"scenario: {self.name}"
