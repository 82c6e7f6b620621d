"""The JSON Schema of buddy.yaml, generated from the pydantic models."""

from __future__ import annotations

from typing import Any

from buddy.manifest.schema import manifest_model

__all__ = ["manifest_json_schema"]


def manifest_json_schema() -> dict[str, Any]:
    """The schema editors use for completion and checks (yaml-language-server)."""
    schema = manifest_model().model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
