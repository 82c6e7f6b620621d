"""The memory capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.capabilities import Capability, Section, StepExpect, Uses

_RUN = "buddy.capabilities.memory.execute"
_MODELS = "buddy.capabilities.memory.manifest"
_SCHEMAS = "buddy.capabilities.memory.limits:KEY_TEMPLATE_SCHEMAS"
_SCENARIO = "buddy.capabilities.memory.scenario"

CAPABILITY = Capability(
    "memory",
    "记忆（conversation.memory 与 uses: memory.*）",
    platform="buddy.capabilities.memory.platform",
    page="buddy.capabilities.memory:playground.js",
    attribute="memory",
    facade="buddy.capabilities.memory.conversation:Memory",
    section=Section(
        "memory",
        model=f"{_MODELS}:MemorySection",
        compile="buddy.capabilities.memory.compile:compile_memory",
        render="buddy.capabilities.memory.render:render_memory",
        heading="Memory",
        markdown="buddy.capabilities.memory.render:markdown_memory",
        prompt="buddy.capabilities.memory.prompt:prompt",
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
    expects=(
        StepExpect(
            "memory",
            model=f"{_SCENARIO}:MemoryExpect",
            description="Memory entries after the step: key → exact text, or `null` for no "
            "such entry.",
            verify=f"{_SCENARIO}:verify_memory",
            state=f"{_SCENARIO}:entries",
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
