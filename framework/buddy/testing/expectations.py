"""The ``expect:`` vocabulary of scenario files: what can be checked after a step, and how.

The models are what an author writes (strict: unknown keys are errors): the format's own
keys (:class:`CoreExpect`), each capability's in its ``scenario.py``
(:class:`~buddy.extend.StepExpect`), composed by :func:`expect_model`; they are in
:mod:`buddy.testing.expectation_models` and importable from here. :func:`check`
compares one ``expect:`` mapping with what the step produced (:class:`Observed`) and the
platform's state after it (:data:`State`). It is pure: it answers each problem as a
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
from typing import Any

from buddy.extend import resolve, step_expects
from buddy.manifest.yamlio import YamlPath
from buddy.models.base import Message
from buddy.runtime.loop import DENIAL_PREFIX
from buddy.testing.expectation_models import (
    TOOL_NAME_PATTERN,
    CalledCheck,
    CoreExpect,
    Data,
    DeniedCheck,
    PromptCheck,
    QuestionCheck,
    ReplyCheck,
    ResultCheck,
    Strict,
    Text,
    ToolName,
    bool_or_mapping,
    expect_model,
    mapping_or_list,
    plain,
    shape,
    text_or_mapping,
)

__all__ = [
    "DENIAL_PREFIX",
    "TOOL_NAME_PATTERN",
    "CallSeen",
    "CalledCheck",
    "CoreExpect",
    "Data",
    "DeniedCheck",
    "Expect",  # noqa: F822 (made on first use, by __getattr__)
    "Miss",
    "Observed",
    "PromptCheck",
    "QuestionCheck",
    "ReplyCheck",
    "ResultCheck",
    "ResultSeen",
    "State",
    "Strict",
    "Text",
    "ToolName",
    "bool_or_mapping",
    "check",
    "expect_model",
    "items_of",
    "listing",
    "mapping_or_list",
    "plain",
    "quoted",
    "shape",
    "subset",
    "text_or_mapping",
]

"""How the agent loop words a ``before_tool_call`` denial for the model."""

SHOWN_CHARS = 160


def __getattr__(name: str) -> Any:
    if name == "Expect":  # the composed model, made on first use
        return expect_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        systems: The system prompt of each request the model received in this step.
        histories: The messages of each of those requests (a layer's injected ones too).
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[CallSeen] = field(default_factory=list)
    results: list[ResultSeen] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    histories: list[tuple[Message, ...]] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        """The text replies of this step."""
        return [str(m["body"].get("text", "")) for m in self.messages if m["kind"] == "text"]


State = dict
"""The platform's state after a step: ``expect:`` key → what its capability read
(:attr:`~buddy.extend.StepExpect.state`; only the keys the step's ``expect:`` gives)."""


@dataclass(frozen=True, slots=True)
class Miss:
    """A failed (or skipped) check: ``path`` is relative to the ``expect:`` mapping."""

    path: YamlPath
    message: str


# ---------------------------------------------------------------- checking


def quoted(value: Any) -> str:
    """A value as the author would write it, shortened."""
    text = value if isinstance(value, str) else None
    shown = json.dumps(value if text is None else text, ensure_ascii=False, default=str)
    if len(shown) > SHOWN_CHARS:
        shown = shown[: SHOWN_CHARS - 2] + '…"'
    return shown


def items_of(path: YamlPath, value: Any) -> Iterator[tuple[YamlPath, Any]]:
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


def check(
    expect: CoreExpect, seen: Observed, state: Mapping[str, Any], *, exact: bool = True
) -> tuple[list[Miss], list[Miss]]:
    """Check one ``expect:`` mapping.

    Args:
        expect: The expectations.
        seen: What the step produced.
        state: The platform's state after the step (:data:`State`).
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
                + listing(seen.messages),
            )
        )
    if expect.tool_called is not None:
        for path, item in items_of(("tool_called",), expect.tool_called):
            failures.extend(_called(path, item, seen))
    if expect.tool_result is not None:
        for path, item in items_of(("tool_result",), expect.tool_result):
            failures.extend(_result(path, item, seen))
    if expect.denied is not None:
        for path, item in items_of(("denied",), expect.denied):
            failures.extend(_denied(path, item, seen))
    if expect.question is not None:
        _question(expect.question, seen, exact, failures, notes)
    if expect.prompt is not None:
        failures.extend(_prompt(expect.prompt, seen))
    for part in step_expects():
        value = getattr(expect, part.key, None)
        if value is not None:
            missed, noted = resolve(part.verify)(value, seen, state.get(part.key), exact)
            failures.extend(missed)
            notes.extend(noted)
    return failures, notes


def listing(messages: Sequence[Mapping[str, Any]]) -> str:
    if not messages:
        return ""
    shown = []
    for message in messages:
        body = message.get("body") or {}
        kind = message.get("kind")
        text = body.get("text") or body.get("question") or body.get("reason") or ""
        shown.append(f"{kind} {quoted(text)}" if text else str(kind))
    return ": " + "; ".join(shown)


def _reply(
    expect: str | ReplyCheck, seen: Observed, exact: bool, failures: list[Miss], notes: list[Miss]
) -> None:
    texts = seen.texts
    reply = texts[-1] if texts else None
    got = quoted(reply) if reply is not None else "no reply"
    checks: list[tuple[YamlPath, str, str]] = []  # (path, how, wanted)
    if isinstance(expect, str):
        checks.append((("reply",), "equals", expect))
    else:
        if expect.equals is not None:
            checks.append((("reply", "equals"), "equals", expect.equals))
        if expect.contains is not None:
            for path, text in items_of(("reply", "contains"), expect.contains):
                checks.append((path, "contains", text))
        if expect.matches is not None:
            checks.append((("reply", "matches"), "matches", expect.matches))
    for path, how, wanted in checks:
        if how == "equals":
            if not exact:
                notes.append(Miss(path, "exact reply not checked against a real model"))
            elif reply != wanted:
                failures.append(Miss(path, f"expected the reply {quoted(wanted)}, got {got}"))
        elif how == "contains":
            if reply is None or wanted not in reply:
                failures.append(
                    Miss(path, f"expected the reply to contain {quoted(wanted)}, got {got}")
                )
        elif reply is None or re.search(wanted, reply) is None:
            failures.append(Miss(path, f"expected the reply to match /{wanted}/, got {got}"))


def _prompt(expect: PromptCheck, seen: Observed) -> list[Miss]:
    """What the system prompt of the step's last request holds, and does not."""
    if not seen.systems:
        return [Miss(("prompt",), "no request reached the model in this step")]
    system = seen.systems[-1]
    failures = []
    for path, text in items_of(("prompt", "contains"), expect.contains or []):
        if text not in system:
            failures.append(
                Miss(path, f"the system prompt does not contain {quoted(text)}{_tail(system)}")
            )
    for path, text in items_of(("prompt", "not_contains"), expect.not_contains or []):
        if text in system:
            failures.append(Miss(path, f"the system prompt contains {quoted(text)}"))
    return failures


def _tail(system: str) -> str:
    """The end of a system prompt (where parts the template does not place are added)."""
    return f"; it ends {quoted(system[-SHOWN_CHARS:])}" if system else "; it is empty"


def _no_reply(wanted: bool, seen: Observed, failures: list[Miss]) -> None:
    if wanted and seen.messages:
        failures.append(
            Miss(
                ("no_reply",),
                f"expected the users to receive nothing, got {len(seen.messages)} message(s)"
                + listing(seen.messages),
            )
        )
    elif not wanted and not seen.messages:
        failures.append(Miss(("no_reply",), "expected a message to the users, got none"))


def _callslisting(calls: Iterable[CallSeen]) -> str:
    shown = [f"{c.name} {quoted(c.args)}" for c in calls]
    return "; ".join(shown) if shown else "no tool calls"


def _called(path: YamlPath, item: str | CalledCheck, seen: Observed) -> list[Miss]:
    name = item if isinstance(item, str) else item.name
    args = None if isinstance(item, str) else item.args
    calls = [c for c in seen.calls if c.name == name]
    if not calls:
        return [Miss(path, f"expected a call of {name}, got {_callslisting(seen.calls)}")]
    if args is not None and not any(subset(args, c.args) for c in calls):
        return [
            Miss(
                (*path, "args"),
                f"expected a call of {name} with arguments {quoted(args)}, got "
                + _callslisting(calls),
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
                f"expected {kind} of {item.tool}, got "
                + "; ".join(quoted(r.text) for r in results),
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
            shown = "; ".join(
                quoted(r.text) if r.text is not None else "(redacted)" for r in results
            )
            return [
                Miss(
                    (*path, "contains"),
                    f"expected a result of {item.tool} containing {quoted(item.contains)}, got {shown}",
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
        shown = "; ".join(quoted(r.text) for r in results)
        return [Miss(path, f"expected a hook to deny {name}, got the result {shown}")]
    if reason is not None and not any(reason in str(r.text) for r in denials):
        shown = "; ".join(quoted(r.text) for r in denials)
        return [
            Miss(
                (*path, "reason"),
                f"expected a denial reason containing {quoted(reason)}, got {shown}",
            )
        ]
    return []


def _question(
    expect: QuestionCheck, seen: Observed, exact: bool, failures: list[Miss], notes: list[Miss]
) -> None:
    cards = [m["body"] for m in seen.messages if m["kind"] == "question"]
    if not cards:
        failures.append(
            Miss(("question",), "expected a question card, got none" + listing(seen.messages))
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
                Miss(
                    ("question", key),
                    f"expected the question {key} {quoted(wanted)}, got {quoted(have)}",
                )
            )
