"""The lore capability's bounds: one table, read by the book files' models, the scanner
and the docs. Standard library only: ``buddy validate`` imports it."""

from __future__ import annotations

__all__ = [
    "CONTENT_CHARS",
    "ENTRIES_MAX",
    "KEYS_MAX",
    "KEY_CHARS",
    "ORDER_DEFAULT",
    "PATTERN_CHARS",
    "PROMPT_CHARS",
    "SCAN_MESSAGES",
    "SCAN_TEXT_CHARS",
    "TURNS_MAX",
]

#: Entries of all books of one buddy together.
ENTRIES_MAX = 500
#: One entry's content (characters): a paragraph of background, not a chapter.
CONTENT_CHARS = 2000
#: Keys (words and patterns together) of one entry, and one key's length.
KEYS_MAX = 32
KEY_CHARS = 100
#: A pattern is matched against untrusted messages: kept short and readable.
PATTERN_CHARS = 300
#: How many recent messages a book scans (default, least, most).
SCAN_MESSAGES = (4, 1, 20)
#: The most of each message scanned (characters): bounds the cost of every pattern.
SCAN_TEXT_CHARS = 2000
#: Sticky and cooldown, in turns, at most.
TURNS_MAX = 50
#: What lore adds to one prompt at most (characters).
PROMPT_CHARS = 2000
#: An entry's order when none is given (lower goes first into the prompt).
ORDER_DEFAULT = 100
