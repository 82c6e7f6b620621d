def guard(call, conversation):
    return None


def scrub(call, result, conversation):
    return None
