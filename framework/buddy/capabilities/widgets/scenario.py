"""Widgets in scenario files: the expectation ``widget`` (a widget of the conversation,
a record in it, whether its card was sent), checked against the buddy's widget types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Field, Tag

from buddy.capabilities.widgets.compiled import declared
from buddy.manifest.schema import did_you_mean
from buddy.testing.expectations import (
    Data,
    Miss,
    Observed,
    Strict,
    Text,
    items_of,
    mapping_or_list,
    quoted,
    subset,
)

if TYPE_CHECKING:
    from buddy.manifest.yamlio import YamlPath
    from buddy.testing.parts import StepCheck, StepRun

__all__ = ["WidgetCheck", "WidgetExpect"]


class WidgetCheck(Strict):
    """A widget of the conversation, a record in it, and whether its card was sent."""

    type: Text = Field(description="The widget type (a directory under `widgets/`).")
    title: Text | None = None
    module: Text | None = Field(default=None, description="The module `record` is in.")
    record: Data | None = Field(
        default=None, description="A record whose data has these fields (a subset)."
    )
    sent: bool | None = Field(default=None, description="Whether a card of it is in the chat.")


WidgetExpect = Annotated[
    Annotated[WidgetCheck, Tag("mapping")] | Annotated[list[WidgetCheck], Tag("list")],
    Discriminator(mapping_or_list),
]


def check_widget(value: WidgetCheck | list[WidgetCheck], path: YamlPath, check: StepCheck) -> None:
    """Each type is one of the buddy's, each module one of its type's."""
    if check.blueprint is None:
        return
    types = {w.type: [m.name for m in w.modules] for w in declared(check.blueprint)}
    for item_path, item in items_of(path, value):
        modules = types.get(item.type)
        if modules is None:
            check.issue(
                (*item_path, "type"),
                "unknown-widget",
                f"there is no widget type `{item.type}`",
                did_you_mean(item.type, list(types)) or f"types: {', '.join(types) or 'none'}",
            )
        elif item.module is not None and item.module not in modules:
            check.issue(
                (*item_path, "module"),
                "unknown-widget",
                f"the widget type {item.type} has no module `{item.module}`",
                did_you_mean(item.module, modules) or f"modules: {', '.join(modules)}",
            )


async def widgets(run: StepRun, seen: Observed) -> dict[str, Any]:
    """``GET /dev/conversations/{id}/widgets``: the widgets with records, and the cards."""
    view: dict[str, Any] = await run.platform.dev("GET", f"/conversations/{run.cid}/widgets")
    return view


def verify_widget(
    expect: WidgetCheck | list[WidgetCheck], seen: Observed, view: Mapping[str, Any], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """Every item holds of the conversation's widgets."""
    failures: list[Miss] = []
    for path, item in items_of(("widget",), expect):
        failures.extend(_widget(path, item, view))
    return failures, []


def _widget(path: YamlPath, item: WidgetCheck, view: Mapping[str, Any]) -> list[Miss]:
    widgets = [w for w in view.get("widgets", []) if w.get("type") == item.type]
    if item.title is not None:
        titled = [w for w in widgets if w.get("title") == item.title]
        if not titled:
            titles = [w.get("title") for w in widgets]
            return [
                Miss(
                    (*path, "title"),
                    f"expected a {item.type} widget titled {quoted(item.title)}, got "
                    + (f"titles {quoted(titles)}" if titles else "none"),
                )
            ]
        widgets = titled
    if not widgets:
        kinds = sorted({str(w.get("type")) for w in view.get("widgets", [])})
        return [
            Miss(
                path,
                f"expected a {item.type} widget, got "
                + (f"widgets of type {', '.join(kinds)}" if kinds else "no widgets"),
            )
        ]
    if item.module is not None or item.record is not None:
        records = [
            (module, record)
            for w in widgets
            for module, content in (w.get("modules") or {}).items()
            if item.module is None or module == item.module
            for record in content.get("records", [])
        ]
        wanted = item.record or {}
        if not any(subset(wanted, record.get("data")) for _, record in records):
            where = f" in module {item.module}" if item.module else ""
            have = [r.get("data") for _, r in records]
            return [
                Miss(
                    (*path, "record" if item.record is not None else "module"),
                    f"expected a record{where} with {quoted(wanted)}, got "
                    + (f"records {quoted(have)}" if have else "no records"),
                )
            ]
    if item.sent is not None:
        ids = {w.get("id") for w in widgets}
        cards = [
            c for c in view.get("cards", []) if c.get("widget_id") in ids and not c.get("deleted")
        ]
        if item.sent and not cards:
            return [
                Miss(
                    (*path, "sent"),
                    f"expected a card of the {item.type} widget in the chat, got none",
                )
            ]
        if not item.sent and cards:
            return [
                Miss(
                    (*path, "sent"), f"expected no card of the {item.type} widget, got {len(cards)}"
                )
            ]
    return []
