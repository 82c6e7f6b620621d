"""Fixtures for the runtime: a local dev platform on loopback with the example buddies."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from buddy.testing.local import LocalPlatform


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def platform() -> AsyncIterator[LocalPlatform]:
    async with LocalPlatform() as local:
        yield local
