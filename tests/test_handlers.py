"""Handler references resolve inside the project's plugins/ or buddy.plugins entry points,
by reading source — plugin code never runs during validation."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import buddy
from buddy.compile import handlers
from buddy.compile.handlers import HandlerProblem, resolve_handler
from tests.conftest import MINIMAL, Write

TOOL = (
    MINIMAL
    + """\
tools:
  - name: t
    description: d
    parameters: {type: object}
    handler: "{ref}"
"""
)


def _codes(path: Path) -> list[str]:
    _, issues = buddy.check(path)
    return [i.code for i in issues]


@pytest.mark.parametrize(
    ("source", "ok"),
    [
        ("def t(conversation, params): ...", True),
        ("async def t(conversation, params): ...", True),
        ("def t(conversation, params, extra=1): ...", True),
        ("def t(*args): ...", True),
        ("def t(conversation, *rest): ...", True),
        ("def t(conversation): ...", False),
        ("def t(a, b, c): ...", False),
        ("def t(conversation, params, *, key): ...", False),
        ("t = make()", True),
        ("from .impl import t", True),
        ("class t: ...", True),
    ],
)
def test_tool_arity(write: Write, source: str, ok: bool) -> None:
    path = write(
        {"buddy.yaml": TOOL.replace("{ref}", "plugins.mod:t"), "plugins/mod.py": source + "\n"}
    )
    assert _codes(path) == ([] if ok else ["handler-arity"])


@pytest.mark.parametrize(
    ("kind", "source", "ok"),
    [
        ("before", "def h(call, conversation): ...", True),
        ("before", "def h(call): ...", False),
        ("after", "async def h(call, result, conversation): ...", True),
        ("after", "def h(call, conversation): ...", False),
    ],
)
def test_hook_arity(tmp_path: Path, kind: str, source: str, ok: bool) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "h.py").write_text(source)
    result = resolve_handler("plugins.h:h", kind, [tmp_path])
    assert isinstance(result, HandlerProblem) != ok


def test_resolved_reference_carries_the_file(write: Write, project: Path) -> None:
    path = write(
        {
            "bud/buddy.yaml": TOOL.replace("{ref}", "plugins.pkg.sub:t"),
            "plugins/pkg/__init__.py": "",
            "plugins/pkg/sub.py": "async def t(conversation, params): ...\n",
        }
    )
    ref = buddy.load(path).tools[0].handler
    assert ref is not None
    assert (ref.module, ref.function, ref.is_async) == ("plugins.pkg.sub", "t", True)
    assert ref.file == project / "plugins/pkg/sub.py"
    assert ref.root == project.resolve()


def test_plugins_next_to_the_manifest_come_first(write: Write, project: Path) -> None:
    path = write(
        {
            "bud/buddy.yaml": TOOL.replace("{ref}", "plugins.mod:t"),
            "bud/plugins/mod.py": "def t(conversation, params): ...\n",
            "plugins/mod.py": "def t(conversation, params): ...\n",
        }
    )
    ref = buddy.load(path).tools[0].handler
    assert ref is not None
    assert ref.root == (project / "bud").resolve()


@pytest.mark.parametrize(
    ("ref", "code"),
    [
        ("os:system", "handler-outside-plugins"),
        ("subprocess:run", "handler-outside-plugins"),
        ("buddy.compile.compiler:load", "handler-outside-plugins"),
        ("plugins.missing:t", "handler-module-missing"),
        ("plugins.mod:nope", "handler-function-missing"),
        ("plugins.mod", "handler-format"),
        ("plugins/mod.py:t", "handler-format"),
        ("plugins.mod:t()", "handler-format"),
    ],
)
def test_refused_references(write: Write, ref: str, code: str) -> None:
    path = write({"buddy.yaml": TOOL.replace("{ref}", ref), "plugins/mod.py": "def t(c, p): ...\n"})
    assert _codes(path) == [code]


def test_symlink_out_of_plugins_is_refused(write: Write, project: Path) -> None:
    outside = project.parent / "outside_mod.py"
    outside.write_text("def t(conversation, params): ...\n")
    path = write({"buddy.yaml": TOOL.replace("{ref}", "plugins.link:t"), "plugins/__init__.py": ""})
    (project / "plugins" / "link.py").symlink_to(outside)
    assert _codes(path) == ["handler-module-missing"]


def test_syntax_error_is_located_in_the_plugin(write: Write) -> None:
    path = write(
        {"buddy.yaml": TOOL.replace("{ref}", "plugins.mod:t"), "plugins/mod.py": "x = 1\ndef t(:\n"}
    )
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.code) for i in issues] == [("mod.py", 2, "plugin-syntax")]


def test_function_missing_suggests(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": TOOL.replace("{ref}", "plugins.mod:plan_meun"),
            "plugins/mod.py": "def plan_menu(c, p): ...\n",
        }
    )
    _, issues = buddy.check(path)
    assert issues[0].hint == "did you mean `plan_menu`?"


@pytest.fixture
def plugin_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    dist = site / "acme_buddy-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-buddy\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[buddy.plugins]\nacme = acme_tools\n")
    package = site / "acme_tools"
    package.mkdir()
    flag = tmp_path / "imported.flag"
    (package / "__init__.py").write_text(
        f"open({str(flag)!r}, 'w').write('x')\ndef lookup(conversation, params): ...\n"
    )
    (package / "extra.py").write_text("async def more(conversation, params): ...\n")
    monkeypatch.syspath_prepend(str(site))
    handlers._entry_point_modules.cache_clear()
    yield flag
    handlers._entry_point_modules.cache_clear()


def test_entry_point_packages(plugin_package: Path, write: Write) -> None:
    for ref, is_async in (("acme_tools:lookup", False), ("acme_tools.extra:more", True)):
        path = write({"buddy.yaml": TOOL.replace("{ref}", ref)})
        handler = buddy.load(path).tools[0].handler
        assert handler is not None
        assert (handler.is_async, handler.root) == (is_async, None)
    assert not plugin_package.exists()
    assert "acme_tools" not in sys.modules
