"""A test capability, registered as a third party's would be: a manifest section (checked,
compiled, rendered), one model tool, a part of the ``conversation`` object, a
dev-platform part (a table and authenticated routes), its words in scenario files
(a step action and an expectation), and an event type of its own (``echo_ping``).

It is not shipped; tests/test_capabilities.py registers it through the entry-point path
of the registry."""

from __future__ import annotations

from buddy.extend import Capability, EventKind, Section, StepAction, StepExpect
from tests.capabilities.echo.tools import TOOLS

CAPABILITY = Capability(
    "echo",
    "回声（测试用）",
    TOOLS,
    platform="tests.capabilities.echo.platform",
    attribute="echo",
    facade="tests.capabilities.echo.conversation:Echo",
    section=Section(
        "echo",
        model="tests.capabilities.echo.manifest:EchoSection",
        compile="tests.capabilities.echo.compile:compile_echo",
        render="tests.capabilities.echo.render:render_echo",
        heading="回声",
    ),
    events=(
        EventKind(
            "echo_ping", user="tests.capabilities.echo.events:user_message", history="[回声敲门]"
        ),
    ),
    actions=(
        StepAction(
            "echo_keep",
            model="tests.capabilities.echo.scenario:EchoText",
            description="The platform keeps this text for the conversation.",
            run="tests.capabilities.echo.scenario:keep",
        ),
    ),
    expects=(
        StepExpect(
            "echoes",
            model="tests.capabilities.echo.scenario:Echoes",
            description="Every text kept, oldest first.",
            verify="tests.capabilities.echo.scenario:verify_echoes",
            state="tests.capabilities.echo.scenario:texts",
            check="tests.capabilities.echo.scenario:check_echoes",
        ),
    ),
)
