"""Memory in scenario files: the expectations ``memory`` (entries by key: exact text, or
``null`` for none) and ``memory_keys`` (every key), read as the buddy reads them; and
the companion layer's words — the step key ``extract:`` (the extractor's scripted answer
for the step's message) and the expectations ``facts``, ``card``, ``mood`` and ``lore``.

In a group the layer keeps facts and mood per member: a ``facts`` item's ``member`` names
whose fact it is (its ``user`` slots are that member), ``mood`` (in
:mod:`~buddy.capabilities.memory.scenario_mood`) names toward whom, and what a failing
expectation prints names the members."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from buddy.capabilities.lore.compiled import Lore
from buddy.capabilities.memory.compiled import AutoMemory, RelationSpec
from buddy.capabilities.memory.extract import from_model
from buddy.capabilities.memory.ledger import Entry, as_member, decode, expire, member_of
from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX
from buddy.capabilities.memory.prompt import ledger_context
from buddy.capabilities.memory.relations import SlotValues
from buddy.capabilities.memory.scenario_mood import (
    MoodExpect,
    check_mood,
    show_mood,
    verify_mood,
)
from buddy.manifest.schema import Strict, did_you_mean
from buddy.testing.expectations import Miss, Observed, Text, quoted

if TYPE_CHECKING:
    from buddy.manifest.yamlio import YamlPath
    from buddy.testing.parts import StepCheck, StepRun

__all__ = [
    "CardExpect",
    "ExtractScript",
    "FactExpect",
    "FactsExpect",
    "LoreExpect",
    "MemoryExpect",
    "MemoryKeysExpect",
    "MoodExpect",
    "check_mood",
    "show_mood",
    "verify_mood",
]

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


# ---------------------------------------------------------------- the companion layer
# `extract:` scripts what the extractor answers for the step's message; `facts`, `card`,
# `mood` and `lore` check what the layer kept, as the platform holds it.


class ScriptedFact(Strict):
    """A fact the extractor says it found."""

    relation: str = Field(min_length=1, description="A relation the buddy declares.")
    slots: SlotValues = Field(description="Slot → value, as the relation's spec types them.")
    modality: Literal["asserted", "request"] = "asserted"


class ScriptedAppraisal(Strict):
    """What the extractor says the message does to the buddy (each 0 to 1)."""

    offence: float = Field(default=0.0, ge=0, le=1)
    apology: float = Field(default=0.0, ge=0, le=1)
    care: float = Field(default=0.0, ge=0, le=1)
    explained: bool = False


class ExtractScript(Strict):
    """The extractor's answer for this step's message (no model is asked)."""

    facts: list[ScriptedFact] = Field(default_factory=list)
    appraisal: ScriptedAppraisal | None = None


async def run_extract(value: ExtractScript, path: YamlPath, run: StepRun) -> None:
    """Script the extractor's next answer."""
    run.layer_script.push(json.dumps(value.model_dump(exclude_none=True), ensure_ascii=False))


def _relations(path: YamlPath, check: StepCheck) -> dict[str, RelationSpec] | None:
    """The buddy's relations by name; ``None`` (reported at ``path``'s key) when it
    declares none, or when only the format is checked."""
    if check.blueprint is None:
        return None
    memory = check.blueprint.sections.get("memory")
    if not isinstance(memory, AutoMemory) or not memory.relations:
        check.issue(
            path,
            "memory-undeclared",
            "the buddy declares no relations, so no fact can be kept",
            "add `memory: {auto: true, relations: [...]}` to buddy.yaml",
            key=True,
        )
        return None
    return {r.name: r for r in memory.relations}


def _fact_names(
    relation: str,
    slots: dict[str, Any],
    path: YamlPath,
    relations: dict[str, RelationSpec],
    check: StepCheck,
) -> bool:
    """The relation is one the buddy declares and each slot one of its spec's (each
    reported where it is written); whether they are."""
    spec = relations.get(relation)
    if spec is None:
        names = list(relations)
        owner = check.blueprint.name if check.blueprint else "the buddy"
        check.issue(
            (*path, "relation"),
            "unknown-relation",
            f"{owner} declares no relation `{relation}`",
            did_you_mean(relation, names) or f"relations: {', '.join(names)}",
        )
        return False
    known = [s.name for s in spec.slots]
    fine = True
    for slot in slots:
        if slot not in known:
            fine = False
            check.issue(
                (*path, "slots", slot),
                "unknown-slot",
                f"the relation {relation} has no slot `{slot}`",
                did_you_mean(slot, known) or f"slots: {', '.join(known)}",
                key=True,
            )
    return fine


def check_extract(value: ExtractScript, path: YamlPath, check: StepCheck) -> None:
    """Each scripted fact is one the buddy's relations can hold (what the runtime would
    drop is a mistake in the scenario, reported where it is)."""
    if not value.facts or check.blueprint is None:
        return
    relations = _relations((*path, "facts"), check)
    memory = check.blueprint.sections.get("memory")
    if relations is None or not isinstance(memory, AutoMemory):
        return
    for index, fact in enumerate(value.facts):
        if not _fact_names(fact.relation, fact.slots, (*path, "facts", index), relations, check):
            continue
        answer = json.dumps({"facts": [fact.model_dump()]}, ensure_ascii=False)
        for reason in from_model(memory, answer).dropped:
            check.issue(
                (*path, "facts", index),
                "fact-invalid",
                reason.removeprefix("facts[0]: "),
                f"relations: {', '.join(r.name for r in memory.relations)}",
            )


class FactExpect(Strict):
    """A fact the layer holds (or does not)."""

    relation: str = Field(min_length=1)
    slots: SlotValues = Field(
        default_factory=dict, description="Slots it has (others may be there too)."
    )
    value: Any = Field(
        default=None, description="Its value (a `delta`'s total; a proposal's amount)."
    )
    status: Literal["kept", "proposed", "disputed", "absent"] = Field(
        default="kept", description="`absent`: no such fact (expired, evicted, refused)."
    )
    member: Text | None = Field(
        default=None,
        description="Whose fact: a member's name (in a group, the member it is about, and "
        "what its `user` slots mean; required there for slots that say `user`).",
    )


FactsExpect = list[FactExpect]


def check_facts(value: list[FactExpect], path: YamlPath, check: StepCheck) -> None:
    """Each fact names a relation the buddy declares and slots of its spec, and a member
    of the conversation; in a group, a fact whose slots say ``user`` names whose."""
    relations = _relations(path, check)
    for index, fact in enumerate(value):
        if relations is not None:
            _fact_names(fact.relation, fact.slots, (*path, index), relations, check)
        if fact.member is not None:
            check.member((*path, index, "member"), fact.member)
        elif check.kind == "group" and "user" in fact.slots.values():
            check.issue(
                (*path, index),
                "member-required",
                "in a group each member's facts are their own: say whose `user` this is",
                "add `member:` with a member's name",
            )


def check_card(value: str, path: YamlPath, check: StepCheck) -> None:
    """The buddy has automatic memory to make a card of."""
    if check.blueprint is not None and not isinstance(
        check.blueprint.sections.get("memory"), AutoMemory
    ):
        check.issue(
            path,
            "memory-undeclared",
            "the buddy declares no `memory:`, so it has no card",
            "add `memory: {auto: true, relations: [...]}` to buddy.yaml",
            key=True,
        )


def check_lore(value: list[str], path: YamlPath, check: StepCheck) -> None:
    """Each name is an entry of the buddy's lore books (``name``, or ``book/name``)."""
    if check.blueprint is None:
        return
    lore = check.blueprint.sections.get("lore")
    if not isinstance(lore, Lore):
        check.issue(
            path,
            "lore-undeclared",
            "the buddy declares no `lore:`, so no entry can be in its prompt",
            "add `lore: <folder of books>` to buddy.yaml",
            key=True,
        )
        return
    for index, name in enumerate(value):
        names = [e.id if "/" in name else e.name for e in lore.entries]
        if name not in names:
            check.issue(
                (*path, index),
                "unknown-lore",
                f"{check.blueprint.name} has no lore entry `{name}`",
                did_you_mean(name, names) or f"entries: {', '.join(names) or 'none'}",
            )


LoreExpect = list[Text]
#: The card, exactly (``""``: nothing known yet).
CardExpect = str


async def layer_state(run: StepRun, seen: Observed) -> dict[str, Any]:
    """What the layer holds after the step: its facts and state as stored, the platform
    clock, and the last turn's context report."""
    from buddy.capabilities.companion.engine import STATE_KEY, Companion

    stored = await entries(run, seen)
    now = float((await run.platform.dev("GET", "/clock"))["time"])
    ledger = {}
    for key, text in stored.items():
        entry = decode(text) if key.startswith(AUTO_KEY_PREFIX) else None
        if entry is not None:
            ledger[key] = entry
    report = None
    for layer in run.server.buddy.layers:
        if isinstance(layer, Companion) and run.cid in layer.minds:
            reports = layer.minds[run.cid].reports
            report = reports[-1] if reports else None
    state = {}
    with contextlib.suppress(ValueError):
        state = json.loads(stored.get(STATE_KEY, "{}"))
    return {"ledger": ledger, "state": state, "now": now, "report": report, "run": run}


def _members(state: dict[str, Any]) -> dict[str, str]:
    """A group's members as the layer stored them: id → name (empty in a private chat)."""
    pairs = state["state"].get("members")
    return {
        str(p[0]): str(p[1])
        for p in (pairs if isinstance(pairs, list) else [])
        if isinstance(p, list) and len(p) == 2
    }


def _matches(
    entry: Entry, expect: FactExpect, member: str | None, memory: AutoMemory | None
) -> bool:
    """Whether ``entry`` is the fact ``expect`` describes; ``member``: the id of the group
    member it names (then the fact is theirs, and its ``user`` slots are them)."""
    spec = memory.relation(entry.relation) if memory is not None else None
    if entry.relation != expect.relation:
        return False
    slots = dict(expect.slots)
    if member is not None and spec is not None:
        if member_of(spec, entry.slots) != member:
            return False
        slots = as_member(spec, slots, member)
    return all(entry.slots.get(k) == v for k, v in slots.items())


def verify_facts(
    expect: list[FactExpect], seen: Observed, state: dict[str, Any], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """Each listed fact is held with its status and value, or (``absent``) is not — in a
    group, the fact of the member named."""
    failures: list[Miss] = []
    now = state["now"]
    names = _members(state)
    memory = state["run"].blueprint.sections.get("memory")
    memory = memory if isinstance(memory, AutoMemory) else None
    held = [e for e in state["ledger"].values() if e.expires is None or e.expires > now]
    for index, want in enumerate(expect):
        path: YamlPath = ("facts", index)
        member = None
        if want.member is not None and names:  # a private chat's facts say `user`
            member = state["run"].member_id(want.member)
        found = [e for e in held if _matches(e, want, member, memory)]
        of = f" of {want.member}" if want.member is not None else ""
        what = f"{want.relation}{of}"
        if want.status == "absent":
            if found:
                shown = _shown(found, names, memory)
                failures.append(Miss(path, f"expected no {want.relation} fact{of}, got {shown}"))
            continue
        if not found:
            have = _shown(held, names, memory) if held else "no facts"
            failures.append(Miss(path, f"expected a {want.relation} fact{of}, got {have}"))
            continue
        entry = found[0]
        value = entry.proposed if want.status == "proposed" else entry.value
        if entry.status != want.status or (want.value is not None and value != want.value):
            failures.append(
                Miss(
                    path,
                    f"expected {what} {want.status} = {quoted(want.value)}, "
                    f"got {entry.status} = {quoted(value)}",
                )
            )
    return failures, []


def _shown(entries: list[Entry], names: dict[str, str], memory: AutoMemory | None) -> str:
    """The facts as a failure names them (in a group with whose they are)."""
    shown = []
    for e in entries:
        spec = memory.relation(e.relation) if memory is not None else None
        member = member_of(spec, e.slots) if spec is not None else None
        whose = f" of {names.get(member, member)}" if member is not None else ""
        value = quoted(e.proposed if e.status == "proposed" else e.value)
        shown.append(f"{e.relation}{whose} {e.status} {value}")
    return ", ".join(shown)


def verify_card(
    expect: str, seen: Observed, state: dict[str, Any], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """The person card the model would see now is exactly this."""
    memory = state["run"].blueprint.sections.get("memory")
    if not isinstance(memory, AutoMemory):
        return [Miss(("card",), "the buddy declares no `memory:`")], []
    # In a group the card names each member's facts, the one who spoke last first.
    names = dict(reversed(_members(state).items()))
    card = ledger_context(memory, expire(state["ledger"], state["now"]).values(), names)["card"]
    if card != expect:
        return [Miss(("card",), f"expected the card {quoted(expect)}, got {quoted(card)}")], []
    for line in card.splitlines():
        missed = unseen(("card",), f"the card's line {quoted(line)}", line, seen)
        if missed is not None:
            return [missed], []
    return [], []


def verify_lore(
    expect: list[str], seen: Observed, state: dict[str, Any], exact: bool
) -> tuple[list[Miss], list[Miss]]:
    """The lore entries (names, or ``book/name``) that went into the step's last turn's
    prompt — exactly these, in any order."""
    report = state["report"]
    got = (
        []
        if report is None
        else [n.removeprefix("lore:") for n, _ in report.parts if n.startswith("lore:")]
    )
    names = sorted(g if any("/" in e for e in expect) else g.split("/", 1)[1] for g in got)
    if sorted(expect) != names:
        left = (
            []
            if report is None
            else [f"{n.removeprefix('lore:')} ({why})" for n, why in report.left_out]
        )
        more = f"; left out: {', '.join(left)}" if left else ""
        return [
            Miss(("lore",), f"expected lore {quoted(sorted(expect))}, got {quoted(names)}{more}")
        ], []
    # What the model was given: the entry's content as this turn said it (macros replaced),
    # in the system prompt or — an entry at a depth — among the request's messages.
    said = dict(report.texts) if report is not None else {}
    history = seen.histories[-1] if seen.histories else ()
    for name in got:
        text = str(said.get(f"lore:{name}", ""))
        if any(text in m.content for m in history):
            continue
        missed = unseen(("lore",), f"the lore entry `{name}`", text, seen)
        if missed is not None:
            return [missed], []
    return [], []


def unseen(path: YamlPath, what: str, text: str, seen: Observed) -> Miss | None:
    """A miss when the step's last model request was not given ``text`` (``what``) in
    its system prompt — selected by the layer is not enough; ``None`` when it was, or
    when no request reached the model in the step."""
    if not text or not seen.systems or text in seen.systems[-1]:
        return None
    return Miss(path, f"{what} was selected, but the system prompt the model received lacks it")


# ---------------------------------------------------------------- replays
# What `buddy diff --replay` shows of the layer after each step, label → text; the two
# sides are compared label by label, so a label names the fact (its relation and the
# slots that identify it) and its text is what may change (status and value).


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else quoted(value)


def show_facts(state: dict[str, Any]) -> dict[str, str]:
    """Each fact held now: ``fact RELATION(slot=value, …)`` (with ``of MEMBER`` in a
    group) → ``STATUS VALUE`` (a proposal's amount; a dispute's other claims)."""
    memory = state["run"].blueprint.sections.get("memory")
    if not isinstance(memory, AutoMemory):
        return {}
    names = _members(state)
    out: dict[str, str] = {}
    for entry in expire(state["ledger"], state["now"]).values():
        spec = memory.relation(entry.relation)
        keyed = spec.key if spec is not None else tuple(entry.slots)
        slots = ", ".join(f"{k}={entry.slots.get(k)}" for k in keyed if k in entry.slots)
        member = member_of(spec, entry.slots) if spec is not None else None
        whose = f" of {names.get(member, member)}" if member is not None and names else ""
        value = entry.proposed if entry.status == "proposed" else entry.value
        text = f"{entry.status} {_number(value)}"
        if entry.claims:
            text += " (also said: " + ", ".join(map(_number, entry.claims)) + ")"
        out[f"fact {entry.relation}({slots}){whose}"] = text
    return out


def show_card(state: dict[str, Any]) -> dict[str, str]:
    """The person card the model would see now (``card``)."""
    memory = state["run"].blueprint.sections.get("memory")
    if not isinstance(memory, AutoMemory):
        return {}
    names = dict(reversed(_members(state).items()))
    ledger = expire(state["ledger"], state["now"]).values()
    return {"card": str(ledger_context(memory, ledger, names)["card"])}


def show_lore(state: dict[str, Any]) -> dict[str, str]:
    """The lore entries the step's last turn put into the prompt (``lore in``) and the
    ones it left out, with why (``lore left out``)."""
    report = state["report"]
    if not isinstance(state["run"].blueprint.sections.get("lore"), Lore) or report is None:
        return {}
    went = sorted(n.removeprefix("lore:") for n, _ in report.parts if n.startswith("lore:"))
    left = sorted(
        f"{n.removeprefix('lore:')} ({why})" for n, why in report.left_out if n.startswith("lore:")
    )
    return {"lore in": ", ".join(went) or "none", "lore left out": ", ".join(left) or "none"}


def show_memory(memory: dict[str, str]) -> dict[str, str]:
    """Memory entries other than the layer's own (its facts and state are shown as
    facts, card and mood): ``memory KEY`` → text."""
    return {f"memory {k}": v for k, v in memory.items() if not k.startswith(AUTO_KEY_PREFIX)}
