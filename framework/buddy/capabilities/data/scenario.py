"""User data in scenario files: the steps ``consent`` (answer the last pending consent
card), ``grant`` / ``revoke`` (as from the phone's settings) and ``data`` (replace a
member's simulated data), and the expectations ``consent_card`` and ``stored_redacted``
(the stored record of a turn that read data keeps no data values)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from buddy.capabilities.data.compiled import declared
from buddy.capabilities.data.manifest import DatasetId
from buddy.errors import PlatformError
from buddy.extend import data_tools
from buddy.testing.expectations import (
    Data,
    Miss,
    Observed,
    Strict,
    Text,
    bool_or_mapping,
    listing,
    quoted,
)

if TYPE_CHECKING:
    from buddy.manifest.yamlio import YamlPath
    from buddy.testing.local import LocalPlatform
    from buddy.testing.parts import StepCheck, StepRun

__all__ = [
    "MIN_LEAF_CHARS",
    "ConsentAnswer",
    "ConsentCheck",
    "ConsentExpect",
    "DataOverride",
    "Grant",
    "answer_card",
    "data_leaves",
]

MIN_LEAF_CHARS = 4
"""Data values shorter than this are too common to prove a leak (``7``, ``ok``)."""

ConsentAnswer = Literal["grant", "deny"]


class Grant(Strict):
    """A member grants (or revokes) a dataset, as if from their phone's settings."""

    dataset: DatasetId
    member: Text | None = Field(
        default=None, description="Who (a member's name); default: the private chat's member."
    )


class DataOverride(Strict):
    """Replace a member's (otherwise simulated) data for one dataset."""

    dataset: DatasetId
    items: list[Data] | None = Field(
        description="The items (catalogue item fields); `null` = no data at all."
    )
    member: Text | None = Field(
        default=None, description="Whose data (a member's name); default: the first member."
    )


class ConsentCheck(Strict):
    """The data-access (consent) card sent in this step."""

    kind: Literal["healthkit", "location", "calendar"] | None = None
    datasets: list[DatasetId] | None = Field(
        default=None, description="The datasets it asks for (healthkit), in any order."
    )


ConsentExpect = Annotated[
    Annotated[Literal[True], Tag("flag")] | Annotated[ConsentCheck, Tag("mapping")],
    Discriminator(bool_or_mapping),
]
StoredRedacted = Literal[True]


# ---------------------------------------------------------------- steps


async def answer_card(platform: LocalPlatform, request_id: str, granted: bool) -> Any:
    """A user answers a data-access card (``POST /dev/data-access/requests/{id}/answer``)."""
    return await platform.dev(
        "POST", f"/data-access/requests/{request_id}/answer", json={"granted": granted}
    )


async def consent(value: str, path: YamlPath, run: StepRun) -> None:
    """Answer the last pending consent card."""
    card = await run.last_card(
        "consent", path, "there is no pending consent card to answer", pending=True
    )
    await answer_card(run.platform, str(card["body"]["request_id"]), value == "grant")


async def _grant(target: Grant, run: StepRun, granted: bool) -> None:
    await run.platform.dev(
        "PUT",
        "/grants",
        json={
            "identity": run.identity,
            "member_id": run.member_id(target.member),
            "dataset": target.dataset,
            "granted": granted,
        },
    )


async def grant(value: Grant, path: YamlPath, run: StepRun) -> None:
    """A member grants a dataset."""
    await _grant(value, run, True)


async def revoke(value: Grant, path: YamlPath, run: StepRun) -> None:
    """A member revokes a dataset."""
    await _grant(value, run, False)


async def set_data(value: DataOverride, path: YamlPath, run: StepRun) -> None:
    """Replace a member's data for one dataset."""
    await run.platform.dev(
        "PUT",
        "/data",
        json={
            "member_id": run.member_id(value.member),
            "dataset": value.dataset,
            "items": value.items,
        },
    )


def check_grant(value: Grant, path: YamlPath, check: StepCheck) -> None:
    """The member is the conversation's (named in a group), the dataset declared."""
    _check_member(value, path, check)
    if check.kind == "group" and value.member is None:
        name = path[-1]
        check.issue(path, "member-required", f"in a group, `{name}` needs `member:`")
    blueprint = check.blueprint
    if blueprint is not None:
        ids = [r.id for r in declared(blueprint).requirements]
        if value.dataset not in ids:
            check.issue(
                (*path, "dataset"),
                "dataset-not-declared",
                f"{blueprint.name} does not declare {value.dataset}; only declared datasets "
                "can be granted",
                f"declared: {', '.join(ids) or 'none'}",
            )


def _check_member(value: Grant | DataOverride, path: YamlPath, check: StepCheck) -> None:
    check.member((*path, "member"), value.member)


def check_data(value: DataOverride, path: YamlPath, check: StepCheck) -> None:
    """The member is the conversation's."""
    _check_member(value, path, check)


# ---------------------------------------------------------------- expectations


def verify_consent_card(
    expect: bool | ConsentCheck, seen: Observed, state: Any, exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """A consent card was sent in the step, with these fields."""
    cards = [m["body"] for m in seen.messages if m["kind"] == "consent"]
    if not cards:
        return [
            Miss(("consent_card",), "expected a consent card, got none" + listing(seen.messages))
        ], []
    if isinstance(expect, bool):
        return [], []
    card = cards[-1]
    misses: list[Miss] = []
    if expect.kind is not None and card.get("kind") != expect.kind:
        misses.append(
            Miss(("consent_card", "kind"), f"expected a {expect.kind} card, got {card.get('kind')}")
        )
    if expect.datasets is not None:
        have = sorted(str(d.get("id")) for d in card.get("datasets") or [])
        if sorted(expect.datasets) != have:
            misses.append(
                Miss(
                    ("consent_card", "datasets"),
                    f"expected the card to ask for {quoted(sorted(expect.datasets))}, got "
                    f"{quoted(have)}",
                )
            )
    return misses, []


def record_consent_card(state: Any, seen: Observed) -> dict[str, Any] | None:
    """The consent card sent in this step as ``consent_card`` checks it (for a scenario
    recorded from a conversation, :mod:`buddy.testing.record`); ``None``: none was."""
    cards = [m["body"] for m in seen.messages if m["kind"] == "consent"]
    if not cards:
        return None
    card = cards[-1]
    shown: dict[str, Any] = {"kind": card.get("kind")}
    if card.get("kind") == "healthkit":
        shown["datasets"] = sorted(str(d.get("id")) for d in card.get("datasets") or [])
    return shown


def data_leaves(value: Any) -> set[str]:
    """The texts of the scalar values inside user data that are long enough to recognise."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for item in value.values():
            found |= data_leaves(item)
    elif isinstance(value, list):
        for item in value:
            found |= data_leaves(item)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        text = value if isinstance(value, str) else json.dumps(value)
        if len(text) >= MIN_LEAF_CHARS:
            found.add(text)
    return found


async def data_values(run: StepRun, seen: Observed) -> set[str]:
    """The user-data values the model saw in this step: the platform's view of each
    dataset a data-reading tool of this step named (its ``datasets`` argument: an after
    hook may have cut what the model read), plus any result it read."""
    values: set[str] = set()
    for call in seen.calls:
        if call.name not in data_tools() or not isinstance(call.args, dict):
            continue
        if isinstance(call.args.get("datasets"), list):
            member = call.args.get("member_id") or run.member_id(None)
            for dataset in call.args["datasets"]:
                with contextlib.suppress(PlatformError):
                    data = await run.platform.dev(
                        "GET", "/data", params={"member_id": member, "dataset": dataset}
                    )
                    values |= data_leaves(data.get("items"))
    for result in seen.results:
        if result.name in data_tools() and result.text is not None:
            with contextlib.suppress(ValueError):
                parsed = json.loads(result.text)
                entries = parsed if isinstance(parsed, list) else [parsed]
                for entry in entries:
                    if isinstance(entry, dict) and entry.get("status") == "available":
                        values |= data_leaves(entry.get("data"))
    return values


def _read_index(steps: Sequence[Mapping[str, Any]]) -> int | None:
    """Where the turn first read user data: a data tool's status-only result, or the
    first redacted step (a custom tool that read data is redacted itself)."""
    for index, step in enumerate(steps):
        if step.get("redacted"):
            return index
        content = step.get("content")
        if (
            step.get("type") == "tool_result"
            and step.get("tool") in data_tools()
            and isinstance(content, dict)
            and "available" in content.values()
        ):
            return index
    return None


def verify_stored_redacted(
    expect: bool, seen: Observed, values: set[str], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """The stored record of each turn that read data: statuses only for the read, every
    later step redacted, none of ``values`` (the data the model saw) anywhere."""
    path: YamlPath = ("stored_redacted",)
    reading = [t for t in seen.turns if t.get("data_read")]
    if not reading:
        return [Miss(path, "expected a turn that read user data, but no turn of this step did")], []
    misses: list[Miss] = []
    for turn in reading:
        steps = list(turn.get("steps") or [])
        start = _read_index(steps)
        if start is None:
            misses.append(Miss(path, "the stored turn read data but no step shows where"))
            continue
        read = steps[start]
        content = read.get("content")
        if not read.get("redacted") and not (
            isinstance(content, dict) and all(isinstance(v, str) for v in content.values())
        ):
            misses.append(
                Miss(path, f"the stored data-access result is not statuses only: {quoted(content)}")
            )
        reply = turn.get("reply")
        for offset, step in enumerate(steps[start + 1 :], start + 1):
            final = (
                offset == len(steps) - 1
                and step.get("type") == "text"
                and step.get("content") == reply
            )
            if not final and not (step.get("redacted") and step.get("content") is None):
                misses.append(
                    Miss(
                        path,
                        f"step {offset + 1} of the stored turn ({step.get('type')} "
                        f"{step.get('tool') or ''}) comes after the data read but is not "
                        f"redacted: {quoted(step.get('content'))}",
                    )
                )
        # Only steps and the question card hold what the model produced (ids and times
        # could match a number by chance); the reply keeps its text by design (SPEC §4).
        stored = json.dumps(
            {"steps": steps, "question": turn.get("question")}, ensure_ascii=False, default=str
        )
        if isinstance(reply, str) and reply:
            stored = stored.replace(json.dumps(reply, ensure_ascii=False)[1:-1], "")
        leaked = sorted(v for v in values if v in stored)
        if leaked:
            misses.append(
                Miss(path, f"the stored turn contains user-data values: {', '.join(leaked[:5])}")
            )
    return misses, []
