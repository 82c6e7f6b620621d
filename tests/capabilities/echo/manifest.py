"""``echo:`` in ``buddy.yaml``: how the buddy echoes."""

from __future__ import annotations

from pydantic import Field

from buddy.manifest.schema import Strict


class EchoSection(Strict):
    """What ``echo_say`` puts before the text, and how many times it says it."""

    prefix: str = Field(default="回声：", min_length=1, max_length=8)
    times: int = Field(default=1, ge=1, le=3)
