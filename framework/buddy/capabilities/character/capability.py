"""The character capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.extend import Capability, Section

CAPABILITY = Capability(
    "character",
    "角色状态（由性格文件的数值驱动）",
    # The companion layer (automatic memory's) runs a character or lore without memory:.
    layer="buddy.capabilities.companion.engine:make",
    section=Section(
        "character",
        model="buddy.capabilities.character.manifest:CharacterSection",
        compile="buddy.capabilities.character.compile:compile_character",
        render="buddy.capabilities.character.render:render_character",
        heading="Character",
        prompt="buddy.capabilities.character.prompt:prompt",
        placed="buddy.capabilities.character.placed:text",
    ),
)
