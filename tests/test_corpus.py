"""The manifest corpus: every invalid case reports exactly its expected located errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import buddy
from buddy.errors import Issue

CORPUS = Path(__file__).parent / "corpus"
INVALID = sorted(p for p in (CORPUS / "invalid").iterdir() if p.is_dir())
VALID = sorted(p for p in (CORPUS / "valid").iterdir() if p.is_dir())


def _relative(issue: Issue, case: Path) -> str:
    if not issue.file:
        return issue.file
    try:
        return Path(issue.file).resolve().relative_to(case.resolve()).as_posix()
    except ValueError:
        return issue.file


def _expected(case: Path) -> set[tuple[str, int, int, str]]:
    out = set()
    for line in (case / "expected.txt").read_text().splitlines():
        if not line.strip():
            continue
        where, code = line.split()
        file, row, col = where.rsplit(":", 2)
        out.add((file, int(row), int(col), code))
    return out


def test_corpus_is_large_enough() -> None:
    assert len(INVALID) >= 50
    assert len(VALID) >= 8


@pytest.mark.parametrize("case", INVALID, ids=[p.name for p in INVALID])
def test_invalid_case(case: Path) -> None:
    blueprint, issues = buddy.check(case)
    got = {(_relative(i, case), i.line, i.column, i.code) for i in issues}
    assert blueprint is None
    assert got == _expected(case), "\n".join(map(str, issues))
    for issue in issues:
        assert issue.message
        assert issue.code


@pytest.mark.parametrize("case", VALID, ids=[p.name for p in VALID])
def test_valid_case(case: Path) -> None:
    blueprint, issues = buddy.check(case)
    assert issues == []
    assert blueprint is not None


def test_validation_never_imports_plugins() -> None:
    case = CORPUS / "plugin-side-effect"
    flag = case / "plugins" / "imported.flag"
    flag.unlink(missing_ok=True)
    before = set(sys.modules)
    blueprint = buddy.load(case)
    assert blueprint.tools[0].handler is not None
    assert not flag.exists()
    assert not any(m == "plugins.boom" or m.endswith(".boom") for m in set(sys.modules) - before)
