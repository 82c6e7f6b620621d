"""User data: the datasets a buddy declares (``data:``), queries, asks consent for with a
card (which ends the turn), and the one-time results of location and calendar cards.
The catalogue of datasets is :mod:`buddy.capabilities.data.datasets`."""

from __future__ import annotations

from buddy.capabilities import Capability, EventKind, Section
from buddy.capabilities.data.tools import TOOLS

CAPABILITY = Capability(
    "data",
    "用户授权数据（data_access）",
    TOOLS,
    startup="buddy.capabilities.data.startup:upload_declaration",
    section=Section(
        "data",
        model="buddy.capabilities.data.manifest:DataSection",
        compile="buddy.capabilities.data.compile:compile_data",
        render="buddy.capabilities.data.render:render_data",
        heading="Data declaration",
        codes=frozenset({"unknown-dataset"}),
    ),
    platform="buddy.capabilities.data.platform",
    playground="buddy.capabilities.data.playground:panel",
    events=(
        EventKind(
            "consent_result",
            user="buddy.capabilities.data.events:user_message",
            history="[授权卡有了结果]",
        ),
    ),
    attribute="data_access",
    facade="buddy.capabilities.data.conversation:DataAccess",
)
