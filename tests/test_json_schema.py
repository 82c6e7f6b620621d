"""The committed JSON Schema (for editors) agrees with the loader on real manifests."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from buddy.manifest.load import read_manifest
from tests.conftest import REPO

SCHEMA = json.loads((REPO / "docs" / "buddy.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
VALID = [
    *sorted((REPO / "manifests").glob("*/buddy.yaml")),
    *sorted((REPO / "tests/corpus/valid").glob("*/buddy.yaml")),
]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _data(path: Path) -> Any:
    source = read_manifest(path)  # with `extends` merged, as the loader sees it
    assert source.doc is not None
    return _plain(source.doc.data)


def test_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", VALID, ids=[p.parent.name for p in VALID])
def test_valid_manifests_pass_the_editor_schema(path: Path) -> None:
    data = _data(path)
    errors = sorted(VALIDATOR.iter_errors(data), key=str)
    assert not errors, errors[0].message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("colour", "red"),
        ("tools", ["ask_questions"]),
        ("data", {"requirements": [{"id": "health.sleeep", "purpose": "x"}]}),
        ("name", "Not A Slug"),
    ],
)
def test_editor_schema_flags_common_mistakes(field: str, value: Any) -> None:
    data = {"name": "x", "model": "test", "persona": {"prompt": "hi"}, field: value}
    assert not VALIDATOR.is_valid(data)
