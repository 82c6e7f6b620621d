"""Character Card V2/V3: `buddy import-card` / `buddy export-card`, JSON and PNG, lossless."""

from __future__ import annotations

import base64
import copy
import importlib
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml

import buddy
from buddy.capabilities.lore.limits import CONTENT_CHARS
from buddy.cards import (
    Card,
    CardError,
    card_png,
    convert,
    derive_name,
    export_card,
    import_files,
    minimal_png,
    parse_card,
    read_card,
    slugify,
)
from buddy.cards.png import decode_text, parse_png
from buddy.cli.main import main
from buddy.errors import PngError
from tests.conftest import MINIMAL, REPO
from tests.test_schemas import assert_current_schemas

# ---------------------------------------------------------------- cards used below

V2: dict[str, Any] = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    # A V1 copy at the top level, as many editors write, and a field nobody knows.
    "name": "Seraphina",
    "description": "{{char}} guards the forest.",
    "talkativeness": "0.5",
    "data": {
        "name": "Seraphina",
        "description": "{{char}} guards the forest.\nShe looks after {{user}}.",
        "personality": "kind, caring",
        "scenario": "{{user}} wakes up in <BOT>'s glade.",
        "first_mes": "*smiles* Hello, {{user}}.",
        "mes_example": "<START>\n{{user}}: hi\n{{char}}: hello",
        "creator_notes": "A gentle forest guardian.",
        "system_prompt": "",
        "post_history_instructions": "",
        "alternate_greetings": ["Hi there!", "Welcome back."],
        "character_book": {
            "name": "forest lore",
            "extensions": {"vendor/book": {"flag": True}},
            "entries": [
                {
                    "keys": ["glade"],
                    "content": "The glade is safe.",
                    "extensions": {"vendor/entry": {"depth": 4, "weights": [0.5, 1]}},
                    "enabled": True,
                    "insertion_order": 10,
                    "x_unknown_entry_field": "kept",
                }
            ],
        },
        "tags": ["fantasy", "forest"],
        "creator": "someone",
        "character_version": "1.2",
        "extensions": {
            "talkativeness": "0.5",
            "depth_prompt": {"prompt": "Stay gentle.", "depth": 4, "role": "system"},
            "chub": {"id": 12345, "full_path": "someone/seraphina"},
        },
        "x_unknown_data_field": {"nested": [1, "two", None]},
    },
}

V3: dict[str, Any] = {
    "spec": "chara_card_v3",
    "spec_version": "3.0",
    "data": {
        "name": "Captain Aurelia Vance",
        "nickname": "Aurelia",
        "description": "{{char}} commands the airship *Kestrel*.",
        "personality": "bold",
        "scenario": "",
        "first_mes": "Welcome aboard, {{user}}.",
        "mes_example": "",
        "creator_notes": "",
        "creator_notes_multilingual": {"en": "A sky pirate captain.", "fr": "Une capitaine."},
        "system_prompt": "Write {{char}}'s next reply. {{original}}",
        "post_history_instructions": "Keep replies short.",
        "alternate_greetings": [],
        "group_only_greetings": ["Crew, gather round!"],
        "tags": ["adventure"],
        "creator": "someone",
        "character_version": "3",
        "extensions": {"risuai": {"utilityBot": False, "customScripts": []}},
        "assets": [
            {"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"},
            {
                "type": "emotion",
                "uri": "embeded://assets/emotion/happy.png",
                "name": "happy",
                "ext": "png",
            },
            {"type": "x_vendor", "uri": "https://example.com/a.webp", "name": "bg", "ext": "webp"},
        ],
        "source": ["https://example.com/aurelia"],
        "creation_date": 1700000000,
        "modification_date": 1710000000,
        "character_book": {
            "extensions": {},
            "entries": [
                {
                    "keys": ["Kestrel"],
                    "content": "@@depth 4\nThe Kestrel is fast.",
                    "extensions": {},
                    "enabled": True,
                    "insertion_order": 0,
                    "use_regex": False,
                    "constant": False,
                }
            ],
        },
    },
}


def _card(base: dict[str, Any], **data: Any) -> dict[str, Any]:
    card = copy.deepcopy(base)
    card["data"].update(data)
    return card


def _write_json(path: Path, card: Any) -> Path:
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------- PNGs by hand


def _raw_chunk(chunk_type: bytes, data: bytes, *, crc: int | None = None) -> bytes:
    value = zlib.crc32(chunk_type + data) if crc is None else crc
    return struct.pack(">I", len(data)) + chunk_type + data + struct.pack(">I", value)


def _raw_png(*chunks: bytes) -> bytes:
    """A 2×1 grey PNG built byte by byte, with ``chunks`` after IHDR."""
    ihdr = _raw_chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 0, 0, 0, 0))
    idat = _raw_chunk(b"IDAT", zlib.compress(b"\x00\x80\xff"))
    return b"\x89PNG\r\n\x1a\n" + ihdr + b"".join(chunks) + idat + _raw_chunk(b"IEND", b"")


def _b64(card: Any) -> bytes:
    return base64.b64encode(json.dumps(card).encode("utf-8"))


def _text_chunks(png: bytes) -> dict[str, str]:
    return dict(decode_text(c) for c in parse_png(png) if c.type in (b"tEXt", b"zTXt", b"iTXt"))


def _chunk_card(png: bytes, keyword: str) -> Any:
    return json.loads(base64.b64decode(_text_chunks(png)[keyword]))


# ---------------------------------------------------------------- import


def test_import_v2_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_json(tmp_path / "sera.json", V2)
    code, out, err = _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)
    assert code == 0, err
    target = tmp_path / "seraphina"
    assert sorted(p.name for p in target.iterdir()) == [
        ".buddy",  # no project root above: the buddy's own folder keeps the schemas
        ".gitignore",
        "buddy.yaml",
        "card.json",
        "lore",
        "tests",
    ]
    assert f"created {target.as_posix()}/buddy.yaml" in out
    assert f"created {target.as_posix()}/tests/smoke.yaml" in out
    assert f"created {target.as_posix()}/.gitignore" in out
    assert "name `seraphina` from the card's name" in out
    assert json.loads((target / "card.json").read_text(encoding="utf-8")) == V2

    blueprint, issues = buddy.check(target)
    assert issues == []
    assert blueprint is not None
    assert blueprint.name == "seraphina"
    assert blueprint.title == "Seraphina"
    assert blueprint.description == "A gentle forest guardian."
    assert blueprint.model.ref == "offline:offline"
    assert buddy.load(target, profile="ci").model.ref == "test:test"
    assert blueprint.persona.variables == {
        "user": "the user",
        "first_mes": "*smiles* Hello, {{user}}.",
        "alternate_greetings": ["Hi there!", "Welcome back."],
    }
    prompt = blueprint.persona.render(kind="private")
    assert prompt.startswith("You are Seraphina. Stay in character")
    assert "## Seraphina\nSeraphina guards the forest.\nShe looks after the user.\n" in prompt
    assert "## Personality\nkind, caring\n" in prompt
    assert "the user wakes up in Seraphina's glade." in prompt
    assert "<START>\nthe user: hi\nSeraphina: hello" in prompt
    assert "{#" not in prompt
    assert "The glade is safe." not in prompt  # the lorebook stays in card.json
    assert blueprint.persona.render(kind="group") == prompt
    assert main(["validate", str(target)]) == 0


def test_import_in_a_project_points_editors_at_current_schemas(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    source = _write_json(project / "sera.json", V2)
    code, out, err = _run(["import-card", str(source), "--dir", "manifests"], capsys)
    assert code == 0, err
    target = project / "manifests" / "seraphina"
    first = (target / "buddy.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../../.buddy/buddy.schema.json"
    assert_current_schemas(
        target / "buddy.yaml", target / "tests" / "smoke.yaml", project / ".buddy"
    )
    assert "created .buddy/buddy.schema.json\ncreated .buddy/scenario.schema.json\n" in out


def test_an_imported_buddy_passes_its_smoke_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project with the committed schemas, as this repository has.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "scenario.schema.json").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BUDDY_MODEL", raising=False)
    monkeypatch.delenv("BUDDY_PROFILE", raising=False)
    source = _write_json(tmp_path / "sera.json", V2)
    code, out, err = _run(["import-card", str(source), "--dir", "manifests"], capsys)
    assert code == 0, err
    assert "buddy test manifests/seraphina" in out
    smoke = (tmp_path / "manifests" / "seraphina" / "tests" / "smoke.yaml").read_text("utf-8")
    assert smoke.startswith("# yaml-language-server: $schema=../../../docs/scenario.schema.json\n")
    assert "# `buddy test seraphina` runs this offline" in smoke
    code, out, err = _run(["test", "manifests/seraphina"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "PASS 打个招呼 (manifests/seraphina/tests/smoke.yaml:5)",
        "1 passed, 0 failed",
    ]


def test_import_v3_json(tmp_path: Path) -> None:
    source = _write_json(tmp_path / "aurelia.json", V3)
    assert main(["import-card", str(source), "--dir", str(tmp_path)]) == 0
    target = tmp_path / "captain-aurelia-vance"
    assert json.loads((target / "card.json").read_text(encoding="utf-8")) == V3
    blueprint = buddy.load(target)
    assert blueprint.title == "Aurelia"  # V3: {{char}} is the nickname
    assert blueprint.description == "A sky pirate captain."  # creator_notes_multilingual.en
    assert blueprint.persona.variables["group_only_greetings"] == ["Crew, gather round!"]
    assert "alternate_greetings" not in blueprint.persona.variables
    prompt = blueprint.persona.render()
    # The card's system prompt replaces the intro; unknown macros stay as written.
    assert prompt.startswith("Write Aurelia's next reply. {{original}}\n\n## Aurelia\n")
    assert "Aurelia commands the airship *Kestrel*." in prompt
    assert prompt.endswith("## Instructions\nKeep replies short.\n")


def test_import_v2_png_from_the_writer(tmp_path: Path) -> None:
    png = tmp_path / "sera.png"
    png.write_bytes(card_png(V2, 2, _raw_png(_raw_chunk(b"tEXt", b"Software\x00paint"))))
    assert set(_text_chunks(png.read_bytes())) == {"Software", "chara"}
    assert main(["import-card", str(png), "--dir", str(tmp_path)]) == 0
    target = tmp_path / "seraphina"
    assert json.loads((target / "card.json").read_text(encoding="utf-8")) == V2
    picture = (target / "card.png").read_bytes()
    assert _text_chunks(picture) == {"Software": "paint"}  # the picture, without the card
    assert buddy.check(target)[1] == []


def test_import_v3_png_prefers_ccv3(tmp_path: Path) -> None:
    png = tmp_path / "aurelia.png"
    png.write_bytes(card_png(V3, 3))
    chunks = _text_chunks(png.read_bytes())
    assert set(chunks) == {"chara", "ccv3"}
    assert _chunk_card(png.read_bytes(), "ccv3") == V3
    assert _chunk_card(png.read_bytes(), "chara") == convert(V3, 2)  # the V2 copy
    card = read_card(png)
    assert card.version == 3
    assert card.raw == V3


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param(_raw_chunk(b"tEXt", b"chara\x00" + _b64(V2)), id="tEXt"),
        pytest.param(_raw_chunk(b"tEXt", b"Chara\x00" + _b64(V2)), id="keyword-case"),
        pytest.param(_raw_chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(_b64(V2))), id="zTXt"),
        pytest.param(
            _raw_chunk(b"iTXt", b"chara\x00\x01\x00en\x00\x00" + zlib.compress(_b64(V2))),
            id="iTXt-compressed",
        ),
        pytest.param(
            _raw_chunk(b"iTXt", b"chara\x00\x00\x00\x00\x00" + json.dumps(V2).encode()),
            id="iTXt-plain-json",
        ),
    ],
)
def test_import_a_hand_built_png(tmp_path: Path, chunk: bytes) -> None:
    png = tmp_path / "hand.png"
    png.write_bytes(_raw_png(_raw_chunk(b"tEXt", b"Comment\x00hi"), chunk))
    card = read_card(png)
    assert card.version == 2
    assert card.raw == V2
    assert card.image is not None
    assert _text_chunks(card.image) == {"Comment": "hi"}
    files = import_files(card, "hand", tmp_path / "hand")
    assert set(files) == {"buddy.yaml", "card.json", "card.png", "lore/card.yaml"}


def test_hand_built_png_with_both_chunks_uses_ccv3(tmp_path: Path) -> None:
    png = tmp_path / "both.png"
    older = _card(V2, name="Old Name")
    png.write_bytes(
        _raw_png(
            _raw_chunk(b"tEXt", b"chara\x00" + _b64(older)),
            _raw_chunk(b"tEXt", b"ccv3\x00" + _b64(V3)),
        )
    )
    assert read_card(png).raw == V3
    assert main(["import-card", str(png), "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "captain-aurelia-vance" / "card.png").is_file()


def test_the_minimal_png_is_valid() -> None:
    chunks = parse_png(minimal_png())
    assert [c.type for c in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert all(c.crc_ok for c in chunks)
    assert struct.unpack(">II", chunks[0].data[:8]) == (1, 1)
    assert zlib.decompress(chunks[1].data) == b"\x00" * 5  # filter byte + one RGBA pixel


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("original", [V2, V3], ids=["v2", "v3"])
@pytest.mark.parametrize("fmt", ["json", "png"])
def test_round_trip_is_lossless(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], original: dict[str, Any], fmt: str
) -> None:
    version: Literal[2, 3] = 3 if original is V3 else 2
    first = tmp_path / f"card.{fmt}"
    if fmt == "json":
        _write_json(first, original)
    else:
        first.write_bytes(card_png(original, version, _raw_png()))
    assert main(["import-card", str(first), "--dir", str(tmp_path), "--name", "one"]) == 0
    exported = tmp_path / f"exported.{fmt}"
    code, out, _ = _run(["export-card", str(tmp_path / "one"), "--out", str(exported)], capsys)
    assert code == 0
    assert "card.json as it was (nothing in the buddy changed)" in out
    assert read_card(exported).raw == original
    assert main(["import-card", str(exported), "--dir", str(tmp_path), "--name", "two"]) == 0
    again = json.loads((tmp_path / "two" / "card.json").read_text(encoding="utf-8"))
    assert again == original
    one, two = (tmp_path / n / "buddy.yaml" for n in ("one", "two"))
    body = one.read_text(encoding="utf-8").split("\n", 3)[3]  # after the comment header
    assert (
        body.replace("name: one", "name: two") == two.read_text(encoding="utf-8").split("\n", 3)[3]
    )
    if fmt == "png":  # the picture survives too
        assert (tmp_path / "one" / "card.png").read_bytes() == (
            tmp_path / "two" / "card.png"
        ).read_bytes()
        idat = [c.data for c in parse_png(exported.read_bytes()) if c.type == b"IDAT"]
        assert idat == [zlib.compress(b"\x00\x80\xff")]


def test_export_converts_between_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_files_to(tmp_path, V2, "sera")
    out = tmp_path / "v3.png"
    assert main(["export-card", str(tmp_path / "sera"), "--v3", "--out", str(out)]) == 0
    assert (
        "Character Card V3: card.json as it was, converted to V3 (nothing"
        in capsys.readouterr().out
    )
    ccv3 = _chunk_card(out.read_bytes(), "ccv3")
    assert ccv3["spec"] == "chara_card_v3"
    assert ccv3["spec_version"] == "3.0"
    assert ccv3["data"]["group_only_greetings"] == []
    assert ccv3["data"]["extensions"] == V2["data"]["extensions"]
    assert _chunk_card(out.read_bytes(), "chara")["spec"] == "chara_card_v2"
    back = tmp_path / "v2.json"
    assert main(["import-card", str(out), "--dir", str(tmp_path), "--name", "sera-three"]) == 0
    assert main(["export-card", str(tmp_path / "sera-three"), "--v2", "--out", str(back)]) == 0
    card = json.loads(back.read_text(encoding="utf-8"))
    assert card == _card(V2, group_only_greetings=[])


def import_files_to(parent: Path, card: dict[str, Any], name: str) -> Path:
    source = _write_json(parent / f"{name}-source.json", card)
    assert main(["import-card", str(source), "--dir", str(parent), "--name", name]) == 0
    return parent / name


def test_changes_in_the_buddy_go_into_the_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = import_files_to(tmp_path, V2, "sera")
    manifest = target / "buddy.yaml"
    text = manifest.read_text(encoding="utf-8")
    text = text.replace("title: Seraphina", "title: Sera")
    text = text.replace("description: A gentle forest guardian.", "description: Guards forests.")
    text = text.replace("    kind, caring\n", "    kind, caring, brave like {{ buddy.title }}\n")
    text = text.replace(
        "    {# card:scenario -#}\n    ## Scenario\n    {{ user }} wakes up in {{ buddy.title }}'s glade.\n\n",
        "",
    )
    text = text.replace("- Welcome back.", "- Welcome back, {{user}}.")
    manifest.write_text(text, encoding="utf-8")
    assert buddy.check(target)[1] == []
    capsys.readouterr()
    code, out, err = _run(["export-card", str(target), "--out", "-"], capsys)
    assert code == 0
    card = json.loads(out)
    expected = _card(
        V2,
        name="Sera",
        creator_notes="Guards forests.",
        personality="kind, caring, brave like {{char}}",
        scenario="",
        alternate_greetings=["Hi there!", "Welcome back, {{user}}."],
    )
    expected["name"] = "Sera"  # the top-level V1 copy follows the field it agreed with
    assert card == expected
    assert err == (
        "Character Card V2: card.json, with name, creator_notes, personality, scenario, "
        "alternate_greetings from the buddy\n"
    )


def test_a_prompt_rewritten_from_scratch_becomes_the_description(tmp_path: Path) -> None:
    target = import_files_to(tmp_path, V3, "aurelia")
    manifest = target / "buddy.yaml"
    text = manifest.read_text(encoding="utf-8")
    start = text.index("  prompt: |")
    end = text.index("  vars:")
    text = (
        text[:start] + "  prompt: |\n    你是{{ buddy.title }}，和{{ user }}聊天。\n" + text[end:]
    )
    manifest.write_text(text, encoding="utf-8")
    card = export_card(target).card
    data = card["data"]
    assert data["description"] == "你是{{char}}，和{{user}}聊天。"
    for field in ("personality", "system_prompt", "post_history_instructions"):
        assert data[field] == ""
    assert data["assets"] == V3["data"]["assets"]
    assert data["extensions"] == V3["data"]["extensions"]
    assert data["character_book"] == V3["data"]["character_book"]


def test_export_without_a_card_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pal").mkdir()
    (project / "pal" / "buddy.yaml").write_text(
        "name: pal\n"
        "title: 阿茶\n"
        "description: 爱喝茶的搭子。\n"
        "model: test\n"
        "persona:\n"
        "  prompt: |\n"
        "    你是{{ buddy.title }}。{% if conversation.kind == 'group' %}少说话。{% endif %}\n"
        "    今天是 {{ now.strftime('%Y-%m-%d') }}。\n"
        "  vars:\n"
        "    first_mes: 你好！\n",
        encoding="utf-8",
    )
    code, out, err = _run(["export-card", str(project / "pal"), "--out", "-"], capsys)
    assert code == 0
    assert "differs between private and group" in err
    assert "made from the buddy (it has no card.json)" in err
    card = json.loads(out)
    assert card["spec"] == "chara_card_v2"
    assert card["data"]["name"] == "阿茶"
    assert card["data"]["creator_notes"] == "爱喝茶的搭子。"
    assert card["data"]["description"] == "你是{{char}}。\n今天是 2026-01-05。"
    assert card["data"]["first_mes"] == "你好！"
    assert card["data"]["extensions"] == {}
    # … and it imports back into a buddy that renders the same prompt.
    path = project / "pal.json"
    path.write_text(out, encoding="utf-8")
    assert main(["import-card", str(path), "--dir", str(project), "--name", "pal-two"]) == 0
    blueprint = buddy.load(project / "pal-two")
    assert blueprint.persona.variables["user"] == "对方"
    assert "你是阿茶。\n今天是 2026-01-05。" in blueprint.persona.render()
    assert blueprint.persona.render().startswith("你是阿茶。始终保持这个角色")


def test_export_an_example_buddy_with_a_shared_template(tmp_path: Path) -> None:
    exported = export_card(REPO / "manifests" / "aunt-tu", 3)
    assert exported.card["spec"] == "chara_card_v3"
    assert exported.card["data"]["name"] == "小涂阿姨"
    assert "{{char}}" in exported.card["data"]["description"]
    png = card_png(exported.card, 3)
    assert _chunk_card(png, "ccv3") == exported.card


# ---------------------------------------------------------------- macros and escaping


def test_macros_map_and_other_jinja_renders_literally(tmp_path: Path) -> None:
    """``{{char}}``/``{{user}}`` map, a card macro acts (``{{random:…}}`` draws, here with
    the example seed: tests/test_card_macros.py), and every other brace prints as written."""
    tricky = (
        "{{char}} and {{ USER }} and {{Char}}. <USER> meets <bot>.\n"
        "A stray {% raw %} and {%- endraw %} and {# not a comment #} and {{#if x}}.\n"
        "Literal {{ buddy.title }} and {{ user }} and {{random:a,b}} and {{{char}}}.\n"
        "{# card:personality -#} is text too; so is }} and %} and {{'{{'}}."
    )
    card = _card(V2, description=tricky, personality="{% endraw %}{{ 1/0 }}")
    target = import_files_to(tmp_path, card, "tricky")
    blueprint, issues = buddy.check(target)
    assert issues == []
    assert blueprint is not None
    prompt = blueprint.persona.render()
    assert (
        "Seraphina and the user and Seraphina. the user meets Seraphina.\n"
        "A stray {% raw %} and {%- endraw %} and {# not a comment #} and {{#if x}}.\n"
        "Literal {{ buddy.title }} and the user and a and {{{char}}}.\n"
        "{# card:personality -#} is text too; so is }} and %} and {{'{{'}}."
    ) in prompt
    assert "## Personality\n{% endraw %}{{ 1/0 }}\n" in prompt
    # Unchanged, it exports exactly as imported; edited, the macros come back.
    assert export_card(target).card == card
    manifest = target / "buddy.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("Literal ", "Literally "), encoding="utf-8"
    )
    description = export_card(target).card["data"]["description"]
    assert description == (
        "{{char}} and {{user}} and {{char}}. {{user}} meets {{char}}.\n"
        "A stray {% raw %} and {%- endraw %} and {# not a comment #} and {{#if x}}.\n"
        "Literally {{ buddy.title }} and {{user}} and {{random:a,b}} and {{{char}}}.\n"
        "{# card:personality -#} is text too; so is }} and %} and {{'{{'}}."
    )


def test_a_title_with_braces_is_data(tmp_path: Path) -> None:
    card = _card(V2, name="{{evil}} #1: yes")
    target = import_files_to(tmp_path, card, "evil")
    blueprint = buddy.load(target)
    assert blueprint.title == "{{evil}} #1: yes"
    assert blueprint.persona.render().startswith("You are {{evil}} #1: yes.")
    assert export_card(target).card == card


def test_awkward_text_survives_yaml(tmp_path: Path) -> None:
    odd = "  leading spaces\ttab\r\nwindows line\x07bell\u2028separator \ntrailing \n\n"
    card = _card(V2, description=odd, first_mes=odd, personality="yes", scenario="0o17")
    target = import_files_to(tmp_path, card, "odd")
    blueprint = buddy.load(target)
    assert blueprint.persona.variables["first_mes"] == odd  # vars keep the exact text
    assert export_card(target).card == card


def test_a_chinese_card_gets_chinese_words_and_needs_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = _card(
        V2,
        name="小明",
        description="{{char}}是{{user}}的同学，喜欢打篮球。",
        personality="开朗",
        first_mes="嗨！",
    )
    source = _write_json(tmp_path / "小明.json", card)
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)
    assert code == 2
    assert "give one with --name" in err
    assert not any(p.is_dir() for p in tmp_path.iterdir())
    code, _, _ = _run(
        ["import-card", str(source), "--dir", str(tmp_path), "--name", "xiaoming"], capsys
    )
    assert code == 0
    blueprint = buddy.load(tmp_path / "xiaoming")
    assert blueprint.title == "小明"
    prompt = blueprint.persona.render()
    assert prompt.startswith("你是小明。始终保持这个角色：按下面的设定，以小明的身份和对方聊天。")
    assert "## 小明\n小明是对方的同学，喜欢打篮球。\n\n## 性格\n开朗\n" in prompt


@pytest.mark.parametrize(
    ("text", "made"),
    [
        ("Seraphina", "seraphina"),
        ("Café Noir", "cafe-noir"),
        ("Straße 9", "strasse-9"),
        ("Zoë & Łukasz", "zoe-lukasz"),
        ("小明", ""),
        ("初音ミク Miku", "miku"),
        ("小明 X", ""),
        ("---", ""),
        ("x" * 80, "x" * 63),
    ],
)
def test_slugify(text: str, made: str) -> None:
    assert slugify(text) == made


def test_the_name_falls_back_to_the_file_name() -> None:
    card = Card(_card(V2, name="小明"), 2, "xiaoming.json")
    assert derive_name(card, "xiaoming") == ("xiaoming", "the file name")
    assert derive_name(card, "小明") == ("", "")


def test_long_text_is_cut_to_the_limits(tmp_path: Path) -> None:
    card = _card(V2, name="N" * 150, creator_notes="word " * 400)
    target = import_files_to(tmp_path, card, "long")
    blueprint = buddy.load(target)
    assert len(blueprint.title) == 100
    assert blueprint.title.endswith("…")
    assert len(blueprint.description) <= 1000
    assert export_card(target).card == card


# ---------------------------------------------------------------- invalid cards


def _problem(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(CardError) as caught:
        read_card(path)
    assert caught.value.file == str(path)
    return str(caught.value)


def test_not_a_png(tmp_path: Path) -> None:
    message = _problem(tmp_path, "card.png", b'{"spec": "chara_card_v2"}')
    assert message == (
        f"{tmp_path / 'card.png'}: not a PNG file: it does not start with the PNG signature; "
        "cards are .json files or PNG images"
    )
    assert "(it looks like a WebP image)" in _problem(
        tmp_path, "card.webp", b"RIFF\x00\x00\x00\x00WEBPVP8 "
    )
    assert "(it looks like a zip archive (a .charx card?))" in _problem(
        tmp_path, "card.charx", b"PK\x03\x04rest"
    )


def test_png_without_the_chunk(tmp_path: Path) -> None:
    message = _problem(tmp_path, "plain.png", _raw_png(_raw_chunk(b"tEXt", b"Software\x00paint")))
    assert message.endswith(
        "no character card in this PNG: no `chara` or `ccv3` text chunk (its text chunks: Software)"
    )
    assert "(it has no text chunks)" in _problem(tmp_path, "bare.png", minimal_png())


def test_bad_base64(tmp_path: Path) -> None:
    message = _problem(
        tmp_path, "b64.png", _raw_png(_raw_chunk(b"tEXt", b"chara\x00not base64 at all!"))
    )
    assert ": the `chara` chunk: not valid base64 (" in message


def test_bad_json(tmp_path: Path) -> None:
    message = _problem(tmp_path, "bad.json", b'{"spec": "chara_card_v2",\n "data": {,}}')
    assert message == (
        f"{tmp_path / 'bad.json'}: not valid JSON: Expecting property name enclosed in "
        "double quotes (line 2, column 11)"
    )
    chunk = _raw_chunk(b"tEXt", b"ccv3\x00" + base64.b64encode(b"{oops"))
    message = _problem(tmp_path, "bad.png", _raw_png(chunk))
    assert ": the `ccv3` chunk: not valid JSON: " in message
    assert "not UTF-8 text" in _problem(tmp_path, "latin.json", b'{"a": "\xff"}')
    assert "empty: no card" in _problem(tmp_path, "empty.json", b"  \n")


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        ({"spec": "chara_card_v9", "data": {}}, "unknown `spec` 'chara_card_v9'"),
        ({"spec": "lorebook_v3", "data": {}}, "this is a lorebook, not a character card"),
        ({"name": "Old", "first_mes": "hi"}, "this looks like a Character Card V1"),
        ({"hello": "world"}, "no `spec`: not a character card"),
        ([1, 2], "the top level is a list, not a card object"),
        ({"spec": "chara_card_v2"}, "no `data` object"),
        ({"spec": "chara_card_v2", "data": []}, "data: expected an object, got a list"),
        ({"spec": "chara_card_v2", "data": {"name": " "}}, "data.name: empty"),
        ({"spec": "chara_card_v2", "data": {}}, "data.name: missing"),
    ],
)
def test_wrong_spec_and_shape(tmp_path: Path, card: Any, expected: str) -> None:
    assert expected in _problem(tmp_path, "x.json", json.dumps(card).encode())


def test_every_type_problem_is_reported(tmp_path: Path) -> None:
    card = _card(
        V3,
        tags=["ok", 3],
        personality=None,  # null reads as absent
        first_mes=["not", "text"],
        extensions=[],
        assets=[{"type": "icon", "uri": 5, "name": "main"}],
        creation_date="yesterday",
        creator_notes_multilingual={"en": 1},
        character_book={"entries": [{"keys": "glade", "content": "x"}]},
    )
    message = _problem(tmp_path, "types.json", json.dumps(card).encode())
    shown = str(tmp_path / "types.json")
    assert message.splitlines() == [
        f"{shown}: data.first_mes: expected a string, got a list",
        f"{shown}: data.tags[1]: expected a string, got a number",
        f"{shown}: data.creation_date: expected a number, got a string",
        f"{shown}: data.extensions: expected an object, got a list",
        f"{shown}: data.creator_notes_multilingual.en: expected a string, got a number",
        f"{shown}: data.character_book.entries[0].keys: expected a list, got a string",
        f"{shown}: data.assets[0].uri: expected a string, got a number",
        f"{shown}: data.assets[0]: no `ext` (an asset needs type, uri, name and ext)",
    ]


def test_broken_pngs(tmp_path: Path) -> None:
    good = _raw_png(_raw_chunk(b"tEXt", b"chara\x00" + _b64(V2)))
    assert "truncated PNG" in _problem(tmp_path, "cut.png", good[:60])
    bad_crc = _raw_png(_raw_chunk(b"tEXt", b"chara\x00" + _b64(V2), crc=1))
    assert "the `chara` chunk at byte 33 has a bad CRC" in _problem(tmp_path, "crc.png", bad_crc)
    with pytest.raises(PngError, match="the first chunk is IEND, not IHDR"):
        parse_png(b"\x89PNG\r\n\x1a\n" + _raw_chunk(b"IEND", b""))


def test_warnings_do_not_stop_an_import(tmp_path: Path) -> None:
    newer = dict(V3, spec_version="3.1")
    card = parse_card(json.dumps(newer).encode(), "newer.json")
    assert card.warnings == (
        "`spec_version` 3.1 is newer than 3.0; fields this version does not know are kept "
        "but not used",
    )
    mislabelled = _raw_png(_raw_chunk(b"tEXt", b"ccv3\x00" + _b64(V2)))
    card = parse_card(mislabelled, "mislabelled.png")
    assert (card.version, card.raw) == (2, V2)
    assert card.warnings == ("the `ccv3` chunk holds a V2 card; read as V2",)


def test_a_persona_that_fails_with_the_card_macros(tmp_path: Path) -> None:
    target = import_files_to(tmp_path, V2, "sera")
    manifest = target / "buddy.yaml"
    text = manifest.read_text(encoding="utf-8")
    # Fine with the title "Seraphina", a division by zero with the text "{{char}}".
    text = text.replace(
        "    kind, caring\n", "    kind, caring {{ 10 // (buddy.title|length - 8) }}\n"
    )
    manifest.write_text(text, encoding="utf-8")
    assert buddy.check(target)[1] == []
    with pytest.raises(CardError, match="cannot render the persona with the card macros"):
        export_card(target)


# ---------------------------------------------------------------- command line


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_json(tmp_path / "sera.json", V2)
    bad = _write_json(tmp_path / "bad.json", {"spec": "nope"})
    assert _run(["import-card", str(tmp_path / "missing.json")], capsys)[0] == 2
    code, _, err = _run(["import-card", str(bad), "--dir", str(tmp_path)], capsys)
    assert code == 1
    assert err == (
        f"buddy import-card: {bad}: unknown `spec` 'nope': expected chara_card_v2 or "
        "chara_card_v3\n"
    )
    assert _run(["import-card", str(source), "--name", "Not A Slug"], capsys)[0] == 2
    assert _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)[0] == 0
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path)], capsys)
    assert code == 2
    assert "already exists" in err

    buddy_dir = str(tmp_path / "seraphina")
    assert _run(["export-card", str(tmp_path / "nowhere")], capsys)[0] == 2
    assert _run(["export-card", buddy_dir, "--format", "png", "--out", "-"], capsys)[0] == 2
    assert _run(["export-card", buddy_dir, "--format", "json", "--image", "x.png"], capsys)[0] == 2
    assert _run(["export-card", buddy_dir, "--image", "missing.png"], capsys)[0] == 2
    code, _, err = _run(
        ["export-card", buddy_dir, "--format", "png", "--image", str(source), "--out", "x.png"],
        capsys,
    )
    assert code == 1
    assert "not a PNG file" in err
    with pytest.raises(SystemExit) as caught:
        main(["export-card", buddy_dir, "--v2", "--v3"])
    assert caught.value.code == 2
    capsys.readouterr()

    (tmp_path / "seraphina" / "card.json").write_text("{}", encoding="utf-8")
    code, _, err = _run(["export-card", buddy_dir], capsys)
    assert code == 1
    assert "card.json: no `spec`" in err
    (tmp_path / "seraphina" / "buddy.yaml").write_text("name: Bad\n", encoding="utf-8")
    assert _run(["export-card", buddy_dir], capsys)[0] == 1


def test_cli_default_output_and_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write_json(tmp_path / "sera.json", V2)
    assert main(["import-card", "sera.json"]) == 0
    capsys.readouterr()
    code, out, _ = _run(["export-card", "seraphina"], capsys)
    assert code == 0
    assert out == (
        "wrote seraphina.json — Character Card V2: card.json as it was (nothing in the buddy "
        "changed)\n"
    )
    assert json.loads(Path("seraphina.json").read_text(encoding="utf-8")) == V2
    Path("picture.png").write_bytes(_raw_png())
    code, out, _ = _run(["export-card", "seraphina", "--image", "picture.png"], capsys)
    assert code == 0
    assert out.startswith("wrote seraphina.png — Character Card V2")
    png = Path("seraphina.png").read_bytes()
    assert _chunk_card(png, "chara") == V2
    assert [c.data for c in parse_png(png) if c.type == b"IDAT"] == [zlib.compress(b"\x00\x80\xff")]


def test_the_card_code_stays_out_of_help_and_validate(project: Path) -> None:
    (project / "buddy.yaml").write_text(MINIMAL, encoding="utf-8")
    for argv in (["--help"], ["validate", str(project)]):
        code = (
            "import sys\nfrom buddy.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('buddy.cards', 'buddy.cli.cards'))))"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
        )
        assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "module",
    [
        "buddy.cards",
        "buddy.cards.png",
        "buddy.cards.spec",
        "buddy.cards.files",
        "buddy.cards.prompt",
        "buddy.cards.mapping",
        "buddy.cards.jsregex",
        "buddy.cards.decorators",
        "buddy.cards.lore",
        "buddy.cards.lore_fields",
        "buddy.cards.lore_export",
        "buddy.cards.lorefile",
        "buddy.cli.cards",
    ],
)
def test_all_names_exist(module: str) -> None:
    loaded = importlib.import_module(module)
    for member in loaded.__all__:
        assert hasattr(loaded, member), f"{module}.{member}"


# ---------------------------------------------------------------- the lorebook as lore


def _book(tmp_path: Path, original: dict[str, Any], name: str = "lb") -> Path:
    source = _write_json(tmp_path / f"{name}.json", original)
    assert main(["import-card", str(source), "--dir", str(tmp_path), "--name", name]) == 0
    return tmp_path / name


def _exported(tmp_path: Path, buddy_dir: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    out = tmp_path / "out.json"
    code, _, err = _run(["export-card", str(buddy_dir), "--out", str(out)], capsys)
    assert code == 0, err
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_lorebook_becomes_a_lore_book(tmp_path: Path) -> None:
    target = _book(tmp_path, V2)
    lore = yaml.safe_load((target / "lore" / "card.yaml").read_text(encoding="utf-8"))
    # The book settings are SillyTavern's shipped ones (default/content/settings.json),
    # written out; the fields with no place here stay in `card:`.
    assert lore == {
        "title": "forest lore",
        "scan": 2,
        "scan_replies": True,
        "scan_names": True,
        "case_sensitive": False,
        "whole_words": True,
        "recursion": 10,
        "counting": "messages",
        "group_scoring": False,
        "macros": True,
        "card": {"extensions": {"vendor/book": {"flag": True}}},
        "entries": [
            {
                "name": "条目 1",
                "content": "The glade is safe.",
                "keys": ["glade"],
                "order": 10,
                "priority": 10,
                "card": {
                    "x_unknown_entry_field": "kept",
                    "extensions": {"vendor/entry": {"depth": 4, "weights": [0.5, 1]}},
                },
            }
        ],
    }
    blueprint = buddy.load(target)
    assert [e.id for e in blueprint.sections["lore"].entries] == ["card/条目 1"]
    assert "lore: lore" in (target / "buddy.yaml").read_text(encoding="utf-8")


LOREBOOK: dict[str, Any] = {
    "name": "world",
    "scan_depth": 3,
    "extensions": {"vendor/book": 1},
    "entries": [
        {
            "keys": ["/灵.?兽/"],
            "content": "后山有白鹤。",
            "use_regex": True,
            "name": "灵兽",
            "extensions": {"sticky": 2, "cooldown": 3, "vendor": "x"},
            "enabled": True,
            "insertion_order": 5,
            "id": 7,
            "comment": "note",
            "position": "after_char",
        },
        {
            "keys": ["鹤"],
            "secondary_keys": ["喂"],
            "selective": True,
            "content": "白鹤爱吃鱼。",
            "constant": False,
            "priority": 9,
            "extensions": {},
            "enabled": True,
            "insertion_order": 6,
        },
        {
            "keys": [],
            "content": "门规：不许御剑。",
            "constant": True,
            "extensions": {},
            "enabled": False,
            "insertion_order": 0,
            "case_sensitive": True,
        },
        {"keys": ["空"], "content": "", "extensions": {}, "enabled": True, "insertion_order": 9},
    ],
}


def test_each_lorebook_field_maps_and_the_round_trip_is_lossless(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = _card(V2, character_book=LOREBOOK)
    target = _book(tmp_path, original)
    lore = yaml.safe_load((target / "lore" / "card.yaml").read_text(encoding="utf-8"))
    assert lore["scan"] == 3 and lore["title"] == "world"
    regex, also, rule = lore["entries"]  # the empty entry is not imported
    assert regex == {
        "name": "灵兽",
        "content": "后山有白鹤。",
        "patterns": ["(?-i:灵.?兽)"],  # a JavaScript regular expression is case-sensitive
        "order": 5,
        "priority": 5,
        "sticky": 2,
        "cooldown": 3,
        "card": {"use_regex": True, "id": 7, "comment": "note", "extensions": {"vendor": "x"}},
    }
    # `priority` is the order (SillyTavern keeps the highest order first); the card's own
    # `priority` stays in `card:`.
    assert also["also"] == ["喂"] and also["priority"] == 6 and also["keys"] == ["鹤"]
    assert also["card"] == {"priority": 9}
    assert (rule["always"], rule["enabled"], rule["case_sensitive"]) == (True, False, True)
    assert buddy.check(target)[1] == []
    assert _exported(tmp_path, target, capsys) == original


def test_an_edited_lore_book_goes_back_into_the_card_keeping_what_it_does_not_know(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = _card(V2, character_book=LOREBOOK)
    target = _book(tmp_path, original)
    book_file = target / "lore" / "card.yaml"
    lore = yaml.safe_load(book_file.read_text(encoding="utf-8"))
    lore["entries"][0]["content"] = "后山有两只白鹤。"
    del lore["entries"][1]  # 白鹤爱吃鱼 is deleted
    lore["entries"].append({"name": "新", "keys": ["新"], "content": "新条目。"})
    book_file.write_text(yaml.safe_dump(lore, allow_unicode=True), encoding="utf-8")
    book = _exported(tmp_path, target, capsys)["data"]["character_book"]
    first, rule, empty, new = book["entries"]
    assert first["content"] == "后山有两只白鹤。"
    assert (first["id"], first["comment"], first["position"]) == (7, "note", "after_char")
    assert first["extensions"] == {"sticky": 2, "cooldown": 3, "vendor": "x"}
    assert rule == LOREBOOK["entries"][2] and empty == LOREBOOK["entries"][3]
    assert new == {
        "keys": ["新"],
        "content": "新条目。",
        "extensions": {},
        "enabled": True,
        "insertion_order": 100,
        "use_regex": False,
        "comment": "新",  # what SillyTavern shows as the entry's title
        "name": "新",
    }
    assert book["extensions"] == {"vendor/book": 1} and book["scan_depth"] == 3


def test_a_lorebook_entry_that_cannot_be_lore_stops_the_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = {
        "keys": ["x"],
        "content": "字" * (CONTENT_CHARS + 1),
        "extensions": {},
        "enabled": True,
        "insertion_order": 0,
    }
    source = _write_json(tmp_path / "long.json", _card(V2, character_book={"entries": [long]}))
    code, _, err = _run(["import-card", str(source), "--dir", str(tmp_path), "--name", "l"], capsys)
    assert code == 1
    assert "character_book (as lore/card.yaml) entries.0.content" in err
    assert not (tmp_path / "l").exists()
