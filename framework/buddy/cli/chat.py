"""``buddy chat``: talk to a buddy in the terminal, against an in-process dev platform.

Everything goes through the real platform protocol on loopback: the buddy process's
HTTP calls and gateway, the platform's storage and limits. Lines come from stdin, so a
chat can be scripted (``printf '你好\\n' | buddy chat …``). A number answers a question
card; ``y``/``n`` answers a data-access card; ``/help``, ``/tools``, ``/call``, ``/quit``
and the companion layer's ``/card``, ``/mood``, ``/memory``, ``/lore``
(:mod:`buddy.cli.chat_layer`) are the chat's own commands (:data:`COMMANDS`). The
terminal's lines are Chinese, as the buddy's are: the chat is the end user's side of the
conversation.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from buddy.cli.chat_layer import LAYER_COMMANDS
from buddy.platform.dev.journal import keep_answers_of

if TYPE_CHECKING:
    from buddy.compile.blueprint import ToolSpec

__all__ = ["COMMAND", "COMMANDS", "RESUMED_SHOWN", "chat"]

# A command is a slash and ASCII letters opening the line, then a space or the line's end:
# "/ 你好", "/好的", "/usr/bin 是什么" are messages like any other, sent as typed.
COMMAND = re.compile(r"/([A-Za-z]+)(?:\s+(.*))?", re.S)
# What /help prints, one line per input the chat understands.
COMMANDS = (
    ("/help", "列出这些命令"),
    ("/tools", "列出这只搭子的工具：名字、种类、运行时给用户看的标签、参数"),
    ("/call 工具名 {json}", "让离线模型（--model offline）用这些参数调用工具；只打 /call 看用法"),
    ("/quit", "结束（输入结束时也一样）"),
    *LAYER_COMMANDS,
    ("数字", "题卡开着时：选第几个选项"),
    ("y / n", "授权卡开着时：同意 / 拒绝（也认 yes、no、同意、拒绝）"),
)
# A resumed chat shows this many of the earlier messages.
RESUMED_SHOWN = 10


def _short(value: Any, limit: int = 240) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _columns(text: str) -> int:
    """How many terminal columns ``text`` takes (CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


class _Terminal:
    def __init__(self, out: TextIO, title: str) -> None:
        self.out = out
        self.title = title
        self.seen: set[str] = set()
        self.turns_seen = 0
        self.question: dict[str, Any] | None = None
        self.consent: dict[str, Any] | None = None

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def steps(self, turns: list[dict[str, Any]]) -> None:
        for turn in turns[self.turns_seen :]:
            for step in turn["steps"]:
                if step["type"] == "tool_call":
                    args = "（已隐去）" if step.get("redacted") else _short(step.get("content"))
                    self.say(f"  → {step['tool']} {args}")
                elif step["type"] == "tool_result":
                    body = "（已隐去）" if step.get("redacted") else _short(step.get("content"))
                    mark = "✗" if step.get("is_error") else "←"
                    self.say(f"  {mark} {body}")
        self.turns_seen = len(turns)

    def messages(self, transcript: list[dict[str, Any]], *, mine: bool = False) -> None:
        """Print the buddy's new messages (and, with ``mine``, the user's as ``我：``)."""
        for message in transcript:
            if message["id"] in self.seen:
                continue
            self.seen.add(message["id"])
            if message["sender"] != "buddy":
                if mine:
                    self.question = None  # any later line closed it, as in _send
                    self.say(f"我：{message['body'].get('text', '')}")
                continue
            body = message["body"]
            kind = message["kind"]
            if kind == "text":
                self.say(f"{self.title}：{body['text']}")
            elif kind == "question":
                self.question = {"id": message["id"], **body}
                self.say(f"{self.title}问：{body['question']}")
                for number, option in enumerate(body["options"], 1):
                    self.say(f"  {number}) {option}")
            elif kind == "consent":
                self.card(body)
            elif kind == "widget":
                self.say(f"[小挂件] {body.get('widget_id')}")

    def card(self, body: dict[str, Any]) -> None:
        """A consent card: its reason, its answer or how to give one, the datasets it asks for."""
        status = body.get("status", "pending")
        if status == "pending":
            self.consent = body
        answer = {"granted": "已同意", "denied": "已拒绝"}.get(status, "y 同意 / n 拒绝")
        self.say(f"[授权卡] {body.get('reason', '')}（{answer}）")
        for dataset in body.get("datasets") or ():
            purpose = f"：{dataset['purpose']}" if dataset.get("purpose") else ""
            self.say(f"  · {dataset.get('title', dataset['id'])}（{dataset['id']}）{purpose}")

    def resume(self, transcript: list[dict[str, Any]], turns: list[dict[str, Any]]) -> None:
        """Show where an earlier chat on the same database stopped."""
        self.turns_seen = len(turns)
        if not transcript:
            return
        self.say(f"（接着上次的对话：{len(turns)} 轮）")
        hidden = transcript[:-RESUMED_SHOWN]
        if hidden:
            self.seen.update(m["id"] for m in hidden)
            self.say(f"（更早的 {len(hidden)} 条消息没有显示）")
        self.messages(transcript, mine=True)
        self.say("（以上是上次的对话）")

    def help(self) -> None:
        width = max(_columns(key) for key, _ in COMMANDS) + 2
        self.say("命令：")
        for key, meaning in COMMANDS:
            self.say(f"  {key}{' ' * (width - _columns(key))}{meaning}")
        self.say("其余的行都作为消息发给搭子；以 / 加英文字母开头的认不出的命令不会发出去。")

    def tools(self, tools: tuple[ToolSpec, ...]) -> None:
        if not tools:
            self.say("这只搭子没有工具。")
            return
        self.say(f"工具（{len(tools)} 个，模型看到的名字和顺序）：")
        name_width = max(len(t.name) for t in tools) + 2
        kind_width = max(len(str(t.kind)) for t in tools) + 2
        for tool in tools:
            line = f"  {tool.name.ljust(name_width)}{str(tool.kind).ljust(kind_width)}{tool.label}"
            self.say(line.rstrip())
            self.say(f"      参数：{_parameters(tool.parameters)}")

    def call_usage(self, tools: tuple[ToolSpec, ...], problem: str = "") -> None:
        if problem:
            self.say(f"{problem}，这一行没有发出去。")
        self.say("用法：/call 工具名 {json 参数}（参数可以不写，就是 {}）")
        self.say(f"工具：{'、'.join(t.name for t in tools) or '无'}（/tools 列出详情）")


def _parameters(schema: Any) -> str:
    """``name（type，必填）、…`` of a tool's JSON Schema, or ``无``."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    shown = []
    for name, prop in properties.items():
        kind = prop.get("type", "任意") if isinstance(prop, dict) else "任意"
        if isinstance(kind, list):
            kind = "|".join(map(str, kind))
        if kind == "array" and isinstance(prop.get("items"), dict) and "type" in prop["items"]:
            kind = f"{prop['items']['type']}[]"
        shown.append(f"{name}（{kind}{'，必填' if name in required else ''}）")
    return "、".join(shown) or "无"


def _command(terminal: _Terminal, tools: tuple[ToolSpec, ...], found: re.Match[str]) -> str:
    """Carry out a chat command (``/quit`` is the caller's); what to send, ``""`` for nothing."""
    word, rest = found.group(1).lower(), (found.group(2) or "").strip()
    if word == "help":
        terminal.help()
    elif word == "tools":
        terminal.tools(tools)
    elif word == "call":
        name, _, arguments = rest.partition(" ")
        if not name:
            terminal.call_usage(tools)
            return ""
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            terminal.call_usage(
                tools, f"{name} 的参数不是 JSON（{exc.msg}，第 {exc.pos + 1} 个字符）"
            )
            return ""
        if not isinstance(parsed, dict):
            terminal.call_usage(tools, f"{name} 的参数要是一个 JSON 对象 {{…}}")
            return ""
        # An unknown tool is sent all the same: the runtime's error lists the tools.
        return found.group(0)
    else:
        terminal.say(f"没有 /{word} 这个命令（/help 列出命令），这一行没有发出去。")
    return ""


async def _run(
    path: str,
    model_ref: str | None,
    profile: str | None,
    db: str | None,
    lines: TextIO,
    out: TextIO,
) -> int:
    import buddy
    from buddy.cli.chat_layer import show
    from buddy.errors import ManifestError, ModelConfigError
    from buddy.models.registry import resolve
    from buddy.testing.local import LocalPlatform, running_buddy

    if not Path(path).exists():
        print(f"buddy chat: {path}: no such file or directory", file=sys.stderr)
        return 2
    try:
        blueprint = buddy.load(path, profile=profile, model=model_ref)
    except ManifestError as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        model = resolve(blueprint.model)
    except ModelConfigError as exc:
        print(f"buddy chat: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="buddy-chat-") as scratch:
        database = db or str(Path(scratch) / "platform.db")
        async with LocalPlatform(database) as platform:
            tokens = await platform.register(blueprint.name)
            identity = f"{blueprint.name}-dev"
            earlier = await platform.dev("GET", "/conversations", params={"identity": identity})
            private = [c for c in earlier if c["kind"] == "private"]
            # With --db a chat carries on where the last one stopped.
            conversation = (
                private[0] if private else await platform.conversation(identity, "private", ["我"])
            )
            cid = conversation["id"]
            terminal = _Terminal(out, blueprint.title)
            terminal.say(
                f"和 {blueprint.title} 聊天（模型 {blueprint.model.ref}；/help 看命令，/quit 结束）"
            )
            terminal.resume(await platform.transcript(cid), await platform.turns(cid))
            async with running_buddy(platform, blueprint, model, tokens["dev_token"]) as server:
                keep_answers_of(server.buddy.layers, platform.state)  # for `buddy test --record`
                loop = asyncio.get_running_loop()
                while True:
                    line = await loop.run_in_executor(None, lines.readline)
                    if not line:
                        break
                    text = line.strip()
                    command = COMMAND.fullmatch(text)
                    if command is not None:
                        word = command.group(1).lower()
                        if word == "quit":
                            break
                        if f"/{word}" in dict(LAYER_COMMANDS):
                            await show(word, terminal.say, platform, server, blueprint, cid)
                            continue
                        text = _command(terminal, blueprint.tools, command)
                    if not text:
                        continue
                    await _send(platform, terminal, cid, text)
                    await platform.wait_acked(identity, timeout=300)
                    terminal.steps(await platform.turns(cid))
                    terminal.messages(await platform.transcript(cid))
    return 0


async def _send(platform: Any, terminal: _Terminal, cid: str, text: str) -> None:
    question = terminal.question
    if question is not None and text.isdigit() and 1 <= int(text) <= len(question["options"]):
        terminal.question = None
        await platform.click(cid, question["id"], question["options"][int(text) - 1])
        return
    consent = terminal.consent
    if consent is not None and text.lower() in ("y", "n", "yes", "no", "同意", "拒绝"):
        from buddy.capabilities.data.scenario import answer_card

        terminal.consent = None
        await answer_card(platform, consent["request_id"], text.lower() in ("y", "yes", "同意"))
        return
    terminal.question = None
    await platform.say(cid, text)


def chat(path: str, model: str | None, profile: str | None, db: str | None) -> int:
    """Run a terminal chat; returns the exit code."""
    return asyncio.run(_run(path, model, profile, db, sys.stdin, sys.stdout))
