"""The public API is what `__all__` says, and every name in it exists."""

from __future__ import annotations

import importlib

import pytest

import buddy

MODULES = [
    "buddy",
    "buddy.errors",
    "buddy.capabilities",
    "buddy.manifest.yamlio",
    "buddy.manifest.schema",
    "buddy.manifest.locate",
    "buddy.manifest.load",
    "buddy.compile.blueprint",
    "buddy.compile.compiler",
    "buddy.compile.persona",
    "buddy.compile.handlers",
    "buddy.compile.platform_tools",
    "buddy.compile.render",
    "buddy.models.providers",
    "buddy.cli.main",
    "buddy.cli.commands",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    for member in module.__all__:
        assert hasattr(module, member), f"{name}.{member}"


def test_package_root() -> None:
    assert callable(buddy.load)
    assert callable(buddy.check)
    assert issubclass(buddy.ManifestError, buddy.BuddyError)
    assert issubclass(buddy.PlatformError, buddy.BuddyError)
    assert issubclass(buddy.ToolError, buddy.BuddyError)
    with pytest.raises(AttributeError):
        _ = buddy.nothing_here
