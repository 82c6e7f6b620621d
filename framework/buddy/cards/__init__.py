"""Character Card V2/V3 interchange: import a card as a buddy, export a buddy as a card.

Cards are JSON (``{"spec": "chara_card_v2" | "chara_card_v3", "spec_version", "data"}``),
or PNG images carrying that JSON, base64-encoded, in a ``chara`` (V2) or ``ccv3`` (V3)
text chunk. PNG chunks are read and written with the standard library.

Typical use::

    from buddy.cards import read_card, import_files, export_card, card_json

    card = read_card(Path("seraphina.png"))       # raises CardError
    files = import_files(card, "seraphina", target)  # buddy.yaml, card.json, card.png
    exported = export_card(target)                # raises ManifestError / CardError
    print(card_json(exported.card))

Standalone lorebooks (CCv3 ``lorebook_v3``, a bare ``character_book``, SillyTavern World
Info JSON): :func:`read_lorebook` and :func:`lorebook_file`; the lore book mapping is in
:mod:`buddy.cards.lore` (import) and :mod:`buddy.cards.lore_export` (export).

See ``docs/cards.md`` for the mapping between card fields and a buddy.
"""

from __future__ import annotations

from buddy.cards.files import card_json, card_png, parse_card, read_card
from buddy.cards.lorefile import Lorebook, lorebook_file, parse_lorebook, read_lorebook
from buddy.cards.mapping import (
    CARD_IMAGE,
    SIDECAR,
    Derived,
    Exported,
    derive,
    derive_lore,
    derive_name,
    export_card,
    import_files,
    manifest_text,
    slugify,
)
from buddy.cards.png import minimal_png
from buddy.cards.prompt import escape
from buddy.cards.spec import SPECS, Card, blank_card, convert, validate_card
from buddy.errors import CardError, PngError

__all__ = [
    "CARD_IMAGE",
    "SIDECAR",
    "SPECS",
    "Card",
    "CardError",
    "Derived",
    "Exported",
    "Lorebook",
    "PngError",
    "blank_card",
    "card_json",
    "card_png",
    "convert",
    "derive",
    "derive_lore",
    "derive_name",
    "escape",
    "export_card",
    "import_files",
    "lorebook_file",
    "manifest_text",
    "minimal_png",
    "parse_card",
    "parse_lorebook",
    "read_card",
    "read_lorebook",
    "slugify",
    "validate_card",
]
