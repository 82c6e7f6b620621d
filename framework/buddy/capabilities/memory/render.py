"""What ``buddy render`` shows of ``memory:``: the settings of automatic memory and every
relation spec with its policy resolved, so a review sees what a changed spec does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buddy.capabilities.memory.compile import SHIPPED
from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec
from buddy.compile.render import fence, json_block, relative

__all__ = ["markdown_memory", "render_memory"]


def _file(path: Path, root: Path) -> str:
    """A shipped spec as ``buddy:specs/<name>``, so the view does not depend on where the
    package is installed."""
    if path.is_relative_to(SHIPPED.resolve()):
        return f"buddy:specs/{path.name}"
    return relative(path, root)


def _relation(r: RelationSpec, root: Path) -> dict[str, Any]:
    slots = {}
    for s in r.slots:
        slot: dict[str, Any] = {"type": s.type, "required": s.required, "title": s.title}
        if s.max_chars is not None:
            slot["max_chars"] = s.max_chars
        if s.choices:
            slot["choices"] = list(s.choices)
        slots[s.name] = slot
    effect: dict[str, Any] = {"kind": r.effect}
    if r.effect == "delta":
        effect |= {"allow_negative": r.allow_negative, "conservation": r.conservation}
    return {
        "relation": r.name,
        "version": r.version,
        "title": r.title,
        "file": _file(r.file, root),
        "risk": r.risk,
        "slots": slots,
        "key": list(r.key),
        "value": r.value,
        "modalities": list(r.modalities),
        "writers": list(r.writers),
        "effect": effect,
        "admission": r.admission,
        "confirmation": r.confirmation,
        "conflict": r.conflict,
        "validity_seconds": r.validity_seconds,
        "examples": len(r.examples),
        "patterns": [p[0] for p in r.patterns],
        "note": r.note,
    }


def render_memory(memory: AutoMemory, root: Path) -> dict[str, Any]:
    """The ``memory`` part of the compiled view."""
    return {
        "origin": relative(memory.origin, root),
        "auto": memory.auto,
        "model": memory.model.ref if memory.model is not None else None,
        "card_chars": memory.card_chars,
        "budget_chars": memory.budget_chars,
        "wait_ms": memory.wait_ms,
        "asks": memory.asks,
        "share": {"entries": memory.share_entries, "bytes": memory.share_bytes},
        "relations": [_relation(r, root) for r in memory.relations],
    }


def markdown_memory(shown: dict[str, Any]) -> list[str]:
    """The settings as JSON, then each relation under its own heading with its note."""
    settings = {k: v for k, v in shown.items() if k != "relations"}
    out = [json_block(settings)]
    for r in shown["relations"]:
        out.append(f"### relation `{r['relation']}` v{r['version']} · {r['title']} · {r['risk']}\n")
        out.append(fence(r["note"], "text"))
        out.append(json_block({k: v for k, v in r.items() if k != "note"}))
    return out
