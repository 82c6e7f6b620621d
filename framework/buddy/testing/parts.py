"""What a capability's scenario words are given (:class:`~buddy.extend.StepAction`,
:class:`~buddy.extend.StepExpect`): the runner of one scenario (:class:`StepRun`)
and the checker of a scenario file (:class:`StepCheck`). The scenario runner and reader
implement them; a capability's ``scenario.py`` uses only what is here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, Protocol

if TYPE_CHECKING:
    from buddy.compile.blueprint import Blueprint
    from buddy.manifest.yamlio import YamlPath
    from buddy.runtime.server import BuddyServer
    from buddy.testing.local import LocalPlatform
    from buddy.testing.scripted_model import LayerScript

__all__ = ["StepCheck", "StepRun"]


class StepRun(Protocol):
    """One scenario running against its dev platform.

    Attributes:
        platform: The dev platform (``platform.dev(method, path, …)`` acts as the user
            and the world; ``platform.http`` speaks the buddy's protocol).
        cid: The scenario's conversation.
        identity: The buddy's identity on the platform.
        token: The buddy's token (for ``/internal/v1`` reads as the buddy).
        blueprint: The buddy.
        server: The running buddy (its conversation layers: ``server.buddy.layers``).
        layer_script: The layers' model: ``push(answer)`` scripts its next answer.
    """

    platform: LocalPlatform
    cid: str
    identity: str
    token: str
    blueprint: Blueprint
    server: BuddyServer
    layer_script: LayerScript

    def member_id(self, name: str | None) -> str:
        """The platform id of the member called ``name`` (``None``: the first member)."""
        ...

    async def last_card(
        self, kind: str, path: YamlPath, missing: str, *, pending: bool = False
    ) -> dict[str, Any]:
        """The buddy's last message of ``kind`` in the conversation (``pending``: whose
        status is pending), or the step fails at ``path`` with ``missing``."""
        ...

    def fail(self, path: YamlPath, message: str) -> NoReturn:
        """Fail the step at ``path`` of the file (the scenario stops there)."""
        ...


class StepCheck(Protocol):
    """A scenario file being read: the rules between its parts and against the buddy.

    Attributes:
        blueprint: The buddy the scenarios run against; ``None`` checks the format only.
        kind: The scenario's conversation kind (``private``, ``group``), when valid.
    """

    blueprint: Blueprint | None
    kind: str | None

    def issue(
        self, path: YamlPath, code: str, message: str, hint: str = "", *, key: bool = False
    ) -> None:
        """Report a problem at ``path`` of the file."""
        ...

    def member(self, path: YamlPath, name: str | None) -> None:
        """Report ``name`` at ``path`` unless it is a member of the conversation."""
        ...
