"""The consent-result event's turn: the user answered a consent card."""

from __future__ import annotations

from typing import Any

__all__ = ["user_message"]


def user_message(payload: dict[str, Any]) -> str:
    """The turn's message: granted or refused, which kind, which request."""
    verdict = "同意" if payload.get("granted") else "拒绝"
    return (
        f"[授权卡结果] 用户{verdict}了 {payload.get('kind')} 授权"
        f"（request_id {payload.get('request_id')}）"
    )
