"""A stored conversation read from the dev platform's database, and drafted into scenario
steps (no expectations yet): the first half of :mod:`buddy.testing.record`.

What is read, and how a turn's stored steps become the model's scripted responses, is said
there."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from buddy.compile.blueprint import Blueprint
from buddy.extend import event_kinds
from buddy.platform.dev.conversations_store import members_of, read_turns
from buddy.platform.dev.journal import answers_of, journal_of
from buddy.runtime.loop import MODEL_FAILURE
from buddy.testing.scenario_models import CLOCK_TIMEZONE

__all__ = [
    "Conversation",
    "Drafter",
    "RecordError",
    "Step",
    "latest_conversation",
    "local_time",
    "open_database",
    "read_conversation",
]

#: A text value shorter than this is never taken for an id an earlier result gave.
ID_CHARS = 6


class RecordError(Exception):
    """The conversation cannot be recorded (no such conversation; its replay broke)."""


@dataclass
class Conversation:
    """A stored conversation, as read from the dev platform's database.

    Attributes:
        id: Its id.
        identity: The buddy's identity (``<name>-dev``).
        kind: ``private`` or ``group``.
        members: ``(member id, name)``, in the order listed at creation.
        created_at: Its platform time of creation.
        timeline: Its events and the world's doings, in order: ``(at, what, row)`` with
            ``what`` ``event`` (a row with ``turn``, the record that answered it) or
            ``journal``.
        answers: Event id → the extractor's raw answer for that message.
    """

    id: str
    identity: str
    kind: str
    members: list[tuple[str, str]]
    created_at: float
    timeline: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)


def open_database(path: Path) -> sqlite3.Connection:
    """A read-only connection to a dev platform's database file.

    Raises:
        RecordError: It is not there, or not a dev platform's database.
    """
    if not path.is_file():
        raise RecordError(f"{path}: no such database file")
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "conversations" not in tables:
        conn.close()
        raise RecordError(f"{path}: not a dev platform's database (no conversations)")
    return conn


def latest_conversation(conn: sqlite3.Connection, identity: str | None = None) -> str:
    """The id of the conversation that had an event last (of ``identity``, if given).

    Raises:
        RecordError: There is none.
    """
    row = conn.execute(
        "SELECT c.id FROM conversations c LEFT JOIN events e ON e.conversation_id = c.id"
        " WHERE ? IS NULL OR c.identity = ? GROUP BY c.id"
        " ORDER BY MAX(COALESCE(e.created_at, c.created_at)) DESC LIMIT 1",
        (identity, identity),
    ).fetchone()
    if row is None:
        raise RecordError("the database holds no conversation")
    return str(row["id"])


def read_conversation(conn: sqlite3.Connection, conversation_id: str) -> Conversation:
    """Everything :func:`record` needs of one conversation (a read inside the caller's
    transaction, or on a read-only connection).

    Raises:
        RecordError: No such conversation.
    """
    row = conn.execute(
        "SELECT id, identity, kind, created_at FROM conversations WHERE id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise RecordError(f"no conversation {conversation_id}")
    members = [(m.member_id, m.name) for m in members_of(conn, conversation_id)]
    found = Conversation(
        str(row["id"]), str(row["identity"]), str(row["kind"]), members, float(row["created_at"])
    )
    turns = {t.event_id: t.model_dump() for t in read_turns(conn, conversation_id, 0, 100_000)}
    events = conn.execute(
        "SELECT seq, id, type, payload, created_at FROM events WHERE conversation_id = ?"
        " ORDER BY seq",
        (conversation_id,),
    ).fetchall()
    timeline: list[tuple[float, int, str, dict[str, Any]]] = []
    for event in events:
        item = {**dict(event), "payload": json.loads(event["payload"])}
        item["turn"] = turns.get(str(event["id"]))
        timeline.append((float(event["created_at"]), 1, "event", item))
    ids = {m for m, _ in members}
    last = max((t[0] for t in timeline), default=found.created_at)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "dev_journal" in tables:  # a database older than the journal has none
        for doing in journal_of(conn):
            if doing["at"] > last or not _concerns(found, ids, doing):
                continue
            timeline.append((float(doing["at"]), 0, "journal", doing))
        found.answers = answers_of(conn, conversation_id)
    timeline.sort(key=lambda t: (t[0], t[1], t[3].get("seq", 0)))
    found.timeline = [(at, what, item) for at, _, what, item in timeline]
    return found


def _concerns(conversation: Conversation, members: set[str], doing: Mapping[str, Any]) -> bool:
    """Whether a doing of the world belongs in the conversation's scenario: a clock move
    while it went on; a grant, a data change or a trigger for one of its members (before
    it began too: the world it started in)."""
    if doing["action"] == "advance":
        return float(doing["at"]) >= conversation.created_at
    if doing["identity"] not in (None, conversation.identity):
        return False
    return doing["member_id"] in members


# ---------------------------------------------------------------- drafting the steps


@dataclass
class Step:
    """One step of the draft: its keys in the order written, and comments above it."""

    keys: dict[str, Any]
    comments: list[str] = field(default_factory=list)
    turns: bool = False  # its action starts turns (a reply, or none, is expected)


def _duration(seconds: float) -> str:
    """``5400`` → ``1h30m``; as written by hand."""
    left = max(1, math.ceil(seconds))
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            out += f"{left // size}{unit}"
            left %= size
    return out


def local_time(at: float) -> datetime:
    return datetime.fromtimestamp(at, UTC).astimezone(ZoneInfo(CLOCK_TIMEZONE))


class Drafter:
    """Turns a :class:`Conversation` into steps (no expectations yet)."""

    def __init__(self, conversation: Conversation, blueprint: Blueprint) -> None:
        self.conversation = conversation
        self.blueprint = blueprint
        self.names = dict(conversation.members)
        self.group = conversation.kind == "group"
        self.first = conversation.members[0][0] if conversation.members else None
        self.steps: list[Step] = []
        self.notes: list[str] = []
        self.results: dict[str, Any] = {}  # tool → its latest result (parsed JSON)
        self.skip = next((k.skip for k in event_kinds().values() if k.unasked and k.skip), "")

    def draft(self) -> list[Step]:
        last_at = self.conversation.created_at
        for at, what, item in self.conversation.timeline:
            if what == "journal":
                self._doing(item)
            else:
                self._event(item, at, last_at)
            last_at = at
        return self.steps

    def _member(self, member_id: str | None) -> dict[str, str]:
        """``{member: name}`` for a group's doings (a private chat's is implied)."""
        if not self.group or member_id is None:
            return {}
        return {"member": self.names.get(member_id, member_id)}

    def _doing(self, doing: Mapping[str, Any]) -> None:
        action, body = doing["action"], doing["body"]
        if action == "advance":
            self.steps.append(Step({"advance": _duration(float(body["seconds"]))}, turns=True))
        elif action in ("grant", "revoke"):
            value = {"dataset": body["dataset"], **self._member(doing["member_id"])}
            self.steps.append(Step({action: value}))
        elif action == "data":
            value = {"dataset": body["dataset"], "items": body["items"]}
            self.steps.append(Step({"data": {**value, **self._member(doing["member_id"])}}))
        elif action == "trigger":
            if doing["member_id"] != self.first:
                self._note(f"a trigger for {self.names.get(doing['member_id'])} is not replayed")
                return
            fired = body["type"] if "dataset" not in body else dict(body)
            if body["type"] == "data.updated" and "dataset" not in body:
                fired = {"type": "data.updated"}
            self.steps.append(Step({"trigger": fired}, turns=True))
        else:  # data_reset: a scenario has no step for "back to the simulated data"
            self._note(f"`{action}` of {body.get('dataset')} has no scenario step; left out")

    def _note(self, text: str) -> None:
        self.notes.append(text)
        if self.steps:
            self.steps[-1].comments.append(text)

    def _event(self, event: Mapping[str, Any], at: float, last_at: float) -> None:
        payload, kind = event["payload"], event["type"]
        step: Step
        if kind == "message" and payload.get("option_of"):
            step = Step({"click": payload.get("text", "")}, turns=True)
        elif kind == "message":
            step = Step({"user": payload.get("text", "")}, turns=True)
        elif kind == "consent_result":
            step = Step({"consent": "grant" if payload.get("granted") else "deny"}, turns=True)
        elif kind == "proactive":
            before = self.steps[-1] if self.steps else None
            if before is None or not ({"advance", "trigger"} & set(before.keys)):
                # fired by real time passing: the replay moves the clock as far
                step = Step({"advance": _duration(at - last_at)}, turns=True)
                step.comments.append(
                    f"{payload.get('subscription_key')} fired here as time went by"
                )
                self.steps.append(step)
            self._script(self.steps[-1], event)
            return
        else:
            self._note(f"an event `{kind}` has no scenario step; left out")
            return
        if kind == "message" and self.group:
            sender = (payload.get("sender") or {}).get("member_id")
            step.keys["as"] = self.names.get(str(sender), str(sender))
        answer = self.conversation.answers.get(str(event["id"]))
        if answer is not None:
            extracted = _extract(answer)
            if extracted is not None:
                step.keys["extract"] = extracted
            else:
                step.comments.append("the extractor's answer here was not JSON: nothing found")
        self.steps.append(step)
        self._script(step, event)

    def _script(self, step: Step, event: Mapping[str, Any]) -> None:
        """Add the responses of the turn that answered ``event`` to ``step``'s ``model:``."""
        turn = event.get("turn")
        if turn is None:
            return
        responses, redacted = self._responses(turn.get("steps") or [])
        if not responses and turn.get("reply") == MODEL_FAILURE:
            responses = [{"say": MODEL_FAILURE}]
            step.comments.append("the model failed in this turn: replayed as its message")
        if redacted:
            step.comments.append(
                f"{redacted} tool call(s) after the data read are redacted in the stored "
                "record and not replayed"
            )
        if responses:
            step.keys.setdefault("model", []).extend(responses)

    def _responses(self, stored: Sequence[Mapping[str, Any]]) -> tuple[list[Any], int]:
        """The model's responses of one turn, from its stored steps; and how many tool
        calls were redacted (left out)."""
        groups: list[list[Mapping[str, Any]]] = []
        answered = True
        for record in stored:
            if record.get("type") == "tool_result":
                answered = True
                if record.get("call_id") and not record.get("redacted"):
                    self._result(str(record.get("tool")), record.get("content"))
                continue
            if answered:
                groups.append([])
                answered = False
            groups[-1].append(record)
        out: list[Any] = []
        redacted = 0
        for group in groups:
            response: dict[str, Any] = {}
            calls: list[dict[str, Any]] = []
            for record in group:
                kind = record.get("type")
                if record.get("redacted"):
                    redacted += kind == "tool_call"
                    continue
                content = record.get("content")
                if kind == "reasoning" and isinstance(content, str) and content:
                    response["think"] = content
                elif kind == "text" and isinstance(content, str) and content:
                    response["say"] = content
                elif kind == "tool_call":
                    args = content if isinstance(content, dict) else {}
                    call: dict[str, Any] = {"call": str(record.get("tool"))}
                    if args:
                        call["args"] = self._placed(args)
                    calls.append(call)
            if response.get("say") == self.skip and self.skip and not calls:
                response = {"skip": True}
            if len(calls) == 1:
                response.update(calls[0])
            elif calls:
                response["calls"] = calls
            if not response or set(response) == {"think"}:
                continue
            out.append(response["say"] if set(response) == {"say"} else response)
        return out, redacted

    def _result(self, tool: str, content: Any) -> None:
        if isinstance(content, str):
            try:
                content = json.loads(content)
            except ValueError:
                return
        if isinstance(content, dict | list):
            self.results[tool] = content

    def _placed(self, value: Any) -> Any:
        """``value`` with each text an earlier result gave written as its placeholder."""
        if isinstance(value, dict):
            return {k: self._placed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._placed(v) for v in value]
        if isinstance(value, str) and len(value) >= ID_CHARS:
            for tool, result in reversed(self.results.items()):
                path = _path_to(result, value)
                if path is not None:
                    return "{{ " + ".".join([tool, *path]) + " }}"
        return value


def _path_to(data: Any, wanted: str, depth: int = 0) -> list[str] | None:
    """The keys (and list indexes) that lead to ``wanted`` in ``data``, if any."""
    if data == wanted and depth:
        return []
    if depth >= 4:
        return None
    items: Iterator[tuple[str, Any]]
    if isinstance(data, dict):
        items = ((str(k), v) for k, v in data.items())
    elif isinstance(data, list):
        items = ((str(i), v) for i, v in enumerate(data))
    else:
        return None
    for key, item in items:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
            continue
        found = _path_to(item, wanted, depth + 1)
        if found is not None:
            return [key, *found]
    return None


def _extract(answer: str) -> dict[str, Any] | None:
    """The extractor's raw answer as ``extract:`` writes it: its facts and appraisal (what
    is not of their shape is dropped here; what the buddy's relations refuse is dropped
    when the file is checked); ``None`` when it said nothing usable."""
    try:
        data = json.loads(answer.strip().removeprefix("```json").removesuffix("```"))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {}
    facts = []
    for fact in data.get("facts") or []:
        if not isinstance(fact, dict) or not isinstance(fact.get("slots"), dict):
            continue
        item = {"relation": fact.get("relation"), "slots": fact["slots"]}
        if fact.get("modality") == "request":
            item["modality"] = "request"
        facts.append(item)
    if facts:
        out["facts"] = facts
    appraisal = data.get("appraisal")
    if isinstance(appraisal, dict):
        shown = {
            k: appraisal[k]
            for k in ("offence", "apology", "care")
            if isinstance(appraisal.get(k), int | float) and appraisal[k]
        }
        if appraisal.get("explained") is True:
            shown["explained"] = True
        if shown:
            out["appraisal"] = shown
    return out or None
