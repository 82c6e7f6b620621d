"""PNG chunks with the standard library: read text chunks, insert or replace them, and make
a minimal image.

A PNG file is an 8-byte signature followed by chunks, each ``length`` (4 bytes, big-endian),
``type`` (4 ASCII letters), ``data`` and a CRC-32 of type and data. Text lives in ``tEXt``
(Latin-1 ``keyword\\0text``), ``zTXt`` (``keyword\\0`` + method byte + zlib data) and
``iTXt`` (UTF-8, optionally zlib-compressed). Character cards use a ``tEXt`` chunk whose
keyword is ``chara`` (V2) or ``ccv3`` (V3); readers match keywords case-insensitively.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from buddy.errors import PngError

__all__ = [
    "MAX_TEXT_BYTES",
    "PNG_SIGNATURE",
    "Chunk",
    "PngError",
    "decode_text",
    "encode_png",
    "minimal_png",
    "parse_png",
    "replace_text_chunks",
    "text_chunk",
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TEXT_TYPES = (b"tEXt", b"zTXt", b"iTXt")
MAX_TEXT_BYTES = 16 * 1024 * 1024
"""The most a compressed text chunk may expand to (a guard against zip bombs)."""
_MAX_CHUNK = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Chunk:
    """One PNG chunk.

    Attributes:
        type: The 4-byte chunk type, e.g. ``b"tEXt"``.
        data: The chunk's data (without length, type and CRC).
        offset: Where the chunk starts in the file it was read from (0 for new chunks).
        crc_ok: Whether the stored CRC matched (always true for new chunks).
    """

    type: bytes
    data: bytes
    offset: int = 0
    crc_ok: bool = True

    @property
    def name(self) -> str:
        """The type as text, e.g. ``tEXt``."""
        return self.type.decode("latin-1")


def _crc(chunk_type: bytes, data: bytes) -> int:
    return zlib.crc32(data, zlib.crc32(chunk_type)) & 0xFFFFFFFF


def parse_png(raw: bytes) -> list[Chunk]:
    """The chunks of a PNG file, up to and including ``IEND``.

    CRCs are checked and recorded in :attr:`Chunk.crc_ok`; callers decide which chunks
    must be intact. Bytes after ``IEND`` are ignored.

    Raises:
        PngError: No PNG signature, a truncated chunk, a bad chunk type, no ``IHDR``
            first, or no ``IEND``.
    """
    if not raw.startswith(PNG_SIGNATURE):
        raise PngError("not a PNG file: it does not start with the PNG signature")
    chunks: list[Chunk] = []
    pos = len(PNG_SIGNATURE)
    while True:
        if pos + 8 > len(raw):
            if not chunks:
                raise PngError("truncated PNG: no chunks after the signature")
            raise PngError(f"truncated PNG: it ends at byte {len(raw)} without an IEND chunk")
        length, chunk_type = struct.unpack(">I4s", raw[pos : pos + 8])
        if not (chunk_type.isascii() and chunk_type.isalpha()):
            raise PngError(f"corrupt PNG: invalid chunk type {chunk_type!r} at byte {pos}")
        if length > _MAX_CHUNK:
            raise PngError(f"corrupt PNG: chunk {chunk_type.decode()} at byte {pos} is too long")
        end = pos + 12 + length
        if end > len(raw):
            raise PngError(
                f"truncated PNG: chunk {chunk_type.decode()} at byte {pos} needs {length} bytes "
                f"of data, the file has {max(len(raw) - pos - 8, 0)} left"
            )
        data = raw[pos + 8 : pos + 8 + length]
        (stored,) = struct.unpack(">I", raw[end - 4 : end])
        chunks.append(Chunk(chunk_type, data, pos, stored == _crc(chunk_type, data)))
        if len(chunks) == 1 and chunk_type != b"IHDR":
            raise PngError(f"corrupt PNG: the first chunk is {chunk_type.decode()}, not IHDR")
        pos = end
        if chunk_type == b"IEND":
            return chunks


def encode_png(chunks: Iterable[Chunk]) -> bytes:
    """A PNG file made of ``chunks`` (CRCs computed afresh)."""
    parts = [PNG_SIGNATURE]
    for chunk in chunks:
        parts.append(struct.pack(">I4s", len(chunk.data), chunk.type))
        parts.append(chunk.data)
        parts.append(struct.pack(">I", _crc(chunk.type, chunk.data)))
    return b"".join(parts)


def _inflate(data: bytes, what: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_TEXT_BYTES)
    except zlib.error as exc:
        raise PngError(f"{what}: the compressed text is corrupt ({exc})") from None
    if inflater.unconsumed_tail:
        raise PngError(f"{what}: the text expands to more than {MAX_TEXT_BYTES} bytes")
    return out


def decode_text(chunk: Chunk) -> tuple[str, str]:
    """``(keyword, text)`` of a ``tEXt``, ``zTXt`` or ``iTXt`` chunk.

    Raises:
        PngError: The chunk is malformed (no keyword separator, an unknown compression
            method, corrupt compressed data, text that is not UTF-8 in an ``iTXt``).
    """
    what = f"{chunk.name} chunk at byte {chunk.offset}"
    keyword_bytes, sep, rest = chunk.data.partition(b"\x00")
    if not sep or not keyword_bytes:
        raise PngError(f"{what}: no keyword")
    keyword = keyword_bytes.decode("latin-1")
    what = f"the `{keyword}` {chunk.name} chunk"
    if chunk.type == b"tEXt":
        return keyword, rest.decode("latin-1")
    if chunk.type == b"zTXt":
        if not rest or rest[0] != 0:
            raise PngError(f"{what}: unknown compression method")
        return keyword, _inflate(rest[1:], what).decode("latin-1")
    if chunk.type != b"iTXt":
        raise PngError(f"{what}: not a text chunk")
    if len(rest) < 2:
        raise PngError(f"{what}: truncated header")
    compressed, method = rest[0], rest[1]
    _language, sep1, rest = rest[2:].partition(b"\x00")
    _translated, sep2, text = rest.partition(b"\x00")
    if not (sep1 and sep2):
        raise PngError(f"{what}: truncated header")
    if compressed:
        if method != 0:
            raise PngError(f"{what}: unknown compression method")
        text = _inflate(text, what)
    try:
        return keyword, text.decode("utf-8")
    except UnicodeDecodeError:
        raise PngError(f"{what}: the text is not UTF-8") from None


def text_chunk(keyword: str, text: str) -> Chunk:
    """A ``tEXt`` chunk (both strings must be Latin-1; the keyword 1-79 characters).

    Raises:
        ValueError: A keyword that is empty, too long or holds a NUL, or text that is not
            Latin-1.
    """
    if not 1 <= len(keyword) <= 79 or "\x00" in keyword:
        raise ValueError(f"invalid PNG text keyword {keyword!r}")
    return Chunk(b"tEXt", keyword.encode("latin-1") + b"\x00" + text.encode("latin-1"))


def replace_text_chunks(
    chunks: Sequence[Chunk], remove: Iterable[str], add: Iterable[Chunk] = ()
) -> list[Chunk]:
    """``chunks`` without the text chunks whose keyword is in ``remove`` (case-insensitive),
    with ``add`` inserted just before ``IEND``.

    Text chunks that cannot be decoded are kept as they are.
    """
    dropped = {word.lower() for word in remove}
    kept: list[Chunk] = []
    for chunk in chunks:
        if chunk.type in TEXT_TYPES:
            keyword = chunk.data.partition(b"\x00")[0].decode("latin-1").lower()
            if keyword in dropped:
                continue
        kept.append(chunk)
    end = next((i for i, c in enumerate(kept) if c.type == b"IEND"), len(kept))
    return [*kept[:end], *add, *kept[end:]]


def minimal_png() -> bytes:
    """A valid 1×1 PNG: one transparent RGBA pixel."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 8-bit RGBA, no interlace
    pixels = zlib.compress(b"\x00" + b"\x00\x00\x00\x00")  # filter byte, then one pixel
    return encode_png([Chunk(b"IHDR", header), Chunk(b"IDAT", pixels), Chunk(b"IEND", b"")])
