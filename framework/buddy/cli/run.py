"""``buddy run``: connect a buddy to a platform and run its conversations (production)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys

__all__ = ["EXIT_SUPERSEDED", "run"]

EXIT_SUPERSEDED = 3
log = logging.getLogger("buddy.run")


async def _serve(
    path: str,
    url: str,
    token: str,
    profile: str | None,
    model_ref: str | None,
    deadline: float,
    idle_seconds: float | None,
) -> int:
    import buddy
    from buddy.errors import ManifestError, ModelConfigError, PlatformError, SupersededError
    from buddy.models.registry import resolve
    from buddy.platform.client import HttpPlatformClient
    from buddy.runtime.server import IDLE_SECONDS, Buddy, BuddyServer

    try:
        blueprint = buddy.load(path, profile=profile, model=model_ref)
        model = resolve(blueprint.model)
    except ManifestError as exc:
        print(exc, file=sys.stderr)
        return 1
    except ModelConfigError as exc:
        print(f"buddy run: {exc}", file=sys.stderr)
        return 2
    client = HttpPlatformClient(url, token)
    try:
        compiled = Buddy(blueprint, client, model)  # reads the resources again
    except ManifestError as exc:  # a resource changed since the compile
        print(exc, file=sys.stderr)
        await client.close()
        return 1
    server = BuddyServer(
        compiled,
        shutdown_deadline=deadline,
        buddy_id=os.environ.get("BUDDY_ID") or None,
        idle_seconds=IDLE_SECONDS if idle_seconds is None else idle_seconds,
    )
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()

    def on_signal() -> None:
        log.info("SIGTERM: finishing in-flight turns (up to %.0fs) and stopping", deadline)
        stopping.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    running = asyncio.create_task(server.run())
    waiting = asyncio.create_task(stopping.wait())
    done, _ = await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if waiting in done:
        await server.stop()
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, SupersededError):
            await running
        return 0
    waiting.cancel()
    try:
        running.result()
    except SupersededError:
        return EXIT_SUPERSEDED
    except PlatformError as exc:
        log.error("buddy %s cannot run: %s", blueprint.name, exc)
        return 1
    return 0


def run(
    path: str,
    url: str | None,
    profile: str | None,
    model: str | None,
    deadline: float,
    idle_seconds: float | None = None,
) -> int:
    """Run until SIGTERM (exit 0), a supersede (exit 3) or a start failure (exit 1).

    ``BUDDY_ID``, when set, is the buddy this must run as: a token of another buddy stops
    the run before any turn (exit 1), naming both. ``idle_seconds`` shortens the 30-minute
    recycle of an idle conversation, for testing (production keeps the contract's 30).
    """
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    token = os.environ.get("BUDDY_TOKEN")
    base = url or os.environ.get("BUDDY_PLATFORM_URL")
    if not token or not base:
        print("buddy run: set BUDDY_TOKEN and BUDDY_PLATFORM_URL (or --platform)", file=sys.stderr)
        return 2
    return asyncio.run(_serve(path, base, token, profile, model, deadline, idle_seconds))
