"""Memory in scenario files: the expectations ``memory`` (entries by key: exact text, or
``null`` for none) and ``memory_keys`` (every key), read as the buddy reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from buddy.testing.expectations import Miss, Observed, Text, quoted

if TYPE_CHECKING:
    from buddy.manifest.yamlio import YamlPath
    from buddy.testing.parts import StepRun

__all__ = ["MemoryExpect", "MemoryKeysExpect"]

MemoryExpect = dict[Annotated[str, Field(min_length=1)], str | None]
MemoryKeysExpect = list[Text]


async def entries(run: StepRun, seen: Observed) -> dict[str, str]:
    """The conversation's memory after the step (``GET /internal/v1/memory`` as the buddy)."""
    response = await run.platform.http.get(
        "/internal/v1/memory",
        headers={"Authorization": f"Bearer {run.token}", "X-Conversation-Id": run.cid},
    )
    response.raise_for_status()
    return {str(e["key"]): str(e["text"]) for e in response.json()["entries"]}


def verify_memory(
    expect: dict[str, str | None], seen: Observed, memory: dict[str, str], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """Each key has exactly its text, or no entry; texts are noted, not compared, against
    a real model."""
    failures: list[Miss] = []
    notes: list[Miss] = []
    for key, text in expect.items():
        path: YamlPath = ("memory", key)
        have = memory.get(key)
        if text is None:
            if have is not None:
                failures.append(Miss(path, f"expected no memory entry {key}, got {quoted(have)}"))
        elif have is None:
            keys = sorted(memory)
            failures.append(
                Miss(
                    path,
                    f"expected the memory entry {key} = {quoted(text)}, got no such entry"
                    + (f" (keys: {', '.join(keys)})" if keys else " (memory is empty)"),
                )
            )
        elif not exact:
            notes.append(Miss(path, "memory text not checked against a real model"))
        elif have != text:
            failures.append(
                Miss(path, f"expected the memory entry {key} = {quoted(text)}, got {quoted(have)}")
            )
    return failures, notes


def verify_memory_keys(
    expect: list[str], seen: Observed, memory: dict[str, str], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """The memory has exactly these keys, in any order."""
    have = sorted(memory)
    if sorted(expect) != have:
        return [
            Miss(
                ("memory_keys",),
                f"expected memory keys {quoted(sorted(expect))}, got {quoted(have)}",
            )
        ], []
    return [], []
