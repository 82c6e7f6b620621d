"""A fact's slot values and their rules — what a relation spec file's slot and a compiled
one share. Standard library only: the runtime checks every extracted fact with it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["TEXT_SLOT_CHARS", "SlotLike", "slot_value_problem"]

#: The longest text a text slot may hold (characters); a slot's own ``max_chars`` is
#: at most this.
TEXT_SLOT_CHARS = 200

_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")


class SlotLike(Protocol):
    """A slot's rules: a spec file's :class:`Slot` or a compiled one."""

    @property
    def type(self) -> str: ...

    @property
    def max_chars(self) -> int | None: ...

    @property
    def choices(self) -> Sequence[str] | None: ...


def slot_value_problem(slot: SlotLike, value: Any) -> str | None:
    """Why ``value`` cannot fill ``slot`` (``None``: it can)."""
    kind = slot.type
    if kind == "party":
        ok = value in ("user", "buddy")
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
