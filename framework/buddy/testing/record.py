"""A real conversation as a scenario file: what happened in a dev platform's database,
written so that ``buddy test`` replays it — and fails when the buddy behaves otherwise.

**What is read** (:func:`read_conversation`, from any connection to the database: the
playground's own store, or a ``buddy dev``/``buddy chat`` file opened read-only): the
conversation's members and its events in order — a user's message (``user:``, with
``as:`` in a group), a click on a question card (``click:``), an answer to a consent card
(``consent:``), a proactive turn — each with the record of the turn that answered it;
the dev platform's journal of the world's doings around them (``advance:``, ``grant:``,
``revoke:``, ``data:``, ``trigger:``, :mod:`buddy.platform.dev.journal`); and the
companion layer's extractor answers, kept by the session (``extract:``).

**The model's part** is each turn's stored steps, grouped back into responses: reasoning
(``think``), text (``say``), tool calls (``call``/``calls``, with ``{{ tool.path }}``
where an argument is a value an earlier result gave, so a widget's new id is found again)
and a proactive skip. What a turn that read user data keeps redacted is not there to
replay: those calls are left out, and the file says so where.

**The expectations** are what a replay of the drafted file gives at every step: each
step's reply (or that nobody heard anything), the tools called, the question card, and
each capability's recordable expectation (``StepExpect.record``: facts, the card, the
mood, lore, memory, the consent card) where it changed. The finished file is then run
once more: an expectation that does not hold on a second run (a mood felt after the
prompt was made, say) is left out, with a note, so the file passes as written.
"""

from __future__ import annotations

import json
import re
import tempfile
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

from buddy.compile.blueprint import Blueprint
from buddy.extend import resolve, step_expects
from buddy.manifest.yamlio import parse_document
from buddy.testing.draft import (
    Conversation,
    Drafter,
    RecordError,
    Step,
    latest_conversation,
    local_time,
    open_database,
    read_conversation,
)
from buddy.testing.expectations import CoreExpect, Observed
from buddy.testing.scenario_format import read_suite
from buddy.testing.scenario_models import CLOCK_TIMEZONE, DEFAULT_MEMBER
from buddy.testing.scenario_results import capture_logs

__all__ = [
    "Conversation",
    "RecordError",
    "Recording",
    "head_lines",
    "latest_conversation",
    "open_database",
    "read_conversation",
    "record",
    "scenario_file",
]

#: How often the finished file is run again to leave out what does not hold twice.
VERIFY_ROUNDS = 3
FLOW_WIDTH = 96


# ---------------------------------------------------------------- writing YAML


_PLAIN_BAD = re.compile(r"[:#{}\[\],&*!|>'\"%@`\n\t\\]")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    plain = (
        text
        and text == text.strip()
        and not _PLAIN_BAD.search(text)
        and text[0] not in "-?"
        and yaml.safe_load(text) == text
    )
    return text if plain else json.dumps(text, ensure_ascii=False)


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_scalar(k)}: {_flow(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def _width(text: str) -> int:
    """Columns ``text`` takes in an editor (a CJK character takes two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _lines(value: Any, indent: int) -> list[str]:
    """``value`` as block YAML lines at ``indent``; short mappings and lists in flow."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{pad}{_scalar(key)}:"
            if isinstance(item, dict | list) and item:
                flow = _flow(item)
                if _width(head) + 1 + _width(flow) <= FLOW_WIDTH:
                    out.append(f"{head} {flow}")
                else:
                    out.append(head)
                    out.extend(_lines(item, indent + 2))
            else:
                out.append(f"{head} {_flow(item)}")
        return out
    for item in value:
        flow = _flow(item)
        if not isinstance(item, dict | list) or len(pad) + 2 + _width(flow) <= FLOW_WIDTH:
            out.append(f"{pad}- {flow}")
            continue
        inner = _lines(item, indent + 2)
        out.append(f"{pad}- {inner[0].lstrip()}")
        out.extend(inner[1:])
    return out


def _file_text(
    head: Sequence[str],
    scenario: Mapping[str, Any],
    steps: Sequence[Step],
    expects: Sequence[Mapping[str, Any] | None],
) -> str:
    lines = [*head, "scenarios:"]
    first = True
    for key, value in scenario.items():
        shown = _lines({key: value}, 4)
        shown[0] = ("  - " if first else "    ") + shown[0].lstrip()
        lines.extend(shown)
        first = False
    lines.append("    steps:")
    for step, expect in zip(steps, expects, strict=True):
        lines.extend(f"      # {c}" for c in step.comments)
        keys = dict(step.keys)
        if expect is not None:
            keys["expect"] = expect
        shown = _lines(keys, 8)
        shown[0] = "      - " + shown[0].lstrip()
        lines.extend(shown)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the replay


@dataclass
class Recording:
    """A recorded conversation as a scenario file.

    Attributes:
        text: The file's text.
        notes: What could not be recorded as it happened, and expectations left out.
    """

    text: str
    notes: list[str] = field(default_factory=list)


def _observed(step: Step, seen: Observed) -> dict[str, Any]:
    """The format's own expectations of one step, as it went."""
    out: dict[str, Any] = {}
    if seen.texts:
        out["reply"] = seen.texts[-1]
    elif step.turns and not seen.messages:
        out["no_reply"] = True
    names = list(dict.fromkeys(c.name for c in seen.calls))
    if names:
        out["tool_called"] = names[0] if len(names) == 1 else names
    cards = [m["body"] for m in seen.messages if m["kind"] == "question"]
    if cards:
        out["question"] = {"text": cards[-1].get("question"), "options": cards[-1].get("options")}
    return out


async def _replay(
    blueprint: Blueprint, text: str, *, probe: bool
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]], list[str]]:
    """Run the one scenario of ``text``. With ``probe``: every recordable expectation's
    value after each step (``StepExpect.record``, the state read as ``verify`` reads
    it). Returns those, the failures as ``(step, expect key or "", message)``, and the
    file's problems."""
    from buddy.testing.scenarios import _Run

    values: list[dict[str, Any]] = []
    hooks = [(p.key, p.state, p.record) for p in step_expects() if p.record]

    class Probe(_Run):
        async def _state(self, expect: CoreExpect, seen: Observed) -> dict[str, Any]:
            if not probe:
                return await super()._state(expect, seen)
            read: dict[str, Any] = {}
            found: dict[str, Any] = {"seen": seen}
            for key, state, hook in hooks:
                if state and state not in read:
                    read[state] = await resolve(state)(self, seen)
                value = resolve(hook)(read.get(state), seen)
                if value is not None:
                    found[key] = value
            values.append(found)
            return {}

    with tempfile.TemporaryDirectory(prefix="buddy-record-") as scratch:
        draft = Path(scratch) / "recorded.yaml"
        draft.write_text(text, encoding="utf-8")
        suite = read_suite(draft, blueprint, display="recorded.yaml")
        if suite.issues:
            return [], [], [str(i) for i in suite.issues]
        path, scenario = suite.scenarios[0]
        run = Probe(blueprint, suite, path, scenario, None, 30.0)
        with capture_logs():
            try:
                await run.go()
            except Exception as exc:  # the platform or the buddy broke: say so
                raise RecordError(f"the replay could not run: {type(exc).__name__}: {exc}") from exc
    failures = []
    for failure in run.failures:
        found = re.search(r"steps\[(\d+)\](?:\.expect\.(\w+))?", failure.path)
        index = int(found.group(1)) if found else -1
        failures.append((index, (found.group(2) or "") if found else "", failure.message))
    return values, failures, []


async def record(
    blueprint: Blueprint,
    conversation: Conversation,
    *,
    head: Sequence[str] = (),
    name: str | None = None,
) -> Recording:
    """Write ``conversation`` as a scenario of ``blueprint``, with the expectations as
    they stand at each step (see the module's docstring).

    Args:
        blueprint: The buddy that had the conversation.
        conversation: What :func:`read_conversation` read.
        head: The comment lines at the top of the file (the ``$schema`` line, when and
            from what it was recorded), each starting with ``#``.
        name: The scenario's name (default: from its first message).

    Raises:
        RecordError: Nothing to record, or its replay failed before any expectation.
    """
    drafter = Drafter(conversation, blueprint)
    steps = drafter.draft()
    if not steps:
        raise RecordError(f"conversation {conversation.id} has nothing to replay yet")
    notes = list(drafter.notes)
    scenario = _scenario_keys(conversation, steps, name)
    top = list(head)
    # The draft: every step checks nothing, so the probe reads the state after each.
    probe_text = _file_text(top, scenario, steps, [{} for _ in steps])
    values, failures, problems = await _replay(blueprint, probe_text, probe=True)
    for problem in problems:  # `extract:` facts the buddy's relations refuse, say
        found = re.search(r"steps\[(\d+)\]\.extract", problem)
        if found is None:
            raise RecordError(f"the recorded file is not valid: {problem}")
        dropped = steps[int(found.group(1))].keys.pop("extract", None)
        if dropped is not None:
            notes.append(f"step {int(found.group(1)) + 1}: `extract:` left out ({problem})")
    if problems:
        probe_text = _file_text(top, scenario, steps, [{} for _ in steps])
        values, failures, problems = await _replay(blueprint, probe_text, probe=True)
        if problems:
            raise RecordError("the recorded file is not valid: " + "; ".join(problems))
    if failures:
        index, _, message = failures[0]
        raise RecordError(f"step {index + 1} does not replay as it happened: {message}")
    expects = _expectations(steps, values)
    for _ in range(VERIFY_ROUNDS):
        text = _file_text(top, scenario, steps, expects)
        _, failures, problems = await _replay(blueprint, text, probe=False)
        if problems:
            raise RecordError("the recorded file is not valid: " + "; ".join(problems))
        if not failures:
            _check_reads_back(text)
            return Recording(text, notes)
        for index, key, message in failures:
            expect = expects[index] if 0 <= index < len(expects) else None
            if expect is None or key not in expect:
                raise RecordError(f"step {index + 1} does not replay the same: {message}")
            del expect[key]
            notes.append(f"step {index + 1}: `{key}` left out: it differs on a replay ({message})")
            if not expect:
                expects[index] = None
    raise RecordError("the recorded scenario does not replay the same way twice")


def _scenario_keys(
    conversation: Conversation, steps: Sequence[Step], name: str | None
) -> dict[str, Any]:
    said = next((s.keys.get("user") for s in steps if "user" in s.keys), None)
    if name is None:
        text = " ".join(str(said or conversation.id).split())
        name = text if len(text) <= 40 else text[:39] + "…"
    members = [n for _, n in conversation.members]
    scenario: dict[str, Any] = {"name": name}
    if conversation.kind == "group":
        scenario["conversation"] = {"kind": "group", "members": members}
    elif members and members != [DEFAULT_MEMBER]:
        scenario["conversation"] = {"kind": "private", "members": members}
    scenario["clock"] = local_time(conversation.created_at).strftime("%H:%M")
    return scenario


def _expectations(
    steps: Sequence[Step], values: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any] | None]:
    """Each step's ``expect:``: its reply, tools and cards; and each recordable key where
    its value changed since the step before."""
    out: list[dict[str, Any] | None] = []
    before: dict[str, Any] = {}
    for step, found in zip(steps, values, strict=False):
        seen = found["seen"]
        expect = _observed(step, seen)
        for key, value in found.items():
            if key == "seen":
                continue
            if before.get(key) != value:
                expect[key] = value
        before = {k: v for k, v in found.items() if k != "seen"}
        out.append(expect or None)
    out.extend(None for _ in range(len(steps) - len(out)))
    return out


def _check_reads_back(text: str) -> None:
    """The text is YAML that reads as itself (a bug here, not the user's)."""
    parse_document(text, "recorded.yaml")


# ---------------------------------------------------------------- where it goes


def scenario_file(tests: Path, conversation: Conversation) -> Path:
    """Where a recording of ``conversation`` goes in a buddy's ``tests/``: a name made of
    its first day and its id (``recorded-2026-05-01-3f2a1b9c.yaml``)."""
    day = local_time(conversation.created_at).strftime("%Y-%m-%d")
    short = conversation.id.split("_", 1)[-1][:8]
    return tests / f"recorded-{day}-{short}.yaml"


def head_lines(conversation: Conversation, buddy: Path, target: Path, source: str) -> list[str]:
    """The comment lines a recording starts with: the ``$schema`` line for ``target`` in
    ``buddy``'s project, and when, from what and how it was recorded (``source``)."""
    from buddy.schemas import SCENARIO, project_line

    members = "、".join(n for _, n in conversation.members)
    now = datetime.now(UTC).astimezone(ZoneInfo(CLOCK_TIMEZONE)).strftime("%Y-%m-%d %H:%M")
    return [
        project_line(SCENARIO, buddy, target.parent).rstrip("\n"),
        f"# Recorded {now} ({CLOCK_TIMEZONE}) by {source}:",
        f"# conversation {conversation.id} of {conversation.identity} "
        f"({conversation.kind}, {members}), begun "
        f"{local_time(conversation.created_at).strftime('%Y-%m-%d %H:%M')}.",
        "# `model:` is what the model answered (the turns' stored records), `extract:` what",
        "# the extractor answered; each `expect:` is what a replay gave at that step.",
    ]
