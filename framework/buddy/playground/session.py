"""A ``buddy dev`` session: the dev platform, the named buddies, and their hot reload.

The platform is served by uvicorn on loopback with the playground attached
(:func:`buddy.playground.app.attach`). Each buddy runs in this process as its dev identity
(``<name>-dev``), exactly like ``buddy chat`` runs one: a :class:`BuddyServer` talking to
the platform over loopback HTTP and the websocket gateway.

**Hot reload.** Every ``poll_seconds`` the session compares the modification times and
sizes of every file a buddy depends on (its ``Blueprint.files``: manifest, templates,
traits, plugins, widget schemas, resources) and of every file under its directory. On a
change it compiles the buddy again:

- valid: the buddy's server is stopped (in-flight turns get ``shutdown_deadline``
  seconds, then are cancelled and delivered again) and a new one is started from the new
  blueprint — conversations, memory, widgets and subscriptions live on the platform, so
  they carry on;
- invalid: the located problems are printed and shown on the page, and the last good
  version keeps running.

Polling is used instead of OS file events: it needs no extra dependency, works the same
on every platform and editor (atomic renames included), and a buddy is a few dozen files.
What is polled is :mod:`buddy.playground.watch`; one buddy's state,
:mod:`buddy.playground.buddies`; what the page reads of it, :mod:`buddy.playground.page`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import httpx
import uvicorn

from buddy.compile.blueprint import Blueprint
from buddy.compile.compiler import check
from buddy.errors import Issue, ModelConfigError, Reject, StartError
from buddy.models.base import Model
from buddy.platform.client import Backoff, HttpPlatformClient
from buddy.platform.dev.app import create_app
from buddy.platform.dev.core import Platform
from buddy.platform.dev.journal import keep_answers_of
from buddy.platform.dev.serving import server_config
from buddy.playground.app import Hub, attach
from buddy.playground.buddies import DevBuddy
from buddy.playground.page import describe
from buddy.playground.watch import (
    POLL_SECONDS,
    SETTLE_SECONDS,
    changed_files,
    purge_plugins,
    scan,
    shown,
)
from buddy.runtime.loop import AgentEvent
from buddy.runtime.server import IDLE_SECONDS, Buddy, BuddyServer

__all__ = ["DevBuddy", "DevSession"]

log = logging.getLogger("buddy.dev")

ModelFactory = Callable[[Blueprint], Model]


def _check_port(port: int) -> None:
    """Raise a clear ``OSError`` when ``127.0.0.1:port`` cannot be listened on.

    uvicorn would log the failure and exit the whole process instead.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise OSError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None


class DevSession:
    """The dev platform with the playground, and the named buddies, hot-reloaded.

    Use as ``async with DevSession(paths) as session: ...``.

    Args:
        manifests: Each buddy's ``buddy.yaml``.
        db: The platform's SQLite file (``:memory:`` for a throwaway one).
        port: The loopback port; ``0`` picks a free one.
        model: A model reference overriding every buddy's (``--model``).
        profile: A profile to apply (``--profile``).
        model_factory: Makes the model of a blueprint (tests inject scripted models);
            default: the blueprint's model, resolved as ``buddy run`` does.
        out: Where the session reports starts, reloads and problems (the terminal).
        poll_seconds: How often files are checked for changes.
        shutdown_deadline: Seconds a reloaded buddy's in-flight turns get to finish.
        idle_seconds: Recycle a conversation idle this long (default: the 30 minutes of
            :data:`buddy.runtime.server.IDLE_SECONDS`); shorter only for testing.
    """

    def __init__(
        self,
        manifests: Sequence[Path],
        *,
        db: str = ":memory:",
        port: int = 0,
        model: str | None = None,
        profile: str | None = None,
        model_factory: ModelFactory | None = None,
        out: TextIO | None = None,
        poll_seconds: float = POLL_SECONDS,
        shutdown_deadline: float = 1.0,
        idle_seconds: float | None = None,
    ) -> None:
        self.db = db
        self.idle_seconds = idle_seconds
        self.port = port
        self.model_ref = model
        self.profile = profile
        self.model_factory = model_factory
        self.out = out
        self.poll_seconds = poll_seconds
        self.shutdown_deadline = shutdown_deadline
        self.hub = Hub()
        self.admin_token = ""
        self.version = 0  # grows on every change of what state() answers
        self.buddies: list[DevBuddy] = []
        keys: set[str] = set()
        for manifest in manifests:
            key = base = manifest.resolve().parent.name or "buddy"
            number = 2
            while key in keys:
                key, number = f"{base}-{number}", number + 1
            keys.add(key)
            self.buddies.append(DevBuddy(manifest.resolve(), key))
        self._tokens: dict[str, dict[str, str]] = {}
        self._server: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()
        self.platform: Platform | None = None  # the dev platform's state, once it started

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        """The platform's base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def playground_url(self) -> str:
        """The page's URL."""
        return f"{self.url}/playground/"

    async def __aenter__(self) -> DevSession:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Serve the platform and the page, start every valid buddy, and start watching."""

        def ready(platform: Platform) -> None:
            self.admin_token = platform.admin_token
            self.platform = platform

        if self.port:
            _check_port(self.port)
        app = create_app(self.db, on_ready=ready)
        attach(app, self)
        config = server_config(app, "127.0.0.1", self.port, lifespan="on")
        self._server = uvicorn.Server(config)
        self._serving = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._serving.done():
                self._serving.result()
                raise StartError("the dev platform stopped before it started")
            await asyncio.sleep(0.01)
        if self.port == 0:
            self.port = int(self._server.servers[0].sockets[0].getsockname()[1])
        self._http = httpx.AsyncClient(
            base_url=self.url,
            timeout=30,
            headers={"Authorization": f"Bearer {self.admin_token}"},
        )
        for dev in self.buddies:
            dev.snapshot = scan(dev.watched())
            await self._load(dev, [])
        self._watcher = asyncio.create_task(self._watch())

    async def close(self) -> None:
        """Stop watching, stop every buddy, close the page's streams and the platform."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for dev in self.buddies:
            await self._stop(dev)
        self.hub.close()
        if self._http is not None:
            await self._http.aclose()
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            await self._serving

    # ------------------------------------------------------------------ reporting

    def _say(self, text: str) -> None:
        if self.out is not None:
            stamp = time.strftime("%H:%M:%S")
            print(f"[{stamp}] {text}", file=self.out, flush=True)

    def _touched(self, dev: DevBuddy | None = None) -> None:
        self.version += 1
        self.hub.publish(
            {"kind": "state", "version": self.version, "buddy": dev.key if dev else None}
        )

    def state(self) -> dict[str, Any]:
        """What the page shows of the session (tokens included: the page acts as the buddy
        for memory, which has no dev endpoint)."""
        return {
            "version": self.version,
            "platform": self.url,
            "buddies": [describe(dev, self._tokens) for dev in self.buddies],
        }

    def layers(self, buddy: str, conversation_id: str) -> list[dict[str, Any]] | None:
        """What the conversation layers of the running buddy ``buddy`` know of the
        conversation; ``None`` when it is not running."""
        dev = next((d for d in self.buddies if d.key == buddy), None)
        if dev is None or dev.server is None:
            return None
        return [layer.inspect(conversation_id) for layer in dev.server.buddy.layers]

    def prompts(self, buddy: str, conversation_id: str) -> list[dict[str, Any]]:
        """The system prompts the running buddy ``buddy`` sent in the conversation's last
        turns (newest last), each with where every declared part landed and its text."""
        dev = next((d for d in self.buddies if d.key == buddy), None)
        if dev is None or dev.server is None:
            return []
        return [
            {
                "event": sent.event,
                "system": sent.system,
                "parts": [{"part": x.key, "where": x.where, "text": x.text} for x in sent.landings],
                "injected": [
                    {"depth": x.depth, "role": x.role, "text": x.text} for x in sent.injected
                ],
            }
            for sent in dev.server.buddy.turns.sent.get(conversation_id, ())
        ]

    async def record(self, buddy: str, conversation_id: str, *, overwrite: bool) -> dict[str, Any]:
        """Write the conversation into the running buddy ``buddy``'s ``tests/`` as a
        scenario file (:mod:`buddy.testing.record`): ``{path, notes}``.

        Raises:
            Reject: 404 (no such buddy running, or conversation of it), 409
                ``scenario_exists`` (the file is there and ``overwrite`` is false), 422
                ``not_recordable`` (its replay does not go as it went).
        """
        from buddy.testing.record import (
            RecordError,
            head_lines,
            read_conversation,
            record,
            scenario_file,
        )

        dev = next((d for d in self.buddies if d.key == buddy), None)
        if dev is None or dev.blueprint is None or self.platform is None:
            raise Reject(404, "not_found", f"no buddy {buddy!r} is running")
        blueprint = dev.blueprint
        try:
            found = await self.platform.store.read(
                lambda conn: read_conversation(conn, conversation_id)
            )
        except RecordError as exc:
            raise Reject(404, "conversation_not_found", str(exc)) from None
        if found.identity != f"{blueprint.name}-dev":
            raise Reject(404, "conversation_not_found", f"{conversation_id} is not {buddy}'s")
        directory = dev.manifest.parent
        target = scenario_file(directory / "tests", found)
        if target.exists() and not overwrite:
            raise Reject(409, "scenario_exists", f"{shown(str(target))} exists")
        source = 'the playground\'s "Save as scenario"'
        try:
            recording = await record(
                blueprint, found, head=head_lines(found, directory, target, source)
            )
        except RecordError as exc:
            raise Reject(422, "not_recordable", str(exc)) from None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(recording.text, encoding="utf-8")
        # A scenario file changes nothing the buddy runs: no reload for it.
        dev.snapshot.update(scan({str(target.resolve())}))
        self._say(f"{dev.key}: conversation {conversation_id} saved as {shown(str(target))}")
        return {"path": shown(str(target)), "notes": recording.notes}

    # ------------------------------------------------------------------ watching

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            await self.poll()

    async def poll(self) -> list[str]:
        """Check every buddy's files once; reload the changed ones. Returns their keys."""
        reloaded: list[str] = []
        for dev in self.buddies:
            try:
                files = dev.watched()
                if not changed_files(dev.snapshot, scan(files)):
                    continue
                await asyncio.sleep(SETTLE_SECONDS)
                files = dev.watched()
                now = scan(files)
                changed = changed_files(dev.snapshot, now)
                dev.snapshot = now
                if changed:
                    await self._load(dev, changed)
                    reloaded.append(dev.key)
            except Exception:  # the watcher must outlive one bad reload
                log.exception("reloading %s failed", dev.key)
        return reloaded

    # ------------------------------------------------------------------ (re)loading

    async def _load(self, dev: DevBuddy, changed: list[str]) -> None:
        """Compile ``dev`` again and, when valid, run the new version instead of the old."""
        async with self._lock:
            await self._load_locked(dev, changed)

    async def _load_locked(self, dev: DevBuddy, changed: list[str]) -> None:
        started = time.monotonic()
        dev.changed = [shown(f) for f in changed]
        dev.checked_at = time.time()
        what = ", ".join(dev.changed[:3]) + (" …" if len(dev.changed) > 3 else "")
        head = f"{dev.key}: {what} changed — " if changed else f"{dev.key}: "
        before = dev.snapshot.keys()
        try:
            blueprint, issues = await asyncio.to_thread(
                check, dev.manifest, profile=self.profile, model=self.model_ref
            )
        except Exception as exc:  # a file vanished mid-read, say
            blueprint, issues = (
                None,
                [Issue.of_file(str(dev.manifest), "unreadable", str(exc))],
            )
        if blueprint is None:
            dev.problems, dev.error = issues, ""
            self._report_problems(dev, head)
            self._rewatch(dev, before)
            return
        dev.problems = []
        clash = next(
            (
                other
                for other in self.buddies
                if other is not dev
                and other.blueprint is not None
                and other.blueprint.name == blueprint.name
            ),
            None,
        )
        if clash is not None:
            dev.error = f"{clash.key} is also called {blueprint.name}; names must differ"
            self._report_error(dev, head)
            return
        try:
            model = self._model(blueprint)
        except ModelConfigError as exc:
            dev.error = f"{exc} (try --model offline)"
            self._report_error(dev, head)
            self._rewatch(dev, before, blueprint)
            return
        old = dev.blueprint
        await self._stop(dev)
        purge_plugins()
        try:
            await self._launch(dev, blueprint, model)
        except Exception as exc:
            dev.error = f"the new version did not start: {exc}"
            self._report_error(dev, head)
            if old is not None:
                with contextlib.suppress(Exception):
                    await self._launch(dev, old, self._model(old))
            return
        dev.error = ""
        dev.generation += 1
        dev.loaded_at = time.time()
        self._rewatch(dev, before, blueprint)
        seconds = time.monotonic() - started
        if changed:
            self._say(f"{head}reloaded in {seconds:.2f} s (version {dev.generation})")
        else:
            self._say(
                f"{dev.key}: running as {dev.identity} (model {dev.model}), "
                f"watching {len(dev.snapshot)} files"
            )
        self._touched(dev)

    def _rewatch(self, dev: DevBuddy, before: Any, blueprint: Blueprint | None = None) -> None:
        """Add files that became dependencies to the snapshot (as they are now)."""
        if blueprint is not None:
            dev.extra_files = {str(f) for f in blueprint.files}
        fresh = {f for f in dev.watched() if f not in before}
        dev.snapshot.update(scan(fresh))

    def _report_problems(self, dev: DevBuddy, head: str) -> None:
        count = len(dev.problems)
        keeping = (
            f"still running version {dev.generation}"
            if dev.server is not None
            else "nothing running yet"
        )
        lines = [f"{head}{count} problem{'s' if count != 1 else ''}; {keeping}:"]
        for issue in dev.problems:
            located = issue.shown_as(shown(issue.file))
            lines.extend("    " + line for line in str(located).splitlines())
        self._say("\n".join(lines))
        self._touched(dev)

    def _report_error(self, dev: DevBuddy, head: str) -> None:
        keeping = (
            f"still running version {dev.generation}"
            if dev.server is not None
            else "nothing running yet"
        )
        self._say(f"{head}{dev.error}; {keeping}")
        self._touched(dev)

    def _model(self, blueprint: Blueprint) -> Model:
        if self.model_factory is not None:
            return self.model_factory(blueprint)
        from buddy.models.registry import resolve

        return resolve(blueprint.model)

    async def _register(self, name: str) -> dict[str, str]:
        """The dev platform's tokens of ``name`` (registered once per session)."""
        if name in self._tokens:
            return self._tokens[name]
        assert self._http is not None
        response = await self._http.post("/dev/buddies", json={"buddy_id": name})
        if response.status_code == 409:  # registered in an earlier session (--db)
            response = await self._http.post(f"/dev/buddies/{name}/tokens")
        response.raise_for_status()
        tokens: dict[str, str] = response.json()
        self._tokens[name] = tokens
        return tokens

    async def _launch(self, dev: DevBuddy, blueprint: Blueprint, model: Model) -> None:
        tokens = await self._register(blueprint.name)
        identity = f"{blueprint.name}-dev"
        client = HttpPlatformClient(self.url, tokens["dev_token"], backoff=Backoff(0.05, 0.5))
        generation = dev.generation + 1

        def on_event(conversation_id: str, event: AgentEvent) -> None:
            self.hub.publish(
                {
                    "kind": "agent",
                    "buddy": dev.key,
                    "identity": identity,
                    "generation": generation,
                    "conversation_id": conversation_id,
                    "type": event.type,
                    "data": event.data,
                }
            )

        server = BuddyServer(
            Buddy(blueprint, client, model),
            on_event=on_event,
            shutdown_deadline=self.shutdown_deadline,
            idle_seconds=IDLE_SECONDS if self.idle_seconds is None else self.idle_seconds,
        )
        keep_answers_of(server.buddy.layers, self.platform)  # for "save as scenario"
        task = asyncio.create_task(server.run())
        deadline = time.monotonic() + 15
        while not client.connections and not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if task.done():
            await client.close()
            task.result()  # raises why it stopped
            raise StartError("the buddy stopped at once")
        if not client.connections:
            await server.stop()
            task.cancel()
            raise StartError("the buddy did not connect to the gateway within 15 s")
        dev.blueprint, dev.server, dev.task = blueprint, server, task
        dev.model = model.name
        task.add_done_callback(lambda t: self._ended(dev, t))

    def _ended(self, dev: DevBuddy, task: asyncio.Task[None]) -> None:
        if dev.task is not task or task.cancelled():
            return  # stopped on purpose
        problem = task.exception()
        dev.server, dev.task = None, None
        dev.error = f"the buddy stopped: {problem}" if problem else "the buddy stopped"
        self._say(f"{dev.key}: {dev.error}")
        self._touched(dev)

    async def _stop(self, dev: DevBuddy) -> None:
        server, task = dev.server, dev.task
        dev.server, dev.task = None, None
        if server is None or task is None:
            return
        await server.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
