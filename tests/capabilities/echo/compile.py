"""``echo:`` compiled: a check that needs more than one value, located like any other."""

from __future__ import annotations

from buddy.extend import SectionContext
from tests.capabilities.echo.compiled import EchoSettings
from tests.capabilities.echo.manifest import EchoSection


def compile_echo(context: SectionContext) -> EchoSettings:
    section: EchoSection = context.value or EchoSection()
    if section.times > 1 and not section.prefix.endswith("："):
        context.error(
            ("times",),
            "echo-times",
            f"saying it {section.times} times needs a prefix ending in `：`",
            "end the prefix with `：` or say it once",
        )
    return EchoSettings(section.prefix, section.times)
