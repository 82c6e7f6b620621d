"""The public API is what `__all__` says, and every name in it exists."""

from __future__ import annotations

import importlib

import pytest

import buddy

MODULES = [
    "buddy",
    "buddy.errors",
    "buddy.capabilities",
    "buddy.extend",
    "buddy.extend.contract",
    "buddy.extend.manager",
    "buddy.extend.refs",
    "buddy.extend.turn",
    "buddy.capabilities.data.datasets",
    "buddy.manifest.yamlio",
    "buddy.manifest.yamlproblems",
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
    "buddy.capabilities.memory.limits",
    "buddy.capabilities.questions.limits",
    "buddy.capabilities.data.limits",
    "buddy.capabilities.widgets.limits",
    "buddy.capabilities.proactive.limits",
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
    "buddy.schemas",
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


def test_no_two_public_classes_share_a_name() -> None:
    # One name, one meaning: `Hooks`, `Proactive`, `Requirement`, `Step` and `HandlerRef`
    # each named two different things once.
    modules = [
        *MODULES,
        "buddy.capabilities.data.conversation",
        "buddy.capabilities.memory.conversation",
        "buddy.capabilities.proactive.conversation",
        "buddy.capabilities.widgets.conversation",
        "buddy.extend.turn",
        "buddy.platform.protocol.conversation",
        "buddy.capabilities.data.wire",
        "buddy.testing.scenario_format",
    ]
    seen: dict[str, tuple[object, str]] = {}
    clashes = []
    for name in modules:
        module = importlib.import_module(name)
        for member in module.__all__:
            value = getattr(module, member)
            if not isinstance(value, type) and not hasattr(value, "__metadata__"):
                continue
            first = seen.setdefault(member, (value, name))
            if first[0] is not value:
                clashes.append(f"{member}: {first[1]} and {name}")
    assert clashes == []
