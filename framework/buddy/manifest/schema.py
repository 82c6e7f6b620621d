"""The shape of ``buddy.yaml``: pydantic models of what a buddy author writes.

Strict: unknown keys are errors, no type coercion (``"3"`` is not a number, ``1`` is
not a string). Checks that need only one value live here as validators raising
:class:`~pydantic_core.PydanticCustomError` whose *type* is our error code; checks
that relate several parts of a manifest, or other files, live in :mod:`buddy.compile`.

Here: the persona, the composed manifest (:func:`manifest_model`) and what its JSON
Schema adds. Its parts are :mod:`.fields` (:class:`Strict`, patterns), :mod:`.model_options`
(``model:``), :mod:`.tool_models` (``tools:``, ``hooks:``) and :mod:`.suggest` (did you
mean), all re-exported here. The JSON Schema of buddy.yaml (``buddy schema``,
``docs/buddy.schema.json``) is generated from these models.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError

from buddy.manifest.fields import (
    DURATION_PATTERN,
    HANDLER_PATTERN,
    SLUG_PATTERN,
    Folder,
    Strict,
    duration_seconds,
)
from buddy.manifest.model_options import FallbackOptions as FallbackOptions  # noqa: PLC0414
from buddy.manifest.model_options import ModelOptions, ThinkingOptions
from buddy.manifest.model_options import ModelRef as ModelRef  # noqa: PLC0414
from buddy.manifest.suggest import choices, closest, did_you_mean
from buddy.manifest.tool_models import (
    PLATFORM_TOOL_NAMES,
    CustomTool,
    DeclarativeTool,
    DenyRule,
    HandlerRule,
    Hooks,
    ToolItem,
    tool_item,
)
from buddy.manifest.tool_models import canonical_json as canonical_json  # noqa: PLC0414
from buddy.manifest.tool_models import schema_problem as schema_problem  # noqa: PLC0414

if TYPE_CHECKING:
    from buddy.extend import Section, Uses

# `FallbackOptions`, `ModelRef`, `canonical_json` and `schema_problem` are imported from
# here too: the `X as X` imports above re-export them, outside `__all__` as before.
__all__ = [
    "DURATION_PATTERN",
    "HANDLER_PATTERN",
    "PLATFORM_TOOL_NAMES",
    "SLUG_PATTERN",
    "CoreManifest",
    "CustomTool",
    "DeclarativeTool",
    "DenyRule",
    "Folder",
    "HandlerRule",
    "Hooks",
    "ModelOptions",
    "Persona",
    "Profile",
    "Strict",
    "ThinkingOptions",
    "choices",
    "closest",
    "custom_codes",
    "did_you_mean",
    "duration_seconds",
    "manifest_model",
]

# Our own error codes raised from validators (pydantic's own types are mapped in locate.py).
CUSTOM_ERROR_CODES = frozenset(
    {
        "unknown-provider",
        "unknown-model",
        "model-base-url",
        "thinking-options",
        "persona-kind",
        "unknown-platform-tool",
        "handler-format",
        "tool-shadows-platform",
        "name-reserved",
        "tool-schema",
        "tool-kind",
        "hook-kind",
    }
)


# ---------------------------------------------------------------- persona


class Persona(Strict):
    """Who the buddy is: a shared template or an inline prompt, plus traits and vars."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)

    template: str | None = Field(
        default=None,
        min_length=1,
        description="A template name on the search path (the buddy's directory, then every "
        "`personas/` directory up to the repository root, then installed packs, then the "
        "shared templates buddy ships).",
    )
    prompt: str | None = Field(default=None, min_length=1, description="Inline Jinja2 text.")
    traits: str | list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        description="Trait file(s) (YAML/JSON mappings) on the template search path, "
        "deep-merged in order and exposed as `traits`.",
    )
    vars: dict[str, Any] = Field(
        default_factory=dict,
        description="Values exposed to the template as top-level names.",
        json_schema_extra={
            "propertyNames": {
                "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$",
                "not": {"enum": ["traits", "buddy", "conversation", "now"]},
            }
        },
    )

    @model_validator(mode="after")
    def _one_source(self) -> Persona:
        if (self.template is None) == (self.prompt is None):
            raise PydanticCustomError(
                "persona-kind", "persona needs exactly one of `template` or `prompt`"
            )
        return self


def _check_buddy_name(value: str) -> str:
    if value.endswith("-dev"):
        raise PydanticCustomError(
            "name-reserved",
            "`{name}` ends in `-dev`, which names the dev identity of buddy `{base}` on the"
            " platform; choose a name that does not end in `-dev`",
            {"name": value, "base": value.removesuffix("-dev")},
        )
    return value


# ---------------------------------------------------------------- manifest


class Profile(Strict):
    """Per-environment choices, selected with `--profile` or `BUDDY_PROFILE`."""

    model: ModelRef


def _manifest_schema(schema: dict[str, Any]) -> None:
    """The editor's schema: a buddy's required keys, except in a base (`abstract: true`)
    or a manifest that `extends` one — those are complete only once merged, which the
    loader checks."""
    schema["$id"] = "https://buddy.dev/schema/buddy.schema.json"
    required = schema.pop("required", [])
    schema["if"] = {
        "anyOf": [
            {"required": ["extends"]},
            {"required": ["abstract"], "properties": {"abstract": {"const": True}}},
        ]
    }
    # A complete buddy's persona has exactly one source; a base's or a child's may be
    # half of one (the merged result is checked).
    one_source = {"oneOf": [{"required": ["template"]}, {"required": ["prompt"]}]}
    schema["else"] = {"required": required, "properties": {"persona": one_source}}


class CoreManifest(Strict):
    """A buddy: `buddy.yaml` — its own keys; :func:`manifest_model` adds the capabilities'
    sections (``data``, ``proactive`` …)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        defer_build=True,
        title="buddy.yaml",
        json_schema_extra=_manifest_schema,
    )

    version: Literal[1] | None = Field(default=None, description="Manifest format version.")
    name: Annotated[
        str,
        Field(
            pattern=SLUG_PATTERN,
            description="Slug; the platform id comes from BUDDY_ID. Not ending in `-dev`.",
            json_schema_extra={"not": {"pattern": "-dev$"}},
        ),
        AfterValidator(_check_buddy_name),
    ]
    title: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, min_length=1, max_length=1000)
    extends: str | None = Field(
        default=None,
        min_length=1,
        description="Another manifest to inherit; mappings merge deeply, lists and scalars "
        "replace.",
    )
    abstract: bool = Field(
        default=False,
        description="`true`: a base for `extends`, not a buddy — it need not be complete, "
        "and `validate`, `test`, `dev` and `diff` of a folder skip it. Not inherited.",
    )
    model: ModelRef
    persona: Persona
    tools: list[ToolItem] = Field(default_factory=list)  # and the registered `uses` kinds
    hooks: Hooks = Field(default_factory=Hooks)
    profiles: dict[Annotated[str, Field(pattern=SLUG_PATTERN)], Profile] = Field(
        default_factory=dict,
        description="Per-environment model choices, selected with --profile or BUDDY_PROFILE.",
    )


def manifest_model() -> type[CoreManifest]:
    """``buddy.yaml``'s model: the manifest's own keys — ``tools:`` taking every registered
    declarative kind (``Uses``) — then each registered capability's section
    (``Section.key``: its model, or ``None`` when absent or empty), in registry order."""
    from buddy.extend import declarative_uses, sections

    return _composed(sections(), declarative_uses())


@cache
def _composed(sections: tuple[Section, ...], uses: tuple[Uses, ...]) -> type[CoreManifest]:
    from buddy.extend import resolve

    item: Any = tool_item(tuple(resolve(u.model) for u in uses))
    fields: dict[str, Any] = {
        "tools": (list[item], Field(default_factory=list)),
        **{
            s.key: (resolve(s.model), s.default)
            if s.default is not None
            else (resolve(s.model) | None, None)
            for s in sections
        },
    }
    model: type[CoreManifest] = create_model(
        "Manifest", __base__=CoreManifest, __doc__="A buddy: `buddy.yaml`.", **fields
    )
    return model


def custom_codes() -> frozenset[str]:
    """Every error code our validators raise: the manifest's own and each section's."""
    from buddy.extend import sections

    return CUSTOM_ERROR_CODES.union(*(s.codes for s in sections()))
