"""Card macros in lore text (``{{char}}``, ``{{random:…}}``, ``{{pick::…}}``, …), replaced
per turn: :func:`expand`, seeded by the turn's event id (``pick`` by the conversation id).

The replacing itself is :mod:`buddy.compile.macros` (standard library only), where the
persona templates of imported cards reach it too: the core never imports a capability.
"""

from __future__ import annotations

from buddy.compile.macros import Expander, expand

__all__ = ["Expander", "expand"]
