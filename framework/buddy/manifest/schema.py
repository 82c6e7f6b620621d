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
import zoneinfo
from datetime import datetime
from functools import cache, lru_cache
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from buddy.capabilities import registry
from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES
from buddy.models.providers import BASE_URL_PATTERN, PROVIDERS, infer_provider, split_ref
from buddy.platform.limits import (
    DECLARATION_REQUIREMENTS_MAX,
    PURPOSE_CHARS,
    SUBSCRIPTION_KEY_PATTERN,
)

__all__ = [
    "HANDLER_PATTERN",
    "PLATFORM_TOOL_NAMES",
    "SLUG_PATTERN",
    "CustomTool",
    "DataSection",
    "DataUpdatedTrigger",
    "DenyRule",
    "EventTrigger",
    "HandlerRule",
    "Hooks",
    "Manifest",
    "MemoryDeleteTool",
    "MemoryListTool",
    "MemoryWriteTool",
    "ModelOptions",
    "Persona",
    "Proactive",
    "Profile",
    "QuietHours",
    "Requirement",
    "ScheduleTrigger",
    "Subscription",
    "ThinkingOptions",
    "did_you_mean",
]

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
HANDLER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
_HANDLER_RE = re.compile(HANDLER_PATTERN)
_TIME_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")

#: Every platform tool a manifest may list by name: the registered capabilities' tools.
PLATFORM_TOOL_NAMES: tuple[str, ...] = registry().tool_names()

DEFAULT_QUIET_START = "22:30"
DEFAULT_QUIET_END = "08:00"
DEFAULT_TIMEZONE = "Asia/Shanghai"


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
        "unknown-dataset",
        "time-format",
        "timezone",
        "datetime-offset",
    }
)


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """``"did you mean `x`?"`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""


def _choices(word: str, choices: list[str] | tuple[str, ...]) -> str:
    return did_you_mean(word, choices) or f"known: {', '.join(choices)}"


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


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
                {"provider": provider, "hint": _choices(provider, tuple(PROVIDERS))},
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


class ThinkingOptions(_Strict):
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


class _ModelOptionsBase(_Strict):
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
                {"provider": value, "hint": _choices(value, tuple(PROVIDERS))},
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


class Persona(_Strict):
    """Who the buddy is: a shared template or an inline prompt, plus traits and vars."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        json_schema_extra={"oneOf": [{"required": ["template"]}, {"required": ["prompt"]}]},
    )

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
            {"name": value, "hint": _choices(value, names)},
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


class CustomTool(_Strict):
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


class _DeclarativeTool(_Strict):
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


class MemoryWriteTool(_DeclarativeTool):
    """A tool that writes one memory entry: `key` and `text` are templates."""

    uses: Literal["memory.write"]
    key: str = Field(min_length=1, description="Template of the memory key.")
    text: str = Field(min_length=1, description="Template of the memory text.")


class MemoryDeleteTool(_DeclarativeTool):
    """A tool that deletes one memory entry: `key` is a template."""

    uses: Literal["memory.delete"]
    key: str = Field(min_length=1, description="Template of the memory key.")


class MemoryListTool(_DeclarativeTool):
    """A tool that lists memory entries, optionally under a key prefix."""

    uses: Literal["memory.list"]
    prefix: str | None = Field(default=None, description="Template of a key prefix to filter on.")


DeclarativeTool = Annotated[
    MemoryWriteTool | MemoryDeleteTool | MemoryListTool,
    Field(discriminator="uses"),
]
DECLARATIVE_USES = ("memory.write", "memory.delete", "memory.list")


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

ToolItem = Annotated[
    Annotated[PlatformToolName, Tag("platform-tool")]
    | Annotated[CustomTool, Tag("custom-tool")]
    | Annotated[DeclarativeTool, Tag("declarative-tool")],
    Discriminator(
        _tool_tag,
        custom_error_type="tool-kind",
        custom_error_message="a tool is a platform tool name, or a mapping with either "
        "`handler` (custom tool) or `uses` (declarative tool), not both",
    ),
]

# ---------------------------------------------------------------- hooks


class DenyRule(_Strict):
    """Refuse calls of the listed tools, in the turns `when` names."""

    deny: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    when: Literal["always", "proactive", "group", "private"] = "always"
    reason: str = Field(min_length=1, max_length=500, description="What the model is told.")


class HandlerRule(_Strict):
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


class Hooks(_Strict):
    """Rules run around every tool call."""

    before_tool_call: list[BeforeRule] = Field(default_factory=list)
    after_tool_call: list[AfterRule] = Field(default_factory=list)


# ---------------------------------------------------------------- data


def _check_dataset(value: str) -> str:
    if value not in DATA_ACCESS_CAPABILITIES:
        raise PydanticCustomError(
            "unknown-dataset",
            "`{id}` is not in the capability catalogue",
            {"id": value, "hint": _choices(value, tuple(DATA_ACCESS_CAPABILITIES))},
        )
    return value


DatasetId = Annotated[
    str,
    Field(json_schema_extra={"enum": list(DATA_ACCESS_CAPABILITIES)}),
    AfterValidator(_check_dataset),
]


class Requirement(_Strict):
    """One dataset the buddy needs, and why (the user reads `purpose`)."""

    id: DatasetId
    purpose: str = Field(min_length=1, max_length=PURPOSE_CHARS)


class DataSection(_Strict):
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


# ---------------------------------------------------------------- proactive


def _check_time(value: str) -> str:
    if not _TIME_RE.match(value):
        raise PydanticCustomError(
            "time-format", "`{value}` is not a time of day `HH:MM` (00:00–23:59)", {"value": value}
        )
    return value


@cache
def _timezones() -> frozenset[str]:
    # `available_timezones` lists IANA keys only (no `localtime`, no file paths); the
    # tzdata package guarantees the same list on every machine.
    return frozenset(zoneinfo.available_timezones())


def _check_timezone(value: str) -> str:
    if value not in _timezones():
        raise PydanticCustomError(
            "timezone",
            "`{value}` is not an IANA timezone such as Asia/Shanghai",
            {"value": value, "hint": did_you_mean(value, sorted(_timezones()))},
        )
    return value


def _check_offset(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise PydanticCustomError(
            "datetime-offset",
            "`at` needs a UTC offset, e.g. 2026-12-07T20:00:00+08:00",
        )
    return value


TimeOfDay = Annotated[
    str, Field(json_schema_extra={"pattern": _TIME_RE.pattern}), AfterValidator(_check_time)
]


class QuietHours(_Strict):
    """No proactive message between `start` and `end` (local time of `timezone`)."""

    start: TimeOfDay = DEFAULT_QUIET_START
    end: TimeOfDay = DEFAULT_QUIET_END
    timezone: Annotated[str, AfterValidator(_check_timezone)] = DEFAULT_TIMEZONE


class EventTrigger(_Strict):
    """A platform event: a finished workout or a new night's sleep."""

    type: Literal["workout.completed", "sleep.ready"]


class DataUpdatedTrigger(_Strict):
    """New data arrived, optionally only for one dataset."""

    type: Literal["data.updated"]
    dataset: DatasetId | None = None


class ScheduleTrigger(_Strict):
    """A time, repeated every `interval_minutes` (fixed interval, no DST adjustment)."""

    type: Literal["schedule"]
    at: Annotated[datetime, Field(strict=False), AfterValidator(_check_offset)] = Field(
        description="ISO-8601 date-time with an offset."
    )
    interval_minutes: int | None = Field(default=None, ge=60, le=525600)


TriggerMapping = Annotated[
    EventTrigger | DataUpdatedTrigger | ScheduleTrigger, Field(discriminator="type")
]


def _trigger_tag(value: Any) -> str:
    return "trigger-mapping" if isinstance(value, dict) else "event-name"


Trigger = Annotated[
    Annotated[Literal["workout.completed", "sleep.ready"], Tag("event-name")]
    | Annotated[TriggerMapping, Tag("trigger-mapping")],
    Discriminator(_trigger_tag),
]


class Subscription(_Strict):
    """A proactive subscription, created by stable `key`."""

    key: str = Field(pattern=SUBSCRIPTION_KEY_PATTERN)
    title: str = Field(min_length=1, max_length=100)
    reason: str = Field(min_length=1, max_length=500)
    trigger: Trigger
    quiet_hours: QuietHours | None = None
    cooldown_minutes: int = Field(default=120, ge=0, le=10080)
    daily_limit: int = Field(default=3, ge=1, le=20)
    activate: Literal["on_first_message", "manual"] = Field(
        default="on_first_message",
        description="`on_first_message`: created when a private conversation is first built; "
        "`manual`: a template that code or the model subscribes by key.",
    )


class Proactive(_Strict):
    """Proactive turns: what the model is told in them, and the subscriptions."""

    prompt: str | None = Field(default=None, min_length=1, max_length=4000)
    subscriptions: list[Subscription] = Field(default_factory=list, max_length=20)


# ---------------------------------------------------------------- manifest


class Profile(_Strict):
    """Per-environment choices, selected with `--profile` or `BUDDY_PROFILE`."""

    model: ModelRef


class Manifest(_Strict):
    """A buddy: `buddy.yaml`."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        title="buddy.yaml",
        json_schema_extra={"$id": "https://buddy.dev/schema/buddy.schema.json"},
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
    model: ModelRef
    persona: Persona
    tools: list[ToolItem] = Field(default_factory=list)
    hooks: Hooks = Field(default_factory=Hooks)
    data: DataSection | None = None
    proactive: Proactive = Field(default_factory=Proactive)
    resources: str = Field(default="resources", min_length=1)
    widgets: str = Field(default="widgets", min_length=1)
    profiles: dict[Annotated[str, Field(pattern=SLUG_PATTERN)], Profile] = Field(
        default_factory=dict,
        description="Per-environment model choices, selected with --profile or BUDDY_PROFILE.",
    )


# ---------------------------------------------------------------- widget type files

WIDGET_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class WidgetModuleFile(_Strict):
    """One module of a widget type: a title and the JSON Schema of one record."""

    title: str | None = Field(default=None, min_length=1, max_length=100)
    record: dict[str, Any] = Field(description="JSON Schema of one record (type object).")


class WidgetSchemaFile(_Strict):
    """``widgets/<type>/schema.json``: a widget type (the directory name is its id)."""

    title: str = Field(min_length=1, max_length=100)
    description: str | None = Field(default=None, min_length=1, max_length=1000)
    modules: dict[Annotated[str, Field(pattern=WIDGET_ID_PATTERN)], WidgetModuleFile] = Field(
        min_length=1
    )
