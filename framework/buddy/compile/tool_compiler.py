"""The compile of ``tools:`` and ``hooks:``: platform, custom and declarative tools into
:class:`~buddy.compile.blueprint.ToolSpec`, hook rules into deny and handler hooks, each
checked against the buddy's tools and the registry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

import jinja2
from jinja2 import meta

from buddy.compile.blueprint import DenyHook, HandlerHook, ToolSpec
from buddy.compile.compilation import Compilation
from buddy.compile.platform_tools import platform_tools
from buddy.compile.sandbox import make_environment
from buddy.extend import declarative_uses, registry, resolve
from buddy.manifest.schema import (
    CustomTool,
    DeclarativeTool,
    DenyRule,
    HandlerRule,
    closest,
    did_you_mean,
)
from buddy.manifest.yamlio import YamlPath

__all__ = ["ToolCompiler"]


class ToolCompiler(Compilation):
    """The part of the compiler that compiles ``tools:`` and ``hooks:``."""

    # ------------------------------------------------------------ tools

    def tools(self, sections: dict[str, Any]) -> tuple[ToolSpec, ...]:
        platform_names = [t for t in self.manifest.tools if isinstance(t, str)]
        platform = platform_tools(platform_names, sections)
        seen: set[str] = set()
        out: list[ToolSpec] = []
        for index, item in enumerate(self.manifest.tools):
            path: YamlPath = ("tools", index)
            name = item if isinstance(item, str) else item.name
            name_path = path if isinstance(item, str) else (*path, "name")
            if name in seen:
                self.error(
                    name_path,
                    "tool-duplicate",
                    f"tool `{name}` is listed twice",
                    "tool names must be unique; remove or rename one",
                )
                continue
            seen.add(name)
            if isinstance(item, str):
                out.append(platform[item])
            elif isinstance(item, CustomTool):
                ref = self.handler(item.handler, "tool", (*path, "handler"))
                if ref is not None:
                    out.append(
                        ToolSpec(
                            name=item.name,
                            kind="custom",
                            description=item.description,
                            parameters=item.parameters,
                            label=item.label or "",
                            handler=ref,
                            timeout_seconds=item.timeout_seconds,
                        )
                    )
            else:
                spec = self.declarative(item, path)
                if spec is not None:
                    out.append(spec)
        return tuple(out)

    def declarative(self, item: DeclarativeTool, path: YamlPath) -> ToolSpec | None:
        use = next(u for u in declarative_uses() if u.name == getattr(item, "uses", None))
        fields = {f: getattr(item, f) for f in item.TEMPLATES if getattr(item, f, None) is not None}
        used: dict[str, frozenset[str]] = {}
        ok = True
        for field, text in fields.items():
            names = _template_names(text)
            if isinstance(names, str):
                self.error(
                    (*path, field), "tool-template", f"`{field}` is not a valid template: {names}"
                )
                ok = False
            else:
                used[field] = names
        if not ok:
            return None
        variables = sorted(set().union(*used.values())) if used else []
        if item.parameters is not None:
            parameters = item.parameters
            known = set(parameters.get("properties", {}))
            for field, names in used.items():
                for name in sorted(names - known):
                    self.error(
                        (*path, field),
                        "tool-template",
                        f"`{field}` uses `{name}`, which is not among the tool's parameters",
                        did_you_mean(name, sorted(known)) or "add it to `parameters.properties`",
                    )
                    ok = False
        else:
            schemas = resolve(use.schemas) if use.schemas else {}
            parameters = {
                "type": "object",
                "properties": {v: _derived_property(v, fields, schemas) for v in variables},
                "required": variables,
                "additionalProperties": False,
            }
        if not ok:
            return None
        templates = dict(fields)
        if "reply" not in templates and use.reply:
            templates["reply"] = use.reply
        return ToolSpec(
            name=item.name,
            kind="declarative",
            description=item.description,
            parameters=parameters,
            label=item.label or "",
            uses=use.name,
            templates=templates,
            execute=use.execute,
        )

    # ------------------------------------------------------------ hooks

    def hooks(
        self, tools: set[str] | None
    ) -> tuple[tuple[DenyHook | HandlerHook, ...], tuple[HandlerHook, ...]]:
        before: list[DenyHook | HandlerHook] = []
        after: list[HandlerHook] = []
        hooks = self.manifest.hooks
        for index, rule in enumerate(hooks.before_tool_call):
            path: YamlPath = ("hooks", "before_tool_call", index)
            if isinstance(rule, DenyRule):
                self.hook_targets(rule.deny, tools, (*path, "deny"))
                before.append(DenyHook(tuple(rule.deny), rule.when, rule.reason))
            else:
                hook = self.handler_hook(rule, "before", path, tools)
                if hook is not None:
                    before.append(hook)
        for index, rule in enumerate(hooks.after_tool_call):
            hook = self.handler_hook(rule, "after", ("hooks", "after_tool_call", index), tools)
            if hook is not None:
                after.append(hook)
        return tuple(before), tuple(after)

    def handler_hook(
        self, rule: HandlerRule, kind: str, path: YamlPath, tools: set[str] | None
    ) -> HandlerHook | None:
        if rule.tools:
            self.hook_targets(rule.tools, tools, (*path, "tools"))
        ref = self.handler(rule.handler, kind, (*path, "handler"))
        return HandlerHook(ref, tuple(rule.tools or ())) if ref is not None else None

    def hook_targets(self, names: list[str], tools: set[str] | None, path: YamlPath) -> None:
        if tools is None:  # the tool list itself is invalid: nothing to check against
            return
        for index, name in enumerate(names):
            if name in tools:
                continue
            if name in registry().tools:  # a real tool, just not this buddy's
                self.error(
                    (*path, index),
                    "hook-unknown-tool",
                    f"`{name}` is a platform tool this buddy does not list in `tools`",
                    f"add it to `tools` (`- {name}`), or remove it from this list",
                )
                continue
            platform = closest(name, registry().tool_names())
            self.error(
                (*path, index),
                "hook-unknown-tool",
                f"`{name}` is not one of this buddy's tools",
                did_you_mean(name, sorted(tools))
                or (f"did you mean `{platform}`? add it to `tools` too" if platform else "")
                or "list the tool under `tools` first",
            )


def _derived_property(
    name: str, fields: Mapping[str, str], schemas: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """A derived parameter's schema: the kind's own for a field whose template is exactly
    ``{{ name }}`` (a memory key), else a non-empty string."""
    for field, schema in schemas.items():
        template = fields.get(field)
        if template is not None and re.fullmatch(r"\{\{-?\s*" + name + r"\s*-?\}\}", template):
            return dict(schema)
    return {"type": "string", "minLength": 1}


@cache
def _template_parser() -> jinja2.Environment:
    """A sandboxed environment used only to parse declarative tool templates."""
    return make_environment([])


@lru_cache(maxsize=4096)
def _template_names(text: str) -> frozenset[str] | str:
    """The names a declarative tool's template uses, or why it is not a template.

    Cached: the same few templates (``{{ topic }}``) recur in tool after tool.
    """
    try:
        return frozenset(meta.find_undeclared_variables(_template_parser().parse(text)))
    except jinja2.TemplateSyntaxError as exc:
        return exc.message or "invalid template"
