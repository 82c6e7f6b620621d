"""Wire shapes of the core of the buddy platform protocol (``docs/protocol.md``): the
conversation, its turns, events and stored values — shared by the dev platform server and
the client. Each capability's own are in ``buddy/capabilities/<name>/wire.py``. Pydantic
models only: importing them pulls in no server and no HTTP client."""
