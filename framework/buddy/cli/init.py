"""The body of ``buddy init``: a new buddy that validates, renders and passes its own test."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import jinja2

from buddy.compile.persona import BUILT_IN_PACK, find_project_root, make_environment, search_path
from buddy.compile.project import searched
from buddy.errors import ParseError
from buddy.manifest.schema import SLUG_PATTERN, did_you_mean
from buddy.manifest.yamlio import parse_document
from buddy.schemas import MANIFEST, SCENARIO, project_line, refresh

__all__ = [
    "GITIGNORE",
    "init",
    "manifest_text",
    "scenario_text",
    "slug",
    "write_gitignore",
    "write_schemas",
]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
_TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".md", ".txt")


def slug(text: str) -> str:
    """``text`` made into a valid buddy name (for "did you mean"), or ``""``."""
    made = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:63].rstrip("-")
    return made if re.fullmatch(SLUG_PATTERN, made) else ""


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar that reads back as this string (``0``, ``1e3`` are quoted),
    as the manifest loader reads it."""
    try:
        plain = parse_document(f"k: {value}\n", "<name>").data
    except ParseError:
        plain = None
    return value if plain == {"k": value} else json.dumps(value, ensure_ascii=False)


def manifest_text(name: str, directory: Path, persona: str | None = None) -> str:
    """The ``buddy.yaml`` of a new buddy.

    Args:
        name: The buddy's name (a slug).
        directory: Where the buddy will live (for the schema comment's relative path).
        persona: A shared persona template to use instead of an inline prompt.
    """
    if persona is None:
        persona_block = (
            "persona:\n"
            "  # The system prompt, a Jinja2 template: {{ buddy.name }}, {{ buddy.title }},\n"
            "  # {{ conversation.kind }} (private or group) and {{ now }} are defined; with\n"
            "  # `memory:` declared, {{ memory.card }} is what the buddy remembers of them.\n"
            "  prompt: |\n"
            "    你是{{ buddy.title }}，在聊天里陪着对方的搭子。\n"
            "    说话简短、真诚，先听对方说完，再给一两条具体的建议。\n"
            '    {% if conversation.kind == "group" -%}\n'
            "    这是群聊：每条消息开头的 [名字 #m_…] 是发言人，用名字称呼对方。\n"
            "    {% endif -%}\n"
            "    {% if memory is defined and memory.card -%}\n"
            "    你记得的关于对方：\n"
            "    {{ memory.card }}\n"
            "    {% endif -%}\n"
            '    今天是 {{ now.strftime("%Y-%m-%d") }}。\n'
        )
    else:
        persona_block = (
            "persona:\n"
            f"  template: {_scalar(persona)}   # shared, found on the template search path\n"
            "  # vars: { name: value }   # variables the template reads\n"
        )
    return (
        project_line(MANIFEST, directory)
        + "version: 1\n"
        + f"name: {_scalar(name)}\n"
        + f"title: {_scalar(name)}\n"
        + "description: 一个新的搭子。\n"
        + "\n"
        + "# `offline` needs no API key (it echoes); pick a real model when ready, e.g.\n"
        + "# moonshot:kimi-k3, deepseek:deepseek-chat, anthropic:claude-sonnet-4-5 …\n"
        + "model: offline\n"
        + "\n"
        + persona_block
        + "\n"
        + "# Platform tools by name, custom tools with a Python body, declarative ones:\n"
        + "# see docs/manifest.md.\n"
        + "tools:\n"
        + f"  - {_starter_tool()}\n"
        + "\n"
        + "profiles:\n"
        + "  ci: { model: test }   # `--profile ci`: the scripted test model\n"
    )


def _starter_tool() -> str:
    """The platform tool a new buddy lists as an example: the first registered one (the
    question card, from the first built-in capability), so this file names no tool."""
    from buddy.extend import registry

    return registry().tool_names()[0]


def scenario_text(name: str, directory: Path) -> str:
    """The ``tests/smoke.yaml`` scenario of a new buddy (the ``buddy test`` format).

    Args:
        name: The buddy's name.
        directory: The buddy's directory (for the schema comment's relative path).
    """
    return (
        project_line(SCENARIO, directory, directory / "tests")
        + f"# `buddy test {name}` runs this offline: the scripted model response is what the\n"
        + "# model answers, `expect` is what the user must receive. Add a scenario per feature.\n"
        + "scenarios:\n"
        + "  - name: 打个招呼\n"
        + "    steps:\n"
        + "      - user: 你好\n"
        + "        model: [你好呀！今天过得怎么样？]\n"
        + "        expect:\n"
        + "          reply: 你好呀！今天过得怎么样？\n"
    )


GITIGNORE = (
    "# Written by `buddy init`. The compiled-buddy cache (buddy.load) and Python bytecode\n"
    "# of plugins live in __pycache__/ folders; both are rebuilt when missing.\n"
    "__pycache__/\n"
    "*.py[cod]\n"
)


def write_gitignore(directory: Path) -> Path | None:
    """Write :data:`GITIGNORE` as ``directory/.gitignore``; ``None`` when one exists (it is
    the user's, and is left as it is)."""
    target = directory / ".gitignore"
    try:
        with target.open("x", encoding="utf-8") as file:
            file.write(GITIGNORE)
    except FileExistsError:
        return None
    return target


def write_schemas(directory: Path, command: str = "init") -> None:
    """Write or refresh the schemas the ``$schema`` lines of a buddy in ``directory`` point
    at (:func:`buddy.schemas.refresh`), printing each one created or updated.

    A folder that cannot be written is a warning, not a failure: the buddy is made, only
    the editor's completion is missing.
    """
    from buddy.cli.commands import shown

    try:
        done = refresh(directory)
    except OSError as exc:
        print(
            f"buddy {command}: warning: cannot write the editor's schemas: "
            f"{exc.strerror or exc}: {exc.filename}; write them with `buddy schema --write`",
            file=sys.stderr,
        )
        return
    for path, status in done:
        if status != "unchanged":
            print(f"{status} {shown(path)}")


def _templates(path: list[Path]) -> list[str]:
    try:
        return sorted(
            make_environment(path).list_templates(
                # Not the compiled templates kept in __pycache__/ (`template-….jinja`).
                filter_func=lambda n: (
                    n.endswith(_TEMPLATE_SUFFIXES) and "__pycache__" not in n.split("/")
                )
            )
        )
    except (TypeError, OSError):  # pragma: no cover - a loader that cannot list
        return []


def _found(template: str, path: list[Path]) -> bool:
    environment = make_environment(path)
    assert environment.loader is not None
    try:
        environment.loader.get_source(environment, template)
    except jinja2.TemplateNotFound:
        return False
    return True


def _elsewhere(template: str, root: Path) -> list[Path]:
    """``personas/`` folders in the project that hold ``template`` (to suggest ``--dir``)."""
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if searched(d))
        here = Path(dirpath)
        if here.name == "personas" and (here / template).is_file():
            found.append(here)
    return found


def _persona_problem(template: str, target: Path) -> str:
    """Why ``template`` cannot be used from ``target``, or ``""`` when it can."""
    root = find_project_root(target.parent)
    path = search_path(target, root)
    if _found(template, path):
        return ""
    # The very name elsewhere in the project is a better lead than a close one here.
    places = [os.path.relpath(p.parent, Path.cwd()) for p in _elsewhere(template, root)]
    if places:
        hint = f"it is in {places[0]}/personas; create the buddy next to it: --dir {places[0]}"
    else:
        hint = did_you_mean(template, _templates(path))
    if not hint:
        shown = ", ".join(os.path.relpath(p, Path.cwd()) for p in path[1:]) or "none"
        shipped = ", ".join(n for n in _templates([BUILT_IN_PACK]) if "/" not in n)
        hint = (
            f"shared templates are looked up in the personas/ folders above it, then in "
            f"template packs ({shown}); buddy ships {shipped}"
        )
    return f"persona template `{template}` not found on the search path; {hint}"


def init(name: str, persona: str | None, parent_dir: str) -> int:
    """``buddy init NAME [--persona TEMPLATE] [--dir PARENT]``.

    Creates ``PARENT/NAME/buddy.yaml`` (offline model, a ``ci`` profile with the test
    model, an inline persona or the shared ``TEMPLATE``), ``tests/smoke.yaml`` and a
    ``.gitignore`` for the compiled-buddy cache and bytecode (``__pycache__/``); the first
    two point editors at the project's schemas, which it writes or refreshes
    (:func:`write_schemas`).

    Returns:
        0 when created (and valid); 1 when created but the shared template needs
        variables; 2 when nothing was created: a bad name, an existing directory, or a
        template not on the search path.
    """
    if not re.fullmatch(SLUG_PATTERN, name):
        suggestion = slug(name)
        hint = f"; did you mean `{suggestion}`?" if suggestion else ""
        print(
            f"buddy init: invalid name {name!r}: lowercase letters, digits and `-`, starting "
            f"with a letter or digit, at most 63 characters{hint}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    parent = Path(parent_dir)
    target = parent / name
    if target.exists() or target.is_symlink():
        print(f"buddy init: {target} already exists; choose another name or --dir", file=sys.stderr)
        return EXIT_USAGE
    if parent.exists() and not parent.is_dir():
        print(f"buddy init: {parent} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    if persona is not None:
        problem = _persona_problem(persona, target.resolve())
        if problem:
            print(f"buddy init: {problem}", file=sys.stderr)
            return EXIT_USAGE

    (target / "tests").mkdir(parents=True)
    manifest = target / "buddy.yaml"
    manifest.write_text(manifest_text(name, target.resolve(), persona), encoding="utf-8")
    scenario = target / "tests" / "smoke.yaml"
    scenario.write_text(scenario_text(name, target.resolve()), encoding="utf-8")
    # In the buddy's own folder, not a project root: init creates only this folder, and
    # the ignore rules travel with the buddy when it is copied into another repository.
    ignore = write_gitignore(target)
    for created in (manifest, scenario, ignore):
        if created is not None:
            print(f"created {created.as_posix()}")
    write_schemas(target)

    from buddy.compile.compiler import check

    _, issues = check(manifest)
    if issues:
        for issue in issues:
            print(str(issue), file=sys.stderr)
        print(
            f"buddy init: {manifest} needs attention (the template may need `persona.vars`)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    shown = target.as_posix()
    print(
        f"next: buddy validate {shown} && buddy render {shown} && buddy test {shown}\n"
        f"      buddy chat {shown} --model offline"
    )
    return EXIT_OK
