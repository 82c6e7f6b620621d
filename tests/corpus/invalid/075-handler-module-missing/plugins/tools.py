"""Tool bodies used by the corpus cases."""


def run(conversation, params):
    return "ok"
