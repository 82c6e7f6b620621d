"""Wire shapes of the widgets capability (``/internal/v1/widget-types``, ``/internal/v1/widgets``,
``/internal/v1/messages``) and of its dev endpoints.

A widget is a structured panel in a conversation: a type (declared by the buddy's
``widgets/<type>/schema.json``), a title, modules of records (each record a JSON object
matching its module's record schema, with a revision), and a presentation (summary and
cover image) shown on the cards sent into the chat.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field

from buddy.capabilities.widgets.limits import (
    WIDGET_ID_PATTERN,
    WIDGET_SUMMARY_CHARS,
    WIDGET_TITLE_CHARS,
)
from buddy.platform.protocol.conversation import Integral, Wire
from buddy.platform.protocol.values import compact_bytes, json_problem, valid_unicode

__all__ = [
    "IDEMPOTENCY_KEY_CHARS",
    "MEDIA_ID_CHARS",
    "RECORD_DATA_BYTES",
    "RECORD_DEPTH_MAX",
    "RECORD_ID_CHARS",
    "SCHEMA_DEPTH_MAX",
    "WIDGET_ID_PATTERN",
    "DevWidgets",
    "ModuleRecords",
    "NewWidget",
    "Presentation",
    "PresentationUpdate",
    "Record",
    "RecordWrite",
    "RecordWritten",
    "WidgetCard",
    "WidgetCreated",
    "WidgetForward",
    "WidgetFull",
    "WidgetInfo",
    "WidgetList",
    "WidgetModuleDecl",
    "WidgetRename",
    "WidgetSend",
    "WidgetSent",
    "WidgetTypeDecl",
    "WidgetTypesSet",
    "WidgetTypesUpload",
    "json_problem",
]

# Bounds of this protocol's own (not in SPEC §4) free-form values.
IDEMPOTENCY_KEY_CHARS = 200
MEDIA_ID_CHARS = 200
RECORD_ID_CHARS = 128
# Nesting bounds that keep schema checks and record validation far from Python's
# recursion limit (a record schema nests about two levels per record level).
RECORD_DEPTH_MAX = 32
SCHEMA_DEPTH_MAX = 64
# One record's data as compact UTF-8 JSON: a record is one item of a panel, and a
# buddy must not be able to fill the platform's storage through one write.
RECORD_DATA_BYTES = 64 * 1024


def _record_data(value: dict[str, Any]) -> dict[str, Any]:
    problem = json_problem(value, RECORD_DEPTH_MAX)
    if problem is not None:
        raise ValueError(f"record data {problem}")
    size = compact_bytes(value)
    if size > RECORD_DATA_BYTES:
        raise ValueError(
            f"record data is {size} bytes as UTF-8 JSON; the limit is {RECORD_DATA_BYTES}"
        )
    return value


def _record_schema(value: dict[str, Any]) -> dict[str, Any]:
    problem = json_problem(value, SCHEMA_DEPTH_MAX)
    if problem is not None:
        raise ValueError(f"record schema {problem}")
    return value


Title = Annotated[
    str, Field(min_length=1, max_length=WIDGET_TITLE_CHARS), AfterValidator(valid_unicode)
]
Name = Annotated[str, Field(pattern=WIDGET_ID_PATTERN)]
IdempotencyKey = Annotated[
    str, Field(min_length=1, max_length=IDEMPOTENCY_KEY_CHARS), AfterValidator(valid_unicode)
]
TypeTitle = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(valid_unicode)]
RecordData = Annotated[dict[str, Any], AfterValidator(_record_data)]


# ---------------------------------------------------------------- widget types


class WidgetModuleDecl(Wire):
    """One module of a widget type: a title and the JSON Schema of one record."""

    title: TypeTitle | None = None
    record: Annotated[dict[str, Any], AfterValidator(_record_schema)] = Field(
        description="JSON Schema (Draft 2020-12) of one record; `type` must be `object`"
        " (`400 widget_schema_invalid` when it is not, or the schema is not valid Draft 2020-12).",
        json_schema_extra={"properties": {"type": {"const": "object"}}, "required": ["type"]},
    )


class WidgetTypeDecl(Wire):
    """A widget type, as in ``widgets/<type>/schema.json`` plus its ``type`` id."""

    type: Name
    title: TypeTitle
    description: (
        Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(valid_unicode)] | None
    ) = None
    modules: dict[Name, WidgetModuleDecl] = Field(
        min_length=1, json_schema_extra={"additionalProperties": False}
    )


class WidgetTypesUpload(Wire):
    """``PUT /internal/v1/widget-types``: the identity's whole set of types (replaces it)."""

    types: list[WidgetTypeDecl] = Field(
        description="Each `type` id at most once (`400 widget_type_duplicate`)."
    )


class WidgetTypesSet(BaseModel):
    """The type ids now declared, sorted."""

    types: list[str]


# ---------------------------------------------------------------- widgets


class NewWidget(Wire):
    """``POST /internal/v1/widgets``."""

    type: str = Field(min_length=1, max_length=64, description="A declared widget type id.")
    title: Title
    idempotency_key: IdempotencyKey | None = Field(
        default=None,
        description="The same key in the same conversation answers the same widget id.",
    )


class WidgetCreated(BaseModel):
    """The new (or, for a repeated idempotency key, the earlier) widget's id."""

    id: str


class Presentation(BaseModel):
    """What the widget's cards in the chat show besides the title; ``null`` = not set."""

    summary: str | None
    image_media_id: str | None


class WidgetInfo(BaseModel):
    """A widget as listed (no records).

    ``can_edit`` is ``false`` for a read-only reference forwarded from another conversation.
    """

    id: str
    type: str
    title: str
    can_edit: bool
    presentation: Presentation
    created_at: float
    updated_at: float


class WidgetList(BaseModel):
    """``GET /internal/v1/widgets``: the conversation's widgets (deleted ones are not listed)."""

    widgets: list[WidgetInfo]


class Record(BaseModel):
    """One record of a module."""

    record_id: str
    data: dict[str, Any]
    revision: int = Field(description="1 when first written, +1 on every overwrite.")
    updated_at: float


class ModuleRecords(BaseModel):
    """A module's records, in the order they were first written."""

    records: list[Record]


class WidgetFull(WidgetInfo):
    """``GET /internal/v1/widgets/{id}``: the widget with every module's records."""

    modules: dict[str, ModuleRecords]


class WidgetRename(Wire):
    """``PUT /internal/v1/widgets/{id}``: a new title (cards already sent show it)."""

    title: Title


class RecordWrite(Wire):
    """``PUT /internal/v1/widgets/{id}/{module}/{record_id}``: the whole record."""

    data: RecordData = Field(description="A JSON object matching the module's record schema.")
    expected_revision: Annotated[int, Field(ge=0, le=2**53, strict=True), Integral] | None = Field(
        default=None,
        description="Write only if the record is at this revision; 0 = only if it does not exist.",
    )


class RecordWritten(BaseModel):
    """The record's revision after the write."""

    revision: int


class PresentationUpdate(Wire):
    """``PUT /internal/v1/widgets/{id}/presentation``.

    A field that is absent (or ``null``) stays as it is; ``""`` removes it.
    """

    summary: (
        Annotated[str, Field(max_length=WIDGET_SUMMARY_CHARS), AfterValidator(valid_unicode)] | None
    ) = None
    image_media_id: (
        Annotated[str, Field(max_length=MEDIA_ID_CHARS), AfterValidator(valid_unicode)] | None
    ) = None


class WidgetSend(Wire):
    """``POST /internal/v1/messages``: put a widget's card into the chat."""

    widget_id: str = Field(min_length=1, max_length=64)
    idempotency_key: IdempotencyKey


class WidgetSent(BaseModel):
    """The card's message id (the same one for a repeated idempotency key)."""

    message_id: str


# ---------------------------------------------------------------- dev endpoints


class WidgetForward(Wire):
    """``POST /dev/widgets/{id}/forward``: show a widget read-only in another conversation."""

    conversation_id: str = Field(min_length=1, max_length=64)


class WidgetCard(BaseModel):
    """A widget card in a transcript, as the user sees it now."""

    message_id: str
    widget_id: str
    title: str | None = Field(description="The widget's current title; null if it is gone.")
    deleted: bool
    presentation: Presentation
    sent_at: float


class DevWidgets(BaseModel):
    """``GET /dev/conversations/{id}/widgets``: widgets with records, and the cards sent."""

    widgets: list[WidgetFull]
    cards: list[WidgetCard]
