"""Shared fixtures: throwaway buddy projects on disk."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import pytest

from buddy.extend import AUTOLOAD_OFF

# Capabilities installed in the environment do not join the suite's buddies (as pytest's
# PYTEST_DISABLE_PLUGIN_AUTOLOAD): a test that wants one registers it (tests/capabilities).
os.environ.setdefault(AUTOLOAD_OFF, "1")

from buddy.testing.local import LocalPlatform

REPO = Path(__file__).resolve().parents[1]
MINIMAL = """\
name: case
model: test
persona:
  prompt: 你好，我是 {{ buddy.name }}。
"""

Write = Callable[..., Path]


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the runtime and the platform are asyncio code)."""
    return "asyncio"


@pytest.fixture
async def platform() -> AsyncIterator[LocalPlatform]:
    """The dev platform on loopback, in this process."""
    async with LocalPlatform() as local:
        yield local


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project root (the `pyproject.toml` marks where search paths stop)."""
    (tmp_path / "pyproject.toml").write_text("")
    return tmp_path


@pytest.fixture
def write(project: Path) -> Write:
    """Write files into the project; returns the path of the first one written.

    Usage: ``write({"buddy.yaml": "...", "plugins/x.py": "..."})``; text is dedented.
    """

    def _write(files: dict[str, str]) -> Path:
        first: Path | None = None
        for name, text in files.items():
            path = project / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
            first = first or path
        assert first is not None
        return first

    return _write


_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "platform", "p", None}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real model or the internet: only loopback resolves."""
    import socket

    real = socket.getaddrinfo

    def guarded(host: object, *args: object, **kwargs: object) -> object:
        if host not in _LOCAL_HOSTS and not str(host).startswith("127."):
            raise OSError(f"tests may not reach the network (asked for {host!r})")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


async def grant_data(
    platform: LocalPlatform,
    identity: str,
    member: str,
    dataset: str,
    items: list[dict[str, object]],
) -> None:
    """A member grants ``identity`` a dataset and has these items in it (the world's part
    of a data turn)."""
    grant = {"identity": identity, "member_id": member, "dataset": dataset, "granted": True}
    await platform.dev("PUT", "/grants", json=grant)
    await platform.dev(
        "PUT", "/data", json={"member_id": member, "dataset": dataset, "items": items}
    )


def normalised(lines: Iterable[str], volatile: Iterable[tuple[re.Pattern[str], str]]) -> list[str]:
    """``lines`` with what differs between two runs (times, ports, ids) replaced, for
    comparing a command's output with what a doc shows."""
    rules = list(volatile)
    out = []
    for line in lines:
        normal = line
        for pattern, replacement in rules:
            normal = pattern.sub(replacement, normal)
        out.append(normal)
    return out


def venv_environment(**extra: str) -> dict[str, str]:
    """This environment with the venv's `buddy` first on ``PATH``, for the docs' shell
    commands run as a reader runs them."""
    bin_dir = Path(sys.executable).parent
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **extra}
