"""``data:`` in ``buddy.yaml``: the datasets the buddy declares, and the after-read rule.

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import DECLARATION_REQUIREMENTS_MAX, PURPOSE_CHARS
from buddy.manifest.schema import Strict, did_you_mean

__all__ = ["DataSection", "DatasetId", "Requirement"]


def _check_dataset(value: str) -> str:
    if value not in DATA_ACCESS_CAPABILITIES:
        raise PydanticCustomError(
            "unknown-dataset",
            "`{id}` is not in the capability catalogue",
            {"id": value, "hint": _dataset_hint(value)},
        )
    return value


def _dataset_hint(value: str) -> str:
    # The whole catalogue, always: it is short, and a near spelling (`health.running` →
    # `health.weight`) is rarely the dataset meant.
    listed = f"catalogue: {', '.join(DATA_ACCESS_CAPABILITIES)}"
    guess = did_you_mean(value, tuple(DATA_ACCESS_CAPABILITIES))
    return f"{guess} {listed}" if guess else listed


DatasetId = Annotated[
    str,
    Field(json_schema_extra={"enum": list(DATA_ACCESS_CAPABILITIES)}),
    AfterValidator(_check_dataset),
]


class Requirement(Strict):
    """One dataset the buddy needs, and why (the user reads `purpose`)."""

    id: DatasetId
    purpose: str = Field(min_length=1, max_length=PURPOSE_CHARS)


class DataSection(Strict):
    """The buddy's data declaration, uploaded to the platform at start."""

    requirements: list[Requirement] = Field(
        default_factory=list, max_length=DECLARATION_REQUIREMENTS_MAX
    )
    after_read: Literal["platform", "strict"] = Field(
        default="platform",
        description="What is refused for the rest of a turn that read user data: `platform` "
        "(the platform's rule: memory writes and question cards) or `strict` (also widget "
        "writes and proactive subscriptions).",
    )
