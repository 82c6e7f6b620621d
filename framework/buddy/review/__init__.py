"""Reviewing buddies as config: compare compiled views between versions of a project.

:mod:`buddy.review.diff` compares two sides, :mod:`buddy.review.git` materialises a git
revision as a side, :mod:`buddy.review.report` prints a comparison for people (text) and
for pull-request comments (Markdown). With ``--replay``, :mod:`buddy.review.replay` runs
the touched buddies' scenarios on both sides (each in :mod:`buddy.review.replay_side`'s
process) and compares them step by step; :mod:`buddy.review.replay_report` prints that.
"""

from __future__ import annotations

from buddy.review.diff import BuddyDiff, Report, SharedChange, Side, Status, compare

__all__ = ["BuddyDiff", "Report", "SharedChange", "Side", "Status", "compare"]
