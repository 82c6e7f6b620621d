"""``character:`` compiled (:mod:`buddy.capabilities.character.compiled`): the trait files
found, their parameters checked where they are written, merged in order, the state's
settings, and the appraisal file found and checked.

An appraisal named bare (``zh``) is ``appraisals/zh.yaml`` on the persona search path (so
a project can share or override one), else the file this package ships
(``appraisals/zh.yaml``); any other reference is a path on the search path.

In a trait file that drives the character, every number and switch at the top level is a
character parameter: an unknown one (a typo) or one out of its range is a located error
in the trait file. Texts, lists and mappings (``persona``, ``note``, ``habits``) are the
templates' and are not looked at.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from buddy.capabilities.character.limits import (
    APPRAISAL_NAME_PATTERN,
    FLAGS,
    INTENSITIES,
    NUMBERS,
    RECONCILE_SECONDS,
    defaults,
    parameter_names,
)
from buddy.capabilities.character.manifest import CharacterSettings
from buddy.capabilities.datafiles import DataFiles
from buddy.compile.project import not_regular
from buddy.errors import Issue
from buddy.manifest.locate import issue_at
from buddy.manifest.schema import did_you_mean, duration_seconds
from buddy.manifest.yamlio import Document, YamlPath, load_document

if TYPE_CHECKING:
    from buddy.capabilities.character.compiled import AppraisalPatterns, CharacterSpec
    from buddy.extend import SectionContext

__all__ = ["SHIPPED_APPRAISALS", "compile_character", "parameter_problem", "shipped_appraisals"]

#: The appraisal files this package ships, found after the project's own.
SHIPPED_APPRAISALS = Path(__file__).with_name("appraisals")
APPRAISAL_FILES = DataFiles(
    "appraisals",
    SHIPPED_APPRAISALS,
    "appraisal file",
    "an appraisal file",
    re.compile(APPRAISAL_NAME_PATTERN),
    "appraisal-not-found",
    "appraisal-file",
)


def shipped_appraisals() -> list[str]:
    """The names of the shipped appraisal files."""
    return APPRAISAL_FILES.shipped_names()


def _number(value: float) -> str:
    return f"{value:g}"


def compile_character(context: SectionContext) -> CharacterSpec | None:
    """The character, or ``None`` when the manifest has no ``character:``."""
    value = context.value
    if value is None:
        return None
    from buddy.capabilities.character.compiled import CharacterSpec

    settings = (
        value
        if isinstance(value, CharacterSettings)
        else CharacterSettings(traits=value if isinstance(value, str) else None)
    )
    reconcile = duration_seconds(settings.reconcile_after)
    _, least, most = RECONCILE_SECONDS
    if not least <= reconcile <= most:
        context.error(
            ("reconcile_after",),
            "character-reconcile",
            f"`reconcile_after: {settings.reconcile_after}` must be between 30m and 7d",
        )
    parameters = defaults()
    written: set[str] = set()
    files: list[Path] = []
    for name, own, where in _trait_names(context, value, settings):
        file = context.shared(name)
        if file is None:
            if own:  # the persona's own missing traits are reported by the persona
                context.error(
                    where,
                    "trait-not-found",
                    f"trait file `{name}` not found",
                    "looked in: " + ", ".join(str(p) for p in context.search_path()),
                )
            continue
        kind = not_regular(file)
        if kind is not None:  # never opened: a FIFO would block the reader forever
            if own:  # the persona's own are refused by the persona
                context.error(
                    where,
                    "file-not-regular",
                    f"trait file `{name}` is {kind}, not a regular file",
                    f"{file} must be a trait file; replace it with an ordinary file",
                )
            continue
        doc = load_document(file, str(file))
        if isinstance(doc, Issue):
            if own:
                context.report(doc)
            continue
        context.depends_on(file)
        files.append(file.resolve())
        for key, item in doc.data.items():
            problem = parameter_problem(key, item)
            if problem is not None:
                context.report(_at(doc, (key,), *problem))
            elif key in parameters:
                parameters[key] = item
                written.add(key)
    if not files and not _trait_names(context, value, settings):
        context.error(
            (),
            "character-traits",
            "the character needs a trait file for its numbers",
            "write `character: traits/<name>.yaml`, or give the persona `traits:`",
            key=True,
        )
    return CharacterSpec(
        parameters=parameters,
        written=frozenset(written),
        step_max=settings.step_max,
        trust_start=settings.trust_start,
        reconcile_seconds=reconcile,
        traits=tuple(files),
        appraisal=_appraisal(context, settings, isinstance(value, CharacterSettings)),
    )


def _appraisal(
    context: SectionContext, settings: CharacterSettings, written: bool
) -> AppraisalPatterns | None:
    """The appraisal file ``settings`` names, found and checked (``None``: none, or it
    has problems, reported)."""
    reference = settings.appraisal
    if reference is None:
        return None
    where: YamlPath = ("appraisal",) if written else ()
    names = sorted(
        {*shipped_appraisals()}
        | {p.stem for d in context.search_path() for p in (d / "appraisals").glob("*.yaml")}
    )
    return APPRAISAL_FILES.compiled(context, reference, where, names, partial(_read, context))


def _read(context: SectionContext, doc: Document, file: Path) -> AppraisalPatterns | None:
    """The appraisal file ``doc`` (at ``file``) checked (``None``: it has problems,
    reported), imported here: a file kept from the last compile needs none of it."""
    from buddy.capabilities.character.appraisal import KINDS, AppraisalFile, appraisal_problems
    from buddy.capabilities.character.compiled import AppraisalPatterns, AppraisalRule
    from buddy.capabilities.memory.patterns import expanded, joined

    parsed = APPRAISAL_FILES.parse(context, doc, AppraisalFile, appraisal_problems)
    if parsed is None:
        return None
    written = [(kind, p) for kind in KINDS for p in getattr(parsed, kind).patterns]
    matches = [expanded(p.match, parsed.words) for _, p in written]
    either, inside = joined(matches)
    rules = tuple(
        AppraisalRule(
            kind,
            match,
            1.0 if p.strength is None else p.strength,
            p.alone,
            None if p.unless_said is None else expanded(p.unless_said, parsed.words),
            within,
        )
        for (kind, p), match, within in zip(written, matches, inside, strict=True)
    )
    unless = {kind: frozenset(getattr(parsed, kind).unless) for kind in KINDS}
    return AppraisalPatterns(parsed.appraisal, rules, unless, file, either)


def _at(doc: Document, path: YamlPath, message: str, hint: str) -> Issue:
    return issue_at(doc, path, "character-parameter", message, hint)


def _trait_names(
    context: SectionContext, value: Any, settings: CharacterSettings
) -> list[tuple[str, bool, YamlPath]]:
    """``(name, written in character:, where)`` of each trait file, in merge order."""
    if settings.traits is not None:
        return [(settings.traits, True, () if isinstance(value, str) else ("traits",))]
    persona = context.doc.data.get("persona")
    raw = persona.get("traits") if isinstance(persona, dict) else None
    if isinstance(raw, str):
        return [(raw, False, ())]
    if isinstance(raw, list):
        return [(n, False, ()) for n in raw if isinstance(n, str)]
    return []


def parameter_problem(key: str, value: Any) -> tuple[str, str] | None:
    """Why ``key: value`` of a trait file is not a valid character parameter (message,
    hint), or ``None`` (also for a text, list or mapping: the templates' business)."""
    if key in NUMBERS:
        default, least, most, unit, meaning = NUMBERS[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"`{key}` is a number ({unit}: {meaning}), not {value!r}", ""
        if not least <= value <= most:
            return (
                f"`{key}: {_number(value)}` is out of range: {_number(least)} to "
                f"{_number(most)} ({unit}: {meaning})",
                f"the default is {_number(default)}",
            )
        return None
    if key in FLAGS:
        if not isinstance(value, bool):
            return f"`{key}` is true or false ({FLAGS[key][1]}), not {value!r}", ""
        return None
    if key == "intensity":
        if value not in INTENSITIES:
            return f"`intensity` is one of {', '.join(INTENSITIES)}, not {value!r}", ""
        return None
    if isinstance(value, bool | int | float):
        return (
            f"`{key}` is not a character parameter",
            did_you_mean(key, list(parameter_names()))
            or "parameters: " + ", ".join(parameter_names()),
        )
    return None
