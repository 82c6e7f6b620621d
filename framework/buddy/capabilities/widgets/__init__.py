"""Widgets: structured panels of the types in ``widgets/<type>/schema.json``, created,
read, written and sent into the chat."""

from __future__ import annotations

from buddy.capabilities import Capability
from buddy.capabilities.widgets.tools import TOOLS

CAPABILITY = Capability(
    "widgets",
    "小挂件（widgets/<type>/schema.json）",
    TOOLS,
    startup="buddy.capabilities.widgets.startup:upload_widget_types",
    platform="buddy.capabilities.widgets.platform",
    playground="buddy.capabilities.widgets.playground:panel",
    attribute="widget",
    facade="buddy.capabilities.widgets.conversation:Widgets",
)
