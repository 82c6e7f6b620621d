"""Question cards: a question with 2–4 options the user taps; sending one ends the turn."""

from __future__ import annotations

from buddy.capabilities import Capability
from buddy.capabilities.questions.tools import TOOLS

CAPABILITY = Capability("questions", "题卡（ask_question）", TOOLS)
