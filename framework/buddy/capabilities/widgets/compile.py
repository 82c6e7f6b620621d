"""``widgets:`` compiled: each ``<folder>/<type>/schema.json`` checked (its id, its
modules' record schemas) into a :class:`~buddy.capabilities.widgets.compiled.WidgetType`,
sorted by type id."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from buddy.capabilities.widgets.compiled import WidgetModule, WidgetType
from buddy.capabilities.widgets.limits import WIDGET_ID_PATTERN
from buddy.capabilities.widgets.manifest import WidgetSchemaFile
from buddy.compile.project import searched
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, validated
from buddy.manifest.schema import canonical_json, schema_problem
from buddy.manifest.yamlio import YamlPath, load_json

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["compile_widgets"]


def compile_widgets(context: SectionContext) -> tuple[WidgetType, ...]:
    """The widget types of the folder ``widgets:`` names (none when it has no folder)."""
    folder = context.folder()
    if folder is None:
        return ()
    out: list[WidgetType] = []
    for entry in sorted(folder.iterdir()):
        if not entry.is_dir() or not searched(entry.name):
            continue
        if not context.inside(entry):
            # A symlinked type folder: its schema would be uploaded to the platform.
            context.report(
                Issue.of_file(
                    str(entry),
                    "dir-outside-project",
                    f"widget folder `{entry.name}` leads outside the project, to {entry.resolve()}",
                    f"keep the folder inside the project root {context.root}, not a symlink"
                    " to one outside",
                )
            )
            continue
        widget = _widget(context, entry)
        if widget is not None:
            out.append(widget)
    return tuple(out)


def _widget(context: SectionContext, folder: Path) -> WidgetType | None:
    file = folder / "schema.json"
    shown = str(file)
    if not re.match(WIDGET_ID_PATTERN, folder.name):
        context.report(
            Issue.of_file(
                str(folder),
                "widget-schema",
                f"widget type id `{folder.name}` is not valid",
                "name the folder with lowercase letters, digits, _ and -",
            )
        )
        return None
    if not os.path.lexists(file):
        context.report(
            Issue.of_file(
                shown, "widget-schema", f"widget folder `{folder.name}` has no schema.json"
            )
        )
        return None
    if not context.inside(file):
        context.report(context.outside_file(file, "schema.json"))
        return None
    doc = load_json(file, shown, code="widget-json")
    context.depends_on(file)
    if isinstance(doc, Issue):
        context.report(doc)
        return None
    parsed, issues = validated(doc, WidgetSchemaFile, "widget-schema")
    for issue in issues:
        context.report(issue)
    if parsed is None:
        return None
    modules: list[WidgetModule] = []
    for name, module in parsed.modules.items():
        where: YamlPath = ("modules", name, "record")
        problem = schema_problem(canonical_json(module.record))
        if problem is not None:
            context.report(
                issue_at(
                    doc,
                    (*where, *problem[0]),
                    "widget-record-schema",
                    f"record schema of module `{name}` is invalid: {problem[1]}",
                )
            )
            continue
        if module.record.get("type") != "object":
            context.report(
                issue_at(
                    doc,
                    where,
                    "widget-record-schema",
                    f"record schema of module `{name}` must have `type: object`",
                )
            )
            continue
        modules.append(WidgetModule(name, module.title or name, module.record))
    if len(modules) != len(parsed.modules):
        return None
    return WidgetType(
        folder.name, parsed.title, parsed.description or "", tuple(modules), file.resolve()
    )
