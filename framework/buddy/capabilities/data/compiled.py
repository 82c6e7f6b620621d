"""``data:`` as the runtime holds it: the declaration uploaded at start. Standard library
only: a start from the compiled-buddy cache unpickles these."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint

__all__ = ["DataDeclaration", "DataRequirement", "declared"]


@dataclass(frozen=True, slots=True)
class DataRequirement:
    """A declared dataset, expanded from the capability catalogue."""

    id: str
    purpose: str
    title: str
    source: str
    schema_version: int


@dataclass(frozen=True, slots=True)
class DataDeclaration:
    """What the runtime uploads at start (even when empty, to clear an old declaration).

    Attributes:
        requirements: The declared datasets, in the manifest's order.
        origin: Where it was declared: the manifest, or a legacy ``data-access.json``.
        after_read: ``platform``: after a data read, memory writes and question cards are
            refused for the rest of the turn; ``strict``: widget writes and proactive
            subscriptions too.
    """

    requirements: tuple[DataRequirement, ...]
    origin: Path | None = None
    after_read: Literal["platform", "strict"] = "platform"


def declared(blueprint: Blueprint) -> DataDeclaration:
    """The ``data:`` section of ``blueprint``: the declaration uploaded at start (empty
    when it has none)."""
    value: DataDeclaration | None = blueprint.sections.get("data")
    return DataDeclaration(()) if value is None else value
