"""The data capability as it registers (:data:`CAPABILITY`)."""

from __future__ import annotations

from buddy.capabilities.data.tools import TOOLS
from buddy.extend import Capability, EventKind, Section, StepAction, StepExpect

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
    page="buddy.capabilities.data:playground.js",
    events=(
        EventKind(
            "consent_result",
            user="buddy.capabilities.data.events:user_message",
            history="[授权卡有了结果]",
        ),
    ),
    attribute="data_access",
    facade="buddy.capabilities.data.conversation:DataAccess",
    actions=(
        StepAction(
            "consent",
            model="buddy.capabilities.data.scenario:ConsentAnswer",
            description="Answer the last pending consent card.",
            run="buddy.capabilities.data.scenario:consent",
            turn=True,
        ),
        StepAction(
            "grant",
            model="buddy.capabilities.data.scenario:Grant",
            description="A member grants a dataset.",
            run="buddy.capabilities.data.scenario:grant",
            check="buddy.capabilities.data.scenario:check_grant",
        ),
        StepAction(
            "revoke",
            model="buddy.capabilities.data.scenario:Grant",
            description="A member revokes a dataset.",
            run="buddy.capabilities.data.scenario:revoke",
            check="buddy.capabilities.data.scenario:check_grant",
        ),
        StepAction(
            "data",
            model="buddy.capabilities.data.scenario:DataOverride",
            description="Set a member's data.",
            run="buddy.capabilities.data.scenario:set_data",
            check="buddy.capabilities.data.scenario:check_data",
        ),
    ),
    expects=(
        StepExpect(
            "consent_card",
            model="buddy.capabilities.data.scenario:ConsentExpect",
            description="A consent card was sent in this step (`true`, or its fields).",
            verify="buddy.capabilities.data.scenario:verify_consent_card",
            record="buddy.capabilities.data.scenario:record_consent_card",
        ),
        StepExpect(
            "stored_redacted",
            model="buddy.capabilities.data.scenario:StoredRedacted",
            description="The stored record of the turn that read user data keeps only "
            "dataset statuses and the reply: no data values, every later step redacted.",
            verify="buddy.capabilities.data.scenario:verify_stored_redacted",
            state="buddy.capabilities.data.scenario:data_values",
        ),
    ),
)
