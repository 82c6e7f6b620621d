"""Security boundaries under attack: tokens on every route, identity isolation, handler
references, the template sandbox, path traversal, and size limits that name themselves.

Every test names the attack it proves is blocked. The route lists are derived from the app
itself, so a route added later without auth fails here rather than slipping through.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jinja2
import pytest
import uvicorn
import websockets
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.routing import Mount, WebSocketRoute

import buddy
from buddy.capabilities.memory.limits import MEMORY_TEXT_BYTES
from buddy.capabilities.resources.conversation import Resources
from buddy.capabilities.widgets.wire import RECORD_DATA_BYTES
from buddy.compile.persona import (
    POWER_BITS_MAX,
    RENDER_STEPS_MAX,
    VALUE_CHARS_MAX,
    make_environment,
)
from buddy.errors import Issue, ManifestError, PlatformError, ResourceNotFoundError
from buddy.platform.client import HttpPlatformClient
from buddy.platform.conversation import Conversation
from buddy.platform.dev.app import REQUEST_BODY_BYTES, create_app
from buddy.platform.limits import MESSAGE_TEXT_CHARS
from buddy.playground.app import attach
from buddy.playground.session import DevSession
from buddy.testing.local import free_port
from tests.conftest import MINIMAL, Write

ADMIN = "adm_security_suite"
BASE = "http://127.0.0.1:8700"  # a loopback name, so the playground reaches its token check

# Answered without a token, each for a reason docs/protocol.md §1 states.
PUBLIC = {
    "/openapi.json": "the protocol document itself is public",
    "/docs": "FastAPI's page showing /openapi.json; no data",
    "/docs/oauth2-redirect": "part of the /docs page; no data",
    "/redoc": "FastAPI's page showing /openapi.json; no data",
    "/": "a redirect to the playground's page",
    "/playground": "the playground's static files (HTML, JS, CSS); no data",
    "/playground/parts/{name}.js": "a capability's playground script (JS); no data",
    "/playground/api/config": "loopback only; tested below to refuse any other request",
}
MENU = {
    "type": "menu",
    "title": "菜单",
    "modules": {"dishes": {"title": "菜", "record": {"type": "object"}}},
}


# ------------------------------------------------------------------ the app and its routes


def _app(db: str) -> FastAPI:
    """The dev platform as ``buddy dev`` serves it: with the playground attached."""
    app = create_app(db, admin_token=ADMIN)
    session = DevSession([])
    session.admin_token = ADMIN
    attach(app, session)
    return app


@dataclass(frozen=True)
class Route:
    """One method of one route, with its parameters filled."""

    method: str
    template: str  # as the app declares it, e.g. /internal/v1/memory/{key}
    path: str  # with every parameter filled

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def _fill(template: str) -> str:
    return re.sub(r"\{[^}]+\}", "x1", template)


def _http_routes(app: FastAPI) -> list[Route]:
    routes: list[Route] = []
    for context in iter_route_contexts(app.routes):
        original = context.original_route
        template = context.path_format or ""
        if isinstance(original, Mount | WebSocketRoute) or context.methods is None:
            continue
        for method in sorted(context.methods - {"HEAD"}):
            routes.append(Route(method, template, _fill(template)))
    return routes


def _websocket_routes(app: FastAPI) -> list[str]:
    return [
        context.path_format or ""
        for context in iter_route_contexts(app.routes)
        if context.methods is None and not isinstance(context.original_route, Mount)
    ]


def _mounts(app: FastAPI) -> list[str]:
    return [r.path for r in app.routes if isinstance(r, Mount)]


def _guarded(app: FastAPI) -> list[Route]:
    return [r for r in _http_routes(app) if r.template not in PUBLIC]


@dataclass
class World:
    """The dev platform in-process with two buddies and a conversation of each identity."""

    http: httpx.AsyncClient
    app: FastAPI
    tokens: dict[str, str]  # identity → token: demo, demo-dev, other
    conversations: dict[str, str]  # identity → a private conversation with m_wang

    def auth(self, identity: str, conversation: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.tokens[identity]}"}
        if conversation is not None:
            headers["X-Conversation-Id"] = self.conversations[conversation]
        return headers

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {ADMIN}"}

    async def json(self, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
        response = await self.http.request(method, path, headers=headers, **kw)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json() if response.content else None


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    app = _app(str(tmp_path / "platform.db"))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http,
    ):
        admin = {"Authorization": f"Bearer {ADMIN}"}
        tokens: dict[str, str] = {}
        for buddy_id in ("demo", "other"):
            created = (
                await http.post("/dev/buddies", headers=admin, json={"buddy_id": buddy_id})
            ).json()
            tokens[buddy_id] = created["token"]
            if buddy_id == "demo":
                tokens["demo-dev"] = created["dev_token"]
        conversations: dict[str, str] = {}
        for identity in ("demo", "demo-dev", "other"):
            body = {
                "identity": identity,
                "kind": "private",
                "members": [{"name": "小王", "member_id": "m_wang"}],
            }
            response = await http.post("/dev/conversations", headers=admin, json=body)
            conversations[identity] = response.json()["id"]
        yield World(http, app, tokens, conversations)


def _refusal(response: httpx.Response, status: int, code: str) -> str | None:
    """Why ``response`` is not the JSON refusal expected, or ``None``."""
    if response.status_code != status:
        return f"answered {response.status_code}: {response.text[:120]}"
    try:
        body = response.json()
    except ValueError:
        return f"a {status} without a JSON body: {response.text[:120]}"
    if body.get("status") != status or body.get("code") != code or not body.get("reason"):
        return f"a {status} with the body {body}"
    return None


# ------------------------------------------------------------------ 1. no route without a token


async def _unauthorized(world: World, route: Route, authorization: str | None) -> str | None:
    """Why ``route`` called with ``authorization`` is not a 401 refusal, or ``None``."""
    headers = {"X-Conversation-Id": world.conversations["demo"]}
    if authorization is not None:
        headers["Authorization"] = authorization
    body: dict[str, Any] | None = {} if route.method in ("POST", "PUT") else None
    response = await world.http.request(route.method, route.path, headers=headers, json=body)
    return _refusal(response, 401, "unauthorized")


def test_the_route_list_covers_every_documented_endpoint_and_the_allow_list_is_current() -> None:
    """A route hidden from the enumeration, or a stale public entry, cannot dodge the checks."""
    app = _app(":memory:")
    declared = {(r.method, r.template) for r in _http_routes(app)}
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert documented <= declared, documented - declared
    present = {r.template for r in _http_routes(app)} | set(_mounts(app))
    assert set(PUBLIC) <= present, set(PUBLIC) - present
    # What a mounted app serves cannot be enumerated: every mount must be public on purpose.
    assert set(_mounts(app)) <= set(PUBLIC), set(_mounts(app)) - set(PUBLIC)
    assert _websocket_routes(app) == ["/internal/v1/gateway"]
    assert len(_guarded(app)) > 50  # the enumeration really found the protocol


@pytest.mark.anyio
async def test_no_route_answers_without_a_valid_token(world: World) -> None:
    """Requests with no, malformed or unknown credentials reach no handler on any route."""
    valid = world.tokens["demo"]
    credentials: dict[str, str | None] = {
        "none": None,
        "empty": "",
        "scheme only": "Bearer",
        "scheme and space": "Bearer ",
        "basic": "Basic YWRtaW46YWRtaW4=",
        "no scheme": valid,
        "unknown": "Bearer bt_not_a_token",
        "valid with a suffix": f"Bearer {valid}x",
        "admin with a suffix": f"Bearer {ADMIN} x",
        "truncated admin": f"Bearer {ADMIN[:-1]}",
    }
    failures: list[str] = []
    for route in _guarded(world.app):
        for name, value in credentials.items():
            problem = await _unauthorized(world, route, value)
            if problem:
                failures.append(f"{route} with {name} credentials {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.anyio
async def test_a_token_of_the_wrong_kind_is_refused(world: World) -> None:
    """Buddy tokens cannot act as users or the world (/dev, playground); admin cannot act as a buddy."""
    failures: list[str] = []
    for route in _guarded(world.app):
        buddy_side = route.template.startswith("/internal/")
        wrong = ["admin"] if buddy_side else ["demo", "demo-dev", "other"]
        for who in wrong:
            token = ADMIN if who == "admin" else world.tokens[who]
            problem = await _unauthorized(world, route, f"Bearer {token}")
            if problem:
                failures.append(f"{route} with the {who} token {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.anyio
async def test_the_playground_config_is_refused_off_loopback(world: World) -> None:
    """The one public endpoint that hands out the admin token does so only on loopback."""
    rebinding = await world.http.get(
        "/playground/api/config", headers={"Host": "evil.example:8700"}
    )
    assert _refusal(rebinding, 403, "loopback_only") is None
    remote = httpx.ASGITransport(app=world.app, client=("10.1.2.3", 40000))
    async with httpx.AsyncClient(transport=remote, base_url=BASE) as http:
        response = await http.get("/playground/api/config")
    assert _refusal(response, 403, "loopback_only") is None
    assert ADMIN not in rebinding.text + response.text


@dataclass
class Served:
    """The app on a real loopback socket, with demo registered."""

    url: str
    http: httpx.AsyncClient
    tokens: dict[str, str]  # demo, demo-dev

    @property
    def gateway(self) -> str:
        return self.url.replace("http://", "ws://") + "/internal/v1/gateway"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    app = _app(str(tmp_path / "served.db"))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}
        ) as http:
            created = (await http.post("/dev/buddies", json={"buddy_id": "demo"})).json()
            yield Served(url, http, {"demo": created["token"], "demo-dev": created["dev_token"]})
    finally:
        server.should_exit = True
        await task


async def _hello_or_refusal(url: str, headers: dict[str, str]) -> str:
    """``hello <identity>``, or how the connection was refused."""
    try:
        async with websockets.connect(url, additional_headers=headers, open_timeout=5) as socket:
            first = await asyncio.wait_for(socket.recv(), 5)
            return f"hello {first!s}"
    except websockets.InvalidStatus as exc:
        return f"refused {exc.response.status_code}"
    except websockets.ConnectionClosed as exc:
        return f"closed {exc.rcvd.code if exc.rcvd else None}"


@pytest.mark.anyio
async def test_the_gateway_refuses_a_connection_without_a_valid_buddy_token(
    served: Served,
) -> None:
    """Every websocket route refuses the handshake for a missing, malformed or admin token."""
    paths = _websocket_routes(_app(":memory:"))
    assert paths == ["/internal/v1/gateway"]
    credentials: dict[str, str | None] = {
        "none": None,
        "empty": "",
        "scheme only": "Bearer",
        "unknown": "Bearer bt_not_a_token",
        "admin": f"Bearer {ADMIN}",
        "basic": "Basic YWRtaW46YWRtaW4=",
        "no scheme": served.tokens["demo"],
    }
    ws = served.url.replace("http://", "ws://")
    for path in paths:
        for name, value in credentials.items():
            headers = {} if value is None else {"Authorization": value}
            # Closed before the upgrade is accepted: the server answers the handshake 403.
            assert await _hello_or_refusal(ws + path, headers) == "refused 403", (path, name)
    good = {"Authorization": f"Bearer {served.tokens['demo']}"}
    assert (await _hello_or_refusal(served.gateway, good)).startswith("hello ")


@pytest.mark.anyio
async def test_new_tokens_close_a_gateway_connection_made_with_the_old_one(served: Served) -> None:
    """A leaked token stops streaming the buddy's events as soon as the tokens are replaced."""
    old = dict(served.tokens)
    sockets = [
        await websockets.connect(
            served.gateway, additional_headers={"Authorization": f"Bearer {old[i]}"}
        )
        for i in ("demo", "demo-dev")
    ]
    try:
        for socket in sockets:
            assert '"hello"' in str(await socket.recv())
        assert (await served.http.post("/dev/buddies/demo/tokens")).status_code == 200
        for socket in sockets:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(socket.recv(), 5)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 4401
        for identity in ("demo", "demo-dev"):
            headers = {"Authorization": f"Bearer {old[identity]}"}
            assert await _hello_or_refusal(served.gateway, headers) == "refused 403"
    finally:
        for socket in sockets:
            await socket.close()


# ------------------------------------------------------------------ 2. identities are isolated


def _conversation_routes(app: FastAPI) -> list[Route]:
    """Every operation that takes X-Conversation-Id, from the OpenAPI document."""
    routes: list[Route] = []
    for template, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
            if "X-Conversation-Id" in names:
                routes.append(Route(method.upper(), template, _fill(template)))
    return routes


async def _fill_conversation(world: World, identity: str) -> dict[str, str]:
    """Memory, a widget with a record, a subscription and a pending event in one conversation."""
    headers = world.auth(identity, identity)
    await world.json("PUT", "/internal/v1/widget-types", headers, json={"types": [MENU]})
    await world.json("PUT", "/internal/v1/memory/secret", headers, json={"text": "机密"})
    widget = await world.json(
        "POST", "/internal/v1/widgets", headers, json={"type": "menu", "title": "菜单"}
    )
    await world.json(
        "PUT", f"/internal/v1/widgets/{widget['id']}/dishes/d1", headers, json={"data": {"n": 1}}
    )
    await world.json(
        "PUT",
        "/internal/v1/proactive/subscriptions/run",
        headers,
        json={"title": "t", "reason": "r", "trigger": "workout.completed"},
    )
    sent = await world.json(
        "POST",
        f"/dev/conversations/{world.conversations[identity]}/messages",
        world.admin,
        json={"text": "你好"},
    )
    return {"widget": widget["id"], "event": sent["event_id"]}


async def _snapshot(world: World, identity: str) -> list[Any]:
    headers = world.auth(identity, identity)
    return [
        await world.json("GET", path, headers)
        for path in (
            "/internal/v1/memory",
            "/internal/v1/widgets",
            "/internal/v1/proactive/subscriptions",
            "/internal/v1/conversation/turns",
        )
    ]


@pytest.mark.anyio
async def test_no_identity_reaches_another_identitys_conversation(world: World) -> None:
    """Dev token → production, production → dev, and buddy → other buddy all see 404, change nothing."""
    await _fill_conversation(world, "demo")
    await _fill_conversation(world, "demo-dev")
    before = {who: await _snapshot(world, who) for who in ("demo", "demo-dev")}
    routes = _conversation_routes(world.app)
    assert len(routes) > 20
    failures: list[str] = []
    for caller, target in [("demo-dev", "demo"), ("demo", "demo-dev"), ("other", "demo")]:
        for route in routes:
            body: dict[str, Any] | None = {} if route.method in ("POST", "PUT") else None
            response = await world.http.request(
                route.method, route.path, headers=world.auth(caller, target), json=body
            )
            problem = _refusal(response, 404, "conversation_not_found")
            if problem:
                failures.append(f"{route}: {caller} on {target}'s conversation {problem}")
    assert not failures, "\n".join(failures)
    assert {who: await _snapshot(world, who) for who in ("demo", "demo-dev")} == before


@pytest.mark.anyio
async def test_ids_of_another_identity_are_not_found_in_ones_own_conversation(world: World) -> None:
    """A dev token naming production widget or event ids in its own conversation gets 404."""
    made = await _fill_conversation(world, "demo")
    await _fill_conversation(world, "demo-dev")
    mine = world.auth("demo-dev", "demo-dev")
    widget, event = made["widget"], made["event"]
    attempts: list[tuple[str, str, dict[str, Any] | None, str]] = [
        ("GET", f"/internal/v1/widgets/{widget}", None, "widget_not_found"),
        ("GET", f"/internal/v1/widgets/{widget}/dishes", None, "widget_not_found"),
        ("PUT", f"/internal/v1/widgets/{widget}", {"title": "x"}, "widget_not_found"),
        ("DELETE", f"/internal/v1/widgets/{widget}", None, "widget_not_found"),
        ("PUT", f"/internal/v1/widgets/{widget}/dishes/d1", {"data": {}}, "widget_not_found"),
        (
            "POST",
            "/internal/v1/messages",
            {"widget_id": widget, "idempotency_key": "k"},
            "widget_not_found",
        ),
        (
            "POST",
            "/internal/v1/conversation/turns",
            {"event_id": event, "reply": "x"},
            "event_not_found",
        ),
    ]
    for method, path, body, code in attempts:
        response = await world.http.request(method, path, headers=mine, json=body)
        assert _refusal(response, 404, code) is None, (method, path, response.text)
    # The admin cannot be used to carry production widgets into the dev identity either.
    forwarded = await world.http.post(
        f"/dev/widgets/{widget}/forward",
        headers=world.admin,
        json={"conversation_id": world.conversations["demo-dev"]},
    )
    assert _refusal(forwarded, 400, "widget_forward_invalid") is None
    turns = await world.json("GET", "/internal/v1/conversation/turns", world.auth("demo", "demo"))
    assert turns == []  # the production event was not answered by the dev identity


@pytest.mark.anyio
async def test_a_production_grant_does_not_open_user_data_to_the_dev_token(world: World) -> None:
    """The same user granting production health data leaves dev and other buddies at notGranted."""
    declaration = {"requirements": [{"id": "health.sleep", "purpose": "作息建议"}]}
    for identity in ("demo", "demo-dev", "other"):
        headers = world.auth(identity)
        await world.json("PUT", "/internal/v1/data-access/declaration", headers, json=declaration)
    grant = {"identity": "demo", "member_id": "m_wang", "dataset": "health.sleep", "granted": True}
    await world.json("PUT", "/dev/grants", world.admin, json=grant)
    query = {"datasets": ["health.sleep"]}
    statuses = {}
    for identity in ("demo", "demo-dev", "other"):
        answer = await world.json(
            "POST", "/internal/v1/data-access/query", world.auth(identity, identity), json=query
        )
        statuses[identity] = [r["status"] for r in answer["results"]]
    assert statuses == {
        "demo": ["available"],
        "demo-dev": ["notGranted"],
        "other": ["notGranted"],
    }


@pytest.mark.anyio
async def test_a_one_time_result_is_not_readable_by_another_identity(world: World) -> None:
    """A production location result cannot be read through the dev token's conversation."""
    card = await world.json(
        "POST",
        "/internal/v1/data-access/requests",
        world.auth("demo", "demo"),
        json={"kind": "location", "reason": "看看附近", "idempotency_key": "loc-1"},
    )
    request_id = card["request_id"]
    await world.json(
        "POST",
        f"/dev/data-access/requests/{request_id}/answer",
        world.admin,
        json={"granted": True},
    )
    own = await world.json(
        "GET", f"/internal/v1/data-access/results/{request_id}", world.auth("demo", "demo")
    )
    assert own["status"] == "available"
    for caller in ("demo-dev", "other"):
        response = await world.http.get(
            f"/internal/v1/data-access/results/{request_id}", headers=world.auth(caller, caller)
        )
        assert _refusal(response, 404, "request_not_found") is None, caller


@pytest.mark.anyio
async def test_a_buddy_id_ending_in_dev_cannot_take_over_a_dev_identity(world: World) -> None:
    """Registering `demo-dev` would make its production token the dev identity of demo."""
    response = await world.http.post(
        "/dev/buddies", headers=world.admin, json={"buddy_id": "demo-dev"}
    )
    assert _refusal(response, 400, "invalid_request") is None
    assert "-dev" in response.json()["reason"]
    fresh = await world.http.post("/dev/buddies", headers=world.admin, json={"buddy_id": "x-dev"})
    assert fresh.status_code == 400  # also when no buddy `x` exists yet
    ok = await world.http.post("/dev/buddies", headers=world.admin, json={"buddy_id": "dev"})
    assert ok.status_code == 201


@pytest.mark.anyio
async def test_acknowledgements_from_the_dev_identity_leave_production_events_pending(
    served: Served,
) -> None:
    """A dev connection acknowledging a production event id cannot make the platform drop it."""
    event_ids = {}
    for identity in ("demo", "demo-dev"):
        body = {"identity": identity, "kind": "private", "members": [{"name": "小王"}]}
        conv = (await served.http.post("/dev/conversations", json=body)).json()
        sent = await served.http.post(
            f"/dev/conversations/{conv['id']}/messages", json={"text": "hi"}
        )
        event_ids[identity] = sent.json()["event_id"]

    async def pending(identity: str) -> list[str]:
        events = await served.http.get("/dev/events", params={"identity": identity})
        return [e["id"] for e in events.json() if e["acked_at"] is None]

    headers = {"Authorization": f"Bearer {served.tokens['demo-dev']}"}
    async with websockets.connect(served.gateway, additional_headers=headers) as socket:
        assert '"hello"' in str(await socket.recv())
        assert event_ids["demo-dev"] in str(await socket.recv())
        await socket.send(f'{{"type": "ack", "event_id": "{event_ids["demo"]}"}}')
        await socket.send(f'{{"type": "ack", "event_id": "{event_ids["demo-dev"]}"}}')
        # Acks are handled in order: once the dev one is stored, the other one was seen.
        for _ in range(500):
            if not await pending("demo-dev"):
                break
            await asyncio.sleep(0.01)
        assert await pending("demo-dev") == []
    assert await pending("demo") == [event_ids["demo"]]


# ------------------------------------------------------------------ 3. handler references
# tests/test_handlers.py refuses os:system, subprocess:run, buddy internals, a path with a
# slash and a symlinked plugin file in a tool; these are the forms and places it does not.

TOOL = (
    MINIMAL
    + 'tools:\n  - name: t\n    description: d\n    parameters: {type: object}\n    handler: "{ref}"\n'
)
HOOK = MINIMAL + 'hooks:\n  {kind}:\n    - handler: "{ref}"\n'
SOURCE = "def fn(conversation, params): ...\ndef hook(call, result, conversation=None): ...\n"


def _issues(path: Path) -> list[Issue]:
    with pytest.raises(ManifestError) as refused:
        buddy.load(path)
    return refused.value.issues


@pytest.mark.parametrize(
    ("ref", "code"),
    [
        ("../../evil.py:fn", "handler-format"),
        ("/tmp/evil.py:fn", "handler-format"),
        ("plugins/../../evil:fn", "handler-format"),
        ("plugins..evil:fn", "handler-format"),
        ("plugins.evil:fn.__globals__", "handler-format"),
        ("plugins.evil:__import__('os').system", "handler-format"),
        ("os.path:join", "handler-outside-plugins"),
        ("builtins:eval", "handler-outside-plugins"),
        ("importlib:import_module", "handler-outside-plugins"),
        ("jinja2:Template", "handler-outside-plugins"),  # installed, but not a buddy plugin
        ("pluginsx.evil:fn", "handler-outside-plugins"),  # `plugins` only as a whole name
        ("tests.conftest:project", "handler-outside-plugins"),
    ],
)
def test_a_tool_handler_outside_the_plugin_roots_is_refused_where_it_is_written(
    write: Write, ref: str, code: str
) -> None:
    """Paths, traversal and importable modules outside plugins/ never resolve as a tool body."""
    path = write({"buddy.yaml": TOOL.replace("{ref}", ref), "plugins/evil.py": SOURCE})
    (issue,) = _issues(path)
    assert (Path(issue.file).name, issue.line, issue.path, issue.code) == (
        "buddy.yaml",
        9,
        "tools[0].handler",
        code,
    )
    assert issue.column > 1 and (issue.hint or "e.g." in issue.message)


@pytest.mark.parametrize("kind", ["before_tool_call", "after_tool_call"])
@pytest.mark.parametrize("ref", ["os:system", "subprocess:run", "../evil.py:hook", "builtins:exec"])
def test_a_hook_handler_outside_the_plugin_roots_is_refused_where_it_is_written(
    write: Write, kind: str, ref: str
) -> None:
    """Hooks get the same plugin-root check as tools: no stdlib or path references."""
    manifest = HOOK.replace("{kind}", kind).replace("{ref}", ref)
    path = write({"buddy.yaml": manifest, "plugins/evil.py": SOURCE})
    (issue,) = _issues(path)
    assert (Path(issue.file).name, issue.line, issue.path) == (
        "buddy.yaml",
        7,
        f"hooks.{kind}[0].handler",
    )
    assert issue.code in ("handler-format", "handler-outside-plugins")


@pytest.mark.parametrize("link", ["plugins", "plugins/pkg"])
def test_a_plugins_folder_symlinked_out_of_the_project_is_refused(
    write: Write, project: Path, tmp_path_factory: pytest.TempPathFactory, link: str
) -> None:
    """A symlinked plugins/ (or package in it) cannot make code outside the project a handler."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "evil.py").write_text(SOURCE)
    (outside / "pkg").mkdir()
    (outside / "pkg" / "evil.py").write_text(SOURCE)
    ref = "plugins.evil:fn" if link == "plugins" else "plugins.pkg.evil:fn"
    path = write({"buddy.yaml": TOOL.replace("{ref}", ref)})
    if link == "plugins":
        (project / "plugins").symlink_to(outside)
    else:
        (project / "plugins").mkdir()
        (project / "plugins" / "pkg").symlink_to(outside / "pkg")
    (issue,) = _issues(path)
    assert (issue.path, issue.code) == ("tools[0].handler", "handler-module-missing")


# ------------------------------------------------------------------ 4. the template sandbox

PROMPT = "name: case\nmodel: test\npersona:\n  prompt: |\n    {payload}\n"


def _within(seconds: float, work: Callable[[], Any]) -> Any:
    """Run ``work`` on a thread; fail (instead of hanging the suite) when it does not stop."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("value", work()))
        except BaseException as exc:  # handed to the test thread
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: nothing stopped it"
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def _prompt_issues(write: Write, payload: str) -> list[Issue]:
    path = write({"buddy.yaml": PROMPT.replace("{payload}", payload)})
    issues: list[Issue] = _within(20, lambda: buddy.check(path)[1])
    assert issues, payload
    for issue in issues:  # located in the manifest, on the prompt's line
        assert (Path(issue.file).name, issue.line, issue.path) == (
            "buddy.yaml",
            5,
            "persona.prompt",
        ), issue
    return issues


@pytest.mark.parametrize(
    "payload",
    [
        "{{ self._TemplateReference__context }}",
        "{{ self._TemplateReference__context.environment }}",
        "{{ lipsum.__globals__ }}",
        "{{ lipsum.__globals__['os'].system('touch {canary}') }}",
        "{{ cycler.__init__.__globals__.os.system('touch {canary}') }}",
        "{{ joiner.__init__.__globals__ }}",
        "{{ namespace.__init__.__globals__ }}",
        "{{ '{0.__class__.__mro__}'.format(buddy) }}",
        "{{ '{0.__globals__}'.format(lipsum) }}",
        "{{ '{x.__class__}'.format_map({'x': buddy}) }}",
        "{{ buddy|attr('__class__') }}",
        "{{ (lipsum|attr('__globals__'))['os'] }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{% set g = lipsum.__globals__ %}{{ g.os.system('touch {canary}') }}",
        "{{ buddy.items.__self__ }}",
        "{{ now.__reduce_ex__(2) }}",
        "{{ range.__self__ }}",
    ],
)
def test_sandbox_escapes_are_refused_and_never_run(
    write: Write, project: Path, payload: str
) -> None:
    """Reaching Python internals from a persona is a located error; nothing is executed."""
    canary = project / "canary"
    issues = _prompt_issues(write, payload.replace("{canary}", str(canary)))
    assert {i.code for i in issues} <= {"template-error", "template-undefined"}, issues
    assert any(re.search(r"unsafe|is undefined|has no attribute", i.message) for i in issues), (
        issues
    )
    assert not canary.exists()


@pytest.mark.parametrize(
    ("payload", "limit"),
    [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            f"more than {RENDER_STEPS_MAX} steps",
        ),
        (
            "{% set s = 'x' * 1000 %}{% for a in s %}{% for b in s %}{% for c in s %}"
            "{% endfor %}{% endfor %}{% endfor %}",
            f"more than {RENDER_STEPS_MAX} steps",
        ),
        (
            "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
            "{{ f(60) }}",
            f"more than {RENDER_STEPS_MAX} steps",
        ),
        ("{{ 9 ** (9 ** 10) }}", f"the limit is {POWER_BITS_MAX}"),
        ("{{ 'x' * 10 ** 12 }}", f"the limit is {VALUE_CHARS_MAX}"),
        ("{{ [0] * 10 ** 12 }}", f"the limit is {VALUE_CHARS_MAX}"),
        (
            "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
            "{% endfor %}",
            f"the limit is {VALUE_CHARS_MAX}",
        ),
        (
            "{% set ns = namespace(s=[0]) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
            "{% endfor %}",
            f"the limit is {VALUE_CHARS_MAX}",
        ),
        (
            "{% for i in range(100000) %}{{ 'x' * 9999 }}{% endfor %}",
            f"over {VALUE_CHARS_MAX} characters",
        ),
        ("{{ lipsum(10 ** 9) }}", "lipsum is limited"),
    ],
)
def test_templates_that_would_exhaust_cpu_or_memory_are_stopped(
    write: Write, payload: str, limit: str
) -> None:
    """Huge loops, recursion, powers and repetition fail fast, naming the limit, in validate and at run time."""
    path = write({"buddy.yaml": PROMPT.replace("{payload}", payload)})
    # `buddy validate` in a process of its own: a C-level hang (a huge power, a huge
    # allocation) would hold the GIL, so only a timeout on another process can fail it.
    validated = subprocess.run(
        [sys.executable, "-m", "buddy", "validate", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    errors = json.loads(validated.stdout)["errors"]
    assert errors, validated.stdout
    for error in errors:
        assert (error["line"], error["path"], error["code"]) == (
            5,
            "persona.prompt",
            "template-error",
        )
    assert any(limit in error["message"] for error in errors), errors
    # The same environment renders declarative tool templates at run time.
    template = make_environment([]).from_string(payload)
    with pytest.raises(jinja2.TemplateError, match=re.escape(limit)):
        _within(20, template.render)


def test_ordinary_templates_stay_well_inside_the_budget() -> None:
    """The budget refuses attacks, not loops, arithmetic and joins a persona really uses."""
    source = (
        "{% for i in range(1000) %}{{ i ~ ',' }}{% endfor %}{{ 'ab' * 3 }}{{ 2 ** 64 }}"
        "{{ [1, 2] + [3] }}{{ lipsum(2, html=False)|length > 0 }}"
    )
    rendered = make_environment([]).from_string(source).render()
    assert rendered.endswith(f"999,ababab{2**64}[1, 2, 3]True")


@pytest.mark.parametrize(
    "source",
    [
        "{% include '/etc/passwd' %}",
        "{% include '../secret.md.j2' %}",
        "{% import '../../secret.md.j2' as x %}",
        "{% from '../secret.md.j2' import m %}",
        "{% extends '../secret.md.j2' %}",
        "{% include '..\\\\secret.md.j2' %}",
        "{% include '..%2fsecret.md.j2' %}",
        "{% include 'personas/../../secret.md.j2' %}",
        "{% include 'leak.md.j2' %}",  # a symlink to the secret
    ],
)
def test_templates_cannot_load_files_outside_the_search_path(
    write: Write, project: Path, source: str
) -> None:
    """include/import/from/extends with traversal, absolute paths or symlinks find nothing."""
    secret = project.parent / "secret.md.j2"
    secret.write_text("SECRET {% macro m() %}{% endmacro %}")
    path = write(
        {
            "one/buddy.yaml": MINIMAL.replace(
                "prompt: 你好，我是 {{ buddy.name }}。", "template: t.md.j2"
            ),
            "one/t.md.j2": source,
        }
    )
    (project / "one" / "leak.md.j2").symlink_to(secret)
    issues = _issues(path)
    assert {i.code for i in issues} == {"template-not-found"}, issues
    assert all("SECRET" not in str(i) for i in issues)


@pytest.mark.parametrize(
    "name", ["leak.md.j2", "..%2fsecret.md.j2", "..\\\\secret.md.j2", "./../secret.md.j2"]
)
def test_a_persona_template_name_cannot_leave_the_search_path(
    write: Write, project: Path, name: str
) -> None:
    """`persona.template` with encoded or backslashed traversal, or a symlink out, is not found."""
    secret = project.parent / "secret.md.j2"
    secret.write_text("SECRET")
    path = write(
        {
            "one/buddy.yaml": MINIMAL.replace(
                "prompt: 你好，我是 {{ buddy.name }}。", f"template: '{name}'"
            )
        }
    )
    (project / "one" / "leak.md.j2").symlink_to(secret)
    (issue,) = _issues(path)
    assert (issue.path, issue.code) == ("persona.template", "template-not-found")


# ------------------------------------------------------------------ 5. resources and paths

RESOURCES = MINIMAL + "tools: [resource_list, resource_read]\n"


@pytest.fixture
def resources(write: Write, project: Path) -> Resources:
    """A buddy whose resources/ holds two files, a symlink out and a symlinked directory."""
    path = write(
        {
            "buddy.yaml": RESOURCES,
            "resources/a.md": "A",
            "resources/sub/b.md": "B",
            "outside/secret.md": "SECRET",
        }
    )
    (project / "resources" / "leak.md").symlink_to(project / "outside" / "secret.md")
    (project / "resources" / "linked").symlink_to(project / "outside")
    blueprint = buddy.load(path)
    return Resources.load(blueprint.sections["resources"])


ESCAPES = [
    "../outside/secret.md",
    "/etc/passwd",
    "sub/../a.md",
    "./a.md",
    "sub//b.md",
    "..%2foutside%2fsecret.md",
    "%2e%2e/outside/secret.md",
    "a.md\x00",
    "a.md\x00../outside/secret.md",
    "sub\\b.md",
    "..\\outside\\secret.md",
    "leak.md",
    "linked/secret.md",
    "A.md",
    "",
]


@pytest.mark.parametrize("name", ESCAPES)
def test_resource_read_takes_only_a_listed_path(
    resources: Resources, project: Path, name: str
) -> None:
    """Traversal, absolute, encoded, NUL, backslash and symlinked names are not found."""
    assert resources.list() == ["a.md", "sub/b.md"]
    for attempt in (name, name.replace("/etc/passwd", str(project / "outside" / "secret.md"))):
        with pytest.raises(ResourceNotFoundError) as missing:
            resources.read(attempt)
        assert attempt in str(missing.value) and "resource_list" in str(missing.value)


@pytest.mark.anyio
async def test_the_resource_read_tool_refuses_the_same_names(
    write: Write, project: Path, resources: Resources
) -> None:
    """The model's resource_read tool goes through the same lookup: no file outside is read."""
    from buddy.runtime.state import RuntimeConversation
    from buddy.runtime.tools import build_tools

    tools = build_tools(buddy.load(project / "buddy.yaml"))
    client = HttpPlatformClient("http://127.0.0.1:9", "unused")
    conversation = RuntimeConversation(client, "c_1", "private")
    conversation.resource.shelf = resources
    try:
        for name in ESCAPES:
            with pytest.raises(ResourceNotFoundError):
                await tools["resource_read"].execute("call", {"file": name}, conversation)
        listed = await tools["resource_list"].execute("call", {}, conversation)
        assert "SECRET" not in listed.text and listed.text == "a.md\nsub/b.md"
    finally:
        await client.close()


async def _bound(world: World, identity: str) -> tuple[Conversation, HttpPlatformClient]:
    client = HttpPlatformClient(BASE, world.tokens[identity], http=world.http)
    return Conversation(client, world.conversations[identity], "private"), client


@pytest.mark.anyio
async def test_widget_ids_cannot_climb_to_other_endpoints(world: World) -> None:
    """A widget id like `../memory` cannot make widget calls read memory, data results or delete."""
    await _fill_conversation(world, "demo")
    card = await world.json(
        "POST",
        "/internal/v1/data-access/requests",
        world.auth("demo", "demo"),
        json={"kind": "location", "reason": "看看附近", "idempotency_key": "loc"},
    )
    rid = card["request_id"]
    await world.json(
        "POST", f"/dev/data-access/requests/{rid}/answer", world.admin, json={"granted": True}
    )
    conversation, _ = await _bound(world, "demo")
    widget = conversation.widget
    attacks: list[Callable[[], Any]] = [
        lambda: widget.read("../memory"),
        lambda: widget.read("..%2Fmemory"),
        lambda: widget.read(f"../data-access/results/{rid}"),
        lambda: widget.read_module("..", "memory"),
        lambda: widget.read_module("../data-access/results", rid),
        lambda: widget.read_module("../conversation", "turns"),
        lambda: widget.delete("../memory/secret"),
        lambda: widget.delete("../proactive/subscriptions"),
        lambda: widget.delete_record("..", "memory", "secret"),
        lambda: widget.delete_record("../..", "v1/memory", "secret"),
        lambda: widget.rename("../conversation/summary", "x"),
        lambda: widget.set_presentation("../conversation", summary="x"),
        lambda: widget.write_record("..", "..", "memory/secret", {"text": "x"}),
    ]
    for number, attack in enumerate(attacks):
        with pytest.raises(PlatformError) as refused:
            await attack()
        # 400: an encoded `/` is split again by the server, into another *widget* route.
        assert refused.value.status in (400, 404, 405), (number, refused.value)
        assert "机密" not in refused.value.reason and "latitude" not in refused.value.reason
    assert [e["text"] for e in await conversation.memory.list()] == ["机密"]
    subscriptions = await conversation.proactive.list()
    assert [s["status"] for s in subscriptions] == ["active"]
    assert await _bound_client_summary(world) is None


async def _bound_client_summary(world: World) -> Any:
    _, client = await _bound(world, "demo")
    return await client.get_summary(world.conversations["demo"])


@pytest.mark.anyio
async def test_dot_keys_stay_inside_memory_and_proactive(world: World) -> None:
    """A key made of dots reaches its own entry, never a neighbouring endpoint."""
    await _fill_conversation(world, "demo")
    conversation, _ = await _bound(world, "demo")
    assert await conversation.proactive.unsubscribe(".") is False
    assert [s["status"] for s in await conversation.proactive.list()] == ["active"]
    await conversation.memory.write("..", "点")
    assert {e["key"] for e in await conversation.memory.list()} == {"..", "secret"}


# ------------------------------------------------------------------ 6. limits name themselves
# The memory text limit over HTTP is pinned, reason and all, by tests/platform/test_memory.py.


def _names(text: str, limit: int, unit: str) -> bool:
    return str(limit) in text and unit in text


@pytest.mark.anyio
async def test_over_long_messages_are_refused_naming_the_limit(world: World) -> None:
    """A user message or a buddy reply one character over 8000 is refused with `8000 characters`."""
    conv = world.conversations["demo"]
    path = f"/dev/conversations/{conv}/messages"
    over = await world.http.post(
        path, headers=world.admin, json={"text": "字" * (MESSAGE_TEXT_CHARS + 1)}
    )
    assert _refusal(over, 400, "invalid_request") is None
    assert _names(over.json()["reason"], MESSAGE_TEXT_CHARS, "characters")
    at = await world.json("POST", path, world.admin, json={"text": "字" * MESSAGE_TEXT_CHARS})
    turn = "/internal/v1/conversation/turns"
    headers = world.auth("demo", "demo")
    too_long = {"event_id": at["event_id"], "reply": "好" * (MESSAGE_TEXT_CHARS + 1)}
    refused = await world.http.post(turn, headers=headers, json=too_long)
    assert _refusal(refused, 400, "invalid_request") is None
    assert _names(refused.json()["reason"], MESSAGE_TEXT_CHARS, "characters")
    # The buddy side: the client's commit surfaces the same reason.
    _, client = await _bound(world, "demo")
    with pytest.raises(PlatformError) as caught:
        await client.commit_turn(conv, too_long)
    assert caught.value.status == 400
    assert _names(str(caught.value), MESSAGE_TEXT_CHARS, "characters")
    fits = {"event_id": at["event_id"], "reply": "好" * MESSAGE_TEXT_CHARS}
    assert (await client.commit_turn(conv, fits))["status"] == "committed"


@pytest.mark.anyio
async def test_an_over_long_memory_text_is_refused_to_the_conversation_naming_the_limit(
    world: World,
) -> None:
    """conversation.memory.write one byte over 16384 raises with `16384` and `bytes`."""
    conversation, _ = await _bound(world, "demo")
    await conversation.memory.write("k", "中" * (MEMORY_TEXT_BYTES // 3) + "a")  # 16384 bytes
    with pytest.raises(PlatformError) as caught:
        await conversation.memory.write("k", "中" * (MEMORY_TEXT_BYTES // 3) + "ab")
    assert caught.value.status == 400
    assert _names(caught.value.reason, MEMORY_TEXT_BYTES, "bytes")
    assert _names(caught.value.reason, MEMORY_TEXT_BYTES + 1, "memory text")
    assert [len(e["text"]) for e in await conversation.memory.list()] == [
        MEMORY_TEXT_BYTES // 3 + 1
    ]


@pytest.mark.anyio
async def test_an_oversized_widget_record_is_refused_naming_the_limit(world: World) -> None:
    """A record over 64 KiB of JSON is refused over HTTP and to the conversation, naming the limit."""
    made = await _fill_conversation(world, "demo")
    empty = len(json.dumps({"s": ""}, separators=(",", ":")).encode())

    def record(size: int) -> dict[str, str]:
        return {"s": "x" * (size - empty)}

    path = f"/internal/v1/widgets/{made['widget']}/dishes/big"
    headers = world.auth("demo", "demo")
    over = await world.http.put(path, headers=headers, json={"data": record(RECORD_DATA_BYTES + 1)})
    assert _refusal(over, 400, "invalid_request") is None
    assert _names(over.json()["reason"], RECORD_DATA_BYTES, "bytes")
    at = await world.http.put(path, headers=headers, json={"data": record(RECORD_DATA_BYTES)})
    assert at.status_code == 200, at.text
    conversation, _ = await _bound(world, "demo")
    with pytest.raises(PlatformError) as caught:
        await conversation.widget.write_record(
            made["widget"], "dishes", "big", {"s": "字" * (RECORD_DATA_BYTES // 3)}
        )
    assert caught.value.status == 400
    assert _names(caught.value.reason, RECORD_DATA_BYTES, "bytes")
    written = await conversation.widget.write_record(made["widget"], "dishes", "big", record(100))
    assert written["revision"] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("chunked", [False, True])
async def test_an_oversized_request_body_is_refused_before_it_is_read(
    world: World, chunked: bool
) -> None:
    """A body over 8 MiB gets 413 naming the limit, declared or streamed, even without a
    token; a body at the limit reaches the token check."""
    path = "/internal/v1/memory/k"

    async def send(size: int) -> httpx.Response:
        body = b"x" * size
        if not chunked:
            return await world.http.put(path, content=body)

        async def pieces() -> AsyncIterator[bytes]:
            for start in range(0, size, 1 << 20):
                yield body[start : start + (1 << 20)]

        return await world.http.put(path, content=pieces())

    over = await send(REQUEST_BODY_BYTES + 1)
    assert _refusal(over, 413, "payload_too_large") is None
    assert _names(over.json()["reason"], REQUEST_BODY_BYTES, "bytes")
    at = await send(REQUEST_BODY_BYTES)
    assert _refusal(at, 401, "unauthorized") is None


@pytest.mark.parametrize(
    ("within", "over", "limit"),
    [
        # two steps for the range() call and the loop's guard, one per iteration
        (
            f"{{% for i in range({RENDER_STEPS_MAX - 2}) %}}{{% endfor %}}",
            f"{{% for i in range({RENDER_STEPS_MAX - 1}) %}}{{% endfor %}}",
            str(RENDER_STEPS_MAX),
        ),
        (
            f"{{{{ ('x' * {VALUE_CHARS_MAX})|length }}}}",
            f"{{{{ ('x' * {VALUE_CHARS_MAX + 1})|length }}}}",
            str(VALUE_CHARS_MAX),
        ),
        (
            f"{{{{ (2 ** {POWER_BITS_MAX // 2}) > 0 }}}}",
            f"{{{{ (2 ** {POWER_BITS_MAX // 2 + 1}) > 0 }}}}",
            str(POWER_BITS_MAX),
        ),
        (
            f"{{{{ 'x' * {VALUE_CHARS_MAX} }}}}",
            f"{{{{ 'x' * {VALUE_CHARS_MAX} }}}}.",
            str(VALUE_CHARS_MAX),
        ),
    ],
    ids=["steps", "value-size", "power-bits", "output-size"],
)
def test_each_render_limit_holds_on_both_sides_of_its_bound(
    within: str, over: str, limit: str
) -> None:
    """Exactly at a render limit renders; one past it is refused, naming the limit."""
    environment = make_environment([])
    environment.from_string(within).render()
    with pytest.raises(jinja2.TemplateError, match=re.escape(limit)):
        environment.from_string(over).render()


@pytest.mark.parametrize(
    ("bomb", "says"),
    [
        ("{{ 'x'|center(10**10) }}", "center asks for a width of 10000000000"),
        ("{{ 'x'.center(10**10) }}", "str.center asks for a width"),
        ("{{ 'x'.ljust(10**9) }}", "str.ljust asks for a width"),
        ("{{ 'x'.zfill(10**9) }}", "str.zfill asks for a width"),
        ("{{ 'a\nb'|indent(10**6) }}", "indent asks for a width of 2000000"),
        ("{{ '{:>9999999999}'.format(1) }}", "a format spec asks for a width"),
        ("{{ '{:>{w}}'.format(1, w=5) }}", "may not take its width from an argument"),
        ("{{ '%0999999999d'|format(1) }}", "a `%` format asks for a width"),
        ("{{ '%0999999999d' % 1 }}", "a `%` format asks for a width"),
        ("{{ '%.999999999f' % 1 }}", "a `%` format asks for a width"),
        ("{{ '%*d' % (5, 1) }}", "may not take its width from an argument"),
    ],
)
def test_one_step_allocations_are_refused_before_they_run(bomb: str, says: str) -> None:
    """Widths that would allocate gigabytes in one C call are checked before the call."""
    template = make_environment([]).from_string(bomb)
    with pytest.raises(jinja2.TemplateError, match=re.escape(says)):
        _within(20, template.render)


def test_ordinary_widths_and_formats_still_work() -> None:
    """Padding, formats and indents a persona really uses render as Jinja always did."""
    source = (
        "{{ 'x'|center(5) }}|{{ 'x'.rjust(3, '.') }}|{{ '{:>4}'.format(7) }}|"
        "{{ '%03d' % 7 }}|{{ '%s-%s'|format('a', 'b') }}|{{ 'a\nb'|indent(2) }}"
    )
    rendered = make_environment([]).from_string(source).render()
    assert rendered == "  x  |..x|   7|007|a-b|a\n  b"
