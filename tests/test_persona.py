"""Persona templates: search path, inheritance, context, strictness, sandbox, locations."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import buddy
from buddy.compile import persona
from tests.conftest import MINIMAL, Write

TEMPLATE = MINIMAL.replace("prompt: 你好，我是 {{ buddy.name }}。", "template: {name}")


def _manifest(name: str, extra: str = "") -> str:
    return TEMPLATE.replace("{name}", name) + extra


def _where(path: Path) -> list[tuple[str, int, int, str]]:
    _, issues = buddy.check(path)
    return [(Path(i.file).name, i.line, i.column, i.code) for i in issues]


def test_buddy_directory_shadows_shared_personas(write: Write) -> None:
    path = write(
        {
            "manifests/one/buddy.yaml": _manifest("base.md.j2"),
            "manifests/one/base.md.j2": "local",
            "manifests/personas/base.md.j2": "shared",
        }
    )
    assert buddy.load(path).persona.render() == "local"


def test_every_personas_dir_up_to_the_root(write: Write, project: Path) -> None:
    path = write(
        {
            "a/b/one/buddy.yaml": _manifest("child.md.j2"),
            "a/personas/child.md.j2": "{% extends 'root.md.j2' %}{% block body %}child{% endblock %}",
            "personas/root.md.j2": "[{% block body %}root{% endblock %}]",
        }
    )
    assert buddy.load(path).persona.render() == "[child]"
    order = persona.search_path(path.parent, project)
    assert order[:3] == [
        path.parent.resolve(),
        (project / "a/personas").resolve(),
        (project / "personas").resolve(),
    ]


def test_context_names(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": _manifest(
                "t.j2",
                "title: 阿姨\ndescription: 做饭\npersona:\n  template: t.j2\n  vars: {x: 1}\n  traits: tr.yaml\n",
            ).replace("persona:\n  template: t.j2\n", "", 1),
            "t.j2": "{{ x }} {{ traits.mood }} {{ buddy.name }} {{ buddy.title }} {{ buddy.description }} "
            "{{ conversation.kind }} {{ conversation.id }} {{ now.year }}",
            "tr.yaml": "mood: calm\n",
        }
    )
    text = buddy.load(path).persona.render(
        kind="group", conversation_id="c1", now=persona.EXAMPLE_NOW
    )
    assert text == "1 calm case 阿姨 做饭 group c1 2026"


def test_traits_merge_in_order(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": MINIMAL.replace(
                "prompt: 你好，我是 {{ buddy.name }}。",
                "prompt: '{{ traits.a }}{{ traits.b.x }}{{ traits.b.y }}'\n  traits: [traits/one.yaml, two.json]",
            ),
            "personas/traits/one.yaml": "a: 1\nb: {x: 1, y: 1}\n",
            "two.json": '{"b": {"y": 2}}',
        }
    )
    assert buddy.load(path).persona.render() == "112"


@pytest.mark.parametrize("name", ["now", "traits", "buddy", "conversation"])
def test_reserved_names(write: Write, name: str) -> None:
    path = write({"buddy.yaml": MINIMAL + f"  vars: {{{name}: 1}}\n"})
    assert _where(path) == [("buddy.yaml", 5, 10, "reserved-var")]


def test_undefined_in_a_template_file_is_located_there(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": _manifest("t.md.j2"),
            "personas/t.md.j2": "line one\n{% if conversation.kind == 'group' %}\n{{ missing }}\n{% endif %}\n",
        }
    )
    _, issues = buddy.check(path)
    assert [(Path(i.file).name, i.line, i.code) for i in issues] == [
        ("t.md.j2", 3, "template-undefined")
    ]
    assert "'missing' is undefined" in issues[0].message
    assert issues[0].column == 4
    assert issues[0].hint.startswith("define it in `persona.vars`; ")
    assert "buddy.yaml:4:13" in issues[0].hint  # the manifest line that names the template


def test_syntax_error_in_an_included_template(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": _manifest("t.md.j2"),
            "t.md.j2": "a\n{% include 'part.md.j2' %}\n",
            "part.md.j2": "x\ny\n{% if %}\n",
        }
    )
    assert [(f, line, c) for f, line, _, c in _where(path)] == [
        ("part.md.j2", 3, "template-syntax")
    ]


def test_inline_prompt_errors_map_into_the_manifest(write: Write) -> None:
    path = write(
        {
            "buddy.yaml": "name: x\nmodel: test\npersona:\n  prompt: |\n    ok\n    {{ nope }}\n",
        }
    )
    assert _where(path) == [("buddy.yaml", 6, 8, "template-undefined")]  # at `nope`


@pytest.mark.parametrize(
    ("line", "column"),
    [
        ("{{ missing }}", 4),
        ("missing: {{ missing | upper }}", 13),  # in the tag, not the text before it
        ("{% if x %}{% endif %}{{ buddy.missing }}", 31),  # an attribute
        ("  {%- for i in missing %}{% endfor %}", 16),
    ],
)
def test_undefined_name_is_located_at_its_column(write: Write, line: str, column: int) -> None:
    path = write(
        {
            "buddy.yaml": _manifest("t.md.j2", "  vars: {x: 1}\n"),
            "personas/t.md.j2": f"line one\n{line}\n",
        }
    )
    _, issues = buddy.check(path)
    assert [(i.line, i.column, i.code) for i in issues] == [(2, column, "template-undefined")]


def test_undefined_name_hints_how_to_define_it(write: Write) -> None:
    def hint(prompt: str) -> str:
        path = write({"buddy.yaml": MINIMAL.replace("你好，我是 {{ buddy.name }}。", prompt)})
        _, issues = buddy.check(path)
        return issues[0].hint

    assert hint("'{{ city }}'") == "define it in `persona.vars`"
    assert hint("'{{ cty }}'\n  vars: {city: 成都}") == (
        "did you mean `city`? Or define `cty` in `persona.vars`"
    )
    assert hint("'{{ memory }}'") == (
        "`memory` is what a `memory:` section gives templates: add one to the manifest"
    )
    assert hint("'{{ buddy.nope }}'") == ""


def test_template_not_found_suggests(write: Write) -> None:
    path = write({"buddy.yaml": _manifest("companon.md.j2"), "personas/companion.md.j2": "x"})
    _, issues = buddy.check(path)
    assert [(i.line, i.column, i.code) for i in issues] == [(4, 13, "template-not-found")]
    assert "companion.md.j2" in issues[0].hint


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ buddy.__class__ }}",
        "{{ now.__class__.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ (lambda: 1) }}",
        "{{ range(10**9) | list | length }}",
    ],
)
def test_sandbox_escapes_fail(write: Write, source: str) -> None:
    path = write({"buddy.yaml": MINIMAL.replace("你好，我是 {{ buddy.name }}。", f'"{source}"')})
    _, issues = buddy.check(path)
    assert issues, source
    assert issues[0].code in ("template-undefined", "template-error", "template-syntax")


@pytest.mark.parametrize("name", ["../secret.md.j2", "/etc/passwd", "a/../../secret.md.j2"])
def test_template_names_cannot_leave_the_search_path(
    write: Write, project: Path, name: str
) -> None:
    (project.parent / "secret.md.j2").write_text("secret")
    path = write({"one/buddy.yaml": _manifest(f"'{name}'")})
    assert {c for *_, c in _where(path)} == {"template-not-found"}


def test_include_cannot_leave_the_search_path(write: Write) -> None:
    path = write(
        {"buddy.yaml": _manifest("t.j2"), "t.j2": "{% include '../../../../etc/hostname' %}"}
    )
    assert {c for *_, c in _where(path)} == {"template-not-found"}


@pytest.mark.parametrize("name", ["../x.yaml", "/etc/hostname"])
def test_trait_names_cannot_leave_the_search_path(write: Write, name: str) -> None:
    path = write({"buddy.yaml": MINIMAL + f"  traits: '{name}'\n"})
    assert {c for *_, c in _where(path)} == {"trait-not-found"}


@pytest.fixture
def template_pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    dist = site / "buddy_pack_demo-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: buddy-pack-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[buddy.personas]\ndemo = demo_pack.templates\n")
    templates = site / "demo_pack" / "templates"
    templates.mkdir(parents=True)
    (site / "demo_pack" / "__init__.py").write_text(
        "raise RuntimeError('a template pack is never imported')\n"
    )
    (templates / "packed.md.j2").write_text("from the pack")
    monkeypatch.syspath_prepend(str(site))
    persona._pack_directories.cache_clear()
    yield site
    persona._pack_directories.cache_clear()


def test_installed_template_packs(template_pack: Path, write: Write) -> None:
    path = write({"buddy.yaml": _manifest("packed.md.j2")})
    assert buddy.load(path).persona.render() == "from the pack"
    assert "demo_pack" not in sys.modules
