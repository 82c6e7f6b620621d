"""One buddy of a ``buddy dev`` session: the last good version, what runs of it, its
problems, and the files its reload watches."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buddy.compile.blueprint import Blueprint
from buddy.compile.project import searched
from buddy.errors import Issue
from buddy.playground.watch import Snapshot
from buddy.runtime.server import BuddyServer

__all__ = ["DevBuddy"]


@dataclass
class DevBuddy:
    """One buddy of the session: its last good version, what runs, and its problems.

    Attributes:
        manifest: The buddy's ``buddy.yaml``.
        key: A stable id for the page (the directory's name).
        blueprint: The last good compiled version (the one running), or ``None``.
        generation: How many versions were started (1 for the first).
        model: The name of the model the running version uses.
        problems: The located problems of the latest edit (empty when it is valid).
        error: A problem that is not the manifest's (no usable model, a failed start).
        changed: The files whose change caused the latest reload attempt.
        compiled: The running version's compiled view as the page shows it, with the
            blueprint it was made from.
    """

    manifest: Path
    key: str
    blueprint: Blueprint | None = None
    server: BuddyServer | None = None
    task: asyncio.Task[None] | None = None
    generation: int = 0
    model: str = ""
    problems: list[Issue] = field(default_factory=list)
    error: str = ""
    changed: list[str] = field(default_factory=list)
    loaded_at: float | None = None
    checked_at: float | None = None
    snapshot: Snapshot = field(default_factory=dict)
    extra_files: set[str] = field(default_factory=set)
    compiled: tuple[Blueprint, dict[str, Any]] | None = None  # (blueprint, its view)

    @property
    def status(self) -> str:
        """``running``, ``error`` (running the last good version, or nothing) or ``stopped``."""
        if self.problems or self.error:
            return "error"
        return "running" if self.server is not None else "stopped"

    @property
    def identity(self) -> str | None:
        return f"{self.blueprint.name}-dev" if self.blueprint is not None else None

    def watched(self) -> set[str]:
        """Every file to poll: the blueprint's, the files of its problems, its directory's."""
        files = set(self.extra_files)
        if self.blueprint is not None:
            files.update(str(f) for f in self.blueprint.files)
        files.update(i.file for i in self.problems if i.file and not i.file.startswith("<"))
        files.add(str(self.manifest))
        for dirpath, dirnames, filenames in os.walk(self.manifest.parent):
            dirnames[:] = [d for d in dirnames if searched(d)]
            files.update(
                os.path.join(dirpath, name)
                for name in filenames
                if not name.startswith(".") and not name.endswith((".pyc", "~", ".swp"))
            )
        return {os.path.abspath(f) for f in files}
