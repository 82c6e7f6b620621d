"""Strict provider simulators on loopback: servers that answer like the real APIs and
refuse what the real APIs refuse.

Each simulator is an ASGI app served by uvicorn on 127.0.0.1. Behind the wire format is
a scripted "brain" (one :class:`Move` per request: reasoning, text, tool calls), and in
front of it the provider's request rules, checked on every request exactly as the
provider documents them, with the provider's own error status and message:

- DeepSeek thinking mode: every assistant message with ``tool_calls`` must carry its
  ``reasoning_content`` — in the turn and in every later turn (HTTP 400 ``Missing
  `reasoning_content` field in the assistant message at message index N``). The
  simulator is stricter than the real API where it can be: within the turn the text must
  be exactly what it sent.
- Kimi thinking: the same rule, its own message (``thinking is enabled but
  reasoning_content is missing in assistant tool call message at index N``).
- Anthropic extended thinking: ``budget_tokens`` ≥ 1024 and below ``max_tokens``; no
  ``temperature`` with thinking, ``top_p`` ≥ 0.95; never ``temperature`` and ``top_p``
  together; a final assistant message continuing a tool-use loop must start with a
  thinking block; every thinking block must carry the signature issued for exactly its
  text; no thinking blocks when thinking is off; every ``tool_use`` answered by a
  ``tool_result`` in the next user message.

Each request and each refusal is recorded, so a test can check both what was sent and
that nothing was refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from buddy.testing.local import free_port, served

_SECRET = b"simulator-signing-key"


@dataclass(frozen=True)
class Move:
    """What the simulated model does on one request."""

    reasoning: str = ""
    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()  # (tool name, arguments)


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return name, arguments


@dataclass
class Refusal:
    status: int
    message: str


class Simulator:
    """Base: the script, the record of requests and refusals, and the server."""

    path = ""

    def __init__(self, moves: list[Move]) -> None:
        self.moves = list(moves)
        self.requests: list[dict[str, Any]] = []
        self.refusals: list[Refusal] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._serving = contextlib.AsyncExitStack()
        self._ids = 0

    def _id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:04d}"

    async def __aenter__(self) -> Simulator:
        app = Starlette(routes=[Route(self.path, self._endpoint, methods=["POST"])])
        await self._serving.enter_async_context(served(app, self.port))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._serving.aclose()

    async def _endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        problem = self.refuse(body, dict(request.headers))
        if problem is not None:
            self.refusals.append(problem)
            return self.error(problem)
        if not self.moves:
            refusal = Refusal(500, "the simulator's script has no more moves")
            self.refusals.append(refusal)
            return self.error(refusal)
        move = self.moves.pop(0)
        if body.get("stream"):
            return StreamingResponse(self.stream(move, body), media_type="text/event-stream")
        return JSONResponse(self.answer(move, body))

    def refuse(self, body: dict[str, Any], headers: dict[str, str]) -> Refusal | None:
        raise NotImplementedError

    def error(self, refusal: Refusal) -> Response:
        raise NotImplementedError

    def answer(self, move: Move, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, move: Move, body: dict[str, Any]) -> AsyncIterator[bytes]:
        raise NotImplementedError


# --- OpenAI-compatible: DeepSeek and Kimi thinking ------------------------------------


class ChatCompletions(Simulator):
    """``POST /v1/chat/completions`` of a thinking model that wants its reasoning back.

    Args:
        moves: The script.
        flavour: ``deepseek`` or ``kimi`` (the error each answers).
    """

    path = "/v1/chat/completions"

    def __init__(self, moves: list[Move], flavour: str = "deepseek") -> None:
        super().__init__(moves)
        self.flavour = flavour
        self.issued: dict[str, str] = {}  # tool call id -> the reasoning of its step

    def refuse(self, body: dict[str, Any], headers: dict[str, str]) -> Refusal | None:
        if not headers.get("authorization", "").startswith("Bearer "):
            return Refusal(401, "Authentication Fails (no such user)")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return Refusal(400, "messages must be a non-empty list")
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        for index, message in enumerate(messages):
            if message.get("role") != "assistant" or not message.get("tool_calls"):
                continue
            reasoning = message.get("reasoning_content")
            if not isinstance(reasoning, str) or (self.flavour == "kimi" and not reasoning):
                return Refusal(400, self._missing(index))
            if index > last_user:  # this turn: exactly what was sent
                first = message["tool_calls"][0]["id"]
                if first in self.issued and reasoning != self.issued[first]:
                    return Refusal(400, f"reasoning_content of message {index} was changed")
        return None

    def _missing(self, index: int) -> str:
        if self.flavour == "kimi":
            return (
                "thinking is enabled but reasoning_content is missing in assistant tool "
                f"call message at index {index}"
            )
        return (
            f"Missing `reasoning_content` field in the assistant message at message index "
            f"{index}. For more information, please refer to "
            "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
        )

    def error(self, refusal: Refusal) -> Response:
        kind = "invalid_request_error" if refusal.status == 400 else "server_error"
        return JSONResponse(
            {"error": {"message": refusal.message, "type": kind, "param": None, "code": kind}},
            status_code=refusal.status,
        )

    def _calls(self, move: Move) -> list[dict[str, Any]]:
        calls = [
            {
                "id": self._id("call_"),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for name, args in move.calls
        ]
        for made in calls:
            self.issued[str(made["id"])] = move.reasoning
        return calls

    def answer(self, move: Move, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": move.text,
            "reasoning_content": move.reasoning,
        }
        calls = self._calls(move)
        if calls:
            message["tool_calls"] = calls
        return {
            "id": self._id("chatcmpl-"),
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
        }

    async def stream(self, move: Move, body: dict[str, Any]) -> AsyncIterator[bytes]:
        cid = self._id("chatcmpl-")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

        yield chunk({"role": "assistant", "content": None, "reasoning_content": ""})
        for piece in _pieces(move.reasoning, 3):
            yield chunk({"reasoning_content": piece})
        for piece in _pieces(move.text, 4):
            yield chunk({"content": piece})
        calls = self._calls(move)
        for index, made in enumerate(calls):
            arguments = made["function"]["arguments"]
            head = {"index": index, "id": made["id"], "type": "function"}
            yield chunk(
                {
                    "tool_calls": [
                        {**head, "function": {"name": made["function"]["name"], "arguments": ""}}
                    ]
                }
            )
            for piece in _pieces(arguments, 5):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls" if calls else "stop")
        usage = {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}
        yield f"data: {json.dumps({'id': cid, 'choices': [], 'usage': usage})}\n\n".encode()
        yield b"data: [DONE]\n\n"


# --- Anthropic messages with extended thinking --------------------------------------


def signature(text: str) -> str:
    """The signature the simulator issues for a thinking block's text."""
    return hmac.new(_SECRET, text.encode(), hashlib.sha256).hexdigest()


class Messages(Simulator):
    """``POST /v1/messages`` with Anthropic's rules for extended thinking."""

    path = "/v1/messages"

    def refuse(self, body: dict[str, Any], headers: dict[str, str]) -> Refusal | None:
        if not headers.get("x-api-key") or not headers.get("anthropic-version"):
            return Refusal(401, "invalid x-api-key")
        thinking = body.get("thinking") or {}
        enabled = thinking.get("type") == "enabled"
        if enabled:
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return Refusal(
                    400,
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                )
            if body.get("max_tokens", 0) <= budget:
                return Refusal(400, "`max_tokens` must be greater than `thinking.budget_tokens`.")
            if "temperature" in body:
                return Refusal(400, "`temperature` may only be set to 1 when thinking is enabled.")
            if body.get("top_p", 1) < 0.95:
                return Refusal(400, "`top_p` must be at least 0.95 when thinking is enabled.")
        if "temperature" in body and "top_p" in body:
            return Refusal(
                400,
                "`temperature` and `top_p` cannot both be specified for this model. "
                "Please use only one.",
            )
        return self._check_messages(body.get("messages") or [], enabled)

    def _check_messages(self, messages: list[dict[str, Any]], enabled: bool) -> Refusal | None:
        expected: list[str] = []
        for index, message in enumerate(messages):
            content = message.get("content")
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            )
            if message["role"] == "user":
                answered = [
                    str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"
                ]
                if sorted(answered) != sorted(expected):
                    return Refusal(
                        400,
                        f"messages.{index}: `tool_use` ids were found without `tool_result` "
                        "blocks immediately after",
                    )
                expected = []
                continue
            expected = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            for position, block in enumerate(blocks):
                kind = block.get("type")
                if kind == "thinking":
                    if not enabled:
                        return Refusal(
                            400,
                            "When thinking is disabled, an `assistant` message cannot "
                            "contain `thinking`.",
                        )
                    if block.get("signature") != signature(block.get("thinking", "")):
                        return Refusal(
                            400,
                            f"messages.{index}.content.{position}: Invalid `signature` in "
                            "`thinking` block",
                        )
                elif kind == "redacted_thinking" and not enabled:
                    return Refusal(
                        400,
                        "When thinking is disabled, an `assistant` message cannot "
                        "contain `redacted_thinking`.",
                    )
        last = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"),
            None,
        )
        continues_tools = (
            last is not None
            and last == len(messages) - 2
            and any(b.get("type") == "tool_use" for b in messages[last]["content"])
        )
        if enabled and continues_tools:
            first = messages[last]["content"][0].get("type")  # type: ignore[index]
            if first not in ("thinking", "redacted_thinking"):
                return Refusal(
                    400,
                    f"messages.{last}.content.0.type: Expected `thinking` or "
                    f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a "
                    "final `assistant` message must start with a thinking block (preceeding "
                    "the lastmost set of `tool_use` and `tool_result` blocks).",
                )
        return None

    def error(self, refusal: Refusal) -> Response:
        kind = "invalid_request_error" if refusal.status == 400 else "api_error"
        return JSONResponse(
            {"type": "error", "error": {"type": kind, "message": refusal.message}},
            status_code=refusal.status,
        )

    def _blocks(self, move: Move, body: dict[str, Any]) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if move.reasoning and (body.get("thinking") or {}).get("type") == "enabled":
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": move.reasoning,
                    "signature": signature(move.reasoning),
                }
            )
            blocks.append({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"})
        if move.text:
            blocks.append({"type": "text", "text": move.text})
        blocks.extend(
            {"type": "tool_use", "id": self._id("toolu_"), "name": name, "input": args}
            for name, args in move.calls
        )
        return blocks

    def answer(self, move: Move, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": self._id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": self._blocks(move, body),
            "stop_reason": "tool_use" if move.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 20},
        }

    async def stream(self, move: Move, body: dict[str, Any]) -> AsyncIterator[bytes]:
        def event(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

        message = {**self.answer(Move(), body), "content": [], "stop_reason": None}
        message["usage"] = {"input_tokens": 50, "output_tokens": 1}
        yield event("message_start", {"type": "message_start", "message": message})
        for index, block in enumerate(self._blocks(move, body)):
            for name, data in _block_events(index, block):
                yield event(name, data)
        stop = "tool_use" if move.calls else "end_turn"
        yield event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 20},
            },
        )
        yield event("message_stop", {"type": "message_stop"})


def _block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block["type"]
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = []
    if kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], 3)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "redacted_thinking":
        start = block
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], 4)]
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        arguments = json.dumps(block["input"], ensure_ascii=False)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, 5)]
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    yield "ping", {"type": "ping"}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class Script:
    """The moves of the round-trip tests: two sequential tool calls, one parallel pair,
    a reply; then a second turn with one call and a reply."""

    first: list[Move] = field(
        default_factory=lambda: [
            Move(reasoning="先看看有哪些资料。", calls=(call("resource_list"),)),
            Move(reasoning="读一下作息表。", calls=(call("resource_read", file="作息.md"),)),
            Move(
                reasoning="两件事一起记下。",
                text="我记一下。",
                calls=(
                    call("remember", topic="早起", text="七点起床"),
                    call("remember", topic="跑步", text="每周三次"),
                ),
            ),
            Move(reasoning="可以回答了。", text="记好了：七点起床，每周跑三次。"),
        ]
    )
    second: list[Move] = field(
        default_factory=lambda: [
            Move(reasoning="再记一条。", calls=(call("remember", topic="喝水", text="八杯"),)),
            Move(reasoning="好了。", text="喝水也记下了。"),
        ]
    )
