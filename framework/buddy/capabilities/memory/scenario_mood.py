"""The companion layer's ``mood`` expectation in scenario files (re-exported by
:mod:`~buddy.capabilities.memory.scenario`, which registers it): the character's state
now, decayed to the platform clock — toward the private chat's one person, or in a group
toward the member ``member:`` names (the state is kept per member); a list checks
several members at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Field, Tag

from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.state import Mood, decayed, start
from buddy.testing.expectations import Miss, Observed, Strict, Text, items_of, mapping_or_list

if TYPE_CHECKING:
    from buddy.manifest.yamlio import YamlPath
    from buddy.testing.parts import StepCheck

__all__ = ["MoodCheck", "MoodExpect", "check_mood", "show_mood", "verify_mood"]

Bound = Annotated[float, Field(ge=0, le=1)]
Level = Bound | Annotated[list[Bound], Field(min_length=2, max_length=2)]


class MoodCheck(Strict):
    """The character's state toward one person: each value to two decimals, or within
    ``[low, high]``."""

    anger: Level | None = None
    sadness: Level | None = None
    trust: Level | None = None
    member: Text | None = Field(
        default=None,
        description="Toward whom: a member's name (required in a group, where the state is "
        "kept per member; a private chat's one member may be left out).",
    )


MoodExpect = Annotated[
    Annotated[MoodCheck, Tag("mapping")] | Annotated[list[MoodCheck], Tag("list")],
    Discriminator(mapping_or_list),
]


def check_mood(value: MoodCheck | list[MoodCheck], path: YamlPath, check: StepCheck) -> None:
    """The buddy has a character to be in a mood; each ``member`` is one of the
    conversation's, and in a group each check names one."""
    if check.blueprint is not None and not isinstance(
        check.blueprint.sections.get("character"), CharacterSpec
    ):
        check.issue(
            path,
            "character-undeclared",
            "the buddy declares no `character:`, so it has no mood",
            "add `character: ...` to buddy.yaml",
            key=True,
        )
    for item_path, item in items_of(path, value):
        if item.member is not None:
            check.member((*item_path, "member"), item.member)
        elif check.kind == "group":
            check.issue(
                item_path,
                "member-required",
                "in a group the mood is kept toward each member: say whose",
                "add `member:` with a member's name",
            )


def _toward(state: dict[str, Any], spec: CharacterSpec, member: str | None) -> Mood:
    """The stored mood toward ``member`` (a group member's id; ``None``: a private
    chat's one person), decayed to now — calm while nothing moved it."""
    stored = state["state"]
    moods = stored.get("moods") if isinstance(stored.get("moods"), dict) else {}
    raw = moods.get(member) if member is not None and moods else stored.get("mood")
    mood = Mood(**raw) if isinstance(raw, dict) else start(spec, state["now"])
    return decayed(mood, spec, state["now"])


def verify_mood(
    expect: MoodCheck | list[MoodCheck], seen: Observed, state: dict[str, Any], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """The character's state now toward each person named (decayed to the platform
    clock): each value to two decimals, or within ``[low, high]``."""
    spec = state["run"].blueprint.sections.get("character")
    if not isinstance(spec, CharacterSpec):
        return [Miss(("mood",), "the buddy declares no `character:`")], []
    failures: list[Miss] = []
    for path, item in items_of(("mood",), expect):
        member = None if item.member is None else state["run"].member_id(item.member)
        mood = _toward(state, spec, member)
        toward = f" toward {item.member}" if item.member is not None else ""
        for name in ("anger", "sadness", "trust"):
            want = getattr(item, name)
            if want is None:
                continue
            have = round(getattr(mood, name), 2)
            low, high = (want, want) if not isinstance(want, list) else want
            shown = f"{want:g}" if not isinstance(want, list) else f"{low:g}–{high:g}"
            if not low - 0.005 <= have <= high + 0.005:
                failures.append(
                    Miss((*path, name), f"expected {name} {shown}{toward}, got {have:g}")
                )
                continue
            given = _given(state, seen, name) if item.member is None else None
            if given is not None and not low - 0.005 <= given <= high + 0.005:
                failures.append(
                    Miss(
                        (*path, name),
                        f"{name} is {have:g} now, but the step's last turn gave the model"
                        f" {given:g} (its message was felt after the turn's prompt was made)",
                    )
                )
    return failures, []


def _given(state: dict[str, Any], seen: Observed, name: str) -> float | None:
    """``name`` (anger, sadness, trust) as the step's last model request was given it in
    a private chat; ``None`` when no request of this step reached the model."""
    run = state["run"]
    if not seen.systems or run.blueprint is None:
        return None
    kept = run.server.buddy.turns.sent.get(run.cid)
    sent = kept[-1] if kept else None
    if sent is None or sent.system != seen.systems[-1]:
        return None
    character = sent.context.get("character")
    return float(character[name]) if isinstance(character, dict) and name in character else None


def show_mood(state: dict[str, Any]) -> dict[str, str]:
    """The character's state now, for a replay: ``mood anger`` … (in a group ``mood
    anger toward NAME`` for each member it is kept toward) → the value to two decimals."""
    spec = state["run"].blueprint.sections.get("character")
    if not isinstance(spec, CharacterSpec):
        return {}
    stored = state["state"]
    moods = stored.get("moods")
    pairs = stored.get("members")
    names = {
        str(p[0]): str(p[1])
        for p in (pairs if isinstance(pairs, list) else [])
        if isinstance(p, list) and len(p) == 2
    }
    toward: list[tuple[str, str | None]] = [("", None)]
    if isinstance(moods, dict) and moods:
        toward = [(f" toward {names.get(m, m)}", str(m)) for m in sorted(moods)]
    out: dict[str, str] = {}
    for suffix, member in toward:
        mood = _toward(state, spec, member)
        for name in ("anger", "sadness", "trust"):
            out[f"mood {name}{suffix}"] = f"{getattr(mood, name):.2f}"
    return out
