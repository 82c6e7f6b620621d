"""The docs stay true: every manifest field is documented, and self-contained examples validate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import buddy
import pytest

from tests.conftest import REPO

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
