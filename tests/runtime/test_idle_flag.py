"""`--idle-seconds` on `buddy run` and `buddy dev`: the 30-minute recycle of an idle
conversation (the platform contract's, kept in production) shortened for testing."""

from __future__ import annotations

from typing import Any

import pytest

from buddy.cli import dev as dev_module
from buddy.cli import run as run_module
from buddy.cli.main import main
from buddy.runtime.server import IDLE_SECONDS
from tests.conftest import REPO

AUNT = str(REPO / "manifests" / "aunt-tu")


def test_the_production_default_is_30_minutes() -> None:
    assert IDLE_SECONDS == 30 * 60


@pytest.mark.parametrize(("flag", "expected"), [([], None), (["--idle-seconds", "0.25"], 0.25)])
def test_buddy_run_passes_it_to_the_server(
    monkeypatch: pytest.MonkeyPatch, flag: list[str], expected: float | None
) -> None:
    seen: dict[str, Any] = {}

    async def serve(*args: Any) -> int:
        seen["idle"] = args[-1]
        return 0

    monkeypatch.setattr(run_module, "_serve", serve)
    monkeypatch.setenv("BUDDY_TOKEN", "tok")
    monkeypatch.setenv("BUDDY_PLATFORM_URL", "http://127.0.0.1:9")
    assert main(["run", AUNT, *flag]) == 0
    assert seen["idle"] == expected


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_bad_value_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", AUNT, "--idle-seconds", value])
    assert caught.value.code == 2
    assert "--idle-seconds" in capsys.readouterr().err


def test_buddy_dev_passes_it_to_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    async def serve(*args: Any) -> None:
        seen["idle"] = args[-1]

    monkeypatch.setattr(dev_module, "_serve", serve)
    assert main(["dev", AUNT, "--idle-seconds", "5"]) == 0
    assert seen["idle"] == 5.0
