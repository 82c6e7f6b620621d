"""The dataset catalogue: which user datasets this runtime supports.

The catalogue is data (``datasets.json`` beside this module), the counterpart of the
TypeScript runtime's ``DATA_ACCESS_CAPABILITIES``: the loader checks ``data.requirements``
ids against it, the compiler expands each requirement with its title, source and schema
version, and the dev platform simulates datasets with these item fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = ["DATA_ACCESS_CAPABILITIES", "Dataset", "dataset"]


@dataclass(frozen=True, slots=True)
class Dataset:
    """One dataset the runtime can read.

    Attributes:
        id: The dataset id, e.g. ``health.sleep``.
        title: What the user sees.
        source: Where the data comes from (``healthkit``).
        schema_version: Bumped when ``item_fields`` change; part of a grant's version.
        description: One line on what an item is.
        item_fields: Field name → meaning, for each item in ``data.items``.
    """

    id: str
    title: str
    source: str
    schema_version: int
    description: str
    item_fields: MappingProxyType[str, str]


@cache
def _load() -> MappingProxyType[str, Dataset]:
    raw: dict[str, dict[str, Any]] = json.loads(
        Path(__file__).with_name("datasets.json").read_text(encoding="utf-8")
    )
    return MappingProxyType(
        {
            key: Dataset(
                id=key,
                title=value["title"],
                source=value["source"],
                schema_version=value["schema_version"],
                description=value["description"],
                item_fields=MappingProxyType(dict(value["item_fields"])),
            )
            for key, value in sorted(raw.items())
        }
    )


DATA_ACCESS_CAPABILITIES: MappingProxyType[str, Dataset] = _load()


def dataset(dataset_id: str) -> Dataset:
    """The catalogue entry for ``dataset_id``.

    Raises:
        KeyError: The id is not in the catalogue.
    """
    return DATA_ACCESS_CAPABILITIES[dataset_id]
