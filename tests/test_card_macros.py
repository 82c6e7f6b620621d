"""Card macros (SillyTavern's, and the Character Card V3 "curly braced syntax"): replaced
deterministically — ``random``/``roll`` per turn from the event id, ``pick`` per
conversation — in lore text (:func:`buddy.capabilities.lore.macros.expand`) and in the
persona prompt of an imported card, asserted down to the system prompt the model received.

Each case names the function of SillyTavern's ``public/scripts/macros.js`` (or the CCv3
spec section) it reasons from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import buddy
from buddy.capabilities.lore.macros import Expander, expand
from buddy.cards import export_card
from buddy.cards.prompt import compose, escape
from buddy.cli.main import main
from buddy.compile.macros import DICE_MAX, SIDES_MAX
from buddy.compile.persona import EXAMPLE_EVENT, INLINE_NAME, PersonaRenderer, make_environment
from buddy.runtime.turn import SENT_KEPT
from buddy.testing import TestModel
from tests.test_cards import V2, _card

SEEDS = [f"event-{n}" for n in range(200)]


def _expand(text: str, seed: str = "e1", stable: str | None = None) -> str:
    return expand(text, char="Sera", user="Ann", seed=seed, stable=stable)


def _renderer(source: str, **variables: str) -> PersonaRenderer:
    return PersonaRenderer(
        path=[],
        template=None,
        inline=source,
        traits={},
        variables={"user": "the user", **variables},
        buddy={"name": "sera", "title": "Sera", "description": ""},
    )


# ---------------------------------------------------------------- each macro


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # evaluateMacros: `content.replace(/<USER>/gi, …)`, `/<BOT>/gi`, `/<CHAR>/gi`
        ("<USER> and <bot> and <Char>", "Ann and Sera and Sera"),
        # CCv3 "`{{char}}`", "`{{user}}`"; detected case insensitive
        ("{{char}} and {{USER}} and {{ Char }}", "Sera and Ann and Sera"),
        # evaluateMacros: `/{{newline}}/gi` → '\n', `/{{noop}}/gi` → ''
        ("a{{newline}}b{{noop}}c", "a\nbc"),
        # evaluateMacros: `/(?:\r?\n)*{{trim}}(?:\r?\n)*/gi` → '' (the newlines go too)
        ("a \n\n{{trim}}\n b", "a  b"),
        # evaluateMacros: `/{{reverse\:(.+?)}}/gi` → `Array.from(str).reverse()`, after the
        # names are replaced (code points, not UTF-16 units)
        ("{{reverse:Hello}} {{reverse:{{user}}}} {{reverse:ab😀}}", "olleH nnA 😀ba"),
        # evaluateMacros: `/\{\{\/\/([\s\S]*?)\}\}/gm` → '' (across lines too)
        ("a{{// a note\non two lines}}b", "ab"),
        # CCv3 "`{{comment: A}}`": replaced with an empty string when sending as a prompt
        ("a{{comment: for the reader}}b", "ab"),
        # CCv3 "`{{hidden_key:A}}`": same as `{{// A}}` in a prompt
        ("a{{hidden_key: forest}}b", "ab"),
        # randomReplace / pickReplace: one choice is always that choice
        ("{{random::only}} {{pick:only}}", "only only"),
        # diceRollReplace: `droll.validate(formula)` false → `invalidRollPlaceholder` ('')
        ("[{{roll:abc}}] [{{roll:0}}] [{{roll:d0}}]", "[] [] []"),
        # Only the macros above are replaced: anything else stays as the card wrote it.
        ("{{unknown}} {{random}} {{lastMessage}} {{randomize:a}} {{ x }}", None),
        ("{ not } {{ half", None),
    ],
)
def test_each_macro(text: str, expected: str | None) -> None:
    assert _expand(text) == (text if expected is None else expected)


def test_a_hidden_key_is_kept_for_a_lore_scan() -> None:
    # CCv3 "`{{hidden_key:A}}`": "SHOULD be used on matching lorebook entries if its
    # scanned recursively"; `{{// A}}` and `{{comment: A}}` SHOULD NOT.
    text = "x{{hidden_key: Kestrel}}{{// nope}}{{comment: no}}y"
    assert expand(text, char="", user="", seed="e", keep_hidden=True) == "xKestrely"


@pytest.mark.parametrize(
    ("macro", "choices"),
    [
        # randomReplace: "Split on either double colons or comma. If comma is the
        # separator, we are also trimming all items" (and `\,` is a comma in an item).
        ("{{random:a, b ,c}}", {"a", "b", "c"}),
        ("{{random: x\\,y , z}}", {"x,y", "z"}),
        ("{{random::a:: b ::c}}", {"a", " b ", "c"}),
        ("{{random :a,b}}", {"a", "b"}),  # `/{{random\s?::?([^}]+)}}/gi`: a space, a colon
        ("{{RANDOM:a,b}}", {"a", "b"}),
        # pickReplace: the same list syntax as random
        ("{{pick::a::b::c}}", {"a", "b", "c"}),
        ("{{pick:a,b,c}}", {"a", "b", "c"}),
        # diceRollReplace: `isDigitsOnly(formula)` → `1d${formula}`; droll's `XdY±Z`
        ("{{roll:d6}}", {str(n) for n in range(1, 7)}),
        ("{{roll:6}}", {str(n) for n in range(1, 7)}),
        ("{{roll 6}}", {str(n) for n in range(1, 7)}),  # `/{{roll[ : ]([^}]+)}}/gi`
        ("{{roll:2d6+1}}", {str(n) for n in range(3, 14)}),
        ("{{roll:1d4-1}}", {str(n) for n in range(4)}),
    ],
)
def test_draws_cover_every_choice_and_nothing_else(macro: str, choices: set[str]) -> None:
    seen = {_expand(macro, seed) for seed in SEEDS}
    assert seen == choices


def test_too_many_dice_roll_nothing() -> None:
    assert _expand(f"[{{{{roll:{DICE_MAX}d2}}}}]") != "[]"
    assert _expand(f"[{{{{roll:{DICE_MAX + 1}d2}}}}]") == "[]"
    assert _expand(f"[{{{{roll:d{SIDES_MAX + 1}}}}}]") == "[]"
    assert _expand("[{{roll:" + "9" * 5000 + "}}]") == "[]"  # never read as a number


def test_nested_macros_are_replaced_inside_out() -> None:
    # evaluateMacros runs diceRollReplace before randomReplace: a roll inside a list is a
    # number by the time the list is drawn from.
    seen = {_expand("{{random:{{roll:d2}},x}}", seed) for seed in SEEDS}
    assert seen == {"1", "2", "x"}


# ---------------------------------------------------------------- determinism


def test_the_same_seed_gives_the_same_text_and_other_seeds_vary() -> None:
    # randomReplace draws from `new Math.seedrandom('added entropy.', { entropy: true })`:
    # a new value every time. Here the seed is the turn's event id, so a turn rendered
    # twice says the same, and another turn draws again.
    text = "{{random:a,b,c,d,e}} {{roll:d20}}"
    assert _expand(text, "turn-1") == _expand(text, "turn-1")
    assert len({_expand(text, seed) for seed in SEEDS}) > 50


def test_equal_macros_in_one_text_draw_each_on_their_own() -> None:
    # pickReplace seeds each pick by its `offset` as well: two equal macros are two draws.
    pairs = {_expand("{{random:a,b}} {{random:a,b}}", seed) for seed in SEEDS}
    assert pairs == {"a a", "a b", "b a", "b b"}


def test_an_expander_counts_across_calls() -> None:
    # The persona renders a prompt macro by macro: the second call is the second draw.
    whole = _expand("{{random:a,b,c,d}}|{{random:a,b,c,d}}", "t")
    expander = Expander(char="Sera", user="Ann", seed="t")
    assert f"{expander('{{random:a,b,c,d}}')}|{expander('{{random:a,b,c,d}}')}" == whole


def test_a_pick_stays_for_the_conversation() -> None:
    # pickReplace: "We need to have a consistent chat hash, otherwise we'll lose rolls on
    # chat file rename" — the seed is `${chatIdHash}-${rawContentHash}-${offset}`.
    text = "{{pick::red::green::blue::amber}}"
    picks = {_expand(text, seed, stable="conversation-1") for seed in SEEDS}
    assert len(picks) == 1
    assert len({_expand(text, "e", stable=f"conversation-{n}") for n in range(100)}) == 4
    # Without a conversation, a pick draws from the turn's seed.
    assert len({_expand(text, seed) for seed in SEEDS}) == 4


# ---------------------------------------------------------------- the persona prompt


def test_card_text_becomes_calls_of_the_card_macro_global() -> None:
    assert escape("{{random:a,b}} {{reverse:{{user}}}} {{x}}") == (
        "{{ card_macro('{{random:a,b}}') }} {{ card_macro('{{reverse:' ~ user ~ '}}') }}"
        " {{ '{{' }}x}}"
    )
    assert escape("it's\\") == "it's\\"
    assert escape("{{// it's a \\ note}}") == "{{ card_macro('{{// it\\'s a \\\\ note}}') }}"


def test_the_persona_replaces_the_macros_as_expand_does() -> None:
    # What the lore scanner and the persona make of the same text agree.
    text = (
        "{{char}} is {{random:calm,wary,bold}} and {{random:calm,wary,bold}}; eyes "
        "{{pick::green::grey::amber}}; {{roll:3d6}} gold.{{// note}}{{hidden_key: k}}\n"
        "{{reverse:{{user}}}}{{newline}}x\n\n{{trim}}\ny {{unknown}} <USER>"
    )
    source = compose({"description": text}, "en")
    renderer = _renderer(source)
    for seed in SEEDS[:20]:
        rendered = renderer.render(event=seed, conversation_id="c1")
        expected = expand(text, char="Sera", user="the user", seed=seed, stable="c1")
        assert rendered.endswith(f"\n## Sera\n{expected}\n")
    assert "{{" in expected  # {{unknown}}


def test_a_render_without_a_turn_uses_the_example_seed() -> None:
    # `buddy render` and `buddy validate` show one example of the drawn text, always it.
    renderer = _renderer(escape("{{random:a,b,c,d,e,f}} {{roll:d100}}"))
    shown = renderer.render()
    assert shown == renderer.render() == renderer.render(event=EXAMPLE_EVENT)
    assert re.fullmatch(r"[a-f] \d+", shown)


def test_a_context_without_an_event_keeps_the_macros_as_written() -> None:
    # A card's export renders the prompt back to card text: the macros must survive.
    renderer = _renderer(escape("{{random:a,b}} {{// note}}"))
    template = make_environment([], renderer.inline).get_template(INLINE_NAME)
    assert template.render(renderer.context()) == "{{random:a,b}} {{// note}}"


def test_a_buddy_imported_before_keeps_its_prompt() -> None:
    # Earlier imports escaped every macro but {{char}}/{{user}}: it still renders literally.
    old = "{{ buddy.title }} says {{ '{{' }}random:a,b}} and {{ '{{' }}// note}}."
    assert _renderer(old).render(event="e1") == "Sera says {{random:a,b}} and {{// note}}."


def test_native_names_like_the_macros_keep_their_meaning() -> None:
    # A hand-written template with vars named like macros: nothing of the cards applies.
    source = "{{ random }} {{ pick }} {{ roll }} {{ reverse }} {% raw %}{{random:a,b}}{% endraw %}"
    renderer = _renderer(source, random="r", pick="p", roll="o", reverse="v")
    assert renderer.render(event="e1") == "r p o v {{random:a,b}}"


# ---------------------------------------------------------------- an imported card


MACRO_CARD = _card(
    V2,
    description=(
        "{{char}} feels {{random:calm,wary,bold,shy,glad}} today.\n"
        "Her eyes are {{pick::green::grey::amber}}.{{// the author's note}}"
        "{{hidden_key: glade}}{{comment: shown in a chat app only}}"
    ),
)


def _import(tmp_path: Path, card: dict[str, object]) -> Path:
    source = tmp_path / "card.json"
    source.write_text(json.dumps(card), encoding="utf-8")
    assert main(["import-card", str(source), "--dir", str(tmp_path), "--name", "sera"]) == 0
    return tmp_path / "sera"


def test_an_imported_card_with_macros_exports_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, MACRO_CARD)
    capsys.readouterr()
    assert "card_macro('{{random:calm,wary,bold,shy,glad}}')" in (target / "buddy.yaml").read_text(
        encoding="utf-8"
    )
    assert export_card(target).card == MACRO_CARD


@pytest.mark.anyio
async def test_the_model_receives_the_macros_replaced_per_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The turn's event id reaches the persona: TurnRunner.system(event=…) →
    # placement.system_prompt → PersonaRenderer.render(event=…).
    target = _import(tmp_path, MACRO_CARD)
    capsys.readouterr()
    turns = SENT_KEPT  # the system prompts the runner keeps, with their event ids
    model = TestModel(["Hm."] * turns)
    async with buddy.Agent(buddy.load(target), model) as agent:
        for n in range(turns):
            await agent.run(f"hello {n}")
        conversation = agent.conversation.id
        events = [sent.event for sent in agent.turns.sent[conversation]]
    systems = [request.system for request in model.requests]
    assert len(systems) == len(events) == turns
    moods, eyes = set(), set()
    for event, system in zip(events, systems, strict=True):
        mood = _expand("{{random:calm,wary,bold,shy,glad}}", event)
        eye = _expand("{{pick::green::grey::amber}}", event, stable=conversation)
        assert f"\nSeraphina feels {mood} today.\nHer eyes are {eye}.\n" in system
        assert "{{" not in system and "note" not in system and "chat app" not in system
        moods.add(mood)
        eyes.add(eye)
    assert len(moods) > 1  # a new draw each turn
    assert len(eyes) == 1  # one pick for the whole conversation


def test_buddy_render_shows_the_example_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _import(tmp_path, MACRO_CARD)
    capsys.readouterr()
    blueprint = buddy.load(target)
    mood = _expand("{{random:calm,wary,bold,shy,glad}}", EXAMPLE_EVENT)
    assert f"Seraphina feels {mood} today." in blueprint.persona.render()
    assert main(["render", str(target)]) == 0
    assert f"Seraphina feels {mood} today." in capsys.readouterr().out
