"""Scenario tests: conversations written in YAML next to a buddy, run against a dev platform.

The format — scenarios, steps, scripted model responses — and reading a file with
located errors are in :mod:`buddy.testing.scenario_format`; the expectations in
:mod:`buddy.testing.expectations`. This module runs a scenario: a fresh dev platform (in
this process over an in-memory database, or on loopback over a temporary one), the buddy
against it with the scripted model (or a real one), and the users' actions through the
platform's dev endpoints — the same path as ``tests/runtime/test_e2e.py``. Its names
include the format's, so ``buddy.testing.scenarios`` is the one import a caller needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn
from zoneinfo import ZoneInfo

import httpx

from buddy.capabilities import resolve, step_actions, step_expects
from buddy.capabilities.proactive.events import SKIP_MARKER
from buddy.compile.blueprint import Blueprint
from buddy.errors import ModelError, PlatformError
from buddy.manifest.locate import loc_of
from buddy.manifest.yamlio import YamlPath, format_path
from buddy.models.base import (
    Done,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from buddy.testing.expectations import (
    CallSeen,
    CoreExpect,
    Observed,
    ResultSeen,
    check,
)
from buddy.testing.local import LocalPlatform, running_buddy
from buddy.testing.scenario_format import (
    CLOCK_TIMEZONE,
    PLACEHOLDER,
    SCHEMA_ID,
    CallScript,
    CoreScenario,
    CoreStep,
    ModelTurn,
    Suite,
    actions,
    calls_of,
    duration_seconds,
    modifiers,
    read_suite,
    scenario_json_schema,
    schema_text,
)

__all__ = [
    "ACTIONS",  # noqa: F822 (made on first use, by __getattr__)
    "SCHEMA_ID",
    "Failure",
    "LayerScript",
    "ModelTurn",
    "Scenario",  # noqa: F822 (made on first use, by __getattr__)
    "ScenarioFile",  # noqa: F822 (made on first use, by __getattr__)
    "ScenarioResult",
    "Step",  # noqa: F822 (made on first use, by __getattr__)
    "Suite",
    "actions",
    "duration_seconds",
    "read_suite",
    "run_scenario",
    "scenario_json_schema",
    "schema_text",
]


def __getattr__(name: str) -> Any:
    # The composed models (Step, Scenario, ScenarioFile) and ACTIONS, made on first use.
    if name in ("Step", "Scenario", "ScenarioFile", "ACTIONS"):
        from buddy.testing import scenario_format

        return getattr(scenario_format, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------- running


@dataclass(frozen=True, slots=True)
class Failure:
    """A located failure (or note) of a scenario run."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        field_path = f" [{self.path}]" if self.path else ""
        return f"{self.file}:{self.line}:{self.column}: {self.message}{field_path}"


@dataclass
class ScenarioResult:
    """The outcome of one scenario.

    Attributes:
        name: The scenario's name.
        file: Its file, as shown.
        line: Where it starts.
        failures: What failed (a scenario stops after its first failing step).
        notes: Checks skipped against a real model.
        seconds: How long it ran.
        log: What the buddy logged meanwhile (warnings and errors).
    """

    name: str
    file: str
    line: int
    failures: list[Failure] = field(default_factory=list)
    notes: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""

    @property
    def passed(self) -> bool:
        """Whether nothing failed."""
        return not self.failures


class _StepError(Exception):
    """An action of a step could not be done; ``path`` says where it is written."""

    def __init__(self, path: YamlPath, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class _Scripted:
    """A scripted response: where it is written, and its calls' arguments (unresolved)."""

    path: YamlPath
    text: str
    reasoning: str
    calls: tuple[CallScript, ...]


def _script(step_path: YamlPath, items: Sequence[str | ModelTurn]) -> list[_Scripted]:
    out: list[_Scripted] = []
    for index, turn in enumerate(items):
        path = (*step_path, "model", index)
        if isinstance(turn, str):
            out.append(_Scripted(path, turn, "", ()))
            continue
        text = SKIP_MARKER if turn.skip else (turn.say or "")
        out.append(_Scripted(path, text, turn.think or "", tuple(calls_of(turn, path))))
    return out


class _ScenarioModel(Model):
    """The model a scenario's buddy talks to: the scripted responses, or a real model.

    It also records every tool call the model made and every result it read. Results are
    taken from each request's messages (what the model read, before any
    redaction); results of a call that ended the turn are taken from the stored record.
    """

    name = "test:scenario"

    def __init__(self, inner: Model | None) -> None:
        self.inner = inner
        if inner is not None:
            self.name = inner.name
        self.ids = itertools.count(1)
        self.seen: set[str] = set()
        self.latest: dict[str, str] = {}
        self.begin((), None, written=False)

    def begin(self, anchor: YamlPath, script: list[_Scripted] | None, *, written: bool) -> None:
        """Start a step: its responses, and fresh lists of what it produced.

        Args:
            anchor: The key a script problem is reported at: the step's `model` when
                ``written``, else its action.
            script: The responses, or ``None`` for a real model.
            written: Whether the step has a ``model:`` list.
        """
        self.anchor = anchor
        self.script = script or []
        self.scripted = script is not None
        self.written = written
        self.used = 0
        self.asked = 0
        self.calls: list[CallSeen] = []
        self.results: list[ResultSeen] = []
        self.problems: list[tuple[YamlPath, str, bool]] = []  # (where, what, at the key)

    def absorb(self, messages: Sequence[Message]) -> None:
        """Record tool results not seen before."""
        for message in messages:
            if message.role != "tool" or message.tool_call_id is None:
                continue
            self.result(message.tool_call_id, str(message.name), message.content, message.is_error)

    def result(self, call_id: str, name: str, text: str | None, is_error: bool) -> None:
        """Record one tool result (once per call id)."""
        if call_id in self.seen:
            return
        self.seen.add(call_id)
        self.results.append(ResultSeen(call_id, name, text, is_error))
        if text is not None:
            self.latest[name] = text

    def _responded(self, response: ModelResponse) -> None:
        for call in response.tool_calls:
            try:
                args: Any = json.loads(call.arguments or "{}")
            except ValueError:
                args = call.arguments
            self.calls.append(CallSeen(call.id, call.name, args))

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer with the next scripted response (or the real model's)."""
        self.absorb(request.messages)
        if self.inner is not None:
            response = await self.inner.request(request)
        else:
            response = self._next()
        self._responded(response)
        return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Like :meth:`request`, streamed (a real model streams as usual)."""
        self.absorb(request.messages)
        if self.inner is not None:
            async for event in self.inner.stream(request):
                if isinstance(event, Done):
                    self._responded(event.response)
                yield event
            return
        response = self._next()
        self._responded(response)
        if response.text:
            yield TextDelta(response.text)
        yield Done(response)

    def _next(self) -> ModelResponse:
        self.asked += 1
        if self.used >= len(self.script) or self.problems:
            if not self.problems:
                have = (
                    f"`model:` scripts {len(self.script)}"
                    if self.written
                    else "the step has no `model:`"
                )
                self.problems.append(
                    (
                        self.anchor,
                        f"the buddy asked the model for response {self.asked} of this step, but "
                        + have,
                        True,
                    )
                )
            raise ModelError(self.name, "no scripted response left")
        scripted = self.script[self.used]
        self.used += 1
        try:
            calls = tuple(
                ToolCall(
                    f"call_{next(self.ids)}",
                    call.tool,
                    json.dumps(self._resolve(call.args, call.args_at), ensure_ascii=False),
                )
                for call in scripted.calls
            )
        except _StepError as exc:
            self.problems.append((exc.path, exc.message, False))
            raise ModelError(self.name, exc.message) from None
        return ModelResponse(
            text=scripted.text,
            tool_calls=calls,
            reasoning=scripted.reasoning,
            usage=Usage(10, 5),
            finish_reason="tool_calls" if calls else "stop",
            model=self.name,
        )

    def _resolve(self, value: Any, path: YamlPath) -> Any:
        if isinstance(value, str):
            whole = PLACEHOLDER.fullmatch(value.strip())
            if whole is not None:
                return self._lookup(whole, path)
            return PLACEHOLDER.sub(lambda m: _as_text(self._lookup(m, path)), value)
        if isinstance(value, dict):
            return {k: self._resolve(v, (*path, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolve(v, (*path, i)) for i, v in enumerate(value)]
        return value

    def _lookup(self, match: re.Match[str], path: YamlPath) -> Any:
        tool, dotted = match.group(1), match.group(2)
        text = self.latest.get(tool)
        if text is None:
            raise _StepError(path, f"`{match.group(0)}`: {tool} has given no result yet")
        if not dotted:
            with contextlib.suppress(ValueError):
                return json.loads(text)
            return text
        try:
            value: Any = json.loads(text)
        except ValueError:
            raise _StepError(
                path, f"`{match.group(0)}`: the result of {tool} is not JSON: {text[:120]!r}"
            ) from None
        for part in dotted.strip(".").split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                has = (
                    ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
                )
                raise _StepError(
                    path,
                    f"`{match.group(0)}`: the result of {tool} has no `{part}` (it has: {has})",
                )
        return value

    def leftovers(self) -> None:
        """Note scripted responses the step did not use (unless the script failed already:
        then the rest going unused is only a consequence)."""
        if self.scripted and not self.problems and self.used < len(self.script):
            unused = self.script[self.used]
            self.problems.append(
                (
                    unused.path,
                    f"this step scripts {len(self.script)} model responses but the buddy asked "
                    f"for {self.asked}: this one and any after it were not used",
                    False,
                )
            )


def _refusal(exc: Exception) -> str:
    """What the platform said when it refused an action (its code and reason)."""
    if isinstance(exc, PlatformError) and exc.status:
        return f"the platform refused ({exc.status} {exc.code or None}): {exc.reason}"
    return f"the platform refused: {exc}"


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _LogCapture(logging.Handler):
    """Collects what the buddy logs during a scenario (shown when it fails)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.buffer = io.StringIO()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.buffer.write(self.format(record) + "\n")


@contextlib.contextmanager
def _capture_logs() -> Iterator[_LogCapture]:
    handler = _LogCapture()
    logger = logging.getLogger("buddy")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


class LayerScript(Model):
    """The conversation layers' model in a scenario (automatic memory's extractor): it
    answers what the step scripted (``extract:``, pushed by the capability's step key),
    then ``{}`` — nothing found — so a scenario is deterministic and offline."""

    name = "test:layer-script"

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.requests: list[ModelRequest] = []

    def push(self, answer: str) -> None:
        """What the next request is answered."""
        self.answers.append(answer)

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return ModelResponse(text=self.answers.pop(0) if self.answers else "{}", model=self.name)


class _Run:
    """One scenario against a fresh platform."""

    def __init__(
        self,
        blueprint: Blueprint,
        suite: Suite,
        path: YamlPath,
        scenario: CoreScenario,
        model: Model | None,
        timeout: float,
        sockets: bool = False,
    ) -> None:
        assert suite.doc is not None
        self.sockets = sockets
        self.blueprint = blueprint
        self.doc = suite.doc
        self.file = suite.file
        self.path = path
        self.scenario = scenario
        self.model = _ScenarioModel(model)
        self.exact = model is None
        self.timeout = timeout
        self.identity = f"{blueprint.name}-dev"
        self.members = {name: f"m_{i + 1}" for i, name in enumerate(scenario.members)}
        self.failures: list[Failure] = []
        self.notes: list[Failure] = []
        self.actions = {a.key: a for a in step_actions()}
        self.layer_script = LayerScript()
        # The message ids and the number of turns the last step saw at its end: what the
        # next step sees at its start, read again only for the first step (see _step).
        self.after: tuple[set[str], int] | None = None

    def at(self, path: YamlPath, message: str, *, key: bool = False) -> Failure:
        loc = loc_of(self.doc, path, key=key)
        return Failure(self.file, loc.line, loc.column, format_path(path), message)

    async def go(self) -> None:
        with contextlib.ExitStack() as scratch:
            # A scenario's platform is thrown away after it: in process it lives in memory
            # (a file on disk costs an fsync per write); over sockets it keeps a file, as
            # a served platform does.
            database = ":memory:"
            if self.sockets:
                folder = scratch.enter_context(tempfile.TemporaryDirectory(prefix="buddy-test-"))
                database = str(Path(folder) / "platform.db")
            async with LocalPlatform(database, sockets=self.sockets) as platform:
                self.platform = platform
                tokens = await platform.register(self.blueprint.name)
                self.token = tokens["dev_token"]
                info = await platform.dev(
                    "POST",
                    "/conversations",
                    json={
                        "identity": self.identity,
                        "kind": self.scenario.kind,
                        "members": [{"name": n, "member_id": m} for n, m in self.members.items()],
                    },
                )
                self.cid = str(info["id"])
                await self._clock(self.scenario.clock)
                async with running_buddy(
                    platform,
                    self.blueprint,
                    self.model,
                    self.token,
                    layer_model=self.layer_script,
                ) as server:
                    self.server = server
                    for index, step in enumerate(self.scenario.steps):
                        if not await self._step((*self.path, "steps", index), step):
                            break

    async def _clock(self, hhmm: str) -> None:
        """Move the platform clock to the next ``hhmm`` in :data:`CLOCK_TIMEZONE`."""
        now = float((await self.platform.dev("GET", "/clock"))["time"])
        local = datetime.fromtimestamp(now, UTC).astimezone(ZoneInfo(CLOCK_TIMEZONE))
        hour, minute = map(int, hhmm.split(":"))
        target = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if target <= local:
            target += timedelta(days=1)
        await self.platform.dev(
            "POST", "/clock", json={"advance_seconds": (target - local).total_seconds()}
        )

    # What a capability's scenario words are given (buddy.testing.parts.StepRun).

    def member_id(self, name: str | None) -> str:
        return self.members[name] if name is not None else next(iter(self.members.values()))

    def fail(self, path: YamlPath, message: str) -> NoReturn:
        raise _StepError(path, message)

    async def _step(self, path: YamlPath, step: CoreStep) -> bool:
        """Run one step; ``False`` when it failed (the scenario stops there)."""
        action = step.action
        # New is what appeared since the previous step's end, read there. Since then only
        # that step's state reads ran: whatever the buddy or the scheduler did meanwhile it
        # could as well have done just after a second read here, so none is made.
        if self.after is None:
            self.after = (
                {m["id"] for m in await self.platform.transcript(self.cid)},
                len(await self.platform.turns(self.cid)),
            )
        before, turns_before = self.after
        script: list[_Scripted] | None = None
        if self.exact:
            script = _script(path, step.model) if step.model is not None else []
        written = step.model is not None
        anchor = (*path, "model") if written else (*path, action or "expect")
        self.model.begin(anchor, script, written=written)
        failures: list[Failure] = []
        self.layer_script.answers.clear()
        try:
            for extra in modifiers():
                value = getattr(step, extra.key, None)
                if value is not None:
                    await resolve(extra.run)(value, (*path, extra.key), self)
            if action is not None:
                await self._act(action, step, (*path, action))
            await self.platform.wait_acked(self.identity, timeout=self.timeout)
            for layer in self.server.buddy.layers:  # what the turn's message added
                await asyncio.wait_for(layer.settled(), self.timeout)
        except _StepError as exc:
            failures.append(self.at(exc.path, exc.message))
        except TimeoutError:
            failures.append(
                self.at(
                    (*path, action or "expect"),
                    f"the buddy did not finish its turn within {self.timeout:g}s",
                    key=True,
                )
            )
        except (PlatformError, httpx.HTTPError) as exc:
            failures.append(self.at((*path, action or "expect"), _refusal(exc), key=True))
        seen = await self._observed(before, turns_before)
        if not failures:  # after a failed action, unused responses are only a consequence
            self.model.leftovers()
        failures.extend(self.at(where, what, key=key) for where, what, key in self.model.problems)
        if not failures and step.expect is not None:
            state = await self._state(step.expect, seen)
            missed, noted = check(step.expect, seen, state, exact=self.exact)
            failures.extend(self.at((*path, "expect", *m.path), m.message) for m in missed)
            self.notes.extend(self.at((*path, "expect", *m.path), m.message) for m in noted)
        self.failures.extend(sorted(failures, key=lambda f: (f.line, f.column)))
        return not failures

    async def _act(self, action: str, step: CoreStep, path: YamlPath) -> None:
        platform, cid = self.platform, self.cid
        if action == "user":
            assert step.user is not None
            member = self.members[step.as_] if step.as_ is not None else None
            await platform.say(cid, step.user, member)
        elif action == "click":
            assert step.click is not None
            card = await self.last_card(
                "question", path, "there is no question card to click in this conversation"
            )
            options = card["body"].get("options") or []
            if step.click not in options:
                raise _StepError(
                    path,
                    f"the last question card's options are {json.dumps(options, ensure_ascii=False)}; "
                    f"{step.click!r} is not one of them",
                )
            body: dict[str, Any] = {"message_id": card["id"], "option": step.click}
            if step.as_ is not None:
                body["member_id"] = self.members[step.as_]
            await platform.dev("POST", f"/conversations/{cid}/options", json=body)
        elif action in self.actions:
            await resolve(self.actions[action].run)(getattr(step, action), path, self)
        else:
            assert step.advance is not None
            seconds = duration_seconds(step.advance)
            await platform.dev("POST", "/clock", json={"advance_seconds": seconds})

    async def last_card(
        self, kind: str, path: YamlPath, missing: str, *, pending: bool = False
    ) -> dict[str, Any]:
        cards = [
            m
            for m in await self.platform.transcript(self.cid)
            if m["sender"] == "buddy"
            and m["kind"] == kind
            and (not pending or m["body"].get("status") == "pending")
        ]
        if not cards:
            raise _StepError(path, missing)
        card: dict[str, Any] = cards[-1]
        return card

    async def _observed(self, before: set[str], turns_before: int) -> Observed:
        transcript = await self.platform.transcript(self.cid)
        every_turn = await self.platform.turns(self.cid)
        self.after = ({m["id"] for m in transcript}, len(every_turn))
        turns = every_turn[turns_before:]
        # Results of calls that ended their turn never reached the model: take them from
        # the stored record (redacted ones as `None`).
        for turn in turns:
            for record in turn.get("steps") or []:
                if record.get("type") == "tool_result" and record.get("call_id"):
                    content = record.get("content")
                    text = None if record.get("redacted") else _as_text(content)
                    self.model.result(
                        str(record["call_id"]),
                        str(record.get("tool")),
                        text,
                        bool(record.get("is_error")),
                    )
        return Observed(
            messages=[m for m in transcript if m["sender"] == "buddy" and m["id"] not in before],
            calls=list(self.model.calls),
            results=list(self.model.results),
            turns=list(turns),
        )

    async def _state(self, expect: CoreExpect, seen: Observed) -> dict[str, Any]:
        """What each capability's expectation given in ``expect`` reads of the platform
        after the step, by key; one read per state function."""
        read: dict[str, Any] = {}
        state: dict[str, Any] = {}
        for part in step_expects():
            if getattr(expect, part.key, None) is None or not part.state:
                continue
            if part.state not in read:
                read[part.state] = await resolve(part.state)(self, seen)
            state[part.key] = read[part.state]
        return state


async def run_scenario(
    blueprint: Blueprint,
    suite: Suite,
    index: int,
    *,
    model: Model | None = None,
    timeout: float = 30.0,
    sockets: bool = False,
) -> ScenarioResult:
    """Run one scenario of a suite against a fresh dev platform.

    Args:
        blueprint: The buddy.
        suite: A suite read without issues.
        index: Which of its scenarios.
        model: A real model instead of the scripted responses (exact text checks are
            then skipped with a note).
        timeout: Seconds a step's turns may take.
        sockets: Serve the dev platform on loopback sockets (the buddy's HTTP calls and
            its gateway websocket over TCP) instead of in this process.

    Returns:
        The result, with located failures.
    """
    path, scenario = suite.scenarios[index]
    assert suite.doc is not None
    line = loc_of(suite.doc, path).line
    result = ScenarioResult(scenario.name, suite.file, line)
    run = _Run(blueprint, suite, path, scenario, model, timeout, sockets)
    started = time.monotonic()
    with _capture_logs() as logs:
        try:
            await run.go()
        except Exception as exc:  # the platform or the buddy broke: report, don't crash the run
            run.failures.append(
                run.at(path, f"the scenario could not run: {type(exc).__name__}: {exc}")
            )
    result.failures = run.failures
    result.notes = run.notes
    result.seconds = time.monotonic() - started
    result.log = logs.buffer.getvalue()
    return result


if __name__ == "__main__":  # pragma: no cover - `python -m buddy.testing.scenarios > docs/…`
    sys.stdout.write(schema_text())
