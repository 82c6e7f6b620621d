"""The memory capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.extend import Capability, Section, StepAction, StepExpect, Uses

_RUN = "buddy.capabilities.memory.execute"
_MODELS = "buddy.capabilities.memory.manifest"
_SCHEMAS = "buddy.capabilities.memory.limits:KEY_TEMPLATE_SCHEMAS"
_RECORD = "buddy.capabilities.memory.scenario_record"
_SCENARIO = "buddy.capabilities.memory.scenario"

CAPABILITY = Capability(
    "memory",
    "记忆（conversation.memory 与 uses: memory.*）",
    platform="buddy.capabilities.memory.platform",
    page="buddy.capabilities.memory:playground.js",
    playground="buddy.capabilities.memory.playground:panel",
    attribute="memory",
    layer="buddy.capabilities.companion.engine:make",
    facade="buddy.capabilities.memory.conversation:Memory",
    section=Section(
        "memory",
        model=f"{_MODELS}:MemorySection",
        compile="buddy.capabilities.memory.compile:compile_memory",
        render="buddy.capabilities.memory.render:render_memory",
        heading="Memory",
        markdown="buddy.capabilities.memory.render:markdown_memory",
        prompt="buddy.capabilities.memory.prompt:prompt",
        placed="buddy.capabilities.memory.placed:text",
    ),
    uses=(
        Uses(
            "memory.write",
            f"{_MODELS}:MemoryWriteTool",
            f"{_RUN}:write",
            reply="记下了。",
            schemas=_SCHEMAS,
        ),
        Uses(
            "memory.delete",
            f"{_MODELS}:MemoryDeleteTool",
            f"{_RUN}:delete",
            reply="删掉了。",
            schemas=_SCHEMAS,
        ),
        Uses("memory.list", f"{_MODELS}:MemoryListTool", f"{_RUN}:list_entries"),
    ),
    actions=(
        StepAction(
            "extract",
            model=f"{_SCENARIO}:ExtractScript",
            description="What automatic memory's extractor answers for this step's message "
            "(`facts`, `appraisal`); without it, it finds nothing (patterns still run).",
            run=f"{_SCENARIO}:run_extract",
            check=f"{_SCENARIO}:check_extract",
            modifies=True,
        ),
    ),
    expects=(
        StepExpect(
            "facts",
            model=f"{_SCENARIO}:FactsExpect",
            description="Facts automatic memory holds after the step: relation, slots it "
            "has, value, status (`kept`, `proposed`, `disputed`, or `absent`); in a group, "
            "the `member` whose fact it is.",
            verify=f"{_SCENARIO}:verify_facts",
            state=f"{_SCENARIO}:layer_state",
            check=f"{_SCENARIO}:check_facts",
            show=f"{_SCENARIO}:show_facts",
            record=f"{_RECORD}:record_facts",
        ),
        StepExpect(
            "card",
            model=f"{_SCENARIO}:CardExpect",
            description='The person card the model sees now, exactly (`""`: none yet).',
            verify=f"{_SCENARIO}:verify_card",
            state=f"{_SCENARIO}:layer_state",
            check=f"{_SCENARIO}:check_card",
            show=f"{_SCENARIO}:show_card",
            record=f"{_RECORD}:record_card",
        ),
        StepExpect(
            "mood",
            model=f"{_SCENARIO}:MoodExpect",
            description="The character's state now (decayed to the platform clock): "
            "`anger`, `sadness`, `trust`, each a number (two decimals) or `[low, high]`; in "
            "a group toward the `member` named (a list for several).",
            verify=f"{_SCENARIO}:verify_mood",
            state=f"{_SCENARIO}:layer_state",
            check=f"{_SCENARIO}:check_mood",
            show=f"{_SCENARIO}:show_mood",
            record=f"{_RECORD}:record_mood",
        ),
        StepExpect(
            "lore",
            model=f"{_SCENARIO}:LoreExpect",
            description="The lore entries in the step's last turn's prompt (names, or "
            "`book/name`), in any order.",
            verify=f"{_SCENARIO}:verify_lore",
            state=f"{_SCENARIO}:layer_state",
            check=f"{_SCENARIO}:check_lore",
            show=f"{_SCENARIO}:show_lore",
            record=f"{_RECORD}:record_lore",
        ),
        StepExpect(
            "memory",
            model=f"{_SCENARIO}:MemoryExpect",
            description="Memory entries after the step: key → exact text, or `null` for no "
            "such entry.",
            verify=f"{_SCENARIO}:verify_memory",
            state=f"{_SCENARIO}:entries",
            show=f"{_SCENARIO}:show_memory",
            record=f"{_RECORD}:record_memory",
        ),
        StepExpect(
            "memory_keys",
            model=f"{_SCENARIO}:MemoryKeysExpect",
            description="Every memory key after the step, in any order.",
            verify=f"{_SCENARIO}:verify_memory_keys",
            state=f"{_SCENARIO}:entries",
        ),
    ),
)
