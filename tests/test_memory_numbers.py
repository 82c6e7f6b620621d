"""`spoken_number`: every common way a number is written in a chat, and both sides of each
bound — an exact number is read, an estimate or anything else is not; `spoken_date`: a day
said with its year, and what is not one."""

from __future__ import annotations

import pytest

from buddy.capabilities.memory.numbers import spoken_date, spoken_number


@pytest.mark.parametrize(
    ("text", "number"),
    [
        # digits
        ("0", 0),
        ("3", 3),
        ("100", 100),
        ("1,000", 1000),
        ("2.5", 2.5),
        ("3.5万", 35000),
        ("1.1万", 11000),
        ("2千", 2000),
        ("３", 3),  # full-width
        # single Chinese digits, 两 and 俩 on their own
        ("零", 0),
        ("〇", 0),
        ("三", 3),
        ("两", 2),
        ("俩", 2),
        ("仨", 3),
        # tens
        ("十", 10),
        ("一十", 10),
        ("十二", 12),
        ("二十", 20),
        ("九十九", 99),
        # hundreds and more, with 零 and without
        ("一百", 100),
        ("两百", 200),
        ("一百二十", 120),
        ("三百零五", 305),
        ("一千", 1000),
        ("一千零五十", 1050),
        ("一万", 10000),
        ("十万", 100000),
        ("一万零五", 10005),
        ("一亿", 100_000_000),
        ("三亿五千万", 350_000_000),
        ("叁佰", 300),
        # the spoken short forms
        ("一百二", 120),
        ("两千五", 2500),
        ("一万二", 12000),
        # decimals and money
        ("二点五", 2.5),
        ("三块五", 3.5),
        ("3块5", 3.5),
        ("三块五毛", 3.5),
        ("三十块", 30),
        ("八元", 8),
    ],
)
def test_a_number_said_is_read(text: str, number: float) -> None:
    got = spoken_number(text)
    assert got == number
    assert isinstance(got, int) == float(number).is_integer()  # 3.5万 is a whole 35000


@pytest.mark.parametrize(
    "text",
    [
        "",
        # estimates are not numbers: the other side of 十, 二十, 两百, 三十块
        "十几",
        "几十",
        "几",
        "二三十",
        "两三百",
        "三四",
        "十二三",
        "一两",
        "一百多",
        "三十来",
        "十来块",
        # not how a number is written
        "百",
        "万",
        "十十",
        "两十",
        "二十两",
        "一百十",
        "一百零",
        "零五",
        "零零",
        "一万两",
        "三点",
        "块",
        "三万5",
        "半",
        "一半",
        "好多",
    ],
)
def test_what_is_not_exactly_a_number_is_none(text: str) -> None:
    assert spoken_number(text) is None


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2025年12月31号", "2025-12-31"),
        ("2025年6月1日", "2025-06-01"),
        ("2025年6月1", "2025-06-01"),
        ("2026-04-12", "2026-04-12"),
        ("2026-4-2", "2026-04-02"),
        ("2025.9.1", "2025-09-01"),
        ("２０２５年６月１号", "2025-06-01"),  # full-width digits
        ("2024年2月29号", "2024-02-29"),  # a leap day
    ],
)
def test_a_day_said_with_its_year_is_a_date(text: str, day: str) -> None:
    assert spoken_date(text) == day


@pytest.mark.parametrize(
    "text",
    [
        "6月1号",
        "年底",
        "2025年",
        "2025年6月",
        "2025年2月29号",
        "2025年13月1号",
        "2025-6.1",
        "25年6月1号",
        "明天",
    ],
)
def test_what_is_not_a_day_with_its_year_is_none(text: str) -> None:
    assert spoken_date(text) is None
