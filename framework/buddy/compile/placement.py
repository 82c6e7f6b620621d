"""The system prompt a turn sends, and where each declared part of it landed.

A capability's section gives persona templates a value under its key (``memory``,
``character``, ``lore``: ``Section.prompt``). A template *places* the part when its render
reads that value — ``{{ memory.card }}``, ``{% if character.quarrel %}``, a loop over
``lore.entries``, any read, in any included or extended template, in the branch this render
took. A part the render did not read goes into the system prompt anyway, at its section's
default place (``Section.placed``: its text, after what the template rendered, in registry
order; a part may put some of its text before the template's instead, as lore does for
an entry that goes before the persona), so nothing a manifest declares silently never
reaches the model. A section with no
default place that the template never reads lands **nowhere**: ``buddy validate`` reports it.

Reads are seen by handing the template each value as a :class:`Watched` mapping, so the
answer is the render's own: a block a child template overrides, a branch not taken for a
group, an ``{% include %}`` — each counts exactly as it ran.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from buddy.compile.persona import EXAMPLE_EVENT
from buddy.extend import resolve

if TYPE_CHECKING:
    from buddy.compile.persona import PersonaRenderer

__all__ = ["DEFAULT_PLACE", "Landing", "Watched", "landed", "system_prompt"]

#: Where a part the template does not place goes, in words (render, docs, the inspector).
DEFAULT_PLACE = "after the persona template's text"


class Watched(dict[str, Any]):
    """A template's value that remembers whether the render read any of it."""

    __slots__ = ("read",)

    def __init__(self, value: Mapping[str, Any]) -> None:
        super().__init__(value)
        self.read = False

    def __getitem__(self, key: str) -> Any:
        self.read = True
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read = True
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read = True
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self.read = True
        return super().__iter__()

    def __len__(self) -> int:
        self.read = True
        return super().__len__()

    def keys(self) -> Any:
        self.read = True
        return super().keys()

    def values(self) -> Any:
        self.read = True
        return super().values()

    def items(self) -> Any:
        self.read = True
        return super().items()

    def __repr__(self) -> str:
        self.read = True
        return super().__repr__()

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class Landing:
    """Where one declared part landed in a system prompt.

    Attributes:
        key: The section's key (``memory``, ``character``, ``lore``).
        where: ``template`` (the render read it), ``default`` (added at the section's
            default place) or ``nowhere`` (not read, and the section has no default place).
        text: What the default place added (``""``: placed by the template, or nothing
            to say this turn).
    """

    key: str
    where: Literal["template", "default", "nowhere"]
    text: str = ""


def system_prompt(
    persona: PersonaRenderer,
    placements: tuple[tuple[str, str], ...],
    layer: Mapping[str, Any],
    *,
    kind: str,
    conversation_id: str = "",
    now: datetime | None = None,
    event: str = EXAMPLE_EVENT,
) -> tuple[str, tuple[Landing, ...]]:
    """The persona rendered with ``layer`` (what templates see of the sections, by key),
    each part it did not read added at its default place (``placements``: ``(key,
    module:function)`` of ``Section.placed``); and where each part of ``layer`` landed.
    ``event``: the turn's event id, which seeds a card's macros.

    Raises:
        jinja2.TemplateError: The template failed.
    """
    watched = {
        key: Watched(value) if isinstance(value, Mapping) else value for key, value in layer.items()
    }
    text = persona.render(
        kind=kind, conversation_id=conversation_id, now=now, layer=watched, event=event
    )
    defaults = dict(placements)
    landings: list[Landing] = []
    for key, value in watched.items():
        if not isinstance(value, Watched) or value.read:
            landings.append(Landing(key, "template"))
        elif key not in defaults:
            landings.append(Landing(key, "nowhere"))
        else:
            said = resolve(defaults[key])(layer[key])
            before, after = (str(x) for x in said) if isinstance(said, tuple) else ("", str(said))
            landings.append(Landing(key, "default", "\n\n".join(x for x in (before, after) if x)))
            if before:  # a paragraph of its own, before the template's first line
                text = f"{before}\n\n{text.lstrip(chr(10))}"
            if after:  # a paragraph of its own, after the template's last line
                text = f"{text.rstrip(chr(10))}\n\n{after}"
    return text, tuple(landings)


def landed(landings: tuple[Landing, ...]) -> list[dict[str, Any]]:
    """``landings`` as JSON data: ``{"part", "where", "chars"}`` each."""
    return [{"part": x.key, "where": x.where, "chars": len(x.text)} for x in landings]
