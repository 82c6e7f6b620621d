"""Character Card V3 decorators: the ``@@name value`` lines at the start of a lorebook
entry's content.

:func:`parse` splits them off (as SillyTavern's ``parseDecorators`` does: the lines that
start with ``@@`` before the first line that does not) and reads each into lore fields.
The ones with a meaning here become fields; the others are dropped with a warning:

| decorator | lore field |
|---|---|
| ``@@depth N`` | ``position: depth``, ``depth: N`` |
| ``@@role R`` | ``role`` |
| ``@@scan_depth N`` | ``scan`` |
| ``@@activate`` | ``always: true`` (it wins over ``@@dont_activate``) |
| ``@@dont_activate`` | ``enabled: false`` |
| ``@@additional_keys a,b`` | more ``keys`` (may repeat) |
| ``@@exclude_keys a,b`` | ``also`` with ``logic: not_any`` (when the entry has no ``also``) |
| ``@@activate_only_after N`` | ``delay: N`` |

A ``@@@`` line is a fallback for the decorator above it: it is read when that one is
unknown or dropped here, and skipped when that one is read. Of the same decorator only the
first counts (``@@additional_keys`` excepted), as the specification says. SillyTavern
itself acts only on ``@@activate`` and ``@@dont_activate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ACTED_ON", "IGNORED", "Decorators", "parse"]

#: The decorators that become lore fields.
ACTED_ON = (
    "depth",
    "role",
    "scan_depth",
    "activate",
    "dont_activate",
    "additional_keys",
    "exclude_keys",
    "activate_only_after",
)
#: The decorators of the specification that have no meaning here (dropped with a warning).
IGNORED = (
    "position",
    "activate_only_every",
    "keep_activate_after_match",
    "dont_activate_after_match",
    "is_greeting",
    "ignore_on_max_context",
    "instruct_depth",
    "reverse_depth",
    "reverse_instruct_depth",
    "instruct_scan_depth",
    "is_user_persona",
    "is_user_icon",
    "disable_ui_prompt",
)
_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True, slots=True)
class Decorators:
    """An entry's decorators, read.

    Attributes:
        lines: The decorator lines as written (fallbacks included), in order.
        content: The content after them (leading blank lines trimmed).
        fields: The lore fields they set.
        sources: For each line read into fields, the fields it set (for export: a line
            whose fields still hold is written back).
        warnings: One per decorator dropped, naming it.
    """

    lines: tuple[str, ...] = ()
    content: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    sources: tuple[tuple[str, tuple[str, ...]], ...] = ()
    warnings: tuple[str, ...] = ()


def _split(line: str) -> tuple[str, str]:
    name, _, value = line.lstrip("@").partition(" ")
    return name.strip(), value.strip()


def _number(value: str) -> int | None:
    try:
        return int(float(value))
    except ValueError:
        return None


def _words(value: str) -> list[str]:
    return [w.strip() for w in value.split(",") if w.strip()]


def _read(name: str, value: str, fields: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """Set the fields of ``@@name value``; ``(fields set, "")`` or ``((), why not)``."""
    number = _number(value)
    if name in ("depth", "scan_depth", "activate_only_after") and number is None:
        return (), f"its value {value!r} is not a number"
    if name == "depth":
        fields["position"], fields["depth"] = "depth", max(0, number or 0)
        return ("position", "depth"), ""
    if name == "scan_depth":
        fields["scan"] = number
        return ("scan",), ""
    if name == "activate_only_after":
        fields["delay"] = number
        return ("delay",), ""
    if name == "role":
        if value not in _ROLES:
            return (), f"its value {value!r} is not one of {', '.join(_ROLES)}"
        fields["role"] = value
        return ("role",), ""
    if name == "activate":
        fields["always"] = True
        return ("always",), ""
    if name == "dont_activate":
        fields["enabled"] = False
        return ("enabled",), ""
    words = _words(value)
    if not words:
        return (), "it names no keys"
    if name == "additional_keys":
        fields.setdefault("keys", []).extend(words)
        return ("keys",), ""
    fields["exclude"] = words  # exclude_keys: the caller decides (only without `also`)
    return ("exclude",), ""


def parse(content: str) -> Decorators:
    """``content``'s decorators, read into lore fields (see the module's table)."""
    if not content.startswith("@@"):
        return Decorators(content=content)
    lines = content.split("\n")
    header: list[str] = []
    for line in lines:
        if not line.startswith("@@"):
            break
        header.append(line)
    rest = "\n".join(lines[len(header) :]).lstrip("\n")
    fields: dict[str, Any] = {}
    sources: list[tuple[str, tuple[str, ...]]] = []
    warnings: list[str] = []
    seen: set[str] = set()
    fallback = False  # the line above was unknown or dropped: a @@@ line may stand in
    for line in header:
        is_fallback = line.startswith("@@@")
        if is_fallback and not fallback:
            continue
        name, value = _split(line)
        if name in seen and name != "additional_keys":
            warnings.append(f"`{line}` repeats @@{name}; only the first counts")
            fallback = False
            continue
        if name in ACTED_ON:
            done, why = _read(name, value, fields)
            if done:
                seen.add(name)
                sources.append((line, done))
                fallback = False
                continue
            warnings.append(f"`{line}` is dropped: {why}")
        elif name in IGNORED:
            warnings.append(f"`{line}` has no meaning here and is dropped")
        else:
            warnings.append(f"`{line}` is not a decorator this knows; dropped")
        fallback = True
    if fields.get("always") and "enabled" in fields:
        del fields["enabled"]  # @@activate wins over @@dont_activate
        sources = [(line, done) for line, done in sources if done != ("enabled",)]
    return Decorators(tuple(header), rest, fields, tuple(sources), tuple(warnings))
