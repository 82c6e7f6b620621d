"""Numbers as people write them in a chat, for the ``integer`` and ``number`` slots a
pattern fills: digits (``3``, ``1,000``, ``2.5``, ``3.5万``) and Chinese numerals — ``两``,
``俩``, ``一百``, ``一百二十``, ``三百零五``, ``一万``, the spoken short forms ``一百二``
(120), ``两千五`` (2500), ``一万二`` (12000), a decimal ``二点五``, and money ``三块五``
(3.5; the unit is the pattern's business) — and the financial capitals (``叁佰``).

An estimate is not a number: ``十几``, ``几十``, ``二三十``, ``两三百``, ``一百多``,
``三十来`` give ``None``, and so does anything else that is not exactly a number, so a
fact that needs a number is not kept from a guess.

A day said with its year (``2025年12月31号``, ``2025年12月31日``, ``2025-12-31``,
``2025.12.31``, ``2025/12/31``) is a ``date`` slot's ``YYYY-MM-DD``
(:func:`spoken_date`); one without a year (「6月份之前」「年底」) is not a date. Standard
library only.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from decimal import Decimal

__all__ = ["spoken_date", "spoken_number"]

_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "壹": 1,
    "二": 2,
    "贰": 2,
    "两": 2,
    "三": 3,
    "叁": 3,
    "四": 4,
    "肆": 4,
    "五": 5,
    "伍": 5,
    "六": 6,
    "陆": 6,
    "七": 7,
    "柒": 7,
    "八": 8,
    "捌": 8,
    "九": 9,
    "玖": 9,
}
_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_BIG = (("亿", 100_000_000), ("万", 10_000))
#: Words that are a number only on their own (「欠你俩包子」).
_ALONE = {"俩": 2, "仨": 3}
_ARABIC = re.compile(r"(\d+(?:\.\d+)?)([百千万亿])?")
_MONEY = re.compile(r"(.+?)[块元](?:([0-9一二两三四五六七八九])[毛角]?)?")
_MULTIPLIER = {None: 1, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
_DAY = re.compile(r"(\d{4})(?:年(\d{1,2})月(\d{1,2})[日号]?|([-./])(\d{1,2})\4(\d{1,2}))")


def spoken_date(text: str) -> str | None:
    """The day ``text`` says with its year, as ``YYYY-MM-DD``, or ``None`` (no year, not
    a day of the calendar, or anything else)."""
    found = _DAY.fullmatch(unicodedata.normalize("NFKC", text).strip())
    if found is None:
        return None
    year, month, day = (
        found.group(1),
        found.group(2) or found.group(5),
        found.group(3) or found.group(6),
    )
    try:
        return date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        return None  # 2025年2月30号


def spoken_number(text: str) -> int | float | None:
    """The number ``text`` says, or ``None`` (not exactly a number, or an estimate).

    A whole value is an ``int`` (``3.5万`` is 35000), any other a ``float``.
    """
    text = unicodedata.normalize("NFKC", text).strip()
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)  # 1,000
    if text in _ALONE:
        return _ALONE[text]
    money = _MONEY.fullmatch(text)
    if money is not None:
        whole = spoken_number(money.group(1))
        tenth = money.group(2)
        if whole is None or tenth is None:
            return whole
        fraction = int(tenth) if tenth.isdigit() else _DIGITS[tenth]
        return _whole_or_float(Decimal(str(whole)) + Decimal(fraction) / 10)
    arabic = _ARABIC.fullmatch(text)
    if arabic is not None:
        return _whole_or_float(Decimal(arabic.group(1)) * _MULTIPLIER[arabic.group(2)])
    whole_part, point, decimals = text.partition("点")
    if point:
        number = _chinese(whole_part)
        if number is None or not decimals or any(c not in _DIGITS for c in decimals):
            return None
        digits = "".join(str(_DIGITS[c]) for c in decimals)
        return _whole_or_float(Decimal(f"{number}.{digits}"))
    return _chinese(text)


def _whole_or_float(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _chinese(text: str) -> int | None:
    """A whole number in Chinese numerals, or ``None``."""
    if text in ("零", "〇"):
        return 0
    total, rest, after = 0, text, False
    for mark, factor in _BIG:
        if mark not in rest:
            continue
        head, _, rest = rest.partition(mark)
        value = _section(head, after)
        if value is None or value == 0 or mark in rest:
            return None
        total += value * factor
        after = True
        if len(rest) == 1 and rest in _DIGITS:
            if rest in "零〇两":
                return None  # 一万两: not how a number is said
            return total + _DIGITS[rest] * factor // 10  # 一万二: 12000
    if not rest:
        return total if after else None
    value = _section(rest, after)
    return None if value is None else total + value


def _section(text: str, after: bool) -> int | None:
    """A number below 10000 (``三千零五``, ``十二``, ``一百二``), or ``None``; ``after``:
    it follows 万 or 亿, so it may begin with 零."""
    if not text:
        return None
    value, last, digit, zero = 0, 10_000, None, False
    said = ""
    for index, char in enumerate(text):
        if char in _DIGITS:
            if digit is not None:
                return None  # two digits in a row: 二三十, 十二三 are estimates
            if _DIGITS[char] == 0:
                if zero or (value == 0 and not after) or index == len(text) - 1:
                    return None  # 零零, a leading 零, a trailing 零
                zero = True
                continue
            digit, said = _DIGITS[char], char
        elif char in _UNITS:
            unit = _UNITS[char]
            if unit >= last:
                return None  # 十十, 百千
            if digit is None:
                if unit != 10 or value or zero:
                    return None  # 百 alone, 一百十
                digit, said = 1, "一"
            if said == "两" and unit == 10:
                return None  # 两十
            value, last, digit, zero = value + digit * unit, unit, None, False
        else:
            return None
    if digit is None:
        return value
    if said == "两" and value:
        return None  # 二十两
    if zero or last in (10, 10_000):
        return value + digit
    return value + digit * last // 10  # 一百二: 120; 两千五: 2500
