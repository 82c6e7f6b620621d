"""The widgets capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.capabilities.widgets.tools import TOOLS
from buddy.extend import Capability, Section, StepExpect

CAPABILITY = Capability(
    "widgets",
    "小挂件（widgets/<type>/schema.json）",
    TOOLS,
    startup="buddy.capabilities.widgets.startup:upload_widget_types",
    section=Section(
        "widgets",
        model="buddy.capabilities.widgets.manifest:WidgetsSection",
        compile="buddy.capabilities.widgets.compile:compile_widgets",
        render="buddy.capabilities.widgets.render:render_widgets",
        heading="Widget types ({count})",
        markdown="buddy.capabilities.widgets.render:render_markdown",
        default="widgets",
    ),
    platform="buddy.capabilities.widgets.platform",
    playground="buddy.capabilities.widgets.playground:panel",
    page="buddy.capabilities.widgets:playground.js",
    attribute="widget",
    facade="buddy.capabilities.widgets.conversation:Widgets",
    expects=(
        StepExpect(
            "widget",
            model="buddy.capabilities.widgets.scenario:WidgetExpect",
            description="Widgets of the conversation (state after the step).",
            verify="buddy.capabilities.widgets.scenario:verify_widget",
            state="buddy.capabilities.widgets.scenario:widgets",
            check="buddy.capabilities.widgets.scenario:check_widget",
        ),
    ),
)
