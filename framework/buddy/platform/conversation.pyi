# Typed access for editors and type checkers to the built-in capabilities' parts of the
# ``conversation`` object. At run time ``conversation.py`` makes every registered part by
# name and names none (the core imports no capability); this stub, read by type checkers
# only, types the built-ins' parts as attributes. A third-party part is in ``parts``.
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Literal

from buddy.capabilities.data.conversation import DataAccess
from buddy.capabilities.memory.conversation import Memory
from buddy.capabilities.proactive.conversation import ProactiveService
from buddy.capabilities.resources.conversation import ResourceShelf
from buddy.capabilities.widgets.conversation import Widgets
from buddy.compile.blueprint import Blueprint
from buddy.extend.turn import Bound
from buddy.platform.api import PlatformClient

__all__ = ["Conversation", "Kind", "Parts", "part_classes", "prepare"]

Kind = Literal["private", "group"]

def part_classes(facades: Iterable[tuple[str, str]] | None = None) -> dict[str, type[Bound]]: ...
def prepare(blueprint: Blueprint) -> None: ...

class Parts(Mapping[str, Bound]):
    def __init__(
        self, classes: Mapping[str, type[Bound]], make: Callable[[type[Bound]], Bound]
    ) -> None: ...
    def __getitem__(self, attribute: str) -> Bound: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def made(self) -> Iterator[Bound]: ...

class Conversation:
    id: str
    kind: Kind
    client: PlatformClient
    parts: Parts
    memory: Memory
    data_access: DataAccess
    widget: Widgets
    proactive: ProactiveService
    resource: ResourceShelf
    def __init__(
        self,
        client: PlatformClient,
        conversation_id: str,
        kind: Kind,
        *,
        facades: Iterable[tuple[str, str]] | None = None,
    ) -> None: ...
    def _made(self, cls: type[Bound]) -> Bound: ...
