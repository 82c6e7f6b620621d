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
# The suite's `buddy` subprocesses run in their own process and start no warm start server
# (docs/cli.md#warm-start); tests/test_warm.py turns it on for its own.
os.environ["BUDDY_WARM"] = "0"

from buddy.testing.local import LocalPlatform

REPO = Path(__file__).resolve().parents[1]
MINIMAL = """\
name: case
model: test
persona:
  prompt: 你好，我是 {{ buddy.name }}。
"""

Write = Callable[..., Path]


# ---------------------------------------------------------------- how the suite runs


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite (``pytest`` naming no tests) runs on a pytest-xdist worker per CPU;
    tests named on the command line run in this process, as for a debugger. ``-n N`` picks
    the number of workers either way, ``-n0`` or ``-p no:xdist`` runs in this process.

    Each worker starts on a contiguous share of the tests (a module's fixtures are mostly
    set up once) and takes half of a busier one's remaining tests when it runs out
    (``--dist worksteal``). Not ``loadscope``, ``loadfile`` or ``loadgroup``: they key tests
    by node id, and schemathesis gives all of a test's operations one node id, so they
    would run one operation per test (tests/platform/test_openapi_fuzz.py)."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return  # no xdist, or a worker (which runs its tests itself)
    option = config.option
    whole_suite = config.args_source is pytest.Config.ArgsSource.TESTPATHS
    if option.numprocesses is None and not option.tx and whole_suite:
        option.numprocesses = "auto"
    if option.numprocesses != 0 and option.dist == "no":
        option.dist = "worksteal"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: a worker per CPU this process may run on (xdist would count physical
    cores only where psutil is installed); ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or not hasattr(os, "sched_getaffinity"):
        return None  # xdist's own answer
    return len(os.sched_getaffinity(0))


def pytest_configure(config: pytest.Config) -> None:
    if sys.flags.dont_write_bytecode and not hasattr(config, "workerinput"):
        _compile_buddy()


def _compile_buddy() -> None:
    """Where Python writes no bytecode (``PYTHONDONTWRITEBYTECODE`` is set), each of the
    suite's hundreds of `buddy` and `python -m buddy` processes compiled buddy's modules
    anew, a quarter of a second apiece: compile them once, into the ``__pycache__``
    folders git ignores, for those processes to read (they still write nothing)."""
    import compileall

    compileall.compile_dir(REPO / "framework" / "buddy", quiet=1)


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
