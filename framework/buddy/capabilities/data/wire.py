"""Wire shapes of user-data access (seed §3.4): declaration, query, consent cards, results.

A buddy uploads its declaration (which catalogue datasets it needs, and why); the platform
versions each requirement by ``(id, purpose, schema_version)`` so a changed purpose needs
the user's consent again. Queries answer one status per dataset; consent cards ask a user
in a private chat for HealthKit datasets or for a one-time location or calendar result.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.capabilities.data.limits import (
    CALENDAR_DAYS_DEFAULT,
    CALENDAR_DAYS_MAX,
    CALENDAR_DAYS_MIN,
    DECLARATION_REQUIREMENTS_MAX,
    PURPOSE_CHARS,
    QUERY_DATASETS_MAX,
    REQUEST_REASON_CHARS,
)
from buddy.platform.limits import Refusal
from buddy.platform.protocol.conversation import Integral, Wire, refused

__all__ = [
    "DATASET_STATUSES",
    "DECLARATION_REQUIREMENTS_MAX",
    "IDEMPOTENCY_KEY_CHARS",
    "PURPOSE_CHARS",
    "REQUIREMENT_TITLE_CHARS",
    "ConsentAnswer",
    "ConsentAnswered",
    "ConsentRequest",
    "ConsentRequested",
    "DataQuery",
    "DatasetData",
    "DatasetResult",
    "Declaration",
    "DeclarationAccepted",
    "DeclaredRequirement",
    "DevDataOverride",
    "GrantChange",
    "GrantState",
    "GroupSetting",
    "MemberData",
    "OneTimeResult",
    "QueryAnswer",
    "UploadedRequirement",
    "dataset_refusal",
    "grant_version",
]

# The declaration's limits (SPEC §4 "User data"; the manifest schema checks the same ones).
REQUIREMENT_TITLE_CHARS = 100
IDEMPOTENCY_KEY_CHARS = 128
_MEMBER_ID_CHARS = 64
_IDENTITY_CHARS = 80

DatasetStatus = Literal["available", "notGranted", "notDeclared", "disabledInGroup", "unavailable"]
DATASET_STATUSES: tuple[DatasetStatus, ...] = (
    "available",
    "notGranted",
    "notDeclared",
    "disabledInGroup",
    "unavailable",
)
ConsentKind = Literal["healthkit", "location", "calendar"]

_CATALOGUE_ENUM = {"enum": list(DATA_ACCESS_CAPABILITIES)}


def grant_version(dataset: str, purpose: str, schema_version: int) -> str:
    """The version a grant is made at: ``sha256("id|purpose|schema_version")[:16]``.

    A grant stays valid while the declaration's id, purpose and schema version are
    unchanged; any change gives another version and needs the user's consent again.
    """
    return hashlib.sha256(f"{dataset}|{purpose}|{schema_version}".encode()).hexdigest()[:16]


def _catalogued(value: str) -> str:
    if value not in DATA_ACCESS_CAPABILITIES:
        known = ", ".join(DATA_ACCESS_CAPABILITIES)
        raise ValueError(f"{value!r} is not a dataset of the catalogue ({known})")
    return value


def dataset_refusal(dataset: str) -> Refusal | None:
    """Why ``dataset`` is not a dataset id (``400 dataset_unknown``), or ``None``."""
    if dataset in DATA_ACCESS_CAPABILITIES:
        return None
    known = ", ".join(DATA_ACCESS_CAPABILITIES)
    return Refusal(400, "dataset_unknown", f"{dataset} is not a dataset of the catalogue ({known})")


def _known(dataset: str) -> str:
    refusal = dataset_refusal(dataset)
    if refusal is not None:
        raise refused(refusal)
    return dataset


CatalogueId = Annotated[str, Field(json_schema_extra=_CATALOGUE_ENUM), AfterValidator(_catalogued)]
# A catalogue dataset id; an unknown one answers `400 dataset_unknown`.
DatasetId = Annotated[
    str,
    Field(min_length=1, max_length=64, json_schema_extra=_CATALOGUE_ENUM),
    AfterValidator(_known),
]
MemberId = Annotated[str, Field(min_length=1, max_length=_MEMBER_ID_CHARS)]


# ---------------------------------------------------------------- declaration


class UploadedRequirement(Wire):
    """One dataset the buddy needs and why; ``title``/``source``/``schema_version`` are the
    catalogue's expansion (defaults: the platform's catalogue entry)."""

    id: CatalogueId
    purpose: str = Field(
        min_length=1, max_length=PURPOSE_CHARS, description="What the user reads before consenting."
    )
    model_config = ConfigDict(
        json_schema_extra={
            # `source`, when given, is the catalogue's source of that id.
            "anyOf": [
                {"properties": {"id": {"const": key}, "source": {"enum": [entry.source, None]}}}
                for key, entry in DATA_ACCESS_CAPABILITIES.items()
            ]
        }
    )

    title: str | None = Field(default=None, min_length=1, max_length=REQUIREMENT_TITLE_CHARS)
    source: str | None = Field(default=None, min_length=1, max_length=32)
    schema_version: Annotated[int, Field(ge=1, le=1_000_000), Integral] | None = None

    @model_validator(mode="after")
    def _source_matches(self) -> UploadedRequirement:
        expected = DATA_ACCESS_CAPABILITIES[self.id].source
        if self.source is not None and self.source != expected:
            raise ValueError(f"{self.id} comes from {expected}, not {self.source}")
        return self


class Declaration(Wire):
    """``PUT /internal/v1/data-access/declaration``: the buddy's whole declaration (an
    empty list clears it)."""

    requirements: list[UploadedRequirement] = Field(
        max_length=DECLARATION_REQUIREMENTS_MAX,
        description="Each id at most once (checked by the route: `400 declaration_invalid`).",
        json_schema_extra={
            "allOf": [
                {
                    "contains": {"properties": {"id": {"const": key}}, "required": ["id"]},
                    "minContains": 0,
                    "maxContains": 1,
                }
                for key in DATA_ACCESS_CAPABILITIES
            ]
        },
    )


class DeclaredRequirement(BaseModel):
    """A stored requirement and the grant version it gives."""

    id: str
    purpose: str
    version: str = Field(description="sha256(id|purpose|schema_version)[:16]")


class DeclarationAccepted(BaseModel):
    """The declaration as stored, in the order uploaded."""

    requirements: list[DeclaredRequirement]


# ---------------------------------------------------------------- query


class DataQuery(Wire):
    """``POST /internal/v1/data-access/query``."""

    datasets: list[DatasetId] = Field(min_length=1, max_length=QUERY_DATASETS_MAX)
    member_id: MemberId | None = Field(
        default=None,
        description="Whose data: required in groups; in a private chat absent or the sole member.",
    )


class DatasetData(BaseModel):
    """A dataset's data: ``items`` with the catalogue's item fields (some may be missing)."""

    items: list[dict[str, Any]]


class DatasetResult(BaseModel):
    """One dataset's status; only ``available`` carries ``data``."""

    dataset: str
    status: DatasetStatus
    data: DatasetData | None = Field(default=None, description="Present only when available.")


class QueryAnswer(BaseModel):
    """One result per queried dataset, in the order asked."""

    results: list[DatasetResult]


# ---------------------------------------------------------------- consent cards


class ConsentRequest(Wire):
    """``POST /internal/v1/data-access/requests``: a consent card in a private chat.

    ``datasets`` are for (and required by) ``healthkit``, ``calendar_days`` for
    ``calendar`` only (``400 request_invalid``); a dataset listed twice is
    ``400 dataset_duplicate``.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {
                    "properties": {
                        "kind": {"const": "healthkit"},
                        "datasets": {"type": "array"},
                        "calendar_days": {"type": "null"},
                    },
                    "required": ["datasets"],
                },
                {
                    "properties": {
                        "kind": {"const": "location"},
                        "datasets": {"type": "null"},
                        "calendar_days": {"type": "null"},
                    }
                },
                {"properties": {"kind": {"const": "calendar"}, "datasets": {"type": "null"}}},
            ]
        }
    )

    kind: ConsentKind
    reason: str = Field(
        min_length=1, max_length=REQUEST_REASON_CHARS, description="Why, as the user reads it."
    )
    datasets: list[DatasetId] | None = Field(
        default=None,
        min_length=1,
        max_length=QUERY_DATASETS_MAX,
        description="healthkit only, and required there: declared dataset ids.",
        json_schema_extra={"uniqueItems": True},
    )
    calendar_days: (
        Annotated[int, Field(ge=CALENDAR_DAYS_MIN, le=CALENDAR_DAYS_MAX), Integral] | None
    ) = Field(
        default=None,
        description=f"calendar only; default {CALENDAR_DAYS_DEFAULT}.",
    )
    idempotency_key: str = Field(
        min_length=1,
        max_length=IDEMPOTENCY_KEY_CHARS,
        description="The same key in the same conversation answers the same request.",
    )

    @model_validator(mode="after")
    def _fields_of_kind(self) -> ConsentRequest:
        def invalid(reason: str) -> Exception:
            return refused(Refusal(400, "request_invalid", reason))

        if self.kind == "healthkit":
            if not self.datasets:
                raise invalid("a healthkit request needs datasets")
            seen: set[str] = set()
            for dataset in self.datasets:
                if dataset in seen:
                    raise refused(Refusal(400, "dataset_duplicate", f"{dataset} is listed twice"))
                seen.add(dataset)
        elif self.datasets is not None:
            raise invalid(f"datasets are for healthkit requests, not {self.kind}")
        if self.calendar_days is not None and self.kind != "calendar":
            raise invalid(f"calendar_days is for calendar requests, not {self.kind}")
        return self


class ConsentRequested(BaseModel):
    """The consent request and the card message showing it."""

    request_id: str
    message_id: str


class OneTimeResult(BaseModel):
    """A one-time location or calendar result: ``available`` with ``data``, or ``unavailable``."""

    status: Literal["available", "unavailable"]
    data: dict[str, Any] | None = Field(default=None, description="Present only when available.")


# ---------------------------------------------------------------- dev endpoints


class GrantChange(Wire):
    """``PUT /dev/grants``: a user grants (at the current declared version) or revokes."""

    identity: str = Field(min_length=1, max_length=_IDENTITY_CHARS)
    member_id: MemberId
    dataset: DatasetId
    granted: bool


class GrantState(BaseModel):
    """A member's grant of one dataset to an identity.

    ``granted`` is true only when a grant exists at the current declared version;
    ``granted_version`` is the version of the stored grant (stale when it differs from
    ``version``).
    """

    identity: str
    member_id: str
    dataset: str
    declared: bool
    purpose: str | None
    version: str | None
    granted_version: str | None
    granted: bool


class GroupSetting(Wire):
    """``PUT /dev/group-settings``: a member turns a dataset off (or on again) in a group."""

    conversation_id: str = Field(min_length=1, max_length=64)
    member_id: MemberId
    dataset: DatasetId
    disabled: bool


class ConsentAnswer(Wire):
    """``POST /dev/data-access/requests/{request_id}/answer``: the user's choice on a card."""

    granted: bool


class ConsentAnswered(BaseModel):
    """The answer as recorded, and the ``consent_result`` event sent to the buddy."""

    request_id: str
    kind: ConsentKind
    granted: bool
    datasets: list[str] | None = None
    event_id: str


class DevDataOverride(Wire):
    """``PUT /dev/data``: replace a member's data of one dataset; ``null`` = no data.

    An item's fields are the catalogue's item fields of that dataset
    (``400 item_field_unknown``).
    """

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {
                    "properties": {
                        "dataset": {"const": key},
                        "items": {
                            "anyOf": [
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "propertyNames": {"enum": list(entry.item_fields)},
                                    },
                                },
                                {"type": "null"},
                            ]
                        },
                    }
                }
                for key, entry in DATA_ACCESS_CAPABILITIES.items()
            ]
        }
    )

    member_id: MemberId
    dataset: DatasetId
    items: list[dict[str, Any]] | None

    @model_validator(mode="after")
    def _item_fields(self) -> DevDataOverride:
        fields = DATA_ACCESS_CAPABILITIES[self.dataset].item_fields
        for index, item in enumerate(self.items or ()):
            for key in item:
                if key not in fields:
                    raise refused(
                        Refusal(
                            400,
                            "item_field_unknown",
                            f"items.{index}.{key} is not a field of {self.dataset}"
                            f" ({', '.join(fields)})",
                        )
                    )
        return self


class MemberData(BaseModel):
    """A member's data of one dataset as queries see it now (``items`` null = no data)."""

    member_id: str
    dataset: str
    source: Literal["simulated", "override"]
    items: list[dict[str, Any]] | None
