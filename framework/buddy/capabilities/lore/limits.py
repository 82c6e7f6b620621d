"""The lore capability's bounds: one table, read by the book files' models, the scanner
and the docs. Standard library only: ``buddy validate`` imports it."""

from __future__ import annotations

__all__ = [
    "CONTENT_CHARS",
    "DELAY_MAX",
    "DEPTH_DEFAULT",
    "DEPTH_MAX",
    "ENTRIES_MAX",
    "GROUPS_MAX",
    "GROUP_CHARS",
    "GROUP_WEIGHT",
    "KEYS_MAX",
    "KEY_CHARS",
    "ORDER_DEFAULT",
    "ORDER_RANGE",
    "PATTERN_CHARS",
    "PROBABILITY_MAX",
    "PROMPT_CHARS",
    "RECENT_MESSAGES",
    "RECURSION_MAX",
    "SCAN_MESSAGES",
    "SCAN_TEXT_CHARS",
    "TOKEN_BUDGET_MAX",
    "TURNS_MAX",
]

#: Entries of all books of one buddy together.
ENTRIES_MAX = 500
#: One entry's content (characters): a few paragraphs of background, not a chapter — as
#: much as the companion layer's largest budget (``memory.budget.max_chars``), so an entry
#: of a SillyTavern book, which has no such bound, imports and can fit.
CONTENT_CHARS = 8000
#: Keys (words and patterns together) of one entry, and one key's length.
KEYS_MAX = 32
KEY_CHARS = 100
#: A pattern is matched against untrusted messages: kept short and readable.
PATTERN_CHARS = 300
#: How many recent messages a book (or an entry) scans (default, least, most).
SCAN_MESSAGES = (4, 1, 20)
#: The messages a conversation keeps for lore to scan: the last ``SCAN_MESSAGES`` most of
#: the user's, and at most this many of both sides together.
RECENT_MESSAGES = 2 * SCAN_MESSAGES[2]
#: The most of each message scanned (characters): bounds the cost of every pattern.
SCAN_TEXT_CHARS = 2000
#: Sticky and cooldown, in the book's unit (turns or messages), at most.
TURNS_MAX = 50
#: ``delay``: the conversation's length (turns or messages) an entry waits for, at most.
DELAY_MAX = 1000
#: How many times newly triggered entries' content is scanned again, at most (SillyTavern
#: has no bound; each rescan runs every pattern again).
RECURSION_MAX = 10
#: A book's ``token_budget`` at most (estimated tokens): past the lore's character budget
#: anyway, but an imported card's large number still reads.
TOKEN_BUDGET_MAX = 1_000_000
#: ``probability`` (percent): 0 never, 100 always.
PROBABILITY_MAX = 100
#: Inclusion groups of one entry, and one group name's length.
GROUPS_MAX = 16
GROUP_CHARS = 100
#: ``group_weight``: (default, least, most).
GROUP_WEIGHT = (100, 1, 10000)
#: ``position: depth``: messages from the end (default, most).
DEPTH_DEFAULT = 4
DEPTH_MAX = 100
#: What lore adds to one prompt at most (characters).
PROMPT_CHARS = 2000
#: An entry's order when none is given (lower goes first into the prompt), and the range
#: of ``order`` and ``priority``.
ORDER_DEFAULT = 100
ORDER_RANGE = (-10000, 10000)
