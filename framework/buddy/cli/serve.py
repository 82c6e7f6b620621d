"""``buddy platform``: serve the dev platform with uvicorn (with read timeouts)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from buddy.platform.dev.core import Platform

__all__ = ["platform"]


def platform(db: str, host: str, port: int, admin_token: str | None) -> int:
    """Serve until interrupted; prints the URL and the admin token on stderr."""
    import uvicorn

    from buddy.platform.dev.app import create_app
    from buddy.platform.dev.serving import server_config

    def announce(state: Platform) -> None:
        print(f"buddy dev platform on http://{host}:{port} (db {db})", file=sys.stderr, flush=True)
        print(f"admin token: {state.admin_token}", file=sys.stderr, flush=True)

    app = create_app(db, admin_token=admin_token, on_ready=announce)
    # Header and body read timeouts close slow clients (buddy.platform.dev.serving).
    uvicorn.Server(server_config(app, host, port)).run()
    return 0
