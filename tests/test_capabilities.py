"""The capability registry: the built-ins and a third party's register the same way, every
part is checked at registration, and the core names no capability's tool."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import buddy
from buddy.compile.render import render_markdown, view
from buddy.errors import CapabilityError, PlatformError
from buddy.extend import (
    AUTOLOAD_OFF,
    BUILTINS,
    Capability,
    EventKind,
    PlatformTool,
    Registry,
    Section,
    StepAction,
    StepExpect,
    ToolContext,
    Uses,
    obj,
    register_module,
    registry,
)
from buddy.extend import manager as capabilities
from buddy.testing import TestModel, call
from buddy.testing.local import LocalPlatform, running_buddy
from tests.capabilities.echo.conversation import Echo
from tests.capabilities.echo.tools import ECHO_CHARS
from tests.conftest import MINIMAL, REPO, Write

pytestmark = pytest.mark.anyio

FRAMEWORK = REPO / "framework" / "buddy"


@pytest.fixture
def with_echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry of a process where the echo capability is installed (an entry point)."""
    monkeypatch.delenv(AUTOLOAD_OFF)
    monkeypatch.setattr(
        capabilities, "_entry_points", lambda: iter([("echo", "tests.capabilities.echo")])
    )
    registry.cache_clear()
    yield
    registry.cache_clear()


def test_the_builtins_register_in_order() -> None:
    names = [c.name for c in registry()]
    assert names == [
        "questions",
        "memory",
        "character",
        "lore",
        "proactive",
        "data",
        "resources",
        "widgets",
    ]
    assert list(BUILTINS) == [f"buddy.capabilities.{name}.capability" for name in names]


def test_every_capability_supplies_every_part() -> None:
    found = registry()
    for capability in found:
        assert isinstance(capability, Capability) and capability.title
        folder = FRAMEWORK / "capabilities" / capability.name
        assert (folder / "__init__.py").is_file()
        if capability.tools:  # the same role has the same file name in every folder
            assert (folder / "tools.py").is_file() and (folder / "execute.py").is_file()
        facades = {"resources", "memory", "data", "widgets", "proactive"}  # conversation.*
        assert (folder / "conversation.py").is_file() == (capability.name in facades)
        if capability.facade:
            assert capability.facade.startswith(
                f"buddy.capabilities.{capability.name}.conversation:"
            )
        if capability.platform:  # its dev-platform part, and the wire models it speaks
            assert capability.platform == f"buddy.capabilities.{capability.name}.platform"
            assert (folder / "platform.py").is_file() and (folder / "wire.py").is_file()
        if capability.startup:
            assert capability.startup.startswith(f"buddy.capabilities.{capability.name}.startup:")
        for use in capability.uses:  # declarative tool kinds: model and body by role
            assert use.model.startswith(f"buddy.capabilities.{capability.name}.manifest:")
            assert use.execute.startswith(f"buddy.capabilities.{capability.name}.execute:")
        if capability.playground:
            assert capability.playground == f"buddy.capabilities.{capability.name}.playground:panel"
        scenario = f"buddy.capabilities.{capability.name}.scenario:"
        for action in capability.actions:  # its words in scenario files, in scenario.py
            assert all(
                p.startswith(scenario) for p in (action.model, action.run, action.check or scenario)
            )
        for expect in capability.expects:
            parts = (
                expect.model,
                expect.verify,
                expect.state or scenario,
                expect.check or scenario,
            )
            assert all(p.startswith(scenario) for p in parts)
        if capability.section is not None:  # what it adds to buddy.yaml, by role
            section = capability.section
            assert section.key == capability.name
            for part, role in (
                (section.model, "manifest"),
                (section.compile, "compile"),
                (section.render, "render"),
            ):
                assert part.startswith(f"buddy.capabilities.{capability.name}.{role}:"), part
            assert (folder / "compiled.py").is_file()
        for tool in capability.tools:
            assert found.owners[tool.name] == capability.name
            module, _, function = tool.execute.partition(":")
            assert module == f"buddy.capabilities.{capability.name}.execute"
            body = getattr(__import__(module, fromlist=[function]), function)
            assert callable(body), tool.execute
            context = ToolContext()
            assert tool.describe(context) and tool.schema(context)["type"] == "object"


CORE = ("manifest", "compile", "runtime", "platform", "playground", "testing", "cli", "review")


def _core_files() -> Iterator[Path]:
    for layer in CORE:
        for path in (FRAMEWORK / layer).rglob("*"):
            if path.suffix in (".py", ".js", ".html"):
                yield path


def test_the_core_names_no_capabilitys_tool() -> None:
    # A tool name anywhere in a core module's code strings (docstrings left out) means its
    # logic or its wording is there too (the playground reads which tools carry user data
    # from the tool list it is sent); in the page's script, anywhere in its text.
    tools = registry().tool_names()
    word = re.compile(rf"\b({'|'.join(map(re.escape, tools))})\b")
    named = set()
    for path in _core_files():
        where = path.relative_to(FRAMEWORK).as_posix()
        texts = _code_strings(path) if path.suffix == ".py" else [path.read_text("utf-8")]
        named |= {f"{where}: {m.group(1)}" for text in texts for m in word.finditer(text)}
    assert named == set()  # buddy init's example tool comes from the registry


def _platform_names() -> tuple[set[str], set[str]]:
    """Every capability's table names and route paths (from its platform part)."""
    import importlib

    tables: set[str] = set()
    routes: set[str] = set()
    for capability in registry():
        if capability.platform:
            part = importlib.import_module(capability.platform)
            tables |= set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", part.TABLES))
            for router in (part.router, getattr(part, "dev_router", None)):
                routes |= {r.path for r in (router.routes if router else ())}
    return tables, routes


def _code_strings(path: Path) -> Iterator[str]:
    """The strings of a module's code, docstrings left out; an f-string with ``{}`` for
    each of its values."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    scopes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        first = node.body[0] if isinstance(node, scopes) and node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skip.add(id(first.value))
        if isinstance(node, ast.JoinedStr):
            skip |= {id(part) for part in node.values}
            yield "".join(
                str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.value


def test_the_core_names_no_capabilitys_route_or_table() -> None:
    tables, routes = _platform_names()
    sql = re.compile(rf"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+({'|'.join(sorted(tables))})\b")
    shapes = {
        route: re.compile("^" + re.sub(r"\\{[^}]*\\}", "[^/]+", re.escape(route)) + "/?$")
        for route in routes
    }
    named = set()
    for path in FRAMEWORK.rglob("*.py"):
        if "capabilities" in path.relative_to(FRAMEWORK).parts:
            continue
        where = path.relative_to(FRAMEWORK).as_posix()
        for text in _code_strings(path):
            named |= {f"{where}: table {m.group(1)}" for m in sql.finditer(text)}
            target = text.split("?")[0]
            for candidate in (target, f"/dev{target}"):  # LocalPlatform.dev("/grants")
                named |= {f"{where}: {r}" for r, shape in shapes.items() if shape.match(candidate)}
    assert named == set()


def test_a_third_party_capability_validates_renders_and_runs(with_echo: None, write: Write) -> None:
    assert registry().owners["echo_say"] == "echo"
    path = write({"buddy.yaml": MINIMAL + "tools: [echo_say, resource_list]\n"})
    blueprint = buddy.load(path)
    (echo, _) = blueprint.tools
    assert (echo.name, echo.kind, echo.label) == ("echo_say", "platform", "正在回声")
    assert echo.parameters["properties"]["text"]["maxLength"] == 40
    assert "最多 40 字" in echo.description
    assert view(blueprint)["tools"][0]["name"] == "echo_say"


async def test_the_third_party_tool_is_offered_and_runs(with_echo: None, write: Write) -> None:
    path = write({"buddy.yaml": MINIMAL + "tools: [echo_say]\n"})
    model = TestModel([call("echo_say", {"text": "你好"}), "好。"])
    outcome = await buddy.Agent(buddy.load(path), model).run("说句话")
    assert [t.name for t in model.requests[0].tools] == ["echo_say"]
    assert model.requests[1].messages[-1].content == "回声：你好"
    assert outcome.reply == "好。"


def test_without_the_capability_its_tool_is_a_located_error(write: Write) -> None:
    path = write({"buddy.yaml": MINIMAL + "tools: [echo_say]\n"})
    _, issues = buddy.check(path)
    assert [(i.line, i.code) for i in issues] == [(5, "unknown-platform-tool")]


def test_entry_points_are_skipped_while_autoload_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        capabilities, "_entry_points", lambda: iter([("echo", "tests.capabilities.echo")])
    )
    registry.cache_clear()
    try:
        assert "echo_say" not in registry().tools  # AUTOLOAD_OFF is set for the suite
    finally:
        registry.cache_clear()


def _tool(name: str = "x_do", **changes: object) -> PlatformTool:
    fields: dict[str, object] = {
        "name": name,
        "label": "正在做",
        "description": "做一件事。",
        "parameters": obj({}),
        "execute": "x.execute:do",
    }
    fields.update(changes)
    return PlatformTool(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("capability", "problem"),
    [
        ("not a capability", "CAPABILITY must be a buddy.extend.Capability, not str"),
        (Capability("X", "x"), "name 'X' must match"),
        (Capability("x", ""), "title is empty"),
        (Capability("x", "x", [_tool()]), "tools must be a tuple of PlatformTool"),  # type: ignore[arg-type]
        (Capability("x", "x", ("t",)), "tools[0] must be a PlatformTool, not str"),  # type: ignore[arg-type]
        (Capability("x", "x", (_tool("Bad"),)), "tools[0]: name 'Bad' must match"),
        (Capability("x", "x", (_tool(), _tool())), "tools[1]: tool 'x_do' appears twice"),
        (Capability("x", "x", (_tool(label=""),)), "tools[0] (x_do): label is empty"),
        (Capability("x", "x", (_tool(description=""),)), "tools[0] (x_do): description is empty"),
        (
            Capability("x", "x", (_tool(parameters=[]),)),
            "tools[0] (x_do): parameters must be a JSON Schema mapping or a function",
        ),
        (
            Capability("x", "x", (_tool(execute="x.do"),)),
            "tools[0] (x_do): execute 'x.do' must be 'module:function'",
        ),
        (Capability("x", "x", startup="x.start"), "startup 'x.start' must be 'module:function'"),
        (
            Capability("x", "x", playground="x.panel"),
            "playground 'x.panel' must be 'module:function'",
        ),
        (Capability("x", "x", section="data"), "section must be a buddy.extend.Section"),  # type: ignore[arg-type]
        (Capability("x", "x", events=("tick",)), "events[0] must be an EventKind, not str"),  # type: ignore[arg-type]
        (Capability("x", "x", uses=("x.do",)), "uses[0] must be a Uses, not str"),  # type: ignore[arg-type]
        (
            Capability("x", "x", uses=(Uses("x.do", "x:M", "x.run"),)),
            "uses[0] (x.do): execute 'x.run' must be 'module:attribute'",
        ),
        (
            Capability("x", "x", events=(EventKind("tick", "x.user", "[tick]"),)),
            "events[0] (tick): user 'x.user' must be 'module:function'",
        ),
        (
            Capability("x", "x", events=(EventKind("tick", "x:user", ""),)),
            "events[0] (tick): history is empty",
        ),
        (Capability("x", "x", platform="x:p"), "platform 'x:p' must be a dotted module name"),
        (Capability("x", "x", page="x/panel.js"), "page 'x/panel.js' must be 'package:file.js'"),
        (Capability("x", "x", page="x:panel.py"), "page 'x:panel.py' must be 'package:file.js'"),
        (Capability("x", "x", actions=("poke",)), "actions[0] must be a StepAction, not str"),  # type: ignore[arg-type]
        (
            Capability("x", "x", actions=(StepAction("user", "x:M", "Poke.", "x:run"),)),
            "actions[0] (user): key is the scenario format's own",
        ),
        (
            Capability("x", "x", actions=(StepAction("poke", "x:M", "Poke.", "x.run"),)),
            "actions[0] (poke): run 'x.run' must be 'module:attribute'",
        ),
        (
            Capability("x", "x", expects=(StepExpect("reply", "x:M", "R.", "x:verify"),)),
            "expects[0] (reply): key is the scenario format's own",
        ),
        (
            Capability("x", "x", expects=(StepExpect("pokes", "x:M", "", "x:verify"),)),
            "expects[0] (pokes): description is empty",
        ),
        (
            Capability("x", "x", expects=(StepExpect("pokes", "x:M", "P.", "x:v", state="x.s"),)),
            "expects[0] (pokes): state 'x.s' must be 'module:attribute'",
        ),
        (Capability("x", "x", attribute="x"), "attribute and facade go together"),
        (Capability("x", "x", facade="x:X"), "attribute and facade go together"),
        (Capability("x", "x", attribute="X", facade="x:X"), "attribute 'X' must match"),
        (
            Capability("x", "x", attribute="kind", facade="x:X"),
            "attribute 'kind' is the conversation's own",
        ),
        (Capability("x", "x", attribute="x", facade="x.X"), "facade 'x.X' must be 'module:Class'"),
    ],
)
def test_registration_names_the_capability_and_the_wrong_part(
    capability: object, problem: str
) -> None:
    with pytest.raises(CapabilityError) as caught:
        Registry().add(capability, "acme.x")  # type: ignore[arg-type]
    assert caught.value.where == "acme.x"
    assert problem in caught.value.problem
    assert str(caught.value).startswith("capability acme.x: ")


def test_a_name_or_a_tool_taken_is_refused() -> None:
    found = Registry()
    found.add(Capability("x", "x", (_tool(),)), "acme.x")
    with pytest.raises(CapabilityError, match="the name 'x' is registered already"):
        found.add(Capability("x", "x"), "acme.other")
    with pytest.raises(
        CapabilityError, match="tool 'x_do' is registered already by capability 'x'"
    ):
        found.add(Capability("y", "y", (_tool(),)), "acme.y")


def test_a_conversation_part_taken_is_refused() -> None:
    found = Registry()
    found.add(Capability("x", "x", attribute="notes", facade="x:X"), "acme.x")
    with pytest.raises(
        CapabilityError, match=r"conversation\.notes is registered already by capability 'x'"
    ):
        found.add(Capability("y", "y", attribute="notes", facade="y:Y"), "acme.y")


def test_a_declarative_kind_taken_is_refused() -> None:
    found = Registry()
    found.add(Capability("x", "x", uses=(Uses("notes.add", "x:M", "x:run"),)), "acme.x")
    with pytest.raises(
        CapabilityError, match=r"uses 'notes\.add' is registered already by capability 'x'"
    ):
        found.add(Capability("y", "y", uses=(Uses("notes.add", "y:M", "y:run"),)), "acme.y")


def test_a_scenario_word_taken_is_refused() -> None:
    found = Registry()
    poke = StepAction("poke", "x:M", "Poke.", "x:run")
    pokes = StepExpect("pokes", "x:M", "Pokes.", "x:verify")
    found.add(Capability("x", "x", actions=(poke,), expects=(pokes,)), "acme.x")
    with pytest.raises(CapabilityError, match="step action 'poke' is registered already by"):
        found.add(Capability("y", "y", actions=(poke,)), "acme.y")
    with pytest.raises(CapabilityError, match="expect key 'pokes' is registered already by"):
        found.add(Capability("z", "z", expects=(pokes,)), "acme.z")


def test_an_event_type_taken_is_refused() -> None:
    found = Registry()
    found.add(Capability("x", "x", events=(EventKind("tick", "x:user", "[tick]"),)), "acme.x")
    with pytest.raises(
        CapabilityError, match="event type 'tick' is registered already by capability 'x'"
    ):
        found.add(Capability("y", "y", events=(EventKind("tick", "y:user", "[t]"),)), "acme.y")


def test_a_module_without_capability_or_importable_is_refused() -> None:
    with pytest.raises(CapabilityError, match="has no CAPABILITY"):
        register_module(Registry(), "tests.capabilities.echo.tools")
    with pytest.raises(CapabilityError, match="cannot be imported"):
        register_module(Registry(), "tests.capabilities.nowhere")


def test_a_broken_entry_point_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AUTOLOAD_OFF)
    monkeypatch.setattr(
        capabilities, "_entry_points", lambda: iter([("acme", "tests.capabilities.nowhere")])
    )
    registry.cache_clear()
    try:
        with pytest.raises(CapabilityError, match=r"entry point 'acme' \(tests.capabilities"):
            registry()
    finally:
        registry.cache_clear()


# ---------------------------------------------------------------- conversation and platform parts


async def test_the_third_party_conversation_part_runs_its_platform_part_in_process(
    with_echo: None, write: Write
) -> None:
    path = write({"buddy.yaml": MINIMAL + "tools: [echo_say]\n"})
    async with buddy.Agent(buddy.load(path), TestModel()) as agent:
        echo = agent.conversation.parts["echo"]
        assert isinstance(echo, Echo)
        assert (await echo.keep("你好"))["count"] == 1
        await echo.keep("再见")
        assert await echo.list() == ["你好", "再见"]
        await echo.keep("三")
        with pytest.raises(PlatformError) as full:  # the capability's own limit, on its route
            await echo.keep("四")
        with pytest.raises(PlatformError) as long:  # its wire model's limit
            await echo.keep("长" * (ECHO_CHARS + 1))
    assert (full.value.status, long.value.status) == (409, 400)
    assert "at most 3 echoes" in full.value.reason


async def test_the_third_party_route_is_authenticated_like_every_other(with_echo: None) -> None:
    async with LocalPlatform() as platform:
        ours = await platform.register("ours")
        theirs = await platform.register("theirs")
        conv = (await platform.conversation("ours"))["id"]
        body = {"text": "你好"}

        async def post(token: str | None) -> httpx.Response:
            headers = {"X-Conversation-Id": conv}
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
            return await platform.http.post("/internal/v1/echo", headers=headers, json=body)

        refused = [await post(None), await post("wrong"), await post(theirs["token"])]
        assert [(r.status_code, r.json()["code"]) for r in refused] == [
            (401, "unauthorized"),
            (401, "unauthorized"),
            (404, "conversation_not_found"),
        ]
        assert (await post(ours["token"])).json() == {"text": "你好", "count": 1}
        schema = (await platform.http.get("/openapi.json")).json()
        assert "/internal/v1/echo" in schema["paths"]


async def test_the_third_party_event_type_becomes_a_turn(with_echo: None, write: Write) -> None:
    # The platform delivers an `echo_ping` event over the gateway: the echo capability's
    # EventKind gives the model its message, and the reply is committed and shown.
    blueprint = buddy.load(write({"buddy.yaml": MINIMAL}))
    model = TestModel(["在的。"])
    async with LocalPlatform(sockets=False) as platform:
        token = (await platform.register("case"))["dev_token"]
        conv = (await platform.conversation("case-dev"))["id"]
        async with running_buddy(platform, blueprint, model, token):
            event = await platform.emit("case-dev", "echo_ping", conv, {"text": "有人吗"})
            await platform.wait_acked("case-dev", event, timeout=10)
        (turn,) = await platform.turns(conv)
        transcript = await platform.transcript(conv)
    assert model.requests[0].messages[-1].content == "[回声敲门] 有人吗"
    assert (turn["event_id"], turn["event_type"], turn["reply"]) == (event, "echo_ping", "在的。")
    assert turn["proactive"] is False  # its kind is not unasked
    assert [m["body"]["text"] for m in transcript if m["sender"] == "buddy"] == ["在的。"]


def test_a_capability_whose_platform_part_is_wrong_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from buddy.platform.dev import parts
    from buddy.platform.dev.app import create_app

    broken = Registry()
    broken.add(Capability("acme", "acme", platform="tests.capabilities.echo.tools"), "acme")
    monkeypatch.setattr(parts, "registry", lambda: broken)
    with pytest.raises(CapabilityError) as caught:
        create_app(":memory:")
    assert str(caught.value) == (
        "capability acme (tests.capabilities.echo.tools): platform part: TABLES must be the DDL"
        " of its tables (a str)"
    )
    broken = Registry()
    broken.add(Capability("acme", "acme", platform="tests.capabilities.nowhere"), "acme")
    with pytest.raises(
        CapabilityError, match=r"platform part 'tests\.capabilities\.nowhere' cannot"
    ):
        create_app(":memory:")


# ---------------------------------------------------------------- a manifest section


def test_the_third_party_section_validates_with_located_errors(
    with_echo: None, write: Write
) -> None:
    cases = {
        "echo:\n  prefix: ''\n": [(6, 11, "length")],  # its model's limit
        "echo:\n  prefix: 说\n  times: 2\n": [(7, 10, "echo-times")],  # its compile check
        "echo:\n  prefix: 说\n  shout: true\n": [(7, 3, "unknown-key")],
    }
    for section, expected in cases.items():
        _, issues = buddy.check(write({"buddy.yaml": MINIMAL + section}))
        assert [(i.line, i.column, i.code) for i in issues] == expected, section


def test_without_the_capability_its_section_is_an_unknown_key(write: Write) -> None:
    _, issues = buddy.check(write({"buddy.yaml": MINIMAL + "echo:\n  times: 2\n"}))
    assert [(i.line, i.code) for i in issues] == [(5, "unknown-key")]


async def test_the_third_party_section_is_compiled_rendered_and_read_at_run_time(
    with_echo: None, write: Write
) -> None:
    manifest = MINIMAL + "tools: [echo_say]\necho:\n  prefix: 听：\n  times: 2\n"
    blueprint = buddy.load(write({"buddy.yaml": manifest}))
    assert view(blueprint)["echo"] == {"prefix": "听：", "times": 2}
    shown = render_markdown(blueprint)
    assert '## 回声\n\n```json\n{\n  "prefix": "听：",\n  "times": 2\n}\n```\n' in shown
    assert shown.index("## Data declaration") < shown.index("## 回声") < shown.index("## Files")
    model = TestModel([call("echo_say", {"text": "你好"}), "好。"])
    async with buddy.Agent(blueprint, model) as agent:
        await agent.run("说句话")
    assert model.requests[1].messages[-1].content == "听：你好 听：你好"


def test_a_section_key_taken_or_reserved_is_refused() -> None:
    def section(key: str) -> Section:
        return Section(key, "x:M", "x:compile", "x:render", "X")

    found = Registry()
    found.add(Capability("x", "x", section=section("notes")), "acme.x")
    with pytest.raises(
        CapabilityError, match="section 'notes' is registered already by capability 'x'"
    ):
        found.add(Capability("y", "y", section=section("notes")), "acme.y")
    problems = {
        "tools": "section: key 'tools' is the manifest's own",
        "Notes": "section: key 'Notes' must match",
    }
    for key, problem in problems.items():
        with pytest.raises(CapabilityError) as caught:
            Registry().add(Capability("z", "z", section=section(key)), "acme.z")
        assert problem in caught.value.problem
    with pytest.raises(CapabilityError, match=r"section \(n\): render 'x.render' must be"):
        Registry().add(
            Capability("z", "z", section=Section("n", "x:M", "x:c", "x.render", "N")), "z"
        )
    with pytest.raises(CapabilityError, match=r"section \(n\): heading is empty"):
        Registry().add(Capability("z", "z", section=Section("n", "x:M", "x:c", "x:r", "")), "z")


async def test_the_third_party_tool_runs_in_a_scenario(with_echo: None, write: Write) -> None:
    from buddy.testing.scenario_format import read_suite
    from buddy.testing.scenarios import run_scenario

    path = write(
        {
            "buddy.yaml": MINIMAL + "tools: [echo_say]\necho:\n  prefix: 听：\n",
            "tests/echo.yaml": """\
                scenarios:
                  - name: 回声
                    steps:
                      - user: 学我说话
                        model:
                          - call: echo_say
                            args: { text: 你好 }
                          - 学完了。
                        expect:
                          tool_called: echo_say
                          tool_result: { tool: echo_say, contains: 听：你好 }
                          reply: 学完了。
                """,
        }
    )
    blueprint = buddy.load(path)
    suite = read_suite(path.parent / "tests" / "echo.yaml", blueprint, display="echo.yaml")
    assert suite.issues == []
    result = await run_scenario(blueprint, suite, 0)
    assert result.passed, [str(f) for f in result.failures]


ECHO_SCENARIO = """\
    scenarios:
      - name: 回声
        steps:
%s
"""


def _echo_suite(write: Write, steps: str) -> tuple[buddy.Blueprint, Any]:
    from buddy.testing.scenario_format import read_suite

    path = write(
        {
            "buddy.yaml": MINIMAL + "tools: [echo_say]\n",
            "tests/echo.yaml": ECHO_SCENARIO % textwrap.indent(textwrap.dedent(steps), " " * 10),
        }
    )
    blueprint = buddy.load(path)
    return blueprint, read_suite(
        path.parent / "tests" / "echo.yaml", blueprint, display="echo.yaml"
    )


async def test_a_third_party_step_and_expectation_run(with_echo: None, write: Write) -> None:
    from buddy.testing.scenarios import run_scenario

    blueprint, suite = _echo_suite(
        write,
        """\
        - echo_keep: 一
        - echo_keep: 二
        - echo_keep: 三
          expect: { echoes: [一, 二, 三] }
        """,
    )
    assert suite.issues == []
    result = await run_scenario(blueprint, suite, 0)
    assert result.passed, [str(f) for f in result.failures]


async def test_a_third_party_expectation_reports_what_it_saw(with_echo: None, write: Write) -> None:
    from buddy.testing.scenarios import run_scenario

    blueprint, suite = _echo_suite(write, "- echo_keep: 一\n  expect: { echoes: [二] }\n")
    result = await run_scenario(blueprint, suite, 0)
    assert [(f.line, f.message) for f in result.failures] == [
        (5, 'expected the echoes ["二"], got ["一"]')
    ]


async def test_a_third_party_step_over_its_platform_limit_fails(
    with_echo: None, write: Write
) -> None:
    from buddy.testing.scenarios import run_scenario

    blueprint, suite = _echo_suite(write, "".join(f"- echo_keep: 第{n}句\n" for n in range(4)))
    result = await run_scenario(blueprint, suite, 0)
    (failure,) = result.failures
    assert failure.line == 7 and "409" in failure.message


def test_a_third_party_expectation_checks_its_bound(with_echo: None, write: Write) -> None:
    at_bound = "- expect: { echoes: [一, 二, 三] }\n"
    over = "- expect: { echoes: [一, 二, 三, 四] }\n"
    assert _echo_suite(write, at_bound)[1].issues == []
    (issue,) = _echo_suite(write, over)[1].issues
    assert (issue.line, issue.code) == (4, "echo-full")
    assert "at most 3 echoes" in issue.message


def test_without_the_capability_its_scenario_words_are_unknown(write: Write) -> None:
    from buddy.testing.scenario_format import read_suite

    path = write({"tests/echo.yaml": ECHO_SCENARIO % "          - echo_keep: 一\n"})
    (issue,) = read_suite(path, display="echo.yaml").issues
    assert issue.line == 4 and "echo_keep" in issue.message


def test_a_facade_that_is_not_a_bound_part_is_named() -> None:
    from buddy.platform.conversation import Conversation
    from buddy.runtime.agent import DetachedClient

    with pytest.raises(CapabilityError) as caught:
        Conversation(
            DetachedClient(),
            "c",
            "private",
            facades=[("echo", "tests.capabilities.echo.tools:obj")],
        )
    assert str(caught.value) == (
        "capability tests.capabilities.echo.tools:obj: facade is not a buddy.extend.turn.Bound"
    )
