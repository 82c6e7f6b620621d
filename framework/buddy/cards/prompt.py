"""A card's text as a buddy's persona prompt (inline Jinja2), and back.

Card text is not Jinja: it uses the card macros ``{{char}}`` and ``{{user}}`` (and the
older ``<BOT>``/``<USER>``), and may hold any other braces. :func:`escape` maps the two
macros to ``{{ buddy.title }}`` and ``{{ user }}`` (a persona variable holding a neutral
word), each other card macro (``{{random:a,b}}``, ``{{pick::…}}``, ``{{roll:d6}}``,
``{{reverse:…}}``, ``{{newline}}``, ``{{trim}}``, ``{{noop}}``, the comments ``{{// …}}``,
``{{comment: …}}``, ``{{hidden_key: …}}``) to a call of the persona global
:func:`~buddy.compile.persona.card_macro` that replaces it on each turn
(``{{ card_macro('{{random:a,b}}') }}``), and turns every other ``{{``, ``{%`` and ``{#``
into an expression that prints it, so the template renders the text literally.

:func:`compose` lays the prompt out in sections, each opening with a Jinja comment that
names the card field it came from (``{# card:personality -#}``); comments render as
nothing, and :func:`split` finds them again. Going back, the prompt is *rendered* with
``buddy.title`` set to the text ``{{char}}`` and ``user`` to ``{{user}}``: that undoes
the escaping exactly, and evaluates any Jinja an author added since.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from buddy.compile.macros import CARD_MACRO

__all__ = [
    "CHAR_MACRO",
    "USER_MACRO",
    "USER_VAR",
    "Words",
    "compose",
    "escape",
    "language",
    "plain",
    "sanitize",
    "split",
    "words",
]

CHAR_MACRO = "{{char}}"
USER_MACRO = "{{user}}"
USER_VAR = "user"
"""The persona variable that stands for the card's ``{{user}}``."""
TITLE_EXPR = "{{ buddy.title }}"
USER_EXPR = "{{ " + USER_VAR + " }}"

# A piece of a card macro's text: no "{{" or "}}", or one macro nested in it.
_PIECE = r"(?:(?!\{\{|\}\}).|\{\{(?:(?!\{\{|\}\}).)*\}\})"
_CARD_MACRO = (
    r"\n*\{\{trim\}\}\n*"  # the newlines on either side go with it
    r"|\{\{(?:newline|noop)\}\}"
    r"|\{\{(?://|\s*comment\s*:|\s*hidden_key\s*:|random\s?::?|pick\s?::?|roll[ :]|reverse:)"
    rf"{_PIECE}*\}}\}}"
)
_TOKENS = re.compile(
    r"(?P<macro>\{\{\s*(?P<who>char|user)\s*\}\})"
    r"|(?P<legacy><(?P<old>bot|char|user)>)"
    rf"|(?P<card>{_CARD_MACRO})"
    r"|(?P<open>\{[{%#])",
    re.IGNORECASE | re.DOTALL,
)
_NAMES = re.compile(
    r"(?P<macro>\{\{\s*(?P<who>char|user)\s*\}\})|(?P<legacy><(?P<old>bot|char|user)>)",
    re.IGNORECASE,
)
_MARKER = "{{# {kind}:{name} -#}}\n"
MARKER_RE = re.compile(r"\{#-?\s*(card|buddy):([A-Za-z_]+)\s*-?#\}\s*")
SENTINEL = "\x1e{kind}:{name}\x1e"
SENTINEL_RE = re.compile(r"\x1e(card|buddy):([A-Za-z_]+)\x1e")
# C0/C1 controls except tab and newline, and the byte-order mark: invisible junk in a prompt.
_JUNK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff]")


@dataclass(frozen=True, slots=True)
class Words:
    """The words a composed prompt adds around the card's text, in one language.

    Attributes:
        user: What ``{{user}}`` becomes (the ``user`` persona variable).
        intro: The opening line when the card has no system prompt.
        headings: A heading per card field (Jinja: may use ``{{ buddy.title }}``).
    """

    user: str
    intro: str
    headings: Mapping[str, str]


_EN = Words(
    user="the user",
    intro=(
        f"You are {TITLE_EXPR}. Stay in character: talk with {USER_EXPR} as {TITLE_EXPR} "
        "would, following the description below."
    ),
    headings={
        "description": f"## {TITLE_EXPR}",
        "personality": "## Personality",
        "scenario": "## Scenario",
        "mes_example": f"## Example dialogue (how {TITLE_EXPR} talks; not part of this chat)",
        "post_history_instructions": "## Instructions",
    },
)
_ZH = Words(
    user="对方",
    intro=(
        f"你是{TITLE_EXPR}。始终保持这个角色：按下面的设定，以{TITLE_EXPR}的身份和{USER_EXPR}聊天。"
    ),
    headings={
        "description": f"## {TITLE_EXPR}",
        "personality": "## 性格",
        "scenario": "## 场景",
        "mes_example": f"## 对话示例（{TITLE_EXPR}的说话方式，不是这次聊天的内容）",
        "post_history_instructions": "## 补充要求",
    },
)
LANGUAGES = {"en": _EN, "zh": _ZH}


def language(texts: list[str]) -> str:
    """``zh`` when the texts are mostly Chinese, else ``en``.

    Chinese means more Han characters than Latin letters, and few kana or Hangul (which
    would make it Japanese or Korean, for which the English words are the safer choice).
    """
    han = latin = other = 0
    for text in texts:
        for ch in text:
            if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
                han += 1
            elif "\u3040" <= ch <= "\u30ff" or "\uac00" <= ch <= "\ud7af":
                other += 1
            elif ch.isascii() and ch.isalpha():
                latin += 1
    return "zh" if han > latin and other * 4 < han else "en"


def words(lang: str) -> Words:
    """The :class:`Words` of ``lang`` (``en`` or ``zh``)."""
    return LANGUAGES[lang]


def sanitize(text: str) -> str:
    """``text`` tidied for a prompt: ``\\n`` line ends, no control characters, tabs as four
    spaces, no trailing spaces, no blank lines at either end."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n").replace("\x85", "\n")
    text = _JUNK.sub("", text).replace("\t", "    ")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def escape(text: str) -> str:
    """Card text as Jinja2 source that renders as the text itself, with the card's
    ``{{char}}``/``{{user}}`` (and ``<BOT>``/``<CHAR>``/``<USER>``) as the buddy's
    title and the ``user`` variable."""

    def replace(match: re.Match[str]) -> str:
        who = (match.group("who") or match.group("old") or "").lower()
        if who:
            return USER_EXPR if who == "user" else TITLE_EXPR
        if match.group("card"):
            return "{{ " + CARD_MACRO + "(" + _macro_source(match.group("card")) + ") }}"
        return "{{ '" + match.group("open") + "' }}"

    return _TOKENS.sub(replace, sanitize(text))


def _macro_source(text: str) -> str:
    """A card macro as a Jinja expression giving its text, with the ``{{char}}`` and
    ``{{user}}`` in it as the title and the ``user`` variable."""
    parts: list[str] = []
    at = 0
    for name in _NAMES.finditer(text):
        if name.start() > at:
            parts.append(_literal(text[at : name.start()]))
        who = (name.group("who") or name.group("old")).lower()
        parts.append(USER_VAR if who == "user" else "buddy.title")
        at = name.end()
    if at < len(text) or not parts:
        parts.append(_literal(text[at:]))
    return " ~ ".join(parts)


def _literal(text: str) -> str:
    """``text`` as a Jinja string literal (which unescapes as Python's do)."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return "'" + escaped + "'"


def plain(text: str, title: str, user: str) -> str:
    """Card text with its ``{{char}}``/``{{user}}`` replaced by ``title`` and ``user`` (no
    Jinja; other card macros stay): for the buddy's description, which is shown, not
    rendered."""

    def replace(match: re.Match[str]) -> str:
        who = (match.group("who") or match.group("old") or "").lower()
        if who:
            return user if who == "user" else title
        if match.group("card"):  # the macro stays; the names in it are replaced
            return _NAMES.sub(replace, match.group(0))
        return match.group(0)

    return _TOKENS.sub(replace, text)


def marker(kind: str, name: str) -> str:
    """The Jinja comment that opens a section (``card`` fields; ``buddy`` for the buddy's
    own framing, which is not exported)."""
    return _MARKER.format(kind=kind, name=name)


def compose(fields: Mapping[str, str], lang: str) -> str:
    """The inline persona prompt for a card's prompt fields.

    Args:
        fields: ``system_prompt``, ``description``, ``personality``, ``scenario``,
            ``mes_example``, ``post_history_instructions`` (missing or blank ones are left
            out).
        lang: ``en`` or ``zh``: the language of the headings and the intro.

    Returns:
        Jinja2 source ending in one newline. Without a system prompt it opens with an
        intro line (the card's system prompt replaces it, as in card applications).
    """
    chosen = words(lang)
    parts = []
    system = sanitize(fields.get("system_prompt", ""))
    if system:
        parts.append(marker("card", "system_prompt") + escape(system))
    else:
        parts.append(marker("buddy", "intro") + chosen.intro)
    for name, heading in chosen.headings.items():
        text = sanitize(fields.get(name, ""))
        if text:
            parts.append(marker("card", name) + heading + "\n" + escape(text))
    return "\n\n".join(parts) + "\n"


def with_sentinels(source: str) -> str:
    """``source`` with each section comment replaced by a visible sentinel that survives
    rendering (comments do not)."""
    return MARKER_RE.sub(lambda m: SENTINEL.format(kind=m.group(1), name=m.group(2)), source)


@dataclass(frozen=True, slots=True)
class Sections:
    """A rendered prompt taken apart.

    Attributes:
        fields: The text of each ``card:`` section, by field name, headings removed.
        preamble: Text before the first section (or all of it, when there are none).
        unknown: Section names that are not card prompt fields.
    """

    fields: Mapping[str, str]
    preamble: str
    unknown: tuple[str, ...]


def _unheaded(text: str, name: str) -> str:
    for chosen in LANGUAGES.values():
        heading = chosen.headings.get(name)
        if heading is None:
            continue
        shown = heading.replace(TITLE_EXPR, CHAR_MACRO).replace(USER_EXPR, USER_MACRO)
        if text == shown or text.startswith(shown + "\n"):
            return text[len(shown) :]
    return text


def split(rendered: str, names: tuple[str, ...]) -> Sections:
    """Take a prompt rendered from :func:`with_sentinels` source apart.

    Args:
        rendered: The rendered text.
        names: The card fields a ``card:`` section may name.

    Returns:
        The sections; each text has blank lines at its ends removed, and a field named
        by several sections gets their texts joined by a blank line.
    """
    pieces = SENTINEL_RE.split(rendered)
    preamble = pieces[0].strip("\n")
    fields: dict[str, str] = {}
    unknown: list[str] = []
    for index in range(1, len(pieces), 3):
        kind, name, text = pieces[index], pieces[index + 1], pieces[index + 2]
        if kind != "card":
            continue
        if name not in names:
            unknown.append(name)
            continue
        body = _unheaded(text.strip("\n"), name).strip("\n")
        fields[name] = f"{fields[name]}\n\n{body}" if fields.get(name) else body
    return Sections(fields, preamble, tuple(unknown))


def collapse(text: str) -> str:
    """``text`` on one line: runs of whitespace become one space (NFC-normalised)."""
    return " ".join(unicodedata.normalize("NFC", text).split())
