"""The models of ``tools:`` and ``hooks:``: platform tools by name, custom tools (a plugin
handler), what every declarative tool has, and the hook rules — with the checks each
value needs on its own (a handler's form, a parameter schema's validity)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import AfterValidator, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from buddy.compile.memo import MISSING, keep, recall
from buddy.extend import registry
from buddy.manifest.fields import HANDLER_PATTERN, TOOL_NAME_PATTERN, Strict
from buddy.manifest.suggest import choices

__all__ = [
    "PLATFORM_TOOL_NAMES",
    "CustomTool",
    "DeclarativeTool",
    "DenyRule",
    "HandlerRule",
    "Hooks",
    "ToolItem",
    "canonical_json",
    "schema_problem",
    "tool_item",
]

_HANDLER_RE = re.compile(HANDLER_PATTERN)

#: Every platform tool a manifest may list by name: the registered capabilities' tools.
PLATFORM_TOOL_NAMES: tuple[str, ...] = registry().tool_names()


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

    Cached: the same parameter and record schemas recur across many buddies; and kept
    for the next compile of the manifest (:mod:`buddy.compile.memo`), which then need
    not import jsonschema for the schemas it has checked before.
    """
    kept = recall("schema", canonical)
    if kept is not MISSING:
        return kept  # type: ignore[no-any-return]
    import jsonschema  # only needed when a manifest has schemas to check

    found: tuple[tuple[str | int, ...], str] | None = None
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(canonical))
    except jsonschema.SchemaError as exc:
        found = tuple(exc.path), exc.message
    keep("schema", canonical, found)
    return found


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
