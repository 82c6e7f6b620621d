"""Read a ``buddy.yaml``: parse, follow ``extends``, validate against the schema.

The result keeps the merged data's locations, so every later check can point at the
file, line and column that a value came from — in the buddy's own manifest or in the
manifest it extends.

Every manifest read — the buddy's own ``buddy.yaml`` and each one it extends — must lie
inside the project root after following symlinks (the rule of
:func:`buddy.compile.project.inside`), checked before the file is opened:
``extends: /etc/passwd`` or a ``buddy.yaml`` symlinked out of the project is
``file-outside-project``, and nothing outside is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from buddy.compile.project import find_project_root, inside, not_regular
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, issues_from_validation
from buddy.manifest.schema import CoreManifest, manifest_model
from buddy.manifest.yamlio import Document, YamlPath, load_document

__all__ = ["MAX_EXTENDS_DEPTH", "Source", "deep_merge", "read_manifest"]

MAX_EXTENDS_DEPTH = 16


@dataclass(slots=True)
class Source:
    """A manifest read from disk.

    Attributes:
        path: The buddy's ``buddy.yaml``.
        doc: The merged, located data (``extends`` followed).
        manifest: The validated manifest, or ``None`` when validation failed.
        partial: When validation failed: the manifest made of the top-level sections that
            did validate (placeholders for the rest), so later checks can still run on them.
        failed: The top-level sections that did not validate.
        issues: Everything wrong so far.
        files: Every manifest file read, the buddy's own first.
    """

    path: Path
    doc: Document | None
    manifest: CoreManifest | None
    partial: CoreManifest | None = None
    failed: frozenset[str] = frozenset()
    issues: list[Issue] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    @property
    def directory(self) -> Path:
        """The buddy's directory."""
        return self.path.parent

    def declared_in(self, path: YamlPath) -> Path:
        """The manifest file that wrote the value at ``path`` (the buddy's own by default)."""
        if self.doc is not None:
            loc = self.doc.values.get(path)
            if loc is not None:
                return Path(loc.file)
        return self.path


def deep_merge(base: Any, override: Any) -> Any:
    """Mappings merge key by key, recursively; lists and scalars in ``override`` replace."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = deep_merge(base[key], value) if key in base else value
        return merged
    return override


def read_manifest(path: Path) -> Source:
    """Parse, merge and validate the manifest at ``path`` (never raises for bad input)."""
    source = Source(path=path, doc=None, manifest=None)
    root = find_project_root(path.parent)
    if os.path.lexists(path) and not inside(path, root):
        source.issues.append(
            Issue.of_file(
                str(path),
                "file-outside-project",
                f"{path.name} leads outside the project, to {_resolved(path)}",
                f"the project root is {root}; put the manifest itself there, not a symlink to it",
            )
        )
        return source
    doc = _read_chain(path, (), source, root)
    if doc is None:
        return source
    doc.data.pop("extends", None)
    source.doc = doc
    if doc.data.get("abstract") is True:
        source.issues.append(
            issue_at(
                doc,
                ("abstract",),
                "manifest-abstract",
                f"{path} is a base (`abstract: true`), not a buddy",
                "bases are checked through the buddies that `extends` them; validate one of those",
            )
        )
        return source
    try:
        source.manifest = manifest_model().model_validate(doc.data)
    except ValidationError as exc:
        source.issues.extend(issues_from_validation(doc, exc, manifest_model()))
        source.failed = frozenset(str(e["loc"][0]) for e in exc.errors() if e["loc"])
        source.partial = _partial(doc.data, source.failed)
    return source


# Stand-ins for required sections that failed, so the others can still be checked.
_PLACEHOLDERS: dict[str, Any] = {"name": "invalid", "model": "test", "persona": {"prompt": "-"}}


def _partial(data: dict[str, Any], failed: frozenset[str]) -> CoreManifest | None:
    """A manifest of the sections that validated on their own (see :attr:`Source.partial`)."""
    model = manifest_model()
    values = {k: v for k, v in data.items() if k in model.model_fields and k not in failed}
    for key, value in _PLACEHOLDERS.items():
        values.setdefault(key, value)
    try:
        return model.model_validate(values)
    except ValidationError:  # pragma: no cover - sections are independent
        return None


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, ValueError):  # pragma: no cover - names checked by `inside` already
        return path


def _read_chain(path: Path, chain: tuple[Path, ...], source: Source, root: Path) -> Document | None:
    loaded = load_document(path)
    source.files.append(path)
    if isinstance(loaded, Issue):
        source.issues.append(loaded)
        return None
    extends = loaded.data.get("extends")
    if extends is None:
        return loaded
    if not isinstance(extends, str) or not extends:
        return loaded  # the schema reports the wrong type
    try:
        target = (path.parent / extends).resolve()
    except ValueError:  # a name no file can have (a NUL byte): reported missing below
        target = path.parent / extends
    here = (*chain, path.resolve())
    if target in here:
        start = here[0].parent
        cycle = " → ".join(os.path.relpath(p, start) for p in (*here[here.index(target) :], target))
        source.issues.append(
            issue_at(
                loaded,
                ("extends",),
                "extends-cycle",
                f"`extends` makes a cycle: {cycle}",
                "a manifest cannot extend itself, directly or through others",
            )
        )
        return None
    if len(here) > MAX_EXTENDS_DEPTH:
        source.issues.append(
            issue_at(
                loaded,
                ("extends",),
                "extends-cycle",
                f"`extends` chains deeper than {MAX_EXTENDS_DEPTH} manifests",
            )
        )
        return None
    if not inside(target, root):
        # Before looking at it at all: whether a file exists out there is not ours to tell.
        source.issues.append(
            issue_at(
                loaded,
                ("extends",),
                "file-outside-project",
                f"`extends: {extends}` is outside the project",
                f"{target} is not inside the project root {root}; extend a manifest in the"
                " project (a symlink to one outside counts as outside)",
            )
        )
        return None
    if not os.path.isfile(target):  # unlike Path.is_file, False for a name too long
        # Never opened: a FIFO would block the reader forever.
        kind = not_regular(target)
        source.issues.append(
            issue_at(
                loaded,
                ("extends",),
                "extends-missing",
                f"`extends` names {extends!r}, which does not exist"
                if kind is None
                else f"`extends` names {extends!r}, which is {kind}, not a regular file",
                f"looked for {target}; the path is relative to {path.name}"
                if kind is None
                else f"{target} must be a manifest file; replace it with an ordinary file",
            )
        )
        return None
    base = _read_chain(Path(_display(target, path, extends)), here, source, root)
    if base is None:
        return None
    base.data.pop("extends", None)
    base.data.pop("abstract", None)  # a base's own mark: its children are buddies
    return _merge_documents(base, loaded)


def _display(target: Path, origin: Path, given: str) -> str:
    # Keep paths as the author wrote them (relative stays relative) for readable errors.
    return str(target) if Path(given).is_absolute() else os.path.normpath(origin.parent / given)


def _has(data: Any, path: YamlPath) -> bool:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return False
    return True


def _merge_documents(base: Document, child: Document) -> Document:
    merged = Document(child.file, deep_merge(base.data, child.data))

    def visit(path: YamlPath, value: Any) -> None:
        origin = child if _has(child.data, path) else base
        for table in ("values", "keys", "blocks"):
            located = getattr(origin, table).get(path)
            if located is not None:
                getattr(merged, table)[path] = located
        if isinstance(value, dict):
            for key, item in value.items():
                visit((*path, key), item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit((*path, index), item)

    visit((), merged.data)
    return merged
