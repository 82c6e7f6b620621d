"""The data capability's limits (SPEC §4). User data: declarations, queries, consent cards and one-time results.

One table, read by its tools' schemas, its wire models and its dev-platform part, so they
cannot drift apart. Standard library only: ``buddy validate`` imports it.
"""

from __future__ import annotations

__all__ = [
    "CALENDAR_DAYS_DEFAULT",
    "CALENDAR_DAYS_MAX",
    "CALENDAR_DAYS_MIN",
    "DECLARATION_REQUIREMENTS_MAX",
    "ONE_TIME_RESULT_SECONDS",
    "PURPOSE_CHARS",
    "QUERY_DATASETS_MAX",
    "QUERY_RESPONSE_BYTES",
    "REQUEST_REASON_CHARS",
]

DECLARATION_REQUIREMENTS_MAX = 32
PURPOSE_CHARS = 200
QUERY_DATASETS_MAX = 8
QUERY_RESPONSE_BYTES = 512 * 1024
CALENDAR_DAYS_MIN = 1
CALENDAR_DAYS_MAX = 31
CALENDAR_DAYS_DEFAULT = 7
REQUEST_REASON_CHARS = 200
ONE_TIME_RESULT_SECONDS = 10 * 60  # how long a location/calendar result stays readable
