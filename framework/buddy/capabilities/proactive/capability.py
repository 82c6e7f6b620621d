"""The proactive capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.capabilities.proactive.events import SKIP_MARKER
from buddy.capabilities.proactive.tools import TOOLS
from buddy.extend import Capability, EventKind, Section, StepAction, StepExpect

CAPABILITY = Capability(
    "proactive",
    "主动服务（proactive 订阅）",
    TOOLS,
    platform="buddy.capabilities.proactive.platform",
    playground="buddy.capabilities.proactive.playground:panel",
    page="buddy.capabilities.proactive:playground.js",
    events=(
        EventKind(
            "proactive",
            user="buddy.capabilities.proactive.events:user_message",
            history="[主动服务回合]",
            prompt="buddy.capabilities.proactive.events:prompt",
            unasked=True,
            skip=SKIP_MARKER,
        ),
    ),
    section=Section(
        "proactive",
        model="buddy.capabilities.proactive.manifest:Proactive",
        compile="buddy.capabilities.proactive.compile:compile_proactive",
        render="buddy.capabilities.proactive.render:render_proactive",
        heading="Proactive",
        markdown="buddy.capabilities.proactive.render:markdown_proactive",
        codes=frozenset({"time-format", "timezone", "datetime-offset"}),
    ),
    attribute="proactive",
    facade="buddy.capabilities.proactive.conversation:ProactiveService",
    actions=(
        StepAction(
            "trigger",
            model="buddy.capabilities.proactive.scenario:TriggerSpec",
            description="Fire a proactive trigger: `workout.completed`, `sleep.ready` or "
            "`{type: data.updated, dataset}`.",
            run="buddy.capabilities.proactive.scenario:trigger",
            turn=True,
        ),
    ),
    expects=(
        StepExpect(
            "subscriptions",
            model="buddy.capabilities.proactive.scenario:SubscriptionsExpect",
            description="Proactive subscriptions after the step: key → status.",
            verify="buddy.capabilities.proactive.scenario:verify_subscriptions",
            state="buddy.capabilities.proactive.scenario:subscriptions",
            show="buddy.capabilities.proactive.scenario:show_subscriptions",
        ),
    ),
)
