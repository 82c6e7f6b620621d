"""A tool body with one parameter too many."""


def run(conversation, params, extra):
    return "ok"
