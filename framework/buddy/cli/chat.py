"""``buddy chat``: talk to a buddy in the terminal, against an in-process dev platform.

Everything goes through the real platform protocol on loopback: the buddy process's
HTTP calls and gateway, the platform's storage and limits. Lines come from stdin, so a
chat can be scripted (``printf '你好\\n' | buddy chat …``). A number answers a question
card; ``y``/``n`` answers a data-access card; ``/quit`` ends.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

__all__ = ["chat"]


def _short(value: Any, limit: int = 240) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Terminal:
    def __init__(self, out: TextIO) -> None:
        self.out = out
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

    def messages(self, transcript: list[dict[str, Any]], title: str) -> None:
        for message in transcript:
            if message["id"] in self.seen:
                continue
            self.seen.add(message["id"])
            if message["sender"] != "buddy":
                continue
            body = message["body"]
            kind = message["kind"]
            if kind == "text":
                self.say(f"{title}：{body['text']}")
            elif kind == "question":
                self.question = {"id": message["id"], **body}
                self.say(f"{title}问：{body['question']}")
                for number, option in enumerate(body["options"], 1):
                    self.say(f"  {number}) {option}")
            elif kind == "consent":
                self.consent = body
                self.say(f"[授权卡] {body.get('reason', '')}（y 同意 / n 拒绝）")
            elif kind == "widget":
                self.say(f"[小挂件] {body.get('widget_id')}")


async def _run(
    path: str,
    model_ref: str | None,
    profile: str | None,
    db: str | None,
    lines: TextIO,
    out: TextIO,
) -> int:
    import buddy
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
            terminal = _Terminal(out)
            terminal.say(f"和 {blueprint.title} 聊天（模型 {blueprint.model.ref}；/quit 结束）")
            async with running_buddy(platform, blueprint, model, tokens["dev_token"]):
                loop = asyncio.get_running_loop()
                while True:
                    line = await loop.run_in_executor(None, lines.readline)
                    if not line:
                        break
                    text = line.strip()
                    if not text:
                        continue
                    if text == "/quit":
                        break
                    await _send(platform, terminal, cid, text)
                    await platform.wait_acked(identity, timeout=300)
                    terminal.steps(await platform.turns(cid))
                    terminal.messages(await platform.transcript(cid), blueprint.title)
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
