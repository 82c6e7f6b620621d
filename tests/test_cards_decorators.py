"""Character Card V3 decorators read into lore fields."""

from __future__ import annotations

from typing import Any

import pytest

from buddy.cards.decorators import parse


def test_content_without_decorators_is_left_alone() -> None:
    parsed = parse("A plain entry.\n@@depth 3 is text here")
    assert (parsed.lines, parsed.fields) == ((), {})
    assert parsed.content == "A plain entry.\n@@depth 3 is text here"


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        ("@@depth 2", {"position": "depth", "depth": 2}),
        ("@@depth 0", {"position": "depth", "depth": 0}),
        ("@@depth -3", {"position": "depth", "depth": 0}),  # "after the most recent"
        ("@@role assistant", {"role": "assistant"}),
        ("@@scan_depth 6", {"scan": 6}),
        ("@@activate", {"always": True}),
        ("@@dont_activate", {"enabled": False}),
        ("@@additional_keys tea, kettle", {"keys": ["tea", "kettle"]}),
        ("@@exclude_keys rain", {"exclude": ["rain"]}),
        ("@@activate_only_after 3", {"delay": 3}),
    ],
)
def test_each_decorator_with_a_meaning(line: str, fields: dict[str, Any]) -> None:
    parsed = parse(f"{line}\n\nThe text.")
    assert parsed.fields == fields
    assert parsed.content == "The text."  # the blank line after them goes too (CCv3)
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    "line",
    [
        "@@activate_only_every 2",
        "@@keep_activate_after_match",
        "@@dont_activate_after_match",
        "@@is_greeting 1",
        "@@ignore_on_max_context",
        "@@instruct_depth 3",
        "@@is_user_persona Anna",
        "@@position after_desc",
    ],
)
def test_decorators_without_a_meaning_are_dropped_with_a_warning(line: str) -> None:
    parsed = parse(f"{line}\nThe text.")
    assert (parsed.fields, parsed.content) == ({}, "The text.")
    assert parsed.warnings == (f"`{line}` has no meaning here and is dropped",)


def test_fallbacks_stand_in_for_what_is_not_read() -> None:
    parsed = parse(
        "@@risu_only 4\n"
        "@@@agn_only 4\n"
        "@@@activate_only_after 4\n"  # the first fallback read here
        "@@@depth 9\n"  # skipped: the one above was read
        "@@instruct_depth 5\n"
        "@@@depth 5\n"  # instruct_depth has no meaning here: its fallback counts
        "@@role user\n"
        "@@@role system\n"  # skipped
        "Text"
    )
    assert parsed.fields == {"delay": 4, "position": "depth", "depth": 5, "role": "user"}
    assert parsed.warnings == (
        "`@@risu_only 4` is not a decorator this knows; dropped",
        "`@@@agn_only 4` is not a decorator this knows; dropped",
        "`@@instruct_depth 5` has no meaning here and is dropped",
    )
    assert len(parsed.lines) == 8 and parsed.content == "Text"


def test_the_first_counts_and_activate_wins() -> None:
    parsed = parse(
        "@@depth 2\n@@depth 3\n@@additional_keys a\n@@additional_keys b\n"
        "@@dont_activate\n@@activate\n@@depth x\nText"
    )
    assert parsed.fields == {
        "position": "depth",
        "depth": 2,
        "keys": ["a", "b"],
        "always": True,
    }
    assert parsed.warnings == (
        "`@@depth 3` repeats @@depth; only the first counts",
        "`@@depth x` repeats @@depth; only the first counts",
    )
    assert [line for line, _ in parsed.sources] == [
        "@@depth 2",
        "@@additional_keys a",
        "@@additional_keys b",
        "@@activate",
    ]


def test_a_bad_value_is_a_warning() -> None:
    parsed = parse("@@depth deep\n@@role narrator\n@@additional_keys  ,\nText")
    assert parsed.fields == {}
    assert parsed.warnings == (
        "`@@depth deep` is dropped: its value 'deep' is not a number",
        "`@@role narrator` is dropped: its value 'narrator' is not one of system, user, assistant",
        "`@@additional_keys  ,` is dropped: it names no keys",
    )


def test_only_decorators_leaves_no_content() -> None:
    assert parse("@@activate\n@@depth 1").content == ""
