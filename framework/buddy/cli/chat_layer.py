"""``buddy chat``'s ``/card``, ``/mood``, ``/memory`` and ``/lore``: what the companion
layer holds of the conversation, read as the playground's inspector reads it — the
conversation's platform memory (as the buddy reads it, through the memory capability's
part), the layer's context reports (``Companion.inspect``) and the dev platform's clock — and made into the
prompt's parts by the same functions the turn uses (the card, the mood decayed to the
platform time, the persona rendered with it).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from buddy.capabilities.character.prompt import mood_context
from buddy.capabilities.character.state import decayed, start
from buddy.capabilities.companion.engine import LORE_KEY, STATE_KEY, Companion, Mind
from buddy.capabilities.companion.mind import USER, read_back
from buddy.capabilities.memory.conversation import Memory
from buddy.capabilities.memory.ledger import decode, expire
from buddy.capabilities.memory.limits import AUTO_KEY_PREFIX
from buddy.capabilities.memory.prompt import ledger_context
from buddy.compile.blueprint import Blueprint
from buddy.compile.placement import system_prompt
from buddy.extend import persona_layer

__all__ = ["LAYER_COMMANDS", "show"]

#: What /help says of each (chat.py's COMMANDS lists them).
LAYER_COMMANDS = (
    ("/card", "模型拿到的人物卡（记下的关于对方的事）"),
    ("/mood", "搭子现在的心情：生气、难过、信任（按平台时钟），和提示词里的心情描述"),
    ("/memory", "这个对话在平台上的记忆条目：记下的事实和其他条目"),
    ("/lore", "上一轮提示词里的背景设定条目，和没放进去的原因"),
)
_STATUS = {"kept": "已记下", "proposed": "待确认", "disputed": "说法不一"}
_PARTY = {"user": "对方", "buddy": "搭子"}
_LEFT_OUT = {
    "cooldown": "冷却中（cooldown）",
    "delay": "还没到时候（delay）",
    "group": "同组里别的条目被选中（group）",
    "probability": "这一轮没抽中（probability）",
    "budget": "放不下了（memory.budget）",
    "token_budget": "超出这本设定集的额度（token_budget）",
}


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _numbers(anger: float, sadness: float, trust: float) -> str:
    return f"生气 {anger:.2f}，难过 {sadness:.2f}，信任 {trust:.2f}"


async def show(
    word: str,
    say: Callable[[str], None],
    platform: Any,
    server: Any,
    blueprint: Blueprint,
    cid: str,
) -> None:
    """Print what ``/word`` (one of :data:`LAYER_COMMANDS`) shows of conversation ``cid``."""
    layer = next((x for x in server.buddy.layers if isinstance(x, Companion)), None)
    # As the buddy reads it: through the memory capability's part, on the buddy's client.
    entries = await Memory(server.client, cid).list()
    now = float((await platform.dev("GET", "/clock"))["time"])
    mind = Mind()
    if layer is not None:
        read_back(mind, entries, layer.memory, layer.character, lore=True)
    if word == "card":
        _card(say, layer, mind, now)
    elif word == "mood":
        _mood(say, blueprint, layer, mind, now)
    elif word == "memory":
        said = {
            str(e["id"]): str(e["payload"].get("text", ""))
            for e in await platform.events(f"{blueprint.name}-dev")
            if e.get("conversation_id") == cid and e.get("type") == "message"
        }
        _memory(say, layer, entries, said)
    else:
        _lore(say, layer, cid)


def _card(
    say: Callable[[str], None],
    layer: Companion | None,
    mind: Mind,
    now: float,
) -> None:
    if layer is None or not layer.memory.relations:
        say("这只搭子的 memory: 没有 relations（不自动记），没有人物卡。")
        return
    card = ledger_context(layer.memory, expire(mind.ledger, now).values(), mind.names())["card"]
    if not card:
        say("人物卡：还没有记下关于对方的事，提示词里没有这一段。")
        return
    say("人物卡（模型拿到的 memory.card）：")
    for line in card.splitlines():
        say(f"  {line}")


def _mood(
    say: Callable[[str], None],
    blueprint: Blueprint,
    layer: Companion | None,
    mind: Mind,
    now: float,
) -> None:
    spec = layer.character if layer is not None else None
    if spec is None:
        say("这只搭子没有 character:，没有心情。")
        return
    mood = decayed(mind.moods.get(USER) or start(spec, now), spec, now)  # a private chat's
    context = mood_context(spec, mood)
    say("心情（按平台时钟）：" + _numbers(mood.anger, mood.sadness, mood.trust))
    # The words the character adds to the prompt, as the turn renders it (runtime/turn.py):
    # its default place's text, or the persona rendered with the mood against the same
    # rendering without it.
    base = persona_layer(blueprint, example=False)
    when = datetime.fromtimestamp(now, UTC)
    prompt, landings = system_prompt(
        blueprint.persona,
        blueprint.placements,
        {**base, "character": context},
        kind="private",
        now=when,
    )
    placed = next(landing for landing in landings if landing.key == "character")
    if placed.where == "default":
        added = placed.text.splitlines()
    else:
        without = {k: v for k, v in base.items() if k != "character"}
        before, _ = system_prompt(
            blueprint.persona, blueprint.placements, without, kind="private", now=when
        )
        added = [
            line[2:]
            for line in difflib.ndiff(before.splitlines(), prompt.splitlines())
            if line.startswith("+ ") and line[2:].strip()
        ]
    say("提示词里的心情：" if added else "提示词里的心情：（这一轮没有说到心情）")
    for line in added:
        say(f"  {line}")


def _memory(
    say: Callable[[str], None],
    layer: Companion | None,
    entries: list[dict[str, Any]],
    said: dict[str, str],
) -> None:
    if not entries:
        say("记忆：这个对话还没有条目。")
        return
    say(f"记忆（这个对话在平台上的条目，{len(entries)} 条）：")
    for item in entries:
        key, text = str(item["key"]), str(item["text"])
        entry = decode(text) if key.startswith(AUTO_KEY_PREFIX) else None
        spec = layer.memory.relation(entry.relation) if layer and entry else None
        if entry is not None and spec is not None:
            slots = dict(entry.slots)
            if entry.value is not None:
                slots[spec.value] = entry.value
            titles = {s.name: s.title for s in spec.slots}
            shown = "，".join(
                f"{titles.get(name, name)} {_PARTY.get(str(value), _short(value))}"
                for name, value in slots.items()
            )
            status = _STATUS.get(entry.status, entry.status)
            say(f"  {spec.title}（{spec.name}，{status}）：{shown}")
            if entry.proposed is not None:
                say(f"    待确认的值：{_short(entry.proposed)}")
            if entry.claims:
                say(f"    其他说法：{' / '.join(_short(c) for c in entry.claims)}")
            last = entry.messages[-1] if entry.messages else ""
            source = f"「{said[last]}」" if last in said else (last or "不知道哪条消息")
            say(f"    来自{source}（{key}）")
        elif key == STATE_KEY:
            say(f"  {key}  {_state(text)}")
        elif key == LORE_KEY:
            say(f"  {key}  {_lore_state(text)}")
        else:
            say(f"  {key} → {_short(text)}")


def _state(text: str) -> str:
    try:
        state = json.loads(text)
        mood = state.get("mood")
        shown = "存下的心情 " + _numbers(mood["anger"], mood["sadness"], mood["trust"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return _short(text)
    if state.get("asked"):
        shown += f"；题卡在问 {state['asked']}"
    if state.get("reconcile"):
        shown += f"；先开口：{state['reconcile']}"
    return shown


def _lore_state(text: str) -> str:
    try:
        state = json.loads(text)
        return (
            f"背景设定已扫过 {int(state.get('turn', 0))} 轮，"
            f"记着最近 {len(state.get('recent', []))} 条消息"
        )
    except (ValueError, TypeError, AttributeError):
        return _short(text)


def _lore(say: Callable[[str], None], layer: Companion | None, cid: str) -> None:
    if layer is None or layer.lore is None:
        say("这只搭子没有 lore:。")
        return
    reports = layer.inspect(cid).get("reports") or []
    if not reports:
        say("背景设定：还没有哪一轮的提示词用过。")
        return
    report = reports[-1]
    entries = {e.id: e for e in layer.lore.entries}
    went = [p for p in report["parts"] if p["name"].startswith("lore:")]
    left = [p for p in report["left_out"] if p["name"].startswith("lore:")]
    say("背景设定（上一轮提示词里的）：" if went else "背景设定：上一轮的提示词里没有。")
    for part in went:
        entry = entries.get(part["name"][5:])
        why = "常驻" if entry is not None and entry.always else "最近的消息触发"
        say(f"  {part['name'][5:]}（{why}，{part['chars']} 字）")
    if left:
        say("没放进去的：")
        for part in left:
            say(f"  {part['name'][5:]}：{_LEFT_OUT.get(part['reason'], part['reason'])}")
    rest = sum(e.enabled for e in entries.values()) - len(went) - len(left)
    if rest > 0:
        say(f"其余 {rest} 条：最近的消息里没提到它们的关键词。")
