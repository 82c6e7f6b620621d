def run(conversation, params, extra=None, *args, **kwargs):
    return "ok"
