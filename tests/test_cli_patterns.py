"""`buddy patterns`: a project measures its own relation specs and appraisal file on its
own labelled file — the table, the wrong facts, the thresholds' exit codes, usage errors,
and the example in docs/cli.md."""

from __future__ import annotations

import re

import pytest

from buddy.cli.main import main
from tests.conftest import MINIMAL, REPO, Write

# A project's own relation (a pattern that takes too much) and its labelled messages.
OWN_SPEC = """\
relation: pet
version: 1
title: 宠物
note: 测试用。
risk: R0
slots:
  subject: { type: party, required: true }
  kind: { type: text, required: true }
value: kind
patterns:
  - match: '^我养了(?:一只)?(?P<kind>[一-龥]{1,4})$'
    slots: { subject: user }
"""
LABELLED = """\
messages:
  - {say: "我养了一只猫", facts: [{pet: {subject: user, kind: 猫}}]}
  - {say: "我养了一只橘猫", facts: [{pet: {subject: user, kind: 橘猫}}]}
  - {say: "我养了一盆花", hard: figurative}
  - {say: "家里有条狗", facts: [{pet: {subject: user, kind: 狗}}]}
  - {say: "对不起", feel: [apology]}
"""


@pytest.fixture
def own(write: Write) -> tuple[str, str]:
    path = write(
        {
            "buddy.yaml": MINIMAL
            + "memory:\n  auto: true\n  relations: [pet]\ncharacter: traits/t.yaml\n",
            "relations/pet.yaml": OWN_SPEC,
            "traits/t.yaml": "name: t\n",
            "labelled.yaml": LABELLED,
        }
    )
    return str(path), str(path.parent / "labelled.yaml")


def test_it_prints_the_figures_and_the_wrong_facts(
    own: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["patterns", *own]) == 0
    out = capsys.readouterr().out
    assert out.startswith("5 messages, 1 of them hard negatives\n")
    assert re.search(r"^pet +R0 +3 +3 +2 +0\.67 +0\.67$", out, re.M), out
    assert re.search(r"^apology +1 +1 +1 +1\.00 +1\.00$", out, re.M), out
    assert "wrong facts kept: 1\n  「我养了一盆花」 pet {subject: user, kind: 一盆花}\n" in out
    assert "facts missed" not in out


def test_a_fact_right_but_for_a_slot_the_label_has_is_marked_incomplete(
    write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    """Still a wrong fact (the figures do not change), but marked: no false memory, only a
    slot left out — where a fact with a slot of another value is not."""
    spec = OWN_SPEC.replace(
        "  kind: { type: text, required: true }\n",
        "  kind: { type: text, required: true }\n  name: { type: text }\n",
    )
    path = write(
        {
            "buddy.yaml": MINIMAL + "memory:\n  auto: true\n  relations: [pet]\n",
            "relations/pet.yaml": spec,
            "labelled.yaml": """\
                messages:
                  - {say: "我养了一只猫", facts: [{pet: {subject: user, kind: 猫, name: 咪咪}}]}
                  - {say: "我养了一只橘猫", facts: [{pet: {subject: user, kind: 猫, name: 橘子}}]}
                  - {say: "我养了一只狗", facts: [{pet: {subject: user, kind: 狗}}]}
                """,
        }
    )
    assert main(["patterns", str(path), str(path.parent / "labelled.yaml")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^pet +R0 +3 +3 +1 +0\.33 +0\.33$", out, re.M), out
    assert (
        "wrong facts kept: 2 (1 of them incomplete: right, without a slot the label has)\n"
        "  「我养了一只猫」 pet {subject: user, kind: 猫} — no name\n"
        "  「我养了一只橘猫」 pet {subject: user, kind: 橘猫}\n"
    ) in out


def test_missed_lists_the_facts_not_found(
    own: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["patterns", *own, "--missed"]) == 0
    assert (
        "facts missed: 1\n  「家里有条狗」 pet {subject: user, kind: 狗}\n"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("options", "code", "reasons"),
    [
        (["--min-precision", "0.66"], 0, []),  # both sides of 0.67
        (["--min-precision", "0.67"], 1, ["relations precision 0.67 is under 0.67"]),
        (["--min-recall", "0.6"], 0, []),
        (["--min-recall", "0.7"], 1, ["relations recall 0.67 is under 0.7"]),
        (["--min-precision", "1"], 1, ["relations precision 0.67 is under 1"]),
    ],
)
def test_it_exits_1_under_a_threshold(
    own: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    code: int,
    reasons: list[str],
) -> None:
    assert main(["patterns", *own, *options]) == code
    err = capsys.readouterr().err
    assert err.splitlines() == [f"buddy patterns: {r}" for r in reasons]


def test_an_r2_fact_from_a_hard_negative_fails_whatever_the_thresholds(
    write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL + "memory:\n  auto: true\n  relations: [debt]\n",
            "labelled.yaml": 'messages:\n  - {say: "我欠你三十块", hard: joke}\n',
        }
    )
    assert main(["patterns", str(path), str(path.parent / "labelled.yaml")]) == 1
    captured = capsys.readouterr()
    assert "R2/R3 facts from hard negatives: 1\n  「我欠你三十块」 debt" in captured.out
    assert captured.err == "buddy patterns: 1 R2/R3 fact(s) taken from hard negatives\n"


@pytest.mark.parametrize(
    ("labelled", "located"),
    [
        ("messages: []\n", "labelled.yaml:1:11"),
        ('messages:\n  - {say: "好", fact: []}\n', "labelled.yaml:2:"),
        ('messages:\n  - {say: "好", feel: [joy]}\n', "labelled.yaml:2:"),
        (
            'messages:\n  - {say: "好", facts: [{pet: {kind: 猫}, nickname: {value: 猫}}]}\n',
            "labelled.yaml:2:",
        ),
    ],
)
def test_a_broken_labelled_file_is_a_usage_error_located_in_it(
    own: tuple[str, str], capsys: pytest.CaptureFixture[str], labelled: str, located: str
) -> None:
    with open(own[1], "w", encoding="utf-8") as file:
        file.write(labelled)
    assert main(["patterns", *own]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and located in captured.err and "labelled-file" in captured.err


def test_other_usage_errors_exit_2(write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = write({"buddy.yaml": MINIMAL, "labelled.yaml": LABELLED})
    labelled = str(manifest.parent / "labelled.yaml")
    assert main(["patterns", str(manifest), labelled]) == 2
    assert "has no patterns to measure" in capsys.readouterr().err
    assert main(["patterns", str(manifest), str(manifest.parent / "nope.yaml")]) == 2
    assert capsys.readouterr().err.endswith("nope.yaml: no such file or directory\n")
    manifest.write_text(MINIMAL + "colour: red\n", encoding="utf-8")
    assert main(["patterns", str(manifest), labelled]) == 2
    assert "unknown key `colour`" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["patterns", str(manifest), labelled, "--min-precision", "1.5"])
    assert exited.value.code == 2
    assert "must be from 0 to 1, not 1.5" in capsys.readouterr().err


def test_the_example_in_docs_cli_md_is_what_it_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    match = re.search(r"^```text\n\$ buddy (patterns [^\n]*)\n(.*?)^```$", doc, re.S | re.M)
    assert match is not None
    monkeypatch.chdir(REPO)
    code = main(match.group(1).split())
    captured = capsys.readouterr()
    assert captured.out + captured.err + f"$ echo $?\n{code}\n" == match.group(2)
