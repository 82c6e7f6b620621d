"""The W2/W3 turn end to end through the dev platform, over real sockets.

Three parties take part: the dev platform (``buddy.testing.local.LocalPlatform``: FastAPI
under uvicorn on a loopback port, SQLite on its worker thread), the buddy (a
``BuddyServer`` with its websocket gateway connection and HTTP client, as ``buddy run``
makes it) and the driver that acts as the users (the platform's dev endpoints over an
httpx client of its own, like ``LocalPlatform.say`` but with 16 connections and no time
limit on waiting for one). They run

* in **one process** and on one event loop (the default), as ``buddy chat`` and the tests
  run them: the CPU figure is the three together;
* or with ``--split``, each in **its own process**, as deployed: the platform in one, the
  buddy in another (connected to the platform over loopback, like ``buddy run``, logging
  as it does), the driver in this one. Each process reports its own CPU time
  (``getrusage``: user and system, all its threads) at the start and the end of the timed
  window, so the CPU per turn is split into buddy, platform and driver. ``Parties`` and
  ``Child`` are what ``capacity.py`` builds on.

One turn: a user writes "What is 1 + 2?" into a fresh private conversation
(``POST /dev/conversations/{id}/messages``); the platform stores the event and sends it
over the gateway; the buddy builds the conversation (info, summary, turns: 3 HTTP calls),
runs the agent loop (the scripted model of ``buddy_peer``: add(1, 2), then "done"),
commits the turn (``POST /internal/v1/conversation/turns``) and acknowledges the event on the
websocket. A turn's latency runs from the driver's POST to the buddy's acknowledgement
(the bench wraps the client's ``ack`` to see it — with ``--split`` the buddy process writes
the event id to its stdout, which the driver reads). The conversations are created before
the clock starts (their creation is timed and reported separately): in the platform they
are the users' chats, not part of the turn.

Modes (one per run, so sessions and the database do not carry over):

* ``seq`` (default N=200): warm-up turns, then N turns one after another (delay 0).
* ``conc`` (default C=200): W3-style; the model sleeps 0.05 s per call, a warm-up of 50
  concurrent conversations, then C conversations at once in one ``asyncio.gather``.

After timing it checks that every conversation shows exactly the buddy reply "done" to
its user, 1 tool call and 2 model calls per turn, and one acknowledgement per turn.

``--profile buddy`` (or ``platform``; implies ``--split``) runs cProfile, on the process's
CPU clock, in that process over the timed turns and prints its own time by package and its
top functions on stderr (the profiler inflates the CPU figures of such a run several times
over, small functions most; quote CPU from runs without it).

usage: python bench/e2e_platform.py [seq|conc] [N] [--split] [--profile PARTY] [--warmup W]
       [--db PATH] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import importlib.util
import json
import logging
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any, NoReturn, Protocol

import buddy_peer as p
import httpx
from _harness import COUNTERS, W3_MODEL_DELAY_S, current_rss_mb, emit, peak_rss_mb

from buddy.platform.api import PlatformClient
from buddy.testing.local import LocalPlatform, running_buddy

# The users' side, like the buddy client's default: httpcore's pool costs CPU quadratic in
# its connections (see HttpPlatformClient), which no real user's client pays.
DRIVER_CONNECTIONS = 16
IDENTITY = "bench-agent"  # the manifest's name; its dev token acts as bench-agent-dev
SCRIPT = Path(__file__).resolve()


class _Admin(Protocol):
    """What the driver needs of the platform: ``LocalPlatform``, or :class:`_RemotePlatform`."""

    url: str
    admin: dict[str, str]

    async def conversation(self, identity: str) -> dict[str, Any]: ...

    async def events(self, identity: str) -> list[dict[str, Any]]: ...


class _Users:
    """The driver: acts as the users through the platform's dev endpoints, and sees each
    turn end when the buddy acknowledges its event."""

    def __init__(self, platform: _Admin, *, lean: bool = False) -> None:
        self.platform = platform
        # ``lean``: the messages go through the buddy client's own HTTP/1.1 pool instead of
        # httpx (a third of the driver's CPU), for runs where the users share the machine
        # with what is measured (capacity.py); the e2e figures keep httpx.
        self._lean: Any = None
        if lean:
            from buddy.platform.http11 import Http11Pool

            self._lean = Http11Pool(platform.url, timeout=60.0, keep=DRIVER_CONNECTIONS)
        self._sent: set[str] = set()  # the event ids of the messages written so far
        # DRIVER_CONNECTIONS connections (idle ones kept 5 s, httpx's default) and no limit
        # on the wait for one: a thousand users writing at once queue on ``_slots``. (A
        # shorter keep-alive, to stay clear of uvicorn's 5 s, made C=1000 collapse: when one
        # loop iteration takes seconds, connections expire between two requests and are
        # reopened again and again.)
        self.http = httpx.AsyncClient(
            base_url=platform.url,
            headers=platform.admin,
            timeout=httpx.Timeout(60.0, pool=None),
            limits=httpx.Limits(max_connections=DRIVER_CONNECTIONS),
        )
        # At most as many requests in flight as the pool has connections: httpcore scans
        # every queued request on each pool operation, so a thousand requests queued in the
        # pool itself would cost the driver quadratic CPU that no user's client has.
        self._slots = asyncio.Semaphore(DRIVER_CONNECTIONS)
        self.acks = 0
        self.resent = 0  # messages looked up again after a ReadError (see _say)
        self._waiting: dict[str, asyncio.Future[float]] = {}

    def _future(self, event_id: str) -> asyncio.Future[float]:
        return self._waiting.setdefault(event_id, asyncio.get_running_loop().create_future())

    def acked(self, event_id: str) -> None:
        """The buddy acknowledged ``event_id``: its turn is over."""
        self.acks += 1
        done = self._future(event_id)
        if not done.done():
            done.set_result(time.perf_counter())

    def watch(self, client: PlatformClient) -> None:
        """Wrap the buddy client's ``ack`` (same process): it runs after the turn was committed."""
        original = client.ack

        async def ack(event_id: str) -> None:
            await original(event_id)
            self.acked(event_id)

        client.ack = ack  # type: ignore[method-assign]

    async def conversations(self, count: int) -> tuple[list[str], list[float]]:
        """``count`` fresh private conversations with the buddy, and how long each took."""
        ids: list[str] = []
        took: list[float] = []
        for _ in range(count):
            t0 = time.perf_counter()
            info = await self.platform.conversation(f"{IDENTITY}-dev")
            took.append(time.perf_counter() - t0)
            ids.append(str(info["id"]))
        return ids, took

    async def _say(self, cid: str) -> str:
        """The user writes the message; its event id.

        Under load uvicorn may close a kept-alive connection just as a request goes out on it
        (httpx raises ``ReadError``); the message may or may not be stored then, so the
        platform's events are looked up before it is written again (each conversation gets
        exactly one message).
        """
        async with self._slots:
            return await self._post_message(cid)

    async def _post_message(self, cid: str) -> str:
        for _ in range(5):
            try:
                event_id = await self._post(cid)
                self._sent.add(event_id)
                return event_id
            except (httpx.ReadError, httpx.RemoteProtocolError):
                self.resent += 1
                listed = await self.http.get("/dev/events", params={"identity": f"{IDENTITY}-dev"})
                listed.raise_for_status()
                for event in listed.json():  # stored after all: the one not seen before
                    if event["conversation_id"] == cid and event["id"] not in self._sent:
                        self._sent.add(event["id"])
                        return str(event["id"])
        raise httpx.ReadError(f"could not send the message of {cid}")

    async def _post(self, cid: str) -> str:
        path = f"/dev/conversations/{cid}/messages"
        if self._lean is None:
            sent = await self.http.post(path, json={"text": p.USER_MESSAGE})
            sent.raise_for_status()
            return str(sent.json()["event_id"])
        headers = {**self.platform.admin, "Content-Type": "application/json"}
        body = json.dumps({"text": p.USER_MESSAGE}).encode()
        answer = await self._lean.request("POST", self.platform.url + path, headers, body)
        if answer.status_code >= 400:
            answer.response().raise_for_status()
        return str(json.loads(answer.content)["event_id"])

    async def _get(self, path: str) -> httpx.Response:
        """A GET through the same slots, repeated after the keep-alive race (see _say)."""
        async with self._slots:
            for _ in range(4):
                try:
                    return await self.http.get(path)
                except (httpx.ReadError, httpx.RemoteProtocolError):
                    self.resent += 1
            return await self.http.get(path)

    async def turn(self, cid: str) -> float:
        """One turn: the user writes; seconds until the buddy acknowledged the event."""
        t0 = time.perf_counter()
        event_id = await self._say(cid)
        ended = await self._future(event_id)
        del self._waiting[event_id]
        return ended - t0

    async def turns(self, cids: list[str], concurrent: bool, timeout: float) -> list[float]:
        """Latencies of a turn in each conversation.

        Exits (after printing a JSON line with ``failed``) when a request fails, or when no
        turn finished for ``timeout`` seconds: the buddy's own requests give up after 15 s,
        and an event it could not process stays unacknowledged until it reconnects.
        """

        async def run() -> list[float]:
            if concurrent:
                return list(await asyncio.gather(*(self.turn(c) for c in cids)))
            return [await self.turn(c) for c in cids]

        task = asyncio.ensure_future(run())
        try:
            while True:
                acks = self.acks
                done, _ = await asyncio.wait({task}, timeout=timeout)
                if done:
                    return task.result()
                if self.acks == acks:
                    task.cancel()
                    raise TimeoutError
        except (TimeoutError, httpx.HTTPError) as exc:
            events = await self.platform.events(f"{IDENTITY}-dev")
            pending = [e for e in events if e["acked_at"] is None]
            failure = (
                f"turns failed ({type(exc).__name__}: {exc or f'no turn done in {timeout:g}s'}):"
                f" {self.acks} acknowledged by the buddy,"
                f" {len(pending)} of {len(events)} events unacknowledged on the platform"
            )
            _fail("E2E-conc" if concurrent else "E2E-seq", len(cids), failure)

    async def said(self, cids: list[str]) -> dict[str, list[Any]]:
        """What the buddy said in each conversation (its messages' texts)."""
        responses = await asyncio.gather(
            *(self._get(f"/dev/conversations/{c}/messages") for c in cids)
        )
        said: dict[str, list[Any]] = {}
        for cid, response in zip(cids, responses, strict=True):
            response.raise_for_status()
            said[cid] = [m["body"].get("text") for m in response.json() if m["sender"] == "buddy"]
        return said

    async def check(
        self, cids: list[str], counts: tuple[int, int] | None = None, acks: int | None = None
    ) -> None:
        """Exit unless each conversation's user saw exactly "done", and the counters agree
        (``counts``: the tool and model calls the buddy process reported; ``acks``: the
        acknowledgements it sent; by default this process's own)."""
        for cid, said in (await self.said(cids)).items():
            if said != ["done"]:
                raise SystemExit(f"conversation {cid}: the buddy said {said!r}, expected ['done']")
        turns = len(cids)
        tool, model = counts or (p.tool_calls(), COUNTERS.model_calls)
        check_counts(turns, tool, model, self.acks if acks is None else acks, self.acks)


def check_counts(turns: int, tool: int, model: int, sent: int, seen: int) -> None:
    """Exit unless the tool ran once and the model twice per turn, and every turn was
    acknowledged once (``sent`` by the buddy, ``seen`` by the driver)."""
    if sent != turns or seen != turns:
        raise SystemExit(f"{sent} acknowledgements sent, {seen} seen, expected {turns}")
    if tool != turns:
        raise SystemExit(f"tool ran {tool} times, expected {turns}")
    if model != 2 * turns:
        raise SystemExit(f"model called {model} times, expected {2 * turns}")


def _fail(workload: str, n: int, failure: str) -> NoReturn:
    print(failure, file=sys.stderr, flush=True)
    emit(
        {
            "peer": "buddy",
            "workload": workload,
            "variant": "dev-platform",
            "n": n,
            "failed": failure,
        }
    )
    os._exit(1)  # leaving the platform's context could wait on its open connections


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile of ``sorted_values`` (nearest rank)."""
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


_percentile = percentile  # the name profile_buddy.py and older scripts know


def _latencies(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "latency_ms_mean": round(statistics.fmean(ordered) * 1e3, 2),
        "latency_ms_p50": round(percentile(ordered, 0.50) * 1e3, 2),
        "latency_ms_p90": round(percentile(ordered, 0.90) * 1e3, 2),
        "latency_ms_p99": round(percentile(ordered, 0.99) * 1e3, 2),
        "latency_ms_max": round(ordered[-1] * 1e3, 2),
    }


async def _run(mode: str, n: int, warmup: int, db: str, timeout: float) -> dict[str, Any]:
    concurrent = mode == "conc"
    COUNTERS.delay = W3_MODEL_DELAY_S if concurrent else 0.0
    blueprint = p.load_blueprint()
    async with LocalPlatform(db) as platform:
        users = _Users(platform)
        token = (await platform.register(IDENTITY))["dev_token"]
        async with running_buddy(platform, blueprint, p.ScriptedModel(), token) as server:
            users.watch(server.client)
            warm, _ = await users.conversations(warmup)
            await users.turns(warm, concurrent, timeout)
            timed, creation = await users.conversations(n)
            gc.collect()
            rss_before = current_rss_mb()
            maxrss_before = peak_rss_mb()
            t0, cpu0 = time.perf_counter(), time.process_time()
            latencies = await users.turns(timed, concurrent, timeout)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            maxrss_after = peak_rss_mb()
            sessions = len(server.sessions)
        await users.check([*warm, *timed])  # after timing
        await users.http.aclose()

    grew = maxrss_after > maxrss_before
    return {
        "peer": "buddy",
        "workload": "E2E-conc" if concurrent else "E2E-seq",
        "variant": "dev-platform",
        "n": n,
        "warmup": warmup,
        "db": db,
        "model_delay_s": COUNTERS.delay,
        "wall_s": round(wall, 4),
        "turns_per_s": round(n / wall, 1),
        "us_per_turn": round(wall / n * 1e6, 1),
        # CPU of the whole process (all threads: event loop and SQLite worker) per turn; less
        # sensitive than wall time to other load on the machine.
        "cpu_ms_per_turn": round(cpu / n * 1e3, 2),
        **_latencies(latencies),
        "create_conversation_ms_median": round(statistics.median(creation) * 1e3, 2),
        "driver_resends": users.resent,
        "open_sessions_after": sessions,
        # httpcore imports sniffio on every pool operation: a failed import when it is missing.
        "sniffio_installed": importlib.util.find_spec("sniffio") is not None,
        "peak_rss_mb": round(maxrss_after, 1),
        "rss_before_mb": round(rss_before, 1),
        "rss_delta_kb_per_conv": (
            round((maxrss_after - rss_before) * 1024.0 / n, 1) if grew else None
        ),
    }


# ------------------------------------------------------------ separate processes (--split)
#
# Each child reads commands from its stdin, one a line, and answers each with one line on
# its stdout; the buddy also writes ``ack <event id>`` there whenever it acknowledged an
# event. End of stdin stops a child (so a driver that dies takes its children with it).


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def _cpu_line() -> str:
    """``cpu <user CPU s> <system CPU s> <RSS MiB> <peak RSS MiB>``: this process, all its
    threads (``getrusage``, microseconds)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return f"cpu {used.ru_utime:.6f} {used.ru_stime:.6f} {current_rss_mb():.2f} {peak_rss_mb():.2f}"


async def _commands(handle: Callable[[str, list[str]], Awaitable[str | None]]) -> None:
    """Answer the commands on stdin until ``stop`` or its end: ``cpu``, ``profile`` (start
    cProfile) and ``profile FILE`` (stop, write the stats), and the role's own."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    profile: cProfile.Profile | None = None
    while line := await reader.readline():
        command, *args = line.decode().split()
        if command == "stop":
            return
        if command == "cpu":
            _say(_cpu_line())
        elif command == "profile" and profile is None:
            # CPU time, not wall time: a process on a busy machine loses the CPU in the
            # middle of a send, which a wall clock would charge to the send.
            profile = cProfile.Profile(time.process_time)
            profile.enable()
            _say("ok")
        elif command == "profile" and profile is not None:
            profile.disable()
            profile.dump_stats(args[0])
            profile = None
            _say("ok")
        elif (answer := await handle(command, args)) is not None:
            _say(answer)


async def _platform_process(db: str, port: int) -> None:
    """The dev platform on ``port``, served by uvicorn until stopped."""
    async with LocalPlatform(db, port=port) as platform:
        await platform.http.aclose()  # this process only serves
        _say(f"ready {platform.url} {platform.admin_token}")

        async def nothing(command: str, args: list[str]) -> str:
            return f"error unknown command {command}"

        await _commands(nothing)


async def _buddy_process(url: str, token: str, delay: float, gateway: str | None) -> None:
    """The buddy, as ``buddy run`` runs it: its own client, its server, INFO logging
    (``gateway``: the gateway's URL when it is not the platform's own, as for the stub
    platform of ``capacity.py``)."""
    from buddy.platform.client import HttpPlatformClient, _websocket
    from buddy.runtime.server import Buddy, BuddyServer

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    COUNTERS.delay = delay
    if gateway is None:
        client = HttpPlatformClient(url, token)
    else:
        client = HttpPlatformClient(
            url, token, gateway=lambda _, headers: _websocket(gateway, headers)
        )
    server = BuddyServer(Buddy(p.load_blueprint(), client, p.ScriptedModel()))
    acks = 0
    original = client.ack

    async def ack(event_id: str) -> None:
        nonlocal acks
        await original(event_id)
        acks += 1
        _say(f"ack {event_id}")

    client.ack = ack  # type: ignore[method-assign]
    running = asyncio.create_task(server.run())
    ready = asyncio.create_task(client.connected.wait())
    await asyncio.wait((running, ready), return_when=asyncio.FIRST_COMPLETED)
    if running.done():
        running.result()  # raises why it could not start
    _say("ready")

    async def handle(command: str, args: list[str]) -> str:
        if command == "report":
            gc.collect()
            return "report " + json.dumps(
                {
                    "tool_calls": p.tool_calls(),
                    "model_calls": COUNTERS.model_calls,
                    "acks": acks,
                    "sessions": len(server.sessions),
                    "rss_mb": round(current_rss_mb(), 2),
                    "sniffio_installed": importlib.util.find_spec("sniffio") is not None,
                }
            )
        return f"error unknown command {command}"

    try:
        await _commands(handle)
    finally:
        await server.stop()
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await running


class Child:
    """A child process of this script (``--role``), spoken to over its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process, log: IO[bytes], role: str) -> None:
        self.process = process
        self.log = log
        self.role = role
        self._answers: asyncio.Queue[str] = asyncio.Queue()
        self.on_ack: Callable[[str], None] = lambda event_id: None
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, role: str, *args: str, script: Path = SCRIPT) -> tuple[Child, str]:
        """Start ``script --role role args``; the child and its ``ready`` line's words."""
        log = tempfile.TemporaryFile()  # noqa: SIM115  (read on failure, closed in stop)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            "--role",
            role,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            limit=64 * 1024 * 1024,  # a line may carry every latency of a run
        )
        child = cls(process, log, role)
        ready = await child.answer(60.0)
        if not ready.startswith("ready"):
            raise SystemExit(f"the {role} process did not start: {ready}\n{child.stderr()}")
        return child, ready.removeprefix("ready").strip()

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            text = line.decode().strip()
            if text.startswith("ack "):
                self.on_ack(text[4:])
            else:
                self._answers.put_nowait(text)
        self._answers.put_nowait("exited")

    async def answer(self, timeout: float = 60.0) -> str:
        return await asyncio.wait_for(self._answers.get(), timeout)

    async def ask(self, command: str, timeout: float = 60.0) -> str:
        """Send ``command``; the child's answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\n".encode())
        await self.process.stdin.drain()
        return await self.answer(timeout)

    async def cpu(self) -> tuple[float, float, float, float]:
        """The child's user and system CPU seconds so far, its RSS and peak RSS (MiB)."""
        words = (await self.ask("cpu")).split()
        if words[0] != "cpu":
            raise SystemExit(f"the {self.role} process answered {words}\n{self.stderr()}")
        user, system, rss, peak = map(float, words[1:])
        return user, system, rss, peak

    async def stop(self) -> None:
        """Stop it (end of stdin); killed when it takes over 30 s."""
        assert self.process.stdin is not None
        with contextlib.suppress(ConnectionError):
            self.process.stdin.write(b"stop\n")
            await self.process.stdin.drain()
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        self.log.close()

    def stderr(self, tail: int = 4000) -> str:
        """The end of what it wrote on stderr."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-tail:]


class _RemotePlatform:
    """The dev endpoints of a platform in another process, as the driver uses them."""

    def __init__(self, url: str, admin_token: str) -> None:
        self.url = url
        self.admin = {"Authorization": f"Bearer {admin_token}"}
        self.http = httpx.AsyncClient(base_url=url, headers=self.admin, timeout=60)

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self.http.request(method, path, **kwargs)
        response.raise_for_status()
        return response.json() if response.content else None

    async def register(self, buddy_id: str) -> dict[str, str]:
        created: dict[str, str] = await self._json(
            "POST", "/dev/buddies", json={"buddy_id": buddy_id}
        )
        return created

    async def conversation(self, identity: str) -> dict[str, Any]:
        body = {"identity": identity, "kind": "private", "members": [{"name": "我"}]}
        info: dict[str, Any] = await self._json("POST", "/dev/conversations", json=body)
        return info

    async def events(self, identity: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = await self._json(
            "GET", "/dev/events", params={"identity": identity}
        )
        return events


class Parties:
    """The platform and the buddy in processes of their own, and the driver here."""

    def __init__(self, platform: Child, admin: _RemotePlatform, buddy: Child, users: _Users):
        self.platform = platform
        self.admin = admin
        self.buddy = buddy
        self.users = users

    @classmethod
    async def start(
        cls,
        db: str = ":memory:",
        model_delay: float = 0.0,
        *,
        pin: bool = False,
        lean_users: bool = False,
    ) -> Parties:
        """Start the platform and the buddy (registered, connected).

        Args:
            db: The platform's SQLite database.
            model_delay: Seconds the buddy's scripted model waits per call.
            pin: The buddy on CPU 0 alone, the platform and this process on CPU 1.
            lean_users: The users write through ``Http11Pool``, not httpx (see ``_Users``).
        """
        from buddy.testing.local import free_port

        platform, ready = await Child.start("platform", "--db", db, "--port", str(free_port()))
        url, admin_token = ready.split()
        admin = _RemotePlatform(url, admin_token)
        token = (await admin.register(IDENTITY))["dev_token"]
        buddy, _ = await Child.start(
            "buddy", "--url", url, "--token", token, "--model-delay", str(model_delay)
        )
        if pin:
            os.sched_setaffinity(buddy.process.pid, {0})
            os.sched_setaffinity(platform.process.pid, {1})
            os.sched_setaffinity(0, {1})
        users = _Users(admin, lean=lean_users)
        buddy.on_ack = users.acked
        return cls(platform, admin, buddy, users)

    async def cpu(self) -> dict[str, float]:
        """CPU seconds so far of each party (and the buddy's user and system parts), and
        the buddy's RSS (MiB)."""
        (user, system, rss, peak), (p_user, p_system, _, _) = await asyncio.gather(
            self.buddy.cpu(), self.platform.cpu()
        )
        driver = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "buddy": user + system,
            "buddy_user": user,
            "buddy_system": system,
            "platform": p_user + p_system,
            "driver": driver.ru_utime + driver.ru_stime,
            "buddy_rss_mb": rss,
            "buddy_peak_rss_mb": peak,
        }

    async def report(self) -> dict[str, Any]:
        """The buddy's counters: tool and model calls, acknowledgements, sessions, RSS."""
        answer = await self.buddy.ask("report")
        if not answer.startswith("report "):
            raise SystemExit(f"the buddy answered {answer!r}\n{self.buddy.stderr()}")
        report: dict[str, Any] = json.loads(answer.removeprefix("report "))
        return report

    async def stop(self) -> None:
        if self.users._lean is not None:
            await self.users._lean.aclose()
        await self.users.http.aclose()
        await self.admin.http.aclose()
        await self.buddy.stop()
        await self.platform.stop()


async def _run_split(
    mode: str, n: int, warmup: int, db: str, timeout: float, profile: str | None
) -> dict[str, Any]:
    concurrent = mode == "conc"
    delay = W3_MODEL_DELAY_S if concurrent else 0.0
    parties = await Parties.start(db, delay)
    users = parties.users
    warm, _ = await users.conversations(warmup)
    await users.turns(warm, concurrent, timeout)
    timed, creation = await users.conversations(n)
    gc.collect()
    stats = Path(tempfile.mkdtemp()) / f"{profile}.prof"
    profiled = {"buddy": parties.buddy, "platform": parties.platform}.get(profile or "")
    if profiled is not None:
        await profiled.ask("profile")
    before = await parties.cpu()
    t0 = time.perf_counter()
    latencies = await users.turns(timed, concurrent, timeout)
    wall = time.perf_counter() - t0
    after = await parties.cpu()
    if profiled is not None:
        await profiled.ask(f"profile {stats}")
    report = await parties.report()
    turns = warmup + n
    await users.check(
        [*warm, *timed], (report["tool_calls"], report["model_calls"]), report["acks"]
    )
    await parties.stop()
    if profile:
        print_profile(stats, n, profile)

    def per_turn(party: str) -> float:
        return round((after[party] - before[party]) / n * 1e3, 3)

    split = {party: per_turn(party) for party in ("buddy", "platform", "driver")}
    grew = after["buddy_rss_mb"] - before["buddy_rss_mb"]
    return {
        "peer": "buddy",
        "workload": "E2E-conc" if concurrent else "E2E-seq",
        "variant": "dev-platform-split" + (f"-{profile}-profiled" if profile else ""),
        "n": n,
        "warmup": warmup,
        "db": db,
        "model_delay_s": delay,
        "wall_s": round(wall, 4),
        "turns_per_s": round(n / wall, 1),
        "us_per_turn": round(wall / n * 1e6, 1),
        "cpu_ms_per_turn": round(sum(split.values()), 2),
        "buddy_cpu_ms_per_turn": split["buddy"],
        "platform_cpu_ms_per_turn": split["platform"],
        "driver_cpu_ms_per_turn": split["driver"],
        # the buddy's CPU in its own code and libraries, and in the kernel (on loopback a
        # send also runs the receiving side's TCP processing, charged to the sender)
        "buddy_user_ms_per_turn": per_turn("buddy_user"),
        "buddy_system_ms_per_turn": per_turn("buddy_system"),
        **_latencies(latencies),
        "create_conversation_ms_median": round(statistics.median(creation) * 1e3, 2),
        "driver_resends": users.resent,
        "turns_checked": turns,
        "open_sessions_after": report["sessions"],
        "sniffio_installed": report["sniffio_installed"],
        "buddy_rss_mb": round(after["buddy_rss_mb"], 1),
        "buddy_peak_rss_mb": round(after["buddy_peak_rss_mb"], 1),
        "buddy_rss_delta_kb_per_conv": round(grew * 1024.0 / n, 1),
    }


def _group(file: str, function: str) -> str:
    """The package a profiled function belongs to."""
    packages = (
        "h11", "httpx", "httpcore", "anyio", "pydantic", "websockets", "jinja2",
        "jsonschema", "asyncio", "json", "logging", "email", "urllib", "http", "uvicorn",
        "starlette", "fastapi", "sqlite3", "concurrent", "threading",
    )  # fmt: skip
    if "importlib" in file or any(n in function for n in ("_imp.", "builtins.__import__")):
        return "import system"
    if "/buddy/platform/dev/" in file or "/buddy/platform/protocol/" in file:
        return "buddy dev platform"
    if "/buddy/platform/" in file:
        return "buddy platform client, conversation object"
    if "/buddy/runtime/" in file:
        return "buddy runtime (server, turn, agent loop)"
    if "/buddy/" in file:
        return "buddy other (models, compile, extend, capabilities)"
    if "/bench/" in file:
        return "bench (scripted model, tool, ack hook)"
    for package in packages:
        if f"/{package}/" in file or file.endswith(f"/{package}.py"):
            return package
    if file == "~":
        if "poll" in function or "select" in function:
            return "C: epoll"
        if "send" in function or "recv" in function or "write" in function:
            return "C: socket and pipe I/O (system calls)"
        if "sqlite3" in function or "acquire" in function:
            return "C: SQLite, locks (the store's thread hand-offs)"
        return "C functions (socket I/O, builtins)"
    return "other stdlib"


def own_time_by_package(stats: pstats.Stats) -> Counter[str]:
    """A profile's own time (seconds) summed by the package each function belongs to."""
    rows: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    groups: Counter[str] = Counter()
    for (file, _, function), row in rows.items():
        groups[_group(file, function)] += row[2]
    return groups


def print_shares(groups: Counter[str], out: IO[str]) -> None:
    """The packages' shares of the profile (0.5% and more) as a Markdown table."""
    total = sum(groups.values())
    print("| own time in | share |\n|---|---|", file=out)
    for group, seconds in groups.most_common():
        if seconds / total >= 0.005:
            print(f"| {group} | {seconds / total:.1%} |", file=out)


def print_profile(stats_file: Path, n: int, party: str = "buddy", top: int = 25) -> None:
    """A process's profile on stderr: own time by package, then the top functions."""
    stats = pstats.Stats(str(stats_file))
    out = sys.stderr
    groups = own_time_by_package(stats)
    total = sum(groups.values())
    print(f"\n{party} process: {n} turns, {total:.3f} s profiled", file=out)
    print(f"({total / n * 1e3:.2f} ms of CPU per turn under cProfile's CPU clock)\n", file=out)
    print_shares(groups, out)
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=("seq", "conc"), default="seq")
    parser.add_argument("n", nargs="?", type=int, default=200, help="timed turns (default 200)")
    parser.add_argument("--warmup", type=int, help="warm-up turns (default 20 seq, 50 conc)")
    parser.add_argument("--db", default=":memory:", help="the platform's SQLite database")
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="give up when no turn finished for this many seconds (default 60)",
    )
    parser.add_argument(
        "--split", action="store_true", help="platform, buddy and driver in 3 processes"
    )
    parser.add_argument(
        "--profile",
        choices=("buddy", "platform"),
        help="cProfile that process over the timed turns (implies --split)",
    )
    # A child process of --split (internal).
    parser.add_argument("--role", choices=("platform", "buddy"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--model-delay", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--gateway", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "platform":
        asyncio.run(_platform_process(args.db, args.port))
        return
    if args.role == "buddy":
        asyncio.run(_buddy_process(args.url, args.token, args.model_delay, args.gateway))
        return
    warmup = args.warmup if args.warmup is not None else (50 if args.mode == "conc" else 20)
    if args.split or args.profile:
        run = _run_split(args.mode, args.n, warmup, args.db, args.timeout, args.profile)
    else:
        run = _run(args.mode, args.n, warmup, args.db, args.timeout)
    emit(asyncio.run(run))


if __name__ == "__main__":
    main()
