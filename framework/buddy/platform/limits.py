"""The limits of the protocol's core (SPEC §4): message text, stored JSON values and a
turn's steps, and :class:`Refusal`, the form every limit's rule answers in.

Each capability's own limits are in ``buddy/capabilities/<name>/limits.py`` — one table
per capability, read by its tools' schemas, its wire models and its dev-platform part, so
they cannot drift apart. Where a rule is more than a number (a memory key's pattern, a
write that would overfill memory) the rule is there too, as a function answering the
:class:`Refusal` the platform gives, which the dev platform raises as its HTTP answer.

Standard library only: ``buddy validate`` imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ASK_OPTIONS_MAX",
    "ASK_OPTIONS_MIN",
    "ASK_OPTION_CHARS",
    "ASK_QUESTION_CHARS",
    "JSON_DEPTH_MAX",
    "MESSAGE_TEXT_CHARS",
    "STEP_CONTENT_BYTES",
    "STEP_CONTENT_DEPTH",
    "TURN_STEPS_MAX",
    "Refusal",
]

# Messages a user sends (dev platform) and replies a buddy commits.
MESSAGE_TEXT_CHARS = 8000

# A question card, which a turn may end with (the questions capability's tool sends one;
# clicking an option is the user's message).
ASK_QUESTION_CHARS = 500
ASK_OPTION_CHARS = 30
ASK_OPTIONS_MIN = 2
ASK_OPTIONS_MAX = 4

# Free-form JSON the platform stores and serves back (docs/protocol.md "Values").
# Any request body: objects and arrays nested at most this deep (pydantic's JSON parser
# stops at about 200, Python's recursion at about 1000: every read must succeed).
JSON_DEPTH_MAX = 100
# One persisted step's `content` of a turn commit: nesting, and size as compact UTF-8 JSON.
STEP_CONTENT_DEPTH = 32
STEP_CONTENT_BYTES = 256 * 1024
# The steps of one turn commit. The runtime's turns stay far below (at most 12 model
# requests, each its reasoning, text, calls and results) and keep their record within it
# (buddy.runtime.turn); a commit of more is refused as soon as it is read, whatever its
# conversation.
TURN_STEPS_MAX = 1024


@dataclass(frozen=True, slots=True)
class Refusal:
    """How the platform refuses a request that breaks a rule: its HTTP answer.

    Attributes:
        status: The HTTP status (400 for every limit here).
        code: The stable machine-readable code, e.g. ``memory_key_invalid``.
        reason: The sentence the platform answers (a model inside a tool reads it).
    """

    status: int
    code: str
    reason: str
