"""The bodies of ``buddy import-card`` / ``export-card`` (Character Card V2/V3) and
``buddy import-lore`` / ``export-lore`` (standalone lorebooks)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from buddy.compile.project import not_regular
from buddy.errors import ManifestError

if TYPE_CHECKING:
    from buddy.cards import Exported, Lorebook

__all__ = ["export_card", "export_lore", "import_card", "import_lore"]

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

    from buddy.cards import CardError, derive_lore, derive_name, import_files, read_card

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
        warnings = derive_lore(card)[1]
    except CardError as exc:
        _say(command, str(exc))
        return EXIT_INVALID
    for warning in warnings:
        _say(command, f"warning: {file}: {warning}")

    from buddy.cli.init import scenario_text, write_gitignore, write_schemas

    # The smoke scenario `buddy init` writes: the card's persona does not change it, and
    # `buddy test` on a directory of buddies then has something to run for this one.
    files["tests/smoke.yaml"] = scenario_text(name, target.resolve()).encode("utf-8")
    parent.mkdir(parents=True, exist_ok=True)
    issues = _build(target, files)
    if issues:
        for issue in issues:
            print(issue, file=sys.stderr)
        return EXIT_INVALID
    for filename in files:
        print(f"created {(target / filename).as_posix()}")
    ignore = write_gitignore(target)
    if ignore is not None:
        print(f"created {ignore.as_posix()}")
    write_schemas(target, command)
    if source:
        print(f"name `{name}` from {source} (choose another with --name)")
    shown = target.as_posix()
    print(
        f"next: buddy validate {shown} && buddy render {shown} && buddy test {shown}\n"
        f"      buddy chat {shown} --model offline"
    )
    return EXIT_OK


def _build(target: Path, files: dict[str, bytes]) -> list[str]:
    """Write ``files`` into a new folder next to ``target``, validate it, and only then
    move it to ``target``: a failed import leaves nothing behind. The problems found
    (naming ``target``'s files), or ``[]`` when it is in place."""
    from buddy.compile.compiler import check

    building = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    moved = False
    try:
        for filename, content in files.items():
            (building / filename).parent.mkdir(parents=True, exist_ok=True)
            (building / filename).write_bytes(content)
        _, issues = check(building)
        if issues:
            return [str(i).replace(str(building), str(target)) for i in issues]
        if target.exists() or target.is_symlink():
            return [f"{target} appeared during the import; nothing was written there"]
        os.rename(building, target)
        moved = True
    finally:
        if not moved:
            shutil.rmtree(building, ignore_errors=True)
    return []


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


def _manifest(path: str) -> Path | None:
    given = Path(path)
    manifest = given / "buddy.yaml" if given.is_dir() else given
    return manifest if manifest.is_file() else None


def _lore_folder(manifest: Path) -> str | None:
    """The ``lore:`` folder ``buddy.yaml`` names (``None``: none, or not readable)."""
    from buddy.errors import Issue
    from buddy.manifest.yamlio import load_document

    loaded = load_document(manifest, str(manifest))
    if isinstance(loaded, Issue) or not isinstance(loaded.data, dict):
        return None
    folder = loaded.data.get("lore")
    return folder if isinstance(folder, str) and folder.strip() else None


def import_lore(file: str, into: str, name: str | None) -> int:
    """``buddy import-lore FILE [--into BUDDY] [--name NAME]``.

    Adds ``lore/NAME.yaml`` (the lorebook as a lore book) and ``lore/NAME.card.json`` (the
    file as read, for ``export-lore``) to the buddy, and ``lore: lore`` to its
    ``buddy.yaml`` when it has no lore yet. When the buddy does not validate afterwards,
    everything is undone.

    Returns:
        0 when added; 1 when ``FILE`` is not a lorebook or the buddy would not validate;
        2 for a usage error (no such file, no buddy, a bad name, a book of that name).
    """
    command = "import-lore"
    path = Path(file)
    if not path.exists():
        _say(command, f"{file}: no such file")
        return EXIT_USAGE
    manifest = _manifest(into)
    if manifest is None:
        _say(command, f"{into}: no buddy.yaml here (give the buddy with --into)")
        return EXIT_USAGE

    from buddy.cards import CardError, read_lorebook, slugify
    from buddy.cards.lore import derive_book
    from buddy.cards.lorefile import LORE_SIDECAR
    from buddy.cards.mapping import book_problems, dump_yaml

    name = name if name is not None else (slugify(path.stem) or "lorebook")
    if not re.fullmatch(_SLUG, name):
        _say(command, f"invalid --name {name!r}: lowercase letters, digits and `-`")
        return EXIT_USAGE
    folder = _lore_folder(manifest)
    books = manifest.parent / (folder or "lore")
    written = [books / f"{name}.yaml", books / f"{name}{LORE_SIDECAR}"]
    if any(p.exists() or p.is_symlink() for p in written):
        _say(command, f"{written[0]} already exists; choose another --name")
        return EXIT_USAGE
    try:
        lorebook = read_lorebook(path)
    except CardError as exc:
        _say(command, str(exc))
        return EXIT_INVALID
    lore, _, warnings = derive_book(lorebook.book, lorebook.shape)
    problems = book_problems(lore, f"as lore/{name}.yaml:")
    if problems:
        _say(command, str(CardError(file, problems)))
        return EXIT_INVALID
    for warning in warnings:
        _say(command, f"warning: {file}: {warning}")
    header = (
        f"# From {path.name} (buddy import-lore), with SillyTavern's shipped settings written\n"
        f"# out; {name}{LORE_SIDECAR} keeps the file as it was. Edit freely: export-lore\n"
        "# writes back the entries you change and leaves the others as they were.\n"
    )
    contents = [(header + dump_yaml(lore)).encode("utf-8"), path.read_bytes()]
    issues = _add_book(manifest, folder, written, contents)
    if issues:
        for issue in issues:
            print(issue, file=sys.stderr)
        return EXIT_INVALID
    for created in written:
        print(f"created {created.as_posix()}")
    if folder is None:
        print(f"added `lore: lore` to {manifest.as_posix()}")
    return EXIT_OK


def _add_book(
    manifest: Path, folder: str | None, files: list[Path], contents: list[bytes]
) -> list[str]:
    """Write the book's files (and ``lore: lore`` when ``folder`` is ``None``), validate
    the buddy, and undo it all when it does not validate; the problems, or ``[]``."""
    from buddy.compile.compiler import check

    before = manifest.read_bytes()
    made_folder = not files[0].parent.exists()
    done = False
    try:
        files[0].parent.mkdir(parents=True, exist_ok=True)
        for file, content in zip(files, contents, strict=True):
            with file.open("xb") as out:
                out.write(content)
        if folder is None:
            ending = b"" if before.endswith(b"\n") else b"\n"
            manifest.write_bytes(
                before + ending + b"\n# Lore books (buddy import-lore).\nlore: lore\n"
            )
        _, issues = check(manifest.parent)
        if issues:
            return [str(i) for i in issues]
        done = True
    finally:
        if not done:
            manifest.write_bytes(before)
            for file in files:
                file.unlink(missing_ok=True)
            if made_folder:
                shutil.rmtree(files[0].parent, ignore_errors=True)
    return []


def _original(book_file: Path, directory: Path) -> Lorebook | None:
    """The lorebook ``book_file`` was imported from: its sidecar, or for the card's book
    the ``character_book`` of ``card.json`` (``None``: none).

    Raises:
        CardError: It is not a valid lorebook (or card).
    """
    from buddy.cards import read_card, read_lorebook
    from buddy.cards.lore import BOOK_FILE
    from buddy.cards.lorefile import LORE_SIDECAR, Lorebook
    from buddy.cards.mapping import SIDECAR

    sidecar = book_file.with_name(book_file.stem + LORE_SIDECAR)
    card = directory / SIDECAR
    if sidecar.exists():
        return read_lorebook(sidecar)
    if book_file.name == BOOK_FILE and card.exists():
        lorebook = read_card(card).data.get("character_book")
        if isinstance(lorebook, dict):
            return Lorebook(lorebook, "character_book", str(card))
    return None


def export_lore(path: str, book: str, out: str | None, fmt: str | None) -> int:
    """``buddy export-lore BUDDY BOOK [-o FILE] [--format wi|lorebook_v3]``.

    Returns:
        0 when written; 1 when the buddy, the book or its original is invalid; 2 for a
        usage error (no buddy, no such book, an unwritable output).
    """
    command = "export-lore"
    manifest = _manifest(path)
    if manifest is None:
        _say(command, f"{path}: no buddy.yaml here")
        return EXIT_USAGE
    folder = _lore_folder(manifest) or "lore"
    book_file = manifest.parent / folder / f"{book}.yaml"
    if not book_file.is_file():
        _say(command, f"{book_file}: no such lore book")
        return EXIT_USAGE

    from buddy.cards import CardError, card_json
    from buddy.cards.lorefile import lorebook_file
    from buddy.compile.compiler import check
    from buddy.errors import Issue
    from buddy.manifest.yamlio import load_document

    _, issues = check(manifest.parent)
    if issues:
        for issue in issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
    loaded = load_document(book_file, str(book_file))
    if isinstance(loaded, Issue):  # pragma: no cover - the check above read it
        print(str(loaded), file=sys.stderr)
        return EXIT_INVALID
    try:
        original = _original(book_file, manifest.parent)
    except CardError as exc:
        _say(command, str(exc))
        return EXIT_INVALID
    data, kind, warnings = lorebook_file(
        original,
        loaded.data,
        "wi" if fmt == "wi" else "lorebook_v3" if fmt == "lorebook_v3" else None,
    )
    for warning in warnings:
        _say(command, f"warning: {warning}")
    if original is None:
        summary = "made from the book (it has no original)"
    elif data == original.raw:
        summary = "the original as it was (nothing in the book changed)"
    else:
        summary = f"{Path(original.file).name} with the book's changes"
    content = card_json(data)
    if out == "-":
        sys.stdout.write(content)
        print(f"{kind}: {summary}", file=sys.stderr)
        return EXIT_OK
    target = Path(out) if out is not None else Path(f"{book}.json")
    try:
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        _say(command, f"{target}: cannot write: {exc.strerror or exc}")
        return EXIT_USAGE
    print(f"wrote {target.as_posix()} — {kind}: {summary}")
    return EXIT_OK
