"""A fact's slot values and their rules — what a relation spec file's slot and a compiled
one share. Standard library only: the runtime checks every extracted fact with it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "PARTIES",
    "TEXT_SLOT_CHARS",
    "NamedSlot",
    "SlotLike",
    "as_member",
    "member_of",
    "slot_value_problem",
]

#: The longest text a text slot may hold (characters); a slot's own ``max_chars`` is
#: at most this.
TEXT_SLOT_CHARS = 200

#: The values an extracted party slot may hold: the speaker (``user``), or the buddy. In a
#: group the layer stores the speaking member's id instead of ``user`` (:func:`as_member`).
PARTIES = ("user", "buddy")

_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")


class SlotLike(Protocol):
    """A slot's rules: a spec file's :class:`Slot` or a compiled one."""

    @property
    def type(self) -> str: ...

    @property
    def max_chars(self) -> int | None: ...

    @property
    def choices(self) -> Sequence[str] | None: ...


class NamedSlot(SlotLike, Protocol):
    """A compiled slot: its rules and its name."""

    @property
    def name(self) -> str: ...


class _Spec(Protocol):
    @property
    def slots(self) -> Iterable[NamedSlot]: ...


def member_of(spec: _Spec, slots: Mapping[str, Any]) -> str | None:
    """The group member a fact is about: the first party slot holding a member id
    (``None``: a private chat's fact, or one about no member)."""
    for slot in spec.slots:
        value = slots.get(slot.name)
        if slot.type == "party" and isinstance(value, str) and value not in PARTIES:
            return value
    return None


def as_member(spec: _Spec, slots: Mapping[str, Any], member: str) -> dict[str, Any]:
    """``slots`` with each party slot that says ``user`` (the speaker) holding ``member``,
    the speaking group member's id."""
    parties = {s.name for s in spec.slots if s.type == "party"}
    return {k: member if k in parties and v == "user" else v for k, v in slots.items()}


def slot_value_problem(slot: SlotLike, value: Any) -> str | None:
    """Why ``value`` cannot fill ``slot`` (``None``: it can)."""
    kind = slot.type
    if kind == "party":
        ok = value in PARTIES
        return None if ok else f"a party is `user` or `buddy`, not {value!r}"
    if kind == "boolean":
        return None if isinstance(value, bool) else f"expected true or false, not {value!r}"
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"expected a whole number, not {value!r}"
    if kind == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"expected a number, not {value!r}"
    if not isinstance(value, str) or not value:
        return f"expected a non-empty text, not {value!r}"
    if kind == "date" and not _DATE.match(value):
        return f"expected a date YYYY-MM-DD, not {value!r}"
    if kind == "choice" and slot.choices and value not in slot.choices:
        return f"{value!r} is not one of {', '.join(slot.choices or [])}"
    limit = slot.max_chars or TEXT_SLOT_CHARS
    if kind == "text" and len(value) > limit:
        return f"the text has {len(value)} characters; this slot holds at most {limit}"
    return None
