"""The proactive capability's limits (SPEC §4). Proactive subscriptions.

One table, read by its tools' schemas, its wire models and its dev-platform part, so they
cannot drift apart. Standard library only: ``buddy validate`` imports it.
"""

from __future__ import annotations

__all__ = [
    "COOLDOWN_DEFAULT",
    "COOLDOWN_MAX",
    "DAILY_LIMIT_DEFAULT",
    "DAILY_LIMIT_MAX",
    "DAILY_LIMIT_MIN",
    "INTERVAL_MAX",
    "INTERVAL_MIN",
    "SUBSCRIPTIONS_ACTIVE_MAX",
    "SUBSCRIPTION_KEY_CHARS",
    "SUBSCRIPTION_KEY_PATTERN",
    "SUBSCRIPTION_REASON_CHARS",
    "SUBSCRIPTION_TITLE_CHARS",
]

SUBSCRIPTIONS_ACTIVE_MAX = 20
SUBSCRIPTION_KEY_CHARS = 64
SUBSCRIPTION_KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"  # 1–64 characters
SUBSCRIPTION_TITLE_CHARS = 100
SUBSCRIPTION_REASON_CHARS = 500
INTERVAL_MIN = 60
INTERVAL_MAX = 525600
COOLDOWN_DEFAULT = 120
COOLDOWN_MAX = 10080
DAILY_LIMIT_DEFAULT = 3
DAILY_LIMIT_MIN = 1
DAILY_LIMIT_MAX = 20
