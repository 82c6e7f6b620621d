"""Every exception buddy raises, in one place.

The class tree::

    BuddyError
    ├── ManifestError      a buddy author's mistake in buddy.yaml or a file it names;
    │                      carries every located problem found, not only the first
    ├── PlatformError      the platform refused or failed a request (status + reason)
    │   └── SupersededError    a newer process of the same identity took over
    ├── ResourceNotFoundError  `resource.read` of a file the buddy does not have
    ├── ModelError         a model request failed (after retries and fallbacks)
    │   └── ModelConfigError   a model cannot be used as configured (e.g. a missing API key)
    ├── ToolError          an error a tool body raises for the model to read
    ├── CapabilityError    a platform capability that cannot be registered (a plugin's bug)
    ├── ParseError         a file that is not plain YAML/JSON (the loader turns it into an Issue)
    ├── HookFailed         a hook itself raised; the call gets an error result
    ├── Reject             the dev platform answers a request with an error status
    ├── CardError          a file is not a valid character card
    └── PngError           bytes that are not a well-formed PNG (also a ValueError)

A user's mistake, a platform failure and an error meant for the model are different
things and are caught in different places, so they never share a class.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = [
    "BuddyError",
    "CapabilityError",
    "CardError",
    "HookFailed",
    "Issue",
    "ManifestError",
    "ModelConfigError",
    "ModelError",
    "ParseError",
    "PlatformError",
    "PngError",
    "Reject",
    "ResourceNotFoundError",
    "SupersededError",
    "ToolError",
]


class BuddyError(Exception):
    """Base class of every error raised by buddy."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """One located problem in a manifest or in a file the manifest names (built by
    keyword: seven positional fields are easy to swap).

    Attributes:
        file: Path of the file the problem is in, as given or found.
        line: 1-based line (0 when the problem has no position, e.g. a missing file).
        column: 1-based column (0 when unknown).
        path: The field path inside the manifest, e.g. ``tools[2].parameters``;
            empty for problems outside the manifest's fields.
        code: A stable, machine-readable code such as ``unknown-key``.
        message: What is wrong, in one sentence.
        hint: How to fix it; empty when there is nothing useful to add.
    """

    file: str
    line: int
    column: int
    path: str
    code: str
    message: str
    hint: str = ""

    @classmethod
    def of_file(cls, file: str, code: str, message: str, hint: str = "") -> Issue:
        """A problem of a whole file (no line, column or field path: a missing file, say)."""
        return cls(file=file, line=0, column=0, path="", code=code, message=message, hint=hint)

    def shown_as(self, file: str) -> Issue:
        """The same issue with its file shown as ``file`` (a relative path, say)."""
        return replace(self, file=file)

    def coded(self, code: str) -> Issue:
        """The same issue under ``code`` (every problem of one kind of file, say)."""
        return replace(self, code=code)

    def to_dict(self) -> dict[str, str | int]:
        """The normative JSON shape used by ``buddy validate --format json``."""
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        field = f" [{self.path}]" if self.path else ""
        text = f"{where}: {self.message}{field} ({self.code})"
        return f"{text}\n    hint: {self.hint}" if self.hint else text


class ManifestError(BuddyError):
    """A manifest (or a file it names) is invalid.

    Attributes:
        issues: Every problem found, sorted by file, line and column.
    """

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = sorted(issues, key=lambda i: (i.file, i.line, i.column, i.code))
        count = len(self.issues)
        head = f"{count} problem{'s' if count != 1 else ''} in the manifest"
        super().__init__("\n".join([head, *map(str, self.issues)]))


class PlatformError(BuddyError):
    """The platform answered a request with an error, or could not be reached.

    Attributes:
        status: The HTTP status, or 0 when no response arrived.
        reason: The platform's reason string.
        code: The platform's machine-readable code (``memory_full`` …), ``""`` when its
            answer had none.
    """

    def __init__(self, status: int, reason: str, *, code: str = "") -> None:
        self.status = status
        self.reason = reason
        self.code = code
        super().__init__(f"platform error {status}: {reason}" if status else reason)


class SupersededError(PlatformError):
    """Another process connected with the same identity; this one must stop, not reconnect."""

    def __init__(self, reason: str) -> None:
        super().__init__(0, f"superseded: {reason}")


class StartError(BuddyError):
    """Something the tooling starts (a local dev platform, a buddy in the playground) did
    not come up; the message says which and why."""


class ResourceNotFoundError(BuddyError, LookupError):
    """``resource.read(file)`` named a file that is not among the buddy's resources."""


class ModelError(BuddyError):
    """A model request failed.

    Attributes:
        model: ``provider:name`` of the model that failed.
        status: The HTTP status, or 0 (connection error, timeout, bad stream).
        retryable: Whether trying again (or a fallback) may help.
        retry_after: Seconds the provider asked to wait before trying again (its
            ``Retry-After`` header), or ``None`` when it did not say.
    """

    def __init__(
        self,
        model: str,
        message: str,
        *,
        status: int = 0,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        self.model = model
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(f"{model}: {message}")


class ModelConfigError(ModelError):
    """The model cannot be used as configured, e.g. its API key variable is not set."""

    def __init__(self, model: str, message: str) -> None:
        super().__init__(model, message, retryable=False)


class ToolError(BuddyError):
    """Raised inside a tool body; its message becomes the error result the model sees."""


class CapabilityError(BuddyError):
    """A capability cannot be registered: a part is missing or wrong, or a name is taken.

    Attributes:
        where: The capability's module or entry point.
        problem: What is wrong, naming the part.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"capability {where}: {problem}")


class ParseError(BuddyError):
    """A file that is not plain YAML (or JSON); :attr:`issue` says where and why."""

    def __init__(self, issue: Issue) -> None:
        self.issue = issue
        super().__init__(str(issue))


class HookFailed(BuddyError):
    """A hook itself raised; the call gets an error result."""


class Reject(BuddyError):
    """The dev platform answers the request with ``status`` and its ``reason``.

    Attributes:
        status: HTTP status (400 invalid, 401/403 auth or read-only, 404, 409 conflict …).
        code: A stable machine-readable code, e.g. ``memory_key_invalid``.
        reason: The platform's reason, shown to developers and (inside tools) to the model.
    """

    def __init__(self, status: int, code: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code
        self.reason = reason

    @classmethod
    def of(cls, refusal: Any) -> Reject:
        """The answer to a request that breaks one of :mod:`buddy.platform.limits`' rules (or a capability's ``limits``)
        (a ``Refusal``: ``status``, ``code``, ``reason``)."""
        return cls(refusal.status, refusal.code, refusal.reason)


class CardError(BuddyError):
    """A file is not a valid character card.

    Attributes:
        file: The file, as given.
        problems: What is wrong, one item per problem (``data.tags[1]: expected …``).
    """

    def __init__(self, file: str, problems: list[str]) -> None:
        self.file = file
        self.problems = list(problems)
        super().__init__("\n".join(f"{file}: {problem}" for problem in self.problems))


class PngError(BuddyError, ValueError):
    """The bytes are not a well-formed PNG, or a text chunk cannot be decoded."""
