"""``buddy test``: run the scenario files next to buddies (``tests/*.yaml``; docs/testing.md).

Each scenario runs against its own dev platform (in-process, on loopback, a temporary
database) with the buddy's scripted model responses — offline and deterministic — or,
with ``--model``, against a real model. Output: one ``PASS``/``FAIL`` line per scenario,
located failures, a ``no scenarios:`` line per buddy found without any, and the summary
line ``N passed, M failed``; ``--junit FILE`` also writes JUnit XML for CI. Exit 0 when
everything passed, 1 when anything failed (an invalid scenario file or buddy counts as a
failure, and so does a buddy without scenarios under ``--require-scenarios``), 2 on a
usage error.
"""

from __future__ import annotations

import asyncio
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from buddy.cli.commands import find_manifests
from buddy.errors import Issue

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.models.base import Model
    from buddy.testing.scenarios import ScenarioResult

__all__ = ["Outcome", "test"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
SCRIPTED_TIMEOUT = 30.0
REAL_MODEL_TIMEOUT = 300.0
SCENARIO_GLOBS = ("*.yaml", "*.yml")


class _UsageError(Exception):
    pass


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is below it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def _scenario_files(buddy_dir: Path) -> list[Path]:
    tests = buddy_dir / "tests"
    # Not only regular files: a FIFO there is refused by the reader, not skipped.
    found = {
        p
        for pattern in SCENARIO_GLOBS
        for p in tests.glob(pattern)
        if p.exists() and not p.is_dir()
    }
    return sorted(found)


def _targets(paths: Sequence[str]) -> dict[Path, list[Path]]:
    """Buddy directories and their scenario files, in the order given.

    Raises:
        _UsageError: A path that does not exist, or holds no buddy.
    """
    targets: dict[Path, list[Path]] = {}

    def add(buddy_dir: Path, files: list[Path]) -> None:
        known = targets.setdefault(buddy_dir, [])
        known.extend(f for f in files if f not in known)

    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise _UsageError(f"{raw}: no such file or directory")
        if not path.is_dir():  # a FIFO there too: the reader refuses it, located
            if path.name == "buddy.yaml":
                add(path.parent, _scenario_files(path.parent))
            elif path.suffix in (".yaml", ".yml") and (path.parent.parent / "buddy.yaml").is_file():
                add(path.parent.parent, [path])
            else:
                raise _UsageError(
                    f"{raw}: not a buddy.yaml, a buddy directory or a scenario file "
                    "(tests/*.yaml next to a buddy.yaml)"
                )
            continue
        manifests = list(find_manifests(path))
        if not manifests and path.name == "tests" and (path.parent / "buddy.yaml").is_file():
            manifests = [path.parent / "buddy.yaml"]  # a buddy's tests/ directory
        if not manifests:
            raise _UsageError(f"{raw}: no buddy.yaml found")
        for manifest in manifests:
            add(manifest.parent, _scenario_files(manifest.parent))
    return targets


@dataclass
class Outcome:
    """What ``buddy test`` found and ran.

    Attributes:
        results: Every scenario run, in order, with its buddy's name and file stem.
        invalid: Scenario files (or buddies) that could not run, with their issues.
        deselected: Scenarios left out by ``-k``.
        untested: Buddy directories (as shown) found without any scenario file.
        require_scenarios: Whether each of ``untested`` counts as a failure.
    """

    results: list[tuple[str, str, ScenarioResult]] = field(default_factory=list)
    invalid: list[tuple[str, str, list[Issue]]] = field(default_factory=list)
    deselected: int = 0
    untested: list[str] = field(default_factory=list)
    require_scenarios: bool = False

    @property
    def passed(self) -> int:
        """Scenarios that passed."""
        return sum(r.passed for _, _, r in self.results)

    @property
    def failed(self) -> int:
        """Scenarios that failed, plus files that could not run (and, when scenarios are
        required, buddies without any)."""
        untested = len(self.untested) if self.require_scenarios else 0
        return len(self.results) - self.passed + len(self.invalid) + untested


def _issue_lines(issue: Issue) -> list[str]:
    where = f"{issue.file}:{issue.line}:{issue.column}" if issue.line else issue.file
    field_path = f" [{issue.path}]" if issue.path else ""
    lines = [f"{where}: error: {issue.message}{field_path} ({issue.code})"]
    if issue.hint:
        lines.append(f"    hint: {issue.hint}")
    return lines


def _relocated(issue: Issue) -> Issue:
    if not issue.file or issue.file.startswith("<"):
        return issue
    return issue.shown_as(_shown(Path(issue.file)))


def _report(result: ScenarioResult, out: TextIO) -> None:
    status = "PASS" if result.passed else "FAIL"
    print(f"{status} {result.name} ({result.file}:{result.line})", file=out, flush=True)
    for failure in result.failures:
        print(f"    {failure}", file=out)
    for note in result.notes:
        print(f"    note: {note}", file=out)
    if result.failures and result.log:
        print("    buddy log:", file=out)
        for line in result.log.rstrip("\n").splitlines():
            print(f"      {line}", file=out)


async def _run(
    targets: dict[Path, list[Path]],
    model_ref: str | None,
    select: str | None,
    out: TextIO,
    *,
    profile: str | None = None,
    require_scenarios: bool = False,
    sockets: bool = False,
) -> Outcome:
    import buddy
    from buddy.testing.scenarios import read_suite, run_scenario

    outcome = Outcome(require_scenarios=require_scenarios)
    for buddy_dir, files in targets.items():
        if not files:
            # Said, not skipped silently: `buddy test .` passing says nothing of this buddy.
            where = _shown(buddy_dir)
            outcome.untested.append(where)
            if require_scenarios:
                print(f"FAIL {where} (no scenarios: add tests/*.yaml)", file=out)
            else:
                print(f"no scenarios: {where} (add tests/*.yaml)", file=out)
            continue
        blueprint: Blueprint | None
        blueprint, issues = buddy.check(buddy_dir, profile=profile, model=model_ref)
        if blueprint is None:
            shown = [_relocated(i) for i in issues]
            for file in files:
                outcome.invalid.append((buddy_dir.name, _shown(file), shown))
                print(f"FAIL {_shown(file)} (its buddy is invalid)", file=out)
            for issue in shown:
                for line in _issue_lines(issue):
                    print(f"    {line}", file=out)
            continue
        model: Model | None = None
        if model_ref is not None:
            from buddy.models.registry import resolve

            model = resolve(blueprint.model)  # ModelConfigError: a usage error, see test()
        timeout = REAL_MODEL_TIMEOUT if model is not None else SCRIPTED_TIMEOUT
        for file in files:
            suite = read_suite(file, blueprint, display=_shown(file))
            if suite.issues:
                outcome.invalid.append((blueprint.name, suite.file, suite.issues))
                print(f"FAIL {suite.file} (invalid scenario file)", file=out)
                for issue in suite.issues:
                    for line in _issue_lines(issue):
                        print(f"    {line}", file=out)
                continue
            for index, (_, scenario) in enumerate(suite.scenarios):
                if select is not None and select.casefold() not in scenario.name.casefold():
                    outcome.deselected += 1
                    continue
                result = await run_scenario(
                    blueprint, suite, index, model=model, timeout=timeout, sockets=sockets
                )
                outcome.results.append((blueprint.name, file.stem, result))
                _report(result, out)
    return outcome


def _junit(outcome: Outcome, path: Path) -> None:
    """Write the outcome as JUnit XML: a ``testsuite`` per file, a ``testcase`` per scenario."""
    root = ET.Element("testsuites", name="buddy test")
    suites: dict[str, ET.Element] = {}
    counts: dict[str, dict[str, float]] = {}

    def suite_of(file: str) -> ET.Element:
        if file not in suites:
            suites[file] = ET.SubElement(root, "testsuite", name=file)
            counts[file] = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
        return suites[file]

    for buddy_name, stem, result in outcome.results:
        case = ET.SubElement(
            suite_of(result.file),
            "testcase",
            classname=f"{buddy_name}.{stem}",
            name=result.name,
            file=result.file,
            line=str(result.line),
            time=f"{result.seconds:.3f}",
        )
        tally = counts[result.file]
        tally["tests"] += 1
        tally["time"] += result.seconds
        if result.failures:
            tally["failures"] += 1
            failure = ET.SubElement(case, "failure", message=str(result.failures[0]))
            failure.text = "\n".join(map(str, result.failures))
        if result.notes:
            ET.SubElement(case, "system-out").text = "\n".join(f"note: {n}" for n in result.notes)
        if result.failures and result.log:
            ET.SubElement(case, "system-err").text = result.log
    for buddy_name, file, issues in outcome.invalid:
        case = ET.SubElement(
            suite_of(file),
            "testcase",
            classname=f"{buddy_name}.{Path(file).stem}",
            name="(invalid scenario file)",
            file=file,
            line=str(issues[0].line if issues else 0),
            time="0",
        )
        counts[file]["tests"] += 1
        counts[file]["errors"] += 1
        error = ET.SubElement(case, "error", message=f"{len(issues)} problem(s)")
        error.text = "\n".join(line for issue in issues for line in _issue_lines(issue))
    for directory in outcome.untested:
        case = ET.SubElement(
            suite_of(directory),
            "testcase",
            classname=Path(directory).name,
            name="(no scenarios)",
            file=directory,
            time="0",
        )
        counts[directory]["tests"] += 1
        message = "no scenario files: add tests/*.yaml"
        if outcome.require_scenarios:
            counts[directory]["failures"] += 1
            ET.SubElement(case, "failure", message=message)
        else:
            counts[directory]["skipped"] += 1
            ET.SubElement(case, "skipped", message=message)
    totals = {"tests": 0.0, "failures": 0.0, "errors": 0.0, "skipped": 0.0, "time": 0.0}
    for file, element in suites.items():
        for key, value in counts[file].items():
            element.set(key, f"{value:.3f}" if key == "time" else str(int(value)))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, f"{value:.3f}" if key == "time" else str(int(value)))
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def test(
    paths: Sequence[str],
    model: str | None,
    junit: str | None,
    select: str | None,
    *,
    profile: str | None = None,  # noqa: PT028 - the command's body, not a pytest test
    require_scenarios: bool = False,  # noqa: PT028
    sockets: bool = False,  # noqa: PT028
) -> int:
    """``buddy test [PATH…]``: exit 0 all passed, 1 any failed, 2 usage error.

    Args:
        paths: Buddy directories (searched for ``buddy.yaml`` like ``buddy validate``),
            ``buddy.yaml`` files or scenario files.
        model: Run against this model (``provider:name``) instead of the scripted responses.
        junit: Also write JUnit XML to this file.
        select: Only scenarios whose name contains this text (case-insensitive).
        profile: Compile each buddy with this profile of its manifest (the scripted
            responses still answer unless ``model`` is given).
        require_scenarios: Count a buddy found without scenario files as a failure
            (otherwise it is only reported).
        sockets: Serve each scenario's dev platform on loopback sockets, as a remote
            platform would be reached, instead of in this process.
    """
    from buddy.errors import ModelConfigError

    try:
        targets = _targets(paths or ["."])
    except _UsageError as exc:
        print(f"buddy test: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not any(targets.values()):
        print("buddy test: no scenario files (tests/*.yaml next to a buddy.yaml)", file=sys.stderr)
        return EXIT_USAGE
    try:
        outcome = asyncio.run(
            _run(
                targets,
                model,
                select,
                sys.stdout,
                profile=profile,
                require_scenarios=require_scenarios,
                sockets=sockets,
            )
        )
    except ModelConfigError as exc:
        print(f"buddy test: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not outcome.results and not outcome.invalid:
        print(f"buddy test: no scenario matches -k {select!r}", file=sys.stderr)
        return EXIT_USAGE
    if junit is not None:
        _junit(outcome, Path(junit))
    if outcome.deselected:
        print(f"({outcome.deselected} deselected by -k {select!r})")
    if model is not None:
        print(f"(against {model}: exact text checks skipped, see notes)")
    print(f"{outcome.passed} passed, {outcome.failed} failed", flush=True)
    return EXIT_FAILED if outcome.failed else EXIT_OK
