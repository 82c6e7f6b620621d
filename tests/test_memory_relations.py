"""``memory:`` and relation specs: the shipped specs, every rule of a spec file located,
the section's bounds on both sides, lookup and override on the search path, render."""

from __future__ import annotations

from pathlib import Path

import pytest

import buddy
from buddy.capabilities.memory.compile import SHIPPED, shipped_names
from buddy.capabilities.memory.limits import (
    ASKS_MAX,
    BUDGET_CHARS,
    CARD_CHARS,
    RELATIONS_MAX,
    SHARE_BYTES,
    SHARE_ENTRIES,
    WAIT_MS,
)
from buddy.compile.render import render_markdown, view
from tests.conftest import MINIMAL, Write

SHIPPED_NAMES = ["allergy", "debt", "household", "nickname", "preference", "training_goal"]

# A spec that is valid; each case below breaks one rule of it.
SPEC = """\
relation: owes
version: 1
title: 欠
note: 测试用。
risk: R2
slots:
  debtor: { type: party, required: true }
  item: { type: text, required: true, max_chars: 10 }
  quantity: { type: number, required: true }
value: quantity
writers: [debtor]
effect: delta
delta: { allow_negative: false }
admission: assisted
confirmation: explicit
conflict: dispute
examples:
  - say: 我欠你三碗面
    facts: [{ debtor: user, item: 面, quantity: 3 }]
patterns:
  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>面)$'
    slots: { debtor: user }
"""


def _memory(write: Write, section: str, files: dict[str, str] | None = None) -> Path:
    return write({"buddy.yaml": MINIMAL + section, **(files or {})})


def _issues(path: Path) -> list[tuple[str, int, str]]:
    _, issues = buddy.check(path)
    return [(Path(i.file).name, i.line, i.code) for i in issues]


def test_the_shipped_specs_are_the_six_and_each_is_valid(write: Write) -> None:
    assert shipped_names() == SHIPPED_NAMES
    path = _memory(write, f"memory:\n  auto: true\n  relations: [{', '.join(SHIPPED_NAMES)}]\n")
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    assert [r.name for r in memory.relations] == SHIPPED_NAMES
    for relation in memory.relations:
        assert relation.note and relation.examples, relation.name  # each says why, by example
        assert relation.file.parent == SHIPPED.resolve()


def test_the_seed_policies_are_kept(write: Write) -> None:
    path = _memory(write, "memory:\n  relations: [debt, nickname, preference]\n")
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    debt, nickname, preference = memory.relations
    assert (debt.effect, debt.allow_negative, debt.conservation) == ("delta", False, "repayment")
    assert (debt.admission, debt.confirmation, debt.conflict) == ("assisted", "explicit", "dispute")
    assert debt.writers == ("debtor", "creditor") and debt.modalities == ("asserted", "request")
    assert debt.key == ("debtor", "creditor", "item") and debt.value == "quantity"
    assert (nickname.admission, nickname.conflict, nickname.risk) == (
        "auto",
        "last_write_wins",
        "R1",
    )
    assert preference.risk == "R0" and preference.validity_seconds is None


def test_a_time_to_live_is_seconds(write: Write) -> None:
    memory = buddy.load(
        _memory(write, "memory:\n  relations: [household, training_goal]\n")
    ).sections["memory"]
    assert memory is not None
    assert [r.validity_seconds for r in memory.relations] == [180 * 86400, 90 * 86400]


def test_a_valid_project_spec_loads(write: Write) -> None:
    path = _memory(
        write, "memory:\n  relations: [relations/owes.yaml]\n", {"relations/owes.yaml": SPEC}
    )
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    (owes,) = memory.relations
    assert owes.key == ("debtor", "item")  # the required slots but the value
    assert owes.patterns[0][1] == {"debtor": "user"}


# line of the spec → (what replaces it, where each problem is: line and path in the file)
BROKEN: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "value: quantity": ("value: amount", [(10, "value")]),
    "writers: [debtor]": ("writers: [item]", [(11, "writers[0]")]),
    "  quantity: { type: number, required: true }": (
        "  quantity: { type: text, required: true }",
        [(10, "value"), (19, "examples[0].facts[0].quantity")],  # and its example no longer fits
    ),
    "admission: assisted": ("admission: auto", [(15, "confirmation")]),
    "    facts: [{ debtor: user, item: 面, quantity: 3 }]": (
        "    facts: [{ debtor: user, item: 面, quantity: 三 }]",
        [(19, "examples[0].facts[0].quantity")],
    ),
    "  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>面)$'": (
        "  - match: '^我欠你(?P<count>[0-9]+)碗(?P<item>面)$'",
        [(21, "patterns[0].match"), (21, "patterns[0].match")],  # no such slot; quantity unfilled
    ),
    "  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>面)$'\n": (
        "  - match: '^我欠你(?P<quantity>[0-9+碗(?P<item>面)$'\n",
        [(21, "patterns[0].match")],
    ),
    "  item: { type: text, required: true, max_chars: 10 }": (
        "  item: { type: choice, required: true }",
        [(8, "slots.item")],
    ),
    "  debtor: { type: party, required: true }": (
        "  debtor: { type: party, required: true, max_chars: 3 }",
        [(7, "slots.debtor.max_chars")],
    ),
    "risk: R2": ("risk: R9", [(5, "risk")]),
}


@pytest.mark.parametrize("line", list(BROKEN))
def test_each_rule_of_a_spec_is_located_in_its_file(write: Write, line: str) -> None:
    replacement, where = BROKEN[line]
    assert line in SPEC
    path = _memory(
        write,
        "memory:\n  relations: [relations/owes.yaml]\n",
        {"relations/owes.yaml": SPEC.replace(line, replacement)},
    )
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.code) for i in issues] == [("owes.yaml", "relation-spec")] * len(
        where
    )
    assert [(i.line, i.path) for i in issues] == where


def test_a_spec_problem_says_what_is_wrong(write: Write) -> None:
    path = _memory(
        write,
        "memory:\n  relations: [relations/owes.yaml]\n",
        {"relations/owes.yaml": SPEC.replace("effect: delta", "effect: set")},
    )
    _, issues = buddy.check(path)
    assert [i.message for i in issues] == ["`delta` goes with `effect: delta`"]


def test_an_unknown_relation_suggests_a_shipped_one(write: Write) -> None:
    _, issues = buddy.check(_memory(write, "memory:\n  relations: [prefernce]\n"))
    (issue,) = issues
    assert (issue.line, issue.code) == (6, "relation-not-found")
    assert issue.hint == "did you mean `preference`?"


def test_a_project_spec_of_the_same_name_overrides_the_shipped_one(write: Write) -> None:
    own = SPEC.replace("relation: owes", "relation: debt")
    path = _memory(write, "memory:\n  relations: [debt]\n", {"personas/relations/debt.yaml": own})
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    assert memory.relations[0].file == (path.parent / "personas/relations/debt.yaml").resolve()
    shown = view(buddy.load(path))["memory"]["relations"][0]["file"]
    assert shown == "personas/relations/debt.yaml"


def test_a_relation_declared_twice_is_refused(write: Write) -> None:
    assert _issues(_memory(write, "memory:\n  relations: [debt, debt]\n")) == [
        ("buddy.yaml", 6, "relation-duplicate")
    ]


def test_automatic_memory_needs_a_relation(write: Write) -> None:
    assert _issues(_memory(write, "memory:\n  auto: true\n")) == [
        ("buddy.yaml", 6, "memory-relations")
    ]


def test_the_budget_holds_the_card(write: Write) -> None:
    fits = "memory:\n  card: { max_chars: 800 }\n  budget: { max_chars: 800 }\n"
    assert _issues(_memory(write, fits)) == []
    over = "memory:\n  card: { max_chars: 801 }\n  budget: { max_chars: 800 }\n"
    assert _issues(_memory(write, over)) == [("buddy.yaml", 7, "memory-budget")]


BOUNDS = {
    "card: { max_chars: %d }": CARD_CHARS,
    "budget: { max_chars: %d }": BUDGET_CHARS,
    "wait_ms: %d": WAIT_MS,
    "asks: %d": ASKS_MAX,
    "share: { entries: %d }": SHARE_ENTRIES,
    "share: { bytes: %d }": SHARE_BYTES,
}


@pytest.mark.parametrize("setting", list(BOUNDS))
def test_each_setting_is_bounded_on_both_sides(write: Write, setting: str) -> None:
    _, least, most = BOUNDS[setting]
    card = "  card: { max_chars: 100 }\n" if setting.startswith("budget") else ""
    if setting.startswith("card"):  # the budget must hold the card
        card = f"  budget: {{ max_chars: {BUDGET_CHARS[2]} }}\n"
    for value, ok in ((least - 1, False), (least, True), (most, True), (most + 1, False)):
        path = _memory(write, "memory:\n" + card + f"  {setting % value}\n")
        codes = [c for _, _, c in _issues(path)]
        assert (codes == []) is ok, (setting, value, codes)


def test_the_relations_are_bounded(write: Write) -> None:
    names = [f"relations/r{i}.yaml" for i in range(RELATIONS_MAX + 1)]
    files = {n: SPEC.replace("relation: owes", f"relation: r{i}") for i, n in enumerate(names)}
    at_bound = _memory(write, f"memory:\n  relations: [{', '.join(names[:-1])}]\n", files)
    assert _issues(at_bound) == []
    over = _memory(write, f"memory:\n  relations: [{', '.join(names)}]\n", files)
    assert [c for _, _, c in _issues(over)] == ["length"]


def test_render_shows_the_whole_policy(write: Write) -> None:
    blueprint = buddy.load(_memory(write, "memory:\n  auto: true\n  relations: [debt]\n"))
    shown = render_markdown(blueprint)
    assert "## Memory\n" in shown
    assert "### relation `debt` v1 · 欠账 · R2\n" in shown
    assert '"file": "buddy:specs/debt.yaml"' in shown  # not where the package is installed
    assert "conservation" in shown and "多问一句是打扰" in shown  # the policy and its reason
    assert shown.index("## Memory") < shown.index("## Proactive")


def test_a_buddy_without_memory_renders_no_memory_section(write: Write) -> None:
    blueprint = buddy.load(_memory(write, ""))
    assert blueprint.sections.get("memory") is None and "memory" not in view(blueprint)
    assert "## Memory" not in render_markdown(blueprint)


WORDS = SPEC.replace(
    "patterns:\n  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>面)$'\n",
    "words:\n  food: [面, 米线, 粉]\npatterns:\n  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>{{food}})$'\n",
)


def test_a_pattern_names_a_word_list_and_gets_every_word(write: Write) -> None:
    path = _memory(
        write, "memory:\n  relations: [relations/owes.yaml]\n", {"relations/owes.yaml": WORDS}
    )
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    (owes,) = memory.relations
    # escaped, longest first: the longer word wins over its own prefix
    assert owes.patterns[0][0] == "^我欠你(?P<quantity>[0-9]+)碗(?P<item>(?:米线|粉|面))$"
    from buddy.capabilities.memory.extract import from_patterns

    assert [f.slots["item"] for f in from_patterns(memory, "我欠你2碗米线").facts] == ["米线"]


@pytest.mark.parametrize(
    ("change", "line", "where", "message"),
    [
        (
            ("{{food}}", "{{drink}}"),
            23,
            "patterns[0].match",
            "`{{drink}}` names no list of `words:` (declared: food)",
        ),
        (("  food: [面, 米线, 粉]", "  Food: [面]"), 21, "words.Food", None),
        (("  food: [面, 米线, 粉]", "  food: []"), 21, "words.food", None),
        (("  food: [面, 米线, 粉]", "  food: [米 线]"), 21, "words.food[0]", None),
    ],
)
def test_each_rule_of_the_word_lists_is_located(
    write: Write, change: tuple[str, str], line: int, where: str, message: str | None
) -> None:
    path = _memory(
        write,
        "memory:\n  relations: [relations/owes.yaml]\n",
        {"relations/owes.yaml": WORDS.replace(*change)},
    )
    _, issues = buddy.check(path)
    assert [(i.line, i.path, i.code) for i in issues] == [(line, where, "relation-spec")]
    if message is not None:
        assert issues[0].message == message


def test_a_negative_pattern_takes_the_value_negative(write: Write) -> None:
    spec = SPEC.replace(
        "    slots: { debtor: user }\n", "    slots: { debtor: user }\n    negative: true\n"
    )
    path = _memory(
        write, "memory:\n  relations: [relations/owes.yaml]\n", {"relations/owes.yaml": spec}
    )
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    from buddy.capabilities.memory.extract import from_patterns

    assert [f.slots["quantity"] for f in from_patterns(memory, "我欠你3碗面").facts] == [-3]


def test_negative_is_for_a_delta_relations_value(write: Write) -> None:
    spec = SPEC.replace("effect: delta\ndelta: { allow_negative: false }\n", "").replace(
        "    slots: { debtor: user }\n", "    slots: { debtor: user }\n    negative: true\n"
    )
    spec = spec.replace("admission: assisted\nconfirmation: explicit\n", "")
    path = _memory(
        write, "memory:\n  relations: [relations/owes.yaml]\n", {"relations/owes.yaml": spec}
    )
    _, issues = buddy.check(path)
    assert [(i.path, i.code) for i in issues] == [("patterns[0].negative", "relation-spec")]
    assert "value slot must be a group" in issues[0].message


CONTEXT = """\
  - match: '^(?P<item>面)要(?P<quantity>[0-9]+)碗$'
    amends: true
  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>粉)$'
    slots: { debtor: user }
    if_said: '米线店'
  - match: '^我欠你(?P<quantity>[0-9]+)碗(?P<item>饭)$'
    slots: { debtor: user }
    unless_said: '开玩笑'
"""


def test_amends_if_said_and_unless_said(write: Write) -> None:
    path = _memory(
        write,
        "memory:\n  relations: [relations/owes.yaml]\n",
        {"relations/owes.yaml": SPEC + CONTEXT},
    )
    memory = buddy.load(path).sections["memory"]
    assert memory is not None
    from buddy.capabilities.memory.extract import from_patterns

    def taken(text: str) -> list[dict[str, object]]:
        return [dict(f.slots) for f in from_patterns(memory, text).facts]

    # an amends pattern needs no required slot, and takes no fact of its own
    assert taken("面要3碗") == []
    assert taken("我欠你2碗粉") == []  # no 米线店 in the message
    assert taken("我欠你2碗粉，在米线店") == [{"debtor": "user", "item": "粉", "quantity": 2}]
    assert taken("我欠你2碗饭，开玩笑吗") == []  # the message has 开玩笑
    assert taken("我欠你2碗饭") == [{"debtor": "user", "item": "饭", "quantity": 2}]


@pytest.mark.parametrize("field", ["if_said", "unless_said"])
def test_a_said_pattern_is_checked_like_a_match(write: Write, field: str) -> None:
    spec = SPEC + f"    {field}: '(?:a+)+'\n"
    path = _memory(
        write, "memory:\n  relations: [relations/owes.yaml]\n", {"relations/owes.yaml": spec}
    )
    _, issues = buddy.check(path)
    assert [(i.path, i.code) for i in issues] == [(f"patterns[0].{field}", "relation-spec")]
