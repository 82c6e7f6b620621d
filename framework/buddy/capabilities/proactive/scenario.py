"""Proactive service in scenario files: the step ``trigger`` (fire a proactive trigger as
the platform would) and the expectation ``subscriptions`` (each key's status after the
step)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from buddy.capabilities.proactive.manifest import DataUpdatedTrigger, EventTrigger
from buddy.testing.expectations import Miss, Observed, Text

if TYPE_CHECKING:
    from buddy.manifest.yamlio import YamlPath
    from buddy.testing.parts import StepRun

__all__ = ["SubscriptionsExpect", "TriggerSpec"]


def _trigger_tag(value: Any) -> str:
    return "mapping" if isinstance(value, dict) else "text"


TriggerSpec = Annotated[
    Annotated[Literal["workout.completed", "sleep.ready"], Tag("text")]
    | Annotated[
        Annotated[EventTrigger | DataUpdatedTrigger, Field(discriminator="type")], Tag("mapping")
    ],
    Discriminator(_trigger_tag),
]
SubscriptionsExpect = dict[Text, Literal["active", "closed", "absent"]]


async def trigger(value: Any, path: YamlPath, run: StepRun) -> None:
    """Fire the trigger for the conversation's first member."""
    body: dict[str, Any] = {"identity": run.identity, "member_id": run.member_id(None)}
    if isinstance(value, str):
        body["type"] = value
    elif isinstance(value, DataUpdatedTrigger):
        body["type"] = "data.updated"
        if value.dataset is not None:
            body["dataset"] = value.dataset
    else:
        body["type"] = value.type
    await run.platform.dev("POST", "/triggers", json=body)


async def subscriptions(run: StepRun, seen: Observed) -> dict[str, str]:
    """The conversation's subscriptions after the step, key → status."""
    listed = await run.platform.dev(
        "GET", "/proactive/subscriptions", params={"identity": run.identity}
    )
    return {
        str(s["key"]): str(s["status"])
        for s in listed["subscriptions"]
        if s.get("conversation_id") == run.cid
    }


def verify_subscriptions(
    expect: dict[str, str], seen: Observed, state: dict[str, str], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """Each key has its status (``absent``: no such subscription)."""
    failures = []
    for key, status in expect.items():
        have = state.get(key, "absent")
        if have != status:
            failures.append(
                Miss(
                    ("subscriptions", key),
                    f"expected subscription {key} to be {status}, got {have}",
                )
            )
    return failures, []


def show_subscriptions(state: dict[str, str]) -> dict[str, str]:
    """Each subscription of the conversation, for a replay: ``subscription KEY`` → status."""
    return {f"subscription {key}": status for key, status in sorted(state.items())}
