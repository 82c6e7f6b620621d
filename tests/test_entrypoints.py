"""Entry points read without importlib.metadata: the same list, in the same order, as
:func:`importlib.metadata.entry_points` gives."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from buddy.extend import entrypoints

GROUPS = ["buddy.capabilities", "buddy.personas", "buddy.plugins", "console_scripts", "pytest11"]


def _listed(group: str) -> list[tuple[str, str]]:
    return [(e.name, e.value) for e in importlib.metadata.entry_points(group=group)]


def _dist(site: Path, folder: str, text: str | None) -> None:
    info = site / folder
    info.mkdir(parents=True)
    name = folder.partition("-")[0].partition(".")[0]
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if text is not None:
        (info / "entry_points.txt").write_text(text)


@pytest.mark.parametrize("group", GROUPS)
def test_the_installed_entry_points(group: str) -> None:
    assert entrypoints._read(group) == _listed(group)


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "acme_buddy-1.0.dist-info", "[buddy.plugins]\nacme = acme_tools\n")
    _dist(
        first,
        "Two.Words-2.0.dist-info",
        "# a comment\n[buddy.plugins]\n  two =  two.tools:run  \n\n[other]\nx = y\n",
    )
    _dist(first, "legacy-0.1.egg-info", "[buddy.personas]\nold = old_pack.templates\n")
    _dist(first, "plain-1.0.dist-info", None)
    # The same distributions again, later on the path: the first ones win.
    _dist(second, "Acme.Buddy-9.0.dist-info", "[buddy.plugins]\nacme = shadowed\n")
    _dist(second, "two_words-1.0.dist-info", "[buddy.plugins]\ntwo = shadowed\n")
    _dist(second, "third-1.0.dist-info", "[buddy.plugins]\nthird = third\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    return first, second


@pytest.mark.parametrize("group", ["buddy.plugins", "buddy.personas", "other"])
def test_as_importlib_metadata_reads_them(sites: tuple[Path, Path], group: str) -> None:
    found = entrypoints.entry_points(group)
    assert found == _listed(group)
    assert ("acme", "shadowed") not in found


def test_anything_else_is_left_to_importlib_metadata(
    sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    archive = tmp_path / "packed.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip file on the path
    monkeypatch.setattr(sys, "path", [str(archive), *sys.path])
    with pytest.raises(entrypoints._Unusual):
        entrypoints._read("buddy.plugins")
    assert entrypoints.entry_points("buddy.plugins") == _listed("buddy.plugins")


def test_a_broken_file_is_left_to_importlib_metadata(
    sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = sites
    (first / "plain-1.0.dist-info" / "entry_points.txt").write_text("[buddy.plugins]\nno equals\n")
    with pytest.raises(entrypoints._Unusual):
        entrypoints._read("buddy.plugins")
