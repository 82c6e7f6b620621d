"""The questions capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.capabilities.questions.tools import TOOLS
from buddy.extend import Capability

CAPABILITY = Capability("questions", "题卡（ask_question）", TOOLS)
