"""What every part of a compile shares, and what a capability section's compile sees.

:class:`Compilation` holds a compile in progress: the manifest and its document, the
problems found so far, the files the blueprint depends on, and the helpers that locate a
problem, resolve a handler or a folder. The compiler's parts (:mod:`.tool_compiler`,
:mod:`.persona_compiler`) and the driver (:mod:`.compiler`) extend it; each registered
capability section is compiled through a :class:`_SectionContext` over it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from buddy.compile.blueprint import HandlerRef
from buddy.compile.handlers import HandlerProblem, resolve_handler
from buddy.compile.persona import find_project_root, search_path
from buddy.compile.project import inside, resolved
from buddy.errors import Issue
from buddy.extend import resolve
from buddy.extend import sections as registered_sections
from buddy.manifest.load import Source
from buddy.manifest.locate import issue_at
from buddy.manifest.schema import CoreManifest
from buddy.manifest.yamlio import Document, YamlPath

__all__ = ["Compilation", "find_on_path"]


class Compilation:
    """A compile in progress: what its parts share (see the module docstring)."""

    def __init__(
        self,
        source: Source,
        manifest: CoreManifest,
        doc: Document,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        self.skip = skip
        self.source = source
        self.manifest = manifest
        self.doc = doc
        self.issues: list[Issue] = []
        self.warnings: list[Issue] = []
        self.root = find_project_root(source.directory)
        self.files: set[Path] = {resolved(p) for p in source.files}

    # ------------------------------------------------------------ helpers

    def error(
        self, path: YamlPath, code: str, message: str, hint: str = "", *, key: bool = False
    ) -> None:
        self.issues.append(issue_at(self.doc, path, code, message, hint, key=key))

    def directory_of(self, path: YamlPath) -> Path:
        """The directory of the manifest file that wrote ``path`` (paths are relative to it)."""
        return self.source.declared_in(path).parent

    def outside_file(self, file: Path, name: str) -> Issue:
        """``file-outside-project`` for a file the buddy would read (symlinked out)."""
        return Issue.of_file(
            str(file),
            "file-outside-project",
            f"{name} leads outside the project, to {file.resolve()}",
            f"keep the file inside the project root {self.root}, not a symlink to one outside",
        )

    def plugin_roots(self, path: YamlPath) -> list[Path]:
        roots = [resolved(self.directory_of(path)), self.root]
        return list(dict.fromkeys(roots))

    def handler(self, reference: str, kind: str, path: YamlPath) -> HandlerRef | None:
        found = resolve_handler(reference, kind, self.plugin_roots(path))
        if isinstance(found, HandlerProblem):
            if found.file is not None:
                self.issues.append(
                    Issue(
                        file=str(found.file),
                        line=found.line,
                        column=1,
                        path="",
                        code=found.code,
                        message=found.message,
                        hint=found.hint,
                    )
                )
            else:
                self.error(path, found.code, found.message, found.hint)
            return None
        self.files.add(resolved(found.file))
        return found

    # ------------------------------------------------------------ capability sections

    def sections(self) -> dict[str, Any]:
        """Each registered section compiled, by key (its compile function reports its
        problems on a :class:`_SectionContext`)."""
        compiled: dict[str, Any] = {}
        for section in registered_sections():
            if section.key in self.skip:
                continue
            value = resolve(section.compile)(_SectionContext(self, section.key))
            if value is not None:  # `None`: the buddy has no such section (not rendered)
                compiled[section.key] = value
        return compiled

    # ------------------------------------------------------------ folders

    def folder(self, field: str) -> Path | None:
        value: str = getattr(self.manifest, field)
        explicit = field in self.doc.data
        base = self.directory_of((field,)) if explicit else self.source.directory
        try:
            folder = resolved(base / value)
        except ValueError:  # a name no directory can have (a NUL byte): reported missing below
            folder = base / value
        if os.path.isdir(folder):  # unlike Path.is_dir, False for a name too long
            if inside(folder, self.root):
                return folder
            # A folder's files are compiled in, served to the model or uploaded, and walked
            # at every compile: one out of the project (`resources: /`) would publish, and
            # walk, anything on the disk.
            self.error(
                (field,),
                "dir-outside-project",
                f"`{field}: {value}` is outside the project",
                f"{folder} is not inside the project root {self.root}; keep the folder in the"
                " project (a symlink to it counts as outside)",
            )
            return None
        if explicit:
            self.error(
                (field,),
                "dir-not-found",
                f"`{field}: {value}` — no such directory",
                f"looked for {folder}",
            )
        return None


class _SectionContext:
    """What a capability section's compile function sees of the compiler
    (:class:`buddy.extend.SectionContext`)."""

    def __init__(self, compiler: Compilation, key: str) -> None:
        self._compiler = compiler
        self.key = key
        self.value: Any = getattr(compiler.manifest, key, None)
        self.doc = compiler.doc
        self.directory = compiler.source.directory
        self.root = compiler.root

    def declared_in(self) -> Path:
        return self._compiler.source.declared_in((self.key,))

    def error(
        self,
        path: tuple[str | int, ...],
        code: str,
        message: str,
        hint: str = "",
        *,
        key: bool = False,
    ) -> None:
        self._compiler.error((self.key, *path), code, message, hint, key=key)

    def report(self, issue: Issue) -> None:
        self._compiler.issues.append(issue)

    def depends_on(self, path: Path) -> None:
        self._compiler.files.add(resolved(path))

    def inside(self, path: Path) -> bool:
        return inside(path, self.root)

    def outside_file(self, file: Path, name: str) -> Issue:
        return self._compiler.outside_file(file, name)

    def folder(self) -> Path | None:
        return self._compiler.folder(self.key)

    def search_path(self) -> list[Path]:
        path = search_path(self._compiler.source.directory, self.root)
        declared = resolved(self._compiler.directory_of((self.key,)))
        if declared not in path:
            path.insert(1, declared)
        return path

    def shared(self, name: str) -> Path | None:
        return find_on_path(name, self.search_path())


def find_on_path(name: str, path: list[Path]) -> Path | None:
    """The first ``name`` on ``path``, whatever it is: one that is not a regular file (a
    FIFO, a directory) is the caller's to refuse (:func:`not_regular`), not passed over."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts:
        return None
    for directory in path:
        candidate = directory.joinpath(*parts)
        # os.path.exists, unlike Path.exists, is False (not an error) for a name too long.
        if os.path.exists(candidate) and resolved(candidate).is_relative_to(resolved(directory)):
            return candidate
    return None
