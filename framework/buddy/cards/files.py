"""Reading cards from ``.json`` and ``.png`` files, and writing them.

In a PNG the card is the base64 of its UTF-8 JSON in a text chunk: ``ccv3`` for V3,
``chara`` for V2. When both are present ``ccv3`` wins (the V3 specification; the ``chara``
chunk is then a V2 copy for older applications).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buddy.cards.png import (
    TEXT_TYPES,
    Chunk,
    decode_text,
    encode_png,
    minimal_png,
    parse_png,
    replace_text_chunks,
    text_chunk,
)
from buddy.cards.spec import SPECS, Card, Version, convert, validate_card
from buddy.compile.project import not_regular
from buddy.errors import CardError, PngError

__all__ = [
    "CARD_KEYWORDS",
    "MAX_CARD_BYTES",
    "card_json",
    "card_png",
    "parse_card",
    "read_card",
    "strip_card_chunks",
]

CARD_KEYWORDS = ("ccv3", "chara")
"""The PNG text keywords that hold a card, in order of preference."""
MAX_CARD_BYTES = 64 * 1024 * 1024


def read_card(path: Path, shown: str | None = None) -> Card:
    """Read and validate the card in a ``.json`` or ``.png`` file.

    The format is recognised from the content (a PNG signature, else JSON); a ``.png``
    name that is not a PNG is an error.

    Args:
        path: The file.
        shown: How to name the file in messages (default: ``path`` as given).

    Raises:
        CardError: The file cannot be read, or does not hold a valid card.
    """
    file = shown if shown is not None else str(path)
    kind = not_regular(path)
    if kind is not None:  # never opened: a FIFO would block the reader forever
        raise CardError(file, [f"this file is {kind}, not a regular file"])
    try:
        size = path.stat().st_size
        if size > MAX_CARD_BYTES:
            raise CardError(file, [f"the file has {size} bytes; the limit is {MAX_CARD_BYTES}"])
        raw = path.read_bytes()
    except OSError as exc:
        raise CardError(file, [f"cannot read the file: {exc.strerror or exc}"]) from None
    return parse_card(raw, file, png=path.suffix.lower() in (".png", ".apng"))


def _sniff(raw: bytes) -> str:
    """What a file that is neither PNG nor JSON seems to be, for the message."""
    if raw.startswith(b"\xff\xd8\xff"):
        return "a JPEG image"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "a WebP image"
    if raw.startswith(b"PK\x03\x04"):
        return "a zip archive (a .charx card?)"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "a GIF image"
    return ""


def parse_card(raw: bytes, file: str, *, png: bool = False) -> Card:
    """The card in the bytes of a file.

    Args:
        raw: The file's content.
        file: Its name, for messages.
        png: The name says PNG: bytes without the PNG signature are an error, not JSON.

    Raises:
        CardError: Not a PNG or JSON card, or an invalid one.
    """
    if raw.startswith(b"\x89PNG"):
        return _from_png(raw, file)
    other = _sniff(raw)
    if png or other:
        why = f" (it looks like {other})" if other else ""
        raise CardError(
            file,
            [
                f"not a PNG file: it does not start with the PNG signature{why}; "
                "cards are .json files or PNG images"
            ],
        )
    return _from_json(raw, file, "")


def _decode_json(raw: bytes, file: str, where: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CardError(
            file, [f"{where}not UTF-8 text (byte {exc.start}): not a JSON card"]
        ) from None
    if not text.strip():
        raise CardError(file, [f"{where}empty: no card"])
    try:
        return json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise CardError(
            file, [f"{where}not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        ) from None
    except RecursionError:
        raise CardError(file, [f"{where}not valid JSON: nested too deeply"]) from None


def _from_json(raw: bytes, file: str, where: str, image: bytes | None = None) -> Card:
    card = _decode_json(raw, file, where)
    try:
        version, warnings = validate_card(card, file)
    except CardError as exc:
        if where:
            raise CardError(file, [where + p for p in exc.problems]) from None
        raise
    return Card(card, version, file, image, tuple(warnings))


def _chunk_payload(text: str, keyword: str, file: str) -> bytes:
    """The JSON bytes in a card chunk: base64 (the specifications), or plain JSON (some
    tools write that)."""
    where = f"the `{keyword}` chunk: "
    stripped = "".join(text.split())
    if stripped.startswith("{"):
        return text.encode("utf-8")
    try:
        return base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CardError(file, [f"{where}not valid base64 ({exc})"]) from None


def _from_png(raw: bytes, file: str) -> Card:
    try:
        chunks = parse_png(raw)
    except PngError as exc:
        raise CardError(file, [str(exc)]) from None
    found: dict[str, tuple[Chunk, str]] = {}
    others: list[str] = []
    for chunk in chunks:
        if chunk.type not in TEXT_TYPES:
            continue
        keyword = chunk.data.partition(b"\x00")[0].decode("latin-1")
        if keyword.lower() not in CARD_KEYWORDS:
            others.append(keyword)
            continue
        if keyword.lower() in found:
            continue  # the first of each keyword counts
        if not chunk.crc_ok:
            raise CardError(
                file,
                [
                    f"the `{keyword}` chunk at byte {chunk.offset} has a bad CRC: the file is corrupt"
                ],
            )
        try:
            _, text = decode_text(chunk)
        except PngError as exc:
            raise CardError(file, [str(exc)]) from None
        found[keyword.lower()] = (chunk, text)
    for keyword in CARD_KEYWORDS:
        if keyword in found:
            chunk, text = found[keyword]
            shown = chunk.data.partition(b"\x00")[0].decode("latin-1")
            payload = _chunk_payload(text, shown, file)
            image = encode_png(strip_card_chunks(chunks))
            card = _from_json(payload, file, f"the `{shown}` chunk: ", image)
            if keyword == "ccv3" and card.version != 3:
                card = Card(
                    card.raw,
                    card.version,
                    file,
                    image,
                    (*card.warnings, "the `ccv3` chunk holds a V2 card; read as V2"),
                )
            return card
    listed = f" (its text chunks: {', '.join(others)})" if others else " (it has no text chunks)"
    raise CardError(
        file, [f"no character card in this PNG: no `chara` or `ccv3` text chunk{listed}"]
    )


def strip_card_chunks(chunks: list[Chunk]) -> list[Chunk]:
    """``chunks`` without any ``chara``/``ccv3`` text chunk."""
    return replace_text_chunks(chunks, CARD_KEYWORDS)


def card_json(card: Mapping[str, Any]) -> str:
    """The card as a readable JSON file (UTF-8, two-space indent, key order kept)."""
    return json.dumps(card, ensure_ascii=False, indent=2) + "\n"


def _chunk_text(card: Mapping[str, Any]) -> str:
    compact = json.dumps(card, ensure_ascii=False, separators=(",", ":"))
    return base64.b64encode(compact.encode("utf-8")).decode("ascii")


def card_png(card: Mapping[str, Any], version: Version, image: bytes | None = None) -> bytes:
    """A PNG holding ``card``: ``image`` (or a 1×1 placeholder) with its card chunks replaced.

    A V2 card goes into a ``chara`` chunk. A V3 card goes into ``ccv3``, with a V2 copy in
    ``chara`` for applications that read only V2 (as the V3 specification allows).

    Args:
        card: The card object (already of ``version``).
        version: 2 or 3.
        image: A PNG to put the card in; other chunks, including other text, are kept.

    Raises:
        PngError: ``image`` is not a well-formed PNG.
    """
    chunks = parse_png(image if image is not None else minimal_png())
    add = [text_chunk("chara", _chunk_text(convert(card, 2) if version == 3 else card))]
    if version == 3:
        add.append(text_chunk("ccv3", _chunk_text(card)))
    if card.get("spec") != SPECS[version][0]:  # pragma: no cover - a caller's mistake
        raise ValueError(f"the card is not labelled as V{version}")
    return encode_png(replace_text_chunks(chunks, CARD_KEYWORDS, add))
