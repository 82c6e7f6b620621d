"""The memory capability's playground script (``capabilities/memory/playground.js``): its
two tabs rendered in Chromium from entries given here, with the shell's helpers stubbed
— no ``buddy dev``. The Memory tab's count of the layer's entries and the Companion
ledger agree, and a confirmed fact names the message it was said in and what confirmed
it. (``tests/test_playground.py`` drives the same tabs in the real page.)"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from buddy.capabilities import memory
from tests import test_playground

browser = test_playground.browser  # its Chromium fixture, requested by name below

SCRIPT = Path(memory.__file__).with_name("playground.js")

APP_JS = Path(memory.__file__).parents[2] / "playground" / "static" / "app.js"
#: The shell's own node builder, taken from app.js (so these tabs build nodes as the page does).
H = re.search(r"^function h\(.*?^}\n", APP_JS.read_text(encoding="utf-8"), re.S | re.M)
assert H is not None

# What the shell (playground/static/app.js) gives a capability's script, as little as
# these tabs use: its `h`, times as plain numbers, no platform.
SHELL = (
    H.group(0)
    + """
window.playground = {
  panels: {},
  h,
  api: async () => { throw new Error('no platform here'); },
  buddyApi: async () => { throw new Error('no platform here'); },
  act: () => {}, toast: () => {},
  when: (t) => `@${t}`,
  clock: () => ({ time: 1000, offset: 0 }),
  panel(spec) { this.panels[spec.name] = spec; },
};
"""
)

NICKNAME = {
    "title": "称呼",
    "value": "value",
    "risk": "R0",
    "slots": {"subject": "谁", "value": "称呼"},
    "parties": ["subject"],
}
DEBT = {
    "title": "欠账",
    "value": "quantity",
    "risk": "R2",
    "slots": {"debtor": "欠方", "creditor": "债主", "item": "欠的东西", "quantity": "数量"},
    "parties": ["debtor", "creditor"],
}
BUDDY = {
    "key": "xiaoman",
    "dev_token": "t",
    "companion": {
        "relations": {"nickname": NICKNAME, "debt": DEBT},
        "character": None,
        "budget": 1600,
    },
}


def _fact(relation: str, slots: dict[str, Any], value: Any, **more: Any) -> str:
    entry = {"relation": relation, "slots": slots, "value": value, "status": "kept"}
    return json.dumps({**entry, "updated": 10, "expires": None, "proposed": None, **more})


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_content("<!doctype html><meta charset=utf-8><body></body>")
    page.add_script_tag(content=SHELL)
    page.add_script_tag(content=SCRIPT.read_text(encoding="utf-8"))
    yield page
    context.close()
    assert errors == [], errors


def _render(page: Page, panel: str, data: dict[str, Any]) -> None:
    """Tab ``panel`` rendered for ``data`` (what its ``load`` answers) into ``#<panel>``."""
    page.evaluate(
        """([panel, b, data]) => {
          const out = window.playground.panels[panel].render(b, { id: 'c1', kind: 'private' }, data);
          const root = document.createElement('div');
          root.id = panel;
          root.append(...[out].flat(Infinity).filter(Boolean));
          document.body.append(root);
        }""",
        [panel, BUDDY, data],
    )


def test_the_memory_tab_and_the_ledger_count_the_layers_entries_alike(page: Page) -> None:
    entries = [
        {"key": "口味", "text": "清淡", "updated_at": 1},
        {"key": "auto:nickname:1", "text": _fact("nickname", {"subject": "user"}, "小鱼")},
        {"key": "auto:state", "text": json.dumps({"felt": ["m1"]})},
        {"key": "auto:lore", "text": json.dumps({"recent": ["奶茶"]})},
        {"key": "auto:mine", "text": "not a fact: the layer leaves it alone"},
    ]
    _render(page, "memory", {"entries": entries})
    _render(page, "companion", {"entries": entries[1:], "layers": [], "prompts": [], "said": {}})
    counted = (
        "4 automatic entries: 1 fact, the layer's state (auto:state), lore's counters"
        " (auto:lore), 1 other entry the layer leaves alone"
    )
    expect(page.locator("#memory .mem-auto")).to_have_text(f"{counted} — see Companion")
    expect(page.locator("#memory .mem-entry")).to_have_count(1)
    ledger = page.locator("#companion #ledger")
    expect(ledger.locator("h3")).to_have_text("Memory ledger (1 fact)")
    expect(ledger.locator(".ledger-count")).to_have_text(f"Of {counted}.")
    expect(ledger.locator(".fact")).to_have_count(1)


def test_a_confirmed_fact_shows_the_message_it_was_said_in_and_its_confirmation(
    page: Page,
) -> None:
    owed = {"debtor": "user", "creditor": "buddy", "item": "奶茶"}
    confirmed = _fact("debt", owed, 1, messages=["m1", "c1"], confirmed="c1")
    renewed = _fact("nickname", {"subject": "user"}, "小鱼", messages=["m2", "c2", "m3"])
    renewed = json.dumps({**json.loads(renewed), "confirmed": "c2", "updated": 5})
    said = {
        "m1": "我欠你一杯奶茶",
        "c1": "记住吧",
        "m2": "叫我小鱼",
        "c2": "记住吧",
        "m3": "叫我小鱼吧",
    }
    entries = [
        {"key": "auto:debt:1", "text": confirmed},
        {"key": "auto:nickname:1", "text": renewed},
    ]
    _render(page, "companion", {"entries": entries, "layers": [], "prompts": [], "said": said})
    debt = page.locator(".fact[data-relation=debt] .fact-from")
    expect(debt).to_have_text("from 「我欠你一杯奶茶」 · confirmed by 「记住吧」")
    # said again after its confirmation: the message that applied it last
    expect(page.locator(".fact[data-relation=nickname] .fact-from")).to_have_text(
        "from 「叫我小鱼吧」"
    )
