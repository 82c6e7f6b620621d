"""The shared data files a manifest names, as relation specs and appraisal files are
found: a bare name (``debt``) is ``<folder>/<name>.yaml`` on the persona search path, then
the file buddy ships of that name; anything else is a path on the search path. A project's
file is checked like every file a buddy reads (inside the project, a regular file) and
recorded as a dependency; the shipped ones are buddy's own.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from buddy.compile.memo import MISSING, keep, recall
from buddy.compile.project import not_regular, read_file
from buddy.errors import Issue
from buddy.manifest.locate import issue_at, validated
from buddy.manifest.schema import did_you_mean
from buddy.manifest.yamlio import MAX_FILE_BYTES, Document, YamlPath, load_document

if TYPE_CHECKING:
    from buddy.extend import SectionContext

__all__ = ["DataFiles"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DataFiles:
    """One kind of shared data file.

    Attributes:
        folder: Its folder on the search path (``relations``).
        shipped: The folder of the files buddy ships.
        noun: What it is called in messages (``relation spec``), and with its article
            (``a relation spec``, ``an appraisal file``).
        bare: What a bare name looks like (anything else is a path).
        missing: The error code of a name found nowhere (``relation-not-found``).
        code: The error code of a file that is not one (``relation-spec``).
        listed: What the names a missing one is compared with are (``shipped``).
    """

    folder: str
    shipped: Path
    noun: str
    a_noun: str
    bare: re.Pattern[str]
    missing: str
    code: str
    listed: str = "there are"

    def shipped_names(self) -> list[str]:
        """The names of the files buddy ships, sorted."""
        return sorted(p.stem for p in self.shipped.glob("*.yaml"))

    def find(self, context: SectionContext, reference: str) -> Path | None:
        """Where ``reference`` is: what is on the search path, regular or not (a FIFO
        ``relations/debt.yaml`` is refused by :meth:`load`, not replaced by the shipped
        ``debt``), else the shipped file; ``None``: nowhere."""
        if self.bare.match(reference):
            found = context.shared(f"{self.folder}/{reference}.yaml")
            if found is not None:
                return found
            shipped = self.shipped / f"{reference}.yaml"
            return shipped if shipped.is_file() else None
        return context.shared(reference)

    def load(
        self, context: SectionContext, reference: str, where: YamlPath, names: list[str]
    ) -> tuple[Path, Document] | None:
        """The file ``reference`` names and its document; ``None`` when it is not found,
        not allowed or not a YAML mapping (reported at ``where``, or in the file).

        Args:
            names: What a name not found may have meant (did you mean).
        """
        file = self.located(context, reference, where, names)
        if file is None:
            return None
        doc = self._document(context, file)
        return None if doc is None else (file, doc)

    def _document(self, context: SectionContext, file: Path) -> Document | None:
        """The YAML document of ``file``; ``None`` when it is not a mapping or cannot be
        read (reported)."""
        doc = load_document(file, str(file))
        if isinstance(doc, Issue):
            if doc.code == "yaml-not-mapping":
                doc = Issue.of_file(str(file), self.code, f"{self.a_noun} is a mapping")
            context.report(doc)
            return None
        return doc

    def located(
        self, context: SectionContext, reference: str, where: YamlPath, names: list[str]
    ) -> Path | None:
        """The file ``reference`` names, allowed to be read (a dependency of the buddy when
        it is the project's); ``None`` when it is not found or not allowed (reported)."""
        file = self.find(context, reference)
        if file is None:
            context.error(
                where,
                self.missing,
                f"{self.noun} `{reference}` not found",
                did_you_mean(reference, names)
                or f"{self.listed}: {', '.join(names)}; a path is looked up on: "
                + ", ".join(str(p) for p in context.search_path()),
            )
            return None
        if not file.resolve().is_relative_to(self.shipped.resolve()):
            if not context.inside(file):
                context.report(context.outside_file(file, reference))
                return None
            kind = not_regular(file)
            if kind is not None:  # never opened: a FIFO would block the reader forever
                context.error(
                    where,
                    "file-not-regular",
                    f"{self.noun} `{reference}` is {kind}, not a regular file",
                    f"{file} must be {self.a_noun}; replace it with an ordinary file",
                )
                return None
            context.depends_on(file)
        return file

    def compiled(
        self,
        context: SectionContext,
        reference: str,
        where: YamlPath,
        names: list[str],
        read: Callable[[Document, Path], T | None],
    ) -> T | None:
        """What ``read`` makes of the file ``reference`` names (its document and where it
        is: the file parsed and checked, :meth:`parse`), or ``None`` when the file has a
        problem (reported, as by :meth:`load`, or by ``read``).

        A result is kept for the next compile (:mod:`buddy.compile.memo`) by the file's
        place and bytes: a file read before and unchanged is not parsed and checked again
        (nor is what checks it imported). Only a file without problems is kept, so every
        problem is still found by reading the file.
        """
        file = self.located(context, reference, where, names)
        if file is None:
            return None
        content = read_file(file, str(file), MAX_FILE_BYTES)
        key = None
        if isinstance(content, bytes):
            key = (str(file), str(file.resolve()), hashlib.sha256(content).hexdigest())
            kept = recall(self.code, key)
            if kept is not MISSING:
                return kept  # type: ignore[no-any-return]
        doc = self._document(context, file)
        if doc is None:
            return None
        result = read(doc, file.resolve())
        if result is not None and key is not None:
            keep(self.code, key, result)
        return result

    def parse(
        self,
        context: SectionContext,
        doc: Document,
        model: type[M],
        problems: Callable[[M], Iterable[tuple[YamlPath, str]]],
    ) -> M | None:
        """``doc`` as ``model``, with the rules between its parts (``problems``); ``None``
        when it is not one (every problem reported, located in the file)."""
        parsed, issues = validated(doc, model, self.code)
        for issue in issues:
            context.report(issue)
        if parsed is None:
            return None
        found = list(problems(parsed))
        for path, message in found:
            context.report(issue_at(doc, path, self.code, message))
        return None if found else parsed
