"""The contract below the core (buddy.extend): what it imports, what imports the plugins,
and the check of a capability's code references when it registers."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from buddy.errors import CapabilityError
from buddy.extend import HOOKS, Registry, register_module, registry, verify
from buddy.extend.contract import references
from tests.conftest import REPO

FRAMEWORK = REPO / "framework" / "buddy"
CORE = ("manifest", "compile", "platform", "runtime", "testing", "models")


def _imports(path: Path, *, typing_too: bool = True) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every import in ``path`` (those under ``if TYPE_CHECKING:``
    too, unless ``typing_too`` is false)."""
    tree = ast.parse(path.read_bytes())
    skipped: set[int] = set()
    if not typing_too:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def test_the_core_imports_no_capability() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {module}"
        for room in CORE
        for path in sorted((FRAMEWORK / room).rglob("*.py"))
        for line, module in _imports(path)
        if module == "buddy.capabilities" or module.startswith("buddy.capabilities.")
    ]
    assert found == []


def test_the_contract_imports_only_errors_and_the_standard_library() -> None:
    found = [
        f"{path.name}:{line}: {module}"
        for path in sorted((FRAMEWORK / "extend").glob("*.py"))
        for line, module in _imports(path, typing_too=False)
        if module.partition(".")[0] not in sys.stdlib_module_names
        and module not in ("buddy.errors", "buddy.extend")
        and not module.startswith("buddy.extend.")
    ]
    assert found == []


def test_verifying_the_builtins_imports_none_of_their_parts() -> None:
    code = (
        "import sys\n"
        "from buddy.extend import registry, verify\n"
        "from buddy.extend.contract import references\n"
        "found = registry()\n"
        "before = set(sys.modules)\n"
        "problems = [p for c in found for p in verify(references(c))]\n"
        "new = set(sys.modules) - before\n"
        # finding a module imports its parent packages (a capability folder's __init__ is
        # its docstring): no module that is not a package may be imported
        "new = sorted(m for m in new if not hasattr(sys.modules[m], '__path__'))\n"
        "print(problems, new)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[] []"


def test_every_builtin_reference_implements_its_hook() -> None:
    checked = [r for capability in registry() for r in references(capability)]
    assert {hook for _, hook, _ in checked} <= set(HOOKS)
    assert len(checked) > 60  # every tool's body, section part, event kind, scenario word
    assert list(verify(iter(checked))) == []


GOOD = """
async def execute(call_id, params, conversation):
    return None

def compile_it(context):
    return None

def render_it(value, root):
    return {}

class Model:
    pass
"""


def _capability(tools_line: str, **section: str) -> str:
    parts = {"model": "acme_x.parts:Model", "compile": "acme_x.parts:compile_it"}
    parts |= {"render": "acme_x.parts:render_it"} | section
    fields = ", ".join(f"{k}={v!r}" for k, v in parts.items())
    return textwrap.dedent(
        f"""
        from buddy.extend import Capability, PlatformTool, Section, obj

        CAPABILITY = Capability(
            "acme_x",
            "测试",
            ({tools_line},),
            section=Section("acme_x", heading="X", {fields}),
        )
        """
    )


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A third-party capability package ``acme_x`` on ``sys.path`` (its parts in
    ``acme_x/parts.py``), forgotten again afterwards."""
    root = tmp_path / "site"
    (root / "acme_x").mkdir(parents=True)
    (root / "acme_x" / "parts.py").write_text(GOOD)
    monkeypatch.syspath_prepend(str(root))
    yield root / "acme_x"
    for name in [m for m in sys.modules if m == "acme_x" or m.startswith("acme_x.")]:
        del sys.modules[name]


TOOL = 'PlatformTool("x_do", "正在做", "做。", obj({{}}), {execute!r})'


@pytest.mark.parametrize(
    ("execute", "section", "problem"),
    [
        (
            "acme_x.nowhere:execute",
            {},
            "tools[0] (x_do): execute 'acme_x.nowhere:execute': module 'acme_x.nowhere' "
            "cannot be found",
        ),
        (
            "acme_x.parts:missing",
            {},
            "tools[0] (x_do): execute 'acme_x.parts:missing': module 'acme_x.parts' defines "
            "no 'missing'",
        ),
        (
            "acme_x.parts:compile_it",
            {},
            "tools[0] (x_do): execute 'acme_x.parts:compile_it': must be an async def "
            "(call_id, params, conversation)",
        ),
        (
            "acme_x.parts:execute",
            {"compile": "acme_x.parts:execute"},
            "section (acme_x): compile 'acme_x.parts:execute': must be a plain def (it is not "
            "awaited) (context)",
        ),
        (
            "acme_x.parts:execute",
            {"render": "acme_x.parts:compile_it"},
            "section (acme_x): render 'acme_x.parts:compile_it': takes (context); the hook "
            "calls it as (value, root)",
        ),
        (
            "acme_x.parts:execute",
            {"render": "acme_x.parts:Model"},
            "section (acme_x): render 'acme_x.parts:Model': is a class, where a function "
            "(value, root) is wanted",
        ),
    ],
)
def test_a_wrong_reference_is_refused_when_the_capability_registers(
    package: Path, execute: str, section: dict[str, str], problem: str
) -> None:
    (package / "__init__.py").write_text(_capability(TOOL.format(execute=execute), **section))
    target = Registry()
    with pytest.raises(CapabilityError) as caught:
        register_module(target, "acme_x")
    assert caught.value.where == "acme_x"
    assert caught.value.problem == problem
    assert "acme_x" not in target.capabilities  # nothing half-registered
    assert "acme_x.parts" not in sys.modules  # checked from the source, not imported


def test_a_right_capability_registers_without_importing_its_parts(package: Path) -> None:
    (package / "__init__.py").write_text(_capability(TOOL.format(execute="acme_x.parts:execute")))
    target = Registry()
    register_module(target, "acme_x")
    assert list(target.capabilities) == ["acme_x"]
    assert "acme_x.parts" not in sys.modules


def test_a_reference_with_defaults_or_varargs_fits_its_hook(package: Path) -> None:
    (package / "parts.py").write_text(
        GOOD + "\ndef render_more(value, root, extra=1):\n    return {}\n"
        "\ndef render_any(*args):\n    return {}\n"
    )
    for render in ("acme_x.parts:render_more", "acme_x.parts:render_any"):
        found = list(verify(iter([("section (x): render", "Section.render", render)])))
        assert found == []


def test_a_platform_part_without_its_router_is_refused_when_it_registers(package: Path) -> None:
    (package / "platform.py").write_text('TABLES = ""\n')
    text = _capability(TOOL.format(execute="acme_x.parts:execute"))
    text = text.replace("    section=", '    platform="acme_x.platform",\n    section=')
    (package / "__init__.py").write_text(text)
    with pytest.raises(CapabilityError) as caught:
        register_module(Registry(), "acme_x")
    assert caught.value.problem == (
        "platform 'acme_x.platform:router': module 'acme_x.platform' defines no 'router'"
    )
