"""The ``expect:`` vocabulary of scenario files: what can be checked after a step, and how.

The models are what an author writes (strict: unknown keys are errors). :func:`check`
compares one ``expect:`` mapping with what the step produced (:class:`Observed`) and the
platform's state after it (:class:`State`). It is pure: it answers each problem as a
:class:`Miss` whose path is relative to the ``expect:`` mapping, and the runner turns
that into the file, line and column of the YAML node.

Against a real model (``exact=False``) the checks that compare model-written text exactly
— an exact ``reply``, a question card's text and options, memory texts — are skipped
with a note; ``contains``, ``matches`` and everything about tools and state still run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from buddy.capabilities import data_tools
from buddy.capabilities.data.manifest import DatasetId
from buddy.manifest.yamlio import YamlPath
from buddy.runtime.loop import DENIAL_PREFIX

__all__ = [
    "DENIAL_PREFIX",
    "TOOL_NAME_PATTERN",
    "CallSeen",
    "CalledCheck",
    "ConsentCheck",
    "Data",
    "DeniedCheck",
    "Expect",
    "Miss",
    "Observed",
    "QuestionCheck",
    "ReplyCheck",
    "ResultCheck",
    "ResultSeen",
    "State",
    "Strict",
    "Text",
    "ToolName",
    "WidgetCheck",
    "check",
    "data_leaves",
    "plain",
    "shape",
    "subset",
    "text_or_mapping",
]

"""How the agent loop words a ``before_tool_call`` denial for the model."""

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
MIN_LEAF_CHARS = 4
"""Data values shorter than this are too common to prove a leak (``7``, ``ok``)."""
SHOWN_CHARS = 160


class Strict(BaseModel):
    """Base of every model a scenario author writes."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise PydanticCustomError(
            "regex",
            "`{value}` is not a valid regular expression: {problem}",
            {"value": value, "problem": str(exc)},
        ) from None
    return value


def plain(value: Any) -> Any:
    """Replace the YAML dates and times in ``value`` by the ISO text the author wrote.

    An unquoted ``date: 2026-12-01`` is a date to YAML, but a string to a tool or a record.
    """
    if isinstance(value, date | datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


Text = Annotated[str, Field(min_length=1)]
Data = Annotated[dict[str, Any], AfterValidator(plain)]
"""JSON-like data a scenario writes (tool arguments, records); dates become ISO text."""
ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
Regex = Annotated[str, Field(min_length=1), AfterValidator(_check_regex)]


# Union tags decided by the value's shape. Every value gets a tag, so a wrong shape is
# reported by the mapping member ("must be a mapping (got …)"), never as an unknown tag.


def shape(value: Any) -> str:
    """``text``, ``list`` or ``mapping``: the member of a text | mapping | list union."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    return "mapping"


def text_or_mapping(value: Any) -> str:
    """``text`` or ``mapping``: the member of a text | mapping union."""
    return "text" if isinstance(value, str) else "mapping"


def _mapping_or_list(value: Any) -> str:
    return "list" if isinstance(value, list) else "mapping"


def _bool_or_mapping(value: Any) -> str:
    return "flag" if isinstance(value, bool) else "mapping"


# ---------------------------------------------------------------- the expectations


class ReplyCheck(Strict):
    """Checks on the step's reply text (the buddy's last text message in the step)."""

    equals: str | None = Field(default=None, description="The whole reply, exactly.")
    contains: Text | list[Text] | None = Field(
        default=None, description="Text(s) the reply contains."
    )
    matches: Regex | None = Field(
        default=None, description="A regular expression (Python syntax) found in the reply."
    )


ReplyExpect = Annotated[
    Annotated[str, Tag("text")] | Annotated[ReplyCheck, Tag("mapping")],
    Discriminator(text_or_mapping),
]


class CalledCheck(Strict):
    """A tool the model called in this step, with (a subset of) its arguments."""

    name: ToolName
    args: Data | None = Field(
        default=None, description="Arguments the call had (a subset: other keys may be there)."
    )


CalledItem = Annotated[
    Annotated[ToolName, Tag("text")] | Annotated[CalledCheck, Tag("mapping")],
    Discriminator(text_or_mapping),
]
CalledExpect = Annotated[
    Annotated[ToolName, Tag("text")]
    | Annotated[CalledCheck, Tag("mapping")]
    | Annotated[list[CalledItem], Tag("list")],
    Discriminator(shape),
]


class ResultCheck(Strict):
    """A result a tool gave in this step (what the model read)."""

    tool: ToolName
    contains: Text | None = Field(default=None, description="Text the result contains.")
    error: bool | None = Field(default=None, description="Whether it is an error result.")


ResultExpect = Annotated[
    Annotated[ResultCheck, Tag("mapping")] | Annotated[list[ResultCheck], Tag("list")],
    Discriminator(_mapping_or_list),
]


class DeniedCheck(Strict):
    """A tool call a ``before_tool_call`` hook refused in this step."""

    tool: ToolName
    reason: Text | None = Field(default=None, description="Text the denial reason contains.")


DeniedItem = Annotated[
    Annotated[ToolName, Tag("text")] | Annotated[DeniedCheck, Tag("mapping")],
    Discriminator(text_or_mapping),
]
DeniedExpect = Annotated[
    Annotated[ToolName, Tag("text")]
    | Annotated[DeniedCheck, Tag("mapping")]
    | Annotated[list[DeniedItem], Tag("list")],
    Discriminator(shape),
]


class QuestionCheck(Strict):
    """The question card sent in this step."""

    text: Text | None = Field(default=None, description="The question, exactly.")
    options: list[Text] | None = Field(default=None, description="The options, in order.")


class ConsentCheck(Strict):
    """The data-access (consent) card sent in this step."""

    kind: Literal["healthkit", "location", "calendar"] | None = None
    datasets: list[DatasetId] | None = Field(
        default=None, description="The datasets it asks for (healthkit), in any order."
    )


ConsentExpect = Annotated[
    Annotated[Literal[True], Tag("flag")] | Annotated[ConsentCheck, Tag("mapping")],
    Discriminator(_bool_or_mapping),
]


class WidgetCheck(Strict):
    """A widget of the conversation, a record in it, and whether its card was sent."""

    type: Text = Field(description="The widget type (a directory under `widgets/`).")
    title: Text | None = None
    module: Text | None = Field(default=None, description="The module `record` is in.")
    record: Data | None = Field(
        default=None, description="A record whose data has these fields (a subset)."
    )
    sent: bool | None = Field(default=None, description="Whether a card of it is in the chat.")


WidgetExpect = Annotated[
    Annotated[WidgetCheck, Tag("mapping")] | Annotated[list[WidgetCheck], Tag("list")],
    Discriminator(_mapping_or_list),
]


class Expect(Strict):
    """What must hold after a step. Every key is optional; all given must hold."""

    reply: ReplyExpect | None = Field(
        default=None,
        description="The buddy's last text reply in this step: the exact text, or "
        "`{equals, contains, matches}`.",
    )
    no_reply: bool | None = Field(
        default=None,
        description="`true`: the users received nothing in this step (e.g. a skipped "
        "proactive turn); `false`: they received something.",
    )
    messages: int | None = Field(
        default=None, ge=0, description="How many messages the users received in this step."
    )
    tool_called: CalledExpect | None = Field(
        default=None, description="Tools the model called in this step (with argument subsets)."
    )
    tool_result: ResultExpect | None = Field(
        default=None, description="Results tools gave in this step."
    )
    denied: DeniedExpect | None = Field(
        default=None, description="Tool calls a `before_tool_call` hook refused in this step."
    )
    question: QuestionCheck | None = Field(
        default=None, description="The question card sent in this step."
    )
    consent_card: ConsentExpect | None = Field(
        default=None, description="A consent card was sent in this step (`true`, or its fields)."
    )
    widget: WidgetExpect | None = Field(
        default=None, description="Widgets of the conversation (state after the step)."
    )
    memory: dict[Annotated[str, Field(min_length=1)], str | None] | None = Field(
        default=None,
        description="Memory entries after the step: key → exact text, or `null` for no such entry.",
    )
    memory_keys: list[Text] | None = Field(
        default=None, description="Every memory key after the step, in any order."
    )
    subscriptions: dict[Text, Literal["active", "closed", "absent"]] | None = Field(
        default=None, description="Proactive subscriptions after the step: key → status."
    )
    stored_redacted: Literal[True] | None = Field(
        default=None,
        description="The stored record of the turn that read user data keeps only dataset "
        "statuses and the reply: no data values, every later step redacted.",
    )


# ---------------------------------------------------------------- what a step produced


@dataclass(frozen=True, slots=True)
class CallSeen:
    """A tool call the model made (arguments as parsed JSON, or the raw text)."""

    id: str
    name: str
    args: Any


@dataclass(frozen=True, slots=True)
class ResultSeen:
    """A tool result: the text the model read, or ``None`` when only a redacted record is left."""

    id: str
    name: str
    text: str | None
    is_error: bool


@dataclass
class Observed:
    """What one step produced.

    Attributes:
        messages: Messages the users received in this step (transcript entries), in order.
        calls: Tool calls the model made in this step.
        results: Tool results of this step.
        turns: The turn records the platform stored in this step.
        data_values: Texts of the user-data values the model saw in this step.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[CallSeen] = field(default_factory=list)
    results: list[ResultSeen] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    data_values: set[str] = field(default_factory=set)

    @property
    def texts(self) -> list[str]:
        """The text replies of this step."""
        return [str(m["body"].get("text", "")) for m in self.messages if m["kind"] == "text"]


@dataclass
class State:
    """The platform's state after a step (only what the expectations ask for is fetched).

    Attributes:
        memory: Memory entries, key → text.
        widgets: ``GET /dev/conversations/{id}/widgets``: widgets with records, and cards.
        subscriptions: Proactive subscriptions of the conversation, key → status.
    """

    memory: dict[str, str] | None = None
    widgets: dict[str, Any] | None = None
    subscriptions: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Miss:
    """A failed (or skipped) check: ``path`` is relative to the ``expect:`` mapping."""

    path: YamlPath
    message: str


# ---------------------------------------------------------------- checking


def _q(value: Any) -> str:
    """A value as the author would write it, shortened."""
    text = value if isinstance(value, str) else None
    shown = json.dumps(value if text is None else text, ensure_ascii=False, default=str)
    if len(shown) > SHOWN_CHARS:
        shown = shown[: SHOWN_CHARS - 2] + '…"'
    return shown


def _items(path: YamlPath, value: Any) -> Iterator[tuple[YamlPath, Any]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index), item
    else:
        yield path, value


def subset(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` has everything ``expected`` has.

    Mappings are compared key by key (recursively; ``actual`` may have more keys), lists
    item by item, everything else by equality — where ``true`` is not ``1``.
    """
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


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


def check(
    expect: Expect, seen: Observed, state: State, *, exact: bool = True
) -> tuple[list[Miss], list[Miss]]:
    """Check one ``expect:`` mapping.

    Args:
        expect: The expectations.
        seen: What the step produced.
        state: The platform's state after the step.
        exact: ``False`` against a real model: exact comparisons of model-written text
            are skipped (and noted).

    Returns:
        ``(failures, notes)``.
    """
    failures: list[Miss] = []
    notes: list[Miss] = []
    if expect.reply is not None:
        _reply(expect.reply, seen, exact, failures, notes)
    if expect.no_reply is not None:
        _no_reply(expect.no_reply, seen, failures)
    if expect.messages is not None and len(seen.messages) != expect.messages:
        failures.append(
            Miss(
                ("messages",),
                f"expected {expect.messages} message(s), got {len(seen.messages)}"
                + _listing(seen.messages),
            )
        )
    if expect.tool_called is not None:
        for path, item in _items(("tool_called",), expect.tool_called):
            failures.extend(_called(path, item, seen))
    if expect.tool_result is not None:
        for path, item in _items(("tool_result",), expect.tool_result):
            failures.extend(_result(path, item, seen))
    if expect.denied is not None:
        for path, item in _items(("denied",), expect.denied):
            failures.extend(_denied(path, item, seen))
    if expect.question is not None:
        _question(expect.question, seen, exact, failures, notes)
    if expect.consent_card is not None:
        failures.extend(_consent(expect.consent_card, seen))
    if expect.widget is not None and state.widgets is not None:
        for path, item in _items(("widget",), expect.widget):
            failures.extend(_widget(path, item, state.widgets))
    if expect.memory is not None and state.memory is not None:
        _memory(expect.memory, state.memory, exact, failures, notes)
    if expect.memory_keys is not None and state.memory is not None:
        have = sorted(state.memory)
        if sorted(expect.memory_keys) != have:
            failures.append(
                Miss(
                    ("memory_keys",),
                    f"expected memory keys {_q(sorted(expect.memory_keys))}, got {_q(have)}",
                )
            )
    if expect.subscriptions is not None and state.subscriptions is not None:
        for key, status in expect.subscriptions.items():
            have_status = state.subscriptions.get(key, "absent")
            if have_status != status:
                failures.append(
                    Miss(
                        ("subscriptions", key),
                        f"expected subscription {key} to be {status}, got {have_status}",
                    )
                )
    if expect.stored_redacted:
        failures.extend(_redacted(seen))
    return failures, notes


def _listing(messages: Sequence[Mapping[str, Any]]) -> str:
    if not messages:
        return ""
    shown = []
    for message in messages:
        body = message.get("body") or {}
        kind = message.get("kind")
        text = body.get("text") or body.get("question") or body.get("reason") or ""
        shown.append(f"{kind} {_q(text)}" if text else str(kind))
    return ": " + "; ".join(shown)


def _reply(
    expect: str | ReplyCheck, seen: Observed, exact: bool, failures: list[Miss], notes: list[Miss]
) -> None:
    texts = seen.texts
    reply = texts[-1] if texts else None
    got = _q(reply) if reply is not None else "no reply"
    checks: list[tuple[YamlPath, str, str]] = []  # (path, how, wanted)
    if isinstance(expect, str):
        checks.append((("reply",), "equals", expect))
    else:
        if expect.equals is not None:
            checks.append((("reply", "equals"), "equals", expect.equals))
        if expect.contains is not None:
            for path, text in _items(("reply", "contains"), expect.contains):
                checks.append((path, "contains", text))
        if expect.matches is not None:
            checks.append((("reply", "matches"), "matches", expect.matches))
    for path, how, wanted in checks:
        if how == "equals":
            if not exact:
                notes.append(Miss(path, "exact reply not checked against a real model"))
            elif reply != wanted:
                failures.append(Miss(path, f"expected the reply {_q(wanted)}, got {got}"))
        elif how == "contains":
            if reply is None or wanted not in reply:
                failures.append(
                    Miss(path, f"expected the reply to contain {_q(wanted)}, got {got}")
                )
        elif reply is None or re.search(wanted, reply) is None:
            failures.append(Miss(path, f"expected the reply to match /{wanted}/, got {got}"))


def _no_reply(wanted: bool, seen: Observed, failures: list[Miss]) -> None:
    if wanted and seen.messages:
        failures.append(
            Miss(
                ("no_reply",),
                f"expected the users to receive nothing, got {len(seen.messages)} message(s)"
                + _listing(seen.messages),
            )
        )
    elif not wanted and not seen.messages:
        failures.append(Miss(("no_reply",), "expected a message to the users, got none"))


def _calls_listing(calls: Iterable[CallSeen]) -> str:
    shown = [f"{c.name} {_q(c.args)}" for c in calls]
    return "; ".join(shown) if shown else "no tool calls"


def _called(path: YamlPath, item: str | CalledCheck, seen: Observed) -> list[Miss]:
    name = item if isinstance(item, str) else item.name
    args = None if isinstance(item, str) else item.args
    calls = [c for c in seen.calls if c.name == name]
    if not calls:
        return [Miss(path, f"expected a call of {name}, got {_calls_listing(seen.calls)}")]
    if args is not None and not any(subset(args, c.args) for c in calls):
        return [
            Miss(
                (*path, "args"),
                f"expected a call of {name} with arguments {_q(args)}, got "
                + _calls_listing(calls),
            )
        ]
    return []


def _results_of(name: str, seen: Observed) -> list[ResultSeen]:
    return [r for r in seen.results if r.name == name]


def _result(path: YamlPath, item: ResultCheck, seen: Observed) -> list[Miss]:
    results = _results_of(item.tool, seen)
    if not results:
        return [Miss(path, f"expected a result of {item.tool}, but it was not called")]
    if item.error is not None and not any(r.is_error == item.error for r in results):
        kind = "an error result" if item.error else "a successful result"
        return [
            Miss(
                (*path, "error"),
                f"expected {kind} of {item.tool}, got " + "; ".join(_q(r.text) for r in results),
            )
        ]
    if item.contains is not None:
        matching = [
            r
            for r in results
            if (item.error is None or r.is_error == item.error)
            and r.text is not None
            and item.contains in r.text
        ]
        if not matching:
            shown = "; ".join(_q(r.text) if r.text is not None else "(redacted)" for r in results)
            return [
                Miss(
                    (*path, "contains"),
                    f"expected a result of {item.tool} containing {_q(item.contains)}, got {shown}",
                )
            ]
    return []


def _denied(path: YamlPath, item: str | DeniedCheck, seen: Observed) -> list[Miss]:
    name = item if isinstance(item, str) else item.tool
    reason = None if isinstance(item, str) else item.reason
    results = _results_of(name, seen)
    if not results:
        return [Miss(path, f"expected a hook to deny {name}, but it was not called")]
    denials = [
        r for r in results if r.is_error and r.text is not None and r.text.startswith(DENIAL_PREFIX)
    ]
    if not denials:
        shown = "; ".join(_q(r.text) for r in results)
        return [Miss(path, f"expected a hook to deny {name}, got the result {shown}")]
    if reason is not None and not any(reason in str(r.text) for r in denials):
        shown = "; ".join(_q(r.text) for r in denials)
        return [
            Miss(
                (*path, "reason"), f"expected a denial reason containing {_q(reason)}, got {shown}"
            )
        ]
    return []


def _question(
    expect: QuestionCheck, seen: Observed, exact: bool, failures: list[Miss], notes: list[Miss]
) -> None:
    cards = [m["body"] for m in seen.messages if m["kind"] == "question"]
    if not cards:
        failures.append(
            Miss(("question",), "expected a question card, got none" + _listing(seen.messages))
        )
        return
    card = cards[-1]
    for key, have in (("text", card.get("question")), ("options", card.get("options"))):
        wanted = getattr(expect, key)
        if wanted is None:
            continue
        if not exact:
            notes.append(
                Miss(("question", key), f"question {key} not checked against a real model")
            )
        elif wanted != have:
            failures.append(
                Miss(("question", key), f"expected the question {key} {_q(wanted)}, got {_q(have)}")
            )


def _consent(expect: bool | ConsentCheck, seen: Observed) -> list[Miss]:
    cards = [m["body"] for m in seen.messages if m["kind"] == "consent"]
    if not cards:
        return [
            Miss(("consent_card",), "expected a consent card, got none" + _listing(seen.messages))
        ]
    if isinstance(expect, bool):
        return []
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
                    f"expected the card to ask for {_q(sorted(expect.datasets))}, got {_q(have)}",
                )
            )
    return misses


def _widget(path: YamlPath, item: WidgetCheck, view: Mapping[str, Any]) -> list[Miss]:
    widgets = [w for w in view.get("widgets", []) if w.get("type") == item.type]
    if item.title is not None:
        titled = [w for w in widgets if w.get("title") == item.title]
        if not titled:
            titles = [w.get("title") for w in widgets]
            return [
                Miss(
                    (*path, "title"),
                    f"expected a {item.type} widget titled {_q(item.title)}, got "
                    + (f"titles {_q(titles)}" if titles else "none"),
                )
            ]
        widgets = titled
    if not widgets:
        kinds = sorted({str(w.get("type")) for w in view.get("widgets", [])})
        return [
            Miss(
                path,
                f"expected a {item.type} widget, got "
                + (f"widgets of type {', '.join(kinds)}" if kinds else "no widgets"),
            )
        ]
    if item.module is not None or item.record is not None:
        records = [
            (module, record)
            for w in widgets
            for module, content in (w.get("modules") or {}).items()
            if item.module is None or module == item.module
            for record in content.get("records", [])
        ]
        wanted = item.record or {}
        if not any(subset(wanted, record.get("data")) for _, record in records):
            where = f" in module {item.module}" if item.module else ""
            have = [r.get("data") for _, r in records]
            return [
                Miss(
                    (*path, "record" if item.record is not None else "module"),
                    f"expected a record{where} with {_q(wanted)}, got "
                    + (f"records {_q(have)}" if have else "no records"),
                )
            ]
    if item.sent is not None:
        ids = {w.get("id") for w in widgets}
        cards = [
            c for c in view.get("cards", []) if c.get("widget_id") in ids and not c.get("deleted")
        ]
        if item.sent and not cards:
            return [
                Miss(
                    (*path, "sent"),
                    f"expected a card of the {item.type} widget in the chat, got none",
                )
            ]
        if not item.sent and cards:
            return [
                Miss(
                    (*path, "sent"), f"expected no card of the {item.type} widget, got {len(cards)}"
                )
            ]
    return []


def _memory(
    expect: Mapping[str, str | None],
    memory: Mapping[str, str],
    exact: bool,
    failures: list[Miss],
    notes: list[Miss],
) -> None:
    for key, text in expect.items():
        path: YamlPath = ("memory", key)
        have = memory.get(key)
        if text is None:
            if have is not None:
                failures.append(Miss(path, f"expected no memory entry {key}, got {_q(have)}"))
        elif have is None:
            keys = sorted(memory)
            failures.append(
                Miss(
                    path,
                    f"expected the memory entry {key} = {_q(text)}, got no such entry"
                    + (f" (keys: {', '.join(keys)})" if keys else " (memory is empty)"),
                )
            )
        elif not exact:
            notes.append(Miss(path, "memory text not checked against a real model"))
        elif have != text:
            failures.append(
                Miss(path, f"expected the memory entry {key} = {_q(text)}, got {_q(have)}")
            )


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


def _redacted(seen: Observed) -> list[Miss]:
    path: YamlPath = ("stored_redacted",)
    reading = [t for t in seen.turns if t.get("data_read")]
    if not reading:
        return [Miss(path, "expected a turn that read user data, but no turn of this step did")]
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
                Miss(path, f"the stored data-access result is not statuses only: {_q(content)}")
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
                        f"redacted: {_q(step.get('content'))}",
                    )
                )
        # Only steps and the question card hold what the model produced (ids and times
        # could match a number by chance); the reply keeps its text by design (SPEC §4).
        stored = json.dumps(
            {"steps": steps, "question": turn.get("question")}, ensure_ascii=False, default=str
        )
        if isinstance(reply, str) and reply:
            stored = stored.replace(json.dumps(reply, ensure_ascii=False)[1:-1], "")
        leaked = sorted(v for v in seen.data_values if v in stored)
        if leaked:
            misses.append(
                Miss(path, f"the stored turn contains user-data values: {', '.join(leaked[:5])}")
            )
    return misses
