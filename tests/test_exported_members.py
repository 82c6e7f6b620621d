"""The public API is what `__all__` says, and every name in it exists."""

from __future__ import annotations

import importlib

import pytest

import buddy

MODULES = [
    "buddy",
    "buddy.errors",
    "buddy.capabilities",
    "buddy.capabilities.data.datasets",
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
    "buddy.models.base",
    "buddy.models.testing",
    "buddy.models.openai",
    "buddy.models.anthropic",
    "buddy.models.resilience",
    "buddy.models.registry",
    "buddy.platform.client",
    "buddy.platform.conversation",
    "buddy.platform.limits",
    "buddy.platform.dev.app",
    "buddy.runtime.agent",
    "buddy.runtime.hooks",
    "buddy.runtime.loop",
    "buddy.runtime.server",
    "buddy.runtime.state",
    "buddy.runtime.tools",
    "buddy.testing.local",
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
