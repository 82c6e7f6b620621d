"""Python bodies for 小涂阿姨 (``manifests/aunt-tu``).

- :func:`plan_menu` — the ``plan_menu`` tool: a deterministic menu from people, days, taste.
- :func:`check_budget` — a ``before_tool_call`` hook that refuses menus for very large groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["MAX_PEOPLE", "check_budget", "plan_menu"]

MAX_PEOPLE = 20
"""Above this many diners a home kitchen (and this tool) is the wrong answer."""

MAX_DAYS = 7
MAX_DISHES_PER_MEAL = 10
MEAT_GRAMS_PER_PERSON_MEAL = 125
RICE_GRAMS_PER_PERSON_MEAL = 100
MEALS = ("午饭", "晚饭")


class _Pools(NamedTuple):
    """The dishes of one taste style, by kind."""

    meat: tuple[str, ...]
    vegetable: tuple[str, ...]
    soup: tuple[str, ...]


def _pools(meat: str, vegetable: str, soup: str) -> _Pools:
    return _Pools(tuple(meat.split()), tuple(vegetable.split()), tuple(soup.split()))


# Every pool is longer than the most dishes of its kind one meal needs, so a meal never
# repeats a dish; consecutive meals start where the previous one stopped.
_DISHES: dict[str, _Pools] = {
    "家常": _pools(
        "红烧肉 青椒炒肉丝 土豆烧鸡块 番茄炒蛋 蒜苔炒腊肉 红烧鱼块 肉末蒸蛋 香菇滑鸡",
        "清炒小白菜 蒜蓉西兰花 醋溜土豆丝 手撕包菜 干煸豆角 蚝油生菜 地三鲜 凉拌黄瓜",
        "紫菜蛋花汤 冬瓜排骨汤 番茄豆腐汤 萝卜丸子汤 丝瓜蛋汤",
    ),
    "清淡": _pools(
        "清蒸鲈鱼 白切鸡 虾仁滑蛋 肉末蒸蛋 香菇蒸鸡 白灼虾 清炖狮子头 冬瓜烧鸭",
        "白灼菜心 蒜蓉西兰花 清炒山药 上汤娃娃菜 蚝油生菜 凉拌木耳 清炒丝瓜 芦笋炒百合",
        "冬瓜排骨汤 山药玉米汤 番茄豆腐汤 菌菇鸡汤 丝瓜蛋汤",
    ),
    "偏辣": _pools(
        "辣椒炒肉 剁椒鱼头 小炒黄牛肉 宫保鸡丁 麻婆豆腐 水煮肉片 香辣鸡翅 尖椒炒蛋",
        "干煸豆角 手撕包菜 擂辣椒皮蛋 干锅花菜 酸辣土豆丝 虎皮青椒 鱼香茄子 凉拌木耳",
        "酸辣汤 紫菜蛋花汤 番茄豆腐汤 萝卜丸子汤 冬瓜排骨汤",
    ),
    "酸甜": _pools(
        "糖醋排骨 可乐鸡翅 番茄炒蛋 菠萝咕咾肉 糖醋里脊 番茄牛腩 锅包肉 茄汁大虾",
        "醋溜白菜 糖醋藕片 番茄菜花 凉拌黄瓜 醋溜土豆丝 蜜汁南瓜 蒜蓉西兰花 清炒荷兰豆",
        "番茄豆腐汤 玉米排骨汤 紫菜蛋花汤 银耳莲子羹 丝瓜蛋汤",
    ),
}

# Checked in order; the first style whose words appear in the taste wins.
_TASTE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("偏辣", ("辣", "麻", "川", "湘")),
    ("清淡", ("清淡", "淡", "少油", "养胃", "老人", "孩子", "宝宝")),
    ("酸甜", ("酸甜", "甜", "酸")),
)
_NO_SPICE = ("不辣", "不吃辣", "不要辣", "不能吃辣", "忌辣", "少辣", "微辣")


def _style_of(taste: str) -> str:
    """Map a free-text taste to one of the menu styles in :data:`_DISHES`."""
    avoids_spice = any(word in taste for word in _NO_SPICE)
    for style, words in _TASTE_WORDS:
        if style == "偏辣" and avoids_spice:
            continue
        if any(word in taste for word in words):
            return style
    return "家常"


def _whole_number(params: Mapping[str, Any], name: str, low: int, high: int | None) -> int:
    """Read an integer parameter and check its bounds (a bool is not a number here)."""
    value = params.get(name)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        allowed = f" {low} 到 {high} 之间" if high is not None else f"不小于 {low} "
        raise ValueError(f"{name} 要填{allowed}的整数，收到的是 {value!r}")
    return value


def _jin(grams: int) -> str:
    """Format grams as 斤 (500 g), rounded up to the nearest half 斤."""
    halves = -(-grams // 250)
    whole, half = divmod(halves, 2)
    return f"{whole}.5 斤" if half else f"{whole} 斤"


def _pick(pool: tuple[str, ...], meal: int, count: int) -> list[str]:
    """Take ``count`` consecutive dishes from ``pool`` for the ``meal``-th meal.

    Meals take turns through the pool; each time the pool wraps around, the start
    moves on by one, so the same group of dishes does not come back every few meals.
    """
    start = meal * count
    start += start // len(pool)
    return [pool[(start + i) % len(pool)] for i in range(count)]


def plan_menu(conversation: Any, params: Mapping[str, Any]) -> str:
    """Plan lunch and dinner for a few days.

    The result depends only on ``params``: the same people, days and taste always give
    the same menu. Each meal has one dish per person plus one (the house rule written in
    ``manifests/aunt-tu/resources/seasonal.md``), up to ten, split into meat dishes,
    vegetable dishes and, from three dishes up, a soup; consecutive meals rotate through
    the dishes of the chosen style.

    Args:
        conversation: The conversation the tool runs in (not needed here).
        params: Validated tool arguments: ``people`` (int ≥ 1), ``days`` (int 1–7) and
            optionally ``taste`` (free text such as 清淡 or 偏辣).

    Returns:
        The menu as plain text, followed by shopping hints.

    Raises:
        ValueError: A parameter is missing or out of range.
    """
    del conversation
    people = _whole_number(params, "people", 1, None)
    days = _whole_number(params, "days", 1, MAX_DAYS)
    taste_value = params.get("taste")
    taste = taste_value.strip() if isinstance(taste_value, str) else ""
    style = _style_of(taste)
    pools = _DISHES[style]

    dishes = min(people + 1, MAX_DISHES_PER_MEAL)
    soup_count = 1 if dishes >= 3 else 0
    meat_count = (dishes - soup_count + 1) // 2
    veg_count = dishes - soup_count - meat_count

    header = f"{people} 人，{days} 天，口味：{taste or '家常'}"
    if taste and taste != style:
        header += f"（按{style}口味排）"
    lines = [
        header,
        f"每顿 {dishes} 个菜：{meat_count} 荤 {veg_count} 素" + (" 1 汤" if soup_count else ""),
    ]
    for day in range(1, days + 1):
        lines.append("")
        lines.append(f"第 {day} 天")
        for meal_index, meal in enumerate(MEALS):
            n = (day - 1) * len(MEALS) + meal_index
            chosen = _pick(pools.meat, n, meat_count)
            chosen += _pick(pools.vegetable, n, veg_count)
            chosen += _pick(pools.soup, n, soup_count)
            lines.append(f"- {meal}：{'、'.join(chosen)}")

    servings = people * days * len(MEALS)
    meat = _jin(servings * MEAT_GRAMS_PER_PERSON_MEAL)
    rice = _jin(servings * RICE_GRAMS_PER_PERSON_MEAL)
    lines += [
        "",
        "买菜提示：",
        f"- 肉和鱼虾一共约 {meat}，分两三次买，别一次囤齐。",
        f"- 米约 {rice}。",
        "- 叶子菜当天买当天吃，土豆、萝卜、南瓜这类根茎菜可以一次买够。",
    ]
    return "\n".join(lines)


def _arguments(call: Any) -> Mapping[str, Any]:
    """The arguments of a tool call, or an empty mapping when there are none."""
    for attribute in ("arguments", "params"):
        value = getattr(call, attribute, None)
        if isinstance(value, Mapping):
            return value
    return {}


def check_budget(call: Any, conversation: Any) -> str | None:
    """Refuse ``plan_menu`` for more than :data:`MAX_PEOPLE` diners.

    A banquet needs a caterer, not a home-cooking menu; the reason tells the model what
    to suggest instead.

    Args:
        call: The pending tool call (``name`` and its arguments).
        conversation: The conversation the call belongs to (not needed here).

    Returns:
        ``None`` to let the call run, or the reason it is refused.
    """
    del conversation
    if getattr(call, "name", None) != "plan_menu":
        return None
    people = _arguments(call).get("people")
    if isinstance(people, int) and not isinstance(people, bool) and people > MAX_PEOPLE:
        return (
            f"{people} 个人吃饭已经是摆酒席的规模了，家常菜单最多排 {MAX_PEOPLE} 人。"
            "建议对方订餐馆或请厨师上门；如果是分几桌轮流吃，可以按每桌人数分别排。"
        )
    return None
