"""Scenario tests: conversations written in YAML next to a buddy, run against a dev platform.

The format — scenarios, steps, scripted model responses — and reading a file with
located errors are in :mod:`buddy.testing.scenario_format`; the expectations in
:mod:`buddy.testing.expectations`. This module runs a scenario: a fresh dev platform (in
this process over an in-memory database, or on loopback over a temporary one), the buddy
against it with the scripted model (or a real one), and the users' actions through the
platform's dev endpoints — the same path as ``tests/runtime/test_e2e.py``. The models the
buddy talks to are in :mod:`buddy.testing.scripted_model`, what a run reports in
:mod:`buddy.testing.scenario_results` — with what a replay (``buddy diff --replay``)
is told after each step (:class:`StepWatch`, :class:`StepDone`). Its names include the
format's, so ``buddy.testing.scenarios`` is the one import a caller needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn
from zoneinfo import ZoneInfo

import httpx

from buddy.compile.blueprint import Blueprint
from buddy.errors import PlatformError
from buddy.extend import resolve, step_actions, step_expects
from buddy.manifest.locate import loc_of
from buddy.manifest.yamlio import YamlPath, format_path
from buddy.models.base import Model
from buddy.testing.expectations import CoreExpect, Miss, Observed, check
from buddy.testing.local import LocalPlatform, running_buddy
from buddy.testing.scenario_format import Suite, read_suite
from buddy.testing.scenario_models import (
    CLOCK_TIMEZONE,
    SCHEMA_ID,
    CoreScenario,
    CoreStep,
    ModelTurn,
    actions,
    duration_seconds,
    modifiers,
    scenario_json_schema,
    schema_text,
)
from buddy.testing.scenario_results import (
    Failure,
    ScenarioResult,
    StepDone,
    StepError,
    StepWatch,
    capture_logs,
)
from buddy.testing.scripted_model import (
    LayerScript,
    ScenarioModel,
    Scripted,
    as_text,
    scripted_responses,
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
    "StepDone",
    "StepWatch",
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


def _refusal(exc: Exception) -> str:
    """What the platform said when it refused an action (its code and reason)."""
    if isinstance(exc, PlatformError) and exc.status:
        return f"the platform refused ({exc.status} {exc.code or None}): {exc.reason}"
    return f"the platform refused: {exc}"


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
        watch: StepWatch | None = None,
        start: float | None = None,
    ) -> None:
        assert suite.doc is not None
        self.sockets = sockets
        self.watch = watch
        self.start = start
        self.blueprint = blueprint
        self.doc = suite.doc
        self.file = suite.file
        self.path = path
        self.scenario = scenario
        self.model = ScenarioModel(model)
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
                if self.start is not None:
                    platform.set_time(self.start)
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
                    if self.watch is not None:
                        await self.watch.started(self)
                    for index, step in enumerate(self.scenario.steps):
                        passed = await self._step(index, step)
                        if not passed and self.watch is None:
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
        raise StepError(path, message)

    async def _step(self, index: int, step: CoreStep) -> bool:
        """Run one step; ``False`` when it failed (the scenario stops there)."""
        path: YamlPath = (*self.path, "steps", index)
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
        script: list[Scripted] | None = None
        if self.exact:
            script = scripted_responses(path, step.model) if step.model is not None else []
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
        except StepError as exc:
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
        checked: dict[str, list[Miss]] | None = None
        if not failures and step.expect is not None:
            state = await self._state(step.expect, seen)
            missed, noted = check(step.expect, seen, state, exact=self.exact)
            failures.extend(self.at((*path, "expect", *m.path), m.message) for m in missed)
            self.notes.extend(self.at((*path, "expect", *m.path), m.message) for m in noted)
            if self.watch is not None:
                checked = _by_key(step.expect, missed)
        failures.sort(key=lambda f: (f.line, f.column))
        self.failures.extend(failures)
        if self.watch is not None:
            done = StepDone(
                index, path, step, seen, tuple(self.model.tools), tuple(failures), checked
            )
            await self.watch.stepped(self, done)
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
                raise StepError(
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
            raise StepError(path, missing)
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
                    text = None if record.get("redacted") else as_text(content)
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
            systems=list(self.model.systems),
            histories=list(self.model.histories),
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


def _by_key(expect: CoreExpect, missed: list[Miss]) -> dict[str, list[Miss]]:
    """Each key ``expect`` gives, with its misses (empty when it held)."""
    given = [k for k in type(expect).model_fields if getattr(expect, k, None) is not None]
    out: dict[str, list[Miss]] = {key: [] for key in given}
    for miss in missed:
        out.setdefault(str(miss.path[0]) if miss.path else "", []).append(miss)
    return out


async def run_scenario(
    blueprint: Blueprint,
    suite: Suite,
    index: int,
    *,
    model: Model | None = None,
    timeout: float = 30.0,
    sockets: bool = False,
    watch: StepWatch | None = None,
    start: float | None = None,
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
        watch: Told what each step did; the run then goes on after a failing step.
        start: The platform clock's instant (seconds since the epoch) before the
            scenario's ``clock:`` moves it, instead of now: two runs that must be
            compared see the same dates.

    Returns:
        The result, with located failures.
    """
    path, scenario = suite.scenarios[index]
    assert suite.doc is not None
    line = loc_of(suite.doc, path).line
    result = ScenarioResult(scenario.name, suite.file, line)
    run = _Run(blueprint, suite, path, scenario, model, timeout, sockets, watch, start)
    started = time.monotonic()
    with capture_logs() as logs:
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
