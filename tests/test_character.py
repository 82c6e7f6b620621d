"""``character:``: the trait files' parameters checked where written (both sides of every
range), the section's forms and bounds, the state's dynamics, and render."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import buddy
from buddy.capabilities.character.compiled import CharacterSpec
from buddy.capabilities.character.limits import NUMBERS, STEP_MAX, TRUST_START, defaults
from buddy.capabilities.character.state import Appraisal, Mood, decayed, felt, quarrel, start
from buddy.compile.persona import BUILT_IN_PACK
from buddy.compile.render import render_markdown, view
from tests.conftest import MINIMAL, Write

DAY = 86400.0
SHARED = sorted((BUILT_IN_PACK / "traits").glob("*.yaml"))


def _buddy(write: Write, section: str, trait: str = "", persona_traits: str = "") -> Path:
    manifest = MINIMAL.rstrip("\n") + "\n"
    if persona_traits:
        manifest += f"  traits: {persona_traits}\n"
    files = {"buddy.yaml": manifest + section}
    if trait:
        files["traits/t.yaml"] = trait
    return write(files)


def _problems(path: Path) -> list[tuple[str, int, str]]:
    _, issues = buddy.check(path)
    return [(Path(i.file).name, i.line, i.code) for i in issues]


def _spec(**parameters: object) -> CharacterSpec:
    return CharacterSpec(
        parameters=defaults() | parameters,
        written=frozenset(parameters),
        step_max=STEP_MAX[0],
        trust_start=TRUST_START[0],
        reconcile_seconds=6 * 3600,
    )


@pytest.mark.parametrize("trait", SHARED, ids=lambda p: p.stem)
def test_every_shared_trait_file_drives_a_character(write: Write, trait: Path) -> None:
    path = _buddy(write, "character: traits/t.yaml\n", trait.read_text(encoding="utf-8"))
    spec = buddy.load(path).sections["character"]
    assert spec.written == frozenset(defaults())  # each sets every parameter


def test_the_persona_traits_drive_it_merged_in_order(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL.rstrip("\n") + "\n  traits: [traits/a.yaml, traits/b.yaml]\n"
            "character: true\n",
            "traits/a.yaml": "anger_sensitivity: 1.2\ntrust_repair: 0.5\n",
            "traits/b.yaml": "anger_sensitivity: 0.4\n",
        }
    )
    spec = buddy.load(path).sections["character"]
    assert (spec.number("anger_sensitivity"), spec.number("trust_repair")) == (0.4, 0.5)
    assert [p.name for p in spec.traits] == ["a.yaml", "b.yaml"]


def test_character_true_without_traits_says_what_it_needs(write: Write) -> None:
    assert _problems(_buddy(write, "character: true\n")) == [("buddy.yaml", 5, "character-traits")]


def test_a_missing_trait_file_is_located_at_its_name(write: Write) -> None:
    path = _buddy(write, "character:\n  traits: traits/none.yaml\n")
    assert _problems(path) == [("buddy.yaml", 6, "trait-not-found")]


@pytest.mark.parametrize("name", list(NUMBERS))
def test_each_number_is_bounded_on_both_sides(write: Write, name: str) -> None:
    _, least, most, _, _ = NUMBERS[name]
    for value, ok in ((least - 0.01, False), (least, True), (most, True), (most + 0.01, False)):
        path = _buddy(write, "character: traits/t.yaml\n", f"{name}: {value}\n")
        expected = [] if ok else [("t.yaml", 1, "character-parameter")]
        assert _problems(path) == expected, (name, value)


def test_a_wrong_or_unknown_parameter_is_located_in_the_trait_file(write: Write) -> None:
    trait = (
        "persona: 傲娇\n"  # texts, lists and mappings are the templates'
        "habits: [嘴硬]\n"
        "anger_sensitivty: 1.3\n"
        "trust_damage: true\n"
        "speak_first: 1\n"
        "intensity: loud\n"
    )
    path = _buddy(write, "character: traits/t.yaml\n", trait)
    _, issues = buddy.check(path)
    assert [(i.line, i.code) for i in issues] == [(n, "character-parameter") for n in (3, 4, 5, 6)]
    assert issues[0].hint == "did you mean `anger_sensitivity`?"
    assert "how much trust one offence costs" in issues[1].message


def test_the_settings_are_bounded(write: Write) -> None:
    trait = "anger_sensitivity: 1.0\n"
    cases = {
        "reconcile_after: 29m": False,
        "reconcile_after: 30m": True,
        "reconcile_after: 7d": True,
        "reconcile_after: 7d1m": False,
        f"step_max: {STEP_MAX[1] - 0.01}": False,
        f"step_max: {STEP_MAX[1]}": True,
        f"step_max: {STEP_MAX[2]}": True,
        f"step_max: {STEP_MAX[2] + 0.01}": False,
        "trust_start: -0.01": False,
        "trust_start: 1.0": True,
        "trust_start: 1.01": False,
    }
    for setting, ok in cases.items():
        path = _buddy(write, f"character:\n  traits: traits/t.yaml\n  {setting}\n", trait)
        assert (_problems(path) == []) is ok, setting


# ---------------------------------------------------------------- the state


def test_anger_and_sadness_halve_every_half_life_and_trust_stays() -> None:
    spec = _spec(anger_half_life_days=0.5, sadness_half_life_days=3.0)
    mood = Mood(anger=0.8, sadness=0.6, trust=0.4, at=0.0)
    later = decayed(mood, spec, 0.5 * DAY)
    assert later.anger == pytest.approx(0.4) and later.trust == 0.4
    assert decayed(mood, spec, 3 * DAY).sadness == pytest.approx(0.3)
    assert decayed(mood, spec, -5.0) == mood  # a clock that went back changes nothing


def test_an_offence_angers_by_the_sensitivity_capped_per_message() -> None:
    mild = felt(
        start(_spec(anger_sensitivity=0.2), 0),
        _spec(anger_sensitivity=0.2),
        Appraisal(offence=1),
        0,
    )
    assert mild.anger == pytest.approx(0.2)
    hot = _spec(anger_sensitivity=3.0)
    capped = felt(start(hot, 0), hot, Appraisal(offence=1), 0)
    assert capped.anger == pytest.approx(STEP_MAX[0])  # one message moves at most step_max
    assert capped.trust == pytest.approx(TRUST_START[0] - STEP_MAX[0])


def test_an_apology_cools_and_repairs_and_wants_a_reason_when_demanded() -> None:
    angry = Mood(anger=0.6, sadness=0.2, trust=0.3, at=0.0)
    plain = replace(_spec(trust_repair=0.4), step_max=1.0)  # no cap in the way
    assert felt(angry, plain, Appraisal(apology=1), 0).anger == pytest.approx(0.2)
    demanding = replace(_spec(trust_repair=0.4, demand_explanation=True), step_max=1.0)
    assert felt(angry, demanding, Appraisal(apology=1), 0).anger == pytest.approx(0.4)
    assert felt(angry, demanding, Appraisal(apology=1, explained=True), 0).anger == pytest.approx(
        0.2
    )
    assert felt(angry, plain, Appraisal(apology=1), 0).trust == pytest.approx(0.3 + 0.1)


def test_the_state_stays_in_the_unit_interval() -> None:
    spec = _spec(anger_sensitivity=3.0, trust_damage=3.0)
    mood = Mood(anger=0.95, sadness=0.0, trust=0.05, at=0.0)
    hit = felt(mood, spec, Appraisal(offence=5, care=-3), 0)  # out-of-range appraisals clamp
    assert (hit.anger, hit.trust) == (1.0, 0.0)
    assert hit.sadness == pytest.approx(0.35)


def test_the_same_words_land_differently_on_each_trait_file(write: Write) -> None:
    def spec_of(name: str) -> CharacterSpec:
        trait = (BUILT_IN_PACK / "traits" / f"{name}.yaml").read_text("utf-8")
        spec: CharacterSpec = buddy.load(
            _buddy(write, "character: traits/t.yaml\n", trait)
        ).sections["character"]
        return spec

    tsundere, gentle = spec_of("tsundere"), spec_of("gentle")
    offence = Appraisal(offence=0.5)
    assert (
        felt(start(tsundere, 0), tsundere, offence, 0).anger
        > felt(start(gentle, 0), gentle, offence, 0).anger
    )
    hurt = Mood(anger=0.3, sadness=0.2, trust=0.3, at=0.0)
    sorry = Appraisal(apology=0.6)
    assert felt(hurt, gentle, sorry, 0).trust > felt(hurt, tsundere, sorry, 0).trust
    assert quarrel(Mood(0.5, 0, 0.5, 0)) and not quarrel(Mood(0.49, 0, 0.5, 0))


def test_render_shows_every_parameter_and_where_it_came_from(write: Write) -> None:
    path = _buddy(write, "character: traits/t.yaml\n", "anger_sensitivity: 1.3\n")
    shown = view(buddy.load(path))["character"]
    assert shown["parameters"]["anger_sensitivity"] == {
        "value": 1.3,
        "from": "trait file",
        "meaning": "multiplier: how much anger one offence raises (1: the appraisal as it is)",
    }
    assert shown["parameters"]["speak_first"]["from"] == "default"
    assert shown["traits"] == ["traits/t.yaml"]
    assert "## Character\n" in render_markdown(buddy.load(path))


def test_a_buddy_without_character_renders_none(write: Write) -> None:
    blueprint = buddy.load(_buddy(write, "", "anger_sensitivity: 1.3\n", "traits/t.yaml"))
    assert "character" not in view(blueprint) and "## Character" not in render_markdown(blueprint)
