"""docs/getting-started.md, followed in an empty project: every command it shows prints
what the page shows.

The page's convention: a code block right after a line ending in "`path`:" is that file
(appended to it when the sentence says "Append to"); a ```yaml block without a label is
the whole of `tea-pal/buddy.yaml` when it starts with the schema comment, else appended to
it; the small edits the prose asks for ("make a typo", "change the last line to …") are
:data:`EDITS`, each found by its sentence, so a reworded sentence fails here rather than
silently skipping its edit; a ```text block starting with `$ ` is a command run in the
project and exactly its output (`buddy validate`, `render` and `--version` through
``buddy.cli.main`` in this process, the rest in a shell with the venv's `buddy` first on
`PATH`). In a
`buddy chat` without a pipe, the lines the prose says were typed are its input, and the
page shows them where they were typed. ``BUDDY_UPDATE_DOCS=1`` writes the real outputs
into the page, to be read in the diff.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO, venv_environment

PAGE = REPO / "docs" / "getting-started.md"
FENCE = re.compile(r"^(`{3,})(\w*)\n(.*?)^\1$", re.M | re.S)
LABEL = re.compile(r"`([\w-]+(?:[./][\w-]+)+)`:$")  # a file's path, not "`vars`:"
MANIFEST = "tea-pal/buddy.yaml"
SCHEMA_LINE = "# yaml-language-server:"
CITY_LINE = "你是{{ buddy.title }}，{{ city }}人，一个爱喝茶的聊天搭子。"


def _line(n: int, old: str, new: str) -> Callable[[str], str]:
    """Replace ``old`` by ``new`` on line ``n`` (1-based) of the manifest."""

    def edit(text: str) -> str:
        lines = text.split("\n")
        assert old in lines[n - 1], (n, lines[n - 1])
        lines[n - 1] = lines[n - 1].replace(old, new)
        return "\n".join(lines)

    return edit


def _swap(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert text.count(old) == 1, old
        return text.replace(old, new)

    return edit


#: The prose's edits of the manifest: (a sentence of the page, the edit it asks for).
EDITS: list[tuple[str, Callable[[str], str]]] = [
    ("make a typo: write `promt:` instead of `prompt:` on line 7", _line(7, "prompt:", "promt:")),
    ("Fix the typo.", _line(7, "promt:", "prompt:")),
    (
        f"Change line 8 to `{CITY_LINE}`",
        lambda t: _line(8, t.split("\n")[7].strip(), CITY_LINE)(t),
    ),
    ("change the last line to\n`handler: plugins.tea:brew`", _swap(":brew_guide\n", ":brew\n")),
    (
        "Change the line back to `handler: plugins.tea:brew_guide`",
        _swap(":brew\n", ":brew_guide\n"),
    ),
    ("say `deny: [remeber]`", _swap("deny: [remember]", "deny: [remeber]")),
    ("With `deny: [remember]`", _swap("deny: [remeber]", "deny: [remember]")),
    ("`model: deepseek-chat`", _swap("\nmodel: test\n", "\nmodel: deepseek-chat\n")),
    (
        "With two mistakes (an empty\n`title`, and `when: groups`)",
        lambda t: _swap("when: group\n", "when: groups\n")(
            _swap("title: 阿茶\n", 'title: ""\n')(t)
        ),
    ),
]
TYPED = re.compile(r"Here the lines (.+?) were typed", re.S)


@dataclass
class Command:
    line: int  # where the page shows it
    command: str
    shown: str  # the output the page shows
    stdin: str = ""


@dataclass
class Setup:
    """Shell lines run in the new project folder."""

    lines: str


@dataclass
class Write:
    path: str
    text: str
    append: bool


@dataclass
class Edit:
    edit: Callable[[str], str]


Action = Setup | Write | Edit | Command


def _walk(page: str) -> list[Action]:
    """The page as the reader's actions, in order."""
    actions: list[Action] = []
    used: set[str] = set()
    end = 0
    for match in FENCE.finditer(page):
        _, lang, body = match.groups()
        prose = page[end : match.start()]
        end = match.end()
        for sentence, edit in EDITS:
            if sentence in prose:
                actions.append(Edit(edit))
                used.add(sentence)
        last = prose.rstrip("\n").rsplit("\n", 1)[-1]
        label = LABEL.search(last)
        if label:
            sentence = prose.rstrip("\n").rsplit("\n", 2)[-1]
            actions.append(Write(label.group(1), body, append="Append to" in sentence))
        elif lang == "yaml":
            actions.append(Write(MANIFEST, body, append=not body.startswith(SCHEMA_LINE)))
        elif lang == "sh" and body.startswith("mkdir my-buddies && cd my-buddies\n"):
            actions.append(Setup(body.split("\n", 1)[1]))
        elif lang == "text" and body.startswith("$ "):
            first, _, shown = body.partition("\n")
            command = Command(page[: match.start()].count("\n") + 2, first[2:], shown)
            typed = TYPED.search(prose)
            if typed and "buddy chat" in command.command and "|" not in command.command:
                lines = re.findall(r"`([^`]+)`", typed.group(1))
                command.stdin = "".join(f"{t}\n" for t in lines)
                # The terminal echoes what was typed; the program does not print it.
                command.shown = "\n".join(s for s in shown.split("\n") if s not in lines)
            actions.append(command)
    unused = [s for s, _ in EDITS if s not in used]
    assert not unused, f"the page no longer asks for these edits: {unused}"
    return actions


ACTIONS = _walk(PAGE.read_text(encoding="utf-8"))


def test_the_page_shows_commands_files_and_edits() -> None:
    """The walk found what the page is made of (a changed convention fails here)."""
    assert sum(isinstance(a, Command) for a in ACTIONS) >= 25
    assert sum(isinstance(a, Edit) for a in ACTIONS) == len(EDITS)
    assert sum(isinstance(a, Setup) for a in ACTIONS) == 1
    assert {a.path for a in ACTIONS if isinstance(a, Write)} == {
        MANIFEST,
        "personas/friend.md.j2",
        "personas/traits/warm.yaml",
        "plugins/tea.py",
    }


def _run(project: Path, command: Command) -> str:
    """What ``command`` prints: in this process when it is `buddy validate|render|--version`
    (with a ``VAR=value`` in front, and through ``sed -n '/A/,/B/p'`` or ``head -n N``),
    else in a shell."""
    inline = IN_PROCESS.fullmatch(command.command)
    if inline is not None and not command.stdin:
        return _in_process(project, inline)
    env = venv_environment()
    for key in ("BUDDY_PROFILE", "BUDDY_MODEL", "DEEPSEEK_API_KEY", "MOONSHOT_API_KEY"):
        env.pop(key, None)
    done = subprocess.run(
        ["bash", "-c", command.command],
        cwd=project,
        env=env,
        input=command.stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout + done.stderr


#: A command run in this process (a process per command made this test 17 s long).
IN_PROCESS = re.compile(
    r"(?:(?P<var>BUDDY_\w+)=(?P<value>\S+) )?buddy (?P<args>(?:validate|render|--version)[^|]*?)"
    r"(?: \| (?:sed -n '/(?P<start>[^/]+)/,/(?P<stop>[^/]+)/p'|head -n (?P<head>\d+)))?"
)


def _in_process(project: Path, command: re.Match[str]) -> str:
    from buddy.cli.main import main

    out = io.StringIO()
    environment = {
        k: os.environ.pop(k) for k in ("BUDDY_PROFILE", "BUDDY_MODEL") if k in os.environ
    }
    if command["var"]:
        os.environ[command["var"]] = command["value"]
    cwd = Path.cwd()
    try:
        os.chdir(project)
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(out),
            contextlib.suppress(SystemExit),  # --version exits
        ):
            main(shlex.split(command["args"]))
    finally:
        os.chdir(cwd)
        os.environ.pop(command["var"] or "", None)
        os.environ.update(environment)
    lines = out.getvalue().split("\n")
    if command["head"]:
        return "\n".join(lines[: int(command["head"])])
    if command["start"]:  # sed's ranges: from a line matching start to the next matching stop
        kept: list[str] = []
        inside = False
        for line in lines:
            if inside:
                kept.append(line)
                inside = not re.search(command["stop"], line)
            elif re.search(command["start"], line):
                kept.append(line)
                inside = True
        return "\n".join(kept)
    return out.getvalue()


def test_every_command_prints_what_the_page_shows(tmp_path: Path) -> None:
    project = tmp_path / "my-buddies"
    project.mkdir()
    wrong: list[str] = []
    updates: list[tuple[Command, str]] = []
    for action in ACTIONS:
        if isinstance(action, Setup):
            _run(project, Command(0, action.lines, ""))
        elif isinstance(action, Write):
            target = project / action.path
            target.parent.mkdir(parents=True, exist_ok=True)
            before = target.read_text(encoding="utf-8") if action.append else ""
            target.write_text(before + action.text, encoding="utf-8")
        elif isinstance(action, Edit):
            manifest = project / MANIFEST
            manifest.write_text(action.edit(manifest.read_text(encoding="utf-8")), encoding="utf-8")
        else:
            got = _run(project, action).rstrip("\n")
            if got != action.shown.rstrip("\n"):
                wrong.append(
                    f"line {action.line}: $ {action.command}\n--- page\n{action.shown}\n"
                    f"--- real\n{got}"
                )
                updates.append((action, got))
    if updates and os.environ.get("BUDDY_UPDATE_DOCS"):
        _update(updates)
    assert not wrong, "\n\n".join(wrong)


def _update(updates: list[tuple[Command, str]]) -> None:
    """``BUDDY_UPDATE_DOCS=1``: write the real outputs into the page (not a chat whose
    typed lines the page interleaves: fix those by hand)."""
    page = PAGE.read_text(encoding="utf-8")
    for command, got in updates:
        if command.stdin:
            continue
        old = f"$ {command.command}\n{command.shown}"
        assert page.count(old) == 1, command.line
        page = page.replace(old, f"$ {command.command}\n{got}\n")
    PAGE.write_text(page, encoding="utf-8")
