"""Lore's SillyTavern-compatible activation: each behaviour a case reasoned from
SillyTavern's ``world-info.js`` (the function each test reasons from is quoted in a
comment), then what reached the model in a private chat and in a group."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import buddy
from buddy.capabilities.companion.engine import _DEFAULTS as NO_MEMORY
from buddy.capabilities.companion.engine import LORE_KEY, Companion
from buddy.capabilities.companion.mind import Mind, read_back, wanted
from buddy.capabilities.lore.compiled import Lore, LoreBook, LoreEntry
from buddy.capabilities.lore.keys import estimate_tokens
from buddy.capabilities.lore.scan import LoreState, Scanned, scan
from buddy.capabilities.lore.state import BUDDY, USER, Said, counted
from buddy.compile.render import view
from buddy.testing import TestModel
from buddy.testing.local import LocalPlatform, running_buddy
from tests.conftest import MINIMAL, Write
from tests.test_lore import _e

pytestmark = pytest.mark.anyio


def _entry(name: str, **fields: Any) -> LoreEntry:
    """An entry of book ``b`` with today's defaults, scanning four messages."""
    return _e(name, **({"scan": 4} | fields))


def _lore(*entries: LoreEntry, **book: Any) -> Lore:
    return Lore(entries, (LoreBook("b", **book),), char="小c")


def _scan(
    lore: Lore,
    recent: Sequence[str | Said],
    state: LoreState | None = None,
    budget: int = 10_000,
    event: str = "e1",
) -> Scanned:
    return scan(lore, recent, state or LoreState(messages=len(recent)), budget, event=event)


def _names(lore: Lore, recent: Sequence[str | Said], **kwargs: Any) -> list[str]:
    """The names of what went in, sorted: the prompt's order has tests of its own."""
    return sorted(e.name for e in _scan(lore, recent, **kwargs).entries)


def _left(scanned: Scanned) -> list[tuple[str, str]]:
    return [(e.name, why) for e, why in scanned.left_out]


# ---------------------------------------------------------------- keys


def test_whole_words_need_non_word_characters_around_and_cjk_is_non_word() -> None:
    # world-info.js WorldInfoBuffer.matchKeys: "(?:^|\\W)(${escapeRegex(transformedString)})(?:$|\\W)"
    lore = _lore(
        _entry("peanut", keys=("花生",), whole_words=True),
        _entry("cat", keys=("cat",), whole_words=True),
        _entry("loose", keys=("cat",)),
    )
    assert _names(lore, ["我对花生过敏"]) == ["peanut"]
    assert _names(lore, ["concatenate"]) == ["loose"]
    assert _names(lore, ["a Cat!"]) == ["cat", "loose"]
    assert _names(lore, ["cat_food"]) == ["loose"]  # `_` is a word character


def test_a_key_of_several_words_is_found_as_text_even_with_whole_words() -> None:
    # world-info.js WorldInfoBuffer.matchKeys: "if (keyWords.length > 1) { return haystack.includes"
    lore = _lore(_entry("dragon", keys=("red dragon",), whole_words=True))
    assert _names(lore, ["three red dragons"]) == ["dragon"]


def test_book_defaults_and_entry_overrides_come_from_the_book_file(write: Write) -> None:
    # world-info.js WorldInfoBuffer.#transformString: "entry.caseSensitive ?? world_info_case_sensitive"
    book = """\
        whole_words: true
        case_sensitive: true
        group_scoring: true
        scan: 3
        entries:
          - { name: a, keys: [k], content: x }
          - { name: b, keys: [k], content: x, whole_words: false, case_sensitive: false,
              group_scoring: false, scan: 1 }
        """
    path = write({"buddy.yaml": MINIMAL + "lore: lore\n", "lore/w.yaml": book})
    a, b = buddy.load(path).sections["lore"].entries
    assert (a.whole_words, a.case_sensitive, a.group_scoring, a.scan) == (True, True, True, 3)
    assert (b.whole_words, b.case_sensitive, b.group_scoring, b.scan) == (False, False, False, 1)


def test_case_is_ignored_unless_the_entry_is_case_sensitive() -> None:
    # world-info.js WorldInfoBuffer.#transformString: "caseSensitive ? str : str.toLowerCase()"
    lore = _lore(
        _entry("any", keys=("Qingyun",)), _entry("exact", keys=("Qingyun",), case_sensitive=True)
    )
    assert _names(lore, ["QINGYUN"]) == ["any"]
    assert _names(lore, ["Qingyun"]) == ["any", "exact"]


LOGIC = {
    # (logic, message, fires): keys [king], also [dead, crown]
    "and_any": [("the dead king", True), ("the king", False)],
    "not_all": [("the dead king", True), ("the dead king's crown", False), ("king", True)],
    "not_any": [("the dead king", False), ("the king is here", True)],
    "and_all": [("the dead king", False), ("the dead king's crown", True)],
}


@pytest.mark.parametrize("logic", list(LOGIC))
def test_each_logic_decides_by_the_secondary_keys_only_after_a_primary_match(logic: str) -> None:
    # world-info.js checkWorldInfo: "if (!primaryKeyMatch) { continue; }" then matchSecondaryKeys:
    # "selectiveLogic === world_info_logic.NOT_ANY && !hasAnyMatch"
    also = ("dead",) if logic in ("and_any", "not_any") else ("dead", "crown")
    lore = _lore(_entry("king", keys=("king",), also=also, logic=logic))
    for message, fires in LOGIC[logic]:
        assert (_names(lore, [message]) == ["king"]) is fires, (logic, message)
    assert _names(lore, ["the dead crown"]) == []  # no primary key: secondary never looked at


def test_without_secondary_keys_the_primary_key_alone_triggers() -> None:
    # world-info.js checkWorldInfo: "if (!hasSecondaryKeywords) { // Handle cases where secondary is empty"
    for logic in LOGIC:
        assert _names(_lore(_entry("k", keys=("king",), logic=logic)), ["king"]) == ["k"]


def test_patterns_keep_their_flags_and_a_key_never_spans_two_messages() -> None:
    # world-info.js parseRegexFromString: "new RegExp(pattern, flags)"; WorldInfoBuffer.get:
    # "const JOINER = '\n' + MATCHER" (so no key matches across two messages)
    lore = _lore(
        _entry("dotall", patterns=(r"(?s)dragon.egg",)),
        _entry("exact", patterns=(r"(?-i:Dragon)",)),
        _entry("start", patterns=(r"^tower",)),
        _entry("two", keys=("red dragon",)),
    )
    assert _names(lore, ["dragon\negg"]) == ["dotall"]
    assert _names(lore, ["dragon"]) == []
    assert _names(lore, ["Dragon"]) == ["exact"]
    assert _names(lore, ["tower", "the tower"]) == ["start"]
    assert _names(lore, ["old tower"]) == []
    assert _names(lore, ["red", "dragon"]) == []
    assert _names(lore, ["dragon", "egg"]) == []


def test_each_entry_scans_its_own_depth() -> None:
    # world-info.js WorldInfoBuffer.get: "let depth = entry.scanDepth ?? this.getDepth()"
    lore = _lore(_entry("deep", keys=("塔",)), _entry("shallow", keys=("塔",), scan=1), scan=4)
    assert _names(lore, ["塔", "嗯"]) == ["deep"]
    assert _names(lore, ["嗯", "塔"]) == ["deep", "shallow"]


def test_replies_are_scanned_and_counted_only_when_the_book_says_so() -> None:
    # world-info.js checkWorldInfo: "new WorldInfoBuffer(chat)": the chat holds both sides
    said: list[Said] = [(USER, "你好"), (BUDDY, "去看看那座塔吧"), (USER, "好")]
    tower = _entry("tower", keys=("塔",), scan=2)
    assert _names(_lore(tower, scan_replies=True), said) == ["tower"]
    assert _names(_lore(tower), said) == []
    # scan counts messages of both sides: the user's "塔" two messages back is out of reach
    said = [(USER, "塔"), (BUDDY, "嗯"), (USER, "好")]
    assert _names(_lore(tower, scan_replies=True), said) == []
    assert _names(_lore(tower), said) == ["tower"]


def test_with_scan_names_each_message_is_scanned_under_its_speakers_name() -> None:
    # script.js Generate: "coreChat.map(x => world_info_include_names ? `${x.name}: ${x.mes}` : x.mes)"
    said: list[Said] = [(USER, "你好"), (BUDDY, "嗯")]
    char = _entry("char", keys=("小c",))
    user = _entry("user", keys=("阿明",), whole_words=True)
    lore = _lore(char, user, scan_replies=True, scan_names=True)
    turn = scan(lore, said, LoreState(messages=2), 10_000, event="e", user="阿明")
    assert sorted(e.name for e in turn.entries) == ["char", "user"]
    assert _names(_lore(char, user, scan_replies=True), said) == []
    # the user's messages only: the buddy's name is not in them
    turn = scan(_lore(char, user, scan_names=True), said, LoreState(), 10_000, user="阿明")
    assert [e.name for e in turn.entries] == ["user"]


# ---------------------------------------------------------------- recursion

DRAGON = _entry("dragon", keys=("dragon",), content="The dragon guards the tower.")
TOWER = _entry("tower", keys=("tower",), content="The tower is old.")
OLD = _entry("old", keys=("old",), content="Old things crumble.")


def test_recursion_scans_the_content_of_what_went_in_at_most_recursion_times() -> None:
    # world-info.js checkWorldInfo: "if (world_info_max_recursion_steps && world_info_max_recursion_steps <= count)"
    message = ["a dragon!"]
    assert _names(_lore(DRAGON, TOWER, OLD), message) == ["dragon"]
    assert _names(_lore(DRAGON, TOWER, OLD, recursion=1), message) == ["dragon", "tower"]
    assert _names(_lore(DRAGON, TOWER, OLD, recursion=2), message) == ["dragon", "old", "tower"]


def test_exclude_and_prevent_recursion() -> None:
    # world-info.js checkWorldInfo: "scanState === scan_state.RECURSION && world_info_recursive &&
    # entry.excludeRecursion" and "successfulNewEntries.filter(x => !x.preventRecursion)"
    excluded = _entry("tower", keys=("tower",), exclude_recursion=True)
    assert _names(_lore(DRAGON, excluded, recursion=3), ["dragon"]) == ["dragon"]
    assert _names(_lore(DRAGON, excluded, recursion=3), ["dragon", "tower"]) == ["dragon", "tower"]
    quiet = _entry("dragon", keys=("dragon",), content=DRAGON.content, prevent_recursion=True)
    assert _names(_lore(quiet, TOWER, recursion=3), ["dragon"]) == ["dragon"]


def test_delay_until_recursion_waits_for_its_level() -> None:
    # world-info.js checkWorldInfo: "entry.delayUntilRecursion > currentRecursionDelayLevel" and
    # "if (nextScanState === scan_state.NONE && availableRecursionDelayLevels.length)"
    one = _entry("one", keys=("dragon",), delay_until_recursion=1)
    two = _entry("two", keys=("dragon",), delay_until_recursion=2)
    lore = _lore(DRAGON, TOWER, one, two, recursion=3)
    # step 0: dragon; 1 (level 1): tower, one; 2: nothing new, so level 2: two
    assert _names(lore, ["dragon"]) == ["dragon", "one", "tower", "two"]
    assert _names(_lore(DRAGON, TOWER, one, two, recursion=1), ["dragon"]) == [
        "dragon",
        "one",
        "tower",
    ]
    assert _names(_lore(one), ["dragon"]) == []


def test_delay_until_recursion_in_a_book_that_never_rescans_is_located(write: Write) -> None:
    book = "entries:\n  - { name: a, keys: [k], content: x, delay_until_recursion: 1 }\n"
    _, issues = buddy.check(write({"buddy.yaml": MINIMAL + "lore: lore\n", "lore/w.yaml": book}))
    assert [(Path(i.file).name, i.line, i.code, i.path) for i in issues] == [
        ("w.yaml", 2, "lore-book", "entries[0].delay_until_recursion")
    ]


# ---------------------------------------------------------------- timed effects


def _talk(lore: Lore, said: Sequence[str], replies: bool = True) -> list[list[str]]:
    """Each user message scanned in turn, a reply counted after each: what went in, or
    why it was left out."""
    state, seen, recent = LoreState(), [], []
    for n, message in enumerate(said):
        state = counted(state)
        recent.append(message)
        turn = scan(lore, recent, state, 10_000, event=f"t{n}")
        seen.append([e.name for e in turn.entries] or [why for _, why in turn.left_out])
        state = counted(turn.state) if replies else turn.state
    return seen


def test_sticky_and_cooldown_in_messages() -> None:
    # world-info.js WorldInfoTimedEffects: "end: this.#chat.length + Number(entry[type])";
    # onEnded sticky: "Sets an entry on cooldown immediately if it has a cooldown";
    # checkWorldInfo: "if (isCooldown && !isSticky)"
    lore = _lore(_entry("s", keys=("x",), sticky=3, cooldown=2), counting="messages")
    # messages 1 (in, sticky to 4), 3 (held), 5 (over: cooling to 7), 7 (free), 9 (held)
    assert _talk(lore, ["x", "y", "x", "x", "y"]) == [["s"], ["s"], ["cooldown"], ["s"], ["s"]]


def test_a_cooldown_without_sticky_starts_at_the_trigger() -> None:
    # world-info.js WorldInfoTimedEffects.setTimedEffects: "this.#setTimedEffectOfType('cooldown', entry)"
    lore = _lore(_entry("c", keys=("x",), cooldown=3), counting="messages")
    # message 1: in, cooling to 4; message 3: cooling; message 5: free
    assert _talk(lore, ["x", "x", "x"]) == [["c"], ["cooldown"], ["c"]]


def test_delay_waits_for_the_conversations_length_in_messages() -> None:
    # world-info.js WorldInfoTimedEffects.#checkDelayEffect: "if (this.#chat.length < entry.delay)"
    lore = _lore(_entry("d", keys=("x",), delay=4), counting="messages")
    assert _talk(lore, ["x", "x", "x"]) == [["delay"], ["delay"], ["d"]]  # 1, 3, 5 messages


def test_turns_keep_lores_old_counting() -> None:
    lore = _lore(_entry("s", keys=("x",), sticky=2, cooldown=1, delay=2))
    assert _talk(lore, ["x", "x", "y", "y", "x", "x"], replies=False) == [
        ["delay"],
        ["s"],  # turn 2: in, sticky through 4
        ["s"],
        ["s"],
        ["cooldown"],
        ["s"],
    ]


def test_a_sticky_span_set_at_a_clock_that_did_not_move_is_dropped() -> None:
    # world-info.js WorldInfoTimedEffects.#checkTimedEffectOfType:
    # "this.#chat.length <= Number(value.start) && !value.protected" (chat not advanced)
    lore = _lore(_entry("s", keys=("x",), sticky=5), counting="messages")
    first = scan(lore, ["x"], LoreState(messages=1), 1000, event="e")
    again = scan(lore, ["y"], first.state, 1000, event="e")  # the same event run again
    assert [e.name for e in first.entries] == ["s"] and again.entries == ()
    later = scan(lore, ["y"], counted(first.state, 2), 1000, event="f")
    assert [e.name for e in later.entries] == ["s"]


def test_the_old_stored_state_reads_as_the_same_spans() -> None:
    mind = Mind()
    old = {"turn": 3, "until": {"b/s": 5}, "blocked": {"b/s": 8}, "recent": ["x", "y"]}
    entries = [{"key": LORE_KEY, "text": json.dumps(old)}]
    read_back(mind, entries, NO_MEMORY, None, lore=True)
    assert mind.recent == [(USER, "x"), (USER, "y")] and mind.lore.turn == 3
    lore = _lore(_entry("s", keys=("x",), sticky=2, cooldown=2))
    seen = []
    state = mind.lore
    for _ in range(5):  # turns 4, 5 held; 6, 7 cooling; 8 free
        turn = scan(lore, ["x"], state, 1000)
        seen.append([e.name for e in turn.entries] or [why for _, why in turn.left_out])
        state = turn.state
    assert seen == [["s"], ["s"], ["cooldown"], ["cooldown"], ["s"]]
    stored = json.loads(wanted(mind, lore=True)[LORE_KEY])
    assert stored["recent"] == ["x", "y"] and "until" not in stored


# ---------------------------------------------------------------- probability


def test_probability_is_drawn_from_the_event_and_the_entry() -> None:
    # world-info.js checkWorldInfo verifyProbability: "const rollValue = Math.random() * 100;
    # if (rollValue <= entry.probability)" — here drawn from (event id, entry id)
    def share(probability: int) -> int:
        lore = _lore(_entry("p", keys=("x",), probability=probability))
        return sum(_names(lore, ["x"], event=f"ev{i}") == ["p"] for i in range(400))

    assert share(0) == 0 and share(100) == 400
    assert 160 <= share(50) <= 240
    lore = _lore(_entry("p", keys=("x",), probability=50))
    assert all(
        _names(lore, ["x"], event=f"ev{i}") == _names(lore, ["x"], event=f"ev{i}")
        for i in range(50)
    )


def test_a_sticky_entry_does_not_roll_again_and_a_failed_one_is_not_retried() -> None:
    # world-info.js verifyProbability: "is sticky, does not need to re-roll probability";
    # checkWorldInfo: "if (failedProbabilityChecks.has(entry) || allActivatedEntries.has(entry))"
    entry = _entry("p", keys=("x", "tower"), probability=50, sticky=10)
    lore = _lore(entry, DRAGON, recursion=2)
    events = [f"ev{i}" for i in range(40)]
    passing = next(e for e in events if _names(lore, ["x"], event=e) == ["p"])
    failing = [e for e in events if _names(lore, ["x"], event=e) == []]
    state = scan(lore, ["x"], LoreState(), 1000, event=passing).state
    for event in failing[:5]:
        turn = scan(lore, ["y"], state, 1000, event=event)
        assert [e.name for e in turn.entries] == ["p"]
        state = turn.state
    failed = scan(lore, ["x dragon"], LoreState(), 1000, event=failing[0])
    assert [e.name for e in failed.entries] == ["dragon"]  # its content says tower: no retry
    assert _left(failed) == [("p", "probability")]


# ---------------------------------------------------------------- inclusion groups


def test_the_highest_order_overriding_member_wins_its_group() -> None:
    # world-info.js filterByInclusionGroups: "group.filter(x => x.groupOverride).sort(sortFn)"
    lore = _lore(
        _entry("plain", keys=("x",), group=("g",), order=50),
        _entry("low", keys=("x",), group=("g",), order=5, group_override=True),
        _entry("high", keys=("x",), group=("g",), order=9, group_override=True),
    )
    for event in ("a", "b", "c"):
        turn = _scan(lore, ["x"], event=event)
        assert [e.name for e in turn.entries] == ["high"]
        assert sorted(_left(turn)) == [("low", "group"), ("plain", "group")]


def test_a_group_draws_by_weight_from_the_event() -> None:
    # world-info.js filterByInclusionGroups: "const rollValue = Math.random() * totalWeight"
    def wins(weights: tuple[int, int]) -> int:
        lore = _lore(
            _entry("a", keys=("x",), group=("g",), group_weight=weights[0]),
            _entry("b", keys=("x",), group=("g",), group_weight=weights[1]),
        )
        drawn = [_names(lore, ["x"], event=f"ev{i}") for i in range(300)]
        assert all(len(d) == 1 for d in drawn)
        return sum(d == ["b"] for d in drawn)

    assert wins((1, 10000)) >= 295
    assert 110 <= wins((100, 100)) <= 190
    lore = _lore(*(_entry(n, keys=("x",), group=("g",)) for n in "abc"))
    assert _names(lore, ["x"], event="same") == _names(lore, ["x"], event="same")


def test_group_scoring_keeps_the_members_matching_most_keys() -> None:
    # world-info.js filterGroupsByScoring: "if (scores[i] < maxScore) { ... removeEntry"
    # and WorldInfoBuffer.getScore: "AND_ANY: Add both scores"
    one = _entry("one", keys=("x",), group=("g",), group_scoring=True)
    two = _entry("two", keys=("x", "y"), group=("g",), group_scoring=True)
    also = _entry("also", keys=("x",), also=("y", "z"), group=("g",), group_scoring=True)
    for event in ("a", "b", "c", "d"):
        assert _names(_lore(one, two, also), ["x y z"], event=event) == ["also"]  # 1 + 2 keys
        assert _names(_lore(one, two), ["x y"], event=event) == ["two"]
    unscored = _entry("one", keys=("x",), group=("g",))
    drawn = {tuple(_names(_lore(unscored, two), ["x y"], event=f"e{i}")) for i in range(30)}
    assert drawn == {("one",), ("two",)}  # an unscored member stays in the draw


def test_a_sticky_member_keeps_its_group_and_a_won_group_takes_no_more() -> None:
    # world-info.js filterGroupsByTimedEffects: "If the group has any sticky entries, leave only the
    # sticky entries"; filterByInclusionGroups: "group '${key}' was already activated"
    held = _entry("held", keys=("x",), group=("g",), sticky=5)
    other = _entry("other", keys=("y",), group=("g",), group_override=True)
    state = _scan(_lore(held, other), ["x"]).state
    assert _names(_lore(held, other), ["y"], state=state) == ["held"]
    dragon = _entry("dragon", keys=("dragon",), content="to the tower", group=("g",))
    tower = _entry("tower", keys=("tower",), group=("g",))
    turn = _scan(_lore(dragon, tower, recursion=2), ["dragon"])
    assert [e.name for e in turn.entries] == ["dragon"] and _left(turn) == [("tower", "group")]


# ---------------------------------------------------------------- budget


def test_estimated_tokens() -> None:
    assert estimate_tokens("你好") == 2 and estimate_tokens("ＡＢ") == 2  # CJK, fullwidth
    assert estimate_tokens("hello world") == 3 and estimate_tokens("你好 abc") == 3
    assert estimate_tokens("") == 0


def test_the_token_budget_keeps_the_highest_priority() -> None:
    # world-info.js checkWorldInfo: "[...activatedNow].sort(...)" in order (sortFn: "b.order - a.order")
    # then "if ((textToScanTokens + (await getTokenCountAsync(newContent))) >= budget)"; an imported
    # book's priority is its order
    entries = [
        _entry(f"o{order}", always=True, order=order, priority=order, content="一二三四五六")
        for order in (10, 30, 20)
    ]
    turn = _scan(_lore(*entries, token_budget=12), [])
    assert [e.name for e in turn.entries] == ["o20", "o30"]
    assert _left(turn) == [("o10", "token_budget")]
    assert [e.name for e in _scan(_lore(*entries, token_budget=11), []).entries] == ["o30"]
    # the lore's characters still hold: 6 + 2 + 6
    assert [e.name for e in _scan(_lore(*entries), [], budget=14).entries] == ["o20", "o30"]


def test_a_full_budget_stops_the_rescans() -> None:
    # world-info.js checkWorldInfo: "if (world_info_recursive && !token_budget_overflowed && ...)"
    big = _entry("big", always=True, content="x" * 50, priority=-1)
    lore = _lore(DRAGON, TOWER, big, recursion=2)
    assert _names(lore, ["dragon"], budget=len(DRAGON.content)) == ["dragon"]
    assert _names(lore, ["dragon"]) == ["big", "dragon", "tower"]


# ---------------------------------------------------------------- positions


def test_of_equal_orders_the_books_order_goes_first() -> None:
    # world-info.js getSortedEntries: "sort(sortFn)" (highest order first, then the book's order)
    # decides which candidate is taken first; in the prompt, equal orders keep the book's order
    # (SillyTavern's own puts the one activated last first: docs/cards.md, "Each entry")
    lore = _lore(
        _entry("z", keys=("dragon",), order=5),
        _entry("tower", keys=("tower",)),
        _entry("a", keys=("dragon",)),
        DRAGON,
        recursion=1,
    )
    turn = _scan(lore, ["dragon"])
    assert [e.name for e in turn.entries] == ["z", "tower", "a", "dragon"]
    # the first of equal overriding members wins its group, as the book lists them
    grouped = [_entry(n, keys=("x",), group=("g",), group_override=True) for n in ("b", "c", "a")]
    assert [e.name for e in _scan(_lore(*grouped), ["x"]).entries] == ["b"]


def test_positions_and_depths_in_the_scan() -> None:
    # world-info.js checkWorldInfo: "case world_info_position.atDepth" — same depth and role: one
    # message, "WIDepthEntries[existingDepthIndex].entries.unshift(content)"
    lore = _lore(
        _entry("b", always=True, position="before_persona", order=2),
        _entry("a", always=True, order=1),
        _entry("d1", always=True, position="depth", depth=1, order=1),
        _entry("d2", always=True, position="depth", depth=1, order=2),
        _entry("u", always=True, position="depth", depth=0, role="user"),
    )
    turn = _scan(lore, [])
    assert [e.name for e in turn.at("before_persona")] == ["b"]
    assert turn.depths() == ((1, "system", "[d1]\n[d2]"), (0, "user", "[u]"))


BOOK = """\
macros: true
entries:
  - { name: 前, always: true, position: before_persona, content: 开头的设定。 }
  - { name: 后, keys: ['{{char}}'], content: '{{user}}认识{{char}}。' }
  - { name: 深, always: true, position: depth, depth: 0, content: 最近的提醒。 }
  - { name: 旁, always: true, position: depth, depth: 1, role: user, content: 旁白。 }
"""


async def test_positions_and_depths_reach_the_model(write: Write) -> None:
    manifest = "name: c\ntitle: 小c\nmodel: test\npersona:\n  prompt: 你是小c。\nlore: lore\n"
    path = write({"buddy.yaml": manifest, "lore/world.yaml": BOOK})
    model = TestModel(["嗯。", "嗯。"])
    async with buddy.Agent(buddy.load(path), model) as agent:
        await agent.run("你好")
        await agent.run("小c在吗")
    first, second = model.requests
    assert first.system == "## 背景设定\n开头的设定。\n\n你是小c。"
    assert second.system == "## 背景设定\n开头的设定。\n\n你是小c。\n\n## 背景设定\n用户认识小c。"
    # depth 1 before the turn's own message, depth 0 after it
    assert [(m.role, m.content) for m in second.messages] == [
        ("user", "你好"),
        ("assistant", "嗯。"),
        ("user", "旁白。"),
        ("user", "小c在吗"),
        ("system", "最近的提醒。"),
    ]


async def test_a_template_places_before_and_after(write: Write) -> None:
    persona = "  prompt: '{{ lore.before }}|你是小c。|{{ lore.after }}|{{ lore.text }}'\n"
    manifest = f"name: c\nmodel: test\npersona:\n{persona}lore: lore\n"
    path = write({"buddy.yaml": manifest, "lore/world.yaml": BOOK})
    model = TestModel(["嗯。"])
    async with buddy.Agent(buddy.load(path), model) as agent:
        await agent.run("c")
    assert (
        model.requests[0].system == "开头的设定。|你是小c。|用户认识c。|开头的设定。\n\n用户认识c。"
    )


def test_render_shows_new_settings_only_where_they_are_not_the_defaults(write: Write) -> None:
    book = "recursion: 2\nentries:\n  - { name: a, keys: [k], content: x, position: depth }\n"
    plain = "entries:\n  - { name: a, keys: [k], content: x }\n"
    files = {"buddy.yaml": MINIMAL + "lore: lore\n", "lore/new.yaml": book, "lore/old.yaml": plain}
    new, old = view(buddy.load(write(files)))["lore"]
    assert new["recursion"] == 2 and new["entries"][0] | {} == {
        "name": "a",
        "keys": ["k"],
        "order": 100,
        "priority": 0,
        "position": "depth",
        "depth": 4,
        "role": "system",
        "content": "x",
    }
    assert set(old) == {"book", "title", "file", "scan", "entries"}
    assert old["entries"] == [
        {"name": "a", "keys": ["k"], "order": 100, "priority": 0, "content": "x"}
    ]


# ---------------------------------------------------------------- conversations

PRIVATE = """\
scan: 2
scan_replies: true
counting: messages
entries:
  - { name: 塔, keys: [塔], sticky: 3, content: 塔里住着一位老巫师。 }
"""


async def test_a_private_chat_scans_replies_and_counts_both_sides(write: Write) -> None:
    manifest = "name: c\nmodel: test\npersona:\n  prompt: 你是小c。\nlore: lore\n"
    path = write({"buddy.yaml": manifest, "lore/world.yaml": PRIVATE})
    model = TestModel(["去看看那座塔吧。", "嗯。", "嗯。", "嗯。"])
    async with buddy.Agent(buddy.load(path), model) as agent:
        for text in ("你好", "好啊", "然后呢", "再然后"):
            await agent.run(text)
        layer = agent.layers[0]
        assert isinstance(layer, Companion)
        mind = layer.minds[agent.conversation.id]
        # messages 1 你好, 2 the reply, 3 好啊 (the reply triggers: sticky to 6), 5 held, 7 over
        went = ["塔里住着一位老巫师。" in r.system for r in model.requests]
        assert went == [False, True, True, False]
        assert mind.lore.messages == 8
        assert (BUDDY, "去看看那座塔吧。") in mind.recent
        # a turn that read user data: its reply is counted, never kept for scanning
        event = SimpleNamespace(id="read", type="message", payload={})
        await layer.after(agent.conversation, event, {"reply": "塔在北边", "data_read": True})
        assert mind.lore.messages == 9 and (BUDDY, "塔在北边") not in mind.recent


GROUP = """\
name: grp
title: 小c
model: test
persona:
  prompt: '你是小c。{{ lore.text }}'
lore: lore
"""
GROUP_BOOK = """\
macros: true
entries:
  - { name: 塔, keys: [塔], scan: 2, content: '{{user}}想知道塔的事。' }
"""


async def test_a_group_scans_every_members_messages_and_names_the_speaker(
    platform: LocalPlatform, write: Write
) -> None:
    path = write({"buddy.yaml": GROUP, "lore/world.yaml": GROUP_BOOK})
    tokens = await platform.register("grp")
    members = [{"name": "小李", "member_id": "m_li"}, {"name": "小王", "member_id": "m_wang"}]
    body = {"identity": "grp-dev", "kind": "group", "members": members}
    cid = (await platform.dev("POST", "/conversations", json=body))["id"]
    model = TestModel(default="嗯。")
    async with running_buddy(platform, buddy.load(path), model, tokens["dev_token"]) as server:
        for member, text in (("m_li", "那座塔"), ("m_wang", "怎么了"), ("m_li", "没什么")):
            event = await platform.say(cid, text, member)
            await platform.wait_acked("grp-dev", event)
            await server.buddy.layers[0].settled()
    systems = [r.system for r in model.requests]
    assert systems == ["你是小c。小李想知道塔的事。", "你是小c。小王想知道塔的事。", "你是小c。"]
