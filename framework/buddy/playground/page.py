"""What the playground page reads of a session's buddy: its status, problems and tools,
its dev token, each capability's panel data, and the running version's compiled view
(:meth:`buddy.playground.session.DevSession.state`)."""

from __future__ import annotations

from typing import Any

from buddy.compile.blueprint import Blueprint
from buddy.compile.render import view
from buddy.extend import panels
from buddy.playground.buddies import DevBuddy
from buddy.playground.watch import shown

__all__ = ["compiled_view", "describe"]


def describe(dev: DevBuddy, tokens: dict[str, dict[str, str]]) -> dict[str, Any]:
    """What the page shows of ``dev``; ``tokens`` are the session's, by buddy name."""
    bp = dev.blueprint
    info: dict[str, Any] = {
        "key": dev.key,
        "manifest": shown(dev.manifest),
        "status": dev.status,
        "running": dev.server is not None,
        "generation": dev.generation,
        "loaded_at": dev.loaded_at,
        "checked_at": dev.checked_at,
        "changed": dev.changed,
        "problems": [{**i.to_dict(), "file": shown(i.file), "text": str(i)} for i in dev.problems],
        "error": dev.error,
        "name": bp.name if bp else None,
        "identity": dev.identity,
    }
    if bp is None:
        return {**info, "title": dev.key}
    return {
        **info,
        "title": bp.title,
        "description": bp.description,
        "model": dev.model or bp.model.ref,
        "dev_token": tokens.get(bp.name, {}).get("dev_token"),
        "tools": [
            {
                "name": t.name,
                "label": t.label,
                "kind": str(t.kind),
                "parameters": dict(t.parameters),
                "reads_data": t.reads_data,
            }
            for t in bp.tools
        ],
        "files": sorted(shown(f) for f in bp.files),
        "compiled": compiled_view(dev, bp),
        **panels(bp),  # each capability's panel data: widget types, subscriptions …
    }


def compiled_view(dev: DevBuddy, bp: Blueprint) -> dict[str, Any]:
    """What ``buddy render`` shows of the running version: the system prompt of each
    conversation kind, the hooks, the proactive section (made once per version: the
    page asks for the state every second)."""
    if dev.compiled is not None and dev.compiled[0] is bp:
        return dev.compiled[1]
    try:
        private = view(bp, conversation="private")
        group = view(bp, conversation="group")
    except Exception as exc:  # a persona that fails to render must not break the page
        shown_view: dict[str, Any] = {"error": f"the compiled view failed: {exc}"}
    else:
        shown_view = {
            "now": private["conversation"]["now"],
            "system_prompt": {
                "private": private["system_prompt"],
                "group": group["system_prompt"],
            },
            "hooks": private["hooks"],
            "proactive": private.get("proactive"),
        }
    dev.compiled = (bp, shown_view)
    return shown_view
