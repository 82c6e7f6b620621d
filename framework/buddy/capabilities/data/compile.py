"""``data:`` compiled (:mod:`buddy.capabilities.data.compiled`): each dataset expanded
from the catalogue — or a legacy ``data-access.json`` beside the manifest."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pydantic import ValidationError

from buddy.capabilities.data.compiled import DataDeclaration, DataRequirement
from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.manifest import DataSection
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, issues_from_validation
from buddy.manifest.yamlio import Document, YamlPath, load_json

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["compile_data"]


def compile_data(context: SectionContext) -> DataDeclaration:
    """The declaration, refusing a dataset declared twice and a declaration in both
    ``buddy.yaml`` and ``data-access.json``."""
    legacy = context.directory / "data-access.json"
    section: DataSection | None = context.value
    origin = context.declared_in() if section is not None else None
    doc: Document = context.doc
    prefix: YamlPath = ("data",)
    if os.path.lexists(legacy):  # a symlink too, even a dangling one: refused below
        if section is not None:
            context.error(
                (),
                "data-duplicate",
                "the data declaration is in both buddy.yaml and data-access.json",
                "keep one: move data-access.json's requirements under `data:`",
                key=True,
            )
            return DataDeclaration(())
        if not context.inside(legacy):
            # The declaration is uploaded to the platform: not from outside the project.
            context.report(context.outside_file(legacy, "data-access.json"))
            return DataDeclaration(())
        loaded = load_json(legacy, code="data-json")
        if isinstance(loaded, Issue):
            context.report(loaded)
            return DataDeclaration(())
        try:
            section = DataSection.model_validate(loaded.data)
        except ValidationError as exc:
            for issue in issues_from_validation(loaded, exc, DataSection):
                context.report(issue)
            return DataDeclaration(())
        doc, prefix, origin = loaded, (), legacy.resolve()
        context.depends_on(origin)
    if section is None:
        return DataDeclaration(())
    seen: set[str] = set()
    out: list[DataRequirement] = []
    for index, req in enumerate(section.requirements):
        if req.id in seen:
            context.report(
                issue_at(
                    doc,
                    (*prefix, "requirements", index, "id"),
                    "data-duplicate",
                    f"dataset `{req.id}` is declared twice",
                    "keep one entry",
                )
            )
            continue
        seen.add(req.id)
        cap = DATA_ACCESS_CAPABILITIES[req.id]
        out.append(DataRequirement(req.id, req.purpose, cap.title, cap.source, cap.schema_version))
    return DataDeclaration(tuple(out), origin, section.after_read)
