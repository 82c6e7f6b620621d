"""The resources capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.capabilities.resources.tools import TOOLS
from buddy.extend import Capability, Section

CAPABILITY = Capability(
    "resources",
    "资料（resources/ 里随身带的文件）",
    TOOLS,
    attribute="resource",
    facade="buddy.capabilities.resources.conversation:ResourceShelf",
    section=Section(
        "resources",
        model="buddy.capabilities.resources.manifest:ResourcesSection",
        compile="buddy.capabilities.resources.compile:compile_resources",
        render="buddy.capabilities.resources.render:render_resources",
        heading="Resources ({count})",
        markdown="buddy.capabilities.resources.render:render_markdown",
        default="resources",
    ),
)
