"""How many conversations one buddy process holds with a slow model: the machine-sizing figure.

The turn is the workload's (the user writes "What is 1 + 2?", the model calls
``add(1, 2)``, then answers "done"), with a scripted model that takes ``--model-delay``
seconds (1 s) to answer each of its 2 calls: **the model's time is 2 s per turn**, and a
step holds when the turn's p99 latency is at most twice that (4 s). The buddy runs in a
process of its own as ``buddy run`` runs it (``e2e_platform.py --split``'s buddy: its
client, server and INFO logging), against one of two platforms:

* ``--platform dev`` (default): the dev platform in another process, and this process as
  the users, writing through the platform's dev endpoints — the whole path, every reply
  checked in the platform's store. On one machine the dev platform (FastAPI) costs about
  three times the buddy's CPU per turn, so it saturates first.
* ``--platform stub``: a stand-in for the platform, in one process with its users, that
  answers the buddy's requests from memory (the conversation, no summary, no stored
  turns, the commit) over the same HTTP and websocket protocol, and sends each user's
  message as a gateway event itself: a fraction of the buddy's CPU per turn, so the
  buddy is what saturates. Its gateway listens on a port of its own, which the buddy is
  given (``HttpPlatformClient``'s ``gateway``) — the only change to the buddy's setup.

Each step starts the processes afresh with N conversations, each a user who writes, waits
for the reply, thinks ``--think`` seconds on average (5 s; each pause drawn uniformly from
half to one and a half times that) and writes again; their first messages are spread over
one cycle (think + model time). After a warm-up of one cycle plus the model's
time (every conversation built and in its rhythm) it measures for ``--window`` seconds
(30 s): the turns that started in the window (p50/p99/max latency, from the user's message
to the buddy's acknowledgement), turns finished per second, each process's CPU as a share
of one core, what the whole machine was busy with (other processes included) and the
buddy's RSS, whose growth over its RSS before the first conversation, divided by N, is
the memory a conversation holds. Then the users stop writing, the turns in flight finish,
and the checks run: every turn was acknowledged once, every reply was "done" (each
conversation's messages on the dev platform, each commit on the stub), the model ran twice
and the tool once per turn. The steps go up until one exceeds the bound (``--all`` runs
them all); the capacity is the largest step within it.

``--pin`` puts the buddy alone on CPU 0 and the other processes on CPU 1 (Linux).

usage: python bench/capacity.py [--platform dev|stub] [--steps 100,250,500,1000,2000,4000]
       [--think 5] [--model-delay 1.0] [--window 30] [--all] [--pin] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import buddy_peer as p
from _harness import emit, machine_cpu_s
from e2e_platform import IDENTITY, Child, Parties, _commands, _say, check_counts, percentile

MODEL_CALLS = 2  # per turn: add(1, 2), then "done"
SCRIPT = Path(__file__).resolve()


class _Load:
    """The users of ``cids``: each writes (``turn``: the seconds until the buddy
    acknowledged), waits for the reply, thinks, and writes again."""

    def __init__(
        self,
        turn: Callable[[str], Awaitable[float]],
        cids: list[str],
        think: float,
        cycle: float,
    ) -> None:
        self.turn = turn
        self.think = think
        self.started: list[tuple[float, float]] = []  # (start, latency) of every turn
        self.sent: Counter[str] = Counter()
        self.marks: list[float] = []  # the window's start and end
        self._stop = asyncio.Event()
        self.rng = random.Random(len(cids))
        # First messages spread over one cycle, then each pause drawn anew (uniform, half to
        # one and a half times ``think``): with one fixed pause, users slowed down together
        # stay together and write in waves.
        first = [self.rng.uniform(0, cycle) for _ in cids]
        self._tasks = [
            asyncio.create_task(self._user(c, f)) for c, f in zip(cids, first, strict=True)
        ]

    async def _user(self, cid: str, first: float) -> None:
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({stopped}, timeout=first)
            while not self._stop.is_set():
                t0 = time.perf_counter()
                self.sent[cid] += 1
                self.started.append((t0, await self.turn(cid)))
                pause = self.rng.uniform(0.5 * self.think, 1.5 * self.think)
                await asyncio.wait({stopped}, timeout=pause)
        finally:
            stopped.cancel()

    async def finish(self, drain: float) -> dict[str, Any]:
        """No more messages; the window's latencies (sorted), the turns that finished in
        it, whether the turns in flight finished within ``drain`` s, and all turns."""
        self._stop.set()
        _, pending = await asyncio.wait(self._tasks, timeout=drain)
        for task in pending:
            task.cancel()
        t0, t1 = self.marks
        if os.environ.get("CAPACITY_DUMP"):
            with open(os.environ["CAPACITY_DUMP"], "w") as out:
                json.dump({"marks": self.marks, "started": self.started}, out)
        return {
            "latencies": sorted(
                round(latency, 5) for start, latency in self.started if t0 <= start < t1
            ),
            "finished": sum(1 for start, latency in self.started if t0 <= start + latency < t1),
            "drained": not pending,
            "turns": sum(self.sent.values()),
        }


# ------------------------------------------------------------ the dev platform


class _Dev:
    """The dev platform and the buddy in processes of their own; the users here."""

    def __init__(self, parties: Parties) -> None:
        self.parties = parties
        self.cids: list[str] = []
        self.load: _Load | None = None

    @classmethod
    async def start(cls, args: argparse.Namespace) -> _Dev:
        parties = await Parties.start(model_delay=args.model_delay, pin=args.pin, lean_users=True)
        return cls(parties)

    async def cpu(self) -> dict[str, float]:
        return await self.parties.cpu()

    async def begin(self, n: int, think: float, cycle: float) -> None:
        slots = asyncio.Semaphore(16)

        async def one() -> str:
            async with slots:
                return str((await self.parties.admin.conversation(f"{IDENTITY}-dev"))["id"])

        self.cids = list(await asyncio.gather(*(one() for _ in range(n))))
        self.load = _Load(self.parties.users.turn, self.cids, think, cycle)

    async def mark(self) -> None:
        assert self.load is not None
        self.load.marks.append(time.perf_counter())

    async def finish(self, drain: float) -> dict[str, Any]:
        assert self.load is not None
        return await self.load.finish(drain)

    async def check(self, turns: int) -> None:
        """Exit unless every turn was acknowledged once, the counters agree and each
        conversation shows one "done" per message."""
        assert self.load is not None
        users = self.parties.users
        report = await self.parties.report()
        check_counts(turns, report["tool_calls"], report["model_calls"], report["acks"], users.acks)
        said = await users.said(self.cids)
        wrong = [cid for cid in self.cids if said[cid] != ["done"] * self.load.sent[cid]]
        if wrong:
            raise SystemExit(f"{len(wrong)} conversations show other replies: {said[wrong[0]]}")

    async def stop(self) -> None:
        await self.parties.stop()


# ------------------------------------------------------------ the stub platform


_JSON = b"application/json"
_REASONS = {200: b"OK", 404: b"Not Found"}


class _Stub:
    """The platform's side of the protocol for one buddy, answered from memory: what the
    buddy's start uploads, its conversations (private, one member, no summary, no stored
    turns), its commits (kept, to check them) and the gateway that sends its users'
    messages and takes its acknowledgements."""

    def __init__(self) -> None:
        self.socket: Any = None
        self.waiting: dict[str, asyncio.Future[float]] = {}
        self.replies: dict[str, Any] = {}  # event id → the reply committed
        self.sent = 0
        self.acks = 0
        self.problems: list[str] = []
        self._ids = itertools.count(1)

    async def gateway(self, socket: Any) -> None:
        hello = {"type": "hello", "identity": f"{IDENTITY}-dev", "session": "sess_stub"}
        await socket.send(json.dumps(hello))
        self.socket = socket
        async for raw in socket:
            message = json.loads(raw)
            if message.get("type") != "ack":
                self.problems.append(f"gateway message {message.get('type')!r}")
                continue
            waiting = self.waiting.pop(message["event_id"], None)
            if waiting is None:
                self.problems.append(f"ack of {message['event_id']} again or unknown")
                continue
            self.acks += 1
            waiting.set_result(time.perf_counter())

    async def turn(self, cid: str) -> float:
        """A user of ``cid`` writes; seconds until the buddy acknowledged the event."""
        event_id = f"evt_{next(self._ids)}"
        done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[event_id] = done
        event = {
            "id": event_id,
            "type": "message",
            "conversation_id": cid,
            "created_at": time.time(),
            "payload": {
                "message_id": f"msg_{event_id}",
                "kind": "private",
                "sender": {"member_id": "m_1", "name": "我"},
                "text": p.USER_MESSAGE,
            },
            "revisions": {"memory": 0},
        }
        t0 = time.perf_counter()
        await self.socket.send(json.dumps({"type": "event", "event": event}))
        self.sent += 1
        return await done - t0

    def answer(self, method: str, path: str, cid: str | None, body: bytes) -> tuple[int, Any]:
        route = (method, path.removeprefix("/internal/v1/"))
        if route == ("PUT", "data-access/declaration"):
            return 200, {"requirements": []}
        if route == ("PUT", "widget-types"):
            return 200, {"types": []}
        if route == ("GET", "conversation"):
            return 200, {
                "id": cid,
                "kind": "private",
                "members": [{"member_id": "m_1", "name": "我"}],
            }
        if route == ("GET", "conversation/summary"):
            return 404, {"status": 404, "code": "summary_not_found", "reason": "no summary"}
        if route == ("GET", "conversation/turns"):
            return 200, []
        if route == ("POST", "conversation/turns"):
            turn = json.loads(body)
            if turn["event_id"] in self.replies:
                self.problems.append(f"{turn['event_id']} committed twice")
            self.replies[turn["event_id"]] = turn["reply"]
            return 200, {"status": "committed", "reason": "", "message_ids": ["msg_r"]}
        self.problems.append(f"{method} {path}")
        return 404, {"status": 404, "code": "not_found", "reason": f"{method} {path}"}


class _StubHttp(asyncio.Protocol):
    """The stub's HTTP/1.1 side: requests framed by ``Content-Length``, kept alive."""

    def __init__(self, stub: _Stub) -> None:
        self.stub = stub
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            lines = bytes(self.buffer[:end]).split(b"\r\n")
            method, target, _ = lines[0].split(b" ", 2)
            length, cid = 0, None
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
                elif name.lower() == b"x-conversation-id":
                    cid = value.strip().decode()
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            path = target.split(b"?", 1)[0].decode()
            status, answer = self.stub.answer(method.decode(), path, cid, body)
            content = json.dumps(answer).encode()
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s"
                % (status, _REASONS[status], _JSON, len(content), content)
            )


async def _stub_process() -> None:
    """The stub platform and its users, spoken to over stdin and stdout like the children
    of ``e2e_platform.py``: ``begin N THINK CYCLE``, ``mark`` (twice: the window),
    ``finish DRAIN`` and ``report``."""
    import websockets

    loop = asyncio.get_running_loop()
    stub = _Stub()
    http = await loop.create_server(lambda: _StubHttp(stub), "127.0.0.1", 0)
    gateway = await websockets.serve(stub.gateway, "127.0.0.1", 0, max_size=8 * 1024 * 1024)
    http_port = http.sockets[0].getsockname()[1]
    gateway_port = next(iter(gateway.sockets)).getsockname()[1]
    _say(f"ready http://127.0.0.1:{http_port} ws://127.0.0.1:{gateway_port}/internal/v1/gateway")
    load: _Load | None = None

    async def handle(command: str, args: list[str]) -> str:
        nonlocal load
        if command == "begin":
            n, think, cycle = int(args[0]), float(args[1]), float(args[2])
            load = _Load(stub.turn, [f"c_{i}" for i in range(n)], think, cycle)
            return "ok"
        assert load is not None
        if command == "mark":
            load.marks.append(time.perf_counter())
            return "ok"
        if command == "finish":
            return "finish " + json.dumps(await load.finish(float(args[0])))
        if command == "report":
            wrong = [r for r in stub.replies.values() if r != "done"]
            report = {
                "sent": stub.sent,
                "acks": stub.acks,
                "commits": len(stub.replies),
                "not_done": len(wrong),
                "problems": stub.problems[:10],
            }
            return "report " + json.dumps(report)
        return f"error unknown command {command}"

    await _commands(handle)
    gateway.close()
    http.close()


class _StubRun:
    """The stub platform with its users in one process, the buddy in another."""

    def __init__(self, stub: Child, buddy: Child) -> None:
        self.stub = stub
        self.buddy = buddy

    @classmethod
    async def start(cls, args: argparse.Namespace) -> _StubRun:
        stub, ready = await Child.start("stub", script=SCRIPT)
        url, gateway = ready.split()
        buddy, _ = await Child.start(
            "buddy", "--url", url, "--token", "bdt_stub", "--gateway", gateway,
            "--model-delay", str(args.model_delay),
        )  # fmt: skip
        if args.pin:
            os.sched_setaffinity(buddy.process.pid, {0})
            os.sched_setaffinity(stub.process.pid, {1})
            os.sched_setaffinity(0, {1})
        return cls(stub, buddy)

    async def cpu(self) -> dict[str, float]:
        (user, system, rss, peak), (s_user, s_system, _, _) = await asyncio.gather(
            self.buddy.cpu(), self.stub.cpu()
        )
        return {
            "buddy": user + system,
            "platform": s_user + s_system,
            "buddy_rss_mb": rss,
            "buddy_peak_rss_mb": peak,
        }

    async def begin(self, n: int, think: float, cycle: float) -> None:
        await self.stub.ask(f"begin {n} {think} {cycle}")

    async def mark(self) -> None:
        await self.stub.ask("mark")

    async def finish(self, drain: float) -> dict[str, Any]:
        answer = await self.stub.ask(f"finish {drain}", timeout=drain + 60)
        result: dict[str, Any] = json.loads(answer.removeprefix("finish "))
        return result

    async def check(self, turns: int) -> None:
        """Exit unless every event was acknowledged once and committed once with the
        reply "done", and the counters agree."""
        stub = json.loads((await self.stub.ask("report")).removeprefix("report "))
        if stub["problems"] or stub["not_done"] or not stub["sent"] == stub["commits"] == turns:
            raise SystemExit(f"the stub platform saw {stub} for {turns} turns")
        answer = await self.buddy.ask("report")
        report = json.loads(answer.removeprefix("report "))
        check_counts(
            turns, report["tool_calls"], report["model_calls"], report["acks"], stub["acks"]
        )

    async def stop(self) -> None:
        await self.buddy.stop()
        await self.stub.stop()


# ------------------------------------------------------------ the steps


async def step(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """One step: ``n`` conversations; the record of its window."""
    model_time = MODEL_CALLS * args.model_delay
    cycle = args.think + model_time
    run: _Dev | _StubRun = await (_Dev if args.platform == "dev" else _StubRun).start(args)
    gc.collect()
    base = await run.cpu()
    await run.begin(n, args.think, cycle)
    await asyncio.sleep(cycle + model_time)  # every conversation built and in its rhythm
    await run.mark()
    before, busy0, t0 = await run.cpu(), machine_cpu_s(), time.perf_counter()
    await asyncio.sleep(args.window)
    await run.mark()
    after, busy1, t1 = await run.cpu(), machine_cpu_s(), time.perf_counter()
    result = await run.finish(args.drain)
    window = t1 - t0
    latencies: list[float] = result["latencies"]
    finished: int = result["finished"]

    def share(party: str) -> float | None:  # % of one core over the window
        if party not in after:
            return None
        return round((after[party] - before[party]) / window * 100, 1)

    p99 = percentile(latencies, 0.99) if latencies else None
    record: dict[str, Any] = {
        "peer": "buddy",
        "workload": "capacity",
        "platform": args.platform,
        "conversations": n,
        "model_delay_s": args.model_delay,
        "model_s_per_turn": model_time,
        "think_s": args.think,
        "window_s": round(window, 2),
        "pinned": args.pin,
        "turns_per_s": round(finished / window, 1),
        "latency_s_p50": round(percentile(latencies, 0.50), 3) if latencies else None,
        "latency_s_p99": round(p99, 3) if p99 is not None else None,
        "latency_s_max": round(latencies[-1], 3) if latencies else None,
        "turns_timed": len(latencies),
        "buddy_cpu_pct": share("buddy"),
        "platform_cpu_pct": share("platform"),
        "driver_cpu_pct": share("driver"),
        "machine_busy_pct": round((busy1[0] - busy0[0]) / (busy1[1] - busy0[1]) * 100, 1),
        "buddy_cpu_ms_per_turn": (
            round((after["buddy"] - before["buddy"]) / finished * 1e3, 2) if finished else None
        ),
        "buddy_rss_base_mb": round(base["buddy_rss_mb"], 1),
        "buddy_rss_mb": round(after["buddy_rss_mb"], 1),
        "buddy_rss_kb_per_conversation": round(
            (after["buddy_rss_mb"] - base["buddy_rss_mb"]) * 1024 / n, 1
        ),
        "drained": result["drained"],
        "holds": result["drained"] and p99 is not None and p99 <= 2 * model_time,
    }
    if result["drained"]:  # a step that did not drain failed the bound already
        await run.check(result["turns"])
        record["checked_turns"] = result["turns"]
    await run.stop()
    return record


def _row(r: dict[str, Any]) -> str:
    users = "" if r["driver_cpu_pct"] is None else f"{r['driver_cpu_pct']}%"
    return (
        f"| {r['conversations']:,} | {r['turns_per_s']} | {r['latency_s_p50']} / "
        f"{r['latency_s_p99']} s | {r['buddy_cpu_pct']}% | {r['platform_cpu_pct']}% | "
        f"{users} | {r['machine_busy_pct']}% | {r['buddy_rss_mb']} MiB | "
        f"{r['buddy_rss_kb_per_conversation']} KiB | {'yes' if r['holds'] else 'no'} |"
    )


async def _run(args: argparse.Namespace) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for n in args.steps:
        record = await step(n, args)
        records.append(record)
        if args.json:
            emit(record)
        else:
            print(_row(record), flush=True)
        if not record["holds"] and not args.all:
            break
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", choices=("dev", "stub"), default="dev")
    parser.add_argument(
        "--steps",
        type=lambda text: [int(v) for v in text.split(",")],
        default=[100, 250, 500, 1000, 2000, 4000],
        help="conversations per step, comma-separated (default 100,250,500,1000,2000,4000)",
    )
    parser.add_argument(
        "--think", type=float, default=5.0, help="seconds between a reply and the next message (5)"
    )
    parser.add_argument(
        "--model-delay", type=float, default=1.0, help="seconds per model call (1; 2 calls a turn)"
    )
    parser.add_argument("--window", type=float, default=30.0, help="seconds measured per step (30)")
    parser.add_argument(
        "--drain", type=float, default=60.0, help="seconds the turns in flight get to finish (60)"
    )
    parser.add_argument(
        "--all", action="store_true", help="run every step, past the first that fails"
    )
    parser.add_argument(
        "--pin", action="store_true", help="the buddy alone on CPU 0, the rest on CPU 1"
    )
    parser.add_argument("--json", action="store_true", help="one JSON line per step")
    parser.add_argument("--role", choices=("stub",), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "stub":
        asyncio.run(_stub_process())
        return
    if not args.json:
        model_time = MODEL_CALLS * args.model_delay
        print(
            f"{args.platform} platform; model {args.model_delay:g} s per call, {model_time:g} s"
            f" per turn (bound: p99 <= {2 * model_time:g} s); think {args.think:g} s;"
            f" window {args.window:g} s{'; pinned' if args.pin else ''}\n",
            file=sys.stderr,
        )
        print(
            "| conversations | turns/s | p50 / p99 | buddy CPU | platform CPU (stub: + users) |"
            " users CPU |"
            " machine busy (2 cores = 100%) | buddy RSS | RSS per conversation | holds |\n"
            "|---|---|---|---|---|---|---|---|---|---|",
            flush=True,
        )
    records = asyncio.run(_run(args))
    held = [r["conversations"] for r in records if r["holds"]]
    if not args.json:
        per_turn = [r["buddy_cpu_ms_per_turn"] for r in records if r["buddy_cpu_ms_per_turn"]]
        print(
            f"\ncapacity: {max(held) if held else 'none'} conversations"
            f" (buddy CPU per turn, median of the steps: "
            f"{statistics.median(per_turn) if per_turn else '-'} ms)",
            flush=True,
        )


if __name__ == "__main__":
    main()
