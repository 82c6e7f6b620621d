"""``echo:`` as the runtime holds it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EchoSettings:
    prefix: str = "回声："
    times: int = 1
