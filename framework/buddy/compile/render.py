"""The compiled view of a buddy: what a reviewer reads, byte-identical across runs.

Everything the model and the user will meet — model, full system prompt, tools with
schemas, hooks, subscriptions, data declaration, resources, widget types — as Markdown
(for people and pull-request diffs) or JSON (for tools). Paths are shown relative to the
project root so the view does not depend on where the repository is checked out.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from buddy.compile.blueprint import Blueprint, DenyHook, HandlerRef, ModelSpec
from buddy.compile.persona import EXAMPLE_NOW, find_project_root

__all__ = ["render_json", "render_markdown", "view"]


def _rel(path: Path | None, root: Path) -> str:
    if path is None:
        return ""
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
    return {"reference": ref.reference, "file": _rel(ref.file, root), "async": ref.is_async}


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
    subscriptions = []
    for s in b.proactive.subscriptions:
        trigger: dict[str, Any] = {"type": s.trigger.type}
        if s.trigger.dataset:
            trigger["dataset"] = s.trigger.dataset
        if s.trigger.at is not None:
            trigger["at"] = s.trigger.at.isoformat()
        if s.trigger.interval_minutes is not None:
            trigger["interval_minutes"] = s.trigger.interval_minutes
        subscriptions.append(
            {
                "key": s.key,
                "title": s.title,
                "reason": s.reason,
                "trigger": trigger,
                "quiet_hours": {
                    "start": s.quiet_hours.start,
                    "end": s.quiet_hours.end,
                    "timezone": s.quiet_hours.timezone,
                },
                "cooldown_minutes": s.cooldown_minutes,
                "daily_limit": s.daily_limit,
                "activate": s.activate,
            }
        )
    moment = now or EXAMPLE_NOW
    return {
        "buddy": {
            "name": b.name,
            "title": b.title,
            "description": b.description,
            "manifest": _rel(b.manifest, root),
        },
        "profile": b.profile,
        "model": _model(b.model),
        "conversation": {"kind": conversation, "now": moment.isoformat()},
        "system_prompt": b.persona.render(
            kind=conversation, conversation_id=f"example-{conversation}", now=moment
        ),
        "tools": tools,
        "hooks": {"before_tool_call": before, "after_tool_call": after},
        "proactive": {"prompt": b.proactive.prompt, "subscriptions": subscriptions},
        "data": {
            "origin": _rel(b.data.origin, root),
            "after_read": b.data.after_read,
            "requirements": [
                {
                    "id": r.id,
                    "purpose": r.purpose,
                    "title": r.title,
                    "source": r.source,
                    "schema_version": r.schema_version,
                }
                for r in b.data.requirements
            ],
        },
        "resources": [{"path": r.path, "size": r.size, "sha256": r.sha256} for r in b.resources],
        "widgets": [
            {
                "type": w.type,
                "title": w.title,
                "description": w.description,
                "file": _rel(w.file, root),
                "modules": [
                    {"name": m.name, "title": m.title, "record": m.record} for m in w.modules
                ],
            }
            for w in b.widgets
        ],
        "files": [_rel(f, root) for f in b.files],
    }


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


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{lang}\n{body}{ticks}\n"


def _json_block(data: Any) -> str:
    return _fence(json.dumps(data, ensure_ascii=False, indent=2), "json")


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
    out.append(_json_block(v["model"]))

    c = v["conversation"]
    out.append(f"## System prompt ({c['kind']} conversation, now = {c['now']})\n")
    out.append(_fence(v["system_prompt"], "text"))

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
        out.append(_fence(t["description"], "text"))
        out.append(_json_block(t["parameters"]))

    out.append("## Hooks\n")
    out.append(_json_block(v["hooks"]))

    out.append("## Proactive\n")
    out.append(_fence(v["proactive"]["prompt"], "text"))
    out.append(_json_block(v["proactive"]["subscriptions"]))

    out.append("## Data declaration\n")
    out.append(_json_block(v["data"]))

    out.append(f"## Resources ({len(v['resources'])})\n")
    if v["resources"]:
        out.append(
            "\n".join(
                f"- `{r['path']}` · {r['size']} bytes · sha256 {r['sha256'][:12]}"
                for r in v["resources"]
            )
            + "\n"
        )

    out.append(f"## Widget types ({len(v['widgets'])})\n")
    for w in v["widgets"]:
        out.append(f"### `{w['type']}` · {w['title']}\n")
        out.append(
            _json_block(
                {"description": w["description"], "file": w["file"], "modules": w["modules"]}
            )
        )

    out.append("## Files\n")
    out.append("\n".join(f"- `{f}`" for f in v["files"]) + "\n")
    return "\n".join(out)
