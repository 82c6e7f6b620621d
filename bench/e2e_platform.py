"""The W2/W3 turn end to end through the dev platform, over real sockets.

Everything runs in this process and on one event loop, as ``buddy chat`` and the tests
run it: the dev platform (``buddy.testing.local.LocalPlatform``: FastAPI under uvicorn on
a loopback port, SQLite on its worker thread), the buddy (``running_buddy``: the
``BuddyServer`` with its websocket gateway connection and httpx client) and the driver
that acts as the users (the platform's dev endpoints over an httpx client of its own, like
``LocalPlatform.say`` but with 16 connections and no time limit on waiting for one).

One turn: a user writes "What is 1 + 2?" into a fresh private conversation
(``POST /dev/conversations/{id}/messages``); the platform stores the event and sends it
over the gateway; the buddy builds the conversation (info, summary, turns: 3 HTTP calls),
runs the agent loop (the scripted model of ``buddy_peer``: add(1, 2), then "done"),
commits the turn (``POST /internal/v1/conversation/turns``) and acknowledges the event on the
websocket. A turn's latency runs from the driver's POST to the buddy's acknowledgement
(the bench wraps the client's ``ack`` to see it; the platform marks it acked just after).
The conversations are created before the clock starts (their creation is timed and
reported separately): in the platform they are the users' chats, not part of the turn.

Modes (one per process, so sessions and the database do not carry over):

* ``seq`` (default N=200): warm-up turns, then N turns one after another (delay 0).
* ``conc`` (default C=200): W3-style; the model sleeps 0.05 s per call, a warm-up of 50
  concurrent conversations, then C conversations at once in one ``asyncio.gather``.

After timing it checks that every conversation shows exactly the buddy reply "done" to
its user, 1 tool call and 2 model calls per turn, and one acknowledgement per turn.

usage: python bench/e2e_platform.py [seq|conc] [N] [--warmup W] [--db PATH] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import os
import statistics
import sys
import time
from typing import Any

import buddy_peer as p
import httpx
from _harness import COUNTERS, W3_MODEL_DELAY_S, current_rss_mb, emit, peak_rss_mb

from buddy.platform.api import PlatformClient
from buddy.testing.local import LocalPlatform, running_buddy

# The users' side, like the buddy client's default: httpcore's pool costs CPU quadratic in
# its connections (see HttpPlatformClient), which no real user's client pays.
DRIVER_CONNECTIONS = 16
IDENTITY = "bench-agent"  # the manifest's name; its dev token acts as bench-agent-dev


class _Users:
    """The driver: acts as the users through the platform's dev endpoints, and sees each
    turn end when the buddy acknowledges its event."""

    def __init__(self, platform: LocalPlatform) -> None:
        self.platform = platform
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

    def watch(self, client: PlatformClient) -> None:
        """Wrap the buddy client's ``ack``: it runs after the turn was committed."""
        original = client.ack

        async def ack(event_id: str) -> None:
            await original(event_id)
            self.acks += 1
            done = self._future(event_id)
            if not done.done():
                done.set_result(time.perf_counter())

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
                sent = await self.http.post(
                    f"/dev/conversations/{cid}/messages", json={"text": p.USER_MESSAGE}
                )
                sent.raise_for_status()
                return str(sent.json()["event_id"])
            except (httpx.ReadError, httpx.RemoteProtocolError):
                self.resent += 1
                listed = await self.http.get("/dev/events", params={"identity": f"{IDENTITY}-dev"})
                listed.raise_for_status()
                for event in listed.json():
                    if event["conversation_id"] == cid:
                        return str(event["id"])
        raise httpx.ReadError(f"could not send the message of {cid}")

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
        return await self._future(event_id) - t0

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
            print(failure, file=sys.stderr, flush=True)
            workload = "E2E-conc" if concurrent else "E2E-seq"
            emit(
                {
                    "peer": "buddy",
                    "workload": workload,
                    "variant": "dev-platform",
                    "n": len(cids),
                    "failed": failure,
                }
            )
            os._exit(1)  # leaving the platform's context could wait on its open connections

    async def check(self, cids: list[str]) -> None:
        """Exit unless each conversation's user saw exactly "done", and the counters agree."""
        responses = await asyncio.gather(
            *(self._get(f"/dev/conversations/{c}/messages") for c in cids)
        )
        for cid, response in zip(cids, responses, strict=True):
            response.raise_for_status()
            said = [m["body"].get("text") for m in response.json() if m["sender"] == "buddy"]
            if said != ["done"]:
                raise SystemExit(f"conversation {cid}: the buddy said {said!r}, expected ['done']")
        turns = len(cids)
        if self.acks != turns:
            raise SystemExit(f"{self.acks} acknowledgements, expected {turns}")
        if (calls := p.tool_calls()) != turns:
            raise SystemExit(f"tool ran {calls} times, expected {turns}")
        if COUNTERS.model_calls != 2 * turns:
            raise SystemExit(f"model called {COUNTERS.model_calls} times, expected {2 * turns}")


def _percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


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

    ordered = sorted(latencies)
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
        "latency_ms_mean": round(statistics.fmean(ordered) * 1e3, 2),
        "latency_ms_p50": round(_percentile(ordered, 0.50) * 1e3, 2),
        "latency_ms_p90": round(_percentile(ordered, 0.90) * 1e3, 2),
        "latency_ms_p99": round(_percentile(ordered, 0.99) * 1e3, 2),
        "latency_ms_max": round(ordered[-1] * 1e3, 2),
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
    args = parser.parse_args()
    warmup = args.warmup if args.warmup is not None else (50 if args.mode == "conc" else 20)
    emit(asyncio.run(_run(args.mode, args.n, warmup, args.db, args.timeout)))


if __name__ == "__main__":
    main()
