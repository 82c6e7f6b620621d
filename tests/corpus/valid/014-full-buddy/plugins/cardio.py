"""Custom tool and hook bodies for the full-buddy corpus case."""


async def plan_run(conversation, params):
    return {"days": params.get("days", 3)}


def guard(call, conversation):
    return None


async def scrub(call, result, conversation):
    return None
