"""The shape of ``buddy.yaml``: pydantic models of what a buddy author writes.

Strict: unknown keys are errors, no type coercion (``"3"`` is not a number, ``1`` is
not a string). Checks that need only one value live here as validators raising
:class:`~pydantic_core.PydanticCustomError` whose *type* is our error code; checks
that relate several parts of a manifest, or other files, live in :mod:`buddy.compile`.

The JSON Schema of buddy.yaml (``buddy schema``, ``docs/buddy.schema.json``) is
generated from these models.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from buddy.extend import registry
from buddy.models.providers import BASE_URL_PATTERN, PROVIDERS, infer_provider, split_ref

if TYPE_CHECKING:
    from buddy.extend import Section, Uses

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

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
HANDLER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
_HANDLER_RE = re.compile(HANDLER_PATTERN)

#: A span of time as written in YAML: ``30d``, ``12h``, ``90m``, ``45s``, ``1d12h``.
DURATION_PATTERN = r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$"
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_UNITS = (86400, 3600, 60, 1)


def duration_seconds(value: str) -> int:
    """Seconds of a span such as ``30d`` or ``1h30m``; 0 when ``value`` is not one."""
    match = _DURATION.match(value)
    if match is None:
        return 0
    groups = match.groups()
    return sum(int(n) * unit for n, unit in zip(groups, _DURATION_UNITS, strict=True) if n)


#: A folder a manifest key names, relative to the manifest that wrote it (``resources:``,
#: ``widgets:``): a section's model when its value is a folder.
Folder = Annotated[str, Field(min_length=1)]

#: Every platform tool a manifest may list by name: the registered capabilities' tools.
PLATFORM_TOOL_NAMES: tuple[str, ...] = registry().tool_names()


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


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """``"did you mean `x`?"`` for the closest choice, or ``""``."""
    close = closest(word, choices)
    return f"did you mean `{close}`?" if close is not None else ""


def closest(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The choice ``word`` most likely meant, or ``None``.

    A name written short or long comes first — a choice it begins (``plan`` →
    ``plan_menu``), one that begins it (``plan_menus`` → ``plan_menu``), one containing
    it (``menu``) — then the most similar spelling. Similarity is also asked of what
    follows a shared namespace (``a.``), which alone would make ``a.running`` look like
    ``a.rating``.
    """
    folded = word.casefold()
    options = [(c, c.casefold()) for c in choices]
    same = [c for c, f in options if f == folded]
    if same:
        return same[0]
    if len(folded) >= 3:
        longer = [c for c, f in options if f.startswith(folded)]
        if longer:
            return min(longer, key=len)
        shorter = [c for c, f in options if folded.startswith(f) and 2 * len(f) >= len(folded)]
        if shorter:
            return max(shorter, key=len)
    if len(folded) >= 4:
        around = [c for c, f in options if folded in f]
        if around:
            return min(around, key=len)
    best: tuple[float, str] | None = None
    for choice, fold in options:
        score = difflib.SequenceMatcher(None, folded, fold).ratio()
        if score < _CLOSE or _rest_ratio(folded, fold) < _CLOSE_REST:
            continue
        if best is None or score > best[0]:
            best = (score, choice)
    return best[1] if best is not None else None


_CLOSE = 0.6  # difflib.get_close_matches's default cutoff
_CLOSE_REST = 0.5
_NAMESPACE_END = re.compile(r".*[./:_-]")


def _rest_ratio(word: str, choice: str) -> float:
    """How alike ``word`` and ``choice`` are after the namespace they share, if any."""
    shared = 0
    for a, b in zip(word, choice, strict=False):
        if a != b:
            break
        shared += 1
    namespace = _NAMESPACE_END.match(word[:shared])
    if namespace is None:
        return 1.0
    cut = namespace.end()
    return difflib.SequenceMatcher(None, word[cut:], choice[cut:]).ratio()


def choices(word: str, choices: list[str] | tuple[str, ...]) -> str:
    return did_you_mean(word, choices) or f"known: {', '.join(choices)}"


class Strict(BaseModel):
    """Every manifest model: unknown keys are errors, no coercion, frozen.

    Built when first used (``defer_build``): a manifest is validated by the composed
    model of :func:`manifest_model`, which generates every part's schema itself, so
    building each part's own validator at import would be work thrown away.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)


# ---------------------------------------------------------------- model


def _check_model_ref(value: str) -> str:
    provider, name, base_url = split_ref(value)
    if base_url is not None and not re.match(BASE_URL_PATTERN, base_url):
        raise PydanticCustomError(
            "model-base-url",
            "the endpoint after `@` is not an http(s) URL: `{url}`",
            {"url": base_url},
        )
    if provider is not None:
        if provider not in PROVIDERS:
            raise PydanticCustomError(
                "unknown-provider",
                "unknown model provider `{provider}`",
                {"provider": provider, "hint": choices(provider, tuple(PROVIDERS))},
            )
        if not name:
            raise PydanticCustomError(
                "unknown-model",
                "the model name after `{provider}:` is empty",
                {"provider": provider},
            )
        if provider == "openai-compatible" and base_url is None:
            raise PydanticCustomError(
                "model-base-url",
                "`openai-compatible` needs its endpoint: write `openai-compatible:{name}@URL` "
                "(e.g. `openai-compatible:{name}@http://127.0.0.1:11434/v1`), or the mapping "
                "form with `base_url`",
                {"name": name},
            )
        return value
    if infer_provider(name) is None:
        raise PydanticCustomError(
            "unknown-model",
            "cannot tell the provider of model `{name}`: write `provider:{name}` "
            "(providers: {providers})",
            {"name": name, "providers": ", ".join(PROVIDERS)},
        )
    return value


ModelString = Annotated[
    str,
    Field(
        min_length=1,
        description="`provider:name`, a bare model name (kimi-*, deepseek-*, qwen*, glm-*, "
        "doubao-*, gemini-*, grok-*, gpt-*, o1…, claude-* …), `offline` or `test`; "
        "`@URL` after it names the endpoint (`openai-compatible:qwen3@http://127.0.0.1:11434/v1`).",
    ),
    AfterValidator(_check_model_ref),
]


class ThinkingOptions(Strict):
    """Thinking before answering, in detail (``thinking: true`` is all defaults)."""

    enabled: bool = Field(default=True, description="Thinking on or off.")
    budget_tokens: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Tokens it may think for (Anthropic: at least 1024, below `max_tokens`).",
    )
    effort: Literal["low", "medium", "high"] | None = Field(
        default=None, description="How hard it thinks, where the provider takes an effort."
    )

    @model_validator(mode="after")
    def _one_amount(self) -> ThinkingOptions:
        if self.budget_tokens is not None and self.effort is not None:
            raise PydanticCustomError(
                "thinking-options",
                "give `budget_tokens` or `effort`, not both: providers take one of them",
            )
        return self


def _thinking_tag(value: Any) -> str:
    return "thinking-bool" if isinstance(value, bool) else "thinking-mapping"


ThinkingRef = Annotated[
    Annotated[bool, Tag("thinking-bool")] | Annotated[ThinkingOptions, Tag("thinking-mapping")],
    Discriminator(_thinking_tag),
]


class _ModelOptionsBase(Strict):
    provider: str | None = Field(
        default=None,
        description="Provider id; inferred from `name` when omitted.",
        json_schema_extra={"enum": [*PROVIDERS, None]},
    )
    name: str = Field(min_length=1, max_length=200, description="The provider's model name.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    top_p: float | None = Field(default=None, gt=0, le=1)
    base_url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="Endpoint override; required for `openai-compatible`.",
    )
    thinking: ThinkingRef | None = Field(
        default=None,
        description="Think before answering: `true`/`false`, or `budget_tokens`/`effort` "
        "(how each provider takes it: docs/models.md).",
    )

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        if value is not None and value not in PROVIDERS:
            raise PydanticCustomError(
                "unknown-provider",
                "unknown model provider `{provider}`",
                {"provider": value, "hint": choices(value, tuple(PROVIDERS))},
            )
        return value

    @model_validator(mode="after")
    def _resolvable(self) -> _ModelOptionsBase:
        if self.provider is None and infer_provider(self.name) is None:
            raise PydanticCustomError(
                "unknown-model",
                "cannot tell the provider of model `{name}`: add `provider:`",
                {"name": self.name},
            )
        if self.provider == "openai-compatible" and not self.base_url:
            raise PydanticCustomError("model-base-url", "`openai-compatible` needs `base_url`")
        return self


class FallbackOptions(_ModelOptionsBase):
    """A fallback model in mapping form (fallbacks do not nest)."""


def _model_tag(value: Any) -> str:
    return "model-string" if isinstance(value, str) else "model-options"


FallbackRef = Annotated[
    Annotated[ModelString, Tag("model-string")] | Annotated[FallbackOptions, Tag("model-options")],
    Discriminator(_model_tag),
]


class ModelOptions(_ModelOptionsBase):
    """The model in mapping form, with sampling options and fallbacks."""

    fallbacks: list[FallbackRef] = Field(
        default_factory=list,
        max_length=8,
        description="Models tried in order when this one keeps failing.",
    )


ModelRef = Annotated[
    Annotated[ModelString, Tag("model-string")] | Annotated[ModelOptions, Tag("model-options")],
    Discriminator(_model_tag),
]

# ---------------------------------------------------------------- persona


class Persona(Strict):
    """Who the buddy is: a shared template or an inline prompt, plus traits and vars."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)

    template: str | None = Field(
        default=None,
        min_length=1,
        description="A template name on the search path (the buddy's directory, then every "
        "`personas/` directory up to the repository root, then installed packs).",
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


# ---------------------------------------------------------------- tools


def _check_platform_tool(value: str) -> str:
    names = registry().tool_names()  # the registry's now: a capability may have joined
    if value not in names:
        raise PydanticCustomError(
            "unknown-platform-tool",
            "`{name}` is not a platform tool (a custom tool is a mapping with "
            "`name`, `description`, `parameters` and `handler`)",
            {"name": value, "hint": choices(value, names)},
        )
    return value


def _check_handler(value: str) -> str:
    if not _HANDLER_RE.match(value):
        raise PydanticCustomError(
            "handler-format",
            "handler `{value}` is not of the form `module:function` "
            "(e.g. `plugins.my_buddy:plan_menu`)",
            {"value": value},
        )
    return value


def _check_tool_name(value: str) -> str:
    if value in registry().tools:
        raise PydanticCustomError(
            "tool-shadows-platform",
            "`{name}` is a platform tool; list it by name, or give your tool another name",
            {"name": value},
        )
    return value


def _check_buddy_name(value: str) -> str:
    if value.endswith("-dev"):
        raise PydanticCustomError(
            "name-reserved",
            "`{name}` ends in `-dev`, which names the dev identity of buddy `{base}` on the"
            " platform; choose a name that does not end in `-dev`",
            {"name": value, "base": value.removesuffix("-dev")},
        )
    return value


HandlerString = Annotated[
    str,
    Field(
        json_schema_extra={"pattern": HANDLER_PATTERN, "examples": ["plugins.my_buddy:plan_menu"]}
    ),
    AfterValidator(_check_handler),
]
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN), AfterValidator(_check_tool_name)]
Label = Annotated[str, Field(min_length=1, max_length=64)]
Description = Annotated[str, Field(min_length=1, max_length=1024)]


@lru_cache(maxsize=1024)
def schema_problem(canonical: str) -> tuple[tuple[str | int, ...], str] | None:
    """Where and why a JSON Schema (given as canonical JSON text) is invalid, or ``None``.

    Cached: the same parameter and record schemas recur across many buddies.
    """
    import jsonschema  # only needed when a manifest has schemas to check

    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(canonical))
    except jsonschema.SchemaError as exc:
        return tuple(exc.path), exc.message
    return None


def canonical_json(value: Any) -> str:
    """Stable JSON text of ``value`` (a cache key)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _non_string_key(value: Any, where: str = "") -> tuple[str, Any] | None:
    """The first mapping key inside ``value`` that is not a string, and where it is.

    JSON has only string keys; YAML also has numbers and dates (``1:``, ``2026-01-05:``).
    """
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return where or "(root)", key
            found = _non_string_key(item, f"{where}/{key}" if where else key)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_string_key(item, f"{where}/{index}" if where else str(index))
            if found is not None:
                return found
    return None


def _check_object_schema(value: dict[str, Any]) -> dict[str, Any]:
    bad_key = _non_string_key(value)
    if bad_key is not None:
        raise PydanticCustomError(
            "tool-schema",
            "parameters is not a valid JSON Schema at {where}: the key `{key}` is not a string",
            {"where": bad_key[0], "key": str(bad_key[1]), "hint": "quote the key"},
        )
    problem = schema_problem(canonical_json(value))
    if problem is not None:
        where = "/".join(str(p) for p in problem[0]) or "(root)"
        raise PydanticCustomError(
            "tool-schema",
            "parameters is not a valid JSON Schema at {where}: {message}",
            {"where": where, "message": problem[1]},
        )
    if value.get("type") != "object":
        raise PydanticCustomError(
            "tool-schema", "parameters must be a JSON Schema with `type: object`"
        )
    return value


ParameterSchema = Annotated[dict[str, Any], AfterValidator(_check_object_schema)]


class CustomTool(Strict):
    """A tool whose body is a Python function in the buddy's plugins."""

    name: ToolName
    label: Label | None = Field(default=None, description="Shown to the user while it runs.")
    description: Description = Field(description="What the model reads to decide to call it.")
    parameters: ParameterSchema = Field(description="JSON Schema (type object) of the arguments.")
    handler: HandlerString = Field(
        description="`module:function` inside the project's `plugins/` or a `buddy.plugins` "
        "entry point; called as `(conversation, params)`, sync or async."
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, le=600, description="Per-call time limit for the body."
    )


class DeclarativeTool(Strict):
    """What every declarative tool has: a capability's ``Uses`` model extends it with its
    ``uses`` literal and its template fields (named in ``TEMPLATES``)."""

    TEMPLATES: ClassVar[tuple[str, ...]] = ()

    name: ToolName
    label: Label | None = None
    description: Description
    parameters: ParameterSchema | None = Field(
        default=None,
        description="Optional; derived from the templates' variables (strings) when omitted.",
    )
    reply: str | None = Field(
        default=None, min_length=1, description="Template of what the model sees on success."
    )


def _tool_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "platform-tool"
    if isinstance(value, dict):
        if ("uses" in value) == ("handler" in value):
            return None
        return "declarative-tool" if "uses" in value else "custom-tool"
    return None


PlatformToolName = Annotated[
    str,
    Field(json_schema_extra={"enum": list(PLATFORM_TOOL_NAMES)}),
    AfterValidator(_check_platform_tool),
]


def tool_item(declarative: tuple[type[DeclarativeTool], ...]) -> Any:
    """One entry of ``tools:``: a platform tool's name, a custom tool, or one of the
    ``declarative`` tool models (discriminated by their ``uses``)."""
    kinds: Any = (
        Annotated[PlatformToolName, Tag("platform-tool")]
        | Annotated[CustomTool, Tag("custom-tool")]
    )
    if declarative:
        union: Any = declarative[0] if len(declarative) == 1 else Union[declarative]  # noqa: UP007
        kinds = (
            kinds
            | Annotated[Annotated[union, Field(discriminator="uses")], Tag("declarative-tool")]
        )
    return Annotated[
        kinds,
        Discriminator(
            _tool_tag,
            custom_error_type="tool-kind",
            custom_error_message="a tool is a platform tool name, or a mapping with either "
            "`handler` (custom tool) or `uses` (declarative tool), not both",
        ),
    ]


#: One entry of ``tools:`` as the manifest's own keys know it (the composed model adds the
#: registered declarative kinds).
ToolItem = Annotated[
    Annotated[PlatformToolName, Tag("platform-tool")] | Annotated[CustomTool, Tag("custom-tool")],
    Discriminator(_tool_tag),
]

# ---------------------------------------------------------------- hooks


class DenyRule(Strict):
    """Refuse calls of the listed tools, in the turns `when` names."""

    deny: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    when: Literal["always", "proactive", "group", "private"] = "always"
    reason: str = Field(min_length=1, max_length=500, description="What the model is told.")


class HandlerRule(Strict):
    """Call a plugin function for each tool call (optionally only for `tools`)."""

    handler: HandlerString
    tools: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, min_length=1, description="Only these tools' calls reach the handler."
    )


def _before_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        if ("deny" in value) == ("handler" in value):
            return None
        return "deny-rule" if "deny" in value else "handler-rule"
    return "handler-rule"


def _after_tag(value: Any) -> str | None:
    if isinstance(value, dict) and ("deny" in value or "handler" not in value):
        return None
    return "handler-rule"


_HOOK_KIND = "a hook rule is `{deny: [tools], when, reason}` or `{handler: module:function}`"

BeforeRule = Annotated[
    Annotated[DenyRule, Tag("deny-rule")] | Annotated[HandlerRule, Tag("handler-rule")],
    Discriminator(_before_tag, custom_error_type="hook-kind", custom_error_message=_HOOK_KIND),
]
AfterRule = Annotated[
    Annotated[HandlerRule, Tag("handler-rule")],
    Discriminator(
        _after_tag,
        custom_error_type="hook-kind",
        custom_error_message="after_tool_call takes `{handler: module:function}` rules only; "
        "deny rules belong in before_tool_call",
    ),
]


class Hooks(Strict):
    """Rules run around every tool call."""

    before_tool_call: list[BeforeRule] = Field(default_factory=list)
    after_tool_call: list[AfterRule] = Field(default_factory=list)


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
