"""Deterministic simulated user data for the dev platform.

Every catalogue dataset has data for every member: items derived from
``(member_id, dataset, day)`` over the last 7 days of platform time, with the catalogue's
item fields. The same member, dataset and platform time always give the same items, on
every machine and Python version: the generator is SHA-256 over a seed string, not
:mod:`random` (whose algorithms may change between versions).

Days are local days in :data:`TIMEZONE`. An item belongs to the window when its time
point (wake time, end of a workout, end of the day for a daily summary …) lies in
``(now - 7 days, now]``. Location and calendar results of consent cards are simulated the
same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from buddy.capabilities.data.datasets import DATA_ACCESS_CAPABILITIES

__all__ = ["TIMEZONE", "WINDOW_DAYS", "Seeded", "calendar", "location", "simulate"]

TIMEZONE = ZoneInfo("Asia/Shanghai")
WINDOW_DAYS = 7

Item = dict[str, Any]


class Seeded:
    """A deterministic stream of numbers from a seed string.

    Args:
        seed: Anything identifying the stream, e.g. ``"m_1|health.sleep|2026-03-01"``.
    """

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.counter = 0

    def random(self) -> float:
        """The next number in ``[0, 1)``."""
        self.counter += 1
        digest = hashlib.sha256(f"{self.seed}#{self.counter}".encode()).digest()
        return int.from_bytes(digest[:7], "big") / float(1 << 56)

    def uniform(self, low: float, high: float) -> float:
        """A number in ``[low, high)``."""
        return low + (high - low) * self.random()

    def integer(self, low: int, high: int) -> int:
        """An integer in ``[low, high]``."""
        return low + min(high - low, int((high - low + 1) * self.random()))

    def choice(self, options: tuple[str, ...]) -> str:
        """One of ``options``."""
        return options[self.integer(0, len(options) - 1)]


def _rng(member_id: str, dataset: str, day: date | str) -> Seeded:
    key = day.isoformat() if isinstance(day, date) else day
    return Seeded(f"{member_id}|{dataset}|{key}")


def _at(day: date, minutes: float) -> datetime:
    """``day`` at local midnight plus ``minutes`` (may run into the next day)."""
    midnight = datetime.combine(day, time(0), TIMEZONE)
    return midnight + timedelta(minutes=round(minutes))


def _iso(moment: datetime) -> str:
    return moment.astimezone(TIMEZONE).isoformat(timespec="seconds")


# Each day generator answers (time point, item) pairs for one local day.
DayItems = list[tuple[datetime, Item]]


def _sleep(member_id: str, day: date) -> DayItems:
    rng = _rng(member_id, "health.sleep", day)
    bedtime = _at(day - timedelta(days=1), rng.uniform(22 * 60, 25 * 60))
    in_bed = rng.uniform(390, 540)
    wake = bedtime + timedelta(minutes=round(in_bed))
    asleep = round(in_bed * rng.uniform(0.84, 0.95))
    return [
        (
            wake,
            {
                "date": wake.date().isoformat(),
                "bedtime": _iso(bedtime),
                "wake_time": _iso(wake),
                "asleep_minutes": asleep,
                "in_bed_minutes": round(in_bed),
                "deep_minutes": round(asleep * rng.uniform(0.12, 0.23)),
                "rem_minutes": round(asleep * rng.uniform(0.18, 0.26)),
                "awakenings": rng.integer(0, 4),
            },
        )
    ]


_ACTIVITIES = ("running", "cycling", "swimming", "walking", "strength")
_PACE_KMH = {"running": (8.0, 12.0), "cycling": (15.0, 25.0), "swimming": (1.5, 3.0)}


def _workouts(member_id: str, day: date) -> DayItems:
    rng = _rng(member_id, "health.workouts", day)
    draw = rng.random()
    count = 0 if draw < 0.4 else 1 if draw < 0.85 else 2
    items: DayItems = []
    for index in range(count):
        activity = rng.choice(_ACTIVITIES)
        start = _at(day, rng.uniform(6 * 60, 11 * 60) + index * 9 * 60)
        minutes = rng.integer(20, 90)
        end = start + timedelta(minutes=minutes)
        avg = rng.integer(105, 155)
        item: Item = {
            "start": _iso(start),
            "end": _iso(end),
            "activity": activity,
            "duration_minutes": minutes,
        }
        if activity != "strength":  # no distance for strength training: fields may be missing
            low, high = _PACE_KMH.get(activity, (4.0, 6.0))
            item["distance_km"] = round(minutes / 60 * rng.uniform(low, high), 2)
        item["active_kcal"] = round(minutes * rng.uniform(5.0, 11.0))
        item["avg_heart_rate"] = avg
        item["max_heart_rate"] = avg + rng.integer(10, 35)
        items.append((end, item))
    return items


def _end_of(day: date) -> datetime:
    return _at(day + timedelta(days=1), 0)


def _steps(member_id: str, day: date) -> DayItems:
    rng = _rng(member_id, "health.steps", day)
    steps = rng.integer(2000, 16000)
    item = {
        "date": day.isoformat(),
        "steps": steps,
        "distance_km": round(steps * rng.uniform(0.00065, 0.00078), 2),
        "flights_climbed": rng.integer(0, 25),
    }
    return [(_end_of(day), item)]


def _heart_rate(member_id: str, day: date) -> DayItems:
    base = _rng(member_id, "health.heart_rate", "base").integer(54, 70)
    rng = _rng(member_id, "health.heart_rate", day)
    resting = base + rng.integer(-3, 3)
    item = {
        "date": day.isoformat(),
        "resting": resting,
        "average": resting + rng.integer(10, 25),
        "min": resting - rng.integer(2, 8),
        "max": rng.integer(120, 175),
        "hrv_ms": rng.integer(25, 85),
    }
    return [(_end_of(day), item)]


def _weight(member_id: str, day: date) -> DayItems:
    base_rng = _rng(member_id, "health.weight", "base")
    base, height = base_rng.uniform(50.0, 85.0), base_rng.uniform(1.55, 1.85)
    rng = _rng(member_id, "health.weight", day)
    if rng.random() < 0.4:  # not weighed every day
        return []
    measured = _at(day, rng.uniform(6.5 * 60, 8.5 * 60))
    weight = round(base + rng.uniform(-0.8, 0.8), 1)
    item: Item = {"measured_at": _iso(measured), "weight_kg": weight}
    if rng.random() < 0.7:  # not every scale measures body fat
        item["body_fat_percent"] = round(rng.uniform(15.0, 30.0), 1)
    item["bmi"] = round(weight / (height * height), 1)
    return [(measured, item)]


def _mindfulness(member_id: str, day: date) -> DayItems:
    rng = _rng(member_id, "health.mindfulness", day)
    if rng.random() < 0.5:
        return []
    start = _at(day, rng.uniform(7 * 60, 23 * 60))
    minutes = rng.integer(5, 20)
    end = start + timedelta(minutes=minutes)
    return [(end, {"start": _iso(start), "end": _iso(end), "duration_minutes": minutes})]


def _generic(dataset: str) -> Callable[[str, date], DayItems]:
    """For a catalogue dataset without its own generator: one item a day, by field name."""

    def day_items(member_id: str, day: date) -> DayItems:
        rng = _rng(member_id, dataset, day)
        at = _at(day, rng.uniform(8 * 60, 20 * 60))
        item: Item = {}
        for name in DATA_ACCESS_CAPABILITIES[dataset].item_fields:
            if name == "date":
                item[name] = day.isoformat()
            elif name in {"start", "end"} or name.endswith(("_at", "_time")):
                item[name] = _iso(at)
            else:
                item[name] = round(rng.uniform(0, 100), 1)
        return [(at, item)]

    return day_items


_GENERATORS: dict[str, Callable[[str, date], DayItems]] = {
    "health.sleep": _sleep,
    "health.workouts": _workouts,
    "health.steps": _steps,
    "health.heart_rate": _heart_rate,
    "health.weight": _weight,
    "health.mindfulness": _mindfulness,
}


def simulate(member_id: str, dataset: str, now: float) -> list[Item]:
    """A member's simulated items of a catalogue dataset over the last 7 days, oldest first.

    Args:
        member_id: Whose data.
        dataset: A catalogue dataset id.
        now: Platform time (seconds since the epoch).

    Raises:
        KeyError: ``dataset`` is not in the catalogue.
    """
    if dataset not in DATA_ACCESS_CAPABILITIES:
        raise KeyError(dataset)
    generate = _GENERATORS.get(dataset) or _generic(dataset)
    end = datetime.fromtimestamp(now, TIMEZONE)
    start = end - timedelta(days=WINDOW_DAYS)
    points: DayItems = []
    for offset in range(WINDOW_DAYS + 1):
        day = end.date() - timedelta(days=WINDOW_DAYS - offset)
        points.extend(p for p in generate(member_id, day) if start < p[0] <= end)
    points.sort(key=lambda p: p[0])
    return [item for _, item in points]


_CITIES = (
    ("上海", 31.2304, 121.4737),
    ("北京", 39.9042, 116.4074),
    ("深圳", 22.5431, 114.0579),
    ("杭州", 30.2741, 120.1551),
    ("成都", 30.5728, 104.0668),
)


def location(member_id: str, now: float) -> dict[str, Any]:
    """A member's one-time location at ``now``: the same city always, a spot there by day."""
    home = _rng(member_id, "location", "home")
    city, latitude, longitude = _CITIES[home.integer(0, len(_CITIES) - 1)]
    moment = datetime.fromtimestamp(now, TIMEZONE)
    rng = _rng(member_id, "location", moment.date())
    return {
        "latitude": round(latitude + rng.uniform(-0.05, 0.05), 5),
        "longitude": round(longitude + rng.uniform(-0.05, 0.05), 5),
        "accuracy_m": rng.integer(5, 65),
        "city": city,
        "captured_at": _iso(moment),
    }


_EVENTS = ("项目周会", "和朋友吃饭", "健身课", "看牙医", "读书会", "家长会", "出差", "瑜伽")


def calendar(member_id: str, now: float, days: int) -> dict[str, Any]:
    """A member's calendar for ``days`` local days from today: ``{"from","to","items"}``."""
    today = datetime.fromtimestamp(now, TIMEZONE).date()
    items: list[Item] = []
    for offset in range(days):
        day = today + timedelta(days=offset)
        rng = _rng(member_id, "calendar", day)
        for _ in range(rng.integer(0, 3)):
            start = _at(day, rng.integer(16, 42) * 30)  # on the half hour, 08:00–21:00
            end = start + timedelta(minutes=30 * rng.integer(1, 4))
            items.append({"title": rng.choice(_EVENTS), "start": _iso(start), "end": _iso(end)})
    items.sort(key=lambda item: str(item["start"]))
    return {
        "from": today.isoformat(),
        "to": (today + timedelta(days=days - 1)).isoformat(),
        "days": days,
        "items": items,
    }
