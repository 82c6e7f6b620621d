"""A card as a buddy (``buddy.yaml`` + the ``card.json`` sidecar), and a buddy as a card.

Import derives a buddy from the card: the title, a description, the persona prompt and a
few persona variables (see :func:`derive`). The card itself goes unchanged into
``card.json`` next to ``buddy.yaml``, so nothing the buddy has no place for is lost.

Export starts from ``card.json`` (or from an empty card when there is none), derives the
buddy again from it, and compares that with the buddy as it is now: every part the author
changed since — title, description, a section of the prompt, a greeting variable — is
written into the card's matching field; everything else stays exactly as it was. So an
unchanged buddy exports the very card it was imported from.
"""

from __future__ import annotations

import copy
import re
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from buddy.cards.files import card_json, read_card
from buddy.cards.lore import BOOK_FILE, derive_book
from buddy.cards.lore_export import lorebook_from_book
from buddy.cards.prompt import (
    CHAR_MACRO,
    USER_MACRO,
    USER_VAR,
    collapse,
    compose,
    language,
    plain,
    split,
    with_sentinels,
    words,
)
from buddy.cards.spec import PROMPT_FIELDS, Card, Version, blank_card, convert
from buddy.compile.persona import EXAMPLE_NOW, PersonaRenderer, make_environment
from buddy.compile.project import not_regular
from buddy.errors import CardError, Issue, ManifestError, ParseError
from buddy.manifest.schema import SLUG_PATTERN
from buddy.manifest.yamlio import MAX_FILE_BYTES, load_document, parse_document
from buddy.schemas import MANIFEST, project_line

__all__ = [
    "CARD_IMAGE",
    "SIDECAR",
    "Derived",
    "Exported",
    "book_problems",
    "derive",
    "derive_lore",
    "derive_name",
    "dump_yaml",
    "export_card",
    "import_files",
    "manifest_text",
    "slugify",
]

SIDECAR = "card.json"
"""The file next to ``buddy.yaml`` that holds the complete card."""
CARD_IMAGE = "card.png"
"""The card's picture (a PNG card's image without its card chunks), kept for export."""
TITLE_LIMIT, DESCRIPTION_LIMIT = 100, 1000
GREETING_VARS = ("first_mes", "alternate_greetings", "group_only_greetings")
"""Card fields a buddy keeps in ``persona.vars`` under the same names."""
# When a card keeps V1 copies of its fields at the top level (as many do), an update to
# the field in `data` updates the copy too, if the two agreed.
_MIRRORS = {
    "name": "name",
    "description": "description",
    "personality": "personality",
    "scenario": "scenario",
    "first_mes": "first_mes",
    "mes_example": "mes_example",
    "creator_notes": "creatorcomment",
}
_LETTERS = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ø": "o",
        "Ø": "O",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "Ð": "D",
        "ł": "l",
        "Ł": "L",
        "þ": "th",
        "Þ": "Th",
    }
)


# ---------------------------------------------------------------- card → buddy


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Derived:
    """What a card becomes in a buddy.

    Attributes:
        title: The buddy's title: the card's ``nickname`` when it has one (V3: the name
            ``{{char}}`` stands for), else its ``name``; on one line, at most 100
            characters.
        title_field: ``nickname`` or ``name``: where a changed title goes back.
        description: The creator's notes (else the card's description) on one line, at
            most 1000 characters, macros replaced; ``""`` when the card has neither.
        lang: ``en`` or ``zh``: the language of the words the prompt adds.
        prompt: The inline persona prompt.
        vars: The persona variables: ``user`` (what ``{{user}}`` reads as) and the
            card's greetings that are not empty.
    """

    title: str
    title_field: str
    description: str
    lang: str
    prompt: str
    vars: dict[str, Any] = field(default_factory=dict)


def _notes(card: Card, lang: str) -> str:
    notes = card.text("creator_notes")
    if notes.strip():
        return notes
    multilingual = card.data.get("creator_notes_multilingual")
    if isinstance(multilingual, dict):
        preferred = [lang, "en", *multilingual]
        for key in preferred:
            value = multilingual.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return card.text("description")


def derive(card: Card) -> Derived:
    """The buddy a card makes (deterministic: export relies on deriving it again)."""
    nickname = collapse(card.text("nickname"))
    title_field = "nickname" if nickname else "name"
    title = _cut(nickname or collapse(card.text("name")), TITLE_LIMIT)
    lang = language([card.text(f) for f in ("name", "description", "personality", "first_mes")])
    chosen = words(lang)
    description = _cut(collapse(plain(_notes(card, lang), title, chosen.user)), DESCRIPTION_LIMIT)
    prompt = compose({f: card.text(f) for f in PROMPT_FIELDS}, lang)
    variables: dict[str, Any] = {USER_VAR: chosen.user}
    if card.text("first_mes"):
        variables["first_mes"] = card.text("first_mes")
    for name in GREETING_VARS[1:]:
        if card.strings(name):
            variables[name] = card.strings(name)
    return Derived(title, title_field, description, lang, prompt, variables)


def slugify(text: str) -> str:
    """``text`` as a buddy name (accents dropped, ``ß`` → ``ss``, other characters → ``-``),
    or ``""`` when that leaves less than half of its letters (a Chinese name, say)."""
    latin = unicodedata.normalize("NFKD", text.translate(_LETTERS))
    latin = "".join(ch for ch in latin if not unicodedata.combining(ch))
    letters = sum(ch.isalpha() for ch in text)
    kept = sum(ch.isascii() and ch.isalpha() for ch in latin)
    made = re.sub(r"[^a-z0-9]+", "-", latin.lower()).strip("-")[:63].rstrip("-")
    if kept * 2 < letters or not re.fullmatch(SLUG_PATTERN, made):
        return ""
    return made


def derive_name(card: Card, stem: str) -> tuple[str, str]:
    """A buddy name for ``card`` and where it came from (``the card's name``, ``its
    nickname``, ``the file name``), or ``("", "")`` when none gives one."""
    for text, source in (
        (card.text("name"), "the card's name"),
        (card.text("nickname"), "the card's nickname"),
        (stem, "the file name"),
    ):
        made = slugify(text)
        if made:
            return made, source
    return "", ""


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings; plain only where the buddy loader reads the
    same string back (it follows YAML 1.2, PyYAML's resolver 1.1)."""


def _plain_ok(value: str) -> bool:
    try:
        data: Any = parse_document(f"k: {value}\n", "<value>").data
    except ParseError:
        return False
    return bool(data == {"k": value})


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else (None if _plain_ok(value) else '"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _dump(data: Mapping[str, Any]) -> str:
    text: str = yaml.dump(
        dict(data),
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=1_000_000,
    )
    return text


def derive_lore(card: Card) -> tuple[dict[str, Any] | None, list[str]]:
    """The lore book of the card's lorebook (``None`` when it has no entry to import) and
    the warnings of the import, each naming its entry.

    Raises:
        CardError: The book does not fit a lore book (an entry's content over 2000
            characters, more than 32 keys …): the buddy would not be valid.
    """
    book = card.data.get("character_book")
    if not isinstance(book, Mapping):
        return None, []
    lore, _, warnings = derive_book(book, "book")
    if not lore["entries"]:
        return None, warnings
    problems = book_problems(lore, f"character_book (as lore/{BOOK_FILE})")
    if problems:
        raise CardError(card.file, problems)
    return lore, warnings


def book_problems(lore: Mapping[str, Any], shown: str) -> list[str]:
    """Why ``lore`` (a lore book's data) is not a valid book, one line per problem."""
    from pydantic import ValidationError

    from buddy.capabilities.lore.manifest import LoreBookFile

    try:
        LoreBookFile.model_validate(lore)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(p) for p in error["loc"])
            problems.append(f"{shown} {where}: {error['msg']}")
        return problems
    return []


def dump_yaml(data: Mapping[str, Any]) -> str:
    """``data`` as YAML the buddy loader reads back as the same data."""
    return _dump(data)


def manifest_text(card: Card, derived: Derived, name: str, directory: Path) -> str:
    """The ``buddy.yaml`` of a buddy imported from ``card``.

    Args:
        card: The card.
        derived: :func:`derive` of it.
        name: The buddy's name (a slug).
        directory: Where the buddy will live (for the schema comment's relative path).

    Raises:
        CardError: The result would be over the manifest size limit (1 MiB).
    """
    top: dict[str, Any] = {"version": 1, "name": name, "title": derived.title}
    if derived.description:
        top["description"] = derived.description
    persona = {"prompt": derived.prompt, "vars": derived.vars}
    source = re.sub(r"[\x00-\x1f\x7f]", "", Path(card.file).name) or "a card"
    text = (
        project_line(MANIFEST, directory)
        + f"# Imported from a Character Card V{card.version} ({source}) by `buddy import-card`.\n"
        + f"# {SIDECAR} next to this file holds the whole card; `buddy export-card` writes it\n"
        + "# back, with this buddy's title, description, prompt and greetings where they changed.\n"
        + _dump(top)
        + "\n"
        + "# `offline` needs no API key (it echoes); pick a real model when ready.\n"
        + "model: offline\n"
        + "\n"
        + "# The card's text as an inline Jinja2 prompt: {{ buddy.title }} is the card's\n"
        + "# {{char}} and {{ user }} its {{user}}; other braces are escaped to print as\n"
        + "# written. Each {# card:FIELD #} comment marks the card field that follows.\n"
        + _dump({"persona": persona})
        + "\n"
        + "profiles:\n"
        + "  ci: { model: test }   # `--profile ci`: the scripted test model\n"
    )
    lore = derive_lore(card)[0] is not None
    if lore:
        text += (
            "\n# The card's lorebook, as lore/card.yaml: its entries enter the prompt when the\n"
            "# conversation mentions their keys. export-card writes your edits back.\n"
            "lore: lore\n"
        )
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise CardError(
            card.file,
            [
                "the card's text makes a buddy.yaml over 1 MiB, the manifest size limit; "
                "shorten its description or example dialogue"
            ],
        )
    expected = {
        **top,
        "model": "offline",
        "persona": persona,
        "profiles": {"ci": {"model": "test"}},
        **({"lore": "lore"} if lore else {}),
    }
    if parse_document(text, "buddy.yaml").data != expected:  # pragma: no cover - a bug here
        raise AssertionError("the written buddy.yaml does not read back as intended")
    return text


def import_files(card: Card, name: str, directory: Path) -> dict[str, bytes]:
    """The files of the buddy ``card`` makes, by name inside ``directory``:
    ``buddy.yaml``, ``card.json`` and, for a PNG card, ``card.png``."""
    files = {
        "buddy.yaml": manifest_text(card, derive(card), name, directory).encode("utf-8"),
        SIDECAR: card_json(card.raw).encode("utf-8"),
    }
    lore = derive_lore(card)[0]
    if lore is not None:
        header = (
            "# From the card's character_book (buddy import-card), with SillyTavern's shipped\n"
            "# settings written out; card.json keeps the whole card. Edit freely: export-card\n"
            "# writes back the entries you change and leaves the others as they were.\n"
        )
        files[f"lore/{BOOK_FILE}"] = (header + _dump(lore)).encode("utf-8")
    if card.image is not None:
        files[CARD_IMAGE] = card.image
    return files


# ---------------------------------------------------------------- buddy → card


@dataclass(frozen=True, slots=True)
class Exported:
    """A buddy as a card.

    Attributes:
        name: The buddy's name.
        card: The card object, of ``version``.
        version: 2 or 3.
        image: The buddy's ``card.png``, when it has one.
        changed: The ``data`` fields taken from the buddy (empty: the sidecar as it was).
        sidecar: Whether the buddy had a ``card.json``.
        converted: Whether ``card.json`` was of the other version.
        warnings: Things the user should know (a prompt that differs in group chats, …).
    """

    name: str
    card: dict[str, Any]
    version: Version
    image: bytes | None
    changed: tuple[str, ...]
    sidecar: bool
    converted: bool
    warnings: tuple[str, ...]


def _macro_context(persona: PersonaRenderer, kind: str) -> dict[str, Any]:
    context = persona.context(kind=kind, conversation_id=f"example-{kind}", now=EXAMPLE_NOW)
    context["buddy"] = {**context["buddy"], "title": CHAR_MACRO}
    if USER_VAR in persona.variables:
        context[USER_VAR] = USER_MACRO
    return context


def _render(persona: PersonaRenderer, kind: str) -> str:
    """The persona rendered with ``{{char}}``/``{{user}}`` for the title and ``user``, and
    section comments kept as sentinels."""
    inline = with_sentinels(persona.inline) if persona.inline is not None else None
    environment = make_environment(persona.path, inline)
    try:
        template = environment.get_template(persona.name)
        return template.render(_macro_context(persona, kind))
    except Exception as exc:  # the sandbox, an undefined name, or an error in added Jinja
        raise CardError(
            str(persona.template or "persona.prompt"),
            [f"cannot render the persona with the card macros: {exc}"],
        ) from None


def _derived_sections(derived: Derived) -> Mapping[str, str]:
    renderer = PersonaRenderer(
        path=[],
        template=None,
        inline=derived.prompt,
        traits={},
        variables={USER_VAR: derived.vars[USER_VAR]},
        buddy={"name": "card", "title": derived.title, "description": derived.description},
    )
    return split(_render(renderer, "private"), PROMPT_FIELDS).fields


def _empty(value: Any) -> bool:
    return value is None or value in ("", [])


def _set(card: dict[str, Any], name: str, value: Any, changed: list[str]) -> None:
    data = card["data"]
    old = data.get(name)
    if old == value or (_empty(old) and _empty(value)):
        return
    data[name] = value
    mirror = _MIRRORS.get(name)
    if mirror is not None and mirror in card and card[mirror] == old:
        card[mirror] = value
    changed.append(name)


def _export_lore(
    directory: Path, has_lore: bool, source: Card, card: dict[str, Any], changed: list[str]
) -> list[str]:
    """Write the buddy's ``lore/card.yaml`` back as the card's lorebook, where it changed;
    the warnings (changes the lorebook has no place for)."""
    book_file = directory / "lore" / BOOK_FILE
    if not has_lore or not book_file.is_file():
        return []
    loaded = load_document(book_file, str(book_file))
    if isinstance(loaded, Issue):
        raise ManifestError([loaded])
    original = source.data.get("character_book")
    book, warnings = lorebook_from_book(
        original if isinstance(original, Mapping) else None, loaded.data
    )
    _set(card, "character_book", book, changed)
    return warnings


def _export_greetings(
    variables: Mapping[str, Any], source: Card, card: dict[str, Any], changed: list[str]
) -> list[str]:
    """Write the greeting variables that changed into the card; warnings for the ones of
    the wrong type."""
    warnings = []
    for name in GREETING_VARS:
        if name not in variables:
            continue
        value = variables[name]
        wanted_list = name != "first_mes"
        if wanted_list and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            warnings.append(f"persona.vars.{name} is not a list of strings; not exported")
        elif not wanted_list and not isinstance(value, str):
            warnings.append(f"persona.vars.{name} is not a string; not exported")
        elif value != (source.strings(name) if wanted_list else source.text(name)):
            _set(card, name, copy.deepcopy(value), changed)
    return warnings


def _dates(card: dict[str, Any], now: float | None) -> None:
    """CCv3: ``modification_date`` is the time of an export that changed something, and
    ``creation_date`` is set when absent (both Unix seconds)."""
    data = card["data"]
    stamp = int(time.time() if now is None else now)
    data["modification_date"] = stamp
    if data.get("creation_date") is None:
        data["creation_date"] = stamp


def export_card(
    directory: Path, version: Version | None = None, *, now: float | None = None
) -> Exported:
    """The card of the buddy in ``directory``.

    A V3 card that changed (or is made from the buddy alone) gets ``modification_date``
    ``now``, and ``creation_date`` ``now`` when it has none; an unchanged one is the
    sidecar as it was.

    Args:
        directory: The buddy's directory (or its ``buddy.yaml``).
        version: 2 or 3; default: the version of ``card.json``, else 2.
        now: The time of the export (Unix seconds; default: the clock).

    Raises:
        ManifestError: The buddy is invalid.
        CardError: Its ``card.json`` is not a valid card, its ``card.json`` or
            ``card.png`` is not a regular file (a FIFO), or the persona cannot be
            rendered with the card macros.
    """
    from buddy.compile.compiler import check

    blueprint, issues = check(directory)
    if blueprint is None:
        raise ManifestError(issues)
    sidecar = blueprint.directory / SIDECAR
    warnings: list[str] = []
    if sidecar.exists():  # read_card refuses one that is not a regular file
        source = read_card(sidecar)
        warnings.extend(source.warnings)
    else:
        raw = blank_card(version or 2)
        source = Card(raw, version or 2, str(sidecar))
    derived = derive(source)
    card = copy.deepcopy(dict(source.raw))
    changed: list[str] = []

    if blueprint.title != derived.title:
        _set(card, derived.title_field, blueprint.title, changed)
    if blueprint.description != derived.description:
        _set(card, "creator_notes", blueprint.description, changed)

    persona = blueprint.persona
    private = _render(persona, "private")
    if _render(persona, "group") != private:
        warnings.append(
            "the persona differs between private and group conversations; the card has the "
            "private one"
        )
    current = split(private, PROMPT_FIELDS)
    for name in current.unknown:
        warnings.append(f"persona.prompt: `card:{name}` is not a card prompt field; left out")
    fields = dict(current.fields)
    if current.preamble:
        fields["description"] = "\n\n".join(
            part for part in (current.preamble, fields.get("description", "")) if part
        )
    before = _derived_sections(derived)
    for name in PROMPT_FIELDS:
        if fields.get(name, "") != before.get(name, ""):
            _set(card, name, fields.get(name, ""), changed)

    warnings += _export_greetings(persona.variables, source, card, changed)
    warnings += _export_lore(
        blueprint.directory, "lore" in blueprint.sections, source, card, changed
    )

    target: Version = version or source.version
    if target == 3 and (changed or not sidecar.exists()):
        _dates(card, now)
    image_file = blueprint.directory / CARD_IMAGE
    kind = not_regular(image_file)
    if kind is not None:  # never opened: a FIFO would block the reader forever
        raise CardError(str(image_file), [f"this file is {kind}, not a regular file"])
    image = image_file.read_bytes() if image_file.is_file() else None
    return Exported(
        blueprint.name,
        convert(card, target),
        target,
        image,
        tuple(changed),
        sidecar.is_file(),
        target != source.version,
        tuple(warnings),
    )
