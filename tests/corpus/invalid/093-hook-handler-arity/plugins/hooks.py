def guard(call, conversation):
    return None


async def scrub(call, conversation):
    return None
