"""The lore capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.extend import Capability, Section

CAPABILITY = Capability(
    "lore",
    "设定集（按关键词进入提示词的背景条目）",
    # The companion layer (automatic memory's) runs a character or lore without memory:.
    layer="buddy.capabilities.companion.engine:make",
    section=Section(
        "lore",
        model="buddy.capabilities.lore.manifest:LoreSection",
        compile="buddy.capabilities.lore.compile:compile_lore",
        render="buddy.capabilities.lore.render:render_lore",
        heading="Lore books ({count})",
        markdown="buddy.capabilities.lore.render:markdown_lore",
        prompt="buddy.capabilities.lore.prompt:prompt",
        placed="buddy.capabilities.lore.placed:text",
    ),
)
