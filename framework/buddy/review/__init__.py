"""Reviewing buddies as config: compare compiled views between versions of a project.

:mod:`buddy.review.diff` compares two sides, :mod:`buddy.review.git` materialises a git
revision as a side, :mod:`buddy.review.report` prints a comparison for people (text) and
for pull-request comments (Markdown).
"""

from __future__ import annotations

from buddy.review.diff import BuddyDiff, Report, SharedChange, Side, Status, compare

__all__ = ["BuddyDiff", "Report", "SharedChange", "Side", "Status", "compare"]
