"""The compiled view of a buddy: what a reviewer reads, byte-identical across runs.

Everything the model and the user will meet — model, full system prompt, tools with
schemas, hooks, each capability's manifest section (its ``Section.render``, in registry
order: proactive subscriptions, data declaration, resources, widget types …) — as
Markdown (for people and pull-request diffs) or JSON (for tools). Paths are shown relative to the
project root so the view does not depend on where the repository is checked out.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from buddy.compile.blueprint import Blueprint, DenyHook, HandlerRef, ModelSpec
from buddy.compile.persona import BUILT_IN_PACK, EXAMPLE_NOW, find_project_root
from buddy.compile.placement import DEFAULT_PLACE, landed, system_prompt
from buddy.extend import persona_layer, resolve, sections

__all__ = ["fence", "json_block", "relative", "render_json", "render_markdown", "view"]


def relative(path: Path | None, root: Path) -> str:
    """``path`` relative to the project ``root`` (``/``-separated), as the view shows it; a
    file of the shared templates buddy ships as ``buddy:personas/<name>``, wherever the
    package is installed."""
    if path is None:
        return ""
    if path.resolve().is_relative_to(BUILT_IN_PACK):
        return f"buddy:personas/{path.resolve().relative_to(BUILT_IN_PACK).as_posix()}"
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _model(spec: ModelSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"ref": spec.ref, "api": spec.api}
    if spec.base_url:
        out["base_url"] = spec.base_url
    if spec.api_key_env:
        out["api_key_env"] = spec.api_key_env
    for name in ("temperature", "max_tokens", "top_p"):
        value = getattr(spec, name)
        if value is not None:
            out[name] = value
    if spec.thinking is not None:
        out["thinking"] = {
            key: value
            for key, value in (
                ("enabled", spec.thinking.enabled),
                ("budget_tokens", spec.thinking.budget_tokens),
                ("effort", spec.thinking.effort),
            )
            if value is not None
        }
    if spec.fallbacks:
        out["fallbacks"] = [_model(f) for f in spec.fallbacks]
    return out


def _handler(ref: HandlerRef, root: Path) -> dict[str, Any]:
    return {"reference": ref.reference, "file": relative(ref.file, root), "async": ref.is_async}


def _origin(b: Blueprint) -> str:
    """Which choice produced the model shown, in words."""
    own = dict(b.profiles).get(b.profile, b.manifest_model) if b.profile else b.manifest_model
    if b.model_origin == "override":
        whose = f"the profile `{b.profile}`'s" if b.profile else "the manifest's"
        return f"`--model` / `BUDDY_MODEL`, over {whose} `{own}`"
    if b.model_origin == "profile":
        return f"the profile `{b.profile}`, over the manifest's `{b.manifest_model}`"
    return "the manifest"


def view(
    blueprint: Blueprint, *, conversation: str = "private", now: datetime | None = None
) -> dict[str, Any]:
    """The compiled view as plain data (the JSON rendering's content)."""
    root = find_project_root(blueprint.directory)
    b = blueprint
    tools = []
    for t in b.tools:
        tool: dict[str, Any] = {"name": t.name, "kind": t.kind}
        if t.label:
            tool["label"] = t.label
        tool["description"] = t.description
        tool["parameters"] = t.parameters
        if t.handler is not None:
            tool["handler"] = _handler(t.handler, root)
        if t.uses is not None:
            tool["uses"] = t.uses
            tool["templates"] = dict(t.templates)
        if t.timeout_seconds is not None:
            tool["timeout_seconds"] = t.timeout_seconds
        if t.ends_turn:
            tool["ends_turn"] = True
        tools.append(tool)
    before = [
        {"deny": list(h.tools), "when": h.when, "reason": h.reason}
        if isinstance(h, DenyHook)
        else {"handler": _handler(h.handler, root), "tools": list(h.tools)}
        for h in b.before_hooks
    ]
    after = [{"handler": _handler(h.handler, root), "tools": list(h.tools)} for h in b.after_hooks]
    moment = now or EXAMPLE_NOW
    prompt, landings = system_prompt(
        b.persona,
        b.placements,
        persona_layer(b, example=True),
        kind=conversation,
        conversation_id=f"example-{conversation}",
        now=moment,
    )
    shown: dict[str, Any] = {
        "buddy": {
            "name": b.name,
            "title": b.title,
            "description": b.description,
            "manifest": relative(b.manifest, root),
        },
        "profile": b.profile,
        "model": _model(b.model),
        "model_origin": _origin(b),
        "profiles": dict(b.profiles),
        "conversation": {"kind": conversation, "now": moment.isoformat()},
        "system_prompt": prompt,
        "tools": tools,
        "hooks": {"before_tool_call": before, "after_tool_call": after},
    }
    if landings:  # where each declared part landed, with its example value
        shown["prompt_parts"] = landed(landings)
    for section in sections():  # each capability's part, in registry order
        if section.key in b.sections:
            shown[section.key] = resolve(section.render)(b.sections[section.key], root)
    # Sorted as shown: the shipped templates' place on disk depends on the installation.
    return shown | {"files": sorted(relative(f, root) for f in b.files)}


def render_json(
    blueprint: Blueprint, *, conversation: str = "private", now: datetime | None = None
) -> str:
    """The compiled view as indented JSON (stable key order, UTF-8 text)."""
    return (
        json.dumps(
            view(blueprint, conversation=conversation, now=now), ensure_ascii=False, indent=2
        )
        + "\n"
    )


def fence(text: str, lang: str = "") -> str:
    """``text`` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{lang}\n{body}{ticks}\n"


def json_block(data: Any) -> str:
    """``data`` as an indented JSON code block."""
    return fence(json.dumps(data, ensure_ascii=False, indent=2), "json")


_WHERE = {
    "template": "placed by the template",
    "default": f"not placed by the template: added {DEFAULT_PLACE}",
    "nowhere": "placed nowhere: the template never uses it and it has no default place",
}


def _parts_markdown(parts: list[dict[str, Any]]) -> str:
    """Where each declared part landed, and that its values above are examples."""
    names = ", ".join(f"`{p['part']}`" for p in parts)
    lines = [
        f"The values of {names} in this prompt are **examples**, made up for this view; a"
        " conversation starts with what a new one knows, and they change as it goes.\n",
    ]
    for p in parts:
        said = f" ({p['chars']} characters)" if p["where"] == "default" and p["chars"] else ""
        lines.append(f"- `{p['part']}`: {_WHERE[p['where']]}{said}")
    return "\n".join(lines) + "\n"


def render_markdown(
    blueprint: Blueprint, *, conversation: str = "private", now: datetime | None = None
) -> str:
    """The compiled view as Markdown, for people and for pull-request diffs."""
    v = view(blueprint, conversation=conversation, now=now)
    b = v["buddy"]
    out: list[str] = [f"# {b['title']} (`{b['name']}`)\n"]
    if b["description"]:
        out.append(f"{b['description']}\n")
    out.append(
        f"Manifest: `{b['manifest']}`"
        + (f" · profile `{v['profile']}`" if v["profile"] else "")
        + "\n"
    )

    out.append("## Model\n")
    out.append(f"From {v['model_origin']}.\n")
    out.append(json_block(v["model"]))
    if v["profiles"]:
        out.append(f"## Profiles ({len(v['profiles'])})\n")
        out.append("\n".join(f"- `{n}`: `{ref}`" for n, ref in v["profiles"].items()) + "\n")

    c = v["conversation"]
    out.append(f"## System prompt ({c['kind']} conversation, now = {c['now']})\n")
    out.append(fence(v["system_prompt"], "text"))
    if "prompt_parts" in v:
        out.append(_parts_markdown(v["prompt_parts"]))

    out.append(f"## Tools ({len(v['tools'])})\n")
    for t in v["tools"]:
        out.append(
            f"### `{t['name']}` · {t['kind']}"
            + (f" · {t['label']}" if t.get("label") else "")
            + "\n"
        )
        facts = []
        if "handler" in t:
            h = t["handler"]
            facts.append(
                f"- handler: `{h['reference']}` ({h['file']}{', async' if h['async'] else ''})"
            )
        if "uses" in t:
            facts.append(f"- uses: `{t['uses']}`")
            facts.extend(f"- {k}: `{val}`" for k, val in t["templates"].items())
        if t.get("ends_turn"):
            facts.append("- ends the turn")
        if "timeout_seconds" in t:
            facts.append(f"- timeout: {t['timeout_seconds']} s")
        if facts:
            out.append("\n".join(facts) + "\n")
        out.append(fence(t["description"], "text"))
        out.append(json_block(t["parameters"]))

    out.append("## Hooks\n")
    out.append(json_block(v["hooks"]))

    for section in sections():
        if section.key in v:
            part = v[section.key]
            count = str(len(part)) if isinstance(part, list | dict) else ""
            out.append(f"## {section.heading.replace('{count}', count)}\n")
            if section.markdown:
                out.extend(resolve(section.markdown)(part))
            else:
                out.append(json_block(part))

    out.append("## Files\n")
    out.append("\n".join(f"- `{f}`" for f in v["files"]) + "\n")
    return "\n".join(out)
