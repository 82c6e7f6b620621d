"""The bodies of ``buddy import-card`` and ``buddy export-card`` (Character Card V2/V3)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from buddy.compile.project import not_regular
from buddy.errors import ManifestError

if TYPE_CHECKING:
    from buddy.cards import Exported

__all__ = ["export_card", "import_card"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
_SLUG = r"^[a-z0-9][a-z0-9-]{0,62}$"  # buddy.manifest.schema.SLUG_PATTERN, without pydantic


def _say(command: str, text: str) -> None:
    for line in text.splitlines():
        print(f"buddy {command}: {line}", file=sys.stderr)


def import_card(file: str, parent_dir: str, name: str | None) -> int:
    """``buddy import-card FILE [--dir PARENT] [--name SLUG]``.

    Creates ``PARENT/NAME/`` with ``buddy.yaml``, ``card.json`` (the whole card), for a
    PNG card ``card.png`` (its picture), and, as ``buddy init`` does, a smoke scenario
    ``tests/smoke.yaml``, a ``.gitignore`` and the project's schemas when missing or stale.

    Returns:
        0 when created; 1 when ``FILE`` is not a valid card (or the new buddy does not
        validate); 2 for a usage error: no such file, a bad or underivable name, an
        existing directory.
    """
    command = "import-card"
    path = Path(file)
    if not path.exists():  # read_card refuses one that is not a regular file
        _say(command, f"{file}: no such file")
        return EXIT_USAGE
    if name is not None and not re.fullmatch(_SLUG, name):
        _say(
            command,
            f"invalid --name {name!r}: lowercase letters, digits and `-`, starting with a "
            "letter or digit, at most 63 characters",
        )
        return EXIT_USAGE

    from buddy.cards import CardError, derive_name, import_files, read_card

    try:
        card = read_card(path)
    except CardError as exc:
        _say(command, str(exc))
        return EXIT_INVALID
    for warning in card.warnings:
        _say(command, f"warning: {file}: {warning}")
    source = ""
    if name is None:
        name, source = derive_name(card, path.stem)
        if not name:
            _say(
                command,
                f"cannot make a buddy name from the card's name {card.text('name')!r} or the "
                f"file name; give one with --name (lowercase letters, digits and `-`)",
            )
            return EXIT_USAGE
    parent = Path(parent_dir)
    target = parent / name
    if target.exists() or target.is_symlink():
        _say(command, f"{target} already exists; choose another --name or --dir")
        return EXIT_USAGE
    if parent.exists() and not parent.is_dir():
        _say(command, f"{parent} is not a directory")
        return EXIT_USAGE
    try:
        files = import_files(card, name, target.resolve())
    except CardError as exc:
        _say(command, str(exc))
        return EXIT_INVALID

    from buddy.cli.init import scenario_text, write_gitignore, write_schemas

    # The smoke scenario `buddy init` writes: the card's persona does not change it, and
    # `buddy test` on a directory of buddies then has something to run for this one.
    files["tests/smoke.yaml"] = scenario_text(name, target.resolve()).encode("utf-8")
    target.mkdir(parents=True)
    for filename, content in files.items():
        (target / filename).parent.mkdir(parents=True, exist_ok=True)
        (target / filename).write_bytes(content)
        print(f"created {(target / filename).as_posix()}")
    ignore = write_gitignore(target)
    if ignore is not None:
        print(f"created {ignore.as_posix()}")
    write_schemas(target, command)
    if source:
        print(f"name `{name}` from {source} (choose another with --name)")

    from buddy.compile.compiler import check

    _, issues = check(target)
    if issues:  # pragma: no cover - import writes a buddy that validates
        for issue in issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
    shown = target.as_posix()
    print(
        f"next: buddy validate {shown} && buddy render {shown} && buddy test {shown}\n"
        f"      buddy chat {shown} --model offline"
    )
    return EXIT_OK


def _summary(exported: Exported) -> str:
    if not exported.sidecar:
        return "made from the buddy (it has no card.json)"
    converted = f", converted to V{exported.version}" if exported.converted else ""
    if not exported.changed:
        return f"card.json as it was{converted} (nothing in the buddy changed)"
    return f"card.json{converted}, with {', '.join(exported.changed)} from the buddy"


def export_card(
    path: str, fmt: str | None, out: str | None, version: int | None, image: str | None
) -> int:
    """``buddy export-card PATH [--format json|png] [--out FILE] [--v2|--v3] [--image PNG]``.

    Returns:
        0 when written; 1 when the buddy, its ``card.json`` or the ``--image`` is invalid;
        2 for a usage error (no buddy at ``PATH``, no such image, options that do not go
        together).
    """
    command = "export-card"
    given = Path(path)
    manifest = given / "buddy.yaml" if given.is_dir() else given
    if not manifest.exists():  # the compile refuses one that is not a regular file
        _say(command, f"{path}: no buddy.yaml here")
        return EXIT_USAGE
    if fmt is None:
        wants_png = image is not None or (out is not None and out.lower().endswith(".png"))
        fmt = "png" if wants_png else "json"
    if fmt == "png" and out == "-":
        _say(command, "a PNG card cannot go to standard output; give --out FILE")
        return EXIT_USAGE
    if image is not None and fmt != "png":
        _say(command, "--image is for --format png")
        return EXIT_USAGE
    base: bytes | None = None
    if image is not None:
        if not Path(image).exists():
            _say(command, f"{image}: no such file")
            return EXIT_USAGE
        kind = not_regular(Path(image))
        if kind is not None:  # never opened: a FIFO would block the reader forever
            _say(command, f"{image}: this file is {kind}, not a regular file")
            return EXIT_INVALID
        base = Path(image).read_bytes()

    from buddy.cards import CardError, PngError, card_json, card_png
    from buddy.cards import export_card as build

    try:
        exported = build(manifest.parent, 3 if version == 3 else 2 if version == 2 else None)
    except ManifestError as exc:
        for issue in exc.issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
    except CardError as exc:
        _say(command, str(exc))
        return EXIT_INVALID
    for warning in exported.warnings:
        _say(command, f"warning: {warning}")

    if fmt == "json":
        content = card_json(exported.card).encode("utf-8")
    else:
        try:
            content = card_png(exported.card, exported.version, base or exported.image)
        except PngError as exc:
            _say(command, f"{image or 'card.png'}: {exc}")
            return EXIT_INVALID
    summary = f"Character Card V{exported.version}: {_summary(exported)}"
    if out == "-":
        sys.stdout.write(content.decode("utf-8"))
        print(summary, file=sys.stderr)
        return EXIT_OK
    target = Path(out) if out is not None else Path(f"{exported.name}.{fmt}")
    try:
        target.write_bytes(content)
    except OSError as exc:
        _say(command, f"{target}: cannot write: {exc.strerror or exc}")
        return EXIT_USAGE
    print(f"wrote {target.as_posix()} — {summary}")
    return EXIT_OK
