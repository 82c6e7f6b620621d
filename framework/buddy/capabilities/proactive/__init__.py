"""Proactive service: subscriptions (declared in ``proactive:`` or made by the model and
code) whose triggers start a turn nobody asked for."""

from __future__ import annotations

from buddy.capabilities import Capability
from buddy.capabilities.proactive.tools import TOOLS

CAPABILITY = Capability(
    "proactive",
    "主动服务（proactive 订阅）",
    TOOLS,
    platform="buddy.capabilities.proactive.platform",
    attribute="proactive",
    facade="buddy.capabilities.proactive.conversation:ProactiveService",
)
