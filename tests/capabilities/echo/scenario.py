"""The echo capability in scenario files: the step ``echo_keep`` (the platform keeps a
text for the conversation) and the expectation ``echoes`` (every text kept, in order)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from buddy.manifest.yamlio import YamlPath
from buddy.testing.expectations import Miss, Observed, quoted
from buddy.testing.parts import StepCheck, StepRun
from tests.capabilities.echo.tools import ECHO_CHARS, ECHOES_MAX

EchoText = Annotated[str, Field(min_length=1, max_length=ECHO_CHARS)]
Echoes = list[EchoText]


async def _call(run: StepRun, method: str, body: Any = None) -> Any:
    response = await run.platform.http.request(
        method,
        "/internal/v1/echo",
        json=body,
        headers={"Authorization": f"Bearer {run.token}", "X-Conversation-Id": run.cid},
    )
    response.raise_for_status()
    return response.json()


async def keep(value: str, path: YamlPath, run: StepRun) -> None:
    await _call(run, "POST", {"text": value})  # over the limit: the platform's 409 fails it


async def texts(run: StepRun, seen: Observed) -> list[str]:
    listed: list[str] = (await _call(run, "GET"))["texts"]
    return listed


def check_echoes(value: list[str], path: YamlPath, check: StepCheck) -> None:
    if len(value) > ECHOES_MAX:
        check.issue(
            (*path, ECHOES_MAX),
            "echo-full",
            f"a conversation keeps at most {ECHOES_MAX} echoes; this lists {len(value)}",
        )


def verify_echoes(
    expect: list[str], seen: Observed, state: list[str], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    if expect != state:
        return [Miss(("echoes",), f"expected the echoes {quoted(expect)}, got {quoted(state)}")], []
    return [], []
